"""kubectl's columns read from status, computed as kubectl's printers compute them, from the reduced status the history
keeps (``trace/statuses.reduce``) and the object's spec at the same time. Pure.

Each function takes the object (kubectl's JSON form, no status) and its reduced status, and returns the cell, or
``None`` where the reduced status does not hold what the column needs (the caller prints ``<unknown>``):

- Deployment READY ``readyReplicas/spec.replicas``, UP-TO-DATE ``updatedReplicas``, AVAILABLE ``availableReplicas``;
  ReplicaSet CURRENT ``replicas``, READY ``readyReplicas``; StatefulSet READY; DaemonSet DESIRED, CURRENT, READY,
  UP-TO-DATE, AVAILABLE from its scheduled counts; Job STATUS from its conditions and COMPLETIONS
  (``succeeded/completions``, ``n/1 of P`` for a parallel Job without completions); CronJob ACTIVE.
- Pod READY ``ready/containers`` (restartable init containers, "sidecars", counted), STATUS by kubectl's rules (the
  pod's reason, else its phase; an init container failing or waiting: ``Init:Error``, ``Init:0/1``; a container
  waiting or terminated: its reason, ``CrashLoopBackOff``, ``ImagePullBackOff``, ``OOMKilled``, ``Completed``,
  ``ExitCode:1``; ``Completed`` with a container still running: ``Running`` or ``NotReady``), RESTARTS the sum of the
  containers' restart counts (kubectl adds "(5m ago)", the time of the last termination: the history does not keep
  it), NODE, READINESS GATES.

A count the API leaves out is 0, as kubectl reads it. ``Terminating`` is never printed: a deletion's timestamp is not
kept (docs/spec.md §4), a pod being deleted shows the status it had.
"""

from __future__ import annotations

from typing import Any, Mapping

Obj = Mapping[str, Any]
SIDECAR = "Always"  # an init container's restartPolicy that makes it a sidecar


def _spec(obj: Obj, *path: str) -> Any:
    value: Any = obj
    for step in path:
        value = value.get(step) if isinstance(value, Mapping) else None
    return value


def _count(reduced: Obj, name: str) -> int:
    value = reduced.get(name)
    return value if isinstance(value, int) else 0


def _desired(obj: Obj, reduced: Obj) -> int:
    replicas = _spec(obj, "spec", "replicas")
    if isinstance(replicas, int):
        return replicas
    desired = reduced.get("desired")
    return desired if isinstance(desired, int) else 1  # the API's default


def ready_of_desired(obj: Obj, reduced: Obj) -> str:
    """A Deployment's and a StatefulSet's READY."""
    return f"{_count(reduced, 'readyReplicas')}/{_desired(obj, reduced)}"


def count(name: str) -> Any:
    """The cell of one count (``updatedReplicas``, ``numberReady``)."""
    return lambda obj, reduced: str(_count(reduced, name))


def _true(reduced: Obj, condition: str) -> bool:
    said = (reduced.get("conditions") or {}).get(condition)
    return isinstance(said, str) and said.split(" ", 1)[0] == "True"


def job_status(obj: Obj, reduced: Obj) -> str:
    """A Job's STATUS (kubectl 1.30 and after): the first of its conditions that holds, else Running."""
    for condition, said in (("Complete", "Complete"), ("Failed", "Failed"), ("Suspended", "Suspended"),
                            ("FailureTarget", "FailureTarget"), ("SuccessCriteriaMet", "SuccessCriteriaMet")):
        if _true(reduced, condition):
            return said
    return "Running"


def job_completions(obj: Obj, reduced: Obj) -> str:
    succeeded = _count(reduced, "succeeded")
    completions, parallelism = _spec(obj, "spec", "completions"), _spec(obj, "spec", "parallelism")
    if isinstance(completions, int):
        return f"{succeeded}/{completions}"
    if isinstance(parallelism, int) and parallelism > 1:
        return f"{succeeded}/1 of {parallelism}"
    return f"{succeeded}/1"


def _containers(reduced: Obj) -> Mapping[str, Any]:
    found = reduced.get("containers")
    return found if isinstance(found, Mapping) else {}


def _names(obj: Obj, field: str) -> list[str]:
    listed = _spec(obj, "spec", field)
    return [str(c.get("name")) for c in listed if isinstance(c, Mapping)] if isinstance(listed, list) else []


def _regular(obj: Obj, reduced: Obj) -> list[str]:
    """The pod's regular containers: its spec's; for a pod whose spec was not kept (known by its lifecycle only), those
    of its status but an init container that finished (terminated with exit code 0), the one kind a status shows."""
    if isinstance(_spec(obj, "spec", "containers"), list):
        return _names(obj, "containers")
    return [name for name, c in _containers(reduced).items() if not (isinstance(c, Mapping) and _state(c)[0] == "terminated" and _state(c)[2] == 0)]


