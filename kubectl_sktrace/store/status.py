"""Read-only queries behind ``kubectl sktrace status``: what a cache holds. Safe while a recorder writes.

Runs are reported with the state a person needs: ``clean`` (stopped cleanly), ``interrupted`` (stopped
cleanly, but some kinds went unwatched for a while: an API outage, an expired watch, a refusal), ``running`` (the writer
lock is held right now) or ``crashed`` (neither: its ``stopped`` is the last heartbeat, within half a second
of its last write). Gaps are the spans between one run's stop and the next run's start: nothing was observed
live there, and the next run's relist reconstructed them (deletions inferred at its start). Coverage gaps
are the outages and refusals within runs (``history.coverage_gaps``); kinds not served are apart (``unserved``: no
object of theirs could exist then, so nothing is missing; a kind merely not served leaves a run ``clean``). The latest
run's reconciliation report (``store.reconciliation``) says what its initial lists found changed while offline. Each
kind carries its watch position (``watch_state``): the last resourceVersion the recorder reached for it and when that
was committed; the position belongs to the whole recording, so a namespace's counts carry it too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.model import GVK
from kubectl_sktrace.plural import closest
from kubectl_sktrace.reconciliation import Reconciliation
from kubectl_sktrace.store.backfill import Fill, fills
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.trace.selection.rules import KindNames
from kubectl_sktrace.store.history import (
    CAUSE_UNOBSERVED,
    CoverageGap,
    UnrecordedKind,
    coverage_gaps,
    unrecorded_kinds,
    unobserved_spans,
    unserved_spans,
)
from kubectl_sktrace.store.pruning import Pruned, prunes
from kubectl_sktrace.store.reconciliation import reconciliation
from kubectl_sktrace.store.statuses import state_at, workload_states
from kubectl_sktrace.store.versions import APPLIED, DATA, DELETED, METADATA, VERSIONS


@dataclass(frozen=True)
class RunInfo:
    id: int
    started: float
    synced: float | None
    stopped: float
    state: str  # clean | interrupted | running | crashed
    pid: int
    config: str  # the tracer config in force (YAML)
    retain: float | None = None  # its ``start --retain``, seconds (None: it pruned nothing)


@dataclass(frozen=True)
class KindCounts:
    gvk: str
    live: int
    applied: int
    deleted: int
    inferred: int
    watch_resource_version: str | None = None  # the last resourceVersion reached (None: never watched)
    watch_updated: float | None = None  # when it was committed
    metadata: int = 0  # revisions (0011): label, annotation or owner-reference changes; ``applied`` counts new objects and specs
    data: int = 0  # revisions (0011): data changes of spec-less kinds


@dataclass(frozen=True)
class PodCounts:
    seen: int
    live: int
    with_owner: int
    running: int
    finished: int


@dataclass(frozen=True)
class CacheStatus:
    path: str
    server: str | None
    cluster_uid: str | None
    context: str | None
    namespace: str | None
    schema_version: int
    runs: tuple[RunInfo, ...]
    gaps: tuple[tuple[float, float], ...]
    outages: tuple[CoverageGap, ...]
    unrecorded: tuple[UnrecordedKind, ...]  # kinds the latest run gave up, or that were still refused at its end
    kinds: tuple[KindCounts, ...]
    pods: PodCounts
    events: int
    first_event: int | None
    last_event: int | None
    size_bytes: int
    reconciliation: Reconciliation | None = None  # the latest run's (None: no run yet)
    history_names: tuple[str, ...] = ()  # a database's history: every name it is known by (a file: none)
    unserved: tuple[UnrecordedKind, ...] = ()  # when kinds were not served during runs
    unobserved: tuple[UnrecordedKind, ...] = ()  # kinds not yet observed at runs' starts (until their first list)
    pruned: tuple[Pruned, ...] = ()  # what ``prune`` and ``--retain`` removed, the highest cutoff first
    filled: tuple[Fill, ...] = ()  # gaps the API server's audit log filled (``backfill``, 0012)
    workloads: tuple[tuple[str, str], ...] = ()  # (object, state) of the live workloads at the end (0016): "2 of 3 ready"


_RUN_COLUMNS = "id, started, synced, stopped, clean, pid, config, {retain}"


def _run_columns(cache: Cache) -> str:
    """The columns ``_runs`` reads; ``retain`` is NULL in a cache read as it is at a schema before 0008."""
    return _RUN_COLUMNS.format(retain="retain" if cache.has_column("runs", "retain") else "NULL")


def _runs(cache: Cache, rows: list[tuple[Any, ...]], *, interrupted: set[int], last_id: int | None) -> list[RunInfo]:
    """Runs from their rows; only the cache's last run can be ``running`` (the writer lock is held now)."""
    running = cache.writer_active() if rows else False
    runs = []
    for run_id, started, synced, stopped, clean, pid, config, retain in rows:
        last = run_id == last_id
        state = ("interrupted" if run_id in interrupted else "clean") if clean else "running" if last and running else "crashed"
        runs.append(RunInfo(run_id, started, synced, stopped, state, pid, config, retain))
    return runs


