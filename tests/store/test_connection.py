"""store.connection: opening a cache to write (created, migrated) or only to read (nothing created or changed)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from kubectl_sktrace.errors import CacheError, EmptyCacheError
from kubectl_sktrace.store import (
    SCHEMA_VERSION,
    WriterLock,
    open_cache,
    open_cache_readonly,
)
from kubectl_sktrace.store.connection import _check_ours, writer_active
from kubectl_sktrace.store.schema import APPLICATION_ID


def _recorded(path: Path, *, runs: int = 1, config: str = "") -> None:
    """A cache closed cleanly (no -wal or -shm left), holding ``runs`` runs."""
    with open_cache(path, create=True) as cache:
        for n in range(runs):
            with cache.transaction() as conn:
                conn.execute("INSERT INTO runs (started, stopped, pid, config) VALUES (?, ?, 1, ?)", (n, n + 1, config))
        cache.checkpoint()


def _listing(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def test_a_cache_nobody_holds_is_read_without_a_file_created(tmp_path: Path) -> None:
    _recorded(tmp_path / "c.db", runs=2)
    before = _listing(tmp_path)
    with open_cache_readonly(tmp_path / "c.db") as cache:
        assert cache.conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 2
        with pytest.raises(Exception, match="readonly"):
            cache.conn.execute("DELETE FROM runs")
        assert _listing(tmp_path) == before
    assert _listing(tmp_path) == before


def test_a_reader_beside_a_writer_sees_its_commits(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    _recorded(path)
    with open_cache(path, create=True) as writer:
        with writer.transaction() as conn:
            conn.execute("INSERT INTO runs (started, stopped, pid, config) VALUES (5, 6, 1, '')")
        assert Path(f"{path}-wal").exists()
        with open_cache_readonly(path) as reader:
            assert reader.conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 2
            with writer.transaction() as conn:
                conn.execute("INSERT INTO runs (started, stopped, pid, config) VALUES (7, 8, 1, '')")
            assert reader.conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 3
            reader.ensure_unchanged()


def test_a_read_is_refused_when_a_writer_changed_the_file_meanwhile(tmp_path: Path) -> None:
    """Read as immutable (no writer had it open), the file must not change under the reader: when a
    writer's checkpoint rewrote it, what was read is not trusted."""
    path = tmp_path / "c.db"
    _recorded(path)
    expected = f"cache {path} changed while it was read (a recorder or prune started writing to it); run the command again"
    with pytest.raises(CacheError) as info:
        with open_cache_readonly(path) as reader:
            reader.conn.execute("SELECT count(*) FROM runs").fetchone()
            _recorded(path, config="x" * 100_000)  # as a recorder's first checkpoint does, it grows the file
            with pytest.raises(CacheError) as early:
                reader.ensure_unchanged()
            assert str(early.value) == expected
    assert str(info.value) == expected


def test_an_older_schema_is_read_as_it_is_never_migrated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.db"
    _recorded(path)
    before = _listing(tmp_path)
    monkeypatch.setattr("kubectl_sktrace.store.connection.SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with open_cache_readonly(path) as reader:
        assert reader.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert reader.has_table("runs") and not reader.has_table("a_table_of_a_later_migration")
    assert _listing(tmp_path) == before


@pytest.mark.parametrize("opener", [open_cache_readonly, lambda p: open_cache(p, create=False)], ids=["read", "write-existing"])
def test_an_empty_file_is_no_cache_to_read_or_prune(tmp_path: Path, opener: object) -> None:
    path = tmp_path / "c.db"
    path.touch()
    with pytest.raises(CacheError) as info:
        opener(path)  # type: ignore[operator]
    assert str(info.value) == (f"cache {path} is an empty file, not a recording; record into it with 'kubectl sktrace start --cache {path}' "
                               "or pass another --cache FILE")
    assert _listing(tmp_path) == {"c.db": b""}


def test_a_cache_a_recorder_is_creating_is_empty_to_a_reader_not_foreign(tmp_path: Path) -> None:
    """Between sqlite's header and the first migration's commit, a reader sees an sqlite file with no tables:
    it is told the cache holds no recording yet (EmptyCacheError), not that the file belongs to another program."""
    path = tmp_path / "c.db"
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))  # as a recorder creates it
    creating = sqlite3.connect(path, isolation_level=None)
    creating.execute("PRAGMA journal_mode = WAL")
    creating.execute("BEGIN IMMEDIATE")
    creating.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")  # the first migration, not committed yet
    try:
        with pytest.raises(EmptyCacheError) as info:
            open_cache_readonly(path)
        assert str(info.value) == (f"cache {path} holds no recording yet (a recorder may be creating it now); "
                                   f"record into it with 'kubectl sktrace start --cache {path}' or pass another --cache FILE")
    finally:
        creating.execute("ROLLBACK")
        creating.close()
    with open_cache(path, create=True):
        pass
    with open_cache_readonly(path) as reader:
        assert reader.has_table("runs")


