"""Status changes stored small (schema 0018, ``store/statuses``, ``store/statusforms``), on both engines: a run's rows of
an object are what changed since the last, whole every ``FULL_EVERY``-th; every reader folds them back to the same
states; a prune in the middle of a run writes the first row it leaves whole; a cache of 0016 migrates with its rows
read the same, and a copy of one read as it is carries them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import location
from olderschema import at_schema

from kubectl_sktrace.model import GVK, POD, ObjectHead, ObjKey
from kubectl_sktrace.record.statuses import StatusIndex
from kubectl_sktrace.store import open_cache, open_cache_readonly, statusforms
from kubectl_sktrace.store import statuses as stored
from kubectl_sktrace.store.bodies import encode_body
from kubectl_sktrace.store.copying import copy_history
from kubectl_sktrace.store.pruning import prune_before
from kubectl_sktrace.store.recording import Recording
from kubectl_sktrace.trace import statuses

pytestmark = pytest.mark.timeout(120)

DEPLOY = GVK("apps", "v1", "Deployment")
WEB = ObjKey(DEPLOY, "shop", "web")
T0 = 1_800_000_000


def web(ready: int, desired: int = 40) -> dict[str, Any]:
    return {"kind": "Deployment", "spec": {"replicas": desired}, "status": {"replicas": desired, "readyReplicas": ready, "conditions": [
        {"type": "Available", "status": "True" if ready == desired else "False",
         "reason": "MinimumReplicasAvailable" if ready == desired else "MinimumReplicasUnavailable"}]}}


def record(where: Any, steps: int) -> list[dict[str, Any]]:
    """``steps`` changes of web's readiness, one every ten seconds (a run of its own); returns their reductions."""
    states = []
    with open_cache(where, create=True) as cache:
        rec = Recording(cache)
        run = rec.begin_run(started=T0, pid=1, config_yaml="trackedObjects: {}\n")
        index = StatusIndex(rec, run, lambda recv: recv)
        with rec.batch():
            for n in range(steps):
                obj = web(n % 41)
                index.seen(ObjectHead(WEB, "u1", str(n), None, ()), obj, T0 + 10 * n + 0.25, inferred=False)
                states.append(statuses.reduce(obj))
        rec.stop_run(run, T0 + 10 * steps, clean=True)
    return states


def elsewhere(engine: str) -> Any:
    """Another cache of the same engine: a file beside, or another history of the database."""
    return location(engine, "copy") if engine.startswith("postgresql://") else Path(engine).with_name("copy.db")


def forms(cache: Any) -> list[int]:
    return [int(f) for (f,) in cache.conn.execute("SELECT form FROM status_changes ORDER BY id").fetchall()]


def test_a_runs_rows_are_deltas_whole_every_sixteenth_and_read_back_whole(engine: str) -> None:
    where = location(engine)
    states = record(where, 40)
    with open_cache_readonly(where) as cache:
        assert forms(cache) == [statusforms.FULL if n % stored.FULL_EVERY == 0 else statusforms.DELTA for n in range(40)]
        assert [r.reduced for r in stored.every_row(cache)] == states
        assert [(r.ts, r.reduced) for r in stored.history_of(cache, WEB, start=T0 + 175, end=T0 + 215)] == \
            [(T0 + 170, states[17]), *[(T0 + 10 * n, states[n]) for n in (18, 19, 20, 21)]]
        for n in (0, 7, 15, 16, 31, 39):
            assert stored.state_at(cache, at=T0 + 10 * n + 5)[WEB].reduced == states[n]
        row = stored.every_row(cache)[20]
        assert stored.change(cache, row.id) == (row, stored.every_row(cache)[19])
        ids = [r.id for r in stored.every_row(cache)]
        assert stored.band(cache, WEB, start=T0 + 200, end=T0 + 230) == [(T0 + 200, 19, 40, ids[19])] + [(T0 + 10 * n, n, 40, ids[n]) for n in (20, 21, 22)]
        small = cache.conn.execute("SELECT AVG(LENGTH(body)) FROM status_changes WHERE form = 0").fetchone()[0]
        assert small < 12  # a readiness count: a few bytes, its names and the reduction's said once per object


def test_a_prune_inside_a_run_leaves_its_first_row_whole_and_every_state_the_same(engine: str) -> None:
    where = location(engine)
    states = record(where, 40)
    with open_cache(where, create=False) as cache, cache.writer_lock():
        prune_before(cache, before=T0 + 205, compact=False)
        rows = stored.every_row(cache)
        assert [r.reduced for r in rows] == states[20:] and forms(cache)[0] == statusforms.FULL  # 20 was a delta of 19
        assert stored.state_at(cache, at=T0 + 207)[WEB].reduced == states[20]
        with open_cache(elsewhere(engine), create=True) as copy, copy.writer_lock():
            copy_history(cache, copy)
            assert stored.every_row(copy) == rows


