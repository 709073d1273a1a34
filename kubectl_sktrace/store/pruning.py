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

A prune that follows another (``since``: where the last one left the history, a ``PrunedTo``) looks only at the
objects that may have rows to remove now: those with a row stamped since ``min(F, K - 2)`` (``F`` and ``K`` the
earlier prune's cutoff and known time) or received late since ``K``. Any other object's rows before the new cutoff
are its rows stamped before ``F`` and received before ``K``, which the earlier prune already left as what it keeps,
and its keep rule picks the same rows from them again (later prunes at any cutoff keep that true). So a chain of
prunes removes what one prune at the last cutoff would, each link costing what changed since the one before, not
what the history holds: the running recorder prunes in such links (``record/retention.py``), none of which holds
the writer's lock for long.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass
from typing import Iterator

from kubectl_sktrace.store import statuses
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.store.history import (
    _LATE,
    _LAST_ROW_SEEK,
    APPLIED,
    known_until,
    last_row_per_object,
    read_snapshot,
    runs,
)

VACUUM_FREE_FRACTION = 0.25
PRUNE, RETAIN = "prune", "retain"  # who pruned: the command, or a recorder's --retain

# What a prune removes, over the rows that survive (``_marked_rows``): one predicate each for the DELETE and for
# the dry run's count. A pod row stays while an applied event of its uid survives.
_EVENTS_GONE = "ts < :before AND recv < :known AND {kept_test}"
# (``end_ts <= :known - 1``, not ``end_ts + 1 <= :known``: the same, and the ``pods_end`` index answers it)
_PODS_GONE = """
    end_ts IS NOT NULL AND end_ts <= :known - 1
    AND NOT EXISTS (SELECT 1 FROM events WHERE events.uid = pods.uid AND gvk = 'v1.Pod' AND op = :applied AND NOT ({events_gone}))
"""
# The objects a prune that follows another looks at (the module's docstring says why these are enough).
_CHANGED_SINCE = f"""(
    SELECT gvk, namespace, name FROM events INDEXED BY events_ts WHERE ts >= :since AND ts < :before
    UNION SELECT gvk, namespace, name FROM events INDEXED BY events_late
          WHERE recv >= :known_since AND recv < :known AND recv >= ts + {_LATE}
)"""


@dataclass(frozen=True)
class PrunePlan:
    """What a prune before the same time would remove now (``prune --dry-run``)."""

    events_removed: int
    pods_removed: int
    events_kept_before: int
    bytes_before: int


@dataclass(frozen=True)
class PrunedTo:
    """Where a prune left the history: per object, its rows stamped before ``before`` and received before ``known``
    are only those the prune keeps. Given to the next prune (``since``), which then looks only at what changed."""

    before: int
    known: float


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
    pruned: PrunedTo | None = None  # for the next prune's ``since``


@dataclass(frozen=True)
class _Marked:
    """The predicates of what goes, over the surviving rows, and their parameters."""

    params: dict[str, float]
    events_gone: str
    pods_gone: str


@contextlib.contextmanager
def _marked_rows(cache: Cache, *, before: int, since: PrunedTo | None = None) -> Iterator[_Marked]:
    """Inside a transaction: the rows before ``before`` that survive, as sqlite's temporary table ``keep_ids``
    (no write to the cache, so a read-only connection may hold it too), or, in PostgreSQL (whose read-only
    transactions create no table), as a subquery each predicate joins against. After a prune (``since``), the
    rows that go, among those of the objects changed since (``_changed_since``)."""
    conn = cache.conn
    known = known_until(runs(cache), end=before)
    # no run had synced by ``before``: every later export reads from ``before`` on, or reads nothing
    params = {"before": before, "known": known if known > -math.inf else before, "applied": APPLIED}
    if since is not None:
        yield _changed_since(params, since)
        return
    applied = last_row_per_object(cache, applied_only=True, before=before)
    last = last_row_per_object(cache, applied_only=False, before=before, revisions=True)  # a revision keeps its base too
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


def _changed_since(params: dict[str, float], since: PrunedTo) -> _Marked:
    """The rows that go, looked for among the objects changed since the prune ``since`` only; one subquery, for
    both engines (it reads what changed, so it costs what changed)."""
    params = {**params, "since": min(since.before, math.floor(since.known) - _LATE), "known_since": since.known}
    applied = _LAST_ROW_SEEK.format(extra=f"AND i.op = {APPLIED}", objects=_CHANGED_SINCE)
    last = _LAST_ROW_SEEK.format(extra="", objects=_CHANGED_SINCE)
    kept = f"SELECT id FROM ({applied}) AS a UNION SELECT id FROM ({last}) AS l WHERE op != {APPLIED}"
    gone = (f"SELECT e.id FROM {_CHANGED_SINCE} AS c JOIN events AS e INDEXED BY events_object "
            "ON e.gvk = c.gvk AND e.namespace = c.namespace AND e.name = c.name "
            f"WHERE e.ts < :before AND e.recv < :known AND e.id NOT IN ({kept})")
    events_gone = f"id IN ({gone})"
    return _Marked(params, events_gone, _PODS_GONE.format(events_gone=events_gone))


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


def prune_before(cache: Cache, *, before: int, since: PrunedTo | None = None, compact: bool = True, source: str = PRUNE,
                 now: float | None = None) -> PruneResult:
    """Remove what no export starting at or after ``before`` reads; the caller holds the writer lock. ``since``: where
    the last prune left this cache (its result's ``pruned``), for this one to look only at what changed after it.
    ``compact``: give the room back to the disk when much is free (a full rewrite: not while recording). What it
    removed is recorded under ``source`` (``PRUNE`` or ``RETAIN``) at ``now`` (default: the clock), in the same
    transaction: an export reaching before ``before`` says the history there is gone."""
    bytes_before = cache.size_bytes()
    with cache.transaction() as conn, _marked_rows(cache, before=before, since=since) as marked:
        events_removed = conn.execute(f"DELETE FROM events WHERE {marked.events_gone}", marked.params).rowcount
        kept = conn.execute("SELECT count(*) FROM events WHERE ts < :before", marked.params).fetchone()[0]
        pods_removed = conn.execute(f"DELETE FROM pods WHERE {marked.pods_gone}", marked.params).rowcount
        if statuses.has_statuses(cache):
            statuses.prune(cache, before=before, known=float(marked.params["known"]))
        if events_removed or pods_removed:
            record_prune(cache, source=source, cutoff=before, at=time.time() if now is None else now, events=events_removed,
                         pods=pods_removed)
    vacuumed = compact and cache.compact(free_fraction=VACUUM_FREE_FRACTION)
    bytes_after = cache.size_bytes()
    return PruneResult(
        events_removed=events_removed, pods_removed=pods_removed, events_kept_before=int(kept), bytes_before=bytes_before,
        bytes_after=bytes_after, freed_bytes=bytes_before - bytes_after, reusable_bytes=cache.reusable_bytes(), vacuumed=vacuumed,
        pruned=PrunedTo(before=before, known=float(marked.params["known"])),
    )


def step_before(cache: Cache, *, after: int | None, until: int, rows: int) -> int:
    """A cutoff for the next link of a chain of prunes (``since``) that ends at ``until``: about ``rows`` rows after
    ``after`` (the last link's cutoff; None: the history's start), always past ``after``, never past ``until``."""
    found = cache.conn.execute("SELECT ts FROM events INDEXED BY events_ts WHERE ts >= ? ORDER BY ts LIMIT 1 OFFSET ?",
                               (-(2**62) if after is None else after, max(0, rows))).fetchone()
    if found is None:
        return until
    return min(until, max(int(found[0]), -(2**62) if after is None else after + 1))


def record_prune(cache: Cache, *, source: str, cutoff: int, at: float, events: int, pods: int) -> None:
    """Within the prune's transaction: the history before ``cutoff`` is incomplete now (``prunes``, 0009)."""
    if not cache.has_table("prunes"):
        return  # a cache read at an older schema (never written: a writer migrates first)
    cache.conn.execute(
        "INSERT INTO prunes (source, cutoff, pruned_at, events_removed, pods_removed) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (source) DO UPDATE SET cutoff = CASE WHEN excluded.cutoff > prunes.cutoff THEN excluded.cutoff "
        "ELSE prunes.cutoff END, pruned_at = excluded.pruned_at, events_removed = prunes.events_removed + excluded.events_removed, "
        "pods_removed = prunes.pods_removed + excluded.pods_removed",
        (source, cutoff, at, events, pods),
    )


@dataclass(frozen=True)
class Pruned:
    """History removed before ``cutoff`` by ``source`` (``prune``, or a recorder's ``retain``), last at ``at``."""

    source: str
    cutoff: int
    at: float
    events_removed: int
    pods_removed: int


def prunes(cache: Cache) -> list[Pruned]:
    """What was pruned, by whom (``prunes``, 0009), the highest cutoff first; none in a cache read at an older schema."""
    if not cache.has_table("prunes"):
        return []
    rows = cache.conn.execute(
        "SELECT source, cutoff, pruned_at, events_removed, pods_removed FROM prunes ORDER BY cutoff DESC, source").fetchall()
    return [Pruned(str(source), int(cutoff), float(at), int(e), int(p)) for source, cutoff, at, e, p in rows]


def pruned_before(cache: Cache) -> int | None:
    """The time before which the history is incomplete (the highest cutoff a prune removed rows before), or None."""
    found = prunes(cache)
    return found[0].cutoff if found else None
