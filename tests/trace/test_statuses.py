"""What a status change is, and what never is one (docs/spec.md "What a status change is")."""

from __future__ import annotations

import copy
import tracemalloc
from typing import Any

import pytest

from kubectl_sktrace.trace import statuses


def deployment(**status: Any) -> dict[str, Any]:
    base = {"observedGeneration": 2, "replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "updatedReplicas": 3,
            "conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability.",
                 "lastUpdateTime": "2026-12-07T10:00:00Z", "lastTransitionTime": "2026-12-07T10:00:00Z"},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                 "message": 'ReplicaSet "web-1" has successfully progressed.',
                 "lastUpdateTime": "2026-12-07T10:00:00Z", "lastTransitionTime": "2026-12-07T10:00:00Z"}]}
    base.update(status)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 3}, "status": base}


def pod(*, phase: str = "Running", state: dict[str, Any] | None = None, last: dict[str, Any] | None = None, ready: bool = True,
        restarts: int = 0, node: str | None = "node-1", **extra: Any) -> dict[str, Any]:
    container = {"name": "web", "ready": ready, "restartCount": restarts, "image": "nginx", "imageID": "docker://sha256:1",
                 "containerID": "containerd://1", "started": True,
                 "state": state or {"running": {"startedAt": "2026-12-07T10:00:00Z"}}}
    if last is not None:
        container["lastState"] = last
    status = {"phase": phase, "podIP": "10.0.0.1", "hostIP": "192.168.0.1", "startTime": "2026-12-07T10:00:00Z", "qosClass": "BestEffort",
              "conditions": [{"type": "Ready", "status": "True" if ready else "False", "lastProbeTime": None,
                              "lastTransitionTime": "2026-12-07T10:00:00Z"}],
              "containerStatuses": [container], **extra}
    spec = {"containers": [{"name": "web", "image": "nginx"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-1"}, "spec": spec, "status": status}


def _set(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``obj`` with the field at ``path`` (dots; a number indexes a list) set to ``value``."""
    out = copy.deepcopy(obj)
    *parents, leaf = path.split(".")
    node: Any = out
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(leaf)] = value
    else:
        node[leaf] = value
    return out


def _is_change(before: dict[str, Any], after: dict[str, Any]) -> bool:
    is_pod = before.get("kind") == "Pod"
    old, new = statuses.reduce(before, pod=is_pod), statuses.reduce(after, pod=is_pod)
    assert (old == new) == (statuses.packed(old) == statuses.packed(new))
    return statuses.changed(old, new)


@pytest.mark.parametrize(("path", "value"), [
    ("status.readyReplicas", 2),
    ("status.availableReplicas", 2),
    ("status.updatedReplicas", 1),
    ("status.replicas", 4),
    ("status.unavailableReplicas", 1),
    ("status.conditions.0.status", "False"),
    ("status.conditions.1.reason", "ProgressDeadlineExceeded"),
])
def test_what_a_person_reads_of_a_workload_is_a_change(path: str, value: Any) -> None:
    assert _is_change(deployment(), _set(deployment(), path, value))


@pytest.mark.parametrize(("path", "value"), [
    ("status.observedGeneration", 3),
    ("status.conditions.0.lastUpdateTime", "2026-12-07T10:00:02Z"),
    ("status.conditions.0.lastTransitionTime", "2026-12-07T10:00:02Z"),
    ("status.conditions.1.message", 'ReplicaSet "web-1" is progressing.'),
    ("status.collisionCount", 1),
])
def test_what_a_controller_rewrites_on_its_own_clock_is_never_a_change(path: str, value: Any) -> None:
    assert not _is_change(deployment(), _set(deployment(), path, value))


def test_an_absent_count_and_a_zero_are_one_state() -> None:
    """The API leaves zeros out: a ReplicaSet scaled down to none loses its readyReplicas."""
    before = deployment(readyReplicas=0, availableReplicas=0, replicas=0)
    after = deployment(replicas=0)
    del after["status"]["readyReplicas"], after["status"]["availableReplicas"]
    assert not _is_change(before, after)
    before["spec"]["replicas"] = after["spec"]["replicas"] = 0
    assert statuses.summary(statuses.reduce(after)) == "0 of 0 ready"


def test_ready_is_against_the_replicas_the_spec_asks_for() -> None:
    """During a rollout status.replicas counts the surge: kubectl's READY 2/3 divides by spec.replicas."""
    surging = deployment(replicas=4, readyReplicas=2, availableReplicas=2, updatedReplicas=2, unavailableReplicas=2)
    assert statuses.summary(statuses.reduce(surging)) == "2 of 3 ready"
    assert _is_change(surging, _set(surging, "spec.replicas", 5))


@pytest.mark.parametrize(("change", "expected"), [
    ({"phase": "Succeeded"}, True),
    ({"node": "node-2"}, True),
    ({"ready": False}, True),
    ({"restarts": 1}, True),
    ({"state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s restarting failed container"}}}, True),
    ({"state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}, True),
    ({"last": {"terminated": {"reason": "Error", "exitCode": 1}}}, True),
    ({"reason": "Evicted"}, True),
    ({"state": {"running": {"startedAt": "2026-12-07T10:05:00Z"}}}, False),  # a start time only
    ({"podIP": "10.0.0.2"}, False),
    ({"startTime": "2026-12-07T10:05:00Z"}, False),
])
def test_what_a_person_reads_of_a_pod(change: dict[str, Any], expected: bool) -> None:
    assert _is_change(pod(), pod(**change)) is expected


def test_a_pod_condition_is_its_type_and_status_only() -> None:
    before = pod()
    assert not _is_change(before, _set(before, "status.conditions.0.lastProbeTime", "2026-12-07T10:00:09Z"))
    assert not _is_change(before, _set(before, "status.conditions.0.reason", "Whatever"))
    assert _is_change(before, _set(before, "status.conditions.0.status", "False"))


def test_a_failed_pull_retried_is_one_state() -> None:
    """The kubelet alternates ErrImagePull and ImagePullBackOff at every retry, on its own clock."""
    err = pod(ready=False, state={"waiting": {"reason": "ErrImagePull", "message": "rpc error: pull failed"}})
    backoff = pod(ready=False, state={"waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "nginx:bad"'}})
    assert not _is_change(err, backoff) and not _is_change(backoff, err)
    reduced = statuses.reduce(backoff, pod=True)
    assert reduced["containers"]["web"]["state"] == "waiting ImagePullBackOff"
    assert statuses.summary(reduced) == "ImagePullBackOff"


def test_custom_kinds_conditions_by_the_same_rule() -> None:
    cert = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "observedGeneration": 1,
                                       "lastTransitionTime": "2026-12-07T10:00:00Z", "message": "Certificate is up to date"}],
                       "notAfter": "2027-03-07T10:00:00Z", "renewalTime": "2027-02-05T10:00:00Z"}}
    assert not _is_change(cert, _set(cert, "status.renewalTime", "2027-02-06T10:00:00Z"))
    assert not _is_change(cert, _set(cert, "status.conditions.0.observedGeneration", 2))
    assert _is_change(cert, _set(cert, "status.conditions.0.reason", "Expired"))
    assert statuses.summary(statuses.reduce(cert)) == "Ready=True Ready"


def test_a_node_heartbeat_is_never_a_change() -> None:
    node = {"kind": "Node", "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                                       "lastHeartbeatTime": "2026-12-07T10:00:00Z"}],
                                       "images": [{"names": ["nginx"], "sizeBytes": 1}]}}
    beat = _set(node, "status.conditions.0.lastHeartbeatTime", "2026-12-07T10:00:10Z")
    assert not _is_change(node, _set(beat, "status.images", []))


def test_what_a_workload_reads_as() -> None:
    assert statuses.summary(statuses.reduce(deployment(readyReplicas=2))) == "2 of 3 ready"
    ds = {"status": {"desiredNumberScheduled": 4, "numberReady": 3, "numberAvailable": 3}}
    assert statuses.ready_of(statuses.reduce(ds)) == (3, 4)
    job = {"status": {"active": 1, "failed": 1, "startTime": "2026-12-07T10:00:00Z", "uncountedTerminatedPods": {}}}
    assert statuses.summary(statuses.reduce(job)) == "1 active, 1 failed"
    cron = {"status": {"active": [{"kind": "Job", "name": "report-1"}], "lastScheduleTime": "2026-12-07T10:00:00Z"}}
    assert statuses.reduce(cron) == {"active": 1}
    assert not _is_change(cron, _set(cron, "status.lastScheduleTime", "2026-12-07T10:01:00Z"))


def test_describe_and_marks() -> None:
    running = statuses.reduce(pod(), pod=True)
    oom = statuses.reduce(pod(restarts=1, last={"terminated": {"reason": "OOMKilled", "exitCode": 137}}), pod=True)
    assert statuses.marks(running, oom) == [statuses.RESTART, statuses.OOM]
    assert "web: restarts 1, last terminated OOMKilled 137" in statuses.describe(running, oom)
    crash = statuses.reduce(pod(ready=False, restarts=2, state={"waiting": {"reason": "CrashLoopBackOff"}},
                                last={"terminated": {"reason": "Error", "exitCode": 1}}), pod=True)
    assert statuses.marks(oom, crash) == [statuses.RESTART, statuses.CRASH]
    assert statuses.marks(crash, crash) == []
    pull = statuses.reduce(pod(ready=False, state={"waiting": {"reason": "ErrImagePull"}}), pod=True)
    assert statuses.marks(None, pull) == [statuses.PULL]
    assert statuses.describe(statuses.reduce(deployment()), statuses.reduce(deployment(readyReplicas=2))) == "readyReplicas 3 -> 2"


def test_equal_reductions_pack_to_the_same_bytes_whichever_string_objects_they_hold() -> None:
    """Two parses of the same status give equal strings that are other objects, held by more or fewer things: the
    bytes the recorder compares must not tell them apart (marshal's references would)."""
    import json

    pod = {"kind": "Pod", "spec": {"nodeName": "n1"}, "status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True"}, {"type": "ContainersReady", "status": "True"}, {"type": "PodScheduled", "status": "True"}]}}
    first = statuses.reduce(pod, pod=True)
    again = statuses.reduce(json.loads(json.dumps(pod)), pod=True)  # another parse: its own "True" objects
    assert first == again and statuses.packed(first) == statuses.packed(again)


