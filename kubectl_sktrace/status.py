"""``kubectl sktrace status``: what a cache holds, for a person (table) or a program (JSON/YAML).

Offline: reads only the cache, read-only (never imports ``kubernetes``); safe while a recorder is writing to it.
Times are printed in RFC 3339 UTC (``timeparse.format_time``) in every format, so JSON and tables agree.
``status --timeline`` draws a window instead: the trace ``export`` would write for it (``window_trace``).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubectl_sktrace import render
from kubectl_sktrace.store import history, open_cache_readonly
from kubectl_sktrace.store.status import CacheStatus, cache_status
from kubectl_sktrace.timeparse import format_duration, format_time

if TYPE_CHECKING:
    from kubectl_sktrace.export import ExportReport
    from kubectl_sktrace.traceformat import Trace


def load_status(*, cache: str | None, kubeconfig: str | None, context: str | None) -> CacheStatus:
    from kubectl_sktrace.kubeconfig import resolve_cache_path

    path = resolve_cache_path(cache=cache, kubeconfig=kubeconfig, context=context)
    with open_cache_readonly(path) as opened:
        return cache_status(opened)


@dataclass(frozen=True)
class WindowTrace:
    """The trace ``export`` writes for a window of a cache, decoded, what export said about it, and the times
    of the window nothing was recorded live: no recorder ran, or a run's watches were down."""

    path: str
    trace: Trace
    report: ExportReport
    gaps: tuple[tuple[float, float], ...]


def window_trace(*, cache: str | None, kubeconfig: str | None, context: str | None, start_ts: int, end_ts: int,
                 namespace: str | None) -> WindowTrace:
    """The trace of ``[start_ts, end_ts)`` as ``export`` builds it (its default filters, or only ``namespace``),
    read-only, held in memory to be drawn (``status --timeline``). A window without objects is no error here."""
    from kubectl_sktrace.export import ExportFilters, export_trace
    from kubectl_sktrace.kubeconfig import resolve_cache_path
    from kubectl_sktrace.traceformat import decode_trace

    path = resolve_cache_path(cache=cache, kubeconfig=kubeconfig, context=context)
    filters = ExportFilters() if namespace is None else ExportFilters(include_namespaces=frozenset([namespace]))
    buffer = io.BytesIO()
    with open_cache_readonly(path) as opened:
        report = export_trace(opened, start_ts=start_ts, end_ts=end_ts, filters=filters, keep_status=False, fmt="sktrace",
                              stream=buffer, allow_empty=True)
        with history.read_snapshot(opened):
            offline = history.uncovered(history.runs(opened), start=report.start_ts, end=report.end_ts)
            outages = [(g.since, g.until) for g in history.coverage_gaps(opened)]
    return WindowTrace(path=str(path), trace=decode_trace(buffer.getvalue()), report=report, gaps=tuple(sorted(offline + outages)))


def _time(ts: float | None) -> str | None:
    return None if ts is None else format_time(ts)


def config_history(status: CacheStatus) -> list[dict[str, Any]]:
    """The runs whose tracer config differs from the run before: what each tracked from its start on."""
    from kubectl_sktrace.tracerconfig import config_change, stored_config

    history: list[dict[str, Any]] = []
    previous = None
    for run in status.runs:
        config = stored_config(run.config)
        if config is None:
            continue
        change = None if previous is None else config_change(previous, config)
        if previous is None or change:
            history.append({"run": run.id, "from": _time(run.started), "tracked": [str(g) for g in sorted(config.tracked, key=str)],
                            "change": "first run" if change is None else change.describe()})
        previous = config
    return history


def status_to_dict(status: CacheStatus) -> dict[str, Any]:
    return {
        "cache": status.path,
        "sizeBytes": status.size_bytes,
        "schemaVersion": status.schema_version,
        "cluster": {"server": status.server, "kubeSystemUid": status.cluster_uid or None, "context": status.context,
                    "namespace": status.namespace or None},
        "runs": [
            {"run": r.id, "started": _time(r.started), "synced": _time(r.synced), "stopped": _time(r.stopped),
             "duration": format_duration(r.stopped - r.started), "state": r.state, "pid": r.pid}
            for r in status.runs
        ],
        "gaps": [{"from": _time(a), "to": _time(b), "duration": format_duration(b - a)} for a, b in status.gaps],
        "outages": [
            {"run": g.run_id, "cause": g.cause, "from": _time(g.since), "to": _time(g.until),
             "duration": format_duration(g.until - g.since), "kinds": list(g.kinds)}
            for g in status.outages
        ],
        "configHistory": config_history(status),
        "kinds": [
            {"kind": k.gvk, "live": k.live, "applied": k.applied, "deleted": k.deleted, "deletedWhileOffline": k.inferred}
            for k in status.kinds
        ],
        "pods": {"seen": status.pods.seen, "live": status.pods.live, "withLifecycleOwner": status.pods.with_owner,
                 "running": status.pods.running, "finished": status.pods.finished},
        "events": {"count": status.events, "first": _time(status.first_event), "last": _time(status.last_event)},
    }


def outage_span(cause: str, since: float, until: float) -> str:
    """``API unreachable 2026-11-23T10:46:31Z–10:46:51``: the end's date is left out when it is the start's."""
    start, end = format_time(since), format_time(until)
    return f"{cause} {start}–{end[11:] if end[:10] == start[:10] else end}"


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def render_status(status: CacheStatus, fmt: str) -> str:
    data = status_to_dict(status)
    if fmt != "table":
        return render.render_mapping(data, fmt)
    cluster = data["cluster"]
    head = render.render_mapping({
        "cache": status.path,
        "size": _size(status.size_bytes),
        "cluster": cluster["server"] or "- (nothing recorded yet)",
        "kube-system uid": cluster["kubeSystemUid"],
        "context": cluster["context"],
        "scope": f"namespace {status.namespace}" if status.namespace else "all namespaces",
        "events": f"{status.events} ({data['events']['first']} .. {data['events']['last']})" if status.events else "0",
        "pods": f"{status.pods.seen} seen, {status.pods.live} live, {status.pods.running} running, {status.pods.finished} finished, "
                f"{status.pods.with_owner} with a lifecycle owner",
    }, "table")
    parts = [head, ""]
    parts.append("Runs:\n" + render.render_table(data["runs"], "table", columns=["run", "started", "synced", "stopped", "duration", "state"])
                 if data["runs"] else "Runs: none")
    if data["gaps"]:
        parts += ["", "Gaps (not observed live; reconstructed by the next run's relist):",
                  render.render_table(data["gaps"], "table", columns=["from", "to", "duration"])]
    if status.outages:
        parts += ["", "Outages during runs (kinds not watched; changes then were caught up afterwards, not seen live):",
                  render.render_table([{"run": g.run_id, "outage": outage_span(g.cause, g.since, g.until),
                                        "duration": format_duration(g.until - g.since), "kinds": ", ".join(g.kinds)}
                                       for g in status.outages], "table")]
    if len(data["configHistory"]) > 1:
        parts += ["", "Config history (what each run tracked from its start on; history recorded before a change is kept):",
                  render.render_table(data["configHistory"], "table", columns=["run", "from", "change", "tracked"])]
    parts += ["", "Kinds:\n" + render.render_table(
        [{"kind": k["kind"], "live": k["live"], "applied": k["applied"], "deleted": k["deleted"], "deleted while offline": k["deletedWhileOffline"]}
         for k in data["kinds"]], "table") if data["kinds"] else "Kinds: none recorded"]
    return "\n".join(parts)
