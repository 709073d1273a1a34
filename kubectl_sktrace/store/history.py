"""Typed read queries over the recorded history, for export and for reports about a time window.

Every query reads only the cache. Where a query can return as many rows as there are events it yields them
from an open cursor (rows are decoded one at a time), so callers can stream a window of any length in
bounded memory; only per-object and per-run results are returned as lists.

"The last event of an object before T" means the event with the greatest ``(ts, id)`` among those with
``ts < T``: ``ts`` first, because a relist may stamp an object created while offline with its (earlier)
creation time after later rows were written; ``id`` breaks ties in recorded order. Every query here and
the pruning that must keep their results unchanged (``pruning.py``) use that one order.

What was known when: the queries behind an export take ``known``, the time until which the record is final
(``known_until``), and read only what had been received before it — events by ``recv``, pods by
``first_seen`` — so rows recorded later (an offline creation stamped back to its creation time by a
restart, a pod first seen after the window) cannot change an export of a window that already ended.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any, Iterator

from kubectl_sktrace.model import CAUSE_FORBIDDEN as CAUSE_FORBIDDEN  # the causes of rows besides outages, with CAUSE_FAILED
from kubectl_sktrace.model import CAUSE_NOT_SERVED as CAUSE_NOT_SERVED
from kubectl_sktrace.model import CAUSE_UNOBSERVED as CAUSE_UNOBSERVED
from kubectl_sktrace.model import GVK, POD, ObjKey
from kubectl_sktrace.store.bodies import chain_from_json
from kubectl_sktrace.store.connection import from_db_hash
from kubectl_sktrace.store.engine import Cache

from kubectl_sktrace.store.versions import APPLIED as APPLIED  # the ops, as the readers above the store import them
from kubectl_sktrace.store.versions import DELETED as DELETED
from kubectl_sktrace.store.versions import UNTRACKED as UNTRACKED
from kubectl_sktrace.store.versions import METADATA, VERSIONS, whole
from kubectl_sktrace.store.versions import StoredEvent as StoredEvent

_EVENT_COLUMNS = "e.id, e.ts, e.gvk, e.namespace, e.name, e.uid, e.op, e.inferred, e.spec_hash, e.owner_chain, {bodies}, e.run_id, {facts}"


def _event_columns(cache: Cache, *, bodies: bool = True) -> str:
    """The columns ``_event`` reads; ``refs`` and ``daemonset`` are NULL in a cache read as it is at a schema before 0006.
    Without ``bodies``, no status, and the body only of rows without ``daemonset`` (what export's filters need
    without a label selector): the blobs of a long history's objects are not read."""
    facts = cache.has_column("events", "refs")
    if bodies:
        blobs = "e.body, e.status"
    else:
        blobs = "CASE WHEN e.daemonset IS NULL THEN e.body END, NULL" if facts else "e.body, NULL"
    return _EVENT_COLUMNS.format(bodies=blobs, facts="e.refs, e.daemonset" if facts else "NULL, NULL")

# The last row per object among those stamped before :before and received before :known, ranked by (ts, id)
# descending, three ways that find the same rows: one backward step in the index ``events_object`` for each object
# of ``event_objects`` (schema 0005: costs what the objects number), the same step for the only objects whose last
# row can be an applied one (0006, without ``applied_only``: costs what exists at the end of the history and what
# was recorded since ``:since``), or ranking the rows before :before with a window function (costs what those rows
# number; the only way on a cache read as it is at an older schema). ``last_row_per_object`` takes the cheapest.
# Shared with pruning.
# A scalar subquery returns one value: the row's id and op (0-4) travel as ``id * 8 + op``, both read from the
# index, so that no row is fetched from the table only to learn its op (most objects of a long history are gone).
_LAST_ROW_SEEK = """
    SELECT last_row >> 3 AS id, last_row & 7 AS op FROM (
        SELECT (SELECT i.id * 8 + i.op FROM events i INDEXED BY events_object
                WHERE i.gvk = k.gvk AND i.namespace = k.namespace AND i.name = k.name AND i.ts < :before AND i.recv < :known {extra}
                ORDER BY i.ts DESC, i.id DESC LIMIT 1) AS last_row
        FROM {objects} k
    ) AS seek WHERE last_row IS NOT NULL
"""
_LAST_ROW_RANKED = """
    SELECT id, op FROM (
        SELECT id, op, ROW_NUMBER() OVER (PARTITION BY gvk, namespace, name ORDER BY ts DESC, id DESC) AS rank
        FROM events INDEXED BY events_ts WHERE ts < :before AND recv < :known {extra}
    ) AS ranked WHERE rank = 1
"""
# Every object whose last row before :before received before :known can be an applied one (schema 0006): those
# whose last row applies them, and those with a row since ``since = min(:before, :known - LATE)`` or received
# late since :known. Any other object's rows are all stamped before ``since`` and received before ``since + LATE``
# (if not late) or :known (if late): its last row is its last row of all, which does not apply it.
_LATE = 2  # seconds: the ``events_late`` index's condition
_CHANGED_OBJECTS = f"""(
    SELECT gvk, namespace, name FROM event_objects INDEXED BY event_objects_live WHERE last_op = {{applied}}
    UNION SELECT gvk, namespace, name FROM events INDEXED BY events_ts WHERE ts >= :since
    UNION SELECT gvk, namespace, name FROM events INDEXED BY events_late WHERE recv >= :known AND recv >= ts + {_LATE}
)"""


