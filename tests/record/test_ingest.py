"""ingest.Ingest: the rules applied to sink messages, over a real sqlite cache (no cluster, no threads)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from kubectl_sktrace.model import GVK, POD, REPLICASET, ObjKey
from kubectl_sktrace.record.ingest import Ingest
from kubectl_sktrace.store import open_cache
from kubectl_sktrace.store.bodies import decode_body
from kubectl_sktrace.store.recording import Recording
from kubectl_sktrace.trace import hashing
from kubectl_sktrace.tracerconfig import TracerConfig, TrackedObject

DEPLOY = GVK("apps", "v1", "Deployment")
SECRET = GVK("", "v1", "Secret")
T0 = 1_800_000_000.0


def iso(ts: float) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def deployment(name: str, uid: str, *, replicas: int = 1, created: float = T0 - 1000, rv: str = "1") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": rv, "creationTimestamp": iso(created)},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
            "status": {"replicas": replicas}}


def replicaset(name: str, uid: str, owner: str, owner_uid: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "ns", "uid": uid,
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": owner, "uid": owner_uid}]},
            "spec": {}}


def pod(name: str, uid: str, *, rs: str | None, rs_uid: str = "", started: float | None = None, finished: float | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": uid}
    if rs:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": rs_uid}]
    state: dict[str, Any] = {}
    if started is not None and finished is not None:
        state = {"terminated": {"startedAt": iso(started), "finishedAt": iso(finished), "exitCode": 0}}
    elif started is not None:
        state = {"running": {"startedAt": iso(started)}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]},
            "status": {"containerStatuses": [{"name": "c", "state": state}] if state else []}}


CONFIG = TracerConfig(tracked={DEPLOY: TrackedObject(pod_spec_template_paths=("/spec/template",), track_lifecycle=True)})


class Harness:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.fetched: list[ObjKey] = []
        self.remote: dict[ObjKey, dict[str, Any]] = {}
        self.cache = open_cache(path, create=True)
        self.rec = Recording(self.cache)

    def ingest(self, *, config: TracerConfig = CONFIG, started: float = T0, restart: float | None = None,
               initial_kinds: frozenset[GVK] = frozenset()) -> Ingest:
        previous = self.rec.previous_run()
        run = self.rec.begin_run(started=started, pid=1, config_yaml="")
        self.rec.begin()
        return Ingest(recording=self.rec, run_id=run, config=config, owner_kinds={REPLICASET},
                      fetch_owner=self._fetch, gap_start=None if previous is None else previous.stopped, restart=restart,
                      initial_kinds=initial_kinds)

    def _fetch(self, key: ObjKey) -> dict[str, Any] | None:
        self.fetched.append(key)
        return self.remote.get(key)

    def finish(self, ingest: Ingest, stopped: float) -> None:
        ingest.before_commit(stopped)
        self.rec.commit()
        self.rec.stop_run(ingest.run_id, stopped, clean=True)

    def events(self) -> list[tuple[Any, ...]]:
        return self.cache.conn.execute("SELECT ts, gvk, name, op, inferred FROM events ORDER BY id").fetchall()

    def pods(self) -> dict[str, tuple[Any, ...]]:
        rows = self.cache.conn.execute("SELECT name, owner_name, start_ts, end_ts, end_inferred, live FROM pods").fetchall()
        return {r[0]: r[1:] for r in rows}


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    harness = Harness(tmp_path / "cache.db")
    yield harness
    harness.cache.close()


def listing(ingest: Ingest, gvk: GVK, items: list[dict[str, Any]], ts: float, *, rv: str = "100") -> None:
    ingest.relist_begin(gvk, ts)
    ingest.relist_page(gvk, items, ts)
    ingest.relist_end(gvk, rv, ts)


def first_run(h: Harness) -> None:
    ing = h.ingest()
    listing(ing, DEPLOY, [deployment("web", "d1"), deployment("api", "d2")], T0)
    listing(ing, REPLICASET, [replicaset("web-1", "r1", "web", "d1"), replicaset("api-1", "r2", "api", "d2")], T0)
    listing(ing, POD, [pod("web-1-a", "p1", rs="web-1", rs_uid="r1", started=T0 - 50),
                       pod("api-1-a", "p2", rs="api-1", rs_uid="r2", started=T0 - 40)], T0)
    h.finish(ing, T0 + 100)


def test_fresh_cache_records_listed_objects_and_pod_owners_without_gets(h: Harness) -> None:
    first_run(h)
    assert h.events() == [(int(T0), "apps/v1.Deployment", "web", 0, 0), (int(T0), "apps/v1.Deployment", "api", 0, 0)]
    assert h.pods() == {"web-1-a": ("web", int(T0) - 50, None, 0, 1), "api-1-a": ("api", int(T0) - 40, None, 0, 1)}
    assert h.fetched == []
    stable = h.cache.conn.execute("SELECT stable_hash FROM pods WHERE name='web-1-a'").fetchone()[0]
    assert stable % (1 << 64) == hashing.pod_spec_hash(pod("x", "x", rs=None)["spec"])
    assert h.cache.conn.execute("SELECT resource_version FROM watch_state WHERE gvk='v1.Pod'").fetchone() == ("100",)


def test_a_restart_records_what_vanished_offline_at_the_run_start_whichever_kind_lists_when(h: Harness) -> None:
    first_run(h)
    ing = h.ingest(started=T0 + 500, restart=T0 + 500.2)
    listing(ing, DEPLOY, [deployment("web", "d1")], T0 + 501.4)
    listing(ing, REPLICASET, [replicaset("web-1", "r1", "web", "d1")], T0 + 501.6)
    listing(ing, POD, [pod("web-1-a", "p1", rs="web-1", rs_uid="r1", started=T0 - 50)], T0 + 503.7)  # pods list last
    assert h.events()[2:] == [(int(T0) + 500, "apps/v1.Deployment", "api", 1, 1)]
    assert h.pods()["api-1-a"] == ("api", int(T0) - 40, int(T0) + 500, 1, 0)
    # a later relist (after a 410) is no restart: what it finds gone is recorded at its own time
    listing(ing, DEPLOY, [], T0 + 900.5)
    h.finish(ing, T0 + 1000)
    assert h.events()[3:] == [(int(T0) + 900, "apps/v1.Deployment", "web", 1, 1)]


def test_restart_infers_deletions_finishes_vanished_pods_and_stamps_offline_creations(h: Harness) -> None:
    first_run(h)
    ing = h.ingest(started=T0 + 500)
    relist = T0 + 500.4
    listing(ing, DEPLOY, [deployment("web", "d1"), deployment("new", "d3", created=T0 + 300)], relist)
    listing(ing, REPLICASET, [replicaset("web-1", "r1", "web", "d1"), replicaset("new-1", "r3", "new", "d3")], relist)
    listing(ing, POD, [pod("web-1-a", "p1", rs="web-1", rs_uid="r1", started=T0 - 50),
                       pod("new-1-a", "p3", rs="new-1", rs_uid="r3", started=T0 + 310)], relist)
    h.finish(ing, T0 + 600)
    assert h.events()[2:] == [
        (int(T0) + 300, "apps/v1.Deployment", "new", 0, 1),  # created offline: stamped with its creationTimestamp
        (int(T0) + 500, "apps/v1.Deployment", "api", 1, 1),  # vanished offline: deleted at the relist, inferred
    ]
    assert h.pods()["api-1-a"] == ("api", int(T0) - 40, int(T0) + 500, 1, 0)
    assert h.pods()["new-1-a"] == ("new", int(T0) + 310, None, 0, 1)
    assert ing.stats[DEPLOY].deleted_offline == 1 and ing.stats[DEPLOY].applied == 1


def test_offline_finish_scale_and_recreate(h: Harness) -> None:
    first_run(h)
    ing = h.ingest(started=T0 + 500)
    relist = T0 + 500
    listing(ing, DEPLOY, [deployment("web", "d1", replicas=3), deployment("api", "d9", created=T0 - 10)], relist)
    listing(ing, REPLICASET, [replicaset("web-1", "r1", "web", "d1")], relist)
    listing(ing, POD, [pod("web-1-a", "p1", rs="web-1", rs_uid="r1", started=T0 - 50, finished=T0 + 200)], relist)
    h.finish(ing, T0 + 600)
    assert h.events()[2:] == [
        (int(T0) + 500, "apps/v1.Deployment", "web", 0, 1),  # scaled offline: one applied event
        (int(T0) + 500, "apps/v1.Deployment", "api", 1, 1),  # re-created with the same name: a delete...
        (int(T0) + 500, "apps/v1.Deployment", "api", 0, 1),  # ...and an apply (created before the gap: relist time)
    ]
    assert h.pods()["web-1-a"] == ("web", int(T0) - 50, int(T0) + 200, 0, 1)  # its true end, not the relist time


def test_live_events_status_only_changes_and_deletions(h: Harness) -> None:
    first_run(h)
    ing = h.ingest(started=T0 + 400)
    listing(ing, DEPLOY, [deployment("web", "d1"), deployment("api", "d2")], T0 + 400)
    quiet = deployment("web", "d1")
    quiet["status"] = {"replicas": 7}
    quiet["metadata"].update(resourceVersion="99", generation=4, managedFields=[{"manager": "x"}])
    quiet["metadata"]["annotations"] = {"control-plane.alpha.kubernetes.io/leader": '{"renewTime": "now"}'}
    ing.event(DEPLOY, "MODIFIED", quiet, T0 + 401.2)
    h.finish(ing, T0 + 402)
    assert h.events()[2:] == []  # status, resourceVersion, generation, managedFields, a leader record: no change
    ing = h.ingest(started=T0 + 500)
    listing(ing, DEPLOY, [deployment("web", "d1"), deployment("api", "d2")], T0 + 500)
    quiet = deployment("web", "d1")
    quiet["status"] = {"replicas": 7}
    quiet["metadata"]["labels"] = {"a": "b"}
    ing.event(DEPLOY, "MODIFIED", quiet, T0 + 501.2)
    ing.event(DEPLOY, "MODIFIED", deployment("web", "d1", replicas=5), T0 + 502.7)
    ing.event(DEPLOY, "DELETED", deployment("api", "d2"), T0 + 503.1)
    ing.event(DEPLOY, "DELETED", deployment("ghost", "d7"), T0 + 503.2)
    h.finish(ing, T0 + 504)
    assert h.events()[2:] == [
        (int(T0) + 501, "apps/v1.Deployment", "web", 3, 0),  # a label added with the status: a metadata revision
        (int(T0) + 502, "apps/v1.Deployment", "web", 0, 0),
        (int(T0) + 503, "apps/v1.Deployment", "api", 1, 0),
    ]
    revision = decode_body(h.cache.conn.execute("SELECT body FROM events WHERE ts = ?", (int(T0) + 501,)).fetchone()[0])
    assert revision["metadata"]["labels"] == {"a": "b"} and "spec" not in revision and "status" not in revision
    body = decode_body(h.cache.conn.execute("SELECT body FROM events WHERE ts = ?", (int(T0) + 502,)).fetchone()[0])
    assert body["spec"]["replicas"] == 5 and "uid" not in body["metadata"] and body["metadata"]["annotations"] == {}
    assert ing.stats[DEPLOY].deleted_live == 1


def test_pod_lifecycle_through_watch_events(h: Harness) -> None:
    first_run(h)
    ing = h.ingest(started=T0 + 500)
    listing(ing, DEPLOY, [deployment("web", "d1"), deployment("api", "d2")], T0 + 500)
    listing(ing, REPLICASET, [replicaset("web-1", "r1", "web", "d1"), replicaset("api-1", "r2", "api", "d2")], T0 + 500)
    listing(ing, POD, [pod("web-1-a", "p1", rs="web-1", rs_uid="r1", started=T0 - 50),
                       pod("api-1-a", "p2", rs="api-1", rs_uid="r2", started=T0 - 40)], T0 + 500)
    ing.event(POD, "ADDED", pod("web-1-b", "p4", rs="web-1", rs_uid="r1"), T0 + 510)
    ing.event(POD, "MODIFIED", pod("web-1-b", "p4", rs="web-1", rs_uid="r1", started=T0 + 511), T0 + 511.5)
    ing.event(POD, "MODIFIED", pod("web-1-b", "p4", rs="web-1", rs_uid="r1", started=T0 + 999), T0 + 512)  # refused
    ing.event(POD, "DELETED", pod("web-1-b", "p4", rs="web-1", rs_uid="r1", started=T0 + 511), T0 + 520.9)
    ing.event(POD, "DELETED", pod("api-1-a", "p2", rs="api-1", rs_uid="r2", started=T0 - 40, finished=T0 + 515), T0 + 521)
    h.finish(ing, T0 + 530)
    assert h.pods()["web-1-b"] == ("web", int(T0) + 511, int(T0) + 520, 0, 0)
    assert h.pods()["api-1-a"] == ("api", int(T0) - 40, int(T0) + 515, 0, 0)
    assert ing.stats[DEPLOY].lifecycles == 1
    assert "p4" not in ing.pods


def test_unknown_owner_is_fetched_once_and_cached(h: Harness) -> None:
    ing = h.ingest()
    listing(ing, DEPLOY, [deployment("web", "d1")], T0)
    listing(ing, REPLICASET, [], T0)
    h.remote[ObjKey(REPLICASET, "ns", "web-2")] = replicaset("web-2", "r5", "web", "d1")
    listing(ing, POD, [pod("web-2-a", "p5", rs="web-2", rs_uid="r5", started=T0),
                       pod("web-2-b", "p6", rs="web-2", rs_uid="r5", started=T0),
                       pod("lost-a", "p7", rs="lost", rs_uid="r9", started=T0)], T0)
    h.finish(ing, T0 + 1)
    assert h.fetched == [ObjKey(REPLICASET, "ns", "web-2"), ObjKey(REPLICASET, "ns", "lost")]
    assert h.pods()["web-2-a"][0] == "web" and h.pods()["lost-a"][0] is None
    assert h.cache.conn.execute("SELECT uid FROM owners WHERE name='web-2'").fetchone() == ("r5",)


def test_an_unfinished_relist_deletes_nothing(h: Harness) -> None:
    first_run(h)
    ing = h.ingest(started=T0 + 500)
    ing.relist_begin(DEPLOY, T0 + 500)
    ing.relist_page(DEPLOY, [deployment("web", "d1")], T0 + 500)
    ing.relist_begin(DEPLOY, T0 + 501)  # the list failed midway and starts over
    ing.relist_page(DEPLOY, [deployment("api", "d2")], T0 + 501)
    h.finish(ing, T0 + 502)
    assert len(h.events()) == 2
    assert set(h.rec.load_live_objects()) == {ObjKey(DEPLOY, "ns", "web"), ObjKey(DEPLOY, "ns", "api")}


def test_secrets_are_stored_without_values_unless_opted_in(h: Harness) -> None:
    config = TracerConfig(tracked={SECRET: TrackedObject()})
    ing = h.ingest(config=config)
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns", "uid": "s1"},
              "data": {"password": "aHVudGVyMg=="}, "stringData": {"token": "t0p"}}
    listing(ing, SECRET, [secret], T0)
    h.finish(ing, T0 + 1)
    body = decode_body(h.cache.conn.execute("SELECT body FROM events").fetchone()[0])
    assert body["data"] == {"password": ""} and body["stringData"] == {"token": ""}


def test_skip_owned_ignores_owned_objects(h: Harness) -> None:
    config = TracerConfig(tracked={POD: TrackedObject(pod_spec_template_paths=("",), track_lifecycle=True, skip_owned=True)})
    ing = h.ingest(config=config)
    listing(ing, POD, [pod("bare", "b1", rs=None, started=T0 - 5), pod("owned", "o1", rs="x", rs_uid="rx", started=T0 - 5)], T0)
    h.finish(ing, T0 + 1)
    assert h.events() == [(int(T0), "v1.Pod", "bare", 0, 0)]
    assert h.pods()["bare"][0] == "bare"  # a bare pod is its own lifecycle owner


def test_a_malformed_object_is_skipped_and_the_list_deletes_nothing(h: Harness) -> None:
    first_run(h)
    ing = h.ingest(started=T0 + 500)
    listing(ing, DEPLOY, [{"metadata": None}, deployment("api", "d2")], T0 + 500)
    ing.event(DEPLOY, "MODIFIED", {"metadata": 7}, T0 + 501)
    h.finish(ing, T0 + 502)
    assert len(h.events()) == 2  # nothing deleted, nothing recorded for the unreadable objects
    assert set(h.rec.load_live_objects()) == {ObjKey(DEPLOY, "ns", "web"), ObjKey(DEPLOY, "ns", "api")}


def test_a_relisted_pod_whose_owner_was_recreated_under_the_same_name_gets_its_lifecycle_owner(h: Harness) -> None:
    # in-process relists after a 410: Pods are relisted before ReplicaSets, and the Deployment was deleted and
    # re-created meanwhile, so the pod's ReplicaSet has the cached name and a new uid
    ing = h.ingest()
    listing(ing, DEPLOY, [deployment("web", "d1")], T0)
    listing(ing, REPLICASET, [replicaset("web-1", "r1", "web", "d1")], T0)
    listing(ing, POD, [pod("web-1-a", "p1", rs="web-1", rs_uid="r1", started=T0 - 50)], T0)
    listing(ing, DEPLOY, [deployment("web", "d5", created=T0 + 20)], T0 + 30)
    h.remote[ObjKey(REPLICASET, "ns", "web-1")] = replicaset("web-1", "r7", "web", "d5")
    listing(ing, POD, [pod("web-1-x", "p9", rs="web-1", rs_uid="r7", started=T0 + 25)], T0 + 31)
    listing(ing, REPLICASET, [replicaset("web-1", "r7", "web", "d5")], T0 + 32)
    h.finish(ing, T0 + 40)
    assert h.fetched == [ObjKey(REPLICASET, "ns", "web-1")]  # the stale cache entry is refreshed, not taken as "gone"
    assert h.pods()["web-1-x"] == ("web", int(T0) + 25, None, 0, 1)
    assert h.pods()["web-1-a"] == ("web", int(T0) - 50, int(T0) + 31, 1, 0)
    assert h.cache.conn.execute("SELECT uid FROM owners WHERE name='web-1'").fetchone() == ("r7",)


def test_an_owner_whose_name_now_belongs_to_another_object_is_gone(h: Harness) -> None:
    ing = h.ingest()
    listing(ing, DEPLOY, [deployment("web", "d1")], T0)
    listing(ing, REPLICASET, [replicaset("web-1", "r1", "web", "d1")], T0)
    h.remote[ObjKey(REPLICASET, "ns", "web-1")] = replicaset("web-1", "r8", "web", "d1")
    listing(ing, POD, [pod("web-1-a", "p1", rs="web-1", rs_uid="r7", started=T0 - 50)], T0)  # r7: neither cached nor live
    h.finish(ing, T0 + 1)
    assert h.fetched == [ObjKey(REPLICASET, "ns", "web-1")]
    assert h.pods()["web-1-a"][0] is None


def test_a_deleted_event_for_a_predecessor_leaves_the_live_successor_live(h: Harness) -> None:
    ing = h.ingest()
    listing(ing, DEPLOY, [deployment("web", "d1")], T0)
    ing.event(DEPLOY, "ADDED", deployment("web", "d5", replicas=2, created=T0 + 5), T0 + 5.5)  # re-created: d1 is gone
    ing.event(DEPLOY, "DELETED", deployment("web", "d1"), T0 + 6.5)  # a stale event for the predecessor
    h.finish(ing, T0 + 10)
    assert h.events() == [
        (int(T0), "apps/v1.Deployment", "web", 0, 0),
        (int(T0) + 5, "apps/v1.Deployment", "web", 1, 0),
        (int(T0) + 5, "apps/v1.Deployment", "web", 0, 0),
    ]
    assert h.rec.load_live_objects()[ObjKey(DEPLOY, "ns", "web")].uid == "d5"
    assert ing.stats[DEPLOY].deleted_live == 1


def test_an_in_process_relist_listing_another_uid_deletes_the_old_then_applies_the_new(h: Harness) -> None:
    ing = h.ingest()
    listing(ing, DEPLOY, [deployment("web", "d1")], T0)
    listing(ing, DEPLOY, [deployment("web", "d5", created=T0 - 2000)], T0 + 30)  # re-created earlier than anything we know
    h.finish(ing, T0 + 40)
    assert h.events() == [
        (int(T0), "apps/v1.Deployment", "web", 0, 0),
        (int(T0) + 30, "apps/v1.Deployment", "web", 1, 1),
        (int(T0) + 30, "apps/v1.Deployment", "web", 0, 1),
    ]
    assert h.rec.load_live_objects()[ObjKey(DEPLOY, "ns", "web")].uid == "d5"


def test_changes_caught_up_after_an_outage_are_reconstructed_not_live(h: Harness) -> None:
    ing = h.ingest()
    listing(ing, DEPLOY, [deployment("web", "d1", rv="10"), deployment("api", "d2", rv="11")], T0)
    ing.interrupted(DEPLOY, T0 + 5.5, "API unreachable", "connection refused")
    ing.interrupted(DEPLOY, T0 + 9, "API unreachable", "connection refused")  # retries: still the same outage
    ing.resumed(DEPLOY, T0 + 25.2, "40")
    ing.event(DEPLOY, "DELETED", deployment("api", "d2", rv="31"), T0 + 25.3)  # replayed: happened during the outage
    ing.event(DEPLOY, "MODIFIED", deployment("web", "d1", replicas=2, rv="35"), T0 + 25.4)
    ing.event(DEPLOY, "MODIFIED", deployment("web", "d1", replicas=3, rv="41"), T0 + 27.0)  # live again
    ing.event(DEPLOY, "MODIFIED", deployment("web", "d1", replicas=4, rv="39"), T0 + 28.0)  # past the horizon: live
    h.finish(ing, T0 + 30)
    assert h.events()[2:] == [
        (int(T0) + 25, "apps/v1.Deployment", "api", 1, 1),
        (int(T0) + 25, "apps/v1.Deployment", "web", 0, 1),
        (int(T0) + 27, "apps/v1.Deployment", "web", 0, 0),
        (int(T0) + 28, "apps/v1.Deployment", "web", 0, 0),
    ]
    stats = ing.stats[DEPLOY]
    assert (stats.deleted_live, stats.caught_up) == (0, 2)
    assert h.cache.conn.execute("SELECT gvk, since, until, cause, detail FROM coverage_gaps").fetchall() == [
        ("apps/v1.Deployment", T0 + 5.5, T0 + 25.2, "API unreachable", "connection refused")]


def test_a_relist_that_ends_an_outage_counts_what_it_finds_as_caught_up(h: Harness) -> None:
    ing = h.ingest()
    listing(ing, DEPLOY, [deployment("web", "d1"), deployment("api", "d2")], T0)
    listing(ing, REPLICASET, [], T0)
    listing(ing, POD, [pod("web-1-a", "p1", rs=None, started=T0 - 5)], T0)
    ing.interrupted(DEPLOY, T0 + 5, "watch expired", "410")
    listing(ing, DEPLOY, [deployment("web", "d1", replicas=3)], T0 + 60)
    ing.resumed(DEPLOY, T0 + 60, None)
    h.finish(ing, T0 + 61)
    assert h.events()[2:] == [(int(T0) + 60, "apps/v1.Deployment", "web", 0, 1), (int(T0) + 60, "apps/v1.Deployment", "api", 1, 1)]
    stats = ing.stats[DEPLOY]
    assert (stats.deleted_offline, stats.deleted_live, stats.caught_up) == (0, 0, 2)


def test_a_run_that_ends_during_an_outage_closes_its_gap_at_its_end(h: Harness) -> None:
    ing = h.ingest()
    listing(ing, DEPLOY, [deployment("web", "d1")], T0)
    ing.interrupted(DEPLOY, T0 + 5, "API unreachable", "connection refused")
    h.finish(ing, T0 + 50)
    assert h.cache.conn.execute("SELECT since, until FROM coverage_gaps").fetchall() == [(T0 + 5, T0 + 50)]


def test_a_row_written_after_a_commit_is_never_received_before_that_commits_heartbeat(h: Harness) -> None:
    # a relist stamps its pages with the list's start; a page written after a commit counts as received after it,
    # so an export that trusted that heartbeat ("everything received before it is in") never changes later
    ing = h.ingest()
    listing(ing, DEPLOY, [deployment("web", "d1")], T0)
    ing.relist_begin(DEPLOY, T0 + 10)
    ing.before_commit(T0 + 12.5)
    h.rec.commit()
    h.rec.begin()
    ing.relist_page(DEPLOY, [deployment("web", "d1"), deployment("api", "d2")], T0 + 10)
    ing.relist_end(DEPLOY, "5", T0 + 10)
    h.finish(ing, T0 + 20)
    assert h.cache.conn.execute("SELECT name, ts, recv FROM events ORDER BY id").fetchall() == [
        ("web", int(T0), T0), ("api", int(T0) + 10, T0 + 12.5)]


def test_each_object_is_read_once_per_message(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """One reading of an object's metadata (its head) serves every rule: a pod that is tracked, lifecycle-owned
    and listed, then watched, is read once per item and once per event."""
    from kubectl_sktrace.trace import sanitize

    reads: list[ObjKey] = []
    real = sanitize.read_head

    def counting(obj: dict[str, Any], gvk: GVK) -> Any:
        head = real(obj, gvk)
        reads.append(head.key)
        return head

    monkeypatch.setattr(sanitize, "read_head", counting)
    config = TracerConfig(tracked={**CONFIG.tracked, POD: TrackedObject(track_lifecycle=True)})
    ing = h.ingest(config=config)
    listing(ing, REPLICASET, [replicaset("rs", "r1", "web", "d1")], T0)
    listing(ing, DEPLOY, [deployment("web", "d1")], T0)
    listing(ing, POD, [pod("web-a", "p1", rs="rs", rs_uid="r1", started=T0 - 5)], T0)
    ing.event(POD, "MODIFIED", pod("web-a", "p1", rs="rs", rs_uid="r1", started=T0 - 5, finished=T0 + 1), T0 + 2)
    ing.event(POD, "DELETED", pod("web-a", "p1", rs="rs", rs_uid="r1", started=T0 - 5, finished=T0 + 1), T0 + 3)
    rs, web, web_a = ObjKey(REPLICASET, "ns", "rs"), ObjKey(DEPLOY, "ns", "web"), ObjKey(POD, "ns", "web-a")
    assert reads == [rs, web, web_a, web_a, web_a]
    assert ing.stats_for(POD).applied == 1 and ing.stats_for(POD).deleted_live == 1  # a status change alone records nothing


ALL_KINDS = frozenset({DEPLOY, REPLICASET, POD})


def test_pods_listed_before_their_owners_get_their_owners_from_the_owner_lists_without_gets(h: Harness) -> None:
    """Every kind lists at once: pods that arrive before their ReplicaSets and Deployments are resolved once
    those have listed, from memory, as if they had listed first (docs/spec.md §4)."""
    ing = h.ingest(initial_kinds=ALL_KINDS)
    listing(ing, POD, [pod("web-1-a", "p1", rs="web-1", rs_uid="r1", started=T0 - 50), pod("solo", "p9", rs=None)], T0)
    assert h.pods()["web-1-a"] == (None, int(T0) - 50, None, 0, 1)  # not resolved yet
    listing(ing, REPLICASET, [replicaset("web-1", "r1", "web", "d1")], T0)
    listing(ing, DEPLOY, [deployment("web", "d1")], T0)
    assert h.fetched == []
    assert h.pods() == {"web-1-a": ("web", int(T0) - 50, None, 0, 1), "solo": (None, None, None, 0, 1)}
    stable = h.cache.conn.execute("SELECT stable_hash FROM pods WHERE name='web-1-a'").fetchone()[0]
    assert stable % (1 << 64) == hashing.pod_spec_hash(pod("x", "x", rs=None)["spec"])
    assert ing.stats[DEPLOY].lifecycles == 1


def test_nothing_is_deleted_before_every_kind_listed_even_when_pods_list_first(h: Harness) -> None:
    """docs/spec.md §5 step 4: pods finish listing first, a Deployment and a Running pod vanished offline:
    both are reconciled (at the run's start) only once the last kind has listed."""
    first_run(h)
    ing = h.ingest(started=T0 + 500, restart=T0 + 500.2, initial_kinds=ALL_KINDS)
    listing(ing, POD, [pod("web-1-a", "p1", rs="web-1", rs_uid="r1", started=T0 - 50),
                       pod("web-1-b", "p3", rs="web-1", rs_uid="r1", started=T0 + 450)], T0 + 501)
    listing(ing, DEPLOY, [deployment("web", "d1")], T0 + 502)
    assert h.events()[2:] == []
    assert h.pods()["api-1-a"] == ("api", int(T0) - 40, None, 0, 1)
    assert h.pods()["web-1-b"] == (None, int(T0) + 450, None, 0, 1)
    listing(ing, REPLICASET, [replicaset("web-1", "r1", "web", "d1")], T0 + 503)
    assert h.events()[2:] == [(int(T0) + 500, "apps/v1.Deployment", "api", 1, 1)]
    assert h.pods()["api-1-a"] == ("api", int(T0) - 40, int(T0) + 500, 1, 0)
    assert h.pods()["web-1-b"] == ("web", int(T0) + 450, None, 0, 1)
    assert h.fetched == []


def test_a_kind_that_fails_for_good_releases_the_sync(h: Harness) -> None:
    first_run(h)
    ing = h.ingest(started=T0 + 500, restart=T0 + 500.2, initial_kinds=ALL_KINDS)
    listing(ing, DEPLOY, [deployment("web", "d1")], T0 + 501)
    listing(ing, POD, [pod("web-1-a", "p1", rs="web-1", rs_uid="r1", started=T0 - 50)], T0 + 501)
    assert h.events()[2:] == []
    ing.failed(REPLICASET, PermissionError("forbidden"), T0 + 502)
    assert h.events()[2:] == [(int(T0) + 500, "apps/v1.Deployment", "api", 1, 1)]
    assert h.pods()["api-1-a"][3:] == (1, 0)


def test_an_object_re_created_while_the_sync_waits_is_not_deleted_by_it(h: Harness) -> None:
    """The list missed "api" (uid d2); before the other kinds listed, a watch event brought "api" back under a
    new uid: the deferred reconciliation deletes the uid it missed, never the successor."""
    first_run(h)
    ing = h.ingest(started=T0 + 500, restart=T0 + 500.2, initial_kinds=ALL_KINDS)
    listing(ing, DEPLOY, [deployment("web", "d1")], T0 + 501)
    ing.event(DEPLOY, "ADDED", deployment("api", "d9", created=T0 + 501.5, rv="200"), T0 + 501.6)
    listing(ing, REPLICASET, [replicaset("web-1", "r1", "web", "d1")], T0 + 502)
    listing(ing, POD, [pod("web-1-a", "p1", rs="web-1", rs_uid="r1", started=T0 - 50)], T0 + 503)
    h.finish(ing, T0 + 600)
    live = h.cache.conn.execute("SELECT name, uid FROM objects ORDER BY name").fetchall()
    assert live == [("api", "d9"), ("web", "d1")]
    assert [e[2:4] for e in h.events()[2:]] == [("api", 1), ("api", 0)]  # d2 deleted (its successor's time), d9 applied


def test_an_applied_object_of_a_kind_with_pod_templates_is_stored_with_its_references(h: Harness) -> None:
    config = TracerConfig(tracked={DEPLOY: TrackedObject(pod_spec_template_paths=("/spec/template",), track_lifecycle=True),
                                   SECRET: TrackedObject()})
    ing = h.ingest(config=config)
    web = deployment("web", "d1")
    web["spec"]["template"]["spec"].update(
        serviceAccountName="web", volumes=[{"name": "v", "configMap": {"name": "web-config"}}, {"name": "w", "secret": {"secretName": "tls", "optional": True}}])
    web["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "db", "key": "p"}}},
                                                               {"name": "Q", "valueFrom": {"secretKeyRef": {"name": "db", "key": "q"}}}]
    listing(ing, DEPLOY, [web, deployment("api", "d2")], T0)
    listing(ing, SECRET, [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "ns", "uid": "s1"}}], T0)
    h.finish(ing, T0 + 1)
    rows = h.cache.conn.execute("SELECT name, refs, daemonset FROM events ORDER BY id").fetchall()
    assert rows == [("web", '[["E0001","web"],["E0002","db"],["E0005","web-config"]]', 0), ("api", "[]", 0), ("db", None, 0)]


