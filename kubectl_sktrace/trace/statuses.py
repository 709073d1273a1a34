"""What a person calls a change of an object's status, and what never is one. Pure.

An object's status is reduced (``reduce``) to the fields a person on call reads (docs/spec.md "What a status change
is"); two reductions that differ are a status change, recorded as a revision of its own (``store/statuses``). The
reduction is an allow-list, so a field a controller adds or rewrites that is not named here never makes a change:

- every kind with a status: the replicas its spec asks for (``spec.replicas``, as ``desired``: what kubectl's READY
  column divides by), each of ``status.conditions`` as its ``type``, ``status`` and ``reason`` (a transition, not its
  timestamps or its message), and the replica counts of ``COUNTS`` (Deployments, ReplicaSets, StatefulSets,
  DaemonSets, Jobs; a custom kind that uses the same names); a CronJob's ``active`` Jobs, counted;
- pods (``reduce_pod``): ``phase``, ``reason`` (``Evicted``), the node it runs on (``spec.nodeName``), each condition's
  ``type`` and ``status``, and per container (init containers first) ``ready``, ``restartCount``, the state's kind
  with its reason and exit code (``waiting CrashLoopBackOff``, ``terminated OOMKilled 137``) and the last
  termination's reason and exit code.

Never a change, measured against a real kube-apiserver v1.28 with its controller manager and a kubelet (the fake one
of ``../shared/realk8s``): the heartbeat and probe times of conditions (a node's ``lastHeartbeatTime`` every 10 s, a
pod's ``lastProbeTime``), ``lastUpdateTime`` and ``lastTransitionTime`` (the Deployment controller rewrites the
first on every sync of a rollout), ``observedGeneration`` (it follows the spec), a condition's ``message`` (it
restates the reason with numbers and names: "ReplicaSet web-7d4 has timed out progressing"), a CronJob's
``lastScheduleTime``/``lastSuccessfulTime`` (its schedule's clock: each Job it starts is a change of ``active``),
a Job's ``startTime``/``completionTime``/``uncountedTerminatedPods`` (the Job controller's bookkeeping), container
ids, image ids, start times and ``started``, a pod's IPs, ``startTime`` and ``qosClass``, and any status field of a
kind this module does not name (a node's images and allocatable, an HPA's current metrics, rewritten every sync).

One failure said two ways is one state: a kubelet that cannot pull an image alternates ``ErrImagePull`` (the pull
that failed) and ``ImagePullBackOff`` (waiting to try again) at every retry, on its own clock; both read as
``ImagePullBackOff`` (``PULL_BACKOFF``), so a pull failing for an hour is one change, not one per retry.

``packed`` gives a reduction's bytes (JSON, orjson's when installed): all the recorder keeps of an object between two of its events; ``delta``
what changed between two reductions (all a row stores), ``patched`` a reduction with one applied. ``describe`` says a change for people; ``ready_of`` reads "2 of 3 ready" from a
workload's reduction, ``marks`` the restarts, crash loops, OOM kills and failed pulls a pod's change shows.
"""

from __future__ import annotations

import json
import marshal
from collections.abc import Callable, Mapping
from typing import Any

_json: Callable[[Any], bytes]
_unjson: Callable[[bytes], Any]
try:
    from orjson import dumps as _json
    from orjson import loads as _unjson
except ImportError:  # the krew archive is pure Python: the standard library's JSON, the same bytes for the same reduction
    _unjson = json.loads

    def _json(value: Any) -> bytes:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()

COUNTS = (
    # Deployments, ReplicaSets, StatefulSets
    "replicas", "readyReplicas", "availableReplicas", "updatedReplicas", "unavailableReplicas", "currentReplicas",
    "fullyLabeledReplicas", "terminatingReplicas",
    # DaemonSets
    "desiredNumberScheduled", "currentNumberScheduled", "numberReady", "numberAvailable", "numberUnavailable",
    "updatedNumberScheduled", "numberMisscheduled",
    # Jobs ("active" of a CronJob is a list of Jobs: counted)
    "active", "succeeded", "failed", "ready", "terminating",
)
"""The integer fields of a status read as counts; a field of these names that is not an integer is left out, and one
that is 0 too (the API leaves zeros out: an absent ``readyReplicas`` and a 0 are one state), but ``DESIRED``."""
_COUNTED = frozenset(COUNTS)
DESIRED = frozenset({"replicas", "desiredNumberScheduled"})
"""The counts a workload wants, kept at 0: a Deployment scaled to zero reads "0 of 0 ready"."""
PULL_BACKOFF = "ImagePullBackOff"
PULL_FAILURES = frozenset({"ErrImagePull", PULL_BACKOFF})
"""A failed pull, said two ways by the kubelet at each retry: one state, ``PULL_BACKOFF``."""
CRASH_LOOP, OOM_KILLED = "CrashLoopBackOff", "OOMKilled"
RESTART, CRASH, OOM, PULL = "restart", "crashloop", "oomkilled", "pullfailed"
"""The marks a pod's change shows on the page (``marks``)."""


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _conditions(status: Mapping[str, Any], *, reasons: bool) -> dict[str, str]:
    """``{type: "status reason"}`` (``"status"`` without ``reasons`` or a reason). Written for speed (every watch event
    of a pod comes through here): type checks inline, no helper calls."""
    out: dict[str, str] = {}
    conditions = status.get("conditions")
    if type(conditions) is not list:
        return out
    for cond in conditions:
        if type(cond) is not dict:
            continue
        kind = cond.get("type")
        if not kind or type(kind) is not str:
            continue
        said = cond.get("status")
        said = said if type(said) is str else ""
        reason = cond.get("reason") if reasons else None
        out[kind] = said + " " + reason if reason and type(reason) is str else said
    return out


