"""Read-only queries behind ``kubectl sktrace status``: what a cache holds. Safe while a recorder writes.

Runs are reported with the state a person needs: ``clean`` (stopped cleanly), ``interrupted`` (stopped
cleanly, but some kinds went unwatched for a while: an API outage, an expired watch), ``running`` (the writer
lock is held right now) or ``crashed`` (neither: its ``stopped`` is the last heartbeat, within half a second
of its last write). Gaps are the spans between one run's stop and the next run's start: nothing was observed
live there, and the next run's relist reconstructed them (deletions inferred at its start). Coverage gaps
are the outages within runs (``history.coverage_gaps``). The latest run's reconciliation report
(``store.reconciliation``) says what its initial lists found changed while offline.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kubectl_sktrace.reconciliation import Reconciliation
from kubectl_sktrace.store.connection import Cache, writer_active
from kubectl_sktrace.store.history import CoverageGap, coverage_gaps
from kubectl_sktrace.store.reconciliation import reconciliation


@dataclass(frozen=True)
class RunInfo:
    id: int
    started: float
    synced: float | None
    stopped: float
    state: str  # clean | interrupted | running | crashed
    pid: int
    config: str  # the tracer config in force (YAML)


@dataclass(frozen=True)
class KindCounts:
    gvk: str
    live: int
    applied: int
    deleted: int
    inferred: int


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
    kinds: tuple[KindCounts, ...]
    pods: PodCounts
    events: int
    first_event: int | None
    last_event: int | None
    size_bytes: int
    reconciliation: Reconciliation | None = None  # the latest run's (None: no run yet)


def cache_status(cache: Cache) -> CacheStatus:
    conn = cache.conn
    running = writer_active(cache.path)
    rows = conn.execute("SELECT id, started, synced, stopped, clean, pid, config FROM runs ORDER BY id").fetchall()
    outages = tuple(coverage_gaps(cache))
    interrupted = {gap.run_id for gap in outages}
    runs = []
    for index, (run_id, started, synced, stopped, clean, pid, config) in enumerate(rows):
        last = index == len(rows) - 1
        state = ("interrupted" if run_id in interrupted else "clean") if clean else "running" if last and running else "crashed"
        runs.append(RunInfo(run_id, started, synced, stopped, state, pid, config))
    gaps = tuple((a.stopped, b.started) for a, b in zip(runs, runs[1:]) if b.started > a.stopped)
    counts: dict[str, list[int]] = {}
    for gvk, op, inferred, n in conn.execute("SELECT gvk, op, inferred, count(*) FROM events WHERE op < 2 GROUP BY gvk, op, inferred"):
        entry = counts.setdefault(gvk, [0, 0, 0, 0])
        entry[1 + op] += n
        if op == 1 and inferred:
            entry[3] += n
    for gvk, n in conn.execute("SELECT gvk, count(*) FROM objects GROUP BY gvk"):
        counts.setdefault(gvk, [0, 0, 0, 0])[0] = n
    kinds = tuple(KindCounts(g, *c) for g, c in sorted(counts.items()))
    pod_row = conn.execute(
        "SELECT count(*), coalesce(sum(live), 0), count(owner_gvk), "
        "coalesce(sum(start_ts IS NOT NULL AND end_ts IS NULL), 0), coalesce(sum(end_ts IS NOT NULL), 0) FROM pods"
    ).fetchone()
    events, first, last = conn.execute("SELECT count(*), min(ts), max(ts) FROM events").fetchone()
    size = 0
    for suffix in ("", "-wal"):
        try:
            size += os.path.getsize(str(cache.path) + suffix)
        except OSError:
            pass
    return CacheStatus(
        path=str(cache.path), server=cache.get_meta("cluster.server"), cluster_uid=cache.get_meta("cluster.uid"),
        context=cache.get_meta("cluster.context"), namespace=cache.get_meta("scope.namespace"),
        schema_version=conn.execute("PRAGMA user_version").fetchone()[0],
        runs=tuple(runs), gaps=gaps, outages=outages, kinds=kinds, pods=PodCounts(*pod_row), events=events,
        first_event=first, last_event=last, size_bytes=size, reconciliation=reconciliation(cache),
    )
