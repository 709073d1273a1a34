"""Dropping history older than a cutoff, keeping what later exports read (the writes behind ``prune``).

The guarantee: an export whose window starts at or after the cutoff ``T`` is byte-identical before and
after the prune. Such an export reads, from the rows before ``T``, exactly:

- the state at its start: per object, the last event before the start, which for an object with no event
  in ``[T, start)`` is its last event before ``T``;
- the index and the filters: per object, the last *applied* event before the window end, which for an
  object with no applied event at or after ``T`` is its last applied event before ``T`` (SimKube's index
  keeps objects deleted before the window, so this row is needed even for long-gone objects);
- for bare pods in that state, whether the pod's lifecycle finished before the start (``pods.end_ts``).

An export reads only rows received before the time its record is final (``history.known_until`` of its
window end), which for such a window is at least ``K``, that time for ``T`` itself (``T`` when a synced run
was recording at ``T``; earlier when ``T`` falls in a gap). So the rows before ``T`` received at or after
``K`` (a restart stamps offline creations back into the gap) are all kept, and among those received before
``K``, per object at most two survive, unchanged: its last applied event, and its last event when that is
a deletion (dropping it would resurrect the object in the state). Everything else before ``T`` is removed.
Pods whose lifecycle was known to have ended before ``K`` can never overlap such a window and are removed,
except those a surviving bare-pod event still refers to (they tell export the pod is finished). Runs are
kept: they are tiny, and hold the config in force and the coverage that export reports.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Iterator

from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.store.history import (
    APPLIED,
    known_until,
    last_row_per_object,
    read_snapshot,
    runs,
)

VACUUM_FREE_FRACTION = 0.25

# What a prune removes, over the rows that survive (``_marked_rows``): one predicate each for the DELETE and for
# the dry run's count. A pod row stays while an applied event of its uid survives.
_EVENTS_GONE = "ts < :before AND recv < :known AND {kept_test}"
_PODS_GONE = """
    end_ts IS NOT NULL AND end_ts + 1 <= :known
    AND uid NOT IN (SELECT uid FROM events WHERE gvk = 'v1.Pod' AND op = :applied AND NOT ({events_gone}))
"""


@dataclass(frozen=True)
class PrunePlan:
    """What a prune before the same time would remove now (``prune --dry-run``)."""

    events_removed: int
    pods_removed: int
    events_kept_before: int
    bytes_before: int


@dataclass(frozen=True)
class PruneResult:
    """Sizes are of the files on disk (the cache and its log), so ``freed_bytes`` is what the disk got back.
    Without a vacuum the file keeps its size: the removed rows' pages stay inside it, free for later
    recordings to reuse (``reusable_bytes``)."""

    events_removed: int
    pods_removed: int
    events_kept_before: int
    bytes_before: int
    bytes_after: int
    freed_bytes: int
    reusable_bytes: int
    vacuumed: bool


@dataclass(frozen=True)
class _Marked:
    """The predicates of what goes, over the surviving rows, and their parameters."""

    params: dict[str, float]
    events_gone: str
    pods_gone: str


@contextlib.contextmanager
def _marked_rows(cache: Cache, *, before: int) -> Iterator[_Marked]:
    """Inside a transaction: the rows before ``before`` that survive, as sqlite's temporary table ``keep_ids``
    (no write to the cache, so a read-only connection may hold it too), or, in PostgreSQL (whose read-only
    transactions create no table), as a subquery each predicate joins against."""
    conn = cache.conn
    known = known_until(runs(cache), end=before)
    # no run had synced by ``before``: every later export reads from ``before`` on, or reads nothing
    params = {"before": before, "known": known if known > -math.inf else before, "applied": APPLIED}
    applied = last_row_per_object(cache, applied_only=True, before=before)
    last = last_row_per_object(cache, applied_only=False, before=before)
    if cache.engine != "sqlite":
        kept = f"SELECT id FROM ({applied}) AS a UNION SELECT id FROM ({last}) AS l WHERE op != {APPLIED}"
        yield _marked(params, f"NOT EXISTS (SELECT 1 FROM ({kept}) AS k WHERE k.id = events.id)")
        return
    conn.execute("CREATE TEMP TABLE keep_ids (id INTEGER PRIMARY KEY)")
    try:
        conn.execute(f"INSERT OR IGNORE INTO keep_ids SELECT id FROM ({applied})", params)
        conn.execute(f"INSERT OR IGNORE INTO keep_ids SELECT id FROM ({last}) WHERE op != {APPLIED}", params)
        yield _marked(params, "id NOT IN (SELECT id FROM keep_ids)")
    finally:
        conn.execute("DROP TABLE temp.keep_ids")


def _marked(params: dict[str, float], kept_test: str) -> _Marked:
    events_gone = _EVENTS_GONE.format(kept_test=kept_test)
    return _Marked(params, events_gone, _PODS_GONE.format(events_gone=events_gone))


def plan_prune(cache: Cache, *, before: int) -> PrunePlan:
    """What ``prune_before`` would remove, counted from one snapshot; changes nothing, needs no lock."""
    with read_snapshot(cache), _marked_rows(cache, before=before) as marked:
        conn, params = cache.conn, marked.params
        events_removed = conn.execute(f"SELECT count(*) FROM events WHERE {marked.events_gone}", params).fetchone()[0]
        older = conn.execute("SELECT count(*) FROM events WHERE ts < :before", params).fetchone()[0]
        pods_removed = conn.execute(f"SELECT count(*) FROM pods WHERE {marked.pods_gone}", params).fetchone()[0]
        size = cache.size_bytes()
    return PrunePlan(events_removed=int(events_removed), pods_removed=int(pods_removed), events_kept_before=int(older - events_removed),
                     bytes_before=size)


def prune_before(cache: Cache, *, before: int) -> PruneResult:
    """Remove what no export starting at or after ``before`` reads; the caller holds the writer lock."""
    bytes_before = cache.size_bytes()
    with cache.transaction() as conn, _marked_rows(cache, before=before) as marked:
        events_removed = conn.execute(f"DELETE FROM events WHERE {marked.events_gone}", marked.params).rowcount
        kept = conn.execute("SELECT count(*) FROM events WHERE ts < :before", marked.params).fetchone()[0]
        pods_removed = conn.execute(f"DELETE FROM pods WHERE {marked.pods_gone}", marked.params).rowcount
    vacuumed = cache.compact(free_fraction=VACUUM_FREE_FRACTION)
    bytes_after = cache.size_bytes()
    return PruneResult(
        events_removed=events_removed, pods_removed=pods_removed, events_kept_before=int(kept), bytes_before=bytes_before,
        bytes_after=bytes_after, freed_bytes=bytes_before - bytes_after, reusable_bytes=cache.reusable_bytes(), vacuumed=vacuumed,
    )