def reduce(obj: Mapping[str, Any], *, pod: bool = False) -> dict[str, Any]:
    """What a person reads of an object's status (``pod``: a Pod's, by ``reduce_pod``); {} when it has none."""
    if pod:
        return reduce_pod(obj)
    status = _map(obj.get("status"))
    out: dict[str, Any] = {}
    desired = _int(_map(obj.get("spec")).get("replicas"))
    if desired is not None and status:
        out["desired"] = desired  # what kubectl's READY divides by: during a rollout, status.replicas counts the surge too
    for name, value in status.items():  # a server writes a kind's fields in one order: its counts come in that order
        if name not in _COUNTED:
            continue
        count = len(value) if name == "active" and type(value) is list else value if type(value) is int else None
        if count is not None and (count or name in DESIRED):
            out[name] = count
    conditions = _conditions(status, reasons=True)
    if conditions:
        out["conditions"] = conditions
    return out


def _state(state: Any) -> str:
    """A container state as ``kind[ reason[ exitCode]]``: ``running``, ``waiting CrashLoopBackOff``, ``terminated
    OOMKilled 137``; '' when none."""
    if type(state) is not dict or not state:
        return ""
    for kind, detail in state.items():
        if kind not in ("waiting", "running", "terminated"):
            continue
        said: str = kind
        if type(detail) is not dict or not detail:
            return said
        reason = detail.get("reason")
        if reason and type(reason) is str:
            said += " " + (PULL_BACKOFF if kind == "waiting" and reason in PULL_FAILURES else reason)
        code = detail.get("exitCode")
        if type(code) is int:
            said += " " + str(code)
        return said
    return ""


