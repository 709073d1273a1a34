"""Schema 0011 on both engines: a cache recorded before it migrates with its history whole, the revisions it then
holds read back (live index, counts, the state at a time, a revision made whole), and a kubectl-sktrace that knows
only 0010 refuses the migrated cache instead of misreading its revisions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import location
from olderschema import assert_refused_at, at_schema

from kubectl_sktrace.model import GVK, LiveObject, ObjKey
from kubectl_sktrace.store import history, open_cache, open_cache_readonly, schema
from kubectl_sktrace.store.recording import EventRow, Recording
from kubectl_sktrace.store.status import cache_status
from kubectl_sktrace.store.versions import METADATA
from kubectl_sktrace.trace.revisions import revision_body

pytestmark = pytest.mark.timeout(120)

DEPLOY = GVK("apps", "v1", "Deployment")
KEY = ObjKey(DEPLOY, "shop", "web")
T0 = 1_800_000_000


def _body(labels: dict[str, str], replicas: int = 1) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop", "labels": labels,
                                                                       "annotations": {}},
            "spec": {"replicas": replicas}, "status": {"replicas": replicas}}


def _record_before_0011(where: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    patch = at_schema(monkeypatch, 10)
    try:
        with open_cache(where, create=True) as cache:
            rec = Recording(cache)
            run = rec.begin_run(started=T0, pid=1, config_yaml="trackedObjects: {}\n")
            with rec.batch():
                rec.append_event(run, EventRow(ts=T0, recv=T0, key=KEY, uid="u1", op=0, spec_hash=7, body=_body({"app": "web"})))
                cache.conn.execute("INSERT INTO objects (gvk, namespace, name, uid, spec_hash) VALUES (?, ?, ?, ?, ?)",
                                   (str(DEPLOY), "shop", "web", "u1", 7))
            rec.stop_run(run, T0 + 10, clean=True)
    finally:
        patch.__exit__(None, None, None)


def test_a_cache_before_0011_migrates_and_its_revisions_read_back(engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    where = location(engine)
    _record_before_0011(where, monkeypatch)
    with open_cache(where, create=False) as cache:
        assert cache.schema_version() == len(schema.MIGRATIONS) == 19
        rec = Recording(cache)
        assert rec.load_live_objects() == {KEY: LiveObject("u1", 7, None, None)}  # what changed before 0011 is not known
        run = rec.begin_run(started=T0 + 20, pid=1, config_yaml="trackedObjects: {}\n")
        with rec.batch():
            rec.append_event(run, EventRow(ts=T0 + 21, recv=T0 + 21, key=KEY, uid="u1", op=METADATA, spec_hash=7,
                                           body=revision_body(_body({"app": "web", "tier": "frontend"}))))
            rec.upsert_object(KEY, uid="u1", spec_hash=7, meta_hash=11, data_hash=None)
        rec.stop_run(run, T0 + 30, clean=True)
        assert rec.load_live_objects() == {KEY: LiveObject("u1", 7, 11, None)}
        # the object whose last row is a revision still exists for the index the state at a time reads
        assert cache.conn.execute("SELECT last_op FROM event_objects").fetchall() == [(0,)]
    with open_cache_readonly(where) as cache:
        (kind,) = cache_status(cache).kinds
        assert (kind.applied, kind.metadata, kind.data, kind.live) == (1, 1, 0, 1)
        spec_only = list(history.state_at(cache, ts=T0 + 25, known=T0 + 30))
        every = list(history.state_at(cache, ts=T0 + 25, known=T0 + 30, revisions=True))
        assert [e.op for e in spec_only] == [0] and spec_only[0].without_status()["metadata"]["labels"] == {"app": "web"}
        (made,) = every
        assert made.op == METADATA and made.body == {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web", "tier": "frontend"}, "annotations": {}},
            "spec": {"replicas": 1}, "status": {"replicas": 1}}
        (last,) = history.last_applied_before(cache, ts=T0 + 25, known=T0 + 30)
        assert last.spec_hash == 7 and last.without_status()["metadata"]["labels"]["tier"] == "frontend"


def test_a_kubectl_sktrace_before_0011_refuses_a_migrated_cache(engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    where = location(engine)
    _record_before_0011(where, monkeypatch)
    with open_cache(where, create=False):
        pass  # migrated to 0011
    assert_refused_at(where, monkeypatch, 10)


def test_a_prune_keeps_the_last_revision_and_its_base(engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a later window reads of an object is what it read before the prune: its last spec (SimKube's state) and
    its last version of any change, made whole from that spec."""
    from kubectl_sktrace.store.pruning import prune_before

    where = location(engine)
    with open_cache(where, create=True) as cache:
        rec = Recording(cache)
        run = rec.begin_run(started=T0, pid=1, config_yaml="trackedObjects: {}\n")
        with rec.batch():
            rec.append_event(run, EventRow(ts=T0, recv=T0, key=KEY, uid="u1", op=0, spec_hash=7, body=_body({"app": "web"})))
            rec.append_event(run, EventRow(ts=T0 + 5, recv=T0 + 5, key=KEY, uid="u1", op=0, spec_hash=8, body=_body({"app": "web"}, 2)))
            for n in range(3):
                rec.append_event(run, EventRow(ts=T0 + 10 + n, recv=T0 + 10 + n, key=KEY, uid="u1", op=METADATA, spec_hash=8,
                                               body=revision_body(_body({"app": "web", "release": f"r{n}"}, 2))))
            rec.heartbeat(run, T0 + 100)
            rec.mark_synced(run, T0)
        rec.stop_run(run, T0 + 100, clean=True)

        def read() -> tuple[Any, ...]:
            state = [e.body for e in history.state_at(cache, ts=T0 + 50, known=T0 + 100)]
            every = [e.body for e in history.state_at(cache, ts=T0 + 50, known=T0 + 100, revisions=True)]
            return state, every

        before = read()
        prune_before(cache, before=T0 + 50, compact=False)
        assert read() == before
        assert before[1][0]["metadata"]["labels"]["release"] == "r2" and before[1][0]["spec"] == {"replicas": 2}
        assert [op for (op,) in cache.conn.execute("SELECT op FROM events ORDER BY id")] == [0, 3]
