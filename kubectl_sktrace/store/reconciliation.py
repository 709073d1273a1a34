"""The reconciliation of one run, read from the cache: what its initial lists found changed while offline.

Read-only, and the same for ``start`` (once its run is synced) and ``status`` (any run, later), because it
relies only on what the recorder wrote (the schema docstring):

- the offline gap of run R is the previous run's ``stopped`` (its last heartbeat) to R's ``started``;
- R's reconciliation rows are its ``inferred`` events received by its ``synced`` mark: deletions stamped at
  the restart, creations stamped back to a creation time in the gap, changes at the list's second. Every one
  has ``ts`` in ``[floor(gap start), synced]``, so the ``events_ts`` index bounds the scan to the rows of the
  gap and of R's initial sync, whatever the size of the history. Kinds that R tracks for the first time (or
  tracks otherwise) were listed without inference: they are not "created while offline";
- an applied row (or a revision: 0011) is a creation when no earlier version of that object has its uid
  (``events_object``: one step back from the row in the object's history), else a change, said in words from the two versions' metadata and data
  (``revisions.describe``: ``labels changed: release=2026-11``), for the first ``LIMIT`` of each kind;
- pods finished while offline: an end in ``[floor(gap start), R.started]`` (``pods_end``), first seen by R's
  sync at the latest: the vanished ones carry the restart second as an inferred end.

Where it guesses: seconds. A pod that ended in the second a run stopped or started may be counted on the
wrong side of the gap's edge. A creation's row is stamped with its ``creationTimestamp`` when that lies in
the gap, else with the list's second: a row stamped no later than R's start is read as the creation time,
so an object of unknown birth listed in the very second R started shows that second. An outage during R's initial sync records its catch-ups as inferred too: they
count here, as changes made while nothing watched.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Iterator

from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.reconciliation import (
    CHANGED,
    CREATED,
    DELETED,
    LIMIT,
    OfflineChange,
    OfflinePod,
    Reconciliation,
    summarize,
)
from kubectl_sktrace.store.bodies import decode_body
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.store.statuses import workload_states, workloads_found_by_run
from kubectl_sktrace.store.versions import APPLIED, CHANGE_OF_OP, VERSIONS
from kubectl_sktrace.store.versions import DELETED as _DELETED
from kubectl_sktrace.trace.revisions import SPEC, describe

# the run's inferred rows of its initial sync, each version with the id of the last earlier version of the same
# object under the same uid in the history's order (ts, id), not in the order rows were written: an audit log fills a
# gap, or the time before the first run, after later rows were written (NULL: never recorded before, a creation)
_CHANGES = f"""
    SELECT e.gvk, e.namespace, e.name, e.uid, e.op, e.ts, e.recv, e.id,
           CASE WHEN e.op IN ({VERSIONS}) THEN (
               SELECT p.id FROM events p
               WHERE p.gvk = e.gvk AND p.namespace = e.namespace AND p.name = e.name AND (p.ts, p.id) < (e.ts, e.id)
                 AND p.uid = e.uid AND p.op IN ({VERSIONS})
               ORDER BY p.ts DESC, p.id DESC LIMIT 1) END AS before
    FROM events e
    WHERE e.ts >= :low AND e.ts <= :synced AND e.run_id = :run AND e.inferred = 1 AND e.op IN ({_DELETED}, {VERSIONS})
      AND e.recv <= :synced
    ORDER BY e.gvk, e.namespace, e.name, e.ts, e.id
"""

_PODS = """
    SELECT namespace, name, owner_gvk, owner_namespace, owner_name, start_ts, end_ts, end_inferred FROM pods
    WHERE end_ts >= :low AND end_ts <= :until AND first_seen <= :synced
    ORDER BY namespace, name, id