def last_row_per_object(cache: Cache, *, applied_only: bool, before: int, known: float | None = None, revisions: bool = False) -> str:
    """A subquery of ``(id, op)``: per object, its last row (its last applied row with ``applied_only``) stamped
    before ``:before`` (``before``) and received before ``:known``; revisions count only with ``revisions``. Given
    ``known`` (the value of ``:known``), the subquery may leave out objects whose last row there does not apply them
    (what the state needs), and takes ``:since`` too (``since_param``)."""
    extra = _ops_extra(applied_only=applied_only, revisions=revisions)
    if known is not None and math.isfinite(known) and not applied_only and cache.has_column("event_objects", "last_op"):
        if _fewer_changed(cache, before=before, known=known):
            return _LAST_ROW_SEEK.format(extra=extra, objects=_CHANGED_OBJECTS.format(applied=APPLIED))
    if cache.has_table("event_objects"):
        objects = cache.conn.execute("SELECT count(*) FROM event_objects").fetchone()[0]
        # counting the rows before stops at ``objects``: deciding costs no more than either way
        if _count_before(cache, before=before, limit=objects) >= objects:
            return _LAST_ROW_SEEK.format(extra=extra, objects="event_objects")
    return _LAST_ROW_RANKED.format(extra=extra.replace("i.op", "op"))


def _ops_extra(*, applied_only: bool, revisions: bool) -> str:
    if applied_only:
        return f"AND i.op IN ({VERSIONS})" if revisions else f"AND i.op = {APPLIED}"
    return "" if revisions else f"AND i.op < {METADATA}"


def _fewer_changed(cache: Cache, *, before: int, known: float) -> bool:
    """Whether the objects that may exist at ``before`` (``_CHANGED_OBJECTS``) are fewer to read than every object
    and than the rows before, each counted no further than the rows that set reads (deciding costs no more than it)."""
    changed = _changed_count(cache, before=before, known=known, limit=_DECIDE_LIMIT)
    if changed < _DECIDE_LIMIT:
        cap = changed + 1
    else:  # a window far back in a long history: count the others in full, as the choice between them does anyway
        cap = cache.conn.execute("SELECT count(*) FROM event_objects").fetchone()[0]
        changed = _changed_count(cache, before=before, known=known, limit=cap)
    objects = cache.conn.execute("SELECT count(*) FROM (SELECT 1 FROM event_objects LIMIT ?) AS known_objects", (cap,)).fetchone()[0]
    return bool(changed < objects and changed < _count_before(cache, before=before, limit=cap))


_DECIDE_LIMIT = 100_000


def _count_before(cache: Cache, *, before: int, limit: int) -> int:
    return int(cache.conn.execute("SELECT count(*) FROM (SELECT 1 FROM events INDEXED BY events_ts WHERE ts < ? LIMIT ?) AS early",
                                  (before, limit)).fetchone()[0])


def since_param(before: int, known: float) -> int:
    """``:since`` of ``last_row_per_object``'s query when it was given ``known``."""
    return min(before, math.floor(known) - _LATE) if math.isfinite(known) else before


def _changed_count(cache: Cache, *, before: int, known: float, limit: int) -> int:
    """How many rows ``_CHANGED_OBJECTS`` reads, counted up to ``limit``."""
    params = {"since": since_param(before, known), "known": known, "limit": limit}
    sql = f"""SELECT (SELECT count(*) FROM (SELECT 1 FROM event_objects INDEXED BY event_objects_live WHERE last_op = {APPLIED} LIMIT :limit) AS live)
                   + (SELECT count(*) FROM (SELECT 1 FROM events INDEXED BY events_ts WHERE ts >= :since LIMIT :limit) AS recent)
                   + (SELECT count(*) FROM (SELECT 1 FROM events INDEXED BY events_late WHERE recv >= :known AND recv >= ts + {_LATE} LIMIT :limit) AS late)"""
    return int(cache.conn.execute(sql, params).fetchone()[0])


