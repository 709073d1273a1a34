"""The reduced status (``trace/statuses.reduce``) written back in the API's shape, for ``get --at -o json|yaml`` and
what ``serve --at`` answers: exactly the fields a status change keeps, never the ones it does not (a pod's IP and start
time, conditions' times and messages, container ids). Pure.

- every kind: its counts as the API names them (``readyReplicas``, ``numberReady``, ``succeeded``), each condition as
  ``{type, status, reason}``; a CronJob's ``active`` is a count in the history, not its list of Jobs: left out;
- pods: ``phase``, ``reason``, ``conditions`` as ``{type, status}``, and per container ``name``, ``ready``,
  ``restartCount``, ``state`` and ``lastState`` with their reason and exit code, init containers (those the spec
  names so) in ``initContainerStatuses``; a failed pull reads ``ImagePullBackOff`` whether the kubelet said that or
  ``ErrImagePull`` (one state, docs/spec.md "What a status change is").
"""

from __future__ import annotations

from typing import Any, Mapping

from kubectl_sktrace.trace.statuses import COUNTS

Obj = dict[str, Any]


def status(obj: Mapping[str, Any], reduced: Mapping[str, Any]) -> Obj:
    """The ``status`` of ``obj`` (kubectl's JSON form, for its kind and spec) from its reduced status."""
    if obj.get("kind") == "Pod" and obj.get("apiVersion") == "v1":
        return _pod(obj, reduced)
    out: Obj = {}
    for name in COUNTS:
        value = reduced.get(name)
        if isinstance(value, int) and not (name == "active" and obj.get("kind") == "CronJob"):
            out[name] = value
    conditions = _conditions(reduced, reasons=True)
    if conditions:
        out["conditions"] = conditions
    return out


def _conditions(reduced: Mapping[str, Any], *, reasons: bool) -> list[Obj]:
    found = reduced.get("conditions")
    out = []
    for kind, said in (found.items() if isinstance(found, Mapping) else ()):
        state, _, reason = str(said).partition(" ")
        out.append({"type": kind, "status": state} | ({"reason": reason} if reason and reasons else {}))
    return out


def _state(said: Any) -> Obj:
    """``waiting CrashLoopBackOff`` as ``{"waiting": {"reason": "CrashLoopBackOff"}}``; ``terminated OOMKilled 137``
    with its ``exitCode``."""
    words = str(said or "").split(" ")
    if words[0] not in ("waiting", "running", "terminated"):
        return {}
    rest = words[1:]
    detail: Obj = {}
    if rest and rest[-1].lstrip("-").isdigit():
        detail["exitCode"] = int(rest.pop())
    if rest:
        detail["reason"] = " ".join(rest)
    return {words[0]: detail}


def _pod(obj: Mapping[str, Any], reduced: Mapping[str, Any]) -> Obj:
    out: Obj = {name: reduced[name] for name in ("phase", "reason") if isinstance(reduced.get(name), str)}
    conditions = _conditions(reduced, reasons=False)
    if conditions:
        out["conditions"] = conditions
    spec = obj.get("spec")
    listed = spec.get("initContainers") if isinstance(spec, Mapping) else None
    inits = {c.get("name") for c in listed if isinstance(c, Mapping)} if isinstance(listed, list) else set()
    containers = reduced.get("containers")
    for name, container in (containers.items() if isinstance(containers, Mapping) else ()):
        if not isinstance(container, Mapping):
            continue
        each: Obj = {"name": name, "ready": bool(container.get("ready")), "restartCount": int(container.get("restarts") or 0)}
        for field, key in (("state", "state"), ("last", "lastState")):
            state = _state(container.get(field))
            if state:
                each[key] = state
        out.setdefault("initContainerStatuses" if name in inits else "containerStatuses", []).append(each)
    return out
