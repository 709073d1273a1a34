"""The status in force at T, read through the past layer (``Past.objects_at``) on both engines: the last status change
of the object's own life at or before T; {} for a life whose status was not written yet (a name re-created); None
(not known) before the first run that recorded status changes, and in a gap nobody observed. ``get --at`` prints
kubectl's columns from it, and ``history --status`` lists the changes."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from conftest import CacheBuilder, location, obj
from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.past.objects import Scope
from kubectl_sktrace.past.state import Past
from kubectl_sktrace.store import open_cache_readonly
from kubectl_sktrace.store.recording import Recording
from kubectl_sktrace.store.statuses import FillWriter

T0 = 1_790_000_000
DEPLOY = GVK.parse("apps/v1.Deployment")
WEB = {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
       "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}


def status(b: CacheBuilder, ts: int, name: str, uid: str, reduced: dict[str, Any], *, inferred: bool = False) -> None:
    with b.cache.transaction():
        Recording(b.cache).append_status(b.run_id, ts=ts, recv=ts + 0.25, key=ObjKey(DEPLOY, "app", name), uid=uid, inferred=inferred,
                                         reduced=reduced)


def build(cache: str) -> None:
    """A run before status changes were recorded (T0..T0+100), a gap, a run that records them (T0+200..T0+400): web
    ready 1 of 3 then 3 of 3; web deleted and created again at T0+300, its new life's status not yet written."""
    b = CacheBuilder(location(cache))
    try:
        b.run(started=T0, stopped=T0 + 100)
        b.apply(T0 + 10, obj("Deployment", "web", spec=WEB))
        b.run(started=T0 + 200, stopped=T0 + 400)
        status(b, T0 + 200, "web", "uid-web", {"desired": 3, "replicas": 3, "readyReplicas": 1, "updatedReplicas": 3}, inferred=True)
        status(b, T0 + 250, "web", "uid-web", {"desired": 3, "replicas": 3, "readyReplicas": 3, "updatedReplicas": 3, "availableReplicas": 3})
        b.delete(T0 + 300, obj("Deployment", "web"))
        b.apply(T0 + 301, obj("Deployment", "web", spec=WEB), uid="uid-web-2")
    finally:
        b.close()


def statuses_at(cache: str, at: int) -> dict[str, Any]:
    with open_cache_readonly(location(cache)) as opened:
        past = Past(opened, now=T0 + 400)
        return {o.uid: o.status for o in past.objects_at(past.kind("deploy"), Scope(), at)}


