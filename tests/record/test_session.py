"""recorder.Session's planning and launch, on a fake cluster and a scripted watch loop (no HTTP, no threads of ours
beyond the Session's own): which kinds list when, and when the run is marked synced."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from kubectl_sktrace.kube.discovery import Resource
from kubectl_sktrace.model import DEPLOYMENT, GVK, POD, REPLICASET
from kubectl_sktrace.record.ingest import KindStats
from kubectl_sktrace.record.session import Session
from kubectl_sktrace.record.writer import Writer
from kubectl_sktrace.store import open_cache
from kubectl_sktrace.store.recording import Identity, Recording
from kubectl_sktrace.tracerconfig import default_config

pytestmark = pytest.mark.timeout(20)

PLURALS = {DEPLOYMENT: "deployments", REPLICASET: "replicasets", POD: "pods"}


class Cluster:
    """Serves Deployments, ReplicaSets and Pods, and nothing else."""

    def discover(self, gvks: Any, *, cached: Any = None) -> tuple[dict[GVK, Resource], dict[str, Any]]:
        return {g: Resource(gvk=g, plural=p, namespaced=True, verbs=frozenset({"list", "watch"})) for g, p in PLURALS.items()}, {}

    def list_page(self, *args: Any, **kw: Any) -> dict[str, Any]:
        raise AssertionError("the scripted watch loop lists nothing")

    watch = get = list_page


class Quiet:
    def kind_progress(self, gvk: GVK, stats: KindStats) -> None: ...
    def synced(self, seconds: float) -> None: ...
    def live(self, **kw: Any) -> None: ...
    def warn(self, message: str) -> None: ...
    def note(self, message: str) -> None: ...
    def reconciled(self, report: Any) -> None: ...
    def close(self) -> None: ...


@pytest.fixture
def rec(tmp_path: Path) -> Iterator[Recording]:
    cache = open_cache(tmp_path / "cache.db", create=True)
    yield Recording(cache)
    cache.close()


@pytest.mark.slow
def test_pods_list_concurrently_with_the_other_kinds_and_the_run_syncs_once_all_listed(rec: Recording) -> None:
    """Every kind's list starts at once, pods included; the list that ends first (pods) deletes nothing and
    the sync mark waits for the last one."""
    stop = threading.Event()
    started: set[GVK] = set()
    every_kind_started = threading.Event()
    release = threading.Event()

    def run_watch(*, resource: Resource, sink: Writer, clock: Any, **kw: Any) -> None:
        gvk = resource.gvk
        started.add(gvk)
        if started == set(PLURALS):
            every_kind_started.set()
        sink.relist_begin(gvk, clock())
        if gvk != POD:
            release.wait(10)  # the other kinds list on while pods have listed
        sink.relist_end(gvk, "1", clock())
        stop.wait()

    session = Session(kube=Cluster(), recording=rec, config=default_config(),  # type: ignore[arg-type]
                      identity=Identity(server="https://fake", cluster_uid="u", context="c", namespace=""), namespace=None,
                      duration=None, stop=stop, progress=Quiet(), run_watch=run_watch)
    outcome: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("summary", session.run()))
    thread.start()
    try:
        assert every_kind_started.wait(5), f"only {sorted(map(str, started))} started"
        synced_early = _wait_synced(rec, 1.0)
        release.set()
        synced_late = _wait_synced(rec, 5.0)
    finally:
        release.set()
        stop.set()
        thread.join(10)
    assert not synced_early and synced_late
    assert outcome["summary"].synced is not None


def _wait_synced(rec: Recording, seconds: float) -> bool:
    import sqlite3
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        conn = sqlite3.connect(rec.cache.path, timeout=5)
        try:
            if conn.execute("SELECT 1 FROM runs WHERE synced IS NOT NULL").fetchone():
                return True
        finally:
            conn.close()
        time.sleep(0.05)
    return False


class Recorded(Quiet):
    def __init__(self) -> None:
        self.synced_calls = 0

    def synced(self, seconds: float) -> None:
        self.synced_calls += 1


def test_a_kind_given_up_while_the_round_reports_failures_is_checked_before_the_run_syncs(
    rec: Recording, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every kind is refused, the tracked one (Deployments) just after the main loop took the failures of the round:
    the run must end with the every-kind-failed error, never be marked synced first (a synced run would print
    'initial sync done' between the warnings and the error)."""
    from kubectl_sktrace.errors import ForbiddenError, KubeError

    stop = threading.Event()
    others_failed, inject, deployment_failed = threading.Event(), threading.Event(), threading.Event()
    original = Writer.take_failures

    def take_failures(self: Writer) -> list[tuple[GVK, BaseException]]:
        taken = original(self)
        if taken and not inject.is_set():  # the round that took the owner kinds' failures: now the tracked kind fails
            inject.set()
            assert deployment_failed.wait(5)
        return taken

    monkeypatch.setattr(Writer, "take_failures", take_failures)

    def run_watch(*, resource: Resource, sink: Writer, **kw: Any) -> None:
        gvk = resource.gvk
        if gvk == DEPLOYMENT:
            assert others_failed.wait(5) and inject.wait(5)
        sink.failed(gvk, ForbiddenError(f"forbidden: cannot list {resource.plural}", verb="list", resource=resource.plural))
        if gvk == DEPLOYMENT:
            deployment_failed.set()
        elif sum(1 for _ in filter(None, [sink.ingest.stats_for(g).failed for g in (POD, REPLICASET)])) == 2:
            others_failed.set()

    progress = Recorded()
    session = Session(kube=Cluster(), recording=rec, config=default_config(),  # type: ignore[arg-type]
                      identity=Identity(server="https://fake", cluster_uid="u", context="c", namespace=""), namespace=None,
                      duration=None, stop=stop, progress=progress, run_watch=run_watch)
    try:
        with pytest.raises(KubeError, match="forbidden"):
            session.run()
    finally:
        stop.set()
    assert progress.synced_calls == 0