def test_a_reduction_comes_back_from_its_bytes_even_one_json_cannot_say() -> None:
    """An audit log read with Python's JSON may give a count beyond 64 bits, which orjson refuses: marshal's bytes
    stand for it, told apart, never an error."""
    usual = statuses.reduce(deployment(readyReplicas=2))
    huge = {**usual, "readyReplicas": 2**70}
    assert statuses.unpacked(statuses.packed(usual)) == usual and statuses.packed(usual).startswith(b"{")
    assert statuses.unpacked(statuses.packed(huge)) == huge and statuses.packed(huge) != statuses.packed(usual)


@pytest.mark.parametrize(("before", "after", "delta"), [
    ({"phase": "Pending"}, {"phase": "Running", "node": "n1"}, {"phase": "Running", "node": "n1"}),
    ({"conditions": {"Ready": "True", "PodScheduled": "True"}}, {"conditions": {"Ready": "False", "PodScheduled": "True"}},
     {"conditions": {"Ready": "False"}}),
    ({"containers": {"c": {"ready": True, "restarts": 0, "state": "running"}}},
     {"containers": {"c": {"ready": False, "restarts": 1, "state": "waiting CrashLoopBackOff", "last": "terminated Error 1"}}},
     {"containers": {"c": {"ready": False, "restarts": 1, "state": "waiting CrashLoopBackOff", "last": "terminated Error 1"}}}),
    ({"readyReplicas": 3, "replicas": 3}, {"replicas": 3}, {"readyReplicas": None}),
    ({"containers": {"a": {"ready": True}, "b": {"ready": True}}}, {"containers": {"a": {"ready": True}}}, {"containers": {"b": None}}),
    ({"desired": 2}, {"desired": 2}, {}),
], ids=["fields", "a-condition", "a-container", "a-count-gone", "a-container-gone", "none"])
def test_a_delta_holds_only_what_changed_and_patches_back(before: dict[str, Any], after: dict[str, Any], delta: dict[str, Any]) -> None:
    assert statuses.delta(before, after) == delta
    assert statuses.patched(before, delta) == after


def test_the_bytes_kept_of_a_reduction_hold_no_more_memory_than_their_length() -> None:
    """The recorder keeps one ``packed`` per object it knows: orjson's bytes would each hold the 4 KiB buffer they were
    written in (a cluster of 50,000 pods: 200 MB)."""
    reduction = {"phase": "Running", "node": "node-1", "conditions": {"Ready": "True"},
                 "containers": {"web": {"ready": True, "restarts": 0, "state": "running"}}}
    tracemalloc.start()
    try:
        kept = [statuses.packed(reduction) for _ in range(1000)]
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 1000 * (len(kept[0]) + 100)
