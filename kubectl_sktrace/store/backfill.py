"""The SQL of ``backfill`` (schema 0013, ``audit/backfill.py``): the cache's offline gaps, what a restart reconstructed
in each, an object's version before a gap, and the writes of a fill: rows deleted, rows appended (``Recording``'s own
``append_event``), the fill's record. Both engines; the caller holds the writer lock and one transaction.

What a gap is here: the time between a run's last heartbeat and the next run's start (no recorder ran), or, for the
cache's first run, the time before it (``partial``: asked for explicitly). What the restart reconstructed in it: the
next run's ``inferred`` rows received by its initial sync (the reconciliation report's rows, ``store/reconciliation``),
or, before the first run, every row its first lists wrote.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Any, Iterable

from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.store.bodies import decode_body
from kubectl_sktrace.store.connection import from_db_hash
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.store.history import _UNTIL, NOT_BLIND
from kubectl_sktrace.store.versions import APPLIED, DATA, METADATA, made_whole


@dataclass(frozen=True)
class Gap:
    """Time no recorder observed, ended by run ``run_id``'s start; ``mark``: the end of that run's initial sync (its
    reconstruction was written by then); ``partial``: the time before the cache's first run (``since`` -inf). Or a kind's
    outage (``gvk``) within run ``run_id``: its catch-up (rows ``inferred``) was written by ``mark``."""

    run_id: int
    since: float
    until: float
    mark: float
    partial: bool = False
    gvk: str = ""  # an outage of this kind within run ``run_id`` ('' : the time between runs)

    @property
    def reach(self) -> float:
        """Until when a logged write may be what the restart reconstructed: a gap between runs reaches the end of the next
        run's initial lists (``mark``: a write after its start and before a kind's list is found by that list, stamped
        then, inferred); an outage and the time before the first run end where they end."""
        return max(self.until, self.mark) if not self.gvk and not self.partial else self.until


@dataclass(frozen=True)
class Row:
    """A row of ``events`` as backfill compares it: its identity, and its whole object for versions."""

    id: int
    ts: int
    recv: float
    key: ObjKey
    uid: str
    op: int
    spec_hash: int | None
    body: dict[str, Any] | None


@dataclass(frozen=True)
class Fill:
    """What a log filled of one gap (``audit_fills``)."""

    id: int
    run_id: int
    since: float
    until: float
    covered_since: float | None
    covered_until: float | None
    levels: tuple[str, ...]
    events: int
    replaced: int
    kept: int
    partial: bool
    gvk: str = ""  # an outage of this kind ('' : the time between runs)


def gaps(cache: Cache, *, before_first: bool) -> list[Gap]:
    """The offline gaps and the kinds' outages, by their end; with ``before_first`` the time before the first run too."""
    rows = cache.conn.execute("SELECT id, started, synced, stopped FROM runs ORDER BY started, id").fetchall()
    out: list[Gap] = []
    if rows and before_first:
        first = rows[0]
        out.append(Gap(first[0], float("-inf"), first[1], first[2] if first[2] is not None else first[3], partial=True))
    for prev, run in zip(rows, rows[1:]):
        out.append(Gap(run[0], prev[3], run[1], run[2] if run[2] is not None else run[3]))
    return sorted(out + _outages(cache), key=lambda g: (g.until, g.gvk))


def _outages(cache: Cache) -> list[Gap]:
    """Each kind's outages (and refusals, first lists): what is caught up after one is ``inferred`` and received before the
    kind's next outage began, or its run ended (``mark``)."""
    if not cache.has_table("coverage_gaps"):
        return []
    sql = (f"SELECT g.run_id, g.gvk, g.since, {_UNTIL}, r.stopped FROM coverage_gaps g JOIN runs r ON r.id = g.run_id "
           f"WHERE g.cause NOT IN ({', '.join('?' * len(NOT_BLIND))}) ORDER BY g.run_id, g.gvk, g.since")
    rows = [r for r in cache.conn.execute(sql, NOT_BLIND).fetchall() if r[3] > r[2]]
    out = []
    for i, (run_id, gvk, since, until, stopped) in enumerate(rows):
        later = rows[i + 1] if i + 1 < len(rows) else None
        mark = later[2] if later is not None and later[:2] == (run_id, gvk) else stopped
        out.append(Gap(run_id, since, until, max(mark, until), gvk=gvk))
    return out


def reconstructed(cache: Cache, gap: Gap) -> list[Row]:
    """What the restart that ended ``gap`` wrote for what happened in it (see the module docstring), or the catch-up of an
    outage, in history order."""
    inferred = "" if gap.partial else " AND e.inferred = 1"
    kind = " AND e.gvk = ? AND e.recv >= ?" if gap.gvk else ""
    sql = (f"SELECT {_COLUMNS} FROM events e WHERE e.run_id = ? AND e.recv <= ?{inferred}{kind} "
           "AND e.id NOT IN (SELECT event_id FROM audit_rows) ORDER BY e.ts, e.id")
    params: tuple[Any, ...] = (gap.run_id, gap.mark + (0.0 if gap.gvk else 1.0)) + ((gap.gvk, gap.since) if gap.gvk else ())
    return [_row(cache, r) for r in cache.conn.execute(sql, params).fetchall()]


