"""store.connection: opening a cache to write (created, migrated) or only to read (nothing created or changed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubectl_sktrace.errors import CacheError
from kubectl_sktrace.store import SCHEMA_VERSION, WriterLock, open_cache, open_cache_readonly
from kubectl_sktrace.store.connection import writer_active


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


def test_start_records_into_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    path.touch()
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