@dataclass(frozen=True)
class PodLifecycleRow:
    """A pod with a lifecycle owner and a started lifecycle, in the order pods were first recorded."""

    id: int
    uid: str
    namespace: str
    name: str
    owner: ObjKey
    stable_hash: int
    start_ts: int
    end_ts: int | None
    end_inferred: bool


@dataclass(frozen=True)
class Run:
    """One recording run: ``stopped`` is its last heartbeat (its end, clean or not)."""

    id: int
    started: float
    synced: float | None
    stopped: float
    clean: bool
    config: str


def _key(gvk: str, namespace: str, name: str, kinds: dict[Any, Any] | None = None) -> ObjKey:
    """``kinds`` remembers the GVKs already parsed (a history has a handful of kinds and many objects)."""
    if kinds is None:
        return ObjKey(GVK.parse(gvk), namespace, name)
    kind = kinds.get(gvk)
    if kind is None:
        kind = kinds[gvk] = GVK.parse(gvk)
    return ObjKey(kind, namespace, name)


def _event(row: tuple[Any, ...], keys: dict[Any, Any]) -> StoredEvent:
    """One row as a StoredEvent; ``keys`` remembers the keys and owner chains already parsed (many objects share
    a chain: the Jobs of one CronJob). A caller passing one ``keys`` to several queries gets the same ObjKey
    objects from all of them (a dict lookup of the same object skips comparing it)."""
    eid, ts, gvk, ns, name, uid, op, inferred, spec_hash, chain, body, status, run_id, refs, daemonset = row
    raw = (gvk, ns, name)
    key = keys.get(raw)
    if key is None:
        key = keys[raw] = _key(gvk, ns, name, keys)
    owner_chain = keys.get(chain, ()) if chain else ()
    if chain and not owner_chain:
        owner_chain = keys[chain] = chain_from_json(chain)
    return StoredEvent(  # positional: a named tuple builds faster so (one per row of a window)
        eid, ts, key, uid, op == DELETED, bool(inferred), None if spec_hash is None else from_db_hash(spec_hash), owner_chain,
        body, status, run_id, refs, None if daemonset is None else bool(daemonset), op,
    )


def state_at(cache: Cache, *, ts: int, known: float, keys: dict[Any, Any] | None = None, revisions: bool = False) -> Iterator[StoredEvent]:
    """The objects that exist at ``ts`` as recorded before ``known``: for each object whose last event before
    ``ts`` is an applied one, that event, in recorded order (with ``revisions``, its last version of any change, made
    whole: ``whole``; else its last spec change, SimKube's). Pods whose lifecycle finished before ``ts`` are
    not part of the state (docs/spec.md §7.1), even when the object itself was never deleted (a Completed bare pod);
    the end counts only when its whole second lies before ``known`` (``lifecycle.as_of``)."""
    sql = f"""
        SELECT {_event_columns(cache)} FROM events e
        JOIN ({last_row_per_object(cache, applied_only=False, before=ts, known=known, revisions=revisions)}) last ON last.id = e.id
        WHERE last.op IN ({VERSIONS})
          AND NOT (e.gvk = :pod AND EXISTS (
              SELECT 1 FROM pods p WHERE p.uid = e.uid AND p.end_ts IS NOT NULL AND p.end_ts < :before AND p.end_ts + 1 <= :known))
        ORDER BY e.id
    """
    keys = {} if keys is None else keys
    for row in cache.conn.execute(sql, {"before": ts, "known": known, "pod": str(POD), "since": since_param(ts, known)}):
        yield whole(cache, _event(row, keys))


