"""Read-only queries behind ``kubectl sktrace view``: the history as a picture, aggregated and paged here.

Every query answers in time proportional to what the page shows, not to the history: the rate of changes is
summed from the counts the cache keeps per hour and minute (schema 0010, ``rate_counts``), or for an older cache
counted per time bucket and kind by the database (``events_ts`` bounds the rows to the range asked for), the
objects of a kind and namespace are read a page at a time from ``event_objects`` (one row per object ever
recorded, deleted ones too, with its last row: schema 0006), each object's changes from its own range of
``events_object``, its pods from ``pods_owner``. Written once in SQL both engines accept (integer division of
integers, ``LIKE … ESCAPE``, index hints that ``pgconn.translate`` drops; a name search is sqlite's LIKE or
PostgreSQL's ILIKE, both blind to the case of ASCII letters). Nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.store.bodies import chain_from_json, decode_body
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.store.history import UNTRACKED
from kubectl_sktrace.store.versions import DATA, DELETED, METADATA, VERSIONS, made_whole

MAX_TICKS = 200
"""Changes of one object returned per answer at most: beyond, one per column (an even slice of the range)."""
MAX_PODS = 60
"""Pods returned under one workload per answer (with their total)."""


@dataclass(frozen=True)
class KindCount:
    """Events of one kind in a time bucket, or in a window: applied, deleted, and how many of them were reconstructed."""

    gvk: str
    applied: int
    deleted: int
    inferred: int


_LAST_ROWS = """(SELECT e.gvk, e.namespace, e.name, e.ts AS last_ts, e.op AS last_op FROM events e WHERE e.id = (
    SELECT l.id FROM events l WHERE l.gvk = e.gvk AND l.namespace = e.namespace AND l.name = e.name ORDER BY l.ts DESC, l.id DESC LIMIT 1
)) AS o"""


def _objects(cache: Cache) -> str:
    """Where each object's last row is: ``event_objects`` (schema 0006), else found in ``events`` (an older cache, read
    as it is: slower, but such a cache predates the histories this matters for)."""
    return "event_objects" if cache.has_column("event_objects", "last_op") else _LAST_ROWS


def _aliased(cache: Cache) -> str:
    """``_objects`` named ``o``."""
    objects = _objects(cache)
    return objects if objects.endswith(" AS o") else f"{objects} AS o"


def _by_object(cache: Cache) -> str:
    """sqlite's hint to read an object's rows through ``events_object`` (schema 0005), which its planner may not choose."""
    return " INDEXED BY events_object" if cache.has_table("event_objects") else ""


def first_and_last(cache: Cache) -> tuple[int | None, int | None]:
    """The seconds of the first and the last recorded event (each one end of ``events_ts``)."""
    conn = cache.conn
    first = conn.execute(f"SELECT ts FROM events WHERE op != {UNTRACKED} ORDER BY ts LIMIT 1").fetchone()
    last = conn.execute(f"SELECT ts FROM events WHERE op != {UNTRACKED} ORDER BY ts DESC LIMIT 1").fetchone()
    return (None if first is None else int(first[0])), (None if last is None else int(last[0]))


Row = tuple[int, str, int, int, int]


def minute_counts(cache: Cache, *, start: int, end: int, width: int, origin: int | None = None) -> list[Row]:
    """``(bucket, gvk, op, inferred, n)``: the events of ``[start, end)`` per bucket ``(ts - origin) // width`` (``origin``:
    ``start`` unless given, not after it), kind, operation and whether reconstructed; the database counts them over the
    range of ``events_ts``."""
    if width < 1 or end <= start:
        return []
    rows = cache.conn.execute(
        "SELECT (ts - ?) / ? AS bucket, gvk, op, inferred, count(*) FROM events "
        f"WHERE ts >= ? AND ts < ? AND op != {UNTRACKED} GROUP BY bucket, gvk, op, inferred",
        (start if origin is None else origin, width, start, end),
    ).fetchall()
    return [(int(b), str(g), int(o), int(f), int(n)) for b, g, o, f, n in rows]


LEVELS = (("event_rates_hourly", "hour", 3600), ("event_rates", "minute", 60))
"""The counts the cache keeps (schema 0010), coarsest first: a table, its time column (``ts`` divided by), the seconds."""


def has_rates(cache: Cache) -> bool:
    """Whether the cache keeps its counts per hour and per minute (``event_rates``, schema 0010)."""
    return cache.has_table("event_rates_hourly")


def rate_counts(cache: Cache, *, start: int, end: int, width: int, origin: int | None = None, level: int = 0) -> list[Row]:
    """The rows of ``minute_counts`` for the same arguments, from the counts the cache keeps (``has_rates``): the whole
    hours of ``[start, end)`` from ``event_rates_hourly``, the whole minutes at their edges from ``event_rates``, the
    partial minutes from ``events``. A level serves only when each of its units falls in one bucket (``origin`` and
    ``width`` whole units, or a single bucket); else the finer one does."""
    origin = start if origin is None else origin
    if width < 1 or end <= start:
        return []
    if level == len(LEVELS):
        return minute_counts(cache, start=start, end=end, width=width, origin=origin)
    table, column, size = LEVELS[level]
    first, last = -(-start // size), end // size
    fits = (origin % size == 0 and width % size == 0) or width >= end - origin
    if last <= first or not fits:
        return rate_counts(cache, start=start, end=end, width=width, origin=origin, level=level + 1)
    rows = cache.conn.execute(
        f"SELECT ({column} * {size} - ?) / ? AS bucket, gvk, op, inferred, CAST(sum(n) AS BIGINT) FROM {table} "
        f"WHERE {column} >= ? AND {column} < ? AND op != {UNTRACKED} GROUP BY bucket, gvk, op, inferred",
        (origin, width, first, last),
    ).fetchall()
    counted = [(int(b), str(g), int(o), int(f), int(n)) for b, g, o, f, n in rows if n]
    for a, b in ((start, first * size), (last * size, end)):
        if b > a:
            counted += rate_counts(cache, start=a, end=b, width=width, origin=origin, level=level + 1)
    return counted


def per_bucket(rows: list[Row]) -> dict[int, list[KindCount]]:
    """The rows of ``minute_counts`` merged per bucket and kind."""
    merged: dict[int, dict[str, list[int]]] = {}
    for bucket, gvk, op, inferred, n in rows:
        entry = merged.setdefault(bucket, {}).setdefault(gvk, [0, 0, 0])
        entry[1 if op == DELETED else 0] += n  # a revision (0011) is a change like an applied spec
        if inferred:
            entry[2] += n
    return {b: [KindCount(g, *counts) for g, counts in sorted(kinds.items())] for b, kinds in merged.items()}


def scope_counts(cache: Cache, *, start: int, end: int) -> list[tuple[str, str, int, int]]:
    """``(gvk, namespace, op, n)``: the events of ``[start, end)`` per kind, namespace and operation, counted by the
    database over the range of ``events_ts`` (an aggregate: its memory is the kinds and namespaces, not the rows)."""
    rows = cache.conn.execute(
        f"SELECT gvk, namespace, op, count(*) FROM events WHERE ts >= ? AND ts < ? AND op != {UNTRACKED} GROUP BY gvk, namespace, op",
        (start, end),
    ).fetchall()
    return [(str(g), str(ns), int(o), int(n)) for g, ns, o, n in rows]


def kinds_and_namespaces(cache: Cache) -> list[tuple[str, str, int]]:
    """``(gvk, namespace, events)`` of every kind and namespace the history holds (the counts 0005's triggers keep)."""
    counted = "CAST(sum(n) AS BIGINT) FROM event_counts" if cache.has_table("event_counts") else "count(*) FROM events"
    rows = cache.conn.execute(f"SELECT gvk, namespace, {counted} WHERE op != {UNTRACKED} GROUP BY gvk, namespace ORDER BY gvk, namespace").fetchall()
    return [(str(g), str(ns), int(n)) for g, ns, n in rows if n]


@dataclass(frozen=True)
class Tick:
    """One recorded row of an object: applied (``op`` 0) or deleted (1); ``inferred``: reconstructed after a gap;
    ``n``: the changes its column of the page stands for (itself and those drawn as it, when a row has more than columns)."""

    id: int
    ts: int
    op: int
    inferred: bool
    n: int = 1


@dataclass(frozen=True)
class PodLife:
    name: str
    uid: str
    start: int | None
    end: int | None
    live: bool


@dataclass(frozen=True)
class ObjectRow:
    """An object of the history: when it was first and last recorded, whether it is gone, its owner (the first of its
    owner chain), its changes in the range asked for, and the pods whose lifecycle it owns."""

    key: ObjKey
    first_ts: int
    last_ts: int
    deleted: bool
    owner: ObjKey | None
    ticks: tuple[Tick, ...]
    ticks_total: int
    pods: tuple[PodLife, ...]
    pods_total: int


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def search_patterns(search: str) -> list[tuple[str, str]]:
    """The LIKE patterns of a name search, by column: ``text`` matches the names that contain it; ``ns/text`` (one
    slash) the objects whose ``namespace/name`` contains it (the namespace ends with ``ns``, the name starts with
    ``text``), as the page writes an object."""
    if "/" not in search:
        return [("name", f"%{_escape_like(search)}%")] if search else []
    namespace, name = search.split("/", 1)
    return [("namespace", f"%{_escape_like(namespace)}"), ("name", f"{_escape_like(name)}%")]


def _found(cache: Cache, *, gvk: str | None, namespace: str | None, search: str) -> tuple[str, list[Any]]:
    """The condition on ``_objects`` of the objects of ``gvk`` in ``namespace`` that ``search`` finds, and its parameters."""
    where, params = ["TRUE"], []
    if gvk is not None:
        where.append("gvk = ?")
        params.append(gvk)
    if namespace is not None:
        where.append("namespace = ?")
        params.append(namespace)
    like = f"{'ILIKE' if cache.engine == 'postgresql' else 'LIKE'} ? ESCAPE '\\'"
    for column, pattern in search_patterns(search):  # sqlite's LIKE ignores the case of ASCII letters; PostgreSQL's ILIKE does
        where.append(f"{column} {like}")
        params.append(pattern)
    return " AND ".join(where), params


ACTIVE_BOUND = 20_000
"""Changes in a range up to which the objects changed in it are listed first, most changes first (counted over the
range of ``events_ts``); past it (a range that long holds changes of most objects anyway) by kind and name alone."""


@dataclass(frozen=True)
class ObjectPage:
    """A page of objects, how many match (None: not counted), and how many changed in the range (listed first; None:
    the range holds more than ``ACTIVE_BOUND`` changes, and every object is listed by kind and name)."""

    rows: list[ObjectRow]
    total: int | None
    changed: int | None


def changed_in_range(cache: Cache, *, gvk: str | None, namespace: str | None, search: str, start: int,
                     end: int) -> list[tuple[str, str, str]] | None:
    """The objects a search finds that changed in ``[start, end)``, the most changes first (then by kind and name);
    None when the range holds more than ``ACTIVE_BOUND`` changes (its count walks at most that far)."""
    many = cache.conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM events WHERE ts >= ? AND ts < ? AND op != {UNTRACKED} LIMIT ?) AS r",
                              (start, end, ACTIVE_BOUND + 1)).fetchone()[0]
    if many > ACTIVE_BOUND:
        return None
    condition, params = _found(cache, gvk=gvk, namespace=namespace, search=search)
    rows = cache.conn.execute(
        f"SELECT gvk, namespace, name, count(*) AS n FROM events WHERE ts >= ? AND ts < ? AND op != {UNTRACKED} AND {condition} "
        "GROUP BY gvk, namespace, name ORDER BY n DESC, gvk, namespace, name", [start, end, *params]).fetchall()
    return [(str(g), str(ns), str(n)) for g, ns, n, _ in rows]