def version_before(cache: Cache, key: ObjKey, *, recv: float) -> Row | None:
    """The object's last row recorded by ``recv`` (the version a gap starts from), a revision made whole."""
    sql = (f"SELECT {_COLUMNS} FROM events e WHERE e.gvk = ? AND e.namespace = ? AND e.name = ? AND e.recv <= ? "
           "ORDER BY e.ts DESC, e.id DESC LIMIT 1")
    row = cache.conn.execute(sql, (str(key.gvk), key.namespace, key.name, recv)).fetchone()
    return None if row is None else _row(cache, row)


_COLUMNS = "e.id, e.ts, e.recv, e.gvk, e.namespace, e.name, e.uid, e.op, e.spec_hash, e.body"


def _row(cache: Cache, raw: tuple[Any, ...]) -> Row:
    row_id, ts, recv, gvk, namespace, name, uid, op, spec_hash, blob = raw
    key = ObjKey(GVK.parse(gvk), namespace, name)
    body = None
    if blob is not None and op in (APPLIED, METADATA, DATA):
        blob = bytes(blob)
        if op != APPLIED:
            made = made_whole(cache, key=key, ts=ts, row_id=row_id, body_blob=blob)
            blob = blob if made is None else made[0]
        body = decode_body(blob, None)
    return Row(int(row_id), int(ts), float(recv), key, uid, int(op), None if spec_hash is None else from_db_hash(spec_hash), body)


def filled_rows(cache: Cache, fill_id: int) -> set[tuple[str, str, str, int, int, str, int | None]]:
    """The identities ``(gvk, namespace, name, ts, op, uid, spec hash)`` of the rows a log wrote into a fill."""
    sql = ("SELECT e.gvk, e.namespace, e.name, e.ts, e.op, e.uid, e.spec_hash FROM audit_rows a JOIN events e ON e.id = a.event_id "
           "WHERE a.fill_id = ?")
    return {(g, ns, n, ts, op, uid, None if h is None else from_db_hash(h)) for g, ns, n, ts, op, uid, h in cache.conn.execute(sql, (fill_id,))}


def fill_of(cache: Cache, gap: Gap, *, at: float) -> Fill:
    """The gap's fill, made (empty) when it has none yet."""
    since = gap.since if not gap.partial else gap.until
    find = f"SELECT {_FILL} FROM audit_fills WHERE run_id = ? AND partial = ? AND gvk = ? AND since = ?"
    key = (gap.run_id, int(gap.partial), gap.gvk, since)
    row = cache.conn.execute(find, key).fetchone()
    if row is None:
        cache.conn.execute(
            "INSERT INTO audit_fills (run_id, since, until, covered_since, covered_until, levels, events, replaced, kept, partial, "
            "filled_at, gvk) VALUES (?, ?, ?, NULL, NULL, '', 0, 0, 0, ?, ?, ?)",
            (gap.run_id, since, gap.until, int(gap.partial), at, gap.gvk))
        row = cache.conn.execute(find, key).fetchone()
    return _fill(row)


def delete_rows(cache: Cache, ids: Iterable[int]) -> int:
    """Reconstructed rows a log accounted for, deleted (the triggers keep the counts and each object's last row)."""
    count = 0
    for row_id in ids:
        cache.write("DELETE FROM events WHERE id = ?", (row_id,))
        count += 1
    return count


def mark_filled(cache: Cache, fill_id: int, *, after: int) -> None:
    """The rows appended after row ``after`` (``last_event_id`` before the fill's appends) are the log's."""
    cache.write("INSERT INTO audit_rows (event_id, fill_id) SELECT id, ? FROM events WHERE id > ?", (fill_id, after))


def last_event_id(cache: Cache) -> int:
    return int(cache.conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0])


def update_fill(cache: Cache, fill: Fill, *, covered: tuple[float, float] | None, levels: Iterable[str], replaced: int, kept: int,
                at: float) -> None:
    """The fill's record after a log: its covered range widened, levels added, counts (rows are counted from ``audit_rows``)."""
    since, until = covered if covered is not None else (None, None)
    if fill.covered_since is not None and since is not None:
        since, until = min(since, fill.covered_since), max(until or since, fill.covered_until or since)
    elif fill.covered_since is not None:
        since, until = fill.covered_since, fill.covered_until
    names = ", ".join(sorted(set(fill.levels) | set(levels), key=_LEVEL_ORDER.index))
    cache.write(
        "UPDATE audit_fills SET covered_since = ?, covered_until = ?, levels = ?, replaced = replaced + ?, kept = ?, filled_at = ?, "
        "events = (SELECT COUNT(*) FROM audit_rows WHERE fill_id = ?) WHERE id = ?",
        (since, until, names, replaced, kept, at, fill.id, fill.id))


