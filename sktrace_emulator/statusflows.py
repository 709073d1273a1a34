"""Status as kube-controller-manager and a kubelet write it, for the workload driver (``workload.py``). Pure.

What a recorder reads of status (readiness, restarts, crash reasons, rollout progress) flows here as on a real
cluster, checked against a real kube-apiserver v1.28 with its controller manager (``tests/real/test_real_statuses.py``):

- a Deployment rolls out by ``RollingUpdate`` (``maxSurge`` and ``maxUnavailable``, 25 % by default, rounded up and
  down as the Deployment controller does): the new ReplicaSet scaled up within the surge, the old ones down while
  enough pods stay available, the old ones' unavailable pods first (a rollback away from a stuck rollout removes its
  pods at once); ``Recreate`` scales the old ones to zero first. Its status: ``replicas`` (every pod of its ReplicaSets,
  the surge included), ``updatedReplicas``, ``readyReplicas``, ``availableReplicas``, ``unavailableReplicas`` (of the
  pods its ReplicaSets ask for, the surge included) and the conditions ``Available`` (``MinimumReplicasAvailable``/``MinimumReplicasUnavailable``)
  and ``Progressing`` (``NewReplicaSetCreated``, ``ReplicaSetUpdated``, ``NewReplicaSetAvailable``,
  ``ProgressDeadlineExceeded`` after ``progressDeadlineSeconds``);
- a ReplicaSet counts its pods, and those whose ``Ready`` condition is true as ready and available;
- a Job counts ``active``, ``ready``, ``succeeded`` and ``failed`` pods, replaces a failed pod until ``backoffLimit``
  (6) is passed, then fails (``Failed``, ``BackoffLimitExceeded``); it completes (``Complete``) once enough succeeded;
- a kubelet: a container whose image's registry host ends with ``.invalid`` (a name that can never resolve,
  RFC 2606) waits ``ErrImagePull``, then ``ImagePullBackOff`` between retries, for ever; a pod annotated
  ``sktrace.io/ready-after-seconds`` runs unready that long (a readiness probe); ``sktrace.io/oom-after-seconds``: its
  first container is OOM-killed (``terminated OOMKilled 137``) that long after it started, once, and restarted at once
  (``restartCount`` 1, ``lastState`` the kill); ``sktrace.io/exit-code`` (non-zero): the pod ends ``Failed`` with that
  code (``Error``) when its run ends. A Job annotated ``sktrace.io/fail-first: "N"`` gives its first N pods exit code 1.
"""

from __future__ import annotations

import calendar
import copy
import math
import time
from typing import Any

from sktrace_emulator.records import Obj, rfc3339

READY_AFTER = "sktrace.io/ready-after-seconds"
OOM_AFTER = "sktrace.io/oom-after-seconds"
EXIT_CODE = "sktrace.io/exit-code"
FAIL_FIRST = "sktrace.io/fail-first"
PULL_RETRY_SECONDS = 10.0
"""A kubelet's image pull back-off starts at 10 s: the waiting reason alternates at that pace here."""
BACKOFF_LIMIT = 6
PROGRESS_DEADLINE = 600


def unpullable(pod: Obj) -> bool:
    """Whether one of the pod's images names a registry host that can never resolve (``*.invalid``)."""
    for container in (pod.get("spec") or {}).get("containers") or []:
        image = str(container.get("image", ""))
        if "/" in image and image.split("/", 1)[0].split(":")[0].endswith(".invalid"):
            return True
    return False


def annotation_seconds(pod: Obj, name: str) -> float | None:
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(name)
    try:
        return None if value is None else float(value)
    except ValueError:
        return None


def _scaled(value: Any, total: int, *, up: bool) -> int:
    """An intOrString of ``strategy.rollingUpdate`` against ``total``: a percentage rounded up (surge) or down."""
    if isinstance(value, str) and value.endswith("%"):
        share = total * int(value[:-1]) / 100
        return math.ceil(share) if up else math.floor(share)
    return int(value)


