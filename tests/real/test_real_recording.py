"""The recorder against a real kube-apiserver v1.28 (the real tier, tests/realk8s.py): a live recording, a stop
with changes made meanwhile and the restart's reconciliation, each checked against what the server holds.

What is asserted is what docs/spec.md promises (§4, §5): every spec change of a tracked object is one version at
the second it happened, a metadata or data change a revision, a deletion a deletion; the live state the cache
keeps is the server's (same resourceVersion, same spec hash); a pod's lifecycle starts when it runs and ends when
it is deleted; a restart records what vanished while it was stopped as deleted and what changed as changed.
"""

from __future__ import annotations

import calendar
import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from kubectl_sktrace.store.connection import from_db_hash
from kubectl_sktrace.store.versions import APPLIED, DATA, DELETED, METADATA
from kubectl_sktrace.store.viewing import Version, version
from kubectl_sktrace.trace.hashing import spec_hash
from realk8s import CONFIGMAP, DEPLOY, ControlPlane, configmap, deployment, start_recorder, versions, wait_for_op
from reliability_support import query, run_cli, wait_rows

pytestmark = [pytest.mark.timeout(240)]

@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def last_version(cache: Path, gvk: str, namespace: str, name: str) -> Version:
    from kubectl_sktrace.store import open_cache_readonly

    (event_id,) = query(cache, "SELECT max(id) FROM events WHERE gvk = ? AND namespace = ? AND name = ?", gvk, namespace, name)[0]
    reader = open_cache_readonly(cache)
    try:
        found = version(reader, event_id)
    finally:
        reader.close()
    assert found is not None
    return found


def assert_live_matches_server(cache: Path, plane: ControlPlane, gvk: str, namespace: str, name: str, resource: str) -> None:
    """The cache's live object is the server's object now: its uid, spec hash, and the last version's spec (or data)
    and labels."""
    server = plane.get_json("-n", namespace, resource, name)
    rows = query(cache, "SELECT uid, spec_hash FROM objects WHERE gvk = ? AND namespace = ? AND name = ?", gvk, namespace, name)
    assert len(rows) == 1, rows
    uid, hashed = rows[0]
    assert uid == server["metadata"]["uid"]
    assert from_db_hash(hashed) == spec_hash(server.get("spec"))
    body = last_version(cache, gvk, namespace, name).body
    assert body is not None
    assert body.get("spec") == server.get("spec") and body.get("data") == server.get("data")
    assert body["metadata"].get("labels") == server["metadata"].get("labels")


def test_a_live_recording_holds_every_change_the_server_made_and_its_last_state(real_cluster: ControlPlane, tmp_path: Path, home: Path) -> None:
    plane, cache = real_cluster, tmp_path / "cache.db"
    ns = plane.namespace("live")
    recorder = start_recorder(plane, cache, home, tmp_path)
    try:
        plane.apply(deployment(ns, "web"))
        plane.apply(configmap(ns, "settings", {"mode": "a"}))
        plane.apply(deployment(ns, "api"))
        wait_for_op(cache, DEPLOY, ns, "web", APPLIED)
        plane.kubectl("-n", ns, "scale", "deployment", "web", "--replicas=2")  # the scale subresource
        wait_for_op(cache, DEPLOY, ns, "web", APPLIED, count=2)
        plane.kubectl("-n", ns, "patch", "deployment", "web", "--type=merge", "-p", '{"spec":{"replicas":3}}')
        wait_for_op(cache, DEPLOY, ns, "web", APPLIED, count=3)
        plane.kubectl("-n", ns, "set", "image", "deployment/web", "main=nginx:1.26")
        wait_for_op(cache, DEPLOY, ns, "web", APPLIED, count=4)
        plane.kubectl("-n", ns, "label", "deployment", "web", "tier=canary")
        plane.kubectl("-n", ns, "patch", "configmap", "settings", "--type=merge", "-p", '{"data":{"mode":"b"}}')
        wait_rows(cache, "SELECT 1 FROM pods WHERE namespace = ? AND owner_name = 'api' AND start_ts IS NOT NULL", ns)
        plane.kubectl("-n", ns, "delete", "deployment", "api", "--wait=true")
        wait_for_op(cache, DEPLOY, ns, "api", DELETED)
        wait_rows(cache, "SELECT 1 FROM pods WHERE namespace = ? AND owner_name = 'api' AND end_ts IS NOT NULL", ns)
        wait_for_op(cache, DEPLOY, ns, "web", METADATA)
        wait_for_op(cache, CONFIGMAP, ns, "settings", DATA)
        pods = plane.get_json("-n", ns, "pods", "-l", "app=web")["items"]
        running = {pod["metadata"]["uid"] for pod in pods if pod["status"].get("phase") == "Running"}
        wait_rows(cache, "SELECT 1 FROM pods WHERE namespace = ? AND owner_name = 'web' AND start_ts IS NOT NULL "
                         "GROUP BY namespace HAVING count(*) >= ?", ns, len(running))
    finally:
        assert recorder.stop() == 0, recorder.output()

    assert versions(cache, DEPLOY, ns, "web") == [APPLIED, APPLIED, APPLIED, APPLIED, METADATA]
    assert versions(cache, DEPLOY, ns, "api") == [APPLIED, DELETED]
    assert versions(cache, CONFIGMAP, ns, "settings") == [APPLIED, DATA]
    assert_live_matches_server(cache, plane, DEPLOY, ns, "web", "deployment")
    assert_live_matches_server(cache, plane, CONFIGMAP, ns, "settings", "configmap")
    assert query(cache, "SELECT 1 FROM objects WHERE namespace = ? AND name = 'api'", ns) == []
    # each recorded version carries the second the server made it: the deletion's row lies within the run
    (deleted_ts,) = query(cache, "SELECT ts FROM events WHERE namespace = ? AND name = 'api' AND op = ?", ns, DELETED)[0]
    started, stopped = query(cache, "SELECT started, stopped FROM runs ORDER BY id DESC LIMIT 1")[0]
    assert started - 1 <= deleted_ts <= stopped
    # the api Deployment's pods ended (the real server deletes a pod twice: graceful, then the kubelet's final delete)
    ended = query(cache, "SELECT start_ts, end_ts FROM pods WHERE namespace = ? AND owner_name = 'api'", ns)
    assert ended and all(start is not None and end is not None and start <= end for start, end in ended), ended
    exported = run_cli(["export", "--cache", str(cache), "--kubeconfig", str(plane.kubeconfig), "-n", ns,
                        "-s", f"@{int(started)}", "-O", str(tmp_path / "t.sktrace"), "--all-changes"], home=home)
    assert exported.code == 0, exported.describe()
    inspected = run_cli(["inspect", str(tmp_path / "t.sktrace"), "-o", "json"], home=home)
    assert inspected.code == 0, inspected.describe()


