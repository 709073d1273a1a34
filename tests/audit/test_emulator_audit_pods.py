"""The emulator's pods in its audit log as kube-apiserver v1.28 logs them (measured, NOTES.md "Audit log"): made by
the controllers' own service accounts, bound by ``pods/binding``, moved by the kubelet's ``patch pods/status``, deleted
twice (graceful, then the kubelet's final delete with grace 0, both answered with the Pod), a finished pod deleted once,
a namespace's pods by the namespace controller's ``deletecollection`` answered with a ``PodList``; a Deployment's
delete answers a ``Status``, over HTTP as in the log."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from tests.audit.test_emulator_audit import lines
from tests.emulator.test_emulator_server import call

from sktrace_emulator import Emulator, Workload
from sktrace_emulator.builders import deployment_object

pytestmark = pytest.mark.timeout(60)
RS, JOB, NS = (f"system:serviceaccount:kube-system:{n}" for n in ("replicaset-controller", "job-controller", "namespace-controller"))


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def run(wl: Workload, clock: Clock, seconds: int) -> None:
    for _ in range(seconds):
        wl.step()
        clock.now += 1


def pod_lines(log: Path, namespace: str) -> list[dict[str, Any]]:
    return [e for e in lines(log) if e["objectRef"]["resource"] == "pods" and e["objectRef"].get("namespace") == namespace]


def summary(event: dict[str, Any]) -> tuple[Any, ...]:
    answer = event.get("responseObject") or {}
    meta = answer.get("metadata") or {}
    return (event["verb"], event["objectRef"].get("subresource"), event["user"]["username"], answer.get("kind"),
            (answer.get("status") or {}).get("phase") if answer.get("kind") == "Pod" else None, meta.get("deletionGracePeriodSeconds"))


def test_a_deployments_pod_is_made_bound_run_and_deleted_twice_as_a_real_server_logs_it(tmp_path: Path) -> None:
    clock = Clock()
    emu = Emulator(seed=1, tls=False)
    log = tmp_path / "audit.log"
    emu.enable_audit(log)
    emu.store.kubelet = emu.store.namespace_controller = True  # as while ``Workload.start`` runs it
    wl = Workload(emu, seed=1, clock=clock, start_delay=1)
    emu.create({"apiVersion": "apps/v1", "kind": "Deployment", **deployment_object("x", "web", replicas=1, rng=random.Random(1))})
    run(wl, clock, 4)
    (pod,) = emu.list("v1", "Pod", "x")
    node = pod["spec"]["nodeName"]
    emu.delete("apps/v1", "Deployment", "x", "web")
    terminating = emu.get("v1", "Pod", "x", pod["metadata"]["name"])
    assert terminating is not None and terminating["metadata"]["deletionGracePeriodSeconds"] == 30  # until the kubelet's pass
    run(wl, clock, 2)
    assert emu.list("v1", "Pod", "x") == []
    emu.disable_audit()
    got = [summary(e) for e in pod_lines(log, "x")]
    assert got == [
        ("create", None, RS, "Pod", "Pending", None),
        ("create", "binding", "system:kube-scheduler", "Status", None, None),
        ("patch", "status", f"system:node:{node}", "Pod", "Running", None),
        ("delete", None, "system:serviceaccount:kube-system:generic-garbage-collector", "Pod", "Running", 30),
        ("delete", None, f"system:node:{node}", "Pod", "Running", 0),
    ]
    created, final = pod_lines(log, "x")[0], pod_lines(log, "x")[-1]
    assert "name" not in created["objectRef"]  # a generated name is not known when the request is received
    assert final["requestObject"]["gracePeriodSeconds"] == 0 and not final["responseObject"]["metadata"].get("finalizers")
    assert final["responseObject"]["metadata"]["deletionTimestamp"][:19] <= final["stageTimestamp"][:19]


def test_a_finished_pod_goes_in_one_delete_and_a_namespace_by_deletecollection(tmp_path: Path) -> None:
    clock = Clock()
    emu = Emulator(seed=1, tls=False)
    log = tmp_path / "audit.log"
    emu.enable_audit(log)
    emu.store.kubelet = emu.store.namespace_controller = True
    wl = Workload(emu, seed=1, clock=clock, start_delay=1, job_seconds=(2, 2))
    emu.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "y"},
                "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}})
    run(wl, clock, 6)
    (pod,) = emu.list("v1", "Pod", "y")
    assert pod["status"]["phase"] == "Succeeded"
    emu.delete("v1", "Namespace", "", "y")
    run(wl, clock, 2)
    assert emu.list("v1", "Pod", "y") == [] and emu.get("v1", "Namespace", "", "y") is None
    emu.disable_audit()
    got = [summary(e) for e in pod_lines(log, "y")]
    assert got[0] == ("create", None, JOB, "Pod", "Pending", None)
    assert [g[:2] for g in got[1:4]] == [("create", "binding"), ("patch", "status"), ("patch", "status")]
    assert [g[4] for g in got[2:4]] == ["Running", "Succeeded"]
    collection = pod_lines(log, "y")[-1]
    assert (collection["verb"], collection["user"]["username"], collection["responseObject"]["kind"]) == ("deletecollection", NS, "PodList")
    assert [i["metadata"]["name"] for i in collection["responseObject"]["items"]] == [pod["metadata"]["name"]]
    assert len(got) == 5  # no line of its own for each pod of the collection


def test_a_deployments_delete_answers_a_status_over_http_and_a_pods_the_pod(emulator: Emulator, tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    emulator.enable_audit(log)
    emulator.create({"apiVersion": "apps/v1", "kind": "Deployment", **deployment_object("default", "web", replicas=1, rng=random.Random(1))})
    uid = emulator.get("apps/v1", "Deployment", "default", "web")["metadata"]["uid"]  # type: ignore[index]
    status, answer, _ = call(emulator, "DELETE", "/apis/apps/v1/namespaces/default/deployments/web")
    assert status == 200 and answer["kind"] == "Status" and answer["status"] == "Success"
    assert answer["details"] == {"name": "web", "group": "apps", "kind": "deployments", "uid": uid}
    emulator.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                     "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx:1"}]}})
    status, answer, _ = call(emulator, "DELETE", "/api/v1/namespaces/default/pods/p")
    assert status == 200 and answer["kind"] == "Pod" and answer["metadata"]["deletionGracePeriodSeconds"] == 30
    emulator.disable_audit()
    deletes = [(e["objectRef"]["resource"], e["user"]["username"], e["responseObject"]["kind"]) for e in lines(log) if e["verb"] == "delete"]
    assert deletes == [("deployments", emulator.user, "Status"), ("pods", "system:node:node-1", "Pod"), ("pods", emulator.user, "Pod")]
