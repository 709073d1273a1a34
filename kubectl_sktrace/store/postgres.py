"""A cache in a PostgreSQL database: many clusters' histories in one database, what each guarantees.

- **Where.** ``--cache postgresql://user@host:port/database?…`` (libpq's URL; its password is never shown:
  messages print ``CacheUrl.masked``). Each history lives in a schema of its own, named in the registry
  the registry (``pgregistry.py``) with its cluster's identity and every name it is known by. ``start`` creates
  the registry (in a database that holds nothing else, else it refuses, leaving it untouched) and finds its
  history by the cluster's kube-system uid, then by its context's name (a new name of a known cluster becomes an
  alias), else creates one; readers take the history known by the context given (``--context``, else the
  kubeconfig's current one), or, without a kubeconfig, the database's only history.
- **Migrations** are ``pgschema.PG_MIGRATIONS``, named as sqlite's, each in one transaction with its row of
  ``schema_migrations``; a history whose migrations this version does not know (newer, or not ours) is a
  one-line error and is left untouched. Schema changes take a transaction-level advisory lock, so two
  recorders starting at once never migrate the same history twice.
- **One recorder per history** (``AdvisoryLock``): a session-level advisory lock held for the whole run on a
  connection of its own; the holder's host and pid are stored in its registry row when it is taken, and a
  second recorder is refused naming them. The server releases the lock when the holder's connection drops,
  so a crashed recorder (``kill -9``) never blocks the next one; and a recorder whose lock connection was
  ended (a server restart, a network cut) stops at its next commit rather than write beside another one.
- **Crash safety.** The recorder's batches are transactions committed at least every half second (the
  writer's cadence); the server keeps each commit, so a ``kill -9`` loses at most the open batch.
- **Readers never write.** ``status``, ``export`` and ``prune --dry-run`` read inside one ``REPEATABLE READ,
  READ ONLY`` transaction, begun at open: a consistent snapshot for the whole command while a recorder commits.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from typing import Any, Iterator

from kubectl_sktrace.errors import CacheError
from kubectl_sktrace.model import CacheUrl, ClusterId
from kubectl_sktrace.store import pgregistry
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.store.pgconn import PgConnection, connect, psycopg_module, reason
from kubectl_sktrace.store.pgschema import (
    MIGRATIONS_TABLE,
    PG_MIGRATIONS,
    REGISTRY_SCHEMA,
)
from kubectl_sktrace.store.schema import APPLICATION, APPLICATION_ID

LOCK_CLASS = APPLICATION_ID  # the first key of every advisory lock we take; the second is the history's id
_SCHEMA_LOCK = 0  # (LOCK_CLASS, 0): held by a transaction that changes the registry or a history's schema
LOCK_CHECK_INTERVAL = 1.0  # seconds between two checks that the writer lock is still held


class PgCache(Cache):
    """One history of a PostgreSQL database, open for writing (``open_pg``) or inside one read-only snapshot
    (``open_pg_readonly``)."""

    engine = "postgresql"
    elsewhere = "another history of the database (--context NAME) or another --cache"

    def __init__(self, target: CacheUrl, conn: PgConnection, *, history_id: int, name: str, names: tuple[str, ...] = ()) -> None:
        self.target = target
        self.conn: PgConnection = conn
        self.history_id = history_id
        self.name = name
        self.names = names or (name,)
        self.path: str = str(CacheUrl(target.url, name))
        self._lock: AdvisoryLock | None = None
        self._lock_checked = 0.0

    def _errors(self) -> Any:
        return psycopg_module()

    def begin(self) -> None:
        try:
            self.conn.execute("BEGIN")
        except self._errors().Error as exc:
            raise self._failed(exc) from None

    def commit(self) -> None:
        self._ensure_locked()
        try:
            self.conn.flush()
            self.conn.execute("COMMIT")
        except self._errors().Error as exc:
            self.rollback()
            raise self._failed(exc) from None

    def rollback(self) -> None:
        self.conn.discard()
        with contextlib.suppress(self._errors().Error):
            if self.conn.in_transaction:
                self.conn.raw.execute("ROLLBACK")

    def write(self, sql: str, parameters: Any = ()) -> None:
        self.conn.queue(sql, parameters)

    def history_names(self) -> tuple[str, ...]:
        return self.names

    def has_table(self, name: str) -> bool:
        return self.conn.execute("SELECT to_regclass(?) IS NOT NULL", (name,)).fetchone()[0] is True

    def has_column(self, table: str, column: str) -> bool:
        sql = ("SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
               "AND table_name = ? AND column_name = ?)")
        return self.conn.execute(sql, (table, column)).fetchone()[0] is True

    def schema_version(self) -> int:
        return int(self.conn.execute("SELECT coalesce(max(number), 0) FROM schema_migrations").fetchone()[0])

    def size_bytes(self) -> int:
        sql = ("SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
               "WHERE n.nspname = current_schema() AND c.relkind = 'r'")
        return int(self.conn.execute(sql).fetchone()[0])

    def writer_active(self) -> bool:
        sql = ("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid::bigint = ? AND objid::bigint = ? "
               "AND objsubid = 2 AND granted)")
        return bool(self.conn.execute(sql, (LOCK_CLASS, self.history_id)).fetchone()[0])

    def writer_lock(self) -> AdvisoryLock:
        self._lock = AdvisoryLock(self.target, history_id=self.history_id, where=self.path)
        return self._lock

    def _ensure_locked(self) -> None:
        """Before a commit, at most once a second: the lock's connection still holds the lock. A connection the
        server or the network ended released it, and another recorder may be writing: this one stops."""
        now = time.monotonic()
        if self._lock is None or not self._lock.held or now - self._lock_checked < LOCK_CHECK_INTERVAL:
            return
        self._lock_checked = now
        if not self._lock.alive():
            self.rollback()
            raise CacheError(f"lost the writer lock on {self.path} (its connection to the database ended), so another recorder "
                             "may be writing; start again once the database is reachable")

    def reset_ids(self, tables: tuple[str, ...]) -> None:
        for table in tables:
            self.conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), coalesce(max(id), 0) + 1, false) FROM {table}")

    def close(self) -> None:
        with contextlib.suppress(self._errors().Error):
            self.conn.close()

    def unusable(self, exc: BaseException) -> BaseException | None:
        return self._failed(exc) if isinstance(exc, self._errors().Error) else None

    def _failed(self, exc: BaseException) -> CacheError:
        return CacheError(f"cannot use cache {self.path} ({reason(exc, self.target)}); check the database server and the user's rights")


def open_pg(target: CacheUrl, *, create: bool, cluster: ClusterId | None = None, adopt: bool = True) -> PgCache:
    """The history of ``cluster`` (by its kube-system uid), else the one named ``target.history``, for writing:
    created (with the registry) when ``create``, migrated to this version's schema; the registry upgraded first.
    ``adopt``: a history found by the cluster's uid gains the context's name (``cache copy``, which only creates,
    changes nothing in the registry but the new history)."""
    raw = connect(target, application=APPLICATION)
    conn = PgConnection(raw)
    with _closed_on_failure(conn, target, "use"):
        history_id, schema = _writable_history(conn, target, create=create, cluster=cluster, adopt=adopt)
        raw.execute(f'SET search_path TO "{schema}"')
        _migrate(conn, target, schema)
        name, *_ = names = pgregistry.history_names(raw, history_id)
    return PgCache(target, conn, history_id=history_id, name=name, names=names)


@contextlib.contextmanager
def _closed_on_failure(conn: PgConnection, target: CacheUrl, verb: str) -> Iterator[None]:
    """Whatever fails while a new connection finds its history closes it; the database's own errors become one line."""
    try:
        yield
    except BaseException as exc:
        conn.close()
        if isinstance(exc, psycopg_module().Error):
            raise CacheError(f"cannot {verb} cache {target} ({reason(exc, target)}); check the user's rights on the database") from None
        raise