def _sidecars(obj: Obj) -> set[str]:
    listed = _spec(obj, "spec", "initContainers")
    return {str(c.get("name")) for c in listed if isinstance(c, Mapping) and c.get("restartPolicy") == SIDECAR} if isinstance(listed, list) else set()


def _state(container: Obj) -> tuple[str, str, int | None]:
    """``(kind, reason, exit code)`` of a reduced container state (``waiting CrashLoopBackOff``, ``terminated Error 1``,
    ``terminated 137``: no reason)."""
    words = str(container.get("state") or "").split(" ")
    kind, rest = words[0], words[1:]
    code = int(rest[-1]) if rest and rest[-1].lstrip("-").isdigit() else None
    reason = " ".join(rest[:-1] if code is not None else rest)
    return kind, reason, code


def pod_ready(obj: Obj, reduced: Obj) -> str:
    """``ready/total``: the regular containers and the sidecars, ready ones counted as kubectl counts them."""
    containers, sidecars, regular = _containers(reduced), _sidecars(obj), _regular(obj, reduced)
    total = len(regular) + len(sidecars)
    ready = 0
    for name, container in containers.items():
        if not isinstance(container, Mapping) or not container.get("ready"):
            continue
        kind = _state(container)[0]
        if (name in sidecars) or (name in regular and kind == "running"):
            ready += 1
    return f"{ready}/{total}"


def pod_restarts(obj: Obj, reduced: Obj) -> str:
    """The restarts of the regular containers and the sidecars (of every init container while the pod initializes)."""
    containers, inits, sidecars = _containers(reduced), _names(obj, "initContainers"), _sidecars(obj)
    initializing = _init_reason(obj, reduced) is not None and not _true(reduced, "Initialized")
    counted = [name for name in containers if (name in inits) == initializing or (name in sidecars and not initializing)]
    return str(sum(int(containers[name].get("restarts") or 0) for name in counted if isinstance(containers[name], Mapping)))


def _init_reason(obj: Obj, reduced: Obj) -> str | None:
    """The STATUS an init container that has not finished gives the pod (``Init:Error``, ``Init:0/2``), None when none."""
    containers, inits, sidecars = _containers(reduced), _names(obj, "initContainers"), _sidecars(obj)
    for i, name in enumerate(inits):
        container = containers.get(name)
        if not isinstance(container, Mapping):
            continue  # kubectl walks the statuses the pod has
        kind, reason, code = _state(container)
        if kind == "terminated" and code == 0:
            continue
        if name in sidecars and kind == "running":
            continue  # a started sidecar (``started`` is not kept: running stands for it)
        if kind == "terminated":
            return f"Init:{reason}" if reason else f"Init:ExitCode:{code if code is not None else 0}"
        if kind == "waiting" and reason and reason != "PodInitializing":
            return f"Init:{reason}"
        return f"Init:{i}/{len(inits)}"
    return None


def pod_status(obj: Obj, reduced: Obj) -> str | None:
    """kubectl's STATUS of a pod; None when the reduced status has no phase (nothing was read of it)."""
    phase = reduced.get("phase")
    if not isinstance(phase, str):
        return None
    reason = str(reduced.get("reason") or phase)
    initializing = _init_reason(obj, reduced)
    if initializing is not None:
        reason = initializing
    if initializing is None or _true(reduced, "Initialized"):
        reason = _containers_reason(obj, reduced, reason)
    return reason


def _containers_reason(obj: Obj, reduced: Obj, reason: str) -> str:
    containers, regular = _containers(reduced), _regular(obj, reduced)
    running = False
    for name in reversed([n for n in containers if n in regular]):
        container = containers[name]
        if not isinstance(container, Mapping):
            continue
        kind, said, code = _state(container)
        if kind == "waiting" and said:
            reason = said
        elif kind == "terminated":
            reason = said or f"ExitCode:{code if code is not None else 0}"
        elif container.get("ready") and kind == "running":
            running = True
    if reason == "Completed" and running:
        reason = "Running" if _true(reduced, "Ready") else "NotReady"
    return reason


def pod_node(obj: Obj, reduced: Obj) -> str:
    return str(reduced.get("node") or "<none>")


def readiness_gates(obj: Obj, reduced: Obj) -> str:
    """``passed/gates`` of the pod's readiness gates, ``<none>`` without any."""
    gates = _spec(obj, "spec", "readinessGates")
    if not isinstance(gates, list) or not gates:
        return "<none>"
    kinds = [str(g.get("conditionType")) for g in gates if isinstance(g, Mapping)]
    return f"{sum(1 for kind in kinds if _true(reduced, kind))}/{len(kinds)}"


def cronjob_active(obj: Obj, reduced: Obj) -> str:
    return str(_count(reduced, "active"))
