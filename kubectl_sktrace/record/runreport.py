"""``status --run N``: one run's report, read again whenever asked: when it ran, the time before it that no recorder
saw (and what an audit log filled of it), its own blind time, and its reconciliation (what its initial lists found
changed while offline), which ``start`` prints once, on stderr, as the run syncs.

Everything is read from the cache as ``status`` reads it (``store.status``, ``store.reconciliation``), read-only, and
said in ``status``'s words and JSON keys, narrowed to the one run.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from kubectl_sktrace import render
from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.reconciliation import Reconciliation, reconciliation_brief, reconciliation_to_dict
from kubectl_sktrace.record.status import status_to_dict
from kubectl_sktrace.store import open_cache_readonly
from kubectl_sktrace.store.history import read_snapshot
from kubectl_sktrace.store.reconciliation import reconciliation
from kubectl_sktrace.store.status import CacheStatus, cache_status


def load_run(*, cache: str | None, kubeconfig: str | None, context: str | None, run_id: int,
             environ: Mapping[str, str] = os.environ) -> tuple[CacheStatus, Reconciliation]:
    """The cache's status and run ``run_id``'s reconciliation, in one snapshot; a run the cache has not is refused."""
    from kubectl_sktrace.kube.kubeconfig import resolve_cache_path

    path = resolve_cache_path(cache=cache, kubeconfig=kubeconfig, context=context, environ=environ)
    with open_cache_readonly(path) as opened, read_snapshot(opened):
        status = cache_status(opened)
        report = reconciliation(opened, run_id=run_id)
    if report is None:
        ids = [r.id for r in status.runs]
        have = f"its runs are {ids[0]}–{ids[-1]}" if len(ids) > 1 else f"its only run is {ids[0]}" if ids else "it has no run yet"
        raise UsageError(f"cache {path} has no run {run_id}; {have} (kubectl sktrace status --runs all lists them)")
    return status, report


def run_to_dict(status: CacheStatus, report: Reconciliation, *, now: float | None = None) -> dict[str, Any]:
    """``status -o json``'s entries that concern the run, and its reconciliation."""
    run_id = report.run_id
    data = status_to_dict(status, runs=None, now=now)
    run = next(r for r in data["runs"] if r["run"] == run_id)
    before = next((g for g in data["gaps"] if g["to"] == run["started"]), None) if report.offline_since is not None else None

    def mine(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [e for e in entries if e.get("run") == run_id]

    return {
        "cache": status.path, "run": run, "offlineBefore": before, "filled": mine(data.get("filled", [])),
        "outages": mine(data["outages"]), "notServed": mine(data["notServed"]), "notYetObserved": mine(data["notYetObserved"]),
        "notRecorded": mine(data["notRecorded"]), "reconciliation": reconciliation_to_dict(report),
    }


def render_run(status: CacheStatus, report: Reconciliation, fmt: str, *, now: float | None = None) -> str:
    data = run_to_dict(status, report, now=now)
    if fmt != "table":
        return render.render_mapping(data, fmt)
    run = data["run"]
    synced = f"; synced {run['synced']}" if run["synced"] else "; its initial lists never finished"
    parts = [f"Run {run['run']} of {len(status.runs)}: {run['started']} – {run['stopped'] or 'now'} ({run['duration']}), {run['state']}{synced}"]
    before = data["offlineBefore"]
    parts.append(f"Offline before it: {before['from']} – {before['to']} ({before['duration']})" if before else
                 "Offline before it: nothing (the first run, or started as the one before stopped)")
    tables = (("filled", "Filled from the audit log (the rest of the gap stays reconstructed):", ["kind", "from", "to", "filled", "logCovers"]),
              ("outages", "Outages (kinds not watched; caught up afterwards, not seen live):", ["cause", "from", "to", "duration", "kinds"]),
              ("notServed", "Not served (none of their objects could exist then):", ["kind", "from", "to", "duration"]),
              ("notYetObserved", "Not yet observed (until the kind's first list):", ["kind", "cause", "from", "to", "duration"]),
              ("notRecorded", "Not recorded at its end:", ["kind", "cause", "from", "detail"]))
    for key, title, columns in tables:
        if data[key]:
            rows = [{**e, "kinds": ", ".join(e.get("kinds", []))} for e in data[key]]
            parts += ["", title, render.render_table(rows, "table", columns=columns)]
    if not any(data[key] for key, _, _ in tables):
        parts.append("Blind time during it: none (every kind watched throughout)")
    parts += ["", f"Reconciliation of run {run['run']} (-o json names the objects):", *reconciliation_brief(report)]
    return "\n".join(parts)