def open_pg_readonly(target: CacheUrl) -> PgCache:
    """The history for reading only, inside one REPEATABLE READ, READ ONLY transaction: nothing is created,
    changed or migrated."""
    raw = connect(target, application=APPLICATION)
    conn = PgConnection(raw, streaming=True)
    with _closed_on_failure(conn, target, "read"):
        raw.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        history_id, name, schema, names = _find_history(raw, target)
        raw.execute(f'SET LOCAL search_path TO "{schema}"')
        _applied(raw, target, schema)
    return PgCache(target, conn, history_id=history_id, name=name, names=names)


def _find_history(raw: Any, target: CacheUrl) -> tuple[int, str, str, tuple[str, ...]]:
    """``(id, first name, schema, names)`` of the history a reader asked for (by any of its names); a CacheError
    naming what to pass when none."""
    if pgregistry.registry_version(raw, target) == 0:
        raise CacheError(f"no kubectl-sktrace history in {target.masked}; record one first with 'kubectl sktrace start --cache URL'")
    histories = pgregistry.all_histories(raw)
    held = ", ".join(_shown(entry[3]) for entry in histories) or "none"
    if target.history is None:
        if len(histories) == 1:
            return histories[0]
        raise CacheError(f"{target.masked} holds {len(histories)} histories ({held}); pass --context NAME to choose one")
    for entry in histories:
        if target.history in entry[3]:
            return entry
    raise CacheError(f"no history of context {target.history!r} in {target.masked} (it holds: {held}); "
                     "pass --context NAME, or record this context first with 'kubectl sktrace start'")