def sktrace(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kubectl_sktrace", *args], capture_output=True, text=True, timeout=60)


def test_the_status_in_force_is_its_own_lives_last_change(engine: str) -> None:
    build(engine)
    assert statuses_at(engine, T0 + 50) == {"uid-web": None}  # before status changes were recorded: not known
    assert statuses_at(engine, T0 + 150) == {"uid-web": None}  # no recorder ran
    assert statuses_at(engine, T0 + 220)["uid-web"]["readyReplicas"] == 1
    assert statuses_at(engine, T0 + 250)["uid-web"]["readyReplicas"] == 3
    assert statuses_at(engine, T0 + 310) == {"uid-web-2": {}}  # the new life: nothing written yet, not the old life's
    with open_cache_readonly(location(engine)) as opened:
        changes = Past(opened, now=T0 + 400).status_changes(Past(opened).kind("deploy"), "app", "web")
    assert [(c.second, c.known, c.before is None) for c in changes] == [(T0 + 200, "reconstructed", True), (T0 + 250, "live", False)]
    assert [c.what for c in changes] == ["status: 1 of 3 ready", "status: ready 1/3→3/3; readyReplicas 1 -> 3; availableReplicas - -> 3"]


@pytest.mark.slow  # starts the CLI's process
def test_get_at_prints_the_columns_from_it(tmp_path: Any) -> None:
    cache = str(tmp_path / "cache.db")
    build(cache)
    table = sktrace("get", "deploy", "-n", "app", "--cache", cache, "--at", f"@{T0 + 220}")
    assert table.stdout.split("\n")[1].split()[:4] == ["web", "1/3", "3", "0"], table.stdout
    before = sktrace("get", "deploy", "-n", "app", "--cache", cache, "--at", f"@{T0 + 50}")
    assert before.stdout.split("\n")[1].split()[:4] == ["web", "<unknown>", "<unknown>", "<unknown>"]
    assert before.stderr.count("READY, UP-TO-DATE, AVAILABLE: the status at") == 1, before.stderr
    fresh = json.loads(sktrace("get", "deploy", "web", "-n", "app", "--cache", cache, "--at", f"@{T0 + 310}", "-o", "json").stdout)
    assert fresh["status"] == {}
    said = sktrace("history", "deploy/web", "-n", "app", "--cache", cache, "--status").stdout
    assert "status: ready 1/3→3/3; readyReplicas 1 -> 3" in said and said.index("readyReplicas 1 -> 3") < said.index("deleted"), said
    data = json.loads(sktrace("history", "deploy/web", "-n", "app", "--cache", cache, "--status", "-o", "json").stdout)
    assert [len(life["statuses"]) for life in data["lives"]] == [2, 0]


_IMPORTED = """
import sys
from kubectl_sktrace.cli import cli
sys.argv = ["kubectl-sktrace", *sys.argv[1:]]
try:
    cli(prog_name="kubectl sktrace")
except SystemExit:
    pass
print(" ".join(sorted(sys.modules)), file=sys.stderr)
"""


@pytest.mark.slow  # starts the CLI's process
def test_get_imports_only_what_it_uses(tmp_path: Any) -> None:
    """A process runs one command: ``get --at`` with ``--cache`` and ``-n`` imports no other command's module, no
    kubernetes client, no YAML (it reads no kubeconfig, writes JSON)."""
    cache = str(tmp_path / "cache.db")
    build(cache)
    done = subprocess.run([sys.executable, "-c", _IMPORTED, "get", "deploy", "web", "-n", "app", "--cache", cache, "--at", f"@{T0 + 220}",
                           "-o", "json"], capture_output=True, text=True, timeout=60)
    assert json.loads(done.stdout)["status"]["readyReplicas"] == 1, done.stderr
    imported = set(done.stderr.split("\n")[-2].split())
    unneeded = {"kubernetes", "yaml", "urllib3", "kubectl_sktrace.cli.exporting", "kubectl_sktrace.cli.recording", "kubectl_sktrace.cli.backfilling",
                "kubectl_sktrace.cli.traces", "kubectl_sktrace.cli.viewing", "kubectl_sktrace.cli.pastserving", "kubectl_sktrace.kube.client"}
    assert not unneeded & imported, sorted(unneeded & imported)


@pytest.mark.slow  # starts the CLI's process
def test_several_kinds_print_a_table_each_as_kubectl(tmp_path: Any) -> None:
    """``get deploy,cm`` as ``kubectl get deploy,cm`` prints it: a table per kind, names as ``deployment.apps/web``, a
    blank line between; ``-o json`` one List, ``-o name`` a line each; ``get all`` kubectl's category (no ConfigMap)."""
    cache = str(tmp_path / "cache.db")
    build(cache)
    b = CacheBuilder(location(cache))
    try:
        b.run_id = 2
        b.apply(T0 + 210, obj("ConfigMap", "cfg") | {"data": {"a": "1", "b": "2"}})
    finally:
        b.close()
    at = ("-n", "app", "--cache", cache, "--at", f"@{T0 + 220}")
    table = sktrace("get", "deploy,cm", *at)
    assert [line.split()[:2] for line in table.stdout.strip().split("\n")] == [
        ["NAME", "READY"], ["deployment.apps/web", "1/3"], [], ["NAME", "DATA"], ["configmap/cfg", "2"]], table.stdout
    assert sktrace("get", "cm,deploy", *at, "-o", "name").stdout.split() == ["configmap/cfg", "deployment.apps/web"]
    listed = json.loads(sktrace("get", "deploy,cm", *at, "-o", "json").stdout)
    assert (listed["kind"], [i["kind"] for i in listed["items"]]) == ("List", ["Deployment", "ConfigMap"])
    assert sktrace("get", "all", *at).stdout.split("\n")[1].split()[0] == "deployment.apps/web"
    missing = sktrace("get", "deploy,cm", "web", *at)
    assert missing.returncode == 1 and 'Error: configmaps "web" did not exist at' in missing.stderr, missing.stderr
    assert "deployment.apps/web" in missing.stdout


@pytest.mark.slow  # starts the CLI's process
def test_watch_prints_each_status_change_as_kubectl_get_w(tmp_path: Any) -> None:
    """``get -w --since``: a row for each status change too (kubectl's -w prints every update), with that change's state."""
    cache = str(tmp_path / "cache.db")
    build(cache)
    proc = subprocess.Popen([sys.executable, "-m", "kubectl_sktrace", "get", "deploy", "-n", "app", "--cache", cache, "-w", "--since", "300s",
                             "--at", f"@{T0 + 400}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline().split()[:4] for _ in range(6)]
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert lines == [["NAME", "READY", "UP-TO-DATE", "AVAILABLE"], ["web", "<unknown>", "<unknown>", "<unknown>"],
                     ["web", "1/3", "3", "0"], ["web", "3/3", "3", "3"],  # its status changes
                     ["web", "3/3", "3", "3"], ["web", "0/3", "0", "0"]], lines  # deleted (its last state), created again


def test_a_gap_a_log_filled_with_status_changes_knows_the_status_and_says_whence(engine: str) -> None:
    """Between the runs, a log at RequestResponse filled web's readiness (``backfill``): known in the gap, told
    ``audit log``; where the log's coverage ends, not known."""
    build(engine)
    b = CacheBuilder(location(engine))
    try:
        with b.cache.transaction() as conn:
            conn.execute("INSERT INTO audit_fills (run_id, since, until, covered_since, covered_until, levels, events, replaced, kept, partial,"
                         " filled_at, gvk) VALUES (2, ?, ?, ?, ?, 'RequestResponse', 1, 0, 0, 0, ?, '')", (T0 + 100, T0 + 200, T0 + 100, T0 + 160, T0 + 300))
            fill_id = int(conn.execute("SELECT max(id) FROM audit_fills").fetchone()[0])
            FillWriter(b.cache, fill_id, 2).write(ObjKey(DEPLOY, "app", "web"), "uid-web", at=T0 + 120.5,
                                                  reduced={"desired": 3, "replicas": 3, "readyReplicas": 2, "updatedReplicas": 3})
    finally:
        b.close()
    assert statuses_at(engine, T0 + 130)["uid-web"]["readyReplicas"] == 2  # filled from the log
    assert statuses_at(engine, T0 + 170) == {"uid-web": None}  # past what the log covered: nobody knows
    with open_cache_readonly(location(engine)) as opened:
        changes = Past(opened, now=T0 + 400).status_changes(Past(opened).kind("deploy"), "app", "web")
    assert [(c.second, c.known) for c in changes] == [(T0 + 120, "audit log"), (T0 + 200, "reconstructed"), (T0 + 250, "live")]