def rolling_targets(desired: int, strategy: Obj, new: tuple[str, int, int], olds: list[tuple[str, int, int]]) -> dict[str, int]:
    """The replicas each ReplicaSet gets this pass: ``new`` and ``olds`` as ``(name, spec replicas, available)``."""
    out = {name: replicas for name, replicas, _ in [new, *olds]}
    if strategy.get("type") == "Recreate":
        out.update((name, 0) for name, _, _ in olds)
        out[new[0]] = desired if not any(replicas for _, replicas, _ in olds) else 0
        return out
    rolling = strategy.get("rollingUpdate") or {}
    surge = _scaled(rolling.get("maxSurge", "25%"), desired, up=True)
    unavailable = _scaled(rolling.get("maxUnavailable", "25%"), desired, up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    total = sum(out.values())
    if new[1] < desired:
        out[new[0]] = min(desired, new[1] + max(0, desired + surge - total))
    elif new[1] > desired:
        out[new[0]] = desired
    removable = total - (desired - unavailable) - (new[1] - new[2])
    for name, replicas, available in olds:  # unavailable pods first, as the controller's cleanup does
        gone = min(replicas - available, replicas)
        out[name] -= gone
        removable -= gone
    for name, _, _ in olds:
        gone = max(0, min(out[name], removable))
        out[name] -= gone
        removable -= gone
    return out


def condition(kind: str, status: str, reason: str, message: str, now: float, previous: list[Obj] | None) -> Obj:
    """A workload's condition, its ``lastTransitionTime`` kept while its status stays."""
    stamp = rfc3339(now)
    before = next((c for c in previous or [] if c.get("type") == kind), None)
    since = before.get("lastTransitionTime", stamp) if before is not None and before.get("status") == status else stamp
    return {"type": kind, "status": status, "lastUpdateTime": stamp, "lastTransitionTime": since, "reason": reason, "message": message}


def deployment_status(deploy: Obj, replicasets: list[Obj], new_name: str, *, created: bool, now: float) -> Obj:
    """A Deployment's status from its ReplicaSets (``new_name`` the one of its template; ``created``: made this pass)."""
    spec, old_status = deploy.get("spec") or {}, deploy.get("status") or {}
    desired = int(spec.get("replicas", 1))
    counts = {name: sum(int((rs.get("status") or {}).get(name, 0)) for rs in replicasets)
              for name in ("replicas", "readyReplicas", "availableReplicas")}
    new = next((rs for rs in replicasets if rs["metadata"]["name"] == new_name), None)
    updated = int(((new or {}).get("status") or {}).get("replicas", 0))
    strategy = spec.get("strategy") or {}
    unavailable = 0 if strategy.get("type") == "Recreate" else _scaled((strategy.get("rollingUpdate") or {}).get("maxUnavailable", "25%"), desired, up=False)
    previous = old_status.get("conditions")
    available = counts["availableReplicas"] >= desired - unavailable
    conditions = [condition("Available", "True" if available else "False",
                            "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
                            "Deployment has minimum availability." if available else "Deployment does not have minimum availability.",
                            now, previous),
                  _progressing(spec, replicasets, new_name, updated, counts, created=created, now=now, previous=previous)]
    status: Obj = {"observedGeneration": deploy["metadata"].get("generation", 1), **{k: v for k, v in counts.items() if v},
                   "updatedReplicas": updated, "conditions": conditions,
                   # of every pod its ReplicaSets ask for, the surge included, as the real controller counts them
                   "unavailableReplicas": max(0, sum(int(rs["spec"].get("replicas", 0)) for rs in replicasets) - counts["availableReplicas"])}
    return {k: v for k, v in status.items() if v != 0 or k == "observedGeneration"}


def _progressing(spec: Obj, replicasets: list[Obj], new_name: str, updated: int, counts: dict[str, int], *, created: bool, now: float,
                 previous: list[Obj] | None) -> Obj:
    desired = int(spec.get("replicas", 1))
    olds = sum(int((rs.get("status") or {}).get("replicas", 0)) for rs in replicasets if rs["metadata"]["name"] != new_name)
    before = next((c for c in previous or [] if c.get("type") == "Progressing"), None)
    if created:
        return condition("Progressing", "True", "NewReplicaSetCreated", f'Created new replica set "{new_name}"', now, previous)
    if updated == desired and counts["availableReplicas"] >= desired and olds == 0:
        return condition("Progressing", "True", "NewReplicaSetAvailable", f'ReplicaSet "{new_name}" has successfully progressed.', now, previous)
    if before is not None and before.get("reason") in ("ProgressDeadlineExceeded",):
        return before
    deadline = int(spec.get("progressDeadlineSeconds", PROGRESS_DEADLINE))
    if before is not None and before.get("reason") == "ReplicaSetUpdated" and _age(before, now) > deadline:
        return condition("Progressing", "False", "ProgressDeadlineExceeded", f'ReplicaSet "{new_name}" has timed out progressing.', now, previous)
    if before is not None and before.get("reason") == "ReplicaSetUpdated":
        return before  # no progress this pass: the condition as it was (the controller updates it when pods move)
    return condition("Progressing", "True", "ReplicaSetUpdated", f'ReplicaSet "{new_name}" is progressing.', now, previous)


def _age(cond: Obj, now: float) -> float:
    """Seconds since a condition's ``lastUpdateTime`` (0 when it has none that reads)."""
    try:
        return now - calendar.timegm(time.strptime(str(cond.get("lastUpdateTime") or ""), "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return 0.0


def pod_ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in (pod.get("status") or {}).get("conditions") or [])


def replicaset_status(rs: Obj, pods: list[Obj]) -> Obj:
    """A ReplicaSet's status: its pods, those ready (and so available: no ``minReadySeconds`` here)."""
    ready = sum(1 for pod in pods if pod_ready(pod))
    status: Obj = {"replicas": len(pods), "fullyLabeledReplicas": len(pods), "readyReplicas": ready, "availableReplicas": ready,
                   "observedGeneration": rs["metadata"].get("generation", 1)}
    return {k: v for k, v in status.items() if v != 0 or k in ("replicas", "observedGeneration")}


def set_ready(status: Obj, ready: bool, now: float) -> Obj:
    """The pod's containers and its ``Ready`` and ``ContainersReady`` conditions said ready or not."""
    out = copy.deepcopy(status)
    flag = "True" if ready else "False"
    for cond in out.get("conditions") or []:
        if cond.get("type") in ("Ready", "ContainersReady") and cond.get("status") != flag:
            cond.update(status=flag, lastTransitionTime=rfc3339(now))
            if ready:
                cond.pop("reason", None)
            else:
                cond["reason"] = "ContainersNotReady"
    for cs in out.get("containerStatuses") or []:
        cs["ready"] = ready
    return out


def pull_failed(status: Obj, pod: Obj, *, retry: int, now: float) -> Obj:
    """A pod whose image cannot be pulled: Pending, its containers waiting ``ErrImagePull`` (a pull just failed, retry 0,
    2, ...) or ``ImagePullBackOff`` (waiting to try again)."""
    out = set_ready(status, False, now)
    out["phase"] = "Pending"
    reason = "ErrImagePull" if retry % 2 == 0 else "ImagePullBackOff"
    out["containerStatuses"] = [
        {"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": False, "restartCount": 0, "started": False, "lastState": {},
         "state": {"waiting": {"reason": reason, "message": f'Back-off pulling image "{c.get("image", "")}"' if retry % 2 else
                               f'failed to pull image "{c.get("image", "")}": dial tcp: lookup {str(c.get("image", "")).split("/")[0]}: no such host'}}}
        for c in (pod.get("spec") or {}).get("containers") or []]
    return out


def oom_killed(status: Obj, now: float) -> Obj:
    """The first container killed for memory (exit code 137), the pod unready."""
    out = set_ready(status, False, now)
    first = (out.get("containerStatuses") or [None])[0]
    if first is not None:
        started = (first.get("state") or {}).get("running", {}).get("startedAt", rfc3339(now))
        first["state"] = {"terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": started, "finishedAt": rfc3339(now),
                                         "containerID": first.get("containerID", "")}}
        first["started"] = False
    return out


def restarted(status: Obj, now: float, *, ready: bool) -> Obj:
    """A terminated container started again: ``restartCount`` + 1, its termination as ``lastState``."""
    out = set_ready(status, ready, now)
    for cs in out.get("containerStatuses") or []:
        if "terminated" in (cs.get("state") or {}):
            cs["lastState"] = cs["state"]
            cs["state"] = {"running": {"startedAt": rfc3339(now)}}
            cs["restartCount"] = int(cs.get("restartCount", 0)) + 1
            cs["started"] = True
    return out


def failed(status: Obj, now: float, code: int) -> Obj:
    """A pod whose containers exited ``code`` (non-zero): ``Failed``, each ``terminated Error``."""
    out = set_ready(status, False, now)
    out["phase"] = "Failed"
    for cs in out.get("containerStatuses") or []:
        started = (cs.get("state") or {}).get("running", {}).get("startedAt", rfc3339(now))
        cs["state"] = {"terminated": {"exitCode": code, "reason": "Error", "startedAt": started, "finishedAt": rfc3339(now),
                                      "containerID": cs.get("containerID", "")}}
        cs["started"] = False
    return out


def job_status(job: Obj, pods: list[Obj], *, now: float) -> tuple[Obj, int]:
    """A Job's status from its pods, and how many pods to create now (a failed one replaced, up to parallelism)."""
    spec, old = job.get("spec") or {}, job.get("status") or {}
    completions, parallelism = int(spec.get("completions", 1)), int(spec.get("parallelism", 1))
    phases = [(pod.get("status") or {}).get("phase", "") for pod in pods]
    succeeded, failures = phases.count("Succeeded"), phases.count("Failed")
    active = sum(1 for phase in phases if phase in ("", "Pending", "Running"))
    status: Obj = {"startTime": old.get("startTime", rfc3339(now)), "active": active, "succeeded": succeeded, "failed": failures,
                   "ready": sum(1 for pod in pods if pod_ready(pod)), "uncountedTerminatedPods": {}}
    stamp = rfc3339(now)
    if succeeded >= completions:
        status.update(active=0, ready=0, completionTime=old.get("completionTime", stamp), conditions=[
            {"type": "Complete", "status": "True", "lastProbeTime": stamp, "lastTransitionTime": stamp}])
        return _job_kept(status, old), 0
    if failures > int(spec.get("backoffLimit", BACKOFF_LIMIT)):
        status.update(active=0, ready=0, conditions=[
            {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit",
             "lastProbeTime": stamp, "lastTransitionTime": stamp}])
        return _job_kept(status, old), 0
    wanted = max(0, min(parallelism, completions - succeeded) - active)
    status["active"] += wanted
    return {k: v for k, v in status.items() if v != 0 or k in ("active", "ready")}, wanted


def _job_kept(status: Obj, old: Obj) -> Obj:
    """A finished Job keeps the conditions' times it got when it finished."""
    if old.get("conditions"):
        status["conditions"] = old["conditions"]
    return {k: v for k, v in status.items() if v != 0 or k in ("active", "ready")}


def status_patch(old: Obj, new: Obj) -> Obj:
    """A merge patch from one status to the next: what the new one leaves out removed (null), as an update would."""
    return {**{k: None for k in old if k not in new}, **new}


def same_status(old: Obj, new: Obj) -> bool:
    """Whether a status is as written, but for its conditions' times (a controller writes only what changed)."""
    def timeless(status: Obj) -> Obj:
        return {**status, "conditions": [{k: v for k, v in c.items() if not k.startswith("last")} for c in status.get("conditions") or []]}
    return timeless(old) == timeless(new)
