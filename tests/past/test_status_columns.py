"""kubectl's status columns from a reduced status (``past/statuscells``), as kubectl's printers compute them from the
full one, and the reduced status in the API's shape (``past/statusform``): reduced again, it is what it was."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_sktrace.past import statuscells, statusform
from kubectl_sktrace.trace import statuses


def pod(status: dict[str, Any], *, inits: tuple[dict[str, Any], ...] = (), containers: tuple[str, ...] = ("app",),
        gates: tuple[str, ...] = ()) -> tuple[dict[str, Any], dict[str, Any]]:
    """A pod (its spec) and its reduced status, reduced by the recorder's own rule."""
    spec: dict[str, Any] = {"containers": [{"name": n, "image": "x"} for n in containers]}
    if inits:
        spec["initContainers"] = list(inits)
    if gates:
        spec["readinessGates"] = [{"conditionType": g} for g in gates]
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    return obj, statuses.reduce({**obj, "status": status}, pod=True)


def cs(name: str, state: dict[str, Any], *, ready: bool = False, restarts: int = 0, last: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "state": state, "ready": ready, "restartCount": restarts, "lastState": last or {}}


RUNNING = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}


@pytest.mark.parametrize(("status", "expected"), [
    ({"phase": "Pending"}, ("0/1", "Pending", "0")),
    ({"phase": "Running", "containerStatuses": [cs("app", RUNNING, ready=True)]}, ("1/1", "Running", "0")),
    ({"phase": "Running", "containerStatuses": [cs("app", {"waiting": {"reason": "CrashLoopBackOff"}}, restarts=4,
                                                   last={"terminated": {"reason": "Error", "exitCode": 1}})]}, ("0/1", "CrashLoopBackOff", "4")),
    ({"phase": "Pending", "containerStatuses": [cs("app", {"waiting": {"reason": "ErrImagePull"}})]}, ("0/1", "ImagePullBackOff", "0")),
    ({"phase": "Running", "containerStatuses": [cs("app", {"terminated": {"reason": "OOMKilled", "exitCode": 137}})]}, ("0/1", "OOMKilled", "0")),
    ({"phase": "Failed", "containerStatuses": [cs("app", {"terminated": {"exitCode": 2}})]}, ("0/1", "ExitCode:2", "0")),
    ({"phase": "Succeeded", "containerStatuses": [cs("app", {"terminated": {"reason": "Completed", "exitCode": 0}})]}, ("0/1", "Completed", "0")),
    ({"phase": "Failed", "reason": "Evicted"}, ("0/1", "Evicted", "0")),
])
def test_a_pods_columns_are_kubectls(status: dict[str, Any], expected: tuple[str, str, str]) -> None:
    obj, reduced = pod(status)
    assert (statuscells.pod_ready(obj, reduced), statuscells.pod_status(obj, reduced), statuscells.pod_restarts(obj, reduced)) == expected


def test_a_pod_with_init_containers_and_a_sidecar() -> None:
    init, sidecar = {"name": "migrate", "image": "x"}, {"name": "proxy", "image": "x", "restartPolicy": "Always"}
    obj, reduced = pod({"phase": "Pending", "initContainerStatuses": [cs("migrate", {"waiting": {"reason": "PodInitializing"}})],
                        "containerStatuses": [cs("app", {"waiting": {"reason": "PodInitializing"}})]}, inits=(init,))
    assert statuscells.pod_status(obj, reduced) == "Init:0/1"
    obj, reduced = pod({"phase": "Pending", "initContainerStatuses": [cs("migrate", {"terminated": {"reason": "Error", "exitCode": 1}}, restarts=2)],
                        "containerStatuses": [cs("app", {"waiting": {"reason": "PodInitializing"}})]}, inits=(init,))
    assert (statuscells.pod_status(obj, reduced), statuscells.pod_restarts(obj, reduced)) == ("Init:Error", "2")
    obj, reduced = pod({"phase": "Running", "conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"}],
                        "initContainerStatuses": [cs("migrate", {"terminated": {"reason": "Completed", "exitCode": 0}}, restarts=1),
                                                  cs("proxy", RUNNING, ready=True, restarts=3)],
                        "containerStatuses": [cs("app", RUNNING, ready=True)]}, inits=(init, sidecar))
    # the sidecar counts among the containers and its restarts among the pod's; the finished init container's do not
    assert (statuscells.pod_ready(obj, reduced), statuscells.pod_status(obj, reduced), statuscells.pod_restarts(obj, reduced)) == ("2/2", "Running", "3")