def test_an_applied_object_is_stored_with_whether_a_daemonset_owns_it(h: Harness) -> None:
    ing = h.ingest()
    owned = deployment("node-agent", "d1")
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "ds1"}]
    listing(ing, DEPLOY, [owned, deployment("web", "d2")], T0)
    h.finish(ing, T0 + 1)
    assert h.cache.conn.execute("SELECT name, daemonset FROM events ORDER BY id").fetchall() == [("node-agent", 1), ("web", 0)]


def test_a_first_list_with_no_history_records_what_existed_at_the_start_and_the_kind_not_yet_observed(h: Harness) -> None:
    ing = h.ingest(restart=T0 + 0.3, initial_kinds=frozenset({DEPLOY, POD}))
    ing.not_yet_observed()
    ing.coverage.throttled(DEPLOY)  # the server throttled its list meanwhile
    listing(ing, POD, [], T0 + 0.9)  # within a second: no row
    listing(ing, DEPLOY, [deployment("old", "d1", created=T0 - 500), deployment("new", "d2", created=T0 + 40.2)], T0 + 93.5)
    h.finish(ing, T0 + 100)
    assert h.events() == [(int(T0), "apps/v1.Deployment", "old", 0, 0),  # existed at the run's start: there, as first seen
                          (int(T0) + 40, "apps/v1.Deployment", "new", 0, 1)]  # created since: at its creation, reconstructed
    assert h.cache.conn.execute("SELECT gvk, since, until, cause, detail FROM coverage_gaps").fetchall() == [
        ("apps/v1.Deployment", T0 + 0.3, T0 + 93.5, "not yet observed", "throttled")]


