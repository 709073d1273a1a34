"""``kubectl-sktrace start`` and ``status`` end to end: the real CLI in a subprocess, the emulator in this process.

Each test is one of the recorder issue's "Done when" scenarios. Recorder runs are short (``--duration``);
tests that act on the cluster while a recorder runs wait for its ``synced`` mark in the cache first.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from reliability_support import run_cli

from kubectl_sktrace.store.bodies import decode_body
from sktrace_emulator import Emulator

pytestmark = pytest.mark.timeout(60)

NS = "default"


@pytest.fixture
def emu(emulator: Emulator) -> Emulator:
    """The shared emulator (https, a token, bookmarks every 0.2 s): the recorder sees what a cluster sends."""
    return emulator


@pytest.fixture
def kubeconfig(emulator_kubeconfig: str) -> str:
    return emulator_kubeconfig


@pytest.fixture
def cache(tmp_path: Path) -> str:
    return str(tmp_path / "state" / "cache.db")


def env() -> dict[str, str]:
    out = dict(os.environ)
    out.pop("KUBECONFIG", None)
    return out


def sktrace(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "kubectl_sktrace", *args], capture_output=True, text=True, env=env(), timeout=60)
    if check and result.returncode != 0:
        raise AssertionError(f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


def start(kubeconfig: str, cache: str, *extra: str, duration: str = "1") -> subprocess.CompletedProcess[str]:
    return sktrace("start", "--kubeconfig", kubeconfig, "--cache", cache, "--duration", duration, *extra, check=False)


def start_background(kubeconfig: str, cache: str, *extra: str, duration: str = "30") -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kubectl_sktrace", "start", "--kubeconfig", kubeconfig, "--cache", cache, "--duration", duration, *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(),
    )


def query(cache: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{cache}?mode=rw", uri=True)  # never creates it: a recorder refuses a cache of 0644
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def wait_synced(cache: str, run: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.time() + 20
    while time.time() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            if query(cache, "SELECT synced FROM runs WHERE id = ? AND synced IS NOT NULL", run):
                return
        except sqlite3.OperationalError:
            pass
        time.sleep(0.05)
    raise AssertionError("the recorder never synced")


def wait_for(cache: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    deadline = time.time() + 10
    while time.time() < deadline:
        rows = query(cache, sql, *params)
        if rows:
            return rows
        time.sleep(0.05)
    raise AssertionError(f"nothing for {sql}")


def stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    return out, err


# -- a tiny controller: Deployment -> ReplicaSet -> Pods, as the recorder sees them ------------------------


def iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def make_deployment(emu: Emulator, name: str, *, replicas: int = 1, started: float | None = None) -> list[dict[str, Any]]:
    """A Deployment, its ReplicaSet and running pods; returns the pods."""
    labels = {"app": name}
    dep = emu.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
                      "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                               "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    rs = emu.create({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                     "metadata": {"name": f"{name}-rs", "namespace": NS, "labels": labels,
                                  "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
                                                       "uid": dep["metadata"]["uid"], "controller": True}]},
                     "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": dep["spec"]["template"]}})
    return [make_pod(emu, f"{name}-rs-{i}", owner=rs, started=started) for i in range(replicas)]


def make_pod(emu: Emulator, name: str, *, owner: dict[str, Any] | None, started: float | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
                                    "uid": owner["metadata"]["uid"], "controller": True}]
    created = emu.create({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    if started is not None:
        created["status"] = {"phase": "Running", "containerStatuses": [{"name": "c", "state": {"running": {"startedAt": iso(started)}}}]}
        created = emu.update_status(created)
    return created


def finish_pod(emu: Emulator, name: str, *, started: float, finished: float) -> None:
    pod = emu.get("v1", "Pod", NS, name)
    assert pod is not None
    pod["status"] = {"phase": "Succeeded", "containerStatuses": [{"name": "c", "state": {"terminated": {
        "startedAt": iso(started), "finishedAt": iso(finished), "exitCode": 0}}}]}
    emu.update_status(pod)


def events(cache: str, name: str | None = None) -> list[tuple[Any, ...]]:
    sql = "SELECT ts, gvk, name, op, inferred FROM events"
    if name is not None:
        return query(cache, sql + " WHERE name = ? ORDER BY id", name)
    return query(cache, sql + " ORDER BY id")


def run_row(cache: str, run: int) -> tuple[Any, ...]:
    return query(cache, "SELECT started, synced, stopped, clean FROM runs WHERE id = ?", run)[0]


# -- scenario 1 --------------------------------------------------------------------------------------------


def test_fresh_cache_records_a_workload_and_status_shows_it(emu: Emulator, kubeconfig: str, cache: str) -> None:
    now = time.time()
    make_deployment(emu, "web", replicas=2, started=now - 30)
    proc = start_background(kubeconfig, cache, duration="3")
    wait_synced(cache, 1, proc)
    make_deployment(emu, "api", replicas=1, started=time.time())
    emu.patch("apps/v1", "Deployment", NS, "web", {"spec": {"replicas": 3}})
    emu.patch("apps/v1", "Deployment", NS, "web", {"status": {"observedGeneration": 9}})  # status only: nothing
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "initial sync done" in err
    assert out.splitlines()[0].startswith("Recorded 3 events in ")
    assert "apps/v1.Deployment   1         3          0           0       0               0                        0               3" in out, out
    assert [(e[2], e[3]) for e in events(cache)] == [("web", 0), ("api", 0), ("web", 0)]
    assert query(cache, "SELECT owner_name, count(*) FROM pods GROUP BY owner_name ORDER BY 1") == [("api", 1), ("web", 2)]

    status = sktrace("status", "--cache", cache, "-o", "json")
    data = json.loads(status.stdout)
    assert data["cluster"]["server"] == emu.url and data["cluster"]["kubeSystemUid"] == emu.cluster_uid
    assert [(r["run"], r["state"]) for r in data["runs"]] == [(1, "clean")] and data["runs"][0]["synced"]
    (kind,) = data["kinds"]
    position = query(cache, "SELECT resource_version FROM watch_state WHERE gvk = 'apps/v1.Deployment'")
    assert kind == {"kind": "apps/v1.Deployment", "live": 2, "applied": 3, "metadataChanges": 0, "dataChanges": 0, "deleted": 0,
                    "deletedWhileOffline": 0,
                    "watchResourceVersion": position[0][0], "watchUpdated": kind["watchUpdated"]} and kind["watchUpdated"]
    assert data["pods"] == {"seen": 3, "live": 3, "withLifecycleOwner": 3, "running": 3, "finished": 0}
    table = sktrace("status", "--cache", cache).stdout
    assert "scope            all namespaces" in table and "apps/v1.Deployment  2       3          0" in table


# -- scenario 2 --------------------------------------------------------------------------------------------


def test_restart_reconciles_what_happened_offline(emu: Emulator, kubeconfig: str, cache: str) -> None:
    now = time.time()
    make_deployment(emu, "old", replicas=2, started=now - 60)
    make_deployment(emu, "keep", replicas=1, started=now - 60)
    assert start(kubeconfig, cache).returncode == 0
    emu.delete("apps/v1", "Deployment", NS, "old", graceful=False)  # its ReplicaSet and pods go with it
    assert emu.get("v1", "Pod", NS, "old-rs-0") is None
    make_deployment(emu, "new", replicas=1, started=time.time())
    second = start(kubeconfig, cache)
    assert second.returncode == 0, second.stderr
    started2 = int(run_row(cache, 2)[0])
    old_events = events(cache, "old")
    assert old_events[0][3] == 0 and old_events[1][1:] == ("apps/v1.Deployment", "old", 1, 1)
    assert started2 <= old_events[1][0] <= started2 + 1
    new_events = events(cache, "new")
    assert [(e[3], e[4]) for e in new_events] == [(0, 1)]  # applied, reconstructed (created while offline)
    assert run_row(cache, 1)[2] <= new_events[0][0] + 1
    pods = query(cache, "SELECT name, start_ts, end_ts, end_inferred, live FROM pods WHERE owner_name = 'old' ORDER BY name")
    assert [(p[0], p[3], p[4]) for p in pods] == [("old-rs-0", 1, 0), ("old-rs-1", 1, 0)]
    assert all(p[2] == old_events[1][0] and p[1] == int(now - 60) for p in pods)
    assert "apps/v1.Deployment   2         1          0           0       0               1" in second.stdout, second.stdout


# -- scenario 3 --------------------------------------------------------------------------------------------


def test_offline_finish_scale_and_recreate(emu: Emulator, kubeconfig: str, cache: str) -> None:
    now = time.time()
    make_deployment(emu, "batch", replicas=1, started=now - 100)
    make_deployment(emu, "scaled", replicas=1)
    make_deployment(emu, "again", replicas=1)
    assert start(kubeconfig, cache).returncode == 0
    finish_pod(emu, "batch-rs-0", started=now - 100, finished=now - 1)
    emu.patch("apps/v1", "Deployment", NS, "scaled", {"spec": {"replicas": 4}})
    emu.patch("apps/v1", "Deployment", NS, "scaled", {"spec": {"replicas": 5}})
    emu.delete("apps/v1", "Deployment", NS, "again", graceful=False)
    make_deployment(emu, "again", replicas=1)
    assert start(kubeconfig, cache).returncode == 0
    assert query(cache, "SELECT start_ts, end_ts, end_inferred FROM pods WHERE name = 'batch-rs-0'") == [(int(now - 100), int(now - 1), 0)]
    assert [(e[3], e[4]) for e in events(cache, "scaled")] == [(0, 0), (0, 1)]
    assert [(e[3], e[4]) for e in events(cache, "again")] == [(0, 0), (1, 1), (0, 1)]
    uids = query(cache, "SELECT uid FROM events WHERE name = 'again' ORDER BY id")
    assert uids[0] == uids[1] != uids[2]


# -- scenario 4 --------------------------------------------------------------------------------------------


def test_vanished_object_caught_by_relist_and_dropped_stream_resumes(emu: Emulator, kubeconfig: str, cache: str) -> None:
    make_deployment(emu, "ghost", replicas=1, started=time.time())
    make_deployment(emu, "stay", replicas=1)
    proc = start_background(kubeconfig, cache)
    wait_synced(cache, 1, proc)
    emu.vanish("apps/v1", "Deployment", NS, "ghost")
    emu.vanish("v1", "Pod", NS, "ghost-rs-0")
    emu.force_410("Deployment")
    emu.force_410("Pod")
    emu.drop_watches()
    wait_for(cache, "SELECT 1 FROM events WHERE name = 'ghost' AND op = 1")
    for replicas in (2, 3, 4):
        emu.patch("apps/v1", "Deployment", NS, "stay", {"spec": {"replicas": replicas}})
        if replicas == 3:
            emu.drop_watches()
        time.sleep(0.3)
    emu.drop_watches()
    emu.patch("apps/v1", "Deployment", NS, "stay", {"spec": {"replicas": 5}})
    wait_for(cache, "SELECT 1 FROM events WHERE name = 'stay' AND op = 0 GROUP BY name HAVING count(*) = 5")
    stop(proc)
    assert [(e[3], e[4]) for e in events(cache, "ghost")] == [(0, 0), (1, 1)]
    # every change once, none twice; a change made while the stream was cut is caught up (inferred), not live
    assert [e[3] for e in events(cache, "stay")] == [0] * 5 and events(cache, "stay")[0][4] == 0
    assert query(cache, "SELECT count(*) FROM coverage_gaps WHERE until IS NOT NULL AND until >= since")[0][0] >= 2
    replicas = [decode_body(b[0])["spec"]["replicas"] for b in query(cache, "SELECT body FROM events WHERE name = 'stay' ORDER BY id")]
    assert replicas == [1, 2, 3, 4, 5]
    assert query(cache, "SELECT end_inferred, live FROM pods WHERE name = 'ghost-rs-0'") == [(1, 0)]


# -- scenario 5 --------------------------------------------------------------------------------------------


def test_second_recorder_on_the_same_cache_is_refused(emu: Emulator, kubeconfig: str, cache: str) -> None:
    proc = start_background(kubeconfig, cache)
    wait_synced(cache, 1, proc)
    second = start(kubeconfig, cache)
    assert second.returncode == 1
    assert second.stderr == (
        f"Error: another recorder (pid {proc.pid}) is already writing to {cache}; stop it first, or record into another --cache\n"
    )
    stop(proc)


def test_cache_from_another_cluster_is_refused(emu: Emulator, kubeconfig: str, cache: str, tmp_path: Path) -> None:
    assert start(kubeconfig, cache).returncode == 0
    with Emulator(tls=False) as other:
        other_config = str(tmp_path / "other")
        other.write_kubeconfig(other_config)
        refused = start(other_config, cache)
    assert refused.returncode == 1
    assert refused.stderr == (
        f"Error: cache {cache} was recorded from another cluster (kube-system uid {emu.cluster_uid}, this one is "
        f"{other.cluster_uid}); record this cluster into another --cache FILE\n"
    )
    assert len(query(cache, "SELECT id FROM runs")) == 1


def test_kill_9_leaves_a_sound_cache_and_the_next_start_reconciles(emu: Emulator, kubeconfig: str, cache: str) -> None:
    make_deployment(emu, "doomed", replicas=1, started=time.time() - 5)
    proc = start_background(kubeconfig, cache)
    wait_synced(cache, 1, proc)
    for replicas in range(2, 6):
        emu.patch("apps/v1", "Deployment", NS, "doomed", {"spec": {"replicas": replicas}})
    wait_for(cache, "SELECT 1 FROM events WHERE name = 'doomed' GROUP BY name HAVING count(*) = 5")
    proc.kill()
    proc.wait()
    assert query(cache, "PRAGMA integrity_check") == [("ok",)]
    assert run_row(cache, 1)[3] == 0
    emu.delete("apps/v1", "Deployment", NS, "doomed", graceful=False)
    assert start(kubeconfig, cache).returncode == 0
    assert [(e[3], e[4]) for e in events(cache, "doomed")][-1] == (1, 1)
    assert query(cache, "SELECT end_inferred, live FROM pods WHERE name = 'doomed-rs-0'") == [(1, 0)]
    data = json.loads(sktrace("status", "--cache", cache, "-o", "json").stdout)
    assert [r["state"] for r in data["runs"]] == ["crashed", "clean"] and len(data["gaps"]) == 1


# -- scenario 6 --------------------------------------------------------------------------------------------


def test_403_on_one_kind_records_the_others_with_one_warning_and_status_tells_what_to_grant(emu: Emulator, kubeconfig: str,
                                                                                         cache: str) -> None:
    make_deployment(emu, "web", replicas=1)
    # a role without StatefulSets for the whole run: asked again, never granted
    emu.grant_rules([{"apiGroups": ["", "apps", "batch"], "verbs": ["get", "list", "watch"],
                      "resources": ["namespaces", "pods", "deployments", "replicasets", "jobs", "cronjobs"]}])
    result = start(kubeconfig, cache, duration="3")
    assert result.returncode == 0, result.stderr
    hint = ("grant get, list and watch on statefulsets.apps: 'kubectl sktrace rbac --service-account default:sktrace "
            "[--config FILE]' prints the ClusterRole and binding to apply")
    assert [line for line in result.stderr.splitlines() if "statefulsets" in line] == [  # one line, not one per retry
        f"Warning: forbidden: cannot list statefulsets.apps in all namespaces; {hint}; apps/v1.StatefulSet is not recorded "
        "until it may be read (asked again at least every 48s)"
    ]
    assert [e[2] for e in events(cache)] == ["web"]
    refused = [line for line in result.stdout.splitlines() if line.startswith("Refused: forbidden ")]
    assert len(refused) == 1 and refused[0].endswith("; apps/v1.StatefulSet): not recorded then; what changed was "
                                                     "reconstructed once it could be read, not seen live."), result.stdout
    # remembered: status tells when the kind was refused, why, and the fix
    shown = sktrace("status", "--cache", cache).stdout
    (section,) = [part for part in shown.split("\n\n") if part.startswith("Not recorded at the end of the latest run (1):")]
    (line,) = section.splitlines()[1:]
    assert line.startswith("  apps/v1.StatefulSet since ") and line.endswith(f": forbidden: cannot list statefulsets.apps in "
                                                                             f"all namespaces; {hint}"), section
    assert "interrupted" in shown and "forbidden 20" in shown  # a kind refused is blind time, as an outage
    data = json.loads(sktrace("status", "--cache", cache, "-o", "json").stdout)
    assert [(u["run"], u["kind"], u["cause"]) for u in data["notRecorded"]] == [(1, "apps/v1.StatefulSet", "forbidden")]
    assert [(o["cause"], o["kinds"]) for o in data["outages"]] == [("forbidden", ["apps/v1.StatefulSet"])]
    emu.grant_view(None)  # granted
    assert start(kubeconfig, cache).returncode == 0  # this run lists StatefulSets
    assert "Not recorded" not in sktrace("status", "--cache", cache).stdout  # the latest run recorded every kind


def test_403_on_every_kind_exits_1_with_the_rbac_hint(emu: Emulator, kubeconfig: str, cache: str) -> None:
    for kind in ("Deployment", "StatefulSet", "Job", "CronJob"):
        emu.fail(kind, 403, count=1000)
    result = start(kubeconfig, cache, duration="10")
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (  # the emulator's kubeconfig context has the namespace "default"
        "Error: forbidden to list and watch every tracked kind at the cluster scope; you may only have access to "
        "namespace 'default': record it with -n default, or grant get, list and watch on deployments.apps, "
        "statefulsets.apps, jobs.batch, cronjobs.batch, and list and watch on pods: 'kubectl sktrace rbac --service-account default:sktrace "
        "[--config FILE]' prints the ClusterRole and binding to apply, or track other kinds with --config"
    )
    assert "Traceback" not in result.stderr


def test_a_user_who_may_view_one_namespace_is_warned_once_per_kind_then_told_to_record_it(emu: Emulator, tmp_path: Path) -> None:
    """A RoleBinding to ``view`` in team-a and a kubeconfig context whose namespace is team-a: every list across
    the cluster is refused (the API server's own 403), the same lists in team-a are allowed. The default cache, as
    a user has it: the refused run must not keep ``-n team-a`` from recording into it."""
    emu.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "shop", "namespace": "team-a"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                         "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    emu.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "hidden", "namespace": "team-b"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                         "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    emu.grant_view(["team-a"], user="jane")
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig", namespace="team-a")
    hint = ": 'kubectl sktrace rbac --user jane [--config FILE]' prints the ClusterRole and binding to apply"

    refused = run_cli(["start", "--kubeconfig", kubeconfig, "--duration", "10s"], home=tmp_path)
    assert refused.code == 1 and "Traceback" not in refused.stderr, refused.describe()
    *warnings, error = refused.stderr.splitlines()
    per_kind = {name: f"Warning: forbidden: cannot list {name} in all namespaces; grant {'list and watch' if name == 'pods' else 'get, list and watch'} "
                      f"on {name}{hint}; {gvk} is not recorded until it may be read (asked again at least every 48s)"
                for name, gvk in [("deployments.apps", "apps/v1.Deployment"), ("statefulsets.apps", "apps/v1.StatefulSet"),
                                  ("jobs.batch", "batch/v1.Job"), ("cronjobs.batch", "batch/v1.CronJob"),
                                  ("replicasets.apps", "apps/v1.ReplicaSet"), ("pods", "v1.Pod")]}
    # one line per refused kind; the ReplicaSet and Pod watches (owners, lifecycles) list beside the tracked kinds
    # and may be refused after the error is decided
    tracked = {v for k, v in per_kind.items() if k not in ("replicasets.apps", "pods")}
    assert tracked <= set(warnings) <= set(per_kind.values()) and len(warnings) == len(set(warnings)), refused.describe()
    assert error == (
        "Error: forbidden to list and watch every tracked kind at the cluster scope; you may only have access to namespace "
        "'team-a': record it with -n team-a, or grant get, list and watch on deployments.apps, statefulsets.apps, jobs.batch, "
        f"cronjobs.batch, and list and watch on pods{hint}, or track other kinds with --config"
    )

    recorded = run_cli(["start", "--kubeconfig", kubeconfig, "-n", "team-a", "--duration", "2s"], home=tmp_path)
    assert recorded.code == 0 and "Warning" not in recorded.stderr, recorded.describe()
    status = run_cli(["status", "--kubeconfig", kubeconfig], home=tmp_path)
    assert status.code == 0, status.describe()
    assert [line.split(None, 1)[1] for line in status.stdout.splitlines() if line.startswith("scope ")] == ["namespace team-a"]
    data = json.loads(run_cli(["status", "--kubeconfig", kubeconfig, "-o", "json"], home=tmp_path).stdout)
    assert data["cluster"]["namespace"] == "team-a"
    assert [(k["kind"], k["live"]) for k in data["kinds"]] == [("apps/v1.Deployment", 1)]


@pytest.mark.parametrize(("context_namespace", "args", "expected"), [
    ("", [], "Error: forbidden to list and watch every tracked kind at the cluster scope; you may only have access to some "
             "namespaces: record one with -n NAMESPACE, or grant get, list and watch on deployments.apps, statefulsets.apps, "
             "jobs.batch, cronjobs.batch, and list and watch on pods: 'kubectl sktrace rbac --user jane [--config FILE]' prints the ClusterRole "
             "and binding to apply, or track other kinds with --config"),
    ("team-a", ["-n", "team-b"],
     "Error: forbidden to list and watch every tracked kind in namespace 'team-b'; you may only have access to namespace "
     "'team-a': record it with -n team-a, or grant get, list and watch on deployments.apps, statefulsets.apps, jobs.batch, "
     "cronjobs.batch, and list and watch on pods: 'kubectl sktrace rbac -n team-b --user jane [--config FILE]' prints the Role and binding to "
     "apply, or track other kinds with --config"),
    ("default", [],  # a service account's token in a kubeconfig left at 'default' (measured on a real API server)
     "Error: forbidden to list and watch every tracked kind at the cluster scope; you may only have access to namespace "
     "'team-a': record it with -n team-a, or grant get, list and watch on deployments.apps, statefulsets.apps, jobs.batch, "
     "cronjobs.batch, and list and watch on pods: 'kubectl sktrace rbac --service-account team-a:recorder [--config FILE]' prints "
     "the ClusterRole and binding to apply, or track other kinds with --config"),
], ids=["no-context-namespace", "another-namespace", "a-service-account-s-own-namespace"])
def test_refused_everywhere_the_error_puts_a_namespace_first(emu: Emulator, tmp_path: Path, context_namespace: str,
                                                             args: list[str], expected: str) -> None:
    emu.grant_view(["team-a"], user="system:serviceaccount:team-a:recorder" if "--service-account" in expected else "jane")
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig", namespace=context_namespace)
    refused = run_cli(["start", "--kubeconfig", kubeconfig, "--duration", "10s", *args], home=tmp_path)
    assert refused.code == 1 and refused.error_lines() == [expected], refused.describe()


# -- scenario 7 --------------------------------------------------------------------------------------------


def test_secrets_tracked_through_the_config_are_stored_without_values(emu: Emulator, kubeconfig: str, cache: str, tmp_path: Path) -> None:
    config = tmp_path / "tracer.yaml"
    config.write_text("trackedObjects:\n  v1.Secret: {}\n  apps/v1.Deployment:\n    trackLifecycle: true\n")
    emu.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": NS},
                "data": {"password": "aHVudGVyMg=="}, "type": "Opaque"})
    proc = start_background(kubeconfig, cache, "--config", str(config))
    wait_synced(cache, 1, proc)
    emu.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "api", "namespace": NS},
                "stringData": {"token": "s3cr3t"}, "data": {"key": "czNjcjN0"}, "type": "Opaque"})
    wait_for(cache, "SELECT 1 FROM events WHERE name = 'api'")
    stop(proc)
    bodies = {name: decode_body(body) for name, body in query(cache, "SELECT name, body FROM events WHERE gvk = 'v1.Secret'")}
    assert bodies["db"]["data"] == {"password": ""}
    assert all(v == "" for v in bodies["api"].get("data", {}).values()) and all(v == "" for v in bodies["api"].get("stringData", {}).values())
    raw = Path(cache).read_bytes() + (Path(cache + "-wal").read_bytes() if Path(cache + "-wal").exists() else b"")
    assert b"aHVudGVyMg" not in raw and b"czNjcjN0" not in raw


def test_bad_duration_is_a_usage_error(kubeconfig: str, cache: str) -> None:
    result = sktrace("start", "--kubeconfig", kubeconfig, "--cache", cache, "--duration", "soon", check=False)
    assert result.returncode == 1
    assert result.stderr == "Error: invalid duration 'soon': use a number with a unit, like '90s', '10m', '2h', '1d' or '1h30m'\n"


# -- scope and served kinds --------------------------------------------------------------------------------


def test_one_namespace_is_recorded_and_the_scope_is_kept(emu: Emulator, kubeconfig: str, cache: str, tmp_path: Path) -> None:
    make_deployment(emu, "web", replicas=1)
    emu.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "other", "namespace": "team"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                         "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    assert start(kubeconfig, cache, "-n", "team").returncode == 0
    assert [e[2] for e in events(cache)] == ["other"]
    widened = start(kubeconfig, cache)
    assert widened.returncode == 1
    assert widened.stderr == (
        f"Error: cache {cache} records namespace 'team', not all namespaces; record this scope into another --cache FILE\n"
    )


def test_a_namespace_that_does_not_exist_is_said_one_that_is_empty_is_not(emu: Emulator, kubeconfig: str, tmp_path: Path) -> None:
    make_deployment(emu, "web", replicas=1)
    typo = start(kubeconfig, str(tmp_path / "typo.db"), "-n", "defualt")
    assert typo.returncode == 0
    assert ("Warning: namespace 'defualt' does not exist: nothing was listed in it; recording what is created there "
            "(a typo? 'kubectl get namespaces' lists them)\n") in typo.stderr
    emu.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "quiet"}})
    empty = start(kubeconfig, str(tmp_path / "empty.db"), "-n", "quiet")
    assert empty.returncode == 0 and "Warning" not in empty.stderr, empty.stderr


def test_a_kind_the_server_does_not_serve_is_a_warning_while_others_record(emu: Emulator, kubeconfig: str, cache: str,
                                                                           tmp_path: Path) -> None:
    config = tmp_path / "tracer.yaml"
    config.write_text("trackedObjects:\n  example.com/v1.Widget: {}\n  apps/v1.Deployment: {}\n")
    make_deployment(emu, "web", replicas=1)
    result = start(kubeconfig, cache, "--config", str(config))
    assert result.returncode == 0, result.stderr
    (told,) = [line for line in result.stderr.splitlines() if "Widget" in line]  # one line, not one per check
    assert told.startswith("Warning: example.com/v1.Widget is not served by the API server since ") and told.endswith(
        " (the server does not serve example.com/v1.Widget (its discovery does not list it); check the kind and version "
        "in your config, or install its CRD): none of its objects can exist meanwhile; it is recorded once it is served "
        "(checked at least every 24s)"), told
    assert [e[2] for e in events(cache)] == ["web"]
    assert "Not served: example.com/v1.Widget " in result.stdout
    shown = sktrace("status", "--cache", cache).stdout
    assert "Not served during runs (none of their objects could exist then: nothing is missing):" in shown
    assert "interrupted" not in shown  # a kind merely not served is no outage
    config.write_text("trackedObjects:\n  example.com/v1.Widget: {}\n")
    refused = start(kubeconfig, cache, "--config", str(config), "--drop-kinds")
    assert refused.returncode == 1
    assert refused.stderr.splitlines()[-1] == (
        "Error: none of the configured kinds is served by this cluster (example.com/v1.Widget); fix the GVKs in --config"
    )


def test_a_kind_spelt_otherwise_than_discovery_spells_it_is_named_with_the_kind_meant(emu: Emulator, kubeconfig: str, cache: str,
                                                                                      tmp_path: Path) -> None:
    config = tmp_path / "tracer.yaml"
    config.write_text("trackedObjects:\n  apps/v1.Statefulset: {}\n  apps/v1.Deployment: {}\n")
    result = start(kubeconfig, cache, "--config", str(config))
    assert result.returncode == 0, result.stderr
    told = [line for line in result.stderr.splitlines() if "Statefulset" in line]  # one line, the kind meant in it
    assert told == ["Warning: apps/v1.Statefulset is not served by this cluster: did you mean apps/v1.StatefulSet? (a kind is "
                    "spelt as discovery spells it, case included); nothing of it is recorded until the config names it right"], told


def test_sigterm_is_a_prompt_clean_stop(emu: Emulator, kubeconfig: str, cache: str) -> None:
    proc = start_background(kubeconfig, cache, duration="60")
    wait_synced(cache, 1, proc)
    asked = time.time()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert time.time() - asked < 5
    assert run_row(cache, 1)[3] == 1 and out.startswith("Recorded 0 events in ")
    wal = Path(cache + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # checkpointed


def exec_user_kubeconfig(kubeconfig: str, tmp_path: Path, exec_config: dict[str, Any]) -> str:
    """The emulator's kubeconfig with its user's token replaced by an exec credential plugin."""
    import yaml

    doc = yaml.safe_load(Path(kubeconfig).read_text())
    doc["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                        "interactiveMode": "Never", **exec_config}}
    path = tmp_path / "exec-kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.mark.parametrize("hint, expected", [
    ("install no-such-auth-plugin from https://example.com/plugin\n",
     "Error: cannot get the credentials of context 'emulator': exec: executable no-such-auth-plugin not found; "
     "install no-such-auth-plugin from https://example.com/plugin"),
    (None,
     "Error: cannot get the credentials of context 'emulator': exec: executable no-such-auth-plugin not found; "
     "it looks like a client-go credential plugin that is not installed: install it or fix the command in your "
     "kubeconfig (https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins)"),
], ids=["install-hint", "no-hint"])
def test_a_missing_exec_credential_plugin_is_one_line_like_kubectl(kubeconfig: str, cache: str, tmp_path: Path,
                                                                   hint: str | None, expected: str) -> None:
    config = {"command": "no-such-auth-plugin", **({"installHint": hint} if hint else {})}
    result = start(exec_user_kubeconfig(kubeconfig, tmp_path, config), cache)
    assert (result.returncode, result.stderr) == (1, expected + "\n")


def test_a_failing_exec_credential_plugin_reports_its_own_message(kubeconfig: str, cache: str, tmp_path: Path) -> None:
    plugin = tmp_path / "corp-login.sh"
    plugin.write_text("#!/bin/sh\necho \"error: you must be logged in (run 'corp-login' first)\" >&2\nexit 1\n")
    plugin.chmod(0o755)
    result = start(exec_user_kubeconfig(kubeconfig, tmp_path, {"command": str(plugin)}), cache)
    assert (result.returncode, result.stderr) == (1, (
        f"Error: cannot get the credentials of context 'emulator': exec: executable {plugin} failed with exit code 1: "
        "error: you must be logged in (run 'corp-login' first)\n"))


REQUEST_LINE = r"INFO kubectl_sktrace\.kube\.requests: GET {url} 200 OK in \d+ milliseconds"


def test_start_at_v3_logs_each_api_request_as_kubectl_v6_does(emu: Emulator, kubeconfig: str, cache: str) -> None:
    import re

    result = start(kubeconfig, cache, "-v", "3")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "kubectl_sktrace.kube.requests" in line]
    base = re.escape(emu.url) + "/apis/apps/v1/deployments"
    lists = [line for line in lines if re.search(REQUEST_LINE.format(url=base + r"\?limit=500") + "$", line)]
    watches = [line for line in lines if re.search(REQUEST_LINE.format(
        url=base + r"\?allowWatchBookmarks=true&resourceVersion=\d+&timeoutSeconds=\d+&watch=true") + "$", line)]
    # one list, and one line for the watch when its stream opened, not one per event or bookmark (every 0.2 s)
    assert (len(lists), len(watches)) == (1, 1), "\n".join(lines)
    assert any(re.search(REQUEST_LINE.format(url=re.escape(emu.url) + "/apis/apps/v1") + "$", line) for line in lines)
    assert "test-token" not in result.stderr and "Bearer" not in result.stderr


def test_start_at_v2_logs_no_api_request(kubeconfig: str, cache: str) -> None:
    result = start(kubeconfig, cache, "-v", "2")
    assert result.returncode == 0, result.stderr
    assert "kubectl_sktrace.kube.requests" not in result.stderr


def test_quiet_keeps_the_end_of_run_summary_on_stdout(emu: Emulator, kubeconfig: str, cache: str) -> None:
    run = start(kubeconfig, cache, "--quiet")
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    assert run.stdout.startswith("Recorded ") and "KIND " in run.stdout and "apps/v1.Deployment" in run.stdout


def test_start_without_config_keeps_the_last_runs_config_and_says_so(emu: Emulator, kubeconfig: str, cache: str, tmp_path: Path) -> None:
    config = tmp_path / "tracer.yaml"
    config.write_text("trackedObjects:\n  apps/v1.Deployment: {}\n  v1.ConfigMap: {}\n")
    first = start(kubeconfig, cache, "--config", str(config))
    assert first.returncode == 0, first.stderr
    again = start(kubeconfig, cache)
    assert again.returncode == 0, again.stderr
    assert ("no --config: recording with the tracer config of the cache's last run (run 1): apps/v1.Deployment, v1.ConfigMap"
            in again.stderr)
    assert "no longer tracked" not in again.stderr
    with sqlite3.connect(cache) as conn:
        configs = [row[0] for row in conn.execute("SELECT config FROM runs ORDER BY id")]
    assert len(configs) == 2 and configs[0] == configs[1]


def test_the_readme_examples_first_export_is_made_valid_by_the_advice_it_prints(emu: Emulator, kubeconfig: str, cache: str,
                                                                                 tmp_path: Path) -> None:
    """The README's example: Deployments that mount ConfigMaps, recorded with the default config."""
    import random

    from sktrace_emulator import Workload, deployment_object

    rng = random.Random(1)
    with Workload(emu, seed=1):
        for name in ("web", "api"):
            emu.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-config", "namespace": "demo"},
                        "data": {"app.conf": f"name={name}\n"}})
            emu.create({"apiVersion": "apps/v1", "kind": "Deployment", **deployment_object("demo", name, replicas=1, rng=rng)})
        recorded = start(kubeconfig, cache)
    assert recorded.returncode == 0, recorded.stderr
    out = tmp_path / "incident.sktrace"
    first = sktrace("export", "--cache", cache, "-s", "-5m", "-O", str(out))
    (warning,) = [line for line in first.stderr.splitlines() if "validate" in line]
    assert warning.startswith("Warning: the trace would fail 'kubectl sktrace validate' with 2 errors (2 E0005 volume configmap missing): "
                              "to make it valid, export again with --transform sanitize")
    assert sktrace("validate", str(out), check=False).returncode == 1
    sktrace("export", "--cache", cache, "-s", "-5m", "-O", str(out), "--transform", "sanitize")
    assert sktrace("validate", str(out)).stdout == f"{out}: valid, 0 errors, 0 warnings\n"


