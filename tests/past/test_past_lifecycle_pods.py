"""Pods known by their lifecycles only: a cache whose tracer config does not track ``v1.Pod`` (the default) still
holds when each pod of a tracked workload ran and, since status changes, what its status was. ``get pods --at T``
lists the pods running at T with kubectl's columns from that status, their identity and nothing the cache did not
keep; questions about their versions (``history``, ``get -w``, ``-l``) get one line saying why there is no answer."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from conftest import CacheBuilder, location, obj

from kubectl_sktrace.model import GVK, POD, ObjKey
from kubectl_sktrace.past.objects import Scope
from kubectl_sktrace.past.state import Past
from kubectl_sktrace.store import open_cache_readonly
from kubectl_sktrace.store.recording import Recording

T0 = 1_790_000_000
WEB = ObjKey(GVK.parse("apps/v1.Deployment"), "app", "web")
RUNNING = {"phase": "Running", "node": "n1", "conditions": {"Ready": "True"},
           "containers": {"init": {"ready": False, "restarts": 0, "state": "terminated Completed 0"},
                          "web": {"ready": True, "restarts": 0, "state": "running"}, "log": {"ready": True, "restarts": 2, "state": "running"}}}
CRASHING = {**RUNNING, "conditions": {"Ready": "False"},
            "containers": {**RUNNING["containers"], "web": {"ready": False, "restarts": 3, "state": "waiting CrashLoopBackOff"}}}


def build(cache: str) -> None:
    """web's pods: a runs T0+10 to T0+50; b from T0+20, crash-looping from T0+40; c's end reconstructed at a restart;
    d never started. One run, T0 to T0+100."""
    b = CacheBuilder(location(cache))
    try:
        b.run(started=T0, stopped=T0 + 100)
        b.apply(T0 + 5, obj("Deployment", "web"))
        b.pod("web-a", owner=WEB, stable_hash=1, start_ts=T0 + 10, end_ts=T0 + 50)
        b.pod("web-b", owner=WEB, stable_hash=1, start_ts=T0 + 20)
        b.pod("web-c", owner=WEB, stable_hash=1, start_ts=T0 + 12, end_ts=T0 + 90)
        b.pod("web-d", owner=WEB, stable_hash=1, start_ts=None)
        with b.cache.transaction() as conn:
            conn.execute("UPDATE pods SET end_inferred = 1 WHERE name = 'web-c'")
            recording = Recording(b.cache)
            for ts, name, reduced in ((T0 + 10, "web-a", RUNNING), (T0 + 20, "web-b", RUNNING), (T0 + 40, "web-b", CRASHING)):
                recording.append_status(b.run_id, ts=ts, recv=ts + 0.25, key=ObjKey(POD, "app", name), uid=f"uid-{name}", inferred=False,
                                        reduced=reduced)
    finally:
        b.close()


def running(cache: str, at: int, scope: Scope = Scope()) -> dict[str, Any]:
    with open_cache_readonly(location(cache)) as opened:
        past = Past(opened, now=T0 + 100)
        kind = past.kind("po")
        assert kind.lifecycles and kind.resource == "pods"
        return {o.key.name: (o.known.how, o.pod.phase_at(at) if o.pod else None, o.status, o.obj) for o in past.objects_at(kind, scope, at)}


def sktrace(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kubectl_sktrace", *args], capture_output=True, text=True, timeout=60)


def test_the_pods_running_at_t_with_their_identity_and_status(engine: str) -> None:
    build(engine)
    assert set(running(engine, T0 + 15)) == {"web-a", "web-c"}  # b not started yet, d never
    found = running(engine, T0 + 45)
    assert set(found) == {"web-a", "web-b", "web-c"}
    how, phase, status, body = found["web-b"]
    assert (how, phase, status) == ("live", "Running", CRASHING)
    assert body == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-b", "namespace": "app", "uid": "uid-web-b"}}
    assert found["web-c"][:3] == ("reconstructed", "Running", None)  # its end reconstructed; no status written: not known
    assert set(running(engine, T0 + 50)) == {"web-b", "web-c"}  # a ended in that second
    assert set(running(engine, T0 + 45, Scope(names=("web-b", "web-x")))) == {"web-b"}


@pytest.mark.slow  # starts the CLI's process
def test_get_pods_prints_kubectls_columns_and_says_what_is_not_kept(tmp_path: Any) -> None:
    cache = str(tmp_path / "cache.db")
    build(cache)
    table = sktrace("get", "pods", "-n", "app", "--cache", cache, "--at", f"@{T0 + 45}")
    assert table.returncode == 0, table.stderr
    rows = [line.split() for line in table.stdout.splitlines()]
    assert rows[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert rows[1:3] == [["web-a", "2/2", "Running", "2", "<unknown>"], ["web-b", "1/2", "CrashLoopBackOff", "5", "<unknown>"]]
    assert rows[3][:3] == ["web-c", "<unknown>", "Running"]  # no status known: its lifecycle's phase
    assert table.stderr.count("v1.Pod is not tracked") == 1, table.stderr
    listed = json.loads(sktrace("get", "po", "web-a", "-n", "app", "--cache", cache, "--at", f"@{T0 + 45}", "-o", "json").stdout)
    assert listed["metadata"] == {"name": "web-a", "namespace": "app", "uid": "uid-web-a"} and listed["status"]["phase"] == "Running"
    assert "spec" not in listed  # never invented


@pytest.mark.slow  # starts the CLI's process
def test_questions_about_their_versions_say_why_there_is_no_answer(tmp_path: Any) -> None:
    cache = str(tmp_path / "cache.db")
    build(cache)
    before = (tmp_path / "cache.db").read_bytes()
    for args in (["get", "pods", "-n", "app", "-l", "app=web", "--at", f"@{T0 + 45}"], ["get", "pods", "-n", "app", "-w", "--at", f"@{T0 + 45}"],
                 ["history", "pod/web-a", "-n", "app"]):
        done = sktrace(*args, "--cache", cache)
        assert done.returncode == 1 and done.stdout == "", (args, done.stdout)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: ") and "track v1.Pod to keep those" in lines[0], (args, done.stderr)
    assert (tmp_path / "cache.db").read_bytes() == before
    quiet = sktrace("diff", "--from", f"@{T0 + 15}", "--to", f"@{T0 + 45}", "-n", "app", "--cache", cache, "-o", "name")
    assert quiet.returncode == 0 and quiet.stdout == "", quiet.stderr  # nothing but pods' lifecycles changed: no version did


@pytest.mark.slow  # starts the CLI's process
def test_history_of_a_pod_known_by_its_lifecycle_prints_its_status_changes(tmp_path: Any) -> None:
    """No versions, but its status as it changed: ``history pod/NAME --status`` prints those alone (without
    ``--status`` the one line says to ask for them)."""
    cache = str(tmp_path / "cache.db")
    build(cache)
    done = sktrace("history", "pod/web-b", "-n", "app", "--status", "--cache", cache)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["LIFE", "UID", "TIME", "CHANGE", "KNOWN", "RUN"] and len(lines) == 3, done.stdout
    assert "uid-web-b" in lines[1] and "Running" in lines[1] and "web: state waiting CrashLoopBackOff" in lines[2], done.stdout
    said = json.loads(sktrace("history", "pod/web-b", "-n", "app", "--status", "--cache", cache, "-o", "json").stdout)
    assert [life["uid"] for life in said["lives"]] == ["uid-web-b"] and len(said["lives"][0]["statuses"]) == 2
    refused = sktrace("history", "pod/web-b", "-n", "app", "--cache", cache)
    assert refused.returncode == 1 and refused.stderr.strip().endswith("--status prints a pod's status changes"), refused.stderr