def test_a_secrets_values_changing_is_recorded_without_its_values(h: Harness) -> None:
    """A Secret's data change is a data revision whose stored body holds the keys blanked, as every body does; what
    found it is a fingerprint of the values, in the live index. A restart that lists it unchanged records nothing."""
    config = TracerConfig(tracked={SECRET: TrackedObject()})

    def secret(password: str) -> dict[str, Any]:
        return {"metadata": {"name": "db", "namespace": "ns", "uid": "s1", "creationTimestamp": iso(T0 - 10)}, "type": "Opaque",
                "data": {"password": password}}

    ing = h.ingest(config=config)
    listing(ing, SECRET, [secret("aHVudGVyMg==")], T0)
    ing.event(SECRET, "MODIFIED", secret("c3dvcmRmaXNo"), T0 + 5)
    h.finish(ing, T0 + 10)
    again = h.ingest(config=config, started=T0 + 20)
    listing(again, SECRET, [secret("c3dvcmRmaXNo")], T0 + 20)
    h.finish(again, T0 + 30)
    assert [(name, op) for _, _, name, op, _ in h.events()] == [("db", 0), ("db", 4)]
    bodies = [decode_body(b) for (b,) in h.cache.conn.execute("SELECT body FROM events ORDER BY id")]
    assert [b["data"] for b in bodies] == [{"password": ""}, {"password": ""}]  # the values never stored