def end_pod(cache: Cache, *, uid: str, ts: int, since: float, until: float) -> bool:
    """A pod whose end a restart inferred (it vanished while offline) ends at its logged deletion ``ts`` instead, when
    that lies in the gap; True when it did. ``ts`` is a whole second: a deletion in the second a gap began (a recorder
    stopped at 10:00:31.006, the pod gone at 10:00:31.75) ends in that second."""
    row = cache.conn.execute("SELECT end_ts FROM pods WHERE uid = ? AND end_inferred = 1", (uid,)).fetchone()
    if row is None or not math.floor(since) <= ts <= until:
        return False
    cache.write("UPDATE pods SET end_ts = ?, end_inferred = 0 WHERE uid = ?", (ts, uid))
    return True


def rows_near(cache: Cache, key: ObjKey, *, op: int, since: float, until: float) -> list[Row]:
    """The object's rows of ``op`` received in ``[since, until]`` (``--check``: what the recorder recorded near a logged write)."""
    sql = (f"SELECT {_COLUMNS} FROM events e WHERE e.gvk = ? AND e.namespace = ? AND e.name = ? AND e.op = ? AND e.recv >= ? "
           "AND e.recv <= ? ORDER BY e.ts, e.id")
    finite = min(until, 1e18)
    return [_row(cache, r) for r in cache.conn.execute(sql, (str(key.gvk), key.namespace, key.name, op, since, finite)).fetchall()]


def inferred_pod(cache: Cache, *, namespace: str, name: str) -> str | None:
    """The uid of the one pod of that name whose end a restart inferred (None when none, or several)."""
    rows = cache.conn.execute("SELECT uid FROM pods WHERE namespace = ? AND name = ? AND end_inferred = 1", (namespace, name)).fetchall()
    return str(rows[0][0]) if len(rows) == 1 else None


def has_pod(cache: Cache, uid: str) -> bool:
    return cache.conn.execute("SELECT 1 FROM pods WHERE uid = ?", (uid,)).fetchone() is not None


def shares_objects(cache: Cache, uids: Iterable[str]) -> bool:
    """Whether any of these uids is one the cache recorded (a log of this cluster names some of them)."""
    for uid in uids:
        if cache.conn.execute("SELECT 1 FROM events WHERE uid = ? LIMIT 1", (uid,)).fetchone() is not None:
            return True
        if cache.conn.execute("SELECT 1 FROM pods WHERE uid = ? LIMIT 1", (uid,)).fetchone() is not None:
            return True
    return False


def fills(cache: Cache) -> list[Fill]:
    """Every gap a log filled, in time order; none in a cache older than 0013 (read as it is)."""
    if not cache.has_table("audit_fills"):
        return []
    return [_fill(r) for r in cache.conn.execute(f"SELECT {_FILL} FROM audit_fills WHERE events > 0 OR replaced > 0 ORDER BY until, id")]


def final_until(known: float, *, end: float, fills: Iterable[Fill]) -> float:
    """Until when the record of what happened before ``end`` is final, once logs filled gaps: ``known``
    (``history.known_until``: the last heartbeat when ``end`` falls in a gap), or, when ``end`` falls in a gap between
    runs that a ``RequestResponse`` log filled from the gap's start on, as far as that log reached, up to ``end``. The
    log's rows are stamped, and received, at the times the API server answered (``recv``), so an export reading up to
    there reads them, and what the restart reconstructed later (received at its sync) stays out, as before. Pure."""
    for fill in fills:
        if fill.gvk or fill.partial or fill.levels != ("RequestResponse",) or not fill.since <= known <= end < fill.until:
            continue
        if fill.covered_since is not None and fill.covered_until is not None and fill.covered_since <= fill.since:
            return max(known, min(end, fill.covered_until))
    return known


def filled_event_ids(cache: Cache, *, start_ts: int, end_ts: int) -> set[int]:
    """The ids of the rows a log wrote in ``[start_ts, end_ts)``: what the view draws as filled, not reconstructed."""
    if not cache.has_table("audit_rows"):
        return set()
    sql = "SELECT a.event_id FROM audit_rows a JOIN events e ON e.id = a.event_id WHERE e.ts >= ? AND e.ts < ?"
    return {int(r[0]) for r in cache.conn.execute(sql, (start_ts, end_ts))}


_FILL = "id, run_id, since, until, covered_since, covered_until, levels, events, replaced, kept, partial, gvk"
_LEVEL_ORDER = ["Metadata", "Request", "RequestResponse"]


def _fill(row: tuple[Any, ...]) -> Fill:
    levels = tuple(x for x in str(row[6]).split(", ") if x)
    return Fill(int(row[0]), int(row[1]), float(row[2]), float(row[3]), row[4], row[5], levels, int(row[7]), int(row[8]),
                int(row[9]), bool(row[10]), str(row[11]))