"""


def reconciliation(cache: Cache, *, run_id: int | None = None) -> Reconciliation | None:
    """The report of ``run_id`` (default: the latest run), with the workloads' states its lists found; None when the
    cache has no such run."""
    report = _reconciliation(cache, run_id=run_id)
    if report is None or report.synced is None:
        return report
    return replace(report, workloads=workload_states(workloads_found_by_run(cache, report.run_id)))


def _reconciliation(cache: Cache, *, run_id: int | None = None) -> Reconciliation | None:
    """The report of ``run_id`` (default: the latest run); None when the cache has no such run."""
    conn = cache.conn
    if run_id is None:
        row = conn.execute("SELECT id, started, synced FROM runs ORDER BY id DESC LIMIT 1").fetchone()
    else:
        row = conn.execute("SELECT id, started, synced FROM runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        return None
    run, started, synced = row
    previous = conn.execute("SELECT id, stopped FROM runs WHERE id < ? ORDER BY id DESC LIMIT 1", (run,)).fetchone()
    since = None if previous is None else float(previous[1])
    if since is None or synced is None:
        return Reconciliation(run_id=run, offline_since=since, offline_until=started, synced=synced)
    last_seen = _last_sight(cache, previous_run=previous[0], stopped=since)
    params = {"low": math.floor(since), "synced": synced, "until": started, "run": run}
    return summarize(run_id=run, offline_since=since, offline_until=started, synced=synced,
                     changes=_changes(cache, params, last_seen, default=since, until=started), pods=_pods(cache, params))


def _last_sight(cache: Cache, *, previous_run: int, stopped: float) -> dict[str, float]:
    """Kinds whose watch was down when the previous run ended: seen last when their outage began."""
    if not cache.has_table("coverage_gaps"):
        return {}
    rows = cache.conn.execute(
        "SELECT gvk, min(since) FROM coverage_gaps WHERE run_id = ? AND (until IS NULL OR until >= ?) GROUP BY gvk",
        (previous_run, stopped),
    )
    return {gvk: float(since) for gvk, since in rows}


def _changes_sql(cache: Cache) -> str:
    """``_CHANGES``, with the rows an audit log wrote in the gap in place of the reconstruction they replaced (0013)."""
    return _CHANGES.replace("e.inferred = 1", "(e.inferred = 1 OR e.id IN (SELECT event_id FROM audit_rows))") \
        if cache.has_table("audit_rows") else _CHANGES


def _changes(cache: Cache, params: dict[str, float], last_seen: dict[str, float], *, default: float,
             until: float) -> Iterator[tuple[str, OfflineChange]]:
    """One outcome per object and uid (a restart writes one row for each; an audit log, each write it logged), two for
    one created and deleted in the gap, in the report's order."""
    gvks: dict[str, GVK] = {}
    described: dict[str, int] = {}
    rows: list[tuple[ObjKey, int, int, float, int, int | None]] = []
    life: tuple[ObjKey, str] | None = None
    for gvk_text, namespace, name, uid, op, ts, recv, row_id, before in cache.conn.execute(_changes_sql(cache), params):
        gvk = gvks.get(gvk_text)
        if gvk is None:
            gvk = gvks[gvk_text] = GVK.parse(gvk_text)
        key = ObjKey(gvk, namespace, name)
        if rows and life != (key, uid):
            yield from _outcome(cache, rows, last_seen, default=default, until=until, described=described)
            rows = []
        life = (key, uid)
        rows.append((key, op, ts, recv, row_id, before))
    if rows:
        yield from _outcome(cache, rows, last_seen, default=default, until=until, described=described)


def _outcome(cache: Cache, rows: list[tuple[ObjKey, int, int, float, int, int | None]], last_seen: dict[str, float], *, default: float,
             until: float, described: dict[str, int]) -> Iterator[tuple[str, OfflineChange]]:
    key, first_op, first_ts, first_recv, _, first_before = rows[0]
    _, last_op, _, last_recv, last_id, _ = rows[-1]
    gvk_text = str(key.gvk)
    created = first_op != _DELETED and first_before is None
    if created:
        yield CREATED, OfflineChange(key, found=first_recv, created=first_ts if first_ts <= until else None)
    if last_op == _DELETED:
        yield DELETED, OfflineChange(key, found=last_recv, before=last_seen.get(gvk_text, default))
    elif not created and first_before is not None:
        op = APPLIED if any(r[1] == APPLIED for r in rows) else last_op  # a spec change among them says so first
        described[gvk_text] = shown = described.get(gvk_text, 0) + 1
        before_ts, detail = _what_changed(cache, op=op, row_id=last_id, before_id=first_before, words=shown <= LIMIT)
        yield CHANGED, OfflineChange(key, found=last_recv, before=before_ts, detail=detail, change=CHANGE_OF_OP.get(op, SPEC))


def _what_changed(cache: Cache, *, op: int, row_id: int, before_id: int, words: bool) -> tuple[float, str]:
    """The second of the version before, and (``words``) what changed since, in words: ``spec changed``, ``labels
    changed: release=2026-11`` (``revisions.describe``), ``data changed`` (a Secret's values, never stored)."""
    body = "body" if words else "NULL"
    rows = {i: (ts, b) for i, ts, b in cache.conn.execute(f"SELECT id, ts, {body} FROM events WHERE id IN (?, ?)", (before_id, row_id))}
    before_ts = float(rows[before_id][0])
    if not words:
        return before_ts, ""
    before, after = (decode_body(bytes(rows[i][1])) if rows[i][1] is not None else {} for i in (before_id, row_id))
    said = describe(before, after)
    if op == APPLIED:
        return before_ts, "; ".join(["spec changed", *([said] if said else [])])
    return before_ts, said or f"{CHANGE_OF_OP.get(op, SPEC)} changed"


def _pods(cache: Cache, params: dict[str, float]) -> Iterator[OfflinePod]:
    for namespace, name, ogvk, ons, oname, start, end, inferred in cache.conn.execute(_PODS, params):
        owner = None if ogvk is None else ObjKey(GVK.parse(ogvk), ons or "", oname)
        yield OfflinePod(namespace=namespace, name=name, owner=owner, start_ts=start, end_ts=end, end_inferred=bool(inferred))