def active_page(cache: Cache, *, gvk: str | None, namespace: str | None, search: str, start: int, end: int,
                offset: int, limit: int, columns: int = MAX_TICKS, count: bool = True) -> ObjectPage:
    """``object_page`` in the order a range is read in: the objects changed in ``[start, end)`` first
    (``changed_in_range``), then, by kind and name, those that lived through it unchanged (their life drawn), then
    those with nothing in it (gone before it, or born after): a zoom shows what happened in it first."""
    changed = changed_in_range(cache, gvk=gvk, namespace=namespace, search=search, start=start, end=end)
    if changed is None:
        rows, known = object_page(cache, gvk=gvk, namespace=namespace, search=search, start=start, end=end, offset=offset, limit=limit,
                                  columns=columns, count=count)
        return ObjectPage(rows, known, None)
    lasts = [cache.conn.execute(f"SELECT gvk, namespace, name, last_ts, last_op FROM {_objects(cache)} WHERE gvk = ? AND namespace = ? "
                                "AND name = ?", key).fetchone() for key in changed[offset:offset + limit]]
    page = [tuple(row) for row in lasts if row is not None]
    if len(page) < limit:
        page += _unchanged(cache, gvk=gvk, namespace=namespace, search=search, start=start, end=end, offset=max(0, offset - len(changed)),
                           limit=limit - len(page))
    if 0 < len(page) < limit or (not page and offset == 0):
        total: int | None = offset + len(page)
    else:
        total = object_total(cache, gvk=gvk, namespace=namespace, search=search) if count or not page else None
    return ObjectPage([_object_row(cache, row, start=start, end=end, columns=columns) for row in page], total, len(changed))


