"""The workload driver: controllers and kubelet under a hand-moved clock, load generation, bulk builds."""

from __future__ import annotations

import json
import random

import pytest

from sktrace_emulator import Emulator
from sktrace_emulator.builders import RUN_SECONDS, deployment_object
from sktrace_emulator.bulk import PodChurn, build_large_state, create_jobs
from sktrace_emulator.workload import Workload, cron_period

pytestmark = pytest.mark.timeout(60)


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def emu() -> Emulator:
    return Emulator(token="t", tls=False, seed=2)


def run(wl: Workload, clock: Clock, seconds: int) -> None:
    for _ in range(seconds):
        wl.step()
        clock.now += 1


def phases(emu: Emulator, namespace: str) -> dict[str, str]:
    return {p["metadata"]["name"]: p["status"]["phase"] for p in emu.list("v1", "Pod", namespace)}


def test_deployment_rollout_creates_new_replicaset_and_scales_old_down(emu: Emulator) -> None:
    clock = Clock()
    wl = Workload(emu, seed=1, clock=clock, start_delay=1)
    emu.create({"apiVersion": "apps/v1", "kind": "Deployment", **deployment_object("x", "web", replicas=3, rng=random.Random(1))})
    run(wl, clock, 3)
    pods = emu.list("v1", "Pod", "x")
    (rs,) = emu.list("apps/v1", "ReplicaSet", "x")
    assert len(pods) == 3 and set(phases(emu, "x").values()) == {"Running"}
    ref = pods[0]["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == ("ReplicaSet", rs["metadata"]["name"], rs["metadata"]["uid"], True)
    status = pods[0]["status"]["containerStatuses"][0]
    assert status["state"]["running"]["startedAt"].endswith("Z") and pods[0]["spec"]["nodeName"].startswith("node-")
    assert len(json.dumps(pods[0])) > 3000
    deploy = emu.get("apps/v1", "Deployment", "x", "web")
    assert deploy is not None
    deploy["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example.com/team/web:2.0.0"
    emu.update(deploy)
    run(wl, clock, 2)  # a rolling update: one pod more than wanted (25 % surge), none fewer (25 % unavailable, rounded down)
    sets = {r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]: r["spec"]["replicas"] for r in emu.list("apps/v1", "ReplicaSet", "x")}
    assert sets == {"1": 3, "2": 1}
    run(wl, clock, 15)
    sets = {r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]: r["spec"]["replicas"] for r in emu.list("apps/v1", "ReplicaSet", "x")}
    assert sets == {"1": 0, "2": 3}
    images = {p["spec"]["containers"][0]["image"] for p in emu.list("v1", "Pod", "x")}
    assert images == {"registry.example.com/team/web:2.0.0"}
    assert emu.get("apps/v1", "Deployment", "x", "web")["status"]["readyReplicas"] == 3  # type: ignore[index]


