"""The state at T from a SimKube trace file instead of the cache (``get --at T --trace FILE``): the trace's events
replayed up to T's second. A trace keeps less than the cache: no uid, no creation time, no status, and only the
window it was exported for; the objects are what it holds, said ``trace file`` (``Knowledge``)."""

from __future__ import annotations

import math
from typing import Any, Iterator

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.past.kinds import SHORT_NAMES, Kind, resolve
from kubectl_sktrace.past.objects import Scope, kubectl_form
from kubectl_sktrace.past.state import Knowledge, PastObject
from kubectl_sktrace.timeparse import format_time
from kubectl_sktrace.trace.files.format import Trace
from kubectl_sktrace.trace.sanitize import object_key

FROM_TRACE = "trace file"


def trace_kinds(trace: Trace) -> list[Kind]:
    """The kinds of the objects a trace holds, named as kubectl names the built-in ones."""
    found: dict[GVK, Kind] = {}
    for event in trace.events:
        for obj in [*event.get("applied_objs", ()), *event.get("deleted_objs", ())]:
            key = object_key(obj) if isinstance(obj, dict) else None
            if key is not None and key.gvk not in found:
                kind = key.gvk.kind
                found[key.gvk] = Kind(key.gvk, kind.lower() + "s", True, SHORT_NAMES.get(kind, ()), kind.lower())
    return sorted(found.values(), key=lambda k: str(k.gvk))


def objects_at(trace: Trace, term: str, scope: Scope, at: float, *, now: float) -> tuple[Kind, int, Iterator[PastObject]]:
    """The kind ``term`` names, T's second, and the trace's objects of that kind as they were then, by namespace and name."""
    kind = resolve(trace_kinds(trace), term)
    times = [int(e.get("ts", 0)) for e in trace.events]
    if not times:
        raise UsageError("the trace holds no events: it says nothing of any time")
    if at > now + 1:
        raise UsageError(f"{format_time(at)} is in the future (now is {format_time(now)})")
    if math.floor(at) < min(times):
        raise UsageError(f"{format_time(at)} is before the trace, which begins at {format_time(min(times))}")
    state: dict[ObjKey, tuple[int, dict[str, Any]]] = {}
    for event in trace.events:
        if int(event.get("ts", 0)) > math.floor(at):
            break
        for obj in event.get("applied_objs", ()):
            key = object_key(obj)
            if key is not None and key.gvk == kind.gvk:
                state[key] = (int(event["ts"]), obj)
        for obj in event.get("deleted_objs", ()):
            key = object_key(obj)
            if key is not None:
                state.pop(key, None)
    known = Knowledge(FROM_TRACE)
    found = (PastObject(kind, key, "", kubectl_form(obj, key=key, uid=""), ts, 0, 0, known)
             for key, (ts, obj) in sorted(state.items(), key=lambda item: (item[0].namespace, item[0].name)))
    return kind, math.floor(at), (o for o in found if scope.selects(o.key, o.obj))