def _unchanged(cache: Cache, *, gvk: str | None, namespace: str | None, search: str, start: int, end: int, offset: int,
               limit: int) -> list[tuple[Any, ...]]:
    """The objects a search finds without a change in ``[start, end)``: those alive in it, then those not, each part
    by kind and name along the objects' key order (one probe of ``events_object`` a row: the walk stops at ``limit``);
    a part the ``offset`` passes whole is counted to be skipped."""
    condition, params = _found(cache, gvk=gvk, namespace=namespace, search=search)
    probe = f"SELECT 1 FROM events e{_by_object(cache)} WHERE e.gvk = o.gvk AND e.namespace = o.namespace AND e.name = o.name"
    unchanged = f"{condition} AND NOT EXISTS ({probe} AND e.ts >= ? AND e.ts < ? AND e.op != {UNTRACKED})"
    alive = f"(o.last_op != {DELETED} OR o.last_ts >= ?) AND EXISTS ({probe} AND e.ts < ?)"
    page: list[tuple[Any, ...]] = []
    for part in (f"{unchanged} AND {alive}", f"{unchanged} AND NOT ({alive})"):
        where = [*params, start, end, start, end]
        if len(page) >= limit:
            break
        found = cache.conn.execute(f"SELECT gvk, namespace, name, last_ts, last_op FROM {_aliased(cache)} WHERE {part} "
                                   "ORDER BY gvk, namespace, name LIMIT ? OFFSET ?", [*where, limit - len(page), offset]).fetchall()
        if found:
            page += [tuple(row) for row in found]
            offset = 0
        elif offset:
            offset = max(0, offset - int(cache.conn.execute(f"SELECT count(*) FROM {_aliased(cache)} WHERE {part}", where).fetchone()[0]))
    return page


