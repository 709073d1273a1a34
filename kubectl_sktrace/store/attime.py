"""The SQL behind "the history at a time" (``past/``): one kind's objects as they were at a second, one object's rows,
the rows of a stretch of time or written since a row, and what says how each row is known.

"At second S" means every row stamped ``ts <= S``: the state at the end of that second. An object's row in force is
its last one before ``S + 1`` in the history's one order ``(ts, id)`` (``history.py``); it applies the object when its
op is a version (``versions.VERSIONS``), else (a deletion, a kind no longer tracked) the object did not exist. Each
kind's objects are found in ``event_objects`` (schema 0005: a kind's objects, one backward step in ``events_object``
each), so a question costs what the kind holds at most, and one object's question what that object holds. Written
once in SQL both engines accept. Nothing here writes.
"""

from __future__ import annotations

import weakref
from typing import Any, Iterator, NamedTuple, Sequence

from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.store.versions import DELETED, METADATA, DATA, VERSIONS, made_whole
from kubectl_sktrace.store.bodies import VersionDecoder, decode_body

MAX_NAMES = 1_000
"""Names one question may list (``IN`` placeholders); more is a selector nobody types."""


class Row(NamedTuple):
    """One row of ``events`` as ``past`` reads it: ``body`` the object without its status, made whole (None for a
    deletion or a kind no longer tracked); ``audit`` whether a log wrote it (``backfill``)."""

    id: int
    ts: int
    key: ObjKey
    uid: str
    op: int
    inferred: bool
    run_id: int
    audit: bool
    body: dict[str, Any] | None
    created: int | None = None  # the second of its creationTimestamp (schema 0015), None when not recorded

    @property
    def applies(self) -> bool:
        return self.op in _VERSION_OPS


_VERSION_OPS = frozenset(int(op) for op in VERSIONS.split(", "))
_COLUMNS = "e.id, e.ts, e.gvk, e.namespace, e.name, e.uid, e.op, e.inferred, e.run_id, e.body, {audit}, {created}"


_KNOWN: weakref.WeakKeyDictionary[Cache, str] = weakref.WeakKeyDictionary()


def _columns(cache: Cache) -> str:
    """The columns ``_row`` reads (what the cache's schema has), found once per open cache."""
    found = _KNOWN.get(cache)
    if found is None:
        audit = "(SELECT 1 FROM audit_rows a WHERE a.event_id = e.id)" if cache.has_table("audit_rows") else "NULL"
        created = "(SELECT c.ts FROM created c WHERE c.uid = e.uid)" if cache.has_table("created") else "NULL"
        found = _KNOWN[cache] = _COLUMNS.format(audit=audit, created=created)
    return found


def _row(cache: Cache, raw: Sequence[Any], kinds: dict[str, GVK], versions: VersionDecoder | None = None) -> Row:
    """One row read; ``versions``: the decoder of the rows of one object read in order before it, so that what did not
    change is shared, not decoded again (a body read is never changed)."""
    rid, ts, gvk, namespace, name, uid, op, inferred, run_id, body, audit, created = raw
    kind = kinds.get(gvk)
    if kind is None:
        kind = kinds[gvk] = GVK.parse(str(gvk))
    key = ObjKey(kind, str(namespace), str(name))
    decoded = None
    if body is not None and int(op) in _VERSION_OPS:
        blob = bytes(body)
        if int(op) in (METADATA, DATA):
            found = made_whole(cache, key=key, ts=int(ts), row_id=int(rid), body_blob=blob)
            blob = blob if found is None else found[0]
        decoded = decode_body(blob) if versions is None else versions(blob)
    return Row(int(rid), int(ts), key, str(uid), int(op), bool(inferred), int(run_id), audit is not None, decoded,
               None if created is None else int(created))