@dataclass(frozen=True)
class CacheOverview:
    """One line of the list of caches: whose cluster, how big, and its last run."""

    path: str
    server: str | None
    context: str | None
    namespace: str | None
    last_run: RunInfo | None
    size_bytes: int


def cache_overview(cache: Cache) -> CacheOverview:
    """The identity, size and last run of a cache, without counting its history (fast on a large cache)."""
    rows = cache.conn.execute(f"SELECT {_run_columns(cache)} FROM runs ORDER BY id DESC LIMIT 1").fetchall()
    interrupted: set[int] = set()
    if rows and rows[0][4]:
        interrupted = {gap.run_id for gap in outages_of(cache) if gap.run_id == rows[0][0]}
    runs = _runs(cache, rows, interrupted=interrupted, last_id=rows[0][0] if rows else None)
    return CacheOverview(path=str(cache.path), server=cache.get_meta("cluster.server"), context=cache.get_meta("cluster.context"),
                         namespace=cache.get_meta("scope.namespace"), last_run=runs[0] if runs else None, size_bytes=cache.size_bytes())


def cache_status(cache: Cache, *, namespace: str | None = None) -> CacheStatus:
    """What the cache holds; with ``namespace``, the counts of kinds, pods and events are those of that
    namespace only (runs, gaps and outages belong to the whole recording), and a namespace the cache never saw is a
    UsageError (its zeros would read as a quiet namespace)."""
    if namespace is not None:
        _check_seen(cache, namespace)
    conn = cache.conn
    where, params = ("AND namespace = ?", (namespace,)) if namespace is not None else ("", ())
    # rows per kind from the counts the triggers of 0005 keep; a cache read at an older schema counts its history
    count_from = "CAST(coalesce(sum(n), 0) AS BIGINT) FROM event_counts" if cache.has_table("event_counts") else "count(*) FROM events"
    rows = conn.execute(f"SELECT {_run_columns(cache)} FROM runs ORDER BY id").fetchall()
    outages = tuple(outages_of(cache))
    runs = _runs(cache, rows, interrupted={gap.run_id for gap in outages}, last_id=rows[-1][0] if rows else None)
    gaps = tuple((a.stopped, b.started) for a, b in zip(runs, runs[1:]) if b.started > a.stopped)
    unrecorded = tuple(u for u in unrecorded_kinds(cache, refused_at_end=True) if runs and u.run_id == runs[-1].id)
    counts: dict[str, list[int]] = {}
    column = {APPLIED: 1, DELETED: 2, METADATA: 4, DATA: 5}  # live, applied, deleted, inferred deletions, metadata, data
    sql = f"SELECT gvk, op, inferred, {count_from} WHERE op IN ({DELETED}, {VERSIONS}) {where} GROUP BY gvk, op, inferred"
    for gvk, op, inferred, n in conn.execute(sql, params):
        if not n:
            continue  # a count a prune brought down to zero
        entry = counts.setdefault(gvk, [0] * 6)
        entry[column[op]] += n
        if op == DELETED and inferred:
            entry[3] += n
    for gvk, n in _logged_deletions(cache, namespace):  # deletions an audit log moved to their time: offline too
        counts.setdefault(gvk, [0] * 6)[3] += n
    for gvk, n in conn.execute(f"SELECT gvk, count(*) FROM objects WHERE TRUE {where} GROUP BY gvk", params):
        counts.setdefault(gvk, [0] * 6)[0] = n
    positions: dict[str, tuple[str, float]] = {
        gvk: (rv, updated) for gvk, rv, updated in conn.execute("SELECT gvk, resource_version, updated FROM watch_state")}
    kinds = tuple(
        KindCounts(g, live, applied, deleted, inferred, watch_resource_version=positions.get(g, (None, None))[0],
                   watch_updated=positions.get(g, (None, None))[1], metadata=metadata, data=data)
        for g, (live, applied, deleted, inferred, metadata, data) in sorted(counts.items())
    )
    pods = _pod_counts(conn, where, params)
    events = conn.execute(f"SELECT {count_from} WHERE TRUE {where}", params).fetchone()[0]
    # each its own query: sqlite walks the ``events_ts`` index from one end, however long the history
    first = _scalar(conn.execute(f"SELECT ts FROM events WHERE TRUE {where} ORDER BY ts LIMIT 1", params).fetchone())
    last = _scalar(conn.execute(f"SELECT ts FROM events WHERE TRUE {where} ORDER BY ts DESC LIMIT 1", params).fetchone())
    size = cache.size_bytes()
    return CacheStatus(
        path=str(cache.path), server=cache.get_meta("cluster.server"), cluster_uid=cache.get_meta("cluster.uid"),
        context=cache.get_meta("cluster.context"), namespace=cache.get_meta("scope.namespace"),
        schema_version=cache.schema_version(),
        runs=tuple(runs), gaps=gaps, outages=outages, unrecorded=unrecorded, kinds=kinds, pods=pods, events=events,
        first_event=first, last_event=last, size_bytes=size, reconciliation=reconciliation(cache),
        history_names=cache.history_names(), unserved=tuple(unserved_spans(cache)), unobserved=tuple(unobserved_spans(cache)),
        pruned=tuple(prunes(cache)), filled=tuple(fills(cache)),
        workloads=workload_states(state_at(cache, at=float("inf"), live=True, pods=False), namespace=namespace),
    )


