"""What a trace file holds, for ``kubectl sktrace inspect`` (docs/spec.md §9). Works on any v2 trace, ours or SimKube's.

The result is a plain dict (it is rendered as a table, JSON or YAML): the file, the format version, the
window (SimKube takes a trace's start and end from its first and last event), event and object counts,
the objects per kind and namespace (distinct objects named in events), the index size per kind, the pod
lifecycle owners with their Running/Finished counts and, when asked, one row per event.
"""

from __future__ import annotations

from collections import Counter
from typing import IO, Any

from kubectl_sktrace import render
from kubectl_sktrace.model import ObjKey
from kubectl_sktrace.timeparse import format_duration, format_time
from kubectl_sktrace.trace.files.format import Trace, source_name
from kubectl_sktrace.trace.files.textformat import read_any_trace
from kubectl_sktrace.trace.sanitize import object_key


def _describe(obj: dict[str, Any]) -> str:
    key = object_key(obj)
    return f"{key.gvk.kind} {key.ns_name}" if key else "(object without apiVersion/kind/name)"


def inspect_trace(path: str, *, with_events: bool, stdin: IO[bytes] | None = None) -> dict[str, Any]:
    """Summarize the trace at ``path`` (``-``: ``stdin``); TraceFormatError when it is not a loadable v2 trace."""
    return summarize(read_any_trace(path, stdin=stdin), path=source_name(path), with_events=with_events)


NOT_TOLD = "not told in a trace file (kubectl sktrace status --timeline on its cache tells it)"
"""How a trace's time was observed (live, exact from an audit log, reconstructed, not at all) is the cache's to tell:
SimKube's format holds five keys and none of them says it (docs/spec.md §8.1). Said, so that a window is never read as
observed throughout."""


def summarize(trace: Trace, *, path: str, with_events: bool) -> dict[str, Any]:
    events = trace.events
    applied = sum(len(e["applied_objs"]) for e in events)
    deleted = sum(len(e["deleted_objs"]) for e in events)
    seen: set[ObjKey] = set()
    for event in events:
        for obj in (*event["applied_objs"], *event["deleted_objs"]):
            key = object_key(obj)
            if key is not None:
                seen.add(key)
    per_kind = Counter((str(k.gvk), k.namespace) for k in seen)
    window: dict[str, Any] | None = None
    if events:
        first, last = events[0]["ts"], events[-1]["ts"]
        window = {
            "start": format_time(first),
            "end": format_time(last),
            "duration": format_duration(last - first),
            "startTs": first,
            "endTs": last,
        }
    result: dict[str, Any] = {
        "file": path,
        "formatVersion": trace.version,
        "window": window,
        "events": len(events),
        "applied": applied,
        "deleted": deleted,
        "trackedKinds": _tracked_kinds(trace, seen),
        "observed": None,  # a trace holds SimKube's five keys only: nothing of how its time was observed (NOT_TOLD)
        "objects": [
            {"kind": kind, "namespace": ns, "objects": count}
            for (kind, ns), count in sorted(per_kind.items())
        ],
        "index": [{"kind": kind, "objects": len(entries)} for kind, entries in trace.index.items()],
        "podLifecycles": [_lifecycle_row(owner, by_hash) for owner, by_hash in trace.pod_lifecycles.items()],
    }
    if with_events:
        result["eventList"] = [
            {
                "ts": event["ts"],
                "time": format_time(event["ts"]),
                "changes": [f"+ {_describe(o)}" for o in event["applied_objs"]]
                + [f"- {_describe(o)}" for o in event["deleted_objs"]],
            }
            for event in events
        ]
    return result


def _tracked_kinds(trace: Trace, seen: set[ObjKey]) -> list[str]:
    """The kinds of the config, then every other kind the trace holds (in events or the index): an exported
    config leaves out kinds without pod templates (ConfigMaps, say), yet their objects are in the trace."""
    kinds = list(trace.config.get("trackedObjects", {}))
    present = {str(key.gvk) for key in seen} | set(trace.index)
    return kinds + sorted(present - set(kinds))


def _lifecycle_row(owner: tuple[str, str], by_hash: dict[int, list[dict[str, Any]]]) -> dict[str, Any]:
    entries = [entry for lifecycles in by_hash.values() for entry in lifecycles]
    return {
        "owner": owner[0],
        "object": owner[1],
        "podSpecs": len(by_hash),
        "running": sum(1 for e in entries if "Running" in e),
        "finished": sum(1 for e in entries if "Finished" in e),
    }


def render_inspection(result: dict[str, Any], fmt: str) -> str:
    """``kubectl sktrace inspect``: a summary, then objects per kind, the index, lifecycles and events."""
    if fmt != "table":
        return render.dump(result, fmt)
    window = result["window"]
    summary = {
        "File": result["file"],
        "Format version": result["formatVersion"],
        "Window": f"{window['start']} .. {window['end']} ({window['duration']})" if window else "- (no events)",
        "Events": result["events"],
        "Applied objects": result["applied"],
        "Deleted objects": result["deleted"],
        "Tracked kinds": result["trackedKinds"],
        "Observed": NOT_TOLD,
    }
    parts = [render.render_mapping(summary, "table")]
    parts.append(render.section("Objects per kind", result["objects"], ["kind", "namespace", "objects"], "none"))
    parts.append(render.section("Index", result["index"], ["kind", "objects"], "empty"))
    parts.append(
        render.section("Pod lifecycles", result["podLifecycles"], ["owner", "object", "podSpecs", "running", "finished"], "none")
    )
    if "eventList" in result:
        rows = [
            {"ts": e["ts"], "time": e["time"], "change": change}
            for e in result["eventList"]
            for change in (e["changes"] or ["(no changes)"])
        ]
        parts.append(render.section("Events", rows, ["ts", "time", "change"], "none"))
    return "\n\n".join(parts)
