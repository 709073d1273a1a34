"""retention: ``start --retain``'s decisions (pure), its passes over a real cache with a scripted clock and writer,
and a real run against the emulator on both engines."""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, TypeVar

import pytest
from conftest import CacheBuilder, location, obj
from reliability_support import Notes

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.record.retention import (
    DEFAULT_EVERY,
    MAX_LINK_ROWS,
    MIN_LINK_ROWS,
    PassReport,
    Retention,
    RetentionPolicy,
    cutoff_at,
    next_link_rows,
    pass_line,
    retention_policy,
)
from kubectl_sktrace.store import open_cache
from kubectl_sktrace.store.pruning import prune_before
from kubectl_sktrace.timeparse import format_time

T = TypeVar("T")


@pytest.mark.parametrize(("rows", "took", "expected"), [
    pytest.param(2000, 0.25, 2000, id="on-target"),
    pytest.param(2000, 0.1, 4000, id="fast-grows-at-most-twice"),
    pytest.param(2000, 0.0, 4000, id="instant"),
    pytest.param(2000, 0.5, 1000, id="slow-halves"),
    pytest.param(2000, 5.0, 500, id="very-slow-shrinks-at-most-four-times"),
    pytest.param(150, 1.0, MIN_LINK_ROWS, id="floor"),
    pytest.param(MAX_LINK_ROWS, 0.01, MAX_LINK_ROWS, id="ceiling"),
])
def test_next_link_rows(rows: int, took: float, expected: int) -> None:
    assert next_link_rows(rows, took) == expected


@pytest.mark.parametrize(("now", "retain", "cutoff"), [
    pytest.param(1_000_000.9, 100.0, 999_900, id="rounded-down"),
    pytest.param(2_592_000.0 + 5, 2_592_000.0, 5, id="30d"),
])
def test_cutoff_at(now: float, retain: float, cutoff: int) -> None:
    assert cutoff_at(now, retain) == cutoff


def test_retention_policy_reads_the_flag() -> None:
    assert retention_policy(None) is None
    assert retention_policy("30d") == RetentionPolicy(retain=30 * 86400, every=DEFAULT_EVERY) and DEFAULT_EVERY == 3600
    with pytest.raises(UsageError, match="invalid duration 'a month'"):
        retention_policy("a month")
    assert retention_policy("30s") == RetentionPolicy(retain=30, every=DEFAULT_EVERY)  # a unit, even seconds, is meant
    with pytest.raises(UsageError, match="it must be longer than zero"):  # not "give it a unit, like '0d'"
        retention_policy("0")
    for bare in ("30", " 7 ", "1.5"):
        with pytest.raises(UsageError, match=r"give it a unit, like '.*d' \(.* days\)"):
            retention_policy(bare)


def test_pass_line() -> None:
    report = PassReport(cutoff=1_788_220_800, events_removed=12_345, pods_removed=1, links=3, longest=0.2712, bytes_after=0)
    assert pass_line(report, "30d") == ("Retention (30d): pruned 12,345 events and 1 finished pod recorded before 2026-09-01T00:00:00Z "
                                        "(3 links, the longest holding the writer 0.27 s).")