class _CreatorCommitsAfterOneRead:
    """A reader's connection while a recorder creates the cache: the recorder's first migration commits right
    after the reader's first statement."""

    def __init__(self, reader: sqlite3.Connection, creating: sqlite3.Connection) -> None:
        self.reader, self.creating = reader, creating

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        cursor = self.reader.execute(sql, *args)
        rows = cursor.fetchall()
        if self.creating.in_transaction:
            self.creating.execute("COMMIT")
        return _Rows(rows)  # type: ignore[return-value]


class _Rows:
    def __init__(self, rows: list[tuple[object, ...]]) -> None:
        self.rows = rows

    def fetchone(self) -> tuple[object, ...] | None:
        return self.rows[0] if self.rows else None


@pytest.mark.parametrize("fresh_ok", [True, False], ids=["write", "read"])
def test_a_first_migration_committing_mid_check_never_looks_foreign(tmp_path: Path, fresh_ok: bool) -> None:
    """The application id, schema version and tables are read in one snapshot: a commit between two reads
    once showed a cache being created as "an sqlite file but not a kubectl-sktrace cache"."""
    path = tmp_path / "c.db"
    creating = sqlite3.connect(path, isolation_level=None)
    creating.execute("PRAGMA journal_mode = WAL")
    creating.execute("BEGIN IMMEDIATE")
    creating.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    creating.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    creating.execute("PRAGMA user_version = 1")
    reader = sqlite3.connect(path, isolation_level=None)
    try:
        checking = _CreatorCommitsAfterOneRead(reader, creating)
        if fresh_ok:
            assert _check_ours(path, checking, fresh_ok=True) == 0  # type: ignore[arg-type]
        else:
            with pytest.raises(EmptyCacheError):
                _check_ours(path, checking, fresh_ok=False)  # type: ignore[arg-type]
        assert not creating.in_transaction  # the commit did happen mid-check
        assert _check_ours(path, reader, fresh_ok=False) == 1  # and the next look sees the cache
    finally:
        reader.close()
        creating.close()


def test_start_records_into_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    path.touch(mode=0o600)
    with open_cache(path, create=True) as cache:
        assert cache.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    os.mkfifo(path)
    with pytest.raises(CacheError, match="is not a regular file; pass a file path with --cache$"):
        open_cache_readonly(path)


def test_the_writer_probe_creates_no_lock_file(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    _recorded(path)
    assert not writer_active(path)
    assert not Path(f"{path}.lock").exists()
    with WriterLock(path):
        assert writer_active(path)
    assert not writer_active(path)


def test_a_symlinked_lock_file_is_refused_and_the_file_it_points_to_kept(tmp_path: Path) -> None:
    path = tmp_path / "shared" / "team.db"
    _recorded(path)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"someone's notes\n")
    Path(f"{path}.lock").symlink_to(victim)
    with pytest.raises(CacheError) as info:
        WriterLock(path).acquire()
    assert str(info.value) == (f"lock file {path}.lock is a symbolic link, which a writer never follows (it would overwrite the file "
                               f"it points to): remove the link ('rm {path}.lock') or pass another --cache FILE")
    assert victim.read_bytes() == b"someone's notes\n"
    Path(f"{path}.lock").unlink()
    Path(f"{path}.lock").symlink_to(tmp_path / "absent")  # a dangling link is not followed to create its target either
    with pytest.raises(CacheError, match="is a symbolic link"):
        WriterLock(path).acquire()
    assert not (tmp_path / "absent").exists()