def last_applied_before(
    cache: Cache, *, ts: int, known: float, keys: dict[Any, Any] | None = None, bodies: bool = True, made_whole: bool = True,
) -> Iterator[StoredEvent]:
    """For every object with an applied event before ``ts`` received before ``known`` (deleted since or not),
    its last version of any change (docs/spec.md "What a change is": the object as the cluster had it): what the
    index of a trace ending at ``ts`` holds (a revision's spec hash is its base's), and what filters judge
    (``bodies``: as ``_event_columns`` says; a revision's body holds its labels, annotations and owners, and is made whole
    with ``bodies`` and ``made_whole``)."""
    sql = f"""
        SELECT {_event_columns(cache, bodies=bodies)} FROM events e
        JOIN ({last_row_per_object(cache, applied_only=True, before=ts, revisions=True)}) last ON last.id = e.id
        ORDER BY e.id
    """
    keys = {} if keys is None else keys
    for row in cache.conn.execute(sql, {"before": ts, "known": known}):
        event = _event(row, keys)
        yield whole(cache, event) if bodies and made_whole else event


def _window_where(*, revisions: bool) -> str:
    """The window's rows: deletions and SimKube's events (new objects and specs), and with ``revisions`` the rest."""
    ops = f"{DELETED}, {VERSIONS}" if revisions else f"{APPLIED}, {DELETED}"
    return f"WHERE e.ts >= :start AND e.ts < :end AND e.recv < :known AND e.op IN ({ops}) ORDER BY e.ts, e.id"


def untracked_before(cache: Cache, *, start_ts: int, end_ts: int, known: float) -> set[ObjKey]:
    """Objects whose kind stopped being tracked at or before ``start_ts`` and that were not recorded again
    before ``end_ts`` (as recorded before ``known``): no trace of that window holds them."""
    if cache.has_table("event_counts") and cache.conn.execute(f"SELECT 1 FROM event_counts WHERE op = {UNTRACKED} AND n > 0").fetchone() is None:
        return set()  # no kind ever stopped being tracked: nothing to look up per object
    sql = f"""
        SELECT e.gvk, e.namespace, e.name FROM events e
        JOIN ({last_row_per_object(cache, applied_only=False, before=end_ts)}) last ON last.id = e.id
        WHERE last.op = {UNTRACKED} AND e.ts <= :start
    """
    return {_key(*row) for row in cache.conn.execute(sql, {"before": end_ts, "known": known, "start": start_ts})}


def untracked_in(cache: Cache, *, start_ts: int, end_ts: int, known: float) -> list[tuple[str, int, int]]:
    """Kinds that stopped being tracked within the window: (gvk, when, how many objects left the history)."""
    sql = (f"SELECT gvk, min(ts), count(*) FROM events WHERE op = {UNTRACKED} AND ts >= ? AND ts < ? AND recv < ? "
           "GROUP BY gvk ORDER BY gvk")
    return [(gvk, ts, n) for gvk, ts, n in cache.conn.execute(sql, (start_ts, end_ts, known))]


def window_heads(cache: Cache, *, start_ts: int, end_ts: int, known: float, revisions: bool = False) -> Iterator[tuple[int, str, str, str, int, int]]:
    """``(ts, gvk, namespace, name, op, inferred)`` of the events with ``start_ts <= ts < end_ts`` received before
    ``known`` (revisions with ``revisions``), in time then recorded order, as stored: no body, no object made per row
    (a counting pass)."""
    sql = f"SELECT e.ts, e.gvk, e.namespace, e.name, e.op, e.inferred FROM events e {_window_where(revisions=revisions)}"
    return iter(cache.conn.execute(sql, {"start": start_ts, "end": end_ts, "known": known}))


def window_events(cache: Cache, *, start_ts: int, end_ts: int, known: float, keys: dict[Any, Any] | None = None,
                  revisions: bool = False) -> Iterator[StoredEvent]:
    """Events with ``start_ts <= ts < end_ts`` received before ``known``, in time then recorded order, one row at
    a time: SimKube's (new objects, spec changes, deletions), and with ``revisions`` every change, made whole."""
    keys = {} if keys is None else keys
    params = {"start": start_ts, "end": end_ts, "known": known}
    for row in cache.conn.execute(f"SELECT {_event_columns(cache)} FROM events e {_window_where(revisions=revisions)}", params):
        yield whole(cache, _event(row, keys))


