"""store.recording: typed writes and start-up loads over a real sqlite cache."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from kubectl_sktrace.errors import CacheError
from kubectl_sktrace.model import GVK, POD, ObjKey, OwnerRef
from kubectl_sktrace.store import open_cache
from kubectl_sktrace.store.bodies import chain_from_json, decode_body
from kubectl_sktrace.store.recording import (
    OP_APPLIED,
    OP_DELETED,
    EventRow,
    Identity,
    OwnerRecord,
    Recording,
)

DEPLOY = GVK("apps", "v1", "Deployment")
RS = GVK("apps", "v1", "ReplicaSet")
BIG_HASH = (1 << 64) - 5  # above i64: stored signed, read back unsigned


@pytest.fixture
def rec(tmp_path: Path) -> Recording:
    cache = open_cache(tmp_path / "c.db", create=True)
    yield Recording(cache)
    cache.close()


IDENT = Identity(server="https://a:6443", cluster_uid="uid-a", context="ctx", namespace="")


def test_identity_is_stored_then_checked(rec: Recording) -> None:
    rec.check_identity(IDENT)
    rec.check_identity(IDENT)  # the same cluster and scope again: accepted
    assert rec.cache.get_meta("cluster.server") == "https://a:6443"
    assert rec.cache.get_meta("cluster.uid") == "uid-a"
    assert rec.cache.get_meta("scope.namespace") == ""


def test_another_cluster_is_refused_with_the_way_out(rec: Recording) -> None:
    rec.check_identity(IDENT)
    with pytest.raises(CacheError) as err:
        rec.check_identity(Identity(server="https://a:6443", cluster_uid="uid-b", context="ctx", namespace=""))
    assert str(err.value) == (
        f"cache {rec.cache.path} was recorded from another cluster (kube-system uid uid-a, this one is uid-b); "
        "record this cluster into another --cache FILE"
    )
    with pytest.raises(CacheError, match=r"recorded from another cluster \(https://a:6443, this one is https://b:6443\)"):
        rec.check_identity(Identity(server="https://b:6443", cluster_uid="", context="ctx", namespace=""))


def test_same_cluster_behind_another_url_is_accepted(rec: Recording) -> None:
    rec.check_identity(IDENT)
    rec.check_identity(Identity(server="https://lb:443", cluster_uid="uid-a", context="other", namespace=""))


def test_another_scope_is_refused(rec: Recording) -> None:
    rec.check_identity(IDENT)
    run = rec.begin_run(started=100.0, pid=1, config_yaml="")
    with rec.batch():
        rec.mark_synced(run, 101.0)  # an empty cluster recorded: its history (nothing) is of all namespaces
    with pytest.raises(CacheError) as err:
        rec.check_identity(Identity(server="https://a:6443", cluster_uid="uid-a", context="ctx", namespace="team"))
    assert str(err.value) == (
        f"cache {rec.cache.path} records all namespaces, not namespace 'team'; record this scope into another --cache FILE"
    )


def test_a_cache_without_history_takes_the_scope_of_the_next_run(rec: Recording) -> None:
    """A run refused everywhere (every list 403) recorded nothing: the user may retry on one namespace."""
    rec.check_identity(IDENT)
    run = rec.begin_run(started=100.0, pid=1, config_yaml="")
    rec.stop_run(run, 101.0, clean=True)
    rec.check_identity(Identity(server="https://a:6443", cluster_uid="", context="ctx", namespace="team"))
    assert rec.cache.get_meta("scope.namespace") == "team"


def test_runs_heartbeat_synced_and_clean_stop(rec: Recording) -> None:
    assert rec.previous_run() is None
    run = rec.begin_run(started=100.0, pid=os.getpid(), config_yaml="trackedObjects: {}\n")
    with rec.batch():
        rec.heartbeat(run, 101.5)
        rec.mark_synced(run, 101.0)
    prev = rec.previous_run()
    assert prev is not None and (prev.started, prev.stopped, prev.clean) == (100.0, 101.5, False)
    rec.stop_run(run, 102.0, clean=True)
    row = rec.cache.conn.execute("SELECT started, synced, stopped, clean, pid FROM runs").fetchone()
    assert row == (100.0, 101.0, 102.0, 1, os.getpid())


def test_events_objects_and_owner_chain_round_trip(rec: Recording) -> None:
    run = rec.begin_run(started=1.0, pid=1, config_yaml="")
    key = ObjKey(DEPLOY, "ns", "web")
    chain = (ObjKey(RS, "ns", "web-1"), ObjKey(DEPLOY, "ns", "web"))
    with rec.batch():
        rec.append_event(run, EventRow(ts=10, recv=10.25, key=key, uid="u1", op=OP_APPLIED, spec_hash=BIG_HASH,
                                       owner_chain=chain, body={"kind": "Deployment", "spec": {"replicas": 2}}))
        rec.append_event(run, EventRow(ts=11, recv=11.0, key=key, uid="u1", op=OP_DELETED, inferred=True))
        rec.upsert_object(key, uid="u1", spec_hash=BIG_HASH)
    rows = rec.cache.conn.execute("SELECT ts, recv, op, inferred, spec_hash, owner_chain, body FROM events ORDER BY id").fetchall()
    assert rows[0][:4] == (10, 10.25, 0, 0) and rows[0][4] == BIG_HASH - (1 << 64)
    assert chain_from_json(rows[0][5]) == chain
    assert decode_body(rows[0][6]) == {"kind": "Deployment", "spec": {"replicas": 2}}
    assert rows[1] == (11, 11.0, 1, 1, None, None, None)
    live = rec.load_live_objects()
    assert live[key].uid == "u1" and live[key].spec_hash == BIG_HASH
    with rec.batch():
        rec.delete_object(key)
    assert rec.load_live_objects() == {}


def test_pods_owners_watch_state_and_discovery(rec: Recording) -> None:
    with rec.batch():
        rec.insert_pod(uid="p1", namespace="ns", name="a", owner=ObjKey(DEPLOY, "ns", "web"), stable_hash=BIG_HASH,
                       start_ts=None, end_ts=None, first_seen=1.0)
        rec.insert_pod(uid="p2", namespace="ns", name="b", owner=None, stable_hash=None, start_ts=3, end_ts=None, first_seen=1.0)
        rec.update_pod("p2", start_ts=3, end_ts=9, end_inferred=True, live=False)
        rec.upsert_owner(ObjKey(RS, "ns", "web-1"), OwnerRecord("r1", (OwnerRef(DEPLOY, "web", "d1"),)), fetched=2.0)
        rec.set_watch_state(POD, "42", 3.0)
        rec.set_watch_state(POD, "43", 4.0)
    assert list(rec.load_live_pods()) == ["p1"]
    assert rec.cache.conn.execute("SELECT owner_gvk, owner_namespace, owner_name FROM pods WHERE uid='p1'").fetchone() == (
        "apps/v1.Deployment", "ns", "web")
    assert rec.cache.conn.execute("SELECT start_ts, end_ts, end_inferred, live FROM pods WHERE uid='p2'").fetchone() == (3, 9, 1, 0)
    assert rec.load_owners() == {ObjKey(RS, "ns", "web-1"): OwnerRecord("r1", (OwnerRef(DEPLOY, "web", "d1"),))}
    assert rec.load_owner(ObjKey(RS, "ns", "nope")) is None
    assert rec.cache.conn.execute("SELECT resource_version FROM watch_state").fetchall() == [("43",)]
    rec.save_discovery({"apps/v1": {"resources": []}}, fetched=5.0)
    assert rec.load_discovery() == {"apps/v1": {"resources": []}}


def test_an_uncommitted_batch_leaves_nothing(rec: Recording) -> None:
    rec.begin()
    rec.set_watch_state(POD, "1", 1.0)
    rec.rollback()
    assert not rec.in_batch
    assert rec.cache.conn.execute("SELECT count(*) FROM watch_state").fetchone() == (0,)


def test_reader_sees_committed_batches_while_writer_holds_the_file(rec: Recording, tmp_path: Path) -> None:
    rec.begin()
    rec.set_watch_state(POD, "1", 1.0)
    rec.commit()
    rec.begin()
    rec.set_watch_state(POD, "2", 2.0)
    reader = sqlite3.connect(str(tmp_path / "c.db"))
    assert reader.execute("SELECT resource_version FROM watch_state").fetchall() == [("1",)]
    rec.commit()
    assert reader.execute("SELECT resource_version FROM watch_state").fetchall() == [("2",)]
    reader.close()