def test_a_restart_reconciles_what_changed_on_the_server_while_no_recorder_ran(real_cluster: ControlPlane, tmp_path: Path, home: Path) -> None:
    plane, cache = real_cluster, tmp_path / "cache.db"
    ns = plane.namespace("restart")
    plane.apply(deployment(ns, "web", replicas=2))
    plane.apply(deployment(ns, "gone"))
    plane.apply(configmap(ns, "settings", {"mode": "a"}))
    plane.kubectl("-n", ns, "rollout", "status", "deployment/gone", "--timeout=60s")
    recorder = start_recorder(plane, cache, home, tmp_path)
    try:
        wait_rows(cache, "SELECT 1 FROM pods WHERE namespace = ? AND owner_name = 'gone' AND start_ts IS NOT NULL", ns)
    finally:
        assert recorder.stop() == 0, recorder.output()
    (gone_pod,) = query(cache, "SELECT uid FROM pods WHERE namespace = ? AND owner_name = 'gone'", ns)[0]

    plane.kubectl("-n", ns, "scale", "deployment", "web", "--replicas=3")
    plane.kubectl("-n", ns, "label", "deployment", "web", "tier=canary")
    plane.kubectl("-n", ns, "patch", "configmap", "settings", "--type=merge", "-p", '{"data":{"mode":"b"}}')
    plane.kubectl("-n", ns, "delete", "deployment", "gone", "--wait=true")
    plane.apply(deployment(ns, "born"))
    plane.kubectl("-n", ns, "wait", "--for=delete", f"pod/{query(cache, 'SELECT name FROM pods WHERE uid = ?', gone_pod)[0][0]}",
                  "--timeout=60s")

    recorder = start_recorder(plane, cache, home, tmp_path)
    assert recorder.stop() == 0, recorder.output()

    def rows(name: str) -> list[tuple[int, int]]:
        return [(op, inferred) for op, inferred in query(
            cache, "SELECT op, inferred FROM events WHERE namespace = ? AND name = ? AND run_id = 2 ORDER BY id", ns, name)]

    # every row a restart writes is reconstructed (inferred): what happened offline, at a time it cannot know...
    assert rows("web") == [(APPLIED, 1)]  # the spec and the labels changed: one version
    assert rows("settings") == [(DATA, 1)]
    assert rows("born") == [(APPLIED, 1)]
    assert rows("gone") == [(DELETED, 1)]
    # ...except a creation, stamped with the creation time the server gave it
    born = plane.get_json("-n", ns, "deployment", "born")
    (born_ts,) = query(cache, "SELECT ts FROM events WHERE namespace = ? AND name = 'born'", ns)[0]
    assert born_ts == calendar.timegm(time.strptime(born["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ"))
    assert_live_matches_server(cache, plane, DEPLOY, ns, "web", "deployment")
    assert_live_matches_server(cache, plane, CONFIGMAP, ns, "settings", "configmap")
    ((end, inferred),) = query(cache, "SELECT end_ts, end_inferred FROM pods WHERE uid = ?", gone_pod)
    assert end is not None and inferred == 1
    status = run_cli(["status", "--cache", str(cache), "--kubeconfig", str(plane.kubeconfig), "-o", "json"], home=home)
    assert status.code == 0, status.describe()
    kinds = {kind["kind"]: kind for kind in json.loads(status.stdout)["reconciliation"]["kinds"]}

    def named(kind: str, outcome: str) -> list[tuple[str, str]]:
        return [(found["name"], found.get("what", "")) for found in kinds[kind][outcome]["objects"] if found["namespace"] == ns]

    assert named(DEPLOY, "deletedWhileOffline") == [("gone", "")]
    assert named(DEPLOY, "createdWhileOffline") == [("born", "")]
    assert named(DEPLOY, "changedWhileOffline") == [("web", "spec changed; labels changed: tier=canary")]
    assert named(CONFIGMAP, "changedWhileOffline") == [("settings", "data changed: mode")]