def rows_at(cache: Cache, *, gvk: GVK, second: int, namespace: str | None = None, names: Sequence[str] = ()) -> Iterator[Row]:
    """Per object of ``gvk`` (in ``namespace``, or every one; of ``names``, or every one), its row in force at the end
    of ``second`` when that row applies it, by namespace then name."""
    where, params = ["k.gvk = :gvk"], {"gvk": str(gvk), "before": second + 1}
    if namespace is not None:
        where.append("k.namespace = :ns")
        params["ns"] = namespace
    if names:
        marks = []
        for i, name in enumerate(names[:MAX_NAMES]):
            marks.append(f":n{i}")
            params[f"n{i}"] = name
        where.append(f"k.name IN ({', '.join(marks)})")
    objects = "event_objects" if cache.has_table("event_objects") else "(SELECT DISTINCT gvk, namespace, name FROM events)"
    sql = f"""
        SELECT {_columns(cache)} FROM events e JOIN (
            SELECT (SELECT i.id FROM events i INDEXED BY events_object
                    WHERE i.gvk = k.gvk AND i.namespace = k.namespace AND i.name = k.name AND i.ts < :before
                    ORDER BY i.ts DESC, i.id DESC LIMIT 1) AS last_id
            FROM {objects} k WHERE {' AND '.join(where)}
        ) last ON last.last_id = e.id
        WHERE e.op IN ({VERSIONS}) ORDER BY e.namespace, e.name
    """
    kinds: dict[str, GVK] = {}
    for raw in cache.conn.execute(sql, params):
        yield _row(cache, raw, kinds)


def row_in_force(cache: Cache, key: ObjKey, *, second: int) -> tuple[int, bool] | None:
    """The id of the object's row in force at the end of ``second`` and whether it applies the object (no body read:
    one step in ``events_object``); None when it has none before."""
    found = cache.conn.execute(
        "SELECT id, op FROM events INDEXED BY events_object WHERE gvk = ? AND namespace = ? AND name = ? AND ts < ? "
        "ORDER BY ts DESC, id DESC LIMIT 1", (str(key.gvk), key.namespace, key.name, second + 1)).fetchone()
    return None if found is None else (int(found[0]), int(found[1]) in _VERSION_OPS)


def object_rows(cache: Cache, key: ObjKey) -> list[Row]:
    """Every row of one object (every life of its name), in the history's order."""
    sql = (f"SELECT {_columns(cache)} FROM events e WHERE e.gvk = ? AND e.namespace = ? AND e.name = ? "
           "ORDER BY e.ts, e.id")
    kinds: dict[str, GVK] = {}
    versions = VersionDecoder()
    return [_row(cache, raw, kinds, versions) for raw in cache.conn.execute(sql, (str(key.gvk), key.namespace, key.name)).fetchall()]


def row_before(cache: Cache, row: Row) -> Row | None:
    """The object's row before ``row`` in the history's order (None: ``row`` is its first)."""
    sql = (f"SELECT {_columns(cache)} FROM events e WHERE e.gvk = ? AND e.namespace = ? AND e.name = ? "
           "AND (e.ts < ? OR (e.ts = ? AND e.id < ?)) ORDER BY e.ts DESC, e.id DESC LIMIT 1")
    raw = cache.conn.execute(sql, (str(row.key.gvk), row.key.namespace, row.key.name, row.ts, row.ts, row.id)).fetchone()
    return None if raw is None else _row(cache, raw, {})


def rows_between(cache: Cache, *, gvks: Sequence[GVK], first: int, last: int, namespace: str | None = None) -> Iterator[Row]:
    """The rows of ``gvks`` stamped ``first <= ts <= last`` (in ``namespace``, or every one), in the history's order,
    one at a time (``events_ts`` bounds them)."""
    kinds, scope, params = _stretch(gvks, first=first, last=last, namespace=namespace, column="e.namespace")
    sql = (f"SELECT {_columns(cache)} FROM events e INDEXED BY events_ts WHERE e.ts >= :first AND e.ts <= :last "
           f"AND e.gvk IN ({kinds}){scope} AND e.op != {_UNTRACKED_OP} ORDER BY e.ts, e.id")
    found: dict[str, GVK] = {}
    for raw in cache.conn.execute(sql, params):
        yield _row(cache, raw, found)