def object_page(cache: Cache, *, gvk: str | None, namespace: str | None, search: str, start: int, end: int,
                offset: int, limit: int, columns: int = MAX_TICKS, count: bool = True) -> tuple[list[ObjectRow], int | None]:
    """A page of the objects of ``gvk`` (every kind: None) in ``namespace`` (every one: None) that ``search`` finds (any
    case; ``search_patterns``), by kind and name, with their changes (at most one per ``columns`` even slices of the
    range: ``_ticks``) and pods in ``[start, end)``; and how many match: None when not ``count`` and the page was full
    (``object_total`` counts those after its last object: the page's walk and that count walk the objects once)."""
    condition, params = _found(cache, gvk=gvk, namespace=namespace, search=search)
    rows = cache.conn.execute(  # the page by the primary key's order: LIMIT stops the walk, whatever the history's size
        f"SELECT gvk, namespace, name, last_ts, last_op FROM {_objects(cache)} WHERE {condition} "
        "ORDER BY gvk, namespace, name LIMIT ? OFFSET ?",
        [*params, limit, offset],
    ).fetchall()
    if 0 < len(rows) < limit or (not rows and offset == 0):
        total: int | None = offset + len(rows)  # a page short of its limit ended the walk: its objects are the last
    elif count or not rows:  # a full page: the matches after its last row; past the end (no row at an offset): all
        total = object_total(cache, gvk=gvk, namespace=namespace, search=search, after=tuple(rows[-1][:3]) if rows else None,
                             before=offset + len(rows))
    else:
        total = None
    return [_object_row(cache, row, start=start, end=end, columns=columns) for row in rows], total