def reduce_pod(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What a person reads of a pod: phase, reason, node, conditions (type and status), containers by name (``ready``,
    ``restarts``, ``state``, ``last``). Written for speed (every watch event of a pod comes through here): inline."""
    status = obj.get("status")
    if type(status) is not dict:
        status = {}
    out: dict[str, Any] = {}
    for name in ("phase", "reason"):
        value = status.get(name)
        if value and type(value) is str:
            out[name] = value
    spec = obj.get("spec")
    node = spec.get("nodeName") if type(spec) is dict else None
    if node and type(node) is str:
        out["node"] = node
    conditions = _conditions(status, reasons=False)
    if conditions:
        out["conditions"] = conditions
    containers = _containers(status)
    if containers:
        out["containers"] = containers
    return out


def _containers(status: Mapping[str, Any]) -> dict[str, Any]:
    """A pod's containers by name, init containers first: ``ready``, ``restarts``, ``state``, ``last``."""
    containers: dict[str, Any] = {}
    for field in ("initContainerStatuses", "containerStatuses"):
        listed = status.get(field)
        if type(listed) is not list:
            continue
        for each in listed:
            named = each.get("name") if type(each) is dict else None
            if not named or type(named) is not str:
                continue
            restarts = each.get("restartCount")
            one: dict[str, Any] = {"ready": each.get("ready") is True, "restarts": restarts if type(restarts) is int else 0}
            state, last = each.get("state"), each.get("lastState")
            state, last = _state(state) if state else "", _state(last) if last else ""
            if state:
                one["state"] = state
            if last:
                one["last"] = last
            containers[named] = one
    return containers


def packed(reduced: dict[str, Any]) -> bytes:
    """A reduction's bytes, for memory (and kept by a clean stop for the next start: ``record/unchanged``): orjson's
    JSON, in the reduction's order (a server keeps the order of conditions and containers, so equal reductions have
    equal bytes); a fifth of ``marshal``'s cost and smaller. A reduction JSON cannot say (an integer beyond 64 bits,
    read from an audit log) is ``marshal``'s bytes after a zero byte. ``unpacked`` gives the reduction back. The bytes
    are a copy of their exact size: orjson's own keep the 4 KiB buffer it wrote them in, which the recorder would hold
    for every object it knows."""
    try:
        return bytes(memoryview(_json(reduced)))
    except (TypeError, ValueError):  # orjson's JSONEncodeError is a TypeError
        return b"\0" + marshal.dumps(reduced, _MARSHAL_VERSION)


def unpacked(data: bytes) -> dict[str, Any]:
    """The reduction ``packed`` gave ``data`` for."""
    found: dict[str, Any] = marshal.loads(data[1:]) if data[:1] == b"\0" else _unjson(data)
    return found


_MARSHAL_VERSION = 2
"""``marshal``'s format without references: from version 3 on, a string is written as a reference to an earlier one
when it is the same object, and flagged when more than one thing holds it, so two equal reductions built from two
parses of the same status could have other bytes."""


def changed(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> bool:
    """Whether ``after`` is a status change from ``before`` (None: nothing known, a change if there is a status)."""
    return (before or {}) != after if before is not None else bool(after)


def ready_of(reduced: Mapping[str, Any]) -> tuple[int, int] | None:
    """``(ready, desired)`` of a workload's reduction: replicas or a DaemonSet's scheduled pods; None for other kinds."""
    if "desiredNumberScheduled" in reduced:
        return reduced.get("numberReady", 0), reduced["desiredNumberScheduled"]
    if "desired" in reduced:
        return reduced.get("readyReplicas", 0), reduced["desired"]
    if "replicas" in reduced:
        return reduced.get("readyReplicas", 0), reduced["replicas"]
    return None


def summary(reduced: Mapping[str, Any]) -> str:
    """A reduction in a few words: ``2 of 3 ready``, ``1 active, 1 failed``, a pod's ``Running``, else its conditions."""
    ready = ready_of(reduced)
    if ready is not None:
        return f"{ready[0]} of {ready[1]} ready"
    if "phase" in reduced:
        waiting = [c["state"].split(" ", 1)[1] for c in _map(reduced.get("containers")).values()
                   if str(c.get("state", "")).startswith("waiting ")]
        return waiting[0] if waiting else str(reduced["phase"])
    jobs = [f"{reduced[name]} {name}" for name in ("active", "succeeded", "failed") if reduced.get(name)]
    if jobs:
        return ", ".join(jobs)
    conditions = _map(reduced.get("conditions"))
    return ", ".join(f"{kind}={said}" for kind, said in sorted(conditions.items())) or "no status"


def describe(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> str:
    """What changed between two reductions, for people: ``readyReplicas 3 -> 2; Available True -> False
    MinimumReplicasUnavailable; web: waiting ImagePullBackOff``. Parts joined by ``; ``."""
    old = dict(before or {})
    parts = [f"{name} {old.get(name, '-')} -> {after.get(name, '-')}"
             for name in ("desired", *COUNTS, "phase", "reason", "node") if old.get(name) != after.get(name)]
    old_conditions, new_conditions = _map(old.get("conditions")), _map(after.get("conditions"))
    for kind in sorted(set(old_conditions) | set(new_conditions)):
        if old_conditions.get(kind) != new_conditions.get(kind):
            parts.append(f"{kind} {old_conditions.get(kind, '-')} -> {new_conditions.get(kind, '-')}")
    old_containers, new_containers = _map(old.get("containers")), _map(after.get("containers"))
    for name, now in new_containers.items():
        was = _map(old_containers.get(name))
        said = [f"{field} {now.get(field)}" for field in ("state", "ready", "restarts", "last")
                if now.get(field) is not None and was.get(field) != now.get(field)]
        if said:
            parts.append(f"{name}: {', '.join(said)}")
    return "; ".join(parts)


def marks(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> list[str]:
    """What a pod's change shows (each once, in this order): a container ``RESTART``ed, went into a ``CRASH`` loop,
    was ``OOM`` killed, failed to pull its image (``PULL``)."""
    found: list[str] = []
    old_containers = _map((before or {}).get("containers"))
    for name, now in _map(after.get("containers")).items():
        was = _map(old_containers.get(name))
        state, last = str(now.get("state", "")), str(now.get("last", ""))
        seen = {
            RESTART: (now.get("restarts") or 0) > (was.get("restarts") or 0),
            CRASH: state == f"waiting {CRASH_LOOP}" and was.get("state") != state,
            OOM: OOM_KILLED in (state + " " + last).split() and OOM_KILLED not in (f"{was.get('state', '')} {was.get('last', '')}").split(),
            PULL: state == f"waiting {PULL_BACKOFF}" and was.get("state") != state,
        }
        found += [mark for mark, yes in seen.items() if yes and mark not in found]
    return [mark for mark in (RESTART, CRASH, OOM, PULL) if mark in found]


def delta(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """What turns reduction ``before`` into ``after`` (``patched``): the fields whose value changed, a map's changes
    compared again inside it (a condition, a container), a field gone as None (no reduction holds a None)."""
    out: dict[str, Any] = {}
    for name, now in after.items():
        was = before.get(name)
        if was == now:
            continue
        out[name] = delta(was, now) if type(was) is dict and type(now) is dict else now
    for name in before:
        if name not in after:
            out[name] = None
    return out


def patched(before: Mapping[str, Any], change: Mapping[str, Any]) -> dict[str, Any]:
    """``before`` with a ``delta`` applied: the reduction it was taken to."""
    out = dict(before)
    for name, now in change.items():
        if now is None:
            out.pop(name, None)
        elif type(now) is dict and type(out.get(name)) is dict:
            out[name] = patched(out[name], now)
        else:
            out[name] = now
    return out