def _listed_then_stuck(stuck_kind: GVK, taken: threading.Event, free: threading.Event) -> Any:
    """A scripted watch loop: every kind lists (empty); then ``stuck_kind``'s thread takes the writer's lock and keeps it,
    as a write that never returns would."""
    def run_watch(*, resource: Resource, sink: Writer, clock: Any, stop: threading.Event, **kw: Any) -> None:
        sink.relist_begin(resource.gvk, clock())
        sink.relist_end(resource.gvk, "1", clock())
        if resource.gvk == stuck_kind:
            stop.wait(0.5)  # recorded live for a moment
            with sink.lock:
                taken.set()
                free.wait(60)
        stop.wait()
    return run_watch


def _rows(rec: Recording) -> list[tuple[Any, ...]]:
    import sqlite3

    conn = sqlite3.connect(rec.cache.path, timeout=5)
    try:
        return conn.execute("SELECT synced IS NOT NULL, stopped, clean FROM runs").fetchall()
    finally:
        conn.close()


@pytest.mark.slow  # waits for a bound
@pytest.mark.parametrize("ended_by", ["duration", "signal", "bound"])
def test_a_stuck_writer_ends_the_run_on_time_with_what_was_committed(rec: Recording, monkeypatch: pytest.MonkeyPatch,
                                                                     ended_by: str) -> None:
    """A thread keeps the writer's lock: ``--duration`` and the first stop still end the run (after ``STOP_GRACE``), and
    without them the run ends ``STUCK_AFTER`` seconds in, saying what is stuck; the run keeps its last commit as its end."""
    import time

    from kubectl_sktrace.record import writer as writer_module
    from kubectl_sktrace.record.writer import WriterStuck

    monkeypatch.setattr(writer_module, "STOP_GRACE", 0.5)
    monkeypatch.setattr(writer_module, "STUCK_AFTER", 2.0 if ended_by == "bound" else 60.0)
    stop, taken, free = threading.Event(), threading.Event(), threading.Event()
    session = Session(kube=Cluster(), recording=rec, config=default_config(),  # type: ignore[arg-type]
                      identity=Identity(server="https://fake", cluster_uid="u", context="c", namespace=""), namespace=None,
                      duration=3.0 if ended_by == "duration" else None, stop=stop, progress=Quiet(),
                      run_watch=_listed_then_stuck(DEPLOYMENT, taken, free))
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            session.run()
        except WriterStuck as exc:
            outcome["error"] = exc
        outcome["ended"] = time.monotonic()

    thread = threading.Thread(target=run)
    began = time.monotonic()
    thread.start()
    try:
        assert taken.wait(10)
        stuck_at, stuck_wall = time.monotonic(), time.time()
        if ended_by == "signal":
            time.sleep(1.0)
            stop.set()
        thread.join(15)
        assert not thread.is_alive(), "the run did not end"
    finally:
        stop.set()
        free.set()
    assert "thread 'watch apps/v1.Deployment' has held the cache writer's lock since" in str(outcome["error"])
    due = {"duration": began + 3.0 + 0.5, "signal": stuck_at + 1.0 + 0.5, "bound": stuck_at + 2.0}[ended_by]
    assert due <= outcome["ended"] + 0.3 and outcome["ended"] < due + 2.0, (ended_by, outcome["ended"] - due)
    ((synced, stopped, clean),) = _rows(rec)
    assert synced and clean == 0 and stopped <= stuck_wall  # its end: the last commit, before the lock was taken


def test_the_cyclic_gc_is_off_while_the_kinds_list_and_on_again_once_synced(rec: Recording) -> None:
    """The lists' pages are acyclic, freed as each is ingested: collections during the initial sync would walk them for
    nothing (a tenth of its CPU). Once synced, and after the run, the collector runs as before."""
    import gc
    import time

    stop = threading.Event()
    seen: dict[str, bool] = {}

    def run_watch(*, resource: Resource, sink: Writer, clock: Any, **kw: Any) -> None:
        gvk = resource.gvk
        sink.relist_begin(gvk, clock())
        seen.setdefault("listing", gc.isenabled())
        sink.relist_end(gvk, "1", clock())
        if gvk == POD:
            if _wait_synced(rec, 5.0):
                deadline = time.monotonic() + 5  # the main thread turns it on in the round that marks the sync
                while not gc.isenabled() and time.monotonic() < deadline:
                    time.sleep(0.01)
                seen["synced"] = gc.isenabled()
            stop.set()
        stop.wait()

    assert gc.isenabled()
    session = Session(kube=Cluster(), recording=rec, config=default_config(),  # type: ignore[arg-type]
                      identity=Identity(server="https://fake", cluster_uid="u", context="c", namespace=""), namespace=None,
                      duration=None, stop=stop, progress=Quiet(), run_watch=run_watch)
    try:
        session.run()
    finally:
        stop.set()
    assert seen == {"listing": False, "synced": True} and gc.isenabled()
