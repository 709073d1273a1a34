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


# -- the lock order: nothing shared is held while waiting on the network (docs/architecture.md) --------------------

from kubectl_sktrace.errors import ThrottledError  # noqa: E402
from kubectl_sktrace.model import ObjKey  # noqa: E402
from kubectl_sktrace.record.ingest import Ingest as _Ingest  # noqa: E402
from kubectl_sktrace.record.throttle import Throttle  # noqa: E402
from kubectl_sktrace.record.writer import LockOrderError, WriterStuck  # noqa: E402

ALL = frozenset({DEPLOY, REPLICASET, POD})


class Remote:
    """The cluster's owners, fetched through a real ``Throttle`` (its listener and guard wired as ``start`` wires them):
    each GET notes whether its thread held the writer's lock; the first ``throttled`` GETs meet a 429."""

    def __init__(self, tmp_path: Path, *, throttled: int = 0) -> None:
        self.cache = open_cache(tmp_path / "cache.db", create=True)
        self.rec = Recording(self.cache)
        run = self.rec.begin_run(started=T0, pid=1, config_yaml="")
        self.objects: dict[ObjKey, dict[str, Any]] = {}
        self.fetched: list[tuple[ObjKey, bool]] = []  # (key, the writer's lock held by the fetching thread)
        self.throttled = throttled
        self.stop = threading.Event()
        self.throttle = Throttle(clock=time.time, stop=self.stop, sleep=lambda seconds: False)
        self.ingest = _Ingest(recording=self.rec, run_id=run, config=CONFIG, owner_kinds={REPLICASET}, fetch_owner=self.fetch,
                              gap_start=None, initial_kinds=ALL)
        self.writer = Writer(self.ingest, self.rec, clock=time.time)
        self.throttle.listen(self.writer.throttled)
        self.throttle.guard(self.writer.lock.refuse_requests)

    def fetch(self, key: ObjKey) -> dict[str, Any] | None:
        def get() -> dict[str, Any] | None:
            self.fetched.append((key, self.writer.lock.held_here()))
            if self.throttled > 0:
                self.throttled -= 1
                raise ThrottledError("Too many requests, please try again later.", retry_after=1)
            return self.objects.get(key)
        return self.throttle.call(key.gvk, get)

    def owner_of(self, pod_name: str) -> Any:
        return self.cache.conn.execute("SELECT owner_name FROM pods WHERE name = ?", (pod_name,)).fetchone()[0]