def test_a_cache_of_0016_migrates_its_status_changes_whole(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    where = location(engine)
    states = [statuses.reduce(web(n)) for n in (1, 2, 40)] + [{"phase": "Running", "containers": {"c": {"ready": True, "restarts": -1}}}]
    patch = at_schema(monkeypatch, 16)
    try:
        with open_cache(where, create=True) as cache:
            run = Recording(cache).begin_run(started=T0, pid=1, config_yaml="trackedObjects: {}\n")
            with cache.transaction():
                for n, state in enumerate(states):
                    key, uid = (WEB, "u1") if n < 3 else (ObjKey(POD, "shop", "web-1"), "p1")
                    cache.write("INSERT INTO status_changes (ts, recv, run_id, gvk, namespace, name, uid, inferred, body) "
                                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                (T0 + n, T0 + n + 0.5, run, str(key.gvk), key.namespace, key.name, uid, int(n == 0), encode_body(state)[0]))
    finally:
        patch.__exit__(None, None, None)
    with open_cache_readonly(where) as old, open_cache(elsewhere(engine), create=True) as copy, copy.writer_lock():
        assert not stored.has_statuses(old)  # read as it is: this version reads none, and a copy carries them
        copy_history(old, copy)
        assert [r.reduced for r in stored.every_row(copy)] == states
    with open_cache(where, create=False) as cache:
        rows = stored.every_row(cache)
        assert [(r.ts, r.reduced, r.inferred, r.uid) for r in rows] == \
            [(T0 + n, s, n == 0, "u1" if n < 3 else "p1") for n, s in enumerate(states)]
        assert set(forms(cache)) == {statusforms.PLAIN}
        assert cache.conn.execute("SELECT late FROM status_changes ORDER BY id").fetchall()[0][0] == 500
        index = StatusIndex(Recording(cache), 2, lambda recv: recv)  # a new run names its objects after those kept
        assert index._new_object(WEB, "u1") == 3


def test_a_batchs_status_changes_are_written_at_its_commit_and_none_of_a_batch_rolled_back(engine: str) -> None:
    """The recorder's status changes wait for their batch's commit and go as one write: a reader sees them with the
    batch's other rows; a batch rolled back leaves none, nor any in the next batch."""
    where = location(engine)
    head = ObjectHead(WEB, "u1", "1", None, ())
    with open_cache(where, create=True) as cache:
        rec = Recording(cache)
        run = rec.begin_run(started=T0, pid=1, config_yaml="trackedObjects: {}\n")
        rec.begin()
        StatusIndex(rec, run, lambda recv: recv).seen(head, web(1), T0 + 0.25, inferred=False)
        rec.rollback()
        index = StatusIndex(rec, run, lambda recv: recv)
        rec.begin()
        index.seen(head, web(2), T0 + 10.25, inferred=False)
        index.seen(head, web(3), T0 + 20.25, inferred=False)
        with open_cache_readonly(where) as reader:
            assert not stored.every_row(reader)  # not before the commit
        rec.commit()
        with open_cache_readonly(where) as reader:
            assert [(r.ts, r.reduced) for r in stored.every_row(reader)] == [(T0 + 10, statuses.reduce(web(2))),
                                                                              (T0 + 20, statuses.reduce(web(3)))]
        rec.begin()
        rec.commit()
        assert len(stored.every_row(cache)) == 2


def test_a_negative_count_is_stored_as_it_is() -> None:
    state = {"phase": "Running", "containers": {"c": {"ready": True, "restarts": -1}}}
    form, body = statusforms.encode(state, before=None)
    assert form == statusforms.PLAIN and statusforms.decode(form, body) == state
    assert statusforms.decode(*statusforms.encode({"replicas": 3}, before={"replicas": 4})) == {"replicas": 3}


def test_the_workloads_states_at_a_restart_decode_no_pod(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The restart report and ``status`` say the workloads' states ("web: 2 of 3 ready"): the pods' rows, a cluster's
    most numerous, are not read (50,000 of them decoded cost the recorder 100 MB at its sync)."""
    with open_cache(tmp_path / "cache.db", create=True) as cache:
        rec = Recording(cache)
        run = rec.begin_run(started=T0, pid=1, config_yaml="trackedObjects: {}\n")
        index = StatusIndex(rec, run, lambda recv: recv)
        with rec.batch():
            index.seen(ObjectHead(WEB, "u1", "1", None, ()), web(2, 3), T0 + 0.25, inferred=True)
            for n in range(20):
                pod = {"kind": "Pod", "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}
                index.seen(ObjectHead(ObjKey(POD, "shop", f"web-{n}"), f"p{n}", "1", None, ()), pod, T0 + 0.25, inferred=True, pod=True)
        decoded: list[int] = []
        real = statusforms.decode
        monkeypatch.setattr(statusforms, "decode", lambda form, body: decoded.append(form) or real(form, body))
        assert list(stored.found_by_run(cache, run, pods=False)) == [WEB]
        assert list(stored.state_at(cache, at=T0 + 10, pods=False)) == [WEB]
        assert len(decoded) == 2
        assert len(stored.found_by_run(cache, run)) == 21