@pytest.mark.parametrize("mode", [0o666, 0o644, 0o604, 0o601], ids=lambda m: f"{m:04o}")
def test_a_writer_refuses_a_cache_other_users_may_read_or_write_and_a_reader_reads_it(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "c.db"
    _recorded(path)
    path.chmod(mode)
    before = path.read_bytes()
    for create in (True, False):
        with pytest.raises(CacheError) as info:
            open_cache(path, create=create)
        assert str(info.value) == (f"cache {path} may be read or written by other users (mode {mode:04o}); "
                                   f"run 'chmod 600 {path}', then run the command again")
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["c.db"]
    with open_cache_readonly(path) as cache:
        assert cache.conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 1


@pytest.mark.parametrize("mode", [0o660, 0o640], ids=lambda m: f"{m:04o}")
def test_a_writer_uses_a_cache_its_group_may_share(tmp_path: Path, mode: int) -> None:
    """A volume mounted with an fsGroup gives its files to that group, read and write, at every restart of the pod: the
    recorder that made the cache 0600 starts again on it."""
    path = tmp_path / "c.db"
    _recorded(path)
    path.chmod(mode)
    with open_cache(path, create=False) as cache:
        assert cache.conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 1


def test_a_writer_refuses_a_log_or_a_lock_file_other_users_may_write(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    _recorded(path)
    wal = Path(f"{path}-wal")
    wal.write_bytes(b"")
    wal.chmod(0o666)
    with pytest.raises(CacheError, match=f"^cache {wal} may be read or written by other users \\(mode 0666\\); run 'chmod 600"):
        open_cache(path, create=False)
    wal.unlink()
    lock = Path(f"{path}.lock")
    lock.write_text("123\n")
    lock.chmod(0o646)
    with pytest.raises(CacheError, match=f"^lock file {lock} may be read or written by other users \\(mode 0646\\)"):
        WriterLock(path).acquire()
    assert lock.read_text() == "123\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_a_writer_refuses_files_of_another_user(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    _recorded(path)
    os.chown(path, 4242, -1)
    with pytest.raises(CacheError, match=f"^cache {path} belongs to another user \\(uid 4242\\); .*pass another --cache FILE$"):
        open_cache(path, create=False)
    os.chown(path, os.geteuid(), -1)
    lock = Path(f"{path}.lock")
    lock.write_text("")
    lock.chmod(0o600)
    os.chown(lock, 4242, -1)
    with pytest.raises(CacheError, match=f"^lock file {lock} belongs to another user"):
        WriterLock(path).acquire()


def test_a_cache_the_product_created_is_private_and_opens_again_for_writing(tmp_path: Path) -> None:
    path = tmp_path / "new" / "c.db"
    with open_cache(path, create=True) as cache, cache.writer_lock():
        with cache.transaction() as conn:
            conn.execute("INSERT INTO runs (started, stopped, pid, config) VALUES (1, 2, 1, '')")
        modes = {p.name: p.stat().st_mode & 0o777 for p in path.parent.iterdir()}
    assert modes == {"c.db": 0o600, "c.db-wal": 0o600, "c.db-shm": 0o600, "c.db.lock": 0o600}
    assert path.parent.stat().st_mode & 0o777 == 0o700
    with open_cache(path, create=False) as cache, cache.writer_lock():
        assert cache.conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 1


def _schema_2_cache(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache as the schema before 0003 left it: objects and pods with the columns nothing read."""
    from kubectl_sktrace.store import schema

    with monkeypatch.context() as patch:
        patch.setattr("kubectl_sktrace.store.connection.MIGRATIONS", schema.MIGRATIONS[:2])
        patch.setattr("kubectl_sktrace.store.connection.SCHEMA_VERSION", 2)
        with open_cache(path, create=True) as cache:
            with cache.transaction() as conn:
                conn.execute("INSERT INTO objects (gvk, namespace, name, uid, spec_hash, resource_version, created, last_seen) "
                             "VALUES ('apps/v1.Deployment', 'ns', 'web', 'd1', 7, '12', 1.5, 2.5)")
                conn.executemany(
                    "INSERT INTO pods (id, uid, namespace, name, owner_gvk, owner_namespace, owner_name, stable_hash, start_ts, "
                    "end_ts, end_inferred, live, first_seen, last_seen) VALUES (?, ?, 'ns', ?, 'apps/v1.Deployment', 'ns', 'web', "
                    "5, 3, NULL, 0, 1, ?, ?)",
                    [(4, "p4", "web-a", 3.5, 9.0), (9, "p9", "web-b", 4.5, 9.0)],
                )
            cache.checkpoint()


def _columns(cache: object, table: str) -> list[str]:
    return [row[1] for row in cache.conn.execute(f"PRAGMA table_info({table})")]  # type: ignore[attr-defined]


def test_0003_drops_the_columns_nothing_read_and_keeps_every_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.db"
    _schema_2_cache(path, monkeypatch)
    with open_cache(path, create=False) as cache:
        assert cache.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 19
        assert _columns(cache, "objects") == ["gvk", "namespace", "name", "uid", "spec_hash", "meta_hash", "data_hash"]
        assert "last_seen" not in _columns(cache, "pods") and "first_seen" in _columns(cache, "pods")
        assert cache.conn.execute("SELECT * FROM objects").fetchall() == [("apps/v1.Deployment", "ns", "web", "d1", 7, None, None)]
        assert cache.conn.execute("SELECT id, uid, name, owner_name, stable_hash, start_ts, live, first_seen FROM pods ORDER BY id").fetchall() == [
            (4, "p4", "web-a", "web", 5, 3, 1, 3.5), (9, "p9", "web-b", "web", 5, 3, 1, 4.5)]
        indexes = {row[0] for row in cache.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'pods'")}
        assert "pods_owner" in indexes
        assert cache.conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_cache_before_0003_is_still_read_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kubectl_sktrace.store.status import cache_status

    path = tmp_path / "c.db"
    _schema_2_cache(path, monkeypatch)
    before = _listing(tmp_path)
    with open_cache_readonly(path) as reader:
        assert reader.conn.execute("PRAGMA user_version").fetchone()[0] == 2
        status = cache_status(reader)
    assert _listing(tmp_path) == before
    assert status.schema_version == 2
    assert [(k.gvk, k.live) for k in status.kinds] == [("apps/v1.Deployment", 1)]


def test_0005_counts_and_lists_the_history_and_triggers_keep_them_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kubectl_sktrace.store import schema

    path = tmp_path / "c.db"
    insert = "INSERT INTO events (ts, recv, run_id, gvk, namespace, name, uid, op, inferred) VALUES (?, ?, 1, ?, ?, ?, 'u', ?, ?)"
    with monkeypatch.context() as patch:
        patch.setattr("kubectl_sktrace.store.connection.MIGRATIONS", schema.MIGRATIONS[:4])
        patch.setattr("kubectl_sktrace.store.connection.SCHEMA_VERSION", 4)
        with open_cache(path, create=True) as cache, cache.transaction() as conn:
            conn.executemany(insert, [(1, 1, "apps/v1.Deployment", "ns", "a", 0, 0), (2, 2, "apps/v1.Deployment", "ns", "a", 1, 1),
                                      (3, 3, "batch/v1.Job", "ns", "j", 0, 0)])
    with open_cache(path, create=False) as cache:
        conn = cache.conn
        counts = "SELECT gvk, namespace, op, inferred, n FROM event_counts ORDER BY 1, 3"
        assert conn.execute(counts).fetchall() == [
            ("apps/v1.Deployment", "ns", 0, 0, 1), ("apps/v1.Deployment", "ns", 1, 1, 1), ("batch/v1.Job", "ns", 0, 0, 1)]
        with cache.transaction():
            conn.execute(insert, (4, 4, "batch/v1.Job", "ns", "k", 0, 0))
            conn.execute(insert, (5, 5, "batch/v1.Job", "ns", "j", 0, 0))
            conn.execute("DELETE FROM events WHERE gvk = 'apps/v1.Deployment' AND op = 1")
        assert conn.execute(counts).fetchall() == [
            ("apps/v1.Deployment", "ns", 0, 0, 1), ("apps/v1.Deployment", "ns", 1, 1, 0), ("batch/v1.Job", "ns", 0, 0, 3)]
        assert conn.execute("SELECT name FROM event_objects ORDER BY 1").fetchall() == [("a",), ("j",), ("k",)]
        assert conn.execute("SELECT count(*) FROM events").fetchone() == (4,)


def test_a_migration_splits_into_statements_keeping_trigger_bodies_whole() -> None:
    from kubectl_sktrace.store.connection import _statements

    ddl = "CREATE TABLE t (a);\nCREATE TRIGGER g AFTER INSERT ON t BEGIN\n  INSERT INTO u VALUES (1);\n  DELETE FROM v;\nEND;\n"
    assert _statements(ddl) == ["CREATE TABLE t (a);", "CREATE TRIGGER g AFTER INSERT ON t BEGIN\n  INSERT INTO u VALUES (1);\n  DELETE FROM v;\nEND;"]


def test_0006_keeps_each_objects_last_row_from_the_rows_already_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kubectl_sktrace.store import schema

    path = tmp_path / "c.db"
    insert = "INSERT INTO events (ts, recv, run_id, gvk, namespace, name, uid, op) VALUES (?, ?, 1, 'batch/v1.Job', 'ns', ?, 'u', ?)"
    with monkeypatch.context() as patch:
        patch.setattr("kubectl_sktrace.store.connection.MIGRATIONS", schema.MIGRATIONS[:5])
        patch.setattr("kubectl_sktrace.store.connection.SCHEMA_VERSION", 5)
        with open_cache(path, create=True) as cache, cache.transaction() as conn:
            conn.executemany(insert, [(5, 5, "a", 0), (9, 9, "a", 1), (7, 12, "b", 1), (4, 13, "b", 0), (3, 3, "c", 0)])
    with open_cache(path, create=False) as cache:
        rows = "SELECT name, last_ts, last_id, last_op FROM event_objects ORDER BY name"
        assert cache.conn.execute(rows).fetchall() == [("a", 9, 2, 1), ("b", 7, 3, 1), ("c", 3, 5, 0)]
        assert "refs" in _columns(cache, "events")
        with cache.transaction() as conn:
            conn.execute(insert, (8, 20, "b", 0))  # stamped after b's last row: b's last now
            conn.execute(insert, (2, 21, "c", 1))  # stamped before c's last row: not its last
        assert cache.conn.execute(rows).fetchall() == [("a", 9, 2, 1), ("b", 8, 6, 0), ("c", 3, 5, 0)]
        assert cache.conn.execute("SELECT name FROM event_objects INDEXED BY event_objects_live WHERE last_op = 0 ORDER BY name").fetchall() == [
            ("b",), ("c",)]


def test_0007_reads_a_refusal_recorded_before_it_as_blind_time_until_its_runs_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kubectl_sktrace.store import history, schema

    path = tmp_path / "c.db"
    with monkeypatch.context() as patch:
        patch.setattr("kubectl_sktrace.store.connection.MIGRATIONS", schema.MIGRATIONS[:6])
        patch.setattr("kubectl_sktrace.store.connection.SCHEMA_VERSION", 6)
        with open_cache(path, create=True) as cache, cache.transaction() as conn:
            conn.execute("INSERT INTO runs (started, synced, stopped, clean, pid, config) VALUES (100, 101, 200, 1, 1, '')")
            conn.execute("INSERT INTO coverage_gaps (run_id, gvk, since, until, cause, detail) "
                         "VALUES (1, 'batch/v1.Job', 150, NULL, 'forbidden', 'forbidden: cannot list jobs.batch')")
    with open_cache(path, create=False) as cache:
        assert cache.conn.execute("PRAGMA user_version").fetchone()[0] == len(schema.MIGRATIONS)
        assert cache.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'coverage_gaps_cause'").fetchone() == (1,)
        assert history.coverage_gaps(cache) == [history.CoverageGap(1, 150, 200, "forbidden", ("batch/v1.Job",))]
        assert [(u.gvk, u.since, u.until) for u in history.unrecorded_kinds(cache, refused_at_end=True)] == [("batch/v1.Job", 150, 200)]
        assert history.unrecorded_kinds(cache) == [] and history.unserved_spans(cache) == []
