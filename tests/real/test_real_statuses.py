"""The emulator's status flows checked against a real kube-apiserver v1.28 with its controller manager and kubelet (the
real tier), and the status changes a recorder keeps of them: the same scenario on both, what a person reads of each
status (``trace/statuses.reduce``) compared at each point the scenario waits for.

The scenario: a Deployment of 3 (``maxSurge`` 1, ``maxUnavailable`` 1) ready; a rollout whose pods never become ready
(on the real server the fake kubelet's ``fake/ready: "false"``; on the emulator an image on a ``.invalid`` registry,
which its kubelet never pulls), stuck at 2 of 3 ready; rolled back; a Job whose pods all fail, given up after its
``backoffLimit``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from kubectl_sktrace.store import open_cache_readonly
from kubectl_sktrace.store import statuses as stored
from kubectl_sktrace.trace import statuses
from realk8s import ControlPlane, start_recorder
from sktrace_emulator import Emulator
from sktrace_emulator.workload import Workload

pytestmark = [pytest.mark.timeout(300)]


def deployment(ns: str, never_ready: dict[str, Any] | None = None) -> dict[str, Any]:
    pod: dict[str, Any] = {"containers": [{"name": "web", "image": "nginx:1.25"}]}
    meta: dict[str, Any] = {"labels": {"app": "web"}}
    if never_ready is not None:
        meta["annotations"] = never_ready.get("annotations", {})
        pod = {"containers": [{"name": "web", "image": never_ready.get("image", "nginx:1.25")}]}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": ns},
            "spec": {"replicas": 3, "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}},
                     "selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": meta, "spec": pod}}}


def job(ns: str, annotations: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "flaky", "namespace": ns},
            "spec": {"backoffLimit": 1, "template": {"metadata": {"annotations": annotations},
                                                     "spec": {"restartPolicy": "Never", "containers": [{"name": "t", "image": "busybox"}]}}}}


class Side:
    """One cluster of the comparison: how to apply an object and read one back."""

    def __init__(self, apply: Callable[[dict[str, Any]], None], read: Callable[[str, str], dict[str, Any] | None]) -> None:
        self.apply, self.read = apply, read

    def settled(self, kind: str, name: str, done: Callable[[dict[str, Any]], bool], timeout: float = 90) -> dict[str, Any]:
        """What a person reads of the object once ``done`` holds and it stayed so for 2 s."""
        deadline, since, last = time.time() + timeout, None, None
        while time.time() < deadline:
            now = statuses.reduce(self.read(kind, name) or {})
            if done(now) and now == last:
                if since is not None and time.time() - since >= 2:
                    return now
                since = since or time.time()
            else:
                since = None
            last = now
            time.sleep(0.2)
        raise AssertionError(f"{kind} {name} never settled: {last}")


def scenario(side: Side, ns: str, never_ready: dict[str, Any], failing: dict[str, str]) -> list[dict[str, Any]]:
    side.apply(deployment(ns))
    seen = [side.settled("Deployment", "web", lambda r: r.get("readyReplicas") == 3 and r.get("updatedReplicas") == 3)]
    side.apply(deployment(ns, never_ready))
    seen.append(side.settled("Deployment", "web", lambda r: r.get("updatedReplicas") == 2))
    side.apply(deployment(ns))  # rolled back
    seen.append(side.settled("Deployment", "web", lambda r: r.get("readyReplicas") == 3 and r.get("replicas") == 3
                             and "NewReplicaSetAvailable" in r.get("conditions", {}).get("Progressing", "")))
    side.apply(job(ns, failing))
    seen.append(side.settled("Job", "flaky", lambda r: "Failed" in r.get("conditions", {})))
    return seen


@pytest.fixture
def emulated() -> Iterator[Side]:
    emu = Emulator(token="t", tls=False, seed=3)
    with Workload(emu, start_delay=0.3, job_seconds=(1.0, 1.0)):
        def apply(obj: dict[str, Any]) -> None:
            group, kind = obj["apiVersion"], obj["kind"]
            if emu.get(group, kind, obj["metadata"]["namespace"], obj["metadata"]["name"]) is None:
                emu.create(obj)
            else:
                current = emu.get(group, kind, obj["metadata"]["namespace"], obj["metadata"]["name"])
                assert current is not None
                emu.update({**current, "spec": obj["spec"]})

        def read(kind: str, name: str) -> dict[str, Any] | None:
            return emu.get("batch/v1" if kind == "Job" else "apps/v1", kind, "cmp", name)

        emu.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "cmp"}})
        yield Side(apply, read)


def test_the_emulators_status_flows_are_a_real_servers(real_cluster: ControlPlane, emulated: Side, tmp_path: Path) -> None:
    plane = real_cluster
    ns = plane.namespace("statuses")
    home, cache = tmp_path / "home", tmp_path / "cache.db"
    home.mkdir()
    recorder = start_recorder(plane, cache, home, tmp_path)
    try:
        def read(kind: str, name: str) -> dict[str, Any] | None:
            done = plane.kubectl("-n", ns, "get", kind.lower(), name, "-o", "json", check=False)
            return json.loads(done.stdout) if done.returncode == 0 else None

        real = scenario(Side(plane.apply, read), ns, {"annotations": {"fake/ready": "false"}}, {"fake/exit-code": "1"})
        time.sleep(1.5)  # committed at least every second
    finally:
        assert recorder.stop() == 0, recorder.output()
    emulated_flow = scenario(emulated, "cmp", {"image": "registry.invalid/shop/web:2"},
                             {"sktrace.io/exit-code": "1", "sktrace.io/run-seconds": "1"})
    assert emulated_flow == real
    assert statuses.summary(real[1]) == "2 of 3 ready" and real[3]["conditions"] == {"Failed": "True BackoffLimitExceeded"}
    with open_cache_readonly(cache) as c:
        rows = [statuses.summary(r.reduced) for r in stored.every_row(c, namespace=ns) if r.key.gvk.kind == "Deployment" and r.key.name == "web"]
    assert "2 of 3 ready" in rows and rows[-1] == "3 of 3 ready", rows  # the recorder kept the real flow