def test_job_pods_run_and_finish_then_job_completes(emu: Emulator) -> None:
    clock = Clock()
    wl = Workload(emu, seed=1, clock=clock, start_delay=1, job_seconds=(2, 2))
    emu.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "x"}, "spec": {"completions": 2, "template": {"spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}})
    run(wl, clock, 12)
    pods = emu.list("v1", "Pod", "x")
    assert [p["status"]["phase"] for p in pods] == ["Succeeded", "Succeeded"]
    terminated = pods[0]["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["reason"] == "Completed" and terminated["finishedAt"] > terminated["startedAt"]
    job = emu.get("batch/v1", "Job", "x", "j")
    assert job is not None and job["status"]["succeeded"] == 2 and job["status"]["conditions"][0]["type"] == "Complete"


def test_cronjob_makes_jobs_on_schedule_and_keeps_three(emu: Emulator) -> None:
    clock = Clock()
    wl = Workload(emu, seed=1, clock=clock, start_delay=0, job_seconds=(1, 1))
    template = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}}
    emu.create({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj", "namespace": "x", "annotations": {"sktrace.io/every-seconds": "2"}}, "spec": {"schedule": "* * * * *", "jobTemplate": template}})
    run(wl, clock, 11)
    jobs = emu.list("batch/v1", "Job", "x")
    assert len(jobs) == 3 and all(j["metadata"]["ownerReferences"][0]["kind"] == "CronJob" for j in jobs)
    assert {p["metadata"]["ownerReferences"][0]["name"] for p in emu.list("v1", "Pod", "x")} == {j["metadata"]["name"] for j in jobs}


@pytest.mark.parametrize(("schedule", "seconds"), [("* * * * *", 60), ("*/5 * * * *", 300), ("@daily", 86400), ("0 3 * * 1", 3600)])
def test_cron_period(schedule: str, seconds: float) -> None:
    assert cron_period(schedule) == seconds


def test_bare_pod_runs_and_finishes_when_annotated(emu: Emulator) -> None:
    clock = Clock()
    wl = Workload(emu, seed=1, clock=clock, start_delay=1)
    emu.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "once", "namespace": "x", "annotations": {RUN_SECONDS: "3"}}, "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], "restartPolicy": "Never"}})
    emu.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "forever", "namespace": "x"}, "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}})
    run(wl, clock, 2)
    assert phases(emu, "x") == {"once": "Running", "forever": "Running"}
    run(wl, clock, 5)
    assert phases(emu, "x") == {"once": "Succeeded", "forever": "Running"}


def test_deleting_a_deployment_removes_its_replicasets_and_pods(emu: Emulator) -> None:
    clock = Clock()
    wl = Workload(emu, seed=1, clock=clock)
    emu.create({"apiVersion": "apps/v1", "kind": "Deployment", **deployment_object("x", "web", replicas=2, rng=random.Random(1))})
    run(wl, clock, 3)
    emu.delete("apps/v1", "Deployment", "x", "web")
    run(wl, clock, 2)
    assert emu.list("apps/v1", "ReplicaSet", "x") == [] and emu.list("v1", "Pod", "x") == []


@pytest.mark.slow
def test_generate_reaches_the_requested_rate(emu: Emulator) -> None:
    wl = Workload(emu, seed=1, start_delay=0.05)
    made = wl.generate(200, 1.0)
    assert 150 <= made <= 260
    kinds = {e.stored.rtype.kind for h in emu.store.histories.values() for e in h.events}
    assert {"Pod", "Deployment", "ReplicaSet"} <= kinds


def test_build_large_state_is_consistent(emu: Emulator) -> None:
    count = build_large_state(emu, deployments=20, pods_per_deployment=5, namespaces=4)
    assert count == 100
    pods = emu.list("v1", "Pod")
    assert len(pods) == 100 and len({p["metadata"]["uid"] for p in pods}) == 100
    versions = sorted(int(p["metadata"]["resourceVersion"]) for p in pods)
    assert len(set(versions)) == 100 and versions[-1] <= int(emu.resource_version)
    sets = {r["metadata"]["uid"]: r for r in emu.list("apps/v1", "ReplicaSet")}
    assert all(p["metadata"]["ownerReferences"][0]["uid"] in sets for p in pods)
    pod = pods[0]
    assert pod["status"]["phase"] == "Running" and pod["spec"]["volumes"][-1]["name"].startswith("kube-api-access-")
    assert 4000 <= len(json.dumps(pod, separators=(",", ":"))) <= 8000
    emu.delete("apps/v1", "Deployment", pod["metadata"]["namespace"], pod["metadata"]["name"].rsplit("-", 2)[0])
    assert len(emu.list("v1", "Pod")) == 95  # the bulk-built owner chain is garbage-collected like any other


def test_pod_churn_makes_pods_with_new_names_that_start_and_end_under_their_owners(emu: Emulator) -> None:
    """The churn benchmark's fast path: every pod a new name and uid, Running when added; a ReplicaSet's pod
    deleted once ``live`` newer ones exist, a Job's pod succeeding first and deleted at the next step."""
    build_large_state(emu, deployments=2, pods_per_deployment=1, namespaces=1)
    jobs = create_jobs(emu, jobs=1, namespaces=1)
    churn = PodChurn(emu, owners=emu.list("apps/v1", "ReplicaSet") + jobs, live=3)
    history = emu.store.histories[emu.store.type_of("v1", "Pod")]
    start = len(history.events)
    for _ in range(4):
        churn.step(3)
    events = history.events[start:]
    assert [e.rv for e in events] == sorted({e.rv for e in events})
    added = [e.stored for e in events if e.type == "ADDED"]
    assert len(added) == churn.created == 12
    assert len({p.name for p in added}) == len({p.uid for p in added}) == 12
    assert all(p.obj()["status"]["phase"] == "Running" for p in added)
    succeeded = [e.stored for e in events if e.type == "MODIFIED"]
    deleted = [e.stored.name for e in events if e.type == "DELETED"]
    assert succeeded and all(p.obj()["metadata"]["ownerReferences"][0]["kind"] == "Job" for p in succeeded)
    assert all(p.obj()["status"]["phase"] == "Succeeded" for p in succeeded)
    last_step = {e.stored.name for e in events[-6:]}
    assert [p.name for p in succeeded if p.name not in last_step] == [name for name in deleted if name.startswith("batch-")]
    assert all(p.obj()["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet" for p in added if p.name in deleted and not p.name.startswith("batch-"))
    assert churn.deleted == len(deleted) and len(churn.alive) == 3