def _shown(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else f"{names[0]} (also {', '.join(names[1:])})"


def _writable_history(conn: PgConnection, target: CacheUrl, *, create: bool, cluster: ClusterId | None,
                      adopt: bool) -> tuple[int, str]:
    """The history's ``(id, schema)``: the registry (created or upgraded) first, then the history of the cluster's
    uid, else of the context's name, else (``create``) a new one. A new name of a known cluster becomes an alias."""
    raw = conn.raw
    if not target.history and create:
        raise CacheError(f"recording into {target.masked} needs a kubeconfig context to name the history; pass --context NAME")
    with raw.transaction():
        raw.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_CLASS, _SCHEMA_LOCK))
        if pgregistry.registry_version(raw, target) == 0:
            if not create:
                raise CacheError(f"no kubectl-sktrace history in {target.masked}; record one first with 'kubectl sktrace start --cache URL'")
            _refuse_foreign_database(raw, target)
    pgregistry.upgrade_registry(raw, target, lock=(LOCK_CLASS, _SCHEMA_LOCK))
    if not create:  # prune: the history known by the name, else the only one, as a reader finds it
        history_id, _, schema, _ = _find_history(raw, target)
        return history_id, schema
    name = target.history or ""
    with raw.transaction():
        raw.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_CLASS, _SCHEMA_LOCK))
        found = pgregistry.by_cluster(raw, target, name, cluster) if cluster is not None and cluster.uid else None
        if found is not None:
            if adopt:
                pgregistry.add_alias(raw, found[0], name)
            return found
        found = pgregistry.by_name(raw, name)
        if found is not None:
            if adopt and cluster is not None and cluster.uid:
                pgregistry.adopt_cluster(raw, found[0], cluster)
            return found
        history_id, schema = pgregistry.register(raw, name, cluster)
        raw.execute(f'CREATE SCHEMA "{schema}"')
        raw.execute(f'SET LOCAL search_path TO "{schema}"')
        raw.execute(MIGRATIONS_TABLE)
    return history_id, schema


def _refuse_foreign_database(raw: Any, target: CacheUrl) -> None:
    """A database with no registry of ours but tables of another application is not ours to fill."""
    row = raw.execute(
        "SELECT count(*), min(n.nspname || '.' || c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
        "AND n.nspname NOT LIKE 'pg\\_%'"
    ).fetchone()
    if row[0]:
        raise CacheError(f"{target.masked} holds another application's tables ({row[0]}, e.g. {row[1]}) and no kubectl-sktrace "
                         "history; it was left untouched: create a database for kubectl-sktrace and pass its URL with --cache")


