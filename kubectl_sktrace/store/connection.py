"""Opening a cache file safely: what it guarantees.

- A file that is not one of our caches (not sqlite, or sqlite with another application id and tables of
  its own) is refused with a CacheError and never written to. So is a cache whose schema is newer than
  this version knows.
- Migrations run in order, each in one ``BEGIN IMMEDIATE`` transaction together with the ``user_version``
  bump that records it, so a crash leaves the schema at a whole version.
- Connections use WAL, ``synchronous=NORMAL`` (a commit survives a process crash; the file is never
  corrupted), autocommit mode (``isolation_level=None``) with explicit ``BEGIN IMMEDIATE`` for writes,
  because a deferred transaction that reads then writes fails at once when another process committed.
- A new cache directory is created 0700 and a new file 0600.
- One writer per cache: ``WriterLock`` holds ``flock`` on a sidecar ``<cache>.lock`` for the whole run;
  the kernel releases it when the process dies, so a crashed recorder never blocks the next one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from pathlib import Path
from typing import Iterator

from kubectl_sktrace.errors import CacheError
from kubectl_sktrace.store.schema import APPLICATION, APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION

_SQLITE_MAGIC = b"SQLite format 3\x00"
_U64 = 1 << 64
_I64_MAX = (1 << 63) - 1


def to_db_hash(value: int) -> int:
    """SimKube's u64 hash as the signed 64-bit integer sqlite stores."""
    return value - _U64 if value > _I64_MAX else value


def from_db_hash(value: int) -> int:
    """The u64 hash back from sqlite's signed integer."""
    return value + _U64 if value < 0 else value


class Cache:
    """An open cache: one sqlite connection in autocommit mode. Not shared between threads."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self.conn = conn

    def begin(self) -> None:
        """``BEGIN IMMEDIATE``: take the write lock now, so the transaction never fails half-way for it."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise CacheError(f"cache {self.path} is busy or unwritable ({exc}); retry, or check the file's permissions and free disk space") from exc

    def commit(self) -> None:
        try:
            self.conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            self.rollback()
            raise CacheError(f"cannot write cache {self.path} ({exc}); check free disk space and permissions") from exc

    def rollback(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``; rolled back if the block raises."""
        self.begin()
        try:
            yield self.conn
        except BaseException:
            self.rollback()
            raise
        self.commit()

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def has_table(self, name: str) -> bool:
        """Whether the cache has this table (a cache opened read-only may predate a migration)."""
        return self.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None

    def set_meta(self, key: str, value: str) -> None:
        """Within a transaction."""
        self.conn.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value))

    def checkpoint(self) -> None:
        """Fold the WAL into the main file (on a clean stop)."""
        with contextlib.suppress(sqlite3.Error):
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Cache:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self.close()
        if isinstance(exc, sqlite3.DatabaseError):
            raise _unusable(self.path, exc) from exc


def _unusable(path: Path, exc: sqlite3.DatabaseError) -> CacheError:
    """A read or write that sqlite refused after the cache opened: damage found deep in the file, or I/O."""
    if getattr(exc, "sqlite_errorname", "") in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or "malformed" in str(exc):
        return CacheError(f"cache {path} is damaged ({exc}); record into a new --cache (the file was left as it is)")
    return CacheError(f"cannot use cache {path} ({exc}); retry, or check the file's permissions and free disk space")


def open_cache(path: str | os.PathLike[str], *, create: bool) -> Cache:
    """Open (and migrate) the cache at ``path``.

    With ``create=False`` (export, status, prune) a missing file is a CacheError telling the user to record
    first; with ``create=True`` (start, demo) the file and its directory are created.
    """
    cache_path = Path(path).expanduser()
    exists = cache_path.exists()
    if cache_path.is_dir():
        raise CacheError(f"cache {cache_path} is a directory; pass a file path with --cache")
    if not exists and not create:
        raise CacheError(f"no cache at {cache_path}; record one first with 'kubectl sktrace start' or pass --cache FILE")
    if exists:
        _check_header(cache_path)
    else:
        _create_file(cache_path)
    try:
        conn = sqlite3.connect(str(cache_path), isolation_level=None, timeout=10.0, check_same_thread=False)
    except sqlite3.Error as exc:
        raise CacheError(f"cannot open cache {cache_path} ({exc}); check the path and its permissions") from exc
    try:
        _check_ours(cache_path, conn)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        _migrate(cache_path, conn)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise CacheError(f"{cache_path} is not a usable kubectl-sktrace cache ({exc}); pass another --cache FILE") from exc
    except BaseException:
        conn.close()
        raise
    return Cache(cache_path, conn)


def _create_file(path: Path) -> None:
    try:
        if not path.parent.exists():
            path.parent.mkdir(mode=0o700, parents=True)
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        pass
    except OSError as exc:
        raise CacheError(f"cannot create cache {path} ({exc.strerror}); choose a writable location with --cache") from exc


def _check_header(path: Path) -> None:
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(_SQLITE_MAGIC))
    except OSError as exc:
        raise CacheError(f"cannot read cache {path} ({exc.strerror}); check its permissions") from exc
    if head and head != _SQLITE_MAGIC:
        raise CacheError(f"{path} is not a kubectl-sktrace cache (not an sqlite file); it was left untouched, pass another --cache FILE")


def _check_ours(path: Path, conn: sqlite3.Connection) -> None:
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if app_id == APPLICATION_ID:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise CacheError(
                f"cache {path} has schema version {version}, newer than this kubectl-sktrace knows ({SCHEMA_VERSION}); "
                "upgrade kubectl-sktrace (the file was left untouched)"
            )
        return
    tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    if app_id != 0 or tables:
        raise CacheError(f"{path} is an sqlite file but not a kubectl-sktrace cache; it was left untouched, pass another --cache FILE")


def _migrate(path: Path, conn: sqlite3.Connection) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    for number, (name, ddl) in enumerate(MIGRATIONS, start=1):
        if number <= version:
            continue
        try:
            conn.execute("BEGIN IMMEDIATE")
            current = conn.execute("PRAGMA user_version").fetchone()[0]
            if current >= number:  # another process migrated meanwhile
                conn.execute("ROLLBACK")
                continue
            for statement in _statements(ddl):
                conn.execute(statement)
            if number == 1:
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute("INSERT INTO meta (key, value) VALUES ('application', ?)", (APPLICATION,))
            conn.execute(f"PRAGMA user_version = {number}")
            conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise CacheError(f"cannot migrate cache {path} to schema {number} ({name}): {exc}; check that it is writable") from exc


def _statements(ddl: str) -> list[str]:
    return [s.strip() for s in ddl.split(";") if s.strip()]


class WriterLock:
    """Exclusive ``flock`` on ``<cache>.lock``; the file records the holder's pid for the error message."""

    def __init__(self, cache_path: str | os.PathLike[str]) -> None:
        self.path = Path(str(cache_path) + ".lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise CacheError(f"cannot create lock file {self.path} ({exc.strerror}); choose a writable location with --cache") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise CacheError(
                f"another recorder (pid {holder}) is already writing to {str(self.path)[:-5]}; stop it first, or record into another --cache"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