def pod_lifecycles(cache: Cache, *, before: int, known: float, ended_since: float = -math.inf) -> Iterator[PodLifecycleRow]:
    """Pods with a lifecycle owner whose lifecycle started before ``before``, first seen before ``known``, and
    not finished before ``ended_since`` (``end_ts`` NULL or at least it: the ``pods_end`` index skips the pods
    long finished), in first-recorded order. The lifecycle is the one stored now: ``lifecycle.as_of`` says what of
    it was known."""
    sql = """
        SELECT id, uid, namespace, name, owner_gvk, owner_namespace, owner_name, stable_hash, start_ts, end_ts, end_inferred
        FROM pods
        WHERE owner_gvk IS NOT NULL AND stable_hash IS NOT NULL AND start_ts IS NOT NULL AND start_ts < :before
          AND first_seen < :known AND (end_ts IS NULL OR end_ts >= :since)
        ORDER BY id
    """
    keys: dict[tuple[str, str, str], ObjKey] = {}
    params = {"before": before, "known": known, "since": ended_since}
    for pid, uid, ns, name, ogvk, ons, oname, stable, start, end, end_inferred in cache.conn.execute(sql, params):
        raw = (ogvk, ons or "", oname)
        owner = keys.get(raw)
        if owner is None:
            owner = keys[raw] = _key(*raw)
        yield PodLifecycleRow(
            id=pid, uid=uid, namespace=ns, name=name, owner=owner, stable_hash=from_db_hash(stable),
            start_ts=start, end_ts=end, end_inferred=bool(end_inferred),
        )


def runs(cache: Cache) -> list[Run]:
    """Every recording run, oldest first."""
    rows = cache.conn.execute("SELECT id, started, synced, stopped, clean, config FROM runs ORDER BY started, id")
    return [Run(id=r[0], started=r[1], synced=r[2], stopped=r[3], clean=bool(r[4]), config=r[5]) for r in rows]


def uncovered(all_runs: list[Run], *, start: float, end: float) -> list[tuple[float, float]]:
    """The parts of ``[start, end)`` during which no run was recording, in order. Pure."""
    gaps: list[tuple[float, float]] = []
    cursor = start
    for run in sorted(all_runs, key=lambda r: r.started):
        if run.stopped <= cursor:
            continue
        if run.started >= end:
            break
        if run.started > cursor:
            gaps.append((cursor, run.started))
        cursor = max(cursor, run.stopped)
    if cursor < end:
        gaps.append((cursor, end))
    return gaps


CAUSE_FAILED = "watch failed"
GIVEN_UP = (CAUSE_FAILED,)
"""Causes of a ``coverage_gaps`` row whose kind was given up for the rest of its run (an error no retry can cure):
not an outage the run came back from, but a kind that run did not record (``unrecorded_kinds``)."""
NOT_BLIND = (CAUSE_FAILED, CAUSE_NOT_SERVED)
"""Causes of rows that are not blind time of a run: kinds given up (said apart) and kinds not served (no object of
theirs could exist: ``unserved_spans``). Every other row is an outage or a refusal (``forbidden``): ``coverage_gaps``."""
_UNTIL = "coalesce(g.until, CASE WHEN r.stopped > g.since THEN r.stopped ELSE g.since END)"


@dataclass(frozen=True)
class CoverageGap:
    """A stretch of a run during which some kinds were not watched (an API outage, an expired watch, a refusal): the
    kinds' overlapping gaps of one cause merged. ``until`` of a gap still open is its run's last heartbeat."""

    run_id: int
    since: float
    until: float
    cause: str
    kinds: tuple[str, ...]


def coverage_gaps(cache: Cache) -> list[CoverageGap]:
    """Every run's coverage gaps (outages and refusals; not kinds given up or not served), merged per run and cause,
    in time order."""
    if not cache.has_table("coverage_gaps"):
        return []  # a cache recorded before gaps were kept (schema 1)
    rows = cache.conn.execute(
        f"SELECT g.run_id, g.since, {_UNTIL}, g.cause, g.gvk "
        f"FROM coverage_gaps g JOIN runs r ON r.id = g.run_id WHERE g.cause NOT IN ({', '.join('?' * len(NOT_BLIND))}) "
        "ORDER BY g.run_id, g.cause, g.since", NOT_BLIND,
    ).fetchall()
    return merge_gaps([CoverageGap(run_id, since, until, cause, (gvk,)) for run_id, since, until, cause, gvk in rows])


@dataclass(frozen=True)
class UnrecordedKind:
    """A kind a run did not record from ``since`` to ``until``: given up (``watch failed``) until the run's end, refused
    (``forbidden``), or not served (``not served``); ``detail`` is the error the person was shown, with its fix."""

    run_id: int
    gvk: str
    since: float
    until: float
    cause: str
    detail: str


