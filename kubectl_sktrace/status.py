"""``kubectl sktrace status``: what a cache holds, for a person (table) or a program (JSON/YAML).

Offline: reads only the cache, read-only (never imports ``kubernetes``); safe while a recorder is writing to it.
Times are printed in RFC 3339 UTC (``timeparse.format_time``) in every format, so JSON and tables agree.
"""

from __future__ import annotations

from typing import Any

from kubectl_sktrace import render
from kubectl_sktrace.reconciliation import reconciliation_to_dict
from kubectl_sktrace.store import open_cache_readonly
from kubectl_sktrace.store.status import CacheStatus, cache_status
from kubectl_sktrace.timeparse import format_duration, format_time


def load_status(*, cache: str | None, kubeconfig: str | None, context: str | None) -> CacheStatus:
    from kubectl_sktrace.kubeconfig import resolve_cache_path

    path = resolve_cache_path(cache=cache, kubeconfig=kubeconfig, context=context)
    with open_cache_readonly(path) as opened:
        return cache_status(opened)


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
        "reconciliation": None if status.reconciliation is None else reconciliation_to_dict(status.reconciliation),
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
    if status.reconciliation is not None:
        parts += ["", "Reconciliation of the latest run (-o json names the objects):",
                  *render.reconciliation_brief(status.reconciliation)]
    return "\n".join(parts)