def object_total(cache: Cache, *, gvk: str | None, namespace: str | None, search: str, after: tuple[str, str, str] | None = None,
                 before: int = 0) -> int:
    """How many objects ``object_page`` finds: ``before`` (those up to the object ``after``, by the primary key's order)
    and those after it, counted from there along the primary key (a count of every match beside the page would walk
    them twice: a name search over 505k objects, twice)."""
    condition, params = _found(cache, gvk=gvk, namespace=namespace, search=search)
    if after is None:
        return int(cache.conn.execute(f"SELECT count(*) FROM {_objects(cache)} WHERE {condition}", params).fetchone()[0])
    counted = cache.conn.execute(f"SELECT count(*) FROM {_objects(cache)} WHERE {condition} AND (gvk, namespace, name) > (?, ?, ?)",
                                 [*params, *after]).fetchone()[0]
    return before + int(counted)


def _object_row(cache: Cache, row: tuple[Any, ...], *, start: int, end: int, columns: int) -> ObjectRow:
    gvk, namespace, name, last_ts, last_op = row
    key = ObjKey(GVK.parse(str(gvk)), str(namespace), str(name))
    conn = cache.conn
    same = "gvk = ? AND namespace = ? AND name = ?"
    ident = (gvk, namespace, name)
    hint = _by_object(cache)
    first = conn.execute(f"SELECT ts FROM events{hint} WHERE {same} ORDER BY ts, id LIMIT 1", ident).fetchone()
    chain = conn.execute(
        f"SELECT owner_chain FROM events{hint} WHERE {same} AND op IN ({VERSIONS}) ORDER BY ts DESC, id DESC LIMIT 1", ident
    ).fetchone()
    owners = chain_from_json(chain[0]) if chain is not None and chain[0] else ()
    ticks, ticks_total = _ticks(cache, ident, start=start, end=end, columns=columns)
    pods, pods_total = _pods_of(cache, key, start=start, end=end)
    return ObjectRow(key=key, first_ts=int(first[0]) if first is not None else int(last_ts), last_ts=int(last_ts), deleted=last_op == 1,
                     owner=owners[0] if owners else None, ticks=ticks,
                     ticks_total=ticks_total, pods=pods, pods_total=pods_total)


def _ticks(cache: Cache, ident: tuple[Any, ...], *, start: int, end: int, columns: int) -> tuple[tuple[Tick, ...], int]:
    """The object's rows in ``[start, end)`` and how many there are; beyond ``columns``, one per column of ``columns``
    even slices of the range (the page's pixel columns: what it can draw apart), the column's deletion when it has one,
    else its first row by id, with how many changes it stands for (``Tick.n``). Two walks of the object's range of
    ``events_object``: its columns (the total their sum), then the rows kept, their time, operation and whether
    reconstructed from the index alone (0014: it carries ``inferred``; an older cache reads that of the rows kept)."""
    where = f"WHERE gvk = ? AND namespace = ? AND name = ? AND ts >= ? AND ts < ? AND op != {UNTRACKED}"
    hint = _by_object(cache)
    kept = {int(i): int(n) for i, n in cache.conn.execute(
        f"SELECT coalesce(max(CASE WHEN op = 1 THEN id END), min(id)), count(*) FROM events{hint} {where} "
        "GROUP BY (ts - ?) * ? / ?", (*ident, start, end, start, columns, max(1, end - start)))}
    total = sum(kept.values())
    if not kept:
        return (), 0
    read = f"SELECT id, ts, op, inferred FROM events{hint} {where}"
    if total <= columns:  # every row its own tick
        rows = cache.conn.execute(read, (*ident, start, end)).fetchall()
        kept = dict.fromkeys((int(row[0]) for row in rows), 1)
    else:
        rows = cache.conn.execute(f"{read} AND id IN ({', '.join('?' * len(kept))})", (*ident, start, end, *kept)).fetchall()
    ticks = sorted((Tick(int(i), int(t), int(o), bool(f), kept[int(i)]) for i, t, o, f in rows), key=lambda tick: (tick.ts, tick.id))
    return tuple(ticks), total