def _applied(raw: Any, target: CacheUrl, schema: str) -> int:
    """How many of our migrations the history has; a CacheError for a newer or foreign one."""
    if raw.execute("SELECT to_regclass(%s)", (f'"{schema}".schema_migrations',)).fetchone()[0] is None:
        raise CacheError(f"history {schema} of {target.masked} is not a kubectl-sktrace history; it was left untouched")
    rows = raw.execute(f'SELECT number, name FROM "{schema}".schema_migrations ORDER BY number').fetchall()
    known = [(number, name) for number, (name, _) in enumerate(PG_MIGRATIONS, start=1)]
    if len(rows) > len(known):
        raise CacheError(f"cache {target} has schema version {len(rows)}, newer than this kubectl-sktrace knows ({len(known)}); "
                         "upgrade kubectl-sktrace (the history was left untouched)")
    if [tuple(row) for row in rows] != known[: len(rows)]:
        raise CacheError(f"history {schema} of {target.masked} has migrations this kubectl-sktrace never made; it was left untouched")
    return len(rows)


def _migrate(conn: PgConnection, target: CacheUrl, schema: str) -> None:
    raw = conn.raw
    if _applied(raw, target, schema) == len(PG_MIGRATIONS):
        return
    for number, (name, ddl) in enumerate(PG_MIGRATIONS, start=1):
        with raw.transaction():
            raw.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_CLASS, _SCHEMA_LOCK))
            if _applied(raw, target, schema) >= number:
                continue  # another recorder migrated meanwhile
            raw.execute(ddl.replace("{SCHEMA}", f'"{schema}"'))
            if number == 1:
                raw.execute("INSERT INTO meta (key, value) VALUES ('application', %s)", (APPLICATION,))
            raw.execute("INSERT INTO schema_migrations (number, name, applied) VALUES (%s, %s, %s)", (number, name, time.time()))


class AdvisoryLock:
    """``pg_try_advisory_lock(LOCK_CLASS, history id)`` on a connection of its own, held until ``release``."""

    def __init__(self, target: CacheUrl, *, history_id: int, where: str) -> None:
        self.target = target
        self.history_id = history_id
        self.where = where
        self._raw: Any = None

    def acquire(self) -> None:
        raw = connect(self.target, application=f"{APPLICATION} recorder")
        taken = raw.execute("SELECT pg_try_advisory_lock(%s, %s)", (LOCK_CLASS, self.history_id)).fetchone()[0]
        if not taken:
            raw.close()
            raise CacheError(f"another recorder ({self.holder()}) is already writing to {self.where}; "
                             "stop it first, or record into another --cache")
        raw.execute(f"UPDATE {REGISTRY_SCHEMA}.histories SET holder_host = %s, holder_pid = %s, holder_since = %s WHERE id = %s",
                    (socket.gethostname(), os.getpid(), time.time(), self.history_id))
        self._raw = raw

    @property
    def held(self) -> bool:
        return self._raw is not None

    def alive(self) -> bool:
        """Whether the lock's connection (and so the lock) is still there: one round trip."""
        try:
            self._raw.execute("SELECT 1")
        except psycopg_module().Error:
            return False
        return True

    def holder(self) -> str:
        """``pid N on host H``, as the holder stored it when it took the lock."""
        with contextlib.suppress(psycopg_module().Error, CacheError), contextlib.closing(connect(self.target, application=APPLICATION)) as raw:
            row = raw.execute(f"SELECT holder_pid, holder_host FROM {REGISTRY_SCHEMA}.histories WHERE id = %s", (self.history_id,)).fetchone()
            if row is not None and row[0] is not None:
                return f"pid {row[0]} on host {row[1]}"
        return "pid unknown"

    def release(self) -> None:
        if self._raw is not None:
            with contextlib.suppress(psycopg_module().Error):
                self._raw.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_CLASS, self.history_id))
            self._raw.close()
            self._raw = None

    def __enter__(self) -> AdvisoryLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

