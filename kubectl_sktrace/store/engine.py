"""What every cache engine offers the store's queries: one open cache, whatever holds it.

Two engines hold a history: a local sqlite file (``connection.py``) and a history in a PostgreSQL database
(``postgres.py``). The queries of ``recording``, ``history``, ``status``, ``reconciliation`` and ``pruning``
are written once, in SQL both accept (``?`` and ``:name`` placeholders, ``ON CONFLICT … DO NOTHING``, ``CASE``
rather than sqlite's scalar ``max(a, b)``, every subquery in FROM named); the PostgreSQL connection turns the
placeholders into psycopg's and drops sqlite's planner hints (``pgconn.translate``). What the SQL cannot say
the same way lives here as methods: the schema version, the size on disk, whether a recorder holds the writer
lock, the lock itself, a read snapshot, compaction after a prune.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator, Protocol, Sequence


class DbCursor(Protocol):
    """The part of a DB-API cursor the store reads: rows one by one or all, and counts."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def fetchmany(self, size: int = ...) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class DbConnection(Protocol):
    """The part of a connection the store uses: ``execute`` with ``?``/``:name`` placeholders."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Any: ...

    @property
    def in_transaction(self) -> bool: ...

    def close(self) -> None: ...


class WriterLockLike(Protocol):
    """The one-recorder-at-a-time lock of a cache, held for a whole run (or a prune)."""

    def acquire(self) -> None: ...

    def release(self) -> None: ...

    def holder(self) -> str: ...

    def __enter__(self) -> WriterLockLike: ...

    def __exit__(self, *exc: object) -> None: ...


class Cache:
    """An open cache. ``path`` names it in messages (a file path, or a database URL without its password
    and the history's name); ``conn`` runs the shared SQL. Not shared between threads."""

    engine = "cache"
    elsewhere = "another --cache FILE"  # where a user records what this cache refuses (another cluster or scope)
    path: str | Path
    conn: DbConnection

    def ensure_unchanged(self) -> None:
        """Refuse what was read if the cache changed under a reader that cannot see a snapshot."""

    def begin(self) -> None:
        raise NotImplementedError

    def commit(self) -> None:
        raise NotImplementedError

    def rollback(self) -> None:
        raise NotImplementedError

    @contextlib.contextmanager
    def transaction(self) -> Iterator[DbConnection]:
        """A write transaction; rolled back if the block raises."""
        self.begin()
        try:
            yield self.conn
        except BaseException:
            self.rollback()
            raise
        self.commit()

    def write(self, sql: str, parameters: Any = ()) -> None:
        """Within a batch: a write whose result nobody reads (an engine may send it later, before the next
        read or the commit)."""
        self.conn.execute(sql, parameters)

    def write_many(self, sql: str, rows: Sequence[Any]) -> None:
        """Within a batch: one write for each of ``rows``, as ``write`` does (an engine may send them as one)."""
        for row in rows:
            self.write(sql, row)

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Within a transaction."""
        self.write("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value))

    def history_names(self) -> tuple[str, ...]:
        """The names a database's history is known by (its first context, then its aliases); a file has none."""
        return ()

    def has_table(self, name: str) -> bool:
        raise NotImplementedError

    def has_column(self, table: str, column: str) -> bool:
        """Whether the table has this column (a cache opened read-only may predate the migration that added it)."""
        raise NotImplementedError

    def schema_version(self) -> int:
        raise NotImplementedError

    def size_bytes(self) -> int:
        """What the cache takes on disk."""
        raise NotImplementedError

    def writer_active(self) -> bool:
        """Whether a recorder (or a prune) holds the writer lock now; probed without writing."""
        raise NotImplementedError

    def writer_lock(self) -> WriterLockLike:
        raise NotImplementedError

    @contextlib.contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """Every query inside sees one snapshot, even while a recorder commits."""
        yield

    def reset_ids(self, tables: tuple[str, ...]) -> None:
        """After rows were inserted with their ids: the next row of each table gets an id after them."""

    def compact(self, *, free_fraction: float) -> bool:
        """After a prune: give room back when worth it; whether it did."""
        return False

    def reusable_bytes(self) -> int:
        """Room inside the cache that later writes reuse."""
        return 0

    def checkpoint(self) -> None:
        """Make every commit durable in the cache's main storage (on a clean stop)."""

    def close(self) -> None:
        self.conn.close()

    def unusable(self, exc: BaseException) -> BaseException | None:
        """The CacheError to raise for an engine error met after the cache opened; None when ``exc`` is none."""
        return None

    def __enter__(self) -> Cache:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self.close()
        replacement = None if exc is None else self.unusable(exc)
        if replacement is not None:
            raise replacement from exc
