"""Copying a history from one cache to another, either engine to either (``kubectl sktrace cache copy``).

Every row is copied as it is, ids included, so the copy exports the same bytes as its source for any window
(exports order by ids, and read every other column as stored). The tables that triggers keep
(``event_objects`` with each object's last row, ``event_counts``) are filled by the destination's own triggers as
the events arrive. The destination must hold no history yet (no run, no event): a copy never merges two
histories. The whole copy is one transaction: a copy that fails leaves the destination as it was.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator

from kubectl_sktrace.errors import CacheError
from kubectl_sktrace.model import CacheUrl, ClusterId
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.store.opening import (
    Location,
    database_target,
    open_cache,
    open_cache_readonly,
)
from kubectl_sktrace.store.statusforms import PLAIN

# table -> its columns, in the order a copy inserts them (runs before what refers to them)
TABLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("runs", ("id", "started", "synced", "stopped", "clean", "pid", "config", "retain")),
    ("events", ("id", "ts", "recv", "run_id", "gvk", "namespace", "name", "uid", "op", "inferred", "spec_hash", "owner_chain",
                "body", "status", "refs", "daemonset")),
    ("objects", ("gvk", "namespace", "name", "uid", "spec_hash", "meta_hash", "data_hash")),
    ("pods", ("id", "uid", "namespace", "name", "owner_gvk", "owner_namespace", "owner_name", "stable_hash", "start_ts", "end_ts",
              "end_inferred", "live", "first_seen")),
    ("owners", ("gvk", "namespace", "name", "uid", "owner_refs", "fetched")),
    ("watch_state", ("gvk", "resource_version", "updated")),
    ("coverage_gaps", ("id", "run_id", "gvk", "since", "until", "cause", "detail")),
    ("discovery", ("group_version", "body", "fetched")),
    ("prunes", ("source", "cutoff", "pruned_at", "events_removed", "pods_removed")),
    ("audit_fills", ("id", "run_id", "since", "until", "covered_since", "covered_until", "levels", "events", "replaced", "kept",
                     "partial", "filled_at", "gvk")),
    ("audit_rows", ("event_id", "fill_id")),
    ("created", ("uid", "ts")),
    ("status_objects", ("id", "gvk", "namespace", "name", "uid", "fill_id")),
    ("status_changes", ("id", "object", "ts", "late", "run_id", "inferred", "form", "body")),
    ("stopped_versions", ("uid", "run_id", "resource_version", "status")),
)
# columns a later migration added: a source read as it is at an older schema lacks them, and its rows keep NULL
# there in the copy (what export reads from the bodies instead, as from the source)
ADDED_COLUMNS = {("events", "refs"), ("events", "daemonset"), ("runs", "retain"), ("objects", "meta_hash"), ("objects", "data_hash")}
IDENTITY_TABLES = ("runs", "events", "pods", "coverage_gaps", "audit_fills", "status_changes")
_BATCH = 2000


@dataclass(frozen=True)
class CopyResult:
    source: str
    destination: str
    rows: dict[str, int]


def copy_history(source: Cache, destination: Cache) -> CopyResult:
    """Copy every row of ``source`` into the empty ``destination`` (the caller holds its writer lock)."""
    if destination.conn.execute("SELECT EXISTS (SELECT 1 FROM runs) OR EXISTS (SELECT 1 FROM events)").fetchone()[0]:
        raise CacheError(f"cache {destination.path} already holds a history; copy into a new --cache (a copy never merges two)")
    counts: dict[str, int] = {}
    with source.read_snapshot(), destination.transaction():
        for key, value in source.conn.execute("SELECT key, value FROM meta WHERE key != 'application' ORDER BY key").fetchall():
            destination.set_meta(key, value)
        for table, columns in TABLES:
            present = tuple(c for c in columns if (table, c) not in ADDED_COLUMNS or source.has_column(table, c))
            if table == "status_changes" and not source.has_table("status_objects"):
                counts[table] = copy_statuses_0016(source, destination) if source.has_table(table) else 0
                continue
            counts[table] = _copy_table(source, destination, table, present) if source.has_table(table) else 0
        destination.reset_ids(IDENTITY_TABLES)
    return CopyResult(source=str(source.path), destination=str(destination.path), rows=counts)


def _copy_table(source: Cache, destination: Cache, table: str, columns: tuple[str, ...]) -> int:
    names = ", ".join(columns)
    insert = f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(columns))})"
    order = "id" if "id" in columns else ", ".join(columns[:3] if table != "discovery" else columns[:1])
    copied = 0
    cursor = source.conn.execute(f"SELECT {names} FROM {table} ORDER BY {order}")
    while True:
        rows = cursor.fetchmany(_BATCH)
        if not rows:
            return copied
        for row in rows:
            destination.write(insert, tuple(row))
        copied += len(rows)


def copy_statuses_0016(source: Cache, destination: Cache) -> int:
    """The status changes of a source at schema 0016 or 0017 (read as it is), as 0018 holds them: each object named
    once, each row as it was stored (``statusforms.PLAIN``)."""
    objects: dict[tuple[str, str, str, str], int] = {}
    copied = 0
    cursor = source.conn.execute("SELECT id, ts, recv, run_id, gvk, namespace, name, uid, inferred, body FROM status_changes ORDER BY id")
    while rows := cursor.fetchmany(_BATCH):
        for eid, ts, recv, run_id, gvk, namespace, name, uid, inferred, body in rows:
            named = (gvk, namespace, name, uid)
            if named not in objects:
                objects[named] = len(objects) + 1
                destination.write("INSERT INTO status_objects (id, gvk, namespace, name, uid) VALUES (?, ?, ?, ?, ?)", (objects[named], *named))
            destination.write("INSERT INTO status_changes (id, object, ts, late, run_id, inferred, form, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                              (eid, objects[named], ts, round((recv - ts) * 1000), run_id, inferred, PLAIN, body))
        copied += len(rows)
    return copied


def copy_cache(source: Location, destination: str, *, context: str | None = None) -> CopyResult:
    """``cache copy``: the history at ``source`` (read-only: nothing in it changes) into a new cache at
    ``destination``, a file or a database. A database's history is named ``context``, else the source's
    recorded context, and registered with the source's cluster identity (kube-system uid and server), so that a
    recorder of that cluster under another context name continues it."""
    with _as_argument("SRC"), open_cache_readonly(source) as src:
        target: Location = destination
        cluster = None
        if database_target(destination) is not None:
            target = CacheUrl(destination, context or src.get_meta("cluster.context") or "default")
            cluster = ClusterId(src.get_meta("cluster.uid") or "", src.get_meta("cluster.server") or "", src.get_meta("scope.namespace") or "")
        with _as_argument("DST"), open_cache(target, create=True, cluster=cluster, adopt=False) as dst, dst.writer_lock():
            return copy_history(src, dst)


@contextlib.contextmanager
def _as_argument(name: str) -> Iterator[None]:
    """The store's errors name ``--cache``, the flag of every other command; ``cache copy`` takes SRC and DST."""
    try:
        yield
    except CacheError as exc:
        text = str(exc).replace("pass another --cache FILE", f"pass another {name}").replace("with --cache", f"as {name}")
        raise CacheError(text.replace("into a new --cache", f"into a new {name}")) from None
