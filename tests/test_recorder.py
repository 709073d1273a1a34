"""recorder.Session's planning and launch, on a fake cluster and a scripted watch loop (no HTTP, no threads of ours
beyond the Session's own): which kinds list when, and when the run is marked synced."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from kubectl_sktrace.ingest import KindStats
from kubectl_sktrace.kube import Resource
from kubectl_sktrace.model import DEPLOYMENT, GVK, POD, REPLICASET
from kubectl_sktrace.recorder import Session
from kubectl_sktrace.store import open_cache
from kubectl_sktrace.store.recording import Identity, Recording
from kubectl_sktrace.tracerconfig import default_config
from kubectl_sktrace.writer import Writer

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