def _pods_of(cache: Cache, key: ObjKey, *, start: int, end: int) -> tuple[tuple[PodLife, ...], int]:
    """The pods whose lifecycle ``key`` owns and that lived in ``[start, end)`` (a pod never started has no lifecycle)."""
    condition = ("owner_gvk = ? AND owner_namespace = ? AND owner_name = ? AND start_ts IS NOT NULL AND start_ts < ? "
                 "AND (end_ts IS NULL OR end_ts >= ?)")
    params = (str(key.gvk), key.namespace, key.name, end, start)
    rows = cache.conn.execute(  # those drawn found in pods_owner (0014: it carries the times), only they read
        f"SELECT name, uid, start_ts, end_ts, live FROM pods WHERE id IN (SELECT id FROM pods WHERE {condition} ORDER BY start_ts, id "
        "LIMIT ?) ORDER BY start_ts, id", (*params, MAX_PODS),
    ).fetchall()
    total = len(rows) if len(rows) < MAX_PODS else int(cache.conn.execute(f"SELECT count(*) FROM pods WHERE {condition}", params).fetchone()[0])
    return tuple(PodLife(str(n), str(u), s, e, bool(live)) for n, u, s, e, live in rows), total


@dataclass(frozen=True)
class Version:
    """One recorded row of an object with its body (None for a deletion), and the version before it (a revision's made
    whole: ``versions.made_whole``); ``op`` as stored (``versions``: 0 new or spec, 1 deleted, 3 metadata, 4 data)."""

    id: int
    ts: int
    recv: float
    key: ObjKey
    uid: str
    op: int
    inferred: bool
    body: dict[str, Any] | None
    previous_id: int | None
    previous_ts: int | None
    previous_body: dict[str, Any] | None


_ROW = "id, ts, recv, gvk, namespace, name, uid, op, inferred, body, status"


def version(cache: Cache, event_id: int) -> Version | None:
    """The row ``event_id`` (None when there is none) and the object's last version before it (of any change)."""
    row = cache.conn.execute(f"SELECT {_ROW} FROM events WHERE id = ?", (event_id,)).fetchone()
    if row is None:
        return None
    id_, ts, recv, gvk, namespace, name, uid, op, inferred, body, status = row
    key = ObjKey(GVK.parse(str(gvk)), str(namespace), str(name))
    previous = cache.conn.execute(
        f"SELECT id, ts, op, body, status FROM events{_by_object(cache)} WHERE gvk = ? AND namespace = ? AND name = ? "
        f"AND (ts < ? OR (ts = ? AND id < ?)) AND op IN ({VERSIONS}) ORDER BY ts DESC, id DESC LIMIT 1",
        (gvk, namespace, name, ts, ts, id_),
    ).fetchone()
    return Version(
        id=int(id_), ts=int(ts), recv=float(recv), key=key, uid=str(uid), op=int(op), inferred=bool(inferred),
        body=_whole_body(cache, key, ts, id_, op, body, status), previous_id=None if previous is None else int(previous[0]),
        previous_ts=None if previous is None else int(previous[1]),
        previous_body=None if previous is None else _whole_body(cache, key, previous[1], previous[0], *previous[2:]),
    )


def _whole_body(cache: Cache, key: ObjKey, ts: int, row_id: int, op: int, body: Any, status: Any) -> dict[str, Any] | None:
    """A row's object with its status (a revision's made whole); None for a deletion."""
    if body is None:
        return None
    if op in (METADATA, DATA):
        found = made_whole(cache, key=key, ts=int(ts), row_id=int(row_id), body_blob=bytes(body))
        if found is not None:
            body, status = found
    return decode_body(bytes(body), None if status is None else bytes(status))