class LockedWriter:
    """``Writer.exclusive`` without the rest: work under a lock, nothing once closed."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.closed = False
        self.calls = 0

    def exclusive(self, work: Callable[[], T]) -> T | None:
        with self.lock:
            if self.closed:
                return None
            self.calls += 1
            return work()


def history(path: Path, *, seconds: int) -> None:
    """One Deployment scaled every second, and a ConfigMap changed every third second, for ``seconds`` seconds."""
    b = CacheBuilder(path)
    b.run(started=0, stopped=seconds + 1)
    for ts in range(seconds):
        b.apply(ts, obj("Deployment", "web", spec={"replicas": ts}))
        if ts % 3 == 0:
            b.apply(ts, obj("ConfigMap", "settings", spec={"version": ts}))
    b.close()


def rows(path: Path) -> list[tuple[Any, ...]]:
    with open_cache(path, create=False) as cache:
        return [tuple(r) for r in cache.conn.execute("SELECT ts, name, op FROM events ORDER BY ts, name")]


def test_passes_prune_in_links_to_what_one_prune_keeps_then_wait_for_the_cadence(tmp_path: Path) -> None:
    """Three passes an hour apart on a scripted clock: the first walks the backlog in short links (the lock free
    between two of them), each cuts ``retain`` before its time, and what stays is what ``prune`` keeps."""
    path, control = tmp_path / "cache.db", tmp_path / "control.db"
    history(path, seconds=1200)
    shutil.copy(path, control)
    now = [1000.0]
    waits: list[float] = []

    def wait(seconds: float) -> bool:
        waits.append(seconds)
        if seconds == 3600:
            now[0] += 100  # the next pass, 100 s of history later
        return len([w for w in waits if w == 3600]) == 3

    told: list[str] = []
    writer = LockedWriter()
    ticks = iter(range(10_000))
    with open_cache(path, create=False) as cache:
        retention = Retention(policy=RetentionPolicy(retain=100), cache=cache, writer=writer, wait=wait, tell=told.append, retain_text="100s",
                              clock=lambda: now[0], monotonic=lambda: next(ticks) * 0.25)  # every link holds the lock 0.25 s
        retention.rows = 100
        retention.run()
    assert retention.passes == 3 and retention.last is not None and retention.last.cutoff == 1100
    passes = " ".join("L" if w == 0.25 else "P" if w == 3600 else str(w) for w in waits).split("P")
    assert [len(p.split()) for p in passes] == [11, 1, 1, 0]  # the links of each pass but its last, then the cadence
    assert writer.calls == 12 + 2 + 2
    assert told == [  # the backlog: everything before 900 s but each object's last version; then 100 s of history each
        "Retention (100s): pruned 1,198 events recorded before 1970-01-01T00:15:00Z (12 links, the longest holding the writer 0.25 s).",
        "Retention (100s): pruned 134 events recorded before 1970-01-01T00:16:40Z (2 links, the longest holding the writer 0.25 s).",
        "Retention (100s): pruned 133 events recorded before 1970-01-01T00:18:20Z (2 links, the longest holding the writer 0.25 s).",
    ]
    with open_cache(control, create=False) as cache:
        prune_before(cache, before=1100)
    assert rows(path) == rows(control)
    assert [r for r in rows(path) if r[0] < 1100] == [(1098, "settings", 0), (1099, "web", 0)]


def test_a_pass_stops_with_the_run(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    history(path, seconds=300)
    writer = LockedWriter()
    writer.closed = True
    with open_cache(path, create=False) as cache:
        retention = Retention(policy=RetentionPolicy(retain=10), cache=cache, writer=writer, wait=lambda s: True, tell=print,
                              retain_text="10s", clock=lambda: 300.0)
        assert retention.prune_pass() is None
    assert len(rows(path)) == 400


# -- a real run -----------------------------------------------------------------------------------------


def scale_every(emulator: Any, seconds: float, stop: threading.Event) -> None:
    replicas = 1
    while not stop.wait(seconds):
        replicas = replicas % 5 + 1
        emulator.patch("apps/v1", "Deployment", "default", "web", {"spec": {"replicas": replicas}})


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_the_running_recorder_prunes_what_is_older_than_retain(engine: str, emulator: Any, emulator_kubeconfig: str) -> None:
    """``start --retain 2s``, passes every half second, while a Deployment is scaled four times a second: the
    versions older than the retained time go, its last version before it stays, and the run's retention is stored."""
    from kubectl_sktrace.record.starting import StartOptions, start
    from kubectl_sktrace.record.status import load_status, status_to_dict

    emulator.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
                     "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                              "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    stop = threading.Event()
    scaler = threading.Thread(target=scale_every, args=(emulator, 0.25, stop), daemon=True)
    scaler.start()
    notes = Notes()
    try:
        summary = start(StartOptions(kubeconfig=emulator_kubeconfig, context=None, namespace=None, cache=engine, config_path=None,
                                     duration=6.0, quiet=False, retention=RetentionPolicy(retain=2, every=0.5)), progress=notes)
    finally:
        stop.set()
    pruned = [line for line in notes.lines if line.startswith("Retention (2s): pruned ")]
    assert pruned, notes.lines
    with open_cache(location(engine, "emulator"), create=False) as cache:
        web = cache.conn.execute("SELECT ts, op FROM events WHERE name = 'web' ORDER BY ts, id").fetchall()
    cutoff = int(summary.stopped) - 4  # the last pass cut at least this late
    assert len([ts for ts, _ in web if ts < cutoff]) <= 1, web
    assert len(web) >= 6  # what the last seconds recorded stays
    assert summary.events >= len(web) + 4
    data = status_to_dict(load_status(cache=engine, kubeconfig=emulator_kubeconfig, context=None))
    assert data["retention"] == {"run": summary.run_id, "retain": "2s", "retainSeconds": 2.0}
    # what --retain cut is recorded: status shows it, an export reaching before it says so, one wholly before it is refused
    ((by,),) = [tuple(p for p in data["pruned"]["by"])]
    assert by["source"] == "retain" and by["eventsRemoved"] > 0 and data["pruned"]["before"] == by["before"]
    from kubectl_sktrace.errors import EmptyTraceError
    from kubectl_sktrace.export.options import ExportFilters
    from kubectl_sktrace.export.window import export_to
    from kubectl_sktrace.store import open_cache_readonly
    from kubectl_sktrace.store.pruning import pruned_before

    with open_cache_readonly(location(engine, "emulator")) as cache:
        cut = pruned_before(cache)
    assert cut is not None and cutoff <= cut <= summary.stopped
    out = Path(tempfile.mkdtemp()) / "t.json"
    report = export_to(location(engine, "emulator"), str(out), start_ts=int(summary.started), end_ts=int(summary.stopped),
                       filters=ExportFilters(include_namespaces=frozenset({"default"})), keep_status=False, fmt="json",
                       allow_empty=False, stdout=sys.stdout.buffer)
    assert any(f"history before {format_time(cut)} was pruned" in w for w in report.warnings), report.warnings
    with pytest.raises(EmptyTraceError, match="where the cache's history was pruned"):
        export_to(location(engine, "emulator"), str(out), start_ts=int(summary.started), end_ts=cut, filters=ExportFilters(),
                  keep_status=False, fmt="json", allow_empty=False, stdout=sys.stdout.buffer)


def test_a_failed_pass_is_logged_and_the_next_one_runs(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "cache.db"
    history(path, seconds=300)
    waits: list[float] = []

    class Failing(LockedWriter):
        def exclusive(self, work: Callable[[], T]) -> T | None:
            if self.calls == 0:
                self.calls += 1
                raise OSError("disk I/O error")
            return super().exclusive(work)

    def wait(seconds: float) -> bool:
        waits.append(seconds)
        return len(waits) == 2

    with open_cache(path, create=False) as cache:
        retention = Retention(policy=RetentionPolicy(retain=10), cache=cache, writer=Failing(), wait=wait, tell=lambda line: None,
                              retain_text="10s", clock=lambda: 300.0)
        retention.run()
    assert caplog.messages == ["retention: pruning failed (disk I/O error); history older than 10s is kept until the next pass"]
    assert waits == [3600.0, 3600.0] and retention.passes == 1 and len(rows(path)) == 2 + 10 + 3  # the last versions, then 10 s