def unrecorded_kinds(cache: Cache, *, refused_at_end: bool = False) -> list[UnrecordedKind]:
    """Every kind a run gave up, by run then kind; with ``refused_at_end``, also the kinds still refused when their
    run ended (what to grant)."""
    if not cache.has_table("coverage_gaps"):
        return []
    refused = f" OR (g.cause = '{CAUSE_FORBIDDEN}' AND {_UNTIL} >= r.stopped)" if refused_at_end else ""
    rows = cache.conn.execute(
        f"SELECT g.run_id, g.gvk, g.since, {_UNTIL}, g.cause, g.detail "
        f"FROM coverage_gaps g JOIN runs r ON r.id = g.run_id WHERE g.cause IN ({', '.join('?' * len(GIVEN_UP))}){refused} "
        "ORDER BY g.run_id, g.gvk, g.since", GIVEN_UP,
    ).fetchall()
    return [UnrecordedKind(*row) for row in rows]


def unserved_spans(cache: Cache) -> list[UnrecordedKind]:
    """When each kind was not served during a run (no object of it could exist then), by run, kind and time."""
    return _spans(cache, CAUSE_NOT_SERVED)


def unobserved_spans(cache: Cache) -> list[UnrecordedKind]:
    """When each kind was not yet observed at a run's start (until its first list; ``detail``: ``listing`` or
    ``throttled``), by run, kind and time. Blind time (``coverage_gaps`` counts it), but no outage."""
    return _spans(cache, CAUSE_UNOBSERVED)


def _spans(cache: Cache, cause: str) -> list[UnrecordedKind]:
    if not cache.has_table("coverage_gaps"):
        return []
    rows = cache.conn.execute(
        f"SELECT g.run_id, g.gvk, g.since, {_UNTIL}, g.cause, g.detail FROM coverage_gaps g JOIN runs r ON r.id = g.run_id "
        "WHERE g.cause = ? ORDER BY g.run_id, g.gvk, g.since", (cause,),
    ).fetchall()
    return [UnrecordedKind(*row) for row in rows]


def not_served(cache: Cache, *, kinds: set[str]) -> list[tuple[str, float, float]]:
    """``(gvk, since, until)`` of each stretch a run did not serve one of ``kinds`` (for export's coverage block)."""
    return [(u.gvk, u.since, u.until) for u in unserved_spans(cache) if u.gvk in kinds]


def merge_gaps(gaps: list[CoverageGap]) -> list[CoverageGap]:
    """Overlapping gaps of one run and cause as one, with the union of their kinds; sorted by time. Pure."""
    merged: list[CoverageGap] = []
    for gap in sorted(gaps, key=lambda g: (g.run_id, g.cause, g.since)):
        last = merged[-1] if merged else None
        if last is not None and (last.run_id, last.cause) == (gap.run_id, gap.cause) and gap.since <= last.until:
            merged[-1] = CoverageGap(last.run_id, last.since, max(last.until, gap.until), last.cause,
                                     tuple(sorted(set(last.kinds) | set(gap.kinds))))
        else:
            merged.append(gap)
    return sorted(merged, key=lambda g: (g.since, g.run_id))


def known_until(all_runs: list[Run], *, end: float) -> float:
    """Until when the record of what happened before ``end`` is final: the time an export ending at ``end``
    reads up to, so that exporting it again later, after more recording, gives the same trace. Pure.

    ``end`` itself when a run that had finished its initial lists was recording at ``end``
    (``synced <= end <= stopped``, ``stopped`` being its last heartbeat): every change it received before
    ``end`` was committed by that heartbeat. Otherwise the last heartbeat before ``end`` of a run that had
    synced, or ``-inf`` when none had: ``end`` then falls in a gap, after the last heartbeat, or before a
    (re)started recorder finished its initial lists — whose rows, stamped back to the restart or to creation
    times in the gap, may still be coming.

    Where this assumes: rows are received (``recv``) when they are written, give or take a commit. A relist
    after an expired watch stamps its rows with the time it began, so one still running at ``end`` may add
    rows received before it; so may a watch event received just before a commit that waited for the writer."""
    known = -math.inf
    for run in all_runs:
        if run.synced is None or run.synced > end:
            continue
        if run.stopped >= end:
            return end
        known = max(known, run.stopped)
    return known


def config_in_force(all_runs: list[Run], *, at: float) -> str | None:
    """The config (YAML text) of the last run started before ``at``, else of the first run. Pure."""
    if not all_runs:
        return None
    started = [r for r in all_runs if r.started < at]
    return (started[-1] if started else all_runs[0]).config


@contextlib.contextmanager
def read_snapshot(cache: Cache) -> Iterator[None]:
    """One read transaction: every query inside sees the same snapshot of the cache, even while a recorder
    commits, so a count pass and a write pass agree."""
    with cache.read_snapshot():
        yield
