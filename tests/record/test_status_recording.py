"""Status changes recorded (docs/spec.md "What a status change is"): a row when what a person reads changes, at its
second; nothing for a heartbeat; the state a list finds reconstructed; pruned to each object's state at the cutoff and
copied like every other row. Over a real sqlite cache, the recorder's ``Ingest`` fed by hand."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from test_ingest import DEPLOY, T0, Harness, deployment, pod

from kubectl_sktrace.model import POD, ObjKey
from kubectl_sktrace.store import open_cache
from kubectl_sktrace.store import statuses as stored
from kubectl_sktrace.store.copying import copy_history
from kubectl_sktrace.store.pruning import prune_before

WEB = ObjKey(DEPLOY, "ns", "web")


def rollout(ready: int, *, stamp: str = "2026-12-07T10:00:00Z", reason: str = "NewReplicaSetAvailable") -> dict[str, Any]:
    obj = deployment("web", "u1", replicas=3)
    obj["status"] = {"observedGeneration": 1, "replicas": 3, "readyReplicas": ready, "availableReplicas": ready, "updatedReplicas": 3,
                     "conditions": [{"type": "Progressing", "status": "True", "reason": reason, "lastUpdateTime": stamp,
                                     "lastTransitionTime": "2026-12-07T09:00:00Z", "message": f"updated at {stamp}"}]}
    return obj


def rows(h: Harness) -> list[tuple[int, str, int, dict[str, Any]]]:
    return [(row.ts, row.key.name, int(row.inferred), row.reduced) for row in stored.every_row(h.cache)]


def test_a_change_of_what_a_person_reads_is_a_row_at_its_second_and_a_rewritten_timestamp_is_none(tmp_path: Path) -> None:
    h = Harness(tmp_path / "c.db")
    ingest = h.ingest()
    ingest.relist_begin(DEPLOY, T0)
    ingest.relist_page(DEPLOY, [rollout(3)], T0)
    ingest.relist_end(DEPLOY, "1", T0)
    for i in range(30):  # a controller rewriting the condition's timestamp every 2 s for a minute
        ingest.event(DEPLOY, "MODIFIED", rollout(3, stamp=f"2026-12-07T10:{i:02d}:00Z"), T0 + 2 * i + 0.5)
    ingest.event(DEPLOY, "MODIFIED", rollout(2, reason="ReplicaSetUpdated"), T0 + 70.4)
    h.finish(ingest, T0 + 71)
    found = rows(h)
    assert [(ts - int(T0), inferred, r["readyReplicas"]) for ts, _, inferred, r in found] == [(0, 1, 3), (70, 0, 2)]
    assert found[1][3]["conditions"] == {"Progressing": "True ReplicaSetUpdated"}
    assert h.events() == [(int(T0), str(DEPLOY), "web", 0, 0)]  # the object's history has no row of it


def test_pods_are_recorded_and_forgotten_when_gone(tmp_path: Path) -> None:
    h = Harness(tmp_path / "c.db")
    ingest = h.ingest()
    running = pod("p", "pu", rs=None, started=T0)
    running["status"]["containerStatuses"][0].update(ready=True, restartCount=0)
    ingest.event(POD, "ADDED", running, T0 + 1)
    oom = copy.deepcopy(running)
    oom["status"]["containerStatuses"][0].update(restartCount=1, lastState={"terminated": {"reason": "OOMKilled", "exitCode": 137}})
    ingest.event(POD, "MODIFIED", oom, T0 + 5)
    ingest.event(POD, "MODIFIED", oom, T0 + 6)
    ingest.event(POD, "DELETED", oom, T0 + 9)
    h.finish(ingest, T0 + 10)
    assert [(ts - int(T0), r["containers"]["c"]["restarts"]) for ts, _, _, r in rows(h)] == [(1, 0), (5, 1)]
    assert ingest.status.known == {}


def test_an_object_deleted_and_created_again_is_forgotten_whichever_way_its_deletion_came(tmp_path: Path) -> None:
    """Memory follows the live cluster: a deletion seen, one a list finds, and one told by a successor of another uid
    under the same name (no DELETED event) each leave nothing of the object gone."""
    h = Harness(tmp_path / "c.db")
    ingest = h.ingest()
    ingest.event(DEPLOY, "ADDED", rollout(3), T0)
    successor = rollout(2)
    successor["metadata"]["uid"] = "u2"
    ingest.event(DEPLOY, "ADDED", successor, T0 + 2)  # u1's deletion was missed: u2 tells it
    assert set(ingest.status.known) == {"u2"}
    ingest.event(DEPLOY, "DELETED", successor, T0 + 3)
    assert ingest.status.known == {}
    ingest.event(DEPLOY, "ADDED", rollout(3), T0 + 4)
    ingest.relist_begin(DEPLOY, T0 + 5)
    ingest.relist_end(DEPLOY, "9", T0 + 5)  # a list that no longer finds it
    h.finish(ingest, T0 + 6)
    assert ingest.status.known == {}
    assert [(ts - int(T0), r["readyReplicas"]) for ts, _, _, r in rows(h)] == [(0, 3), (2, 2), (4, 3)]


def test_a_restart_records_the_state_it_finds_reconstructed(tmp_path: Path) -> None:
    h = Harness(tmp_path / "c.db")
    first = h.ingest()
    first.event(DEPLOY, "ADDED", rollout(3), T0)
    h.finish(first, T0 + 1)
    second = h.ingest(started=T0 + 100, restart=T0 + 100)
    second.relist_begin(DEPLOY, T0 + 100)
    second.relist_page(DEPLOY, [rollout(1)], T0 + 100)
    second.relist_end(DEPLOY, "2", T0 + 100)
    second.relist_begin(POD, T0 + 100)
    second.relist_page(POD, [pod("web-1-a", "p1", rs=None, started=T0 + 50)], T0 + 100)
    second.relist_end(POD, "2", T0 + 100)
    h.finish(second, T0 + 101)
    assert [(ts - int(T0), name, inferred) for ts, name, inferred, _ in rows(h)] == [(0, "web", 0), (100, "web", 1), (100, "web-1-a", 1)]
    # the workloads it found, for the reconciliation report: not the pods (a row each, which no report shows)
    assert {k: v.reduced["readyReplicas"] for k, v in stored.found_by_run(h.cache, second.run_id, pods=False).items()} == {WEB: 1}
    assert stored.state_at(h.cache, at=T0 + 50)[WEB].reduced["readyReplicas"] == 3


def test_a_prune_keeps_each_objects_state_at_the_cutoff_and_a_copy_carries_every_row(tmp_path: Path) -> None:
    h = Harness(tmp_path / "c.db")
    ingest = h.ingest()
    for i, ready in enumerate([0, 1, 2, 3]):
        ingest.event(DEPLOY, "ADDED" if i == 0 else "MODIFIED", rollout(ready), T0 + 10 * i)
    h.finish(ingest, T0 + 40)
    with open_cache(tmp_path / "copy.db", create=True) as dst, dst.writer_lock():
        copy_history(h.cache, dst)
        assert stored.every_row(dst) == stored.every_row(h.cache)
    with h.cache.writer_lock():
        prune_before(h.cache, before=int(T0) + 25, compact=False)
    assert [r[3]["readyReplicas"] if "readyReplicas" in r[3] else 0 for r in rows(h)] == [2, 3]
    assert stored.state_at(h.cache, at=T0 + 26)[WEB].reduced["readyReplicas"] == 2


def test_postgresql_records_prunes_and_reads_them_alike(pg_url: str) -> None:
    from kubectl_sktrace.model import CacheUrl

    h = Harness(CacheUrl(pg_url, "statuses"))  # type: ignore[arg-type]
    ingest = h.ingest()
    for i, ready in enumerate([0, 1, 2, 3]):
        ingest.event(DEPLOY, "ADDED" if i == 0 else "MODIFIED", rollout(ready), T0 + 10 * i + 0.5)
    ingest.event(DEPLOY, "MODIFIED", rollout(3, stamp="2026-12-07T11:00:00Z"), T0 + 35)  # a timestamp: nothing
    h.finish(ingest, T0 + 40)
    assert [(ts - int(T0), r["readyReplicas"] if "readyReplicas" in r else 0) for ts, _, _, r in rows(h)] == [(0, 0), (10, 1), (20, 2), (30, 3)]
    with h.cache.writer_lock():
        prune_before(h.cache, before=int(T0) + 25, compact=False)
    assert stored.state_at(h.cache, at=T0 + 26)[WEB].reduced["readyReplicas"] == 2
    assert [r.reduced.get("readyReplicas") for r in stored.history_of(h.cache, WEB, start=T0 + 25, end=T0 + 40)] == [2, 3]
    assert stored.workload_states(stored.state_at(h.cache, at=float("inf"), live=True)) == (("Deployment ns/web", "3 of 3 ready"),)


def test_the_marks_of_a_rows_pods_are_read_at_once_each_against_its_own_state_before(tmp_path: Path) -> None:
    h = Harness(tmp_path / "c.db")
    ingest = h.ingest()

    def at(name: str, uid: str, ts: float, restarts: int, reason: str | None = None) -> None:
        obj = pod(name, uid, rs=None, started=T0)
        obj["status"]["containerStatuses"][0].update(ready=reason is None, restartCount=restarts)
        if reason:
            obj["status"]["containerStatuses"][0]["state"] = {"waiting": {"reason": reason}}
        ingest.event(POD, "MODIFIED" if ts > T0 + 1 else "ADDED", obj, ts)

    at("a", "ua", T0 + 1, 0)
    at("a", "ua", T0 + 5, 1)  # a restart before the range: the state the first one in it is read against
    at("a", "ua", T0 + 20, 1, "CrashLoopBackOff")
    at("a", "ua", T0 + 30, 2)
    at("b", "ub", T0 + 1, 0, "ImagePullBackOff")
    at("b", "ub", T0 + 21, 0)  # pulled at last: nothing to mark
    ingest.event(POD, "DELETED", pod("b", "ub", rs=None, started=T0), T0 + 22)
    at("b", "ub2", T0 + 25, 0, "ImagePullBackOff")  # the name again, another pod's
    h.finish(ingest, T0 + 40)
    found = stored.pod_marks(h.cache, "ns", [("a", "ua"), ("b", "ub"), ("b", "ub2"), ("c", "uc")], start=T0 + 10, end=T0 + 40)
    assert {pod: [(ts - int(T0), marks) for _, ts, marks in rows] for pod, rows in found.items()} == {
        ("a", "ua"): [(20, ["crashloop"]), (30, ["restart"])], ("b", "ub"): [], ("b", "ub2"): [(25, ["pullfailed"])]}
    whole = stored.pod_marks(h.cache, "ns", [("b", "ub")], start=T0, end=T0 + 40)  # from its first row: against nothing
    assert {pod: [(ts - int(T0), marks) for _, ts, marks in rows] for pod, rows in whole.items()} == {("b", "ub"): [(1, ["pullfailed"])]}