def test_a_first_start_that_fails_leaves_no_empty_cache_behind(kubeconfig: str, cache: str, tmp_path: Path) -> None:
    """A first start that fails before recording (here: no credentials) made the cache file; an empty cache would later
    read as "nothing recorded yet", as if a recorder had run. It is removed; a cache that holds a run never is."""
    plugin = tmp_path / "corp-login.sh"
    plugin.write_text("#!/bin/sh\necho 'error: you must be logged in' >&2\nexit 1\n")
    plugin.chmod(0o755)
    result = start(exec_user_kubeconfig(kubeconfig, tmp_path, {"command": str(plugin)}), cache)
    assert result.returncode == 1 and result.stderr.startswith("Error: cannot get the credentials"), result.stderr
    assert sorted(p.name for p in Path(cache).parent.iterdir()) == []
    status = sktrace("status", "--cache", cache, check=False)
    assert status.returncode == 1 and "nothing recorded yet" not in status.stdout + status.stderr, status
    assert "record" in status.stderr, status.stderr


def test_a_failed_start_into_a_cache_that_holds_runs_leaves_it_as_it_was(emu: Emulator, kubeconfig: str, cache: str,
                                                                         tmp_path: Path) -> None:
    assert start(kubeconfig, cache).returncode == 0
    plugin = tmp_path / "corp-login.sh"
    plugin.write_text("#!/bin/sh\nexit 1\n")
    plugin.chmod(0o755)
    assert start(exec_user_kubeconfig(kubeconfig, tmp_path, {"command": str(plugin)}), cache).returncode == 1
    assert Path(cache).exists() and query(cache, "SELECT count(*) FROM runs") == [(1,)]


def test_a_cache_other_users_may_write_is_refused_with_the_fix(emu: Emulator, kubeconfig: str, cache: str) -> None:
    assert start(kubeconfig, cache).returncode == 0
    Path(cache).chmod(0o666)
    before = Path(cache).read_bytes()
    refused = start(kubeconfig, cache)
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == (f"Error: cache {cache} may be read or written by other users (mode 0666); "
                              f"run 'chmod 600 {cache}', then run the command again\n")
    assert Path(cache).read_bytes() == before
    assert sktrace("status", "--cache", cache).returncode == 0  # reading it is no write
    Path(cache).chmod(0o600)
    assert start(kubeconfig, cache).returncode == 0


def test_a_symlinked_lock_file_is_refused_and_the_file_it_points_to_kept(emu: Emulator, kubeconfig: str, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("a week of notes\n")
    (shared / "team.db.lock").symlink_to(victim)
    refused = start(kubeconfig, str(shared / "team.db"))
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert refused.stderr.startswith(f"Error: lock file {shared}/team.db.lock is a symbolic link"), refused.stderr
    assert f"remove the link ('rm {shared}/team.db.lock')" in refused.stderr
    assert victim.read_text() == "a week of notes\n"