def outages_of(cache: Cache) -> list[CoverageGap]:
    """The coverage gaps that make a run ``interrupted``: outages and refusals, not a kind's first list (blind time,
    but the recorder did nothing wrong: docs/coverage.md)."""
    return [gap for gap in coverage_gaps(cache) if gap.cause != CAUSE_UNOBSERVED]


def _pod_counts(conn: Any, where: str, params: tuple[str, ...]) -> PodCounts:
    """Each count from an index range where one exists (``pods_end``, ``pods_owner``, ``pods_live``), rather
    than one pass over every pod ever seen."""
    def count(condition: str) -> int:
        return int(conn.execute(f"SELECT count(*) FROM pods WHERE {condition} {where}", params).fetchone()[0])

    seen = count("TRUE")
    return PodCounts(seen=seen, live=count("live = 1"), with_owner=seen - count("owner_gvk IS NULL"),
                     running=count("end_ts IS NULL AND start_ts IS NOT NULL"), finished=seen - count("end_ts IS NULL"))


def _scalar(row: tuple[Any, ...] | None) -> Any:
    return None if row is None else row[0]


def known_namespaces(cache: Cache) -> list[str]:
    """The namespaces of the objects and pods the cache knows of (live or not), and its recording scope,
    sorted; for shell completion, so it reads only the two small tables, never the history."""
    rows = cache.conn.execute(
        "SELECT namespace FROM objects UNION SELECT namespace FROM pods UNION SELECT value FROM meta WHERE key = 'scope.namespace'"
    ).fetchall()
    return sorted(str(ns) for (ns,) in rows if ns)


def _logged_deletions(cache: Cache, namespace: str | None) -> list[tuple[str, int]]:
    """Per kind, the deletions an audit log wrote in the time no recorder saw (``backfill``: audit_rows, few), of
    ``namespace`` only when given."""
    if not cache.has_table("audit_rows"):
        return []
    where, params = ("AND e.namespace = ?", (namespace,)) if namespace is not None else ("", ())
    rows = cache.conn.execute(
        f"SELECT e.gvk, count(*) FROM audit_rows a JOIN events e ON e.id = a.event_id WHERE e.op = {DELETED} {where} "
        "GROUP BY e.gvk", params)
    return [(str(gvk), int(n)) for gvk, n in rows]


def recorded_namespaces(cache: Cache) -> list[str]:
    """Every namespace the cache recorded an object or a pod in, sorted (``event_counts`` since 0005: small)."""
    table = "event_counts WHERE n > 0" if cache.has_table("event_counts") else "events"
    with_events = {str(ns) for (ns,) in cache.conn.execute(f"SELECT DISTINCT namespace FROM {table}") if ns}
    return sorted(with_events.union(known_namespaces(cache)))


def _check_seen(cache: Cache, namespace: str) -> None:
    known = recorded_namespaces(cache)
    if namespace in known:
        return
    guess = closest(namespace, known)
    if guess is not None:
        hint = f"did you mean -n {guess}?"
    elif known:
        hint = "it knows " + ", ".join(known[:8]) + (f" and {len(known) - 8} more" if len(known) > 8 else "")
    else:
        hint = "it has recorded no namespaced object yet: leave -n out"
    raise UsageError(f"cache {cache.path} never saw namespace {namespace} (no object was recorded there); {hint}")


def kind_catalog(cache: Cache) -> tuple[list[KindNames], list[GVK]]:
    """What the kinds the cache recorded are called (from the discovery documents it keeps: ``KindNames``), and the
    kinds of the objects it recorded; read-only, from small tables (``event_counts`` since 0005)."""
    catalog = []
    for group_version, body in cache.conn.execute("SELECT group_version, body FROM discovery"):
        try:
            doc = json.loads(body)
        except ValueError:
            continue  # a damaged document names nothing; the kinds recorded still do
        for entry in doc.get("resources") or [] if isinstance(doc, dict) else []:
            name, kind = entry.get("name") or "", entry.get("kind")
            if not name or "/" in name or not kind:
                continue
            gvk = GVK.from_api_version(str(group_version), str(kind))
            names = {kind.lower(), name.lower(), str(entry.get("singularName") or "").lower()}
            names.update(str(short).lower() for short in entry.get("shortNames") or ())
            catalog.append(KindNames(gvk=gvk, names=frozenset(names - {""})))
    table = "event_counts WHERE n > 0" if cache.has_table("event_counts") else "events"
    recorded = sorted({GVK.parse(str(gvk)) for (gvk,) in cache.conn.execute(f"SELECT DISTINCT gvk FROM {table}")}, key=str)
    return catalog, recorded