_UNTRACKED_OP = 2


def _stretch(gvks: Sequence[GVK], *, first: int, last: int, namespace: str | None, column: str) -> tuple[str, str, dict[str, Any]]:
    """The named parameters of a question about ``gvks`` in ``first <= ts <= last``: the kinds' placeholders, the
    namespace's condition on ``column`` ('' for every namespace), and their values."""
    params: dict[str, Any] = {f"k{i}": str(gvk) for i, gvk in enumerate(gvks)}
    params.update(first=first, last=last)
    if namespace is None:
        return ", ".join(f":k{i}" for i in range(len(gvks))), "", params
    params["ns"] = namespace
    return ", ".join(f":k{i}" for i in range(len(gvks))), f" AND {column} = :ns", params


def rows_since(cache: Cache, *, gvks: Sequence[GVK], after_id: int, limit: int = 10_000) -> list[Row]:
    """The rows of ``gvks`` written after the row ``after_id``, in the order they were written, ``limit`` at most."""
    kinds = ", ".join("?" for _ in gvks)
    sql = (f"SELECT {_columns(cache)} FROM events e WHERE e.id > ? AND e.gvk IN ({kinds}) AND e.op != {_UNTRACKED_OP} "
           "ORDER BY e.id LIMIT ?")
    found: dict[str, GVK] = {}
    return [_row(cache, raw, found) for raw in cache.conn.execute(sql, (after_id, *map(str, gvks), limit)).fetchall()]


def last_id(cache: Cache) -> int:
    """The id of the last row written (0 when none)."""
    row = cache.conn.execute("SELECT max(id) FROM events").fetchone()
    return 0 if row is None or row[0] is None else int(row[0])


def keys_changed(cache: Cache, *, gvks: Sequence[GVK], first: int, last: int, namespace: str | None = None) -> list[ObjKey]:
    """The objects of ``gvks`` with a row stamped ``first <= ts <= last``, by kind, namespace and name."""
    kinds, scope, params = _stretch(gvks, first=first, last=last, namespace=namespace, column="namespace")
    sql = (f"SELECT DISTINCT gvk, namespace, name FROM events INDEXED BY events_ts WHERE ts >= :first AND ts <= :last "
           f"AND gvk IN ({kinds}){scope} ORDER BY gvk, namespace, name")
    return [ObjKey(GVK.parse(str(g)), str(ns), str(n)) for g, ns, n in cache.conn.execute(sql, params).fetchall()]


def first_second(cache: Cache) -> int | None:
    """The second of the first recorded row (None: no history)."""
    row = cache.conn.execute("SELECT ts FROM events ORDER BY ts LIMIT 1").fetchone()
    return None if row is None else int(row[0])


def audit_fills(cache: Cache) -> list[tuple[str, float, float, bool]]:
    """``(gvk, covered_since, covered_until, statuses)`` of each stretch a log filled (``gvk`` '' for every kind: the
    time between two runs); ``statuses``: its status changes too (a log at RequestResponse fills those of the time
    between runs: ``audit/statusfill``)."""
    if not cache.has_table("audit_fills"):
        return []
    rows = cache.conn.execute("SELECT gvk, covered_since, covered_until, levels FROM audit_fills "
                              "WHERE covered_since IS NOT NULL AND covered_until IS NOT NULL ORDER BY covered_since").fetchall()
    return [(str(g), float(s), float(u), str(g) == "" and "RequestResponse" in str(levels).split(", ")) for g, s, u, levels in rows]