def test_completed_with_a_container_still_running_is_running_or_not_ready() -> None:
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}],
              "containerStatuses": [cs("app", {"terminated": {"reason": "Completed", "exitCode": 0}}), cs("log", RUNNING, ready=True)]}
    obj, reduced = pod(status, containers=("app", "log"))
    assert (statuscells.pod_ready(obj, reduced), statuscells.pod_status(obj, reduced)) == ("1/2", "NotReady")
    status["conditions"] = [{"type": "Ready", "status": "True"}]
    obj, reduced = pod(status, containers=("app", "log"))
    assert statuscells.pod_status(obj, reduced) == "Running"


def test_readiness_gates_and_node() -> None:
    obj, reduced = pod({"phase": "Running", "conditions": [{"type": "example.com/lb", "status": "True"}]}, gates=("example.com/lb", "example.com/dns"))
    assert statuscells.readiness_gates(obj, reduced) == "1/2"
    assert statuscells.pod_node(obj, reduced) == "<none>"


def workload(kind: str, spec: dict[str, Any], status: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    obj = {"apiVersion": "apps/v1" if kind != "Job" else "batch/v1", "kind": kind, "metadata": {"name": "w"}, "spec": spec}
    return obj, statuses.reduce({**obj, "status": status})


def test_workloads_columns_are_kubectls() -> None:
    obj, reduced = workload("Deployment", {"replicas": 3}, {"replicas": 4, "readyReplicas": 2, "updatedReplicas": 2, "availableReplicas": 2})
    assert (statuscells.ready_of_desired(obj, reduced), statuscells.count("updatedReplicas")(obj, reduced)) == ("2/3", "2")
    obj, reduced = workload("Deployment", {"replicas": 2}, {})
    assert (statuscells.ready_of_desired(obj, reduced), statuscells.count("availableReplicas")(obj, reduced)) == ("0/2", "0")
    obj, reduced = workload("Job", {"completions": 3}, {"succeeded": 1, "failed": 1})
    assert (statuscells.job_status(obj, reduced), statuscells.job_completions(obj, reduced)) == ("Running", "1/3")
    obj, reduced = workload("Job", {"parallelism": 2}, {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]})
    assert (statuscells.job_status(obj, reduced), statuscells.job_completions(obj, reduced)) == ("Complete", "1/1 of 2")
    obj, reduced = workload("Job", {}, {"failed": 2, "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]})
    assert (statuscells.job_status(obj, reduced), statuscells.job_completions(obj, reduced)) == ("Failed", "0/1")


@pytest.mark.parametrize(("kind", "spec", "status"), [
    ("Deployment", {"replicas": 3}, {"replicas": 4, "readyReplicas": 2, "updatedReplicas": 2, "availableReplicas": 2, "observedGeneration": 5,
                                     "conditions": [{"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated", "message": "m",
                                                     "lastUpdateTime": "2026-01-01T00:00:00Z"}]}),
    ("DaemonSet", {}, {"desiredNumberScheduled": 2, "currentNumberScheduled": 2, "numberReady": 1, "numberUnavailable": 1}),
    ("Job", {}, {"active": 1, "failed": 1, "startTime": "2026-01-01T00:00:00Z"}),
])
def test_the_api_shape_reduces_to_what_was_kept(kind: str, spec: dict[str, Any], status: dict[str, Any]) -> None:
    obj, reduced = workload(kind, spec, status)
    assert statuses.reduce({**obj, "status": statusform.status(obj, reduced)}) == reduced


def test_a_pods_api_shape_reduces_to_what_was_kept_but_its_node() -> None:
    init = {"name": "migrate", "image": "x"}
    obj, reduced = pod({"phase": "Running", "podIP": "10.0.0.1", "conditions": [{"type": "Ready", "status": "False", "lastProbeTime": None}],
                        "initContainerStatuses": [cs("migrate", {"terminated": {"reason": "Completed", "exitCode": 0}})],
                        "containerStatuses": [cs("app", {"waiting": {"reason": "CrashLoopBackOff"}}, restarts=2,
                                                 last={"terminated": {"reason": "OOMKilled", "exitCode": 137}})]}, inits=(init,))
    shaped = statusform.status(obj, reduced)
    assert shaped["initContainerStatuses"][0]["name"] == "migrate" and "podIP" not in shaped
    assert shaped["containerStatuses"][0]["lastState"] == {"terminated": {"reason": "OOMKilled", "exitCode": 137}}
    assert statuses.reduce({**obj, "status": shaped}, pod=True) == reduced
