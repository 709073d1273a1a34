"""writer.Writer: the watch threads' sink that applies and writes under one lock, over a real sqlite cache."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from kubectl_sktrace.errors import CacheError, ForbiddenError
from kubectl_sktrace.model import POD, REPLICASET
from kubectl_sktrace.record import writer as writer_module
from kubectl_sktrace.record.ingest import Ingest
from kubectl_sktrace.record.writer import Writer
from kubectl_sktrace.store import open_cache
from kubectl_sktrace.store.recording import Recording
from tests.record.test_ingest import CONFIG, DEPLOY, T0, deployment, pod, replicaset


class Setup:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.cache = open_cache(path, create=True)
        self.rec = Recording(self.cache)
        self.run = self.rec.begin_run(started=T0, pid=1, config_yaml="")
        self.ingest = Ingest(recording=self.rec, run_id=self.run, config=CONFIG, owner_kinds={REPLICASET},
                             fetch_owner=lambda key: None, gap_start=None)
        self.clock_now = T0
        self.writer = Writer(self.ingest, self.rec, clock=lambda: self.clock_now)

    def committed(self, sql: str) -> list[tuple[Any, ...]]:
        """What another connection sees: only committed rows."""
        conn = sqlite3.connect(self.path)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()


@pytest.fixture
def s(tmp_path: Path) -> Iterator[Setup]:
    setup = Setup(tmp_path / "cache.db")
    yield setup
    setup.cache.close()


def list_kind(writer: Writer, gvk: Any, items: list[dict[str, Any]], rv: str = "10") -> None:
    writer.relist_begin(gvk, T0)
    writer.relist_page(gvk, items, T0)
    writer.relist_end(gvk, rv, T0)


def test_events_from_several_threads_all_land_and_are_committed_on_close(s: Setup) -> None:
    list_kind(s.writer, REPLICASET, [replicaset("rs", "r1", "web", "d1")])
    list_kind(s.writer, DEPLOY, [deployment("web", "d1")])
    list_kind(s.writer, POD, [])

    def feed(worker: int) -> None:
        for i in range(200):
            obj = pod(f"p{worker}-{i}", f"u{worker}-{i}", rs="rs", rs_uid="r1", started=T0 + 1)
            obj["metadata"]["resourceVersion"] = str(1000 + worker * 1000 + i)
            s.writer.event(POD, "ADDED", obj, T0 + 2)

    threads = [threading.Thread(target=feed, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s.writer.close(clean=True)
    assert s.committed("SELECT count(*) FROM pods WHERE owner_name = 'web'") == [(800,)]
    assert s.committed("SELECT count(*) FROM watch_state") == [(3,)]
    assert not s.writer.in_batch


def test_a_batch_is_committed_by_the_writing_thread_once_old_enough(s: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_module, "COMMIT_INTERVAL", 0.0)
    list_kind(s.writer, DEPLOY, [deployment("web", "d1")], rv="7")
    assert not s.writer.in_batch
    assert s.committed("SELECT name FROM events") == [("web",)]
    assert s.committed("SELECT resource_version FROM watch_state") == [("7",)]


def test_tick_commits_a_quiet_batch_and_leaves_a_busy_young_one_open(s: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_module, "IDLE_COMMIT", 60.0)
    list_kind(s.writer, DEPLOY, [deployment("web", "d1")])
    s.writer.tick()
    assert s.writer.in_batch and s.committed("SELECT name FROM events") == []
    monkeypatch.setattr(writer_module, "IDLE_COMMIT", 0.0)
    s.writer.tick()
    assert not s.writer.in_batch and s.committed("SELECT name FROM events") == [("web",)]


def test_tick_moves_the_heartbeat_of_an_idle_run(s: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_module, "HEARTBEAT", 0.0)
    s.clock_now = T0 + 42
    s.writer.tick()
    assert s.committed(f"SELECT stopped FROM runs WHERE id = {s.run}") == [(T0 + 42,)]
    assert not s.writer.in_batch


def test_mark_synced_commits_the_sync_with_its_mark(s: Setup) -> None:
    list_kind(s.writer, DEPLOY, [deployment("web", "d1")])
    s.writer.mark_synced(s.run, T0 + 3)
    assert s.committed(f"SELECT synced FROM runs WHERE id = {s.run}") == [(T0 + 3,)]
    assert s.committed("SELECT name FROM events") == [("web",)]


def test_close_unclean_rolls_back_and_nothing_is_written_after_close(s: Setup) -> None:
    list_kind(s.writer, DEPLOY, [deployment("web", "d1")])
    s.writer.close(clean=False)
    assert s.committed("SELECT count(*) FROM events") == [(0,)]
    s.writer.event(DEPLOY, "ADDED", deployment("late", "d9"), T0 + 5)
    s.writer.tick()
    assert not s.writer.in_batch
    assert s.cache.conn.execute("SELECT count(*) FROM events").fetchone() == (0,)


def test_a_cache_error_is_fatal_and_stops_all_writing(s: Setup) -> None:
    list_kind(s.writer, DEPLOY, [deployment("web", "d1")])
    error = CacheError("the cache is damaged")
    s.writer.failed(POD, error)
    assert s.writer.fatal is error
    s.writer.event(DEPLOY, "ADDED", deployment("late", "d9"), T0 + 5)
    assert "late" not in {k.name for k in s.ingest.live[DEPLOY]}
    assert s.writer.take_failures() == []


def test_other_failures_are_kept_for_the_main_thread_once(s: Setup) -> None:
    error = ForbiddenError("forbidden: cannot list pods", verb="list", resource="pods")
    s.writer.failed(POD, error)
    assert s.writer.fatal is None
    assert s.ingest.stats_for(POD).failed == str(error)
    assert s.writer.take_failures() == [(POD, error)]
    assert s.writer.take_failures() == []
    s.writer.close(clean=True)  # committed like any write: status remembers the kind this run did not record
    assert s.committed("SELECT run_id, gvk, since, until, cause, detail FROM coverage_gaps") == [
        (s.run, "v1.Pod", T0, None, "forbidden", "forbidden: cannot list pods")]


@pytest.mark.slow
def test_close_waits_for_a_write_in_progress(s: Setup) -> None:
    entered, release = threading.Event(), threading.Event()
    original = s.ingest.event

    def slow_event(*args: Any) -> None:
        entered.set()
        release.wait(5)
        original(*args)

    s.ingest.event = slow_event  # type: ignore[method-assign]
    writer_thread = threading.Thread(target=s.writer.event, args=(DEPLOY, "ADDED", deployment("web", "d1"), T0))
    writer_thread.start()
    assert entered.wait(5)
    closer = threading.Thread(target=s.writer.close, kwargs={"clean": True})
    closer.start()
    time.sleep(0.1)
    assert closer.is_alive()  # blocked on the lock the event holds
    release.set()
    writer_thread.join(5)
    closer.join(5)
    assert s.committed("SELECT name FROM events") == [("web",)]


def test_an_error_escaping_the_rules_is_fatal_to_the_run_not_to_one_kind(s: Setup) -> None:
    def broken(*args: Any) -> None:
        raise sqlite3.DatabaseError("database disk image is malformed")

    s.ingest.event = broken  # type: ignore[method-assign]
    with pytest.raises(sqlite3.DatabaseError):
        s.writer.event(POD, "MODIFIED", pod("p", "u1", rs=None), T0)
    assert isinstance(s.writer.fatal, sqlite3.DatabaseError)
    s.writer.failed(POD, s.writer.fatal)  # what the watch thread reports next: not a kind failure
    assert s.writer.take_failures() == [] and s.ingest.stats_for(POD).failed is None
    s.writer.relist_begin(DEPLOY, T0)  # nothing more is written
    assert DEPLOY not in s.ingest._relists


# -- waking the main thread: no polling ------------------------------------------------------------------


def sleep_in_thread(writer: Writer, seconds: float) -> tuple[threading.Thread, list[float]]:
    woke: list[float] = []

    def sleeper() -> None:
        started = time.monotonic()
        writer.sleep(seconds)
        woke.append(time.monotonic() - started)

    thread = threading.Thread(target=sleeper)
    thread.start()
    time.sleep(0.1)
    return thread, woke


@pytest.mark.slow
def test_sleep_ends_when_a_batch_opens_not_on_each_write(s: Setup) -> None:
    list_kind(s.writer, POD, [])
    time.sleep(writer_module.IDLE_COMMIT + 0.01)
    s.writer.tick()  # commits the quiet relist: no batch open
    s.writer.sleep(0)  # forget the wakeups of the relist
    thread, woke = sleep_in_thread(s.writer, 5.0)
    s.writer.event(POD, "ADDED", pod("p1", "u1", rs=None), T0)
    thread.join(2)
    assert woke and woke[0] < 1.0
    thread, woke = sleep_in_thread(s.writer, 0.5)
    s.writer.event(POD, "MODIFIED", pod("p1", "u1", rs=None), T0)  # the batch is already open: nothing to tell
    thread.join(2)
    assert woke and woke[0] >= 0.45


@pytest.mark.slow
def test_sleep_ends_on_news_and_raises_a_fatal_error(s: Setup) -> None:
    thread, woke = sleep_in_thread(s.writer, 5.0)
    s.writer.interrupted(POD, T0, "API unreachable", "refused")
    thread.join(2)
    assert woke and woke[0] < 1.0 and s.writer.news == 1
    s.writer.failed(POD, CacheError("disk full"))
    with pytest.raises(CacheError):
        s.writer.sleep(5.0)


@pytest.mark.slow
def test_sleep_ends_when_the_followed_stop_is_set(s: Setup) -> None:
    stop = threading.Event()
    s.writer.follow(stop)
    thread, woke = sleep_in_thread(s.writer, 5.0)
    stop.set()
    thread.join(2)
    assert woke and woke[0] < 1.0


@pytest.mark.slow
def test_next_due_is_the_quiet_check_then_the_batch_age_then_the_heartbeat(s: Setup) -> None:
    list_kind(s.writer, POD, [])
    time.sleep(writer_module.IDLE_COMMIT + 0.01)
    s.writer.tick()
    now = time.monotonic()
    assert now < s.writer.next_due(now) <= now + writer_module.HEARTBEAT
    s.writer.event(POD, "ADDED", pod("p1", "u1", rs=None), T0)
    opened = time.monotonic()
    due = s.writer.next_due(opened)
    assert opened - 0.05 < due - writer_module.IDLE_COMMIT <= opened
    later = due + 0.001
    assert s.writer.next_due(later) == due - writer_module.IDLE_COMMIT + writer_module.COMMIT_INTERVAL