def pod_phases(cache: Cache, *, uids: Sequence[str]) -> dict[str, tuple[int | None, int | None, bool]]:
    """Per pod uid of ``uids`` the cache knows: ``(start_ts, end_ts, end_inferred)`` of its lifecycle."""
    out: dict[str, tuple[int | None, int | None, bool]] = {}
    for i in range(0, len(uids), 500):
        chunk = list(uids[i:i + 500])
        marks = ", ".join("?" for _ in chunk)
        for uid, start, end, inferred in cache.conn.execute(
                f"SELECT uid, start_ts, end_ts, end_inferred FROM pods WHERE uid IN ({marks})", chunk).fetchall():
            out[str(uid)] = (None if start is None else int(start), None if end is None else int(end), bool(inferred))
    return out


__all__ = ["DELETED", "MAX_NAMES", "Row", "row_in_force", "audit_fills", "discovery_documents", "recorded_kinds", "first_second", "keys_changed", "last_id", "object_rows",
           "has_pod_lifecycles", "pod_phases", "pods_running", "row_before", "rows_at", "rows_between", "rows_since"]


def discovery_documents(cache: Cache) -> list[tuple[str, str]]:
    """``(group_version, JSON text)`` of the discovery documents the cache keeps."""
    if not cache.has_table("discovery"):
        return []
    return [(str(gv), str(body)) for gv, body in cache.conn.execute("SELECT group_version, body FROM discovery ORDER BY group_version").fetchall()]


def recorded_kinds(cache: Cache) -> list[str]:
    """The GVKs of every recorded object's kind."""
    table = "event_counts WHERE n > 0" if cache.has_table("event_counts") else "events"
    return sorted(str(g) for (g,) in cache.conn.execute(f"SELECT DISTINCT gvk FROM {table}").fetchall())


def has_pod_lifecycles(cache: Cache) -> bool:
    """Whether the cache holds a started pod's lifecycle (the pods of the workloads it tracks: ``pods``)."""
    return cache.conn.execute("SELECT 1 FROM pods WHERE start_ts IS NOT NULL LIMIT 1").fetchone() is not None


def pods_running(cache: Cache, *, second: int, namespace: str | None, names: Sequence[str]) -> Iterator[tuple[int, str, str, str, int, int | None, bool]]:
    """``(id, namespace, name, uid, start_ts, end_ts, end_inferred)`` of the pods whose lifecycle says they ran at
    ``second`` (started at or before it, not ended by its end), by namespace and name."""
    where = ["start_ts IS NOT NULL AND start_ts <= ? AND (end_ts IS NULL OR end_ts > ?)"]
    params: list[Any] = [second, second]
    if namespace is not None:
        where.append("namespace = ?")
        params.append(namespace)
    if names and len(names) <= MAX_NAMES:  # more: every pod read, the caller's scope selects
        where.append(f"name IN ({', '.join('?' for _ in names)})")
        params.extend(names)
    for row_id, ns, name, uid, start, end, inferred in cache.conn.execute(
            f"SELECT id, namespace, name, uid, start_ts, end_ts, end_inferred FROM pods WHERE {' AND '.join(where)} ORDER BY namespace, name, id",
            params):
        yield int(row_id), str(ns), str(name), str(uid), int(start), None if end is None else int(end), bool(inferred)


def pods_of(cache: Cache, key: ObjKey) -> list[tuple[str, str, int | None, int | None, bool]]:
    """``(name, uid, start_ts, end_ts, end_inferred)`` of the pods whose lifecycle owner is ``key``, first recorded first."""
    rows = cache.conn.execute("SELECT name, uid, start_ts, end_ts, end_inferred FROM pods WHERE owner_gvk = ? AND owner_namespace = ? "
                              "AND owner_name = ? ORDER BY id", (str(key.gvk), key.namespace, key.name)).fetchall()
    return [(str(n), str(u), None if s is None else int(s), None if e is None else int(e), bool(i)) for n, u, s, e, i in rows]