def in_thread(work: Any, *, seconds: float = 10.0) -> None:
    """Run ``work`` on a watch-like thread; a thread still blocked after ``seconds`` is a deadlock."""
    failure: list[BaseException] = []

    def target() -> None:
        try:
            work()
        except BaseException as exc:  # noqa: BLE001 - re-raised on the test's thread
            failure.append(exc)

    thread = threading.Thread(target=target, name="watch", daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the writer deadlocked"
    if failure:
        raise failure[0]


def test_a_throttled_owner_lookup_when_a_relist_ends_neither_deadlocks_nor_is_made_under_the_lock(tmp_path: Path) -> None:
    """The recorder's hang on a saturated priority level: the last owner kind's list ends, the pods seen before it are
    resolved, one's owner must be fetched, and that GET meets a 429."""
    r = Remote(tmp_path, throttled=1)
    job_rs = ObjKey(REPLICASET, "ns", "web-2")
    r.objects[job_rs] = replicaset("web-2", "r5", "web", "d1")
    in_thread(lambda: list_kind(r.writer, POD, [pod("web-2-a", "p5", rs="web-2", rs_uid="r5", started=T0)]))
    in_thread(lambda: list_kind(r.writer, DEPLOY, [deployment("web", "d1")]))
    in_thread(lambda: list_kind(r.writer, REPLICASET, []))  # its end resolves the pod: a GET, throttled once
    r.writer.close(clean=True)
    assert r.fetched == [(job_rs, False), (job_rs, False)]  # the 429, then the same request again; never under the lock
    assert r.owner_of("web-2-a") == "web"
    assert r.throttle.counts() == {str(REPLICASET): 1}


def test_owners_fetched_by_the_writer_resolve_as_a_get_in_place_does(tmp_path: Path) -> None:
    """The same pods as ``test_ingest``'s owner cases: a known owner, an unknown one fetched once, a lost one."""
    r = Remote(tmp_path)
    r.objects[ObjKey(REPLICASET, "ns", "web-2")] = replicaset("web-2", "r5", "web", "d1")
    list_kind(r.writer, DEPLOY, [deployment("web", "d1")])
    list_kind(r.writer, REPLICASET, [replicaset("web-1", "r1", "web", "d1")])
    list_kind(r.writer, POD, [pod("web-1-a", "p1", rs="web-1", rs_uid="r1", started=T0),
                              pod("web-2-a", "p5", rs="web-2", rs_uid="r5", started=T0),
                              pod("web-2-b", "p6", rs="web-2", rs_uid="r5", started=T0)])
    r.writer.event(POD, "ADDED", pod("lost-a", "p7", rs="lost", rs_uid="r9", started=T0), T0 + 1)
    r.writer.close(clean=True)
    assert r.fetched == [(ObjKey(REPLICASET, "ns", "web-2"), False), (ObjKey(REPLICASET, "ns", "lost"), False)]
    assert [r.owner_of(p) for p in ("web-1-a", "web-2-a", "web-2-b", "lost-a")] == ["web", "web", "web", None]
    assert r.cache.conn.execute("SELECT uid FROM owners WHERE name='web-2'").fetchone() == ("r5",)


def test_a_request_from_a_thread_holding_the_writers_lock_is_refused(tmp_path: Path) -> None:
    r = Remote(tmp_path)
    with r.writer.lock:
        with pytest.raises(LockOrderError, match="while holding the cache writer's lock"):
            r.fetch(ObjKey(REPLICASET, "ns", "any"))
    assert r.fetched == []
    r.fetch(ObjKey(REPLICASET, "ns", "any"))  # released: allowed
    assert r.fetched == [(ObjKey(REPLICASET, "ns", "any"), False)]


def _hold_for_good(writer: Writer) -> threading.Event:
    """A thread that takes the writer's lock and keeps it (a write that never returns); set the event to free it."""
    taken, free = threading.Event(), threading.Event()

    def target() -> None:
        with writer.lock:
            taken.set()
            free.wait(60)

    threading.Thread(target=target, name="watch apps/v1.Deployment", daemon=True).start()
    assert taken.wait(5)
    return free


def test_the_main_thread_gives_up_a_lock_held_past_the_bound(s: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_module, "STUCK_AFTER", 1.0)
    free = _hold_for_good(s.writer)
    began = time.monotonic()
    try:
        with pytest.raises(WriterStuck, match="thread 'watch apps/v1.Deployment' has held the cache writer's lock since"):
            s.writer.tick()
    finally:
        free.set()
    assert 1.0 <= time.monotonic() - began < 1.0 + 2 * writer_module.HOLD_SLICE + 1.0


def test_a_stop_gives_a_stuck_holder_only_the_grace(s: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_module, "STOP_GRACE", 0.5)
    stop = threading.Event()
    s.writer.follow(stop)
    free = _hold_for_good(s.writer)
    try:
        stop.set()
        began = time.monotonic()
        with pytest.raises(WriterStuck):
            s.writer.close(clean=True)
        assert time.monotonic() - began < writer_module.STUCK_AFTER / 2
    finally:
        free.set()


def test_a_lock_held_briefly_is_waited_for(s: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_module, "STOP_GRACE", 60.0)
    free = _hold_for_good(s.writer)
    threading.Timer(2 * writer_module.HOLD_SLICE, free.set).start()
    assert s.writer.take_failures() == []  # waited for, across slices, without giving up


def test_an_owner_fetched_in_a_shape_the_api_never_sends_is_skipped_not_fatal(tmp_path: Path) -> None:
    """A GET answered with an object without a name: the owner cannot be resolved, and the run goes on."""
    r = Remote(tmp_path)
    r.objects[ObjKey(REPLICASET, "ns", "odd")] = {"metadata": {"uid": "r5"}}
    list_kind(r.writer, DEPLOY, [deployment("web", "d1")])
    list_kind(r.writer, REPLICASET, [])
    list_kind(r.writer, POD, [pod("odd-a", "p5", rs="odd", rs_uid="r5", started=T0)])
    r.writer.close(clean=True)
    assert r.writer.fatal is None
    assert r.owner_of("odd-a") is None
