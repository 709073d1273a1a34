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
- A writer (start, backfill, prune, cache copy's destination) uses only files of its own user that users outside its
  group may not read or write: the cache, its ``-wal`` and ``-shm``, and the lock file, which is never a symbolic link (it
  is opened with ``O_NOFOLLOW``, so that a link planted in a shared directory cannot make the writer truncate the
  file it points to). Anything else is refused with the fix (``chmod 600``, another ``--cache``). A reader may
  read any cache its user can read.

Reading without writing (``open_cache_readonly``, for status, export and ``prune --dry-run``): the file is
opened read-only, never migrated, and nothing is created beside it. An absent path, an empty file, a
directory and a file that is not sqlite are refused before sqlite opens anything; another program's sqlite
file, by its header, once opened read-only. A cache of an older schema is read as it is, unmigrated (a
cache of a cluster that is gone can never be upgraded by ``start``, and export must still work): migrations
add tables, or drop only columns that nothing reads (0003), and what reads a table a later migration added
asks ``Cache.has_table`` first. sqlite's
``mode=ro`` alone is not enough, because a read-only connection to a WAL database creates ``-wal`` and
``-shm`` files and cannot remove them:

- When ``<cache>-wal`` exists, a recorder has the cache open (or crashed with commits still in the log):
  the connection is ``mode=ro`` and shares the recorder's log and index, so a reader sees every commit
  while the recorder writes. sqlite may rewrite the existing ``-shm`` (an index, no data) to do so, or
  create it if only the log was left (copied by hand), and a recorder that stops cleanly in the instant
  between the check and the open leaves an empty log and index that the next writer reuses.
- Otherwise no connection has the cache open and the main file holds every commit: it is read as
  ``immutable``, which takes no locks and creates no file. Should a writer open the cache meanwhile, it
  writes into a new log and leaves the main file alone until its first checkpoint (after about 4 MB);
  if one happens before the read ends, the file's size or mtime has changed and the read is refused as
  "changed while it was read" rather than trusted (``Cache.ensure_unchanged``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import stat
from pathlib import Path
from typing import Any, Iterator, Sequence

from kubectl_sktrace.errors import CacheError, EmptyCacheError
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.store.schema import (
    APPLICATION,
    APPLICATION_ID,
    MIGRATIONS,
    SCHEMA_VERSION,
)

_SQLITE_MAGIC = b"SQLite format 3\x00"
_U64 = 1 << 64
_I64_MAX = (1 << 63) - 1


def to_db_hash(value: int) -> int:
    """SimKube's u64 hash as the signed 64-bit integer sqlite stores."""
    return value - _U64 if value > _I64_MAX else value


def from_db_hash(value: int) -> int:
    """The u64 hash back from sqlite's signed integer."""
    return value + _U64 if value < 0 else value


class SqliteCache(Cache):
    """An open cache file: one sqlite connection in autocommit mode. Not shared between threads.

    ``unchanging`` is the file's identity when it was opened as immutable (see the module docstring)."""

    engine = "sqlite"

    def __init__(self, path: Path, conn: sqlite3.Connection, *, unchanging: tuple[int, ...] | None = None) -> None:
        self.path: Path = path
        self.conn: sqlite3.Connection = conn
        self._unchanging = unchanging

    def ensure_unchanged(self) -> None:
        """Refuse what was read from an immutable cache if a writer has changed the file since it opened."""
        if self._unchanging is not None and _identity(self.path) != self._unchanging:
            raise CacheError(f"cache {self.path} changed while it was read (a recorder or prune started writing to it); run the command again")

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

    def write_many(self, sql: str, rows: Sequence[Any]) -> None:
        self.conn.executemany(sql, rows)

    def has_table(self, name: str) -> bool:
        """Whether the cache has this table (a cache opened read-only may predate a migration)."""
        return self.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None

    def has_column(self, table: str, column: str) -> bool:
        """Whether the table has this column (a cache opened read-only may predate the migration that added it)."""
        return any(row[1] == column for row in self.conn.execute(f"PRAGMA table_info({table})"))

    def schema_version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def size_bytes(self) -> int:
        return disk_size(self.path)

    def writer_active(self) -> bool:
        return writer_active(self.path)

    def writer_lock(self) -> WriterLock:
        return WriterLock(self.path)

    @contextlib.contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """One read transaction (WAL readers are isolated from a recorder's commits)."""
        self.conn.execute("BEGIN")
        try:
            yield
        finally:
            self.conn.execute("COMMIT")

    def _pages(self, pragma: str) -> int:
        page_size = self.conn.execute("PRAGMA page_size").fetchone()[0]
        return int(page_size * self.conn.execute(f"PRAGMA {pragma}").fetchone()[0])

    def reusable_bytes(self) -> int:
        return self._pages("freelist_count")

    def compact(self, *, free_fraction: float) -> bool:
        """VACUUM when more than ``free_fraction`` of the file's pages are free."""
        self.checkpoint()
        total = self._pages("page_count")
        if not total or self.reusable_bytes() / total <= free_fraction:
            return False
        self.conn.execute("VACUUM")
        self.checkpoint()
        return True

    def checkpoint(self) -> None:
        """Fold the WAL into the main file (on a clean stop)."""
        with contextlib.suppress(sqlite3.Error):
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        self.conn.close()

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self.close()
        if exc is None or isinstance(exc, (sqlite3.DatabaseError, CacheError)):
            self.ensure_unchanged()  # a torn read may surface as damage: say what really happened
        if isinstance(exc, sqlite3.DatabaseError):
            raise _unusable(self.path, exc) from exc


def _unusable(path: Path, exc: sqlite3.DatabaseError) -> CacheError:
    """A read or write that sqlite refused after the cache opened: damage found deep in the file, or I/O."""
    if getattr(exc, "sqlite_errorname", "") in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or "malformed" in str(exc):
        return CacheError(f"cache {path} is damaged ({exc}); record into a new --cache (the file was left as it is)")
    return CacheError(f"cannot use cache {path} ({exc}); retry, or check the file's permissions and free disk space")


def open_cache(path: str | os.PathLike[str], *, create: bool) -> SqliteCache:
    """Open (and migrate) the cache at ``path`` for writing.

    With ``create=False`` (prune) a missing or empty file is a CacheError telling the user to record
    first; with ``create=True`` (start, demo) the file and its directory are created.
    """
    cache_path = Path(path).expanduser()
    exists = _check_path(cache_path, must_exist=not create)
    if exists:
        _check_header(cache_path)
    else:
        _create_file(cache_path)
    for log in (Path(f"{cache_path}-wal"), Path(f"{cache_path}-shm")):  # before sqlite reads them
        _check_private(log, "cache", missing_ok=True)
    conn = _connect(cache_path, str(cache_path))
    with _closed_on_failure(cache_path, conn):
        _check_ours(cache_path, conn, fresh_ok=True)  # another program's file is told as such, whatever its mode
        _check_private(cache_path, "cache")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        _migrate(cache_path, conn)
    return SqliteCache(cache_path, conn)


def open_cache_readonly(path: str | os.PathLike[str]) -> SqliteCache:
    """Open the cache at ``path`` for reading only: nothing is created, changed or migrated (see the
    module docstring for how, while a recorder writes and while none does)."""
    cache_path = Path(path).expanduser()
    _check_path(cache_path, must_exist=True)
    _check_header(cache_path)
    live = Path(f"{cache_path}-wal").exists()
    unchanging = None if live else _identity(cache_path)
    uri = f"{cache_path.absolute().as_uri()}?mode=ro" + ("" if live else "&immutable=1")
    conn = _connect(cache_path, uri, uri=True)
    with _closed_on_failure(cache_path, conn):
        _check_ours(cache_path, conn, fresh_ok=False)
    return SqliteCache(cache_path, conn, unchanging=unchanging)


def _connect(cache_path: Path, database: str, *, uri: bool = False) -> sqlite3.Connection:
    try:
        return sqlite3.connect(database, uri=uri, isolation_level=None, timeout=10.0, check_same_thread=False)
    except sqlite3.Error as exc:
        raise CacheError(f"cannot open cache {cache_path} ({exc}); check the path and its permissions") from exc


@contextlib.contextmanager
def _closed_on_failure(cache_path: Path, conn: sqlite3.Connection) -> Iterator[None]:
    """Whatever fails while a new connection is checked closes it; sqlite's own errors become one line."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise CacheError(f"{cache_path} is not a usable kubectl-sktrace cache ({exc}); pass another --cache FILE") from exc
    except BaseException:
        conn.close()
        raise


def _identity(path: Path) -> tuple[int, ...]:
    try:
        st = path.stat()
    except OSError:
        return ()
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _check_path(path: Path, *, must_exist: bool) -> bool:
    """Whether a cache file exists at ``path``; a CacheError for what can never be one."""
    try:
        return _check_file(path, must_exist=must_exist)
    except OSError as exc:  # a name too long, a loop of links: no cache can be there
        shown = str(path) if len(str(path)) <= 120 else str(path)[:100] + "…"
        raise CacheError(f"cannot use {shown} as a cache ({exc.strerror or exc}); pass another --cache FILE") from None


def _check_file(path: Path, *, must_exist: bool) -> bool:
    if path.is_dir():
        raise CacheError(f"cache {path} is a directory; pass a file path with --cache")
    if not path.exists():
        if must_exist:
            raise CacheError(f"no cache at {path}; record one first with 'kubectl sktrace start' or pass --cache FILE")
        return False
    if not path.is_file():
        raise CacheError(f"cache {path} is not a regular file; pass a file path with --cache")
    if must_exist and path.stat().st_size == 0:
        raise EmptyCacheError(f"cache {path} is an empty file, not a recording; record into it with 'kubectl sktrace start --cache {path}' "
                         "or pass another --cache FILE")
    return True


def _create_file(path: Path) -> None:
    try:
        if not path.parent.exists():
            path.parent.mkdir(mode=0o700, parents=True)
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        pass
    except OSError as exc:
        raise CacheError(f"cannot create cache {path} ({exc.strerror}); choose a writable location with --cache") from exc


def _check_private(path: Path, what: str, *, missing_ok: bool = False) -> None:
    """A CacheError unless the file at ``path`` (a link followed) belongs to this user and no other user may read or
    write it: a writer never writes where another user could change or read the history."""
    try:
        st = path.stat()
    except FileNotFoundError:
        if missing_ok:
            return
        raise CacheError(f"{what} {path} disappeared while it was opened; run the command again") from None
    except OSError as exc:
        raise CacheError(f"cannot use {what} {path} ({exc.strerror}); check its permissions") from exc
    _refuse_shared(path, st, what)


def _refuse_shared(path: Path, st: os.stat_result, what: str) -> None:
    if st.st_uid != os.geteuid():
        raise CacheError(f"{what} {path} belongs to another user (uid {st.st_uid}); a writer uses only files of its own user: "
                         "pass another --cache FILE")
    if st.st_mode & 0o007:  # the group's bits are the owner's choice: a volume's fsGroup sets them on every restart
        raise CacheError(f"{what} {path} may be read or written by other users (mode {stat.S_IMODE(st.st_mode):04o}); "
                         f"run 'chmod 600 {path}', then run the command again")


def _check_header(path: Path) -> None:
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(_SQLITE_MAGIC))
    except OSError as exc:
        raise CacheError(f"cannot read cache {path} ({exc.strerror}); check its permissions") from exc
    if head and head != _SQLITE_MAGIC:
        raise CacheError(f"{path} is not a kubectl-sktrace cache (not an sqlite file); it was left untouched, pass another --cache FILE")


def _check_ours(path: Path, conn: sqlite3.Connection, *, fresh_ok: bool) -> int:
    """The schema version of our cache; a CacheError for another program's file (an sqlite file with no
    tables and no application id is a fresh one when ``fresh_ok``, version 0)."""
    app_id, version, tables = conn.execute(  # one statement, one snapshot: a recorder may be creating the file
        "SELECT (SELECT application_id FROM pragma_application_id), (SELECT user_version FROM pragma_user_version), "
        "(SELECT count(*) FROM sqlite_master)").fetchone()
    if app_id == APPLICATION_ID:
        if version > SCHEMA_VERSION:
            raise CacheError(
                f"cache {path} has schema version {version}, newer than this kubectl-sktrace knows ({SCHEMA_VERSION}); "
                "upgrade kubectl-sktrace (the file was left untouched)"
            )
        return int(version)
    if app_id != 0 or tables:
        raise CacheError(f"{path} is an sqlite file but not a kubectl-sktrace cache; it was left untouched, pass another --cache FILE")
    if not fresh_ok:  # sqlite's header and nothing else: a recorder that is creating the cache right now, or was stopped doing so
        raise EmptyCacheError(f"cache {path} holds no recording yet (a recorder may be creating it now); "
                              f"record into it with 'kubectl sktrace start --cache {path}' or pass another --cache FILE")
    return 0


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
    """The statements of a migration, a trigger's body (``BEGIN ... END;``) kept whole."""
    statements: list[str] = []
    pending = ""
    for piece in ddl.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                statements.append(pending.strip())
            pending = ""
    if pending.strip(" \n;"):
        statements.append(pending.strip())
    return statements


class WriterLock:
    """Exclusive ``flock`` on ``<cache>.lock``; the file records the holder's pid for the error message."""

    def __init__(self, cache_path: str | os.PathLike[str]) -> None:
        self.path = Path(str(cache_path) + ".lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = self._open()
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

    def _open(self) -> int:
        """The lock file, opened (created 0600 when absent) without following a symbolic link, and checked to be a
        regular file of this user that no other user may read or write."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            if os.path.islink(self.path):
                raise CacheError(f"lock file {self.path} is a symbolic link, which a writer never follows (it would overwrite "
                                 f"the file it points to): remove the link ('rm {self.path}') or pass another --cache FILE") from None
            raise CacheError(f"cannot create lock file {self.path} ({exc.strerror}); choose a writable location with --cache") from exc
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise CacheError(f"lock file {self.path} is not a regular file; remove it or pass another --cache FILE")
            _refuse_shared(self.path, st, "lock file")
        except BaseException:
            os.close(fd)
            raise
        return fd

    def holder(self) -> str:
        """Who holds the lock, for a message: ``pid N``."""
        try:
            return f"pid {self.path.read_text().strip() or 'unknown'}"
        except OSError:
            return "pid unknown"

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


def remove_unused(cache_path: str | os.PathLike[str]) -> bool:
    """Remove a cache file that holds no run, with its log, shared memory and lock files: what a first ``start`` that
    failed before recording made. False, and nothing touched, when it holds a run or cannot be read as a cache."""
    path = Path(cache_path).expanduser()
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=1.0)
        try:
            runs = conn.execute("SELECT count(*) FROM runs").fetchone()[0]
        finally:
            conn.close()
    except (sqlite3.Error, OSError):
        return False
    if runs:
        return False
    for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), WriterLock(path).path):
        leftover.unlink(missing_ok=True)
    return True


def disk_size(cache_path: str | os.PathLike[str]) -> int:
    """The bytes the cache takes on disk: the file and its write-ahead log (the ``-shm`` index holds no data)."""
    size = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(OSError):
            size += os.path.getsize(f"{cache_path}{suffix}")
    return size


def writer_active(cache_path: str | os.PathLike[str]) -> bool:
    """Whether a process holds the writer lock of the cache now. Probed read-only: no lock file is created
    where none exists (then no writer ever ran, or none since the file was removed)."""
    try:
        fd = os.open(WriterLock(cache_path).path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
