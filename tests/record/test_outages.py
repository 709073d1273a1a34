"""Outages within a run, end to end: the API server goes away (connection refused) or the recorder is
suspended long enough that its watches expire. The recorder must record the interval as a coverage gap,
count what it caught up afterwards apart from what it saw live, and say so in its summary, in ``status``
and in ``export`` (docs/spec.md §5 "Outages are gaps").

The emulator runs in this process (its own instance: these tests stop it); the recorder is the real console
script in a subprocess. Timing bounds come from what the recorder guarantees: a commit at least every half
second, bookmarks every 0.2 s here (so the last proof of liveness before an outage is at most that old, plus
scheduling), and the watch's back-off (0.8 s doubling) after the server returns.
"""

from __future__ import annotations

import json
import random
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from reliability_support import EXE, private_env, query, run_cli, wait_rows

from kubectl_sktrace.record.watching import STALL_SECONDS
from kubectl_sktrace.timeparse import format_time
from kubectl_sktrace.trace.files import format as traceformat
from sktrace_emulator import Emulator
from sktrace_emulator.builders import deployment_object

pytestmark = pytest.mark.timeout(120)

NS = "shop"


@pytest.fixture
def emu() -> Iterator[Emulator]:
    emulator = Emulator(token="outage-token", bookmark_interval=0.2, seed=3).start()
    try:
        yield emulator
    finally:
        emulator.stop()


def record(tmp_path: Path, emu: Emulator) -> tuple[subprocess.Popen[bytes], Path, Path]:
    kubeconfig, cache = tmp_path / "kubeconfig", tmp_path / "cache.db"
    emu.write_kubeconfig(kubeconfig)
    rng = random.Random(5)
    for name in ("keep", "doomed"):
        emu.create({"apiVersion": "apps/v1", "kind": "Deployment", **deployment_object(NS, name, replicas=1, rng=rng)})
    proc = subprocess.Popen([EXE, "start", "--kubeconfig", str(kubeconfig), "--cache", str(cache), "--duration", "60"],
                            env=private_env(tmp_path), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_rows(cache, "SELECT 1 FROM runs WHERE synced IS NOT NULL")
    time.sleep(0.5)  # a few bookmarks: the watches are alive
    return proc, kubeconfig, cache


def finish(proc: subprocess.Popen[bytes]) -> tuple[str, str]:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()
    return out.decode(), err.decode()


def test_an_api_outage_is_a_gap_and_what_changed_during_it_is_caught_up_not_live(tmp_path: Path, emu: Emulator) -> None:
    proc, _, cache = record(tmp_path, emu)
    down = time.time()
    emu.stop()  # connection refused from now on
    stopped = time.time()  # a bookmark may still arrive while the server stops: liveness is proven up to here
    emu.delete("apps/v1", "Deployment", NS, "doomed")
    time.sleep(2.0)
    up = time.time()
    emu.start()  # the same port, the same state: the watches resume from their versions
    wait_rows(cache, "SELECT 1 FROM events WHERE name = 'doomed' AND op = 1")
    # every kind watches again (the report of that is the run's to make, at the latest when it stops)
    wait_rows(cache, "SELECT 1 FROM coverage_gaps GROUP BY run_id HAVING count(DISTINCT gvk) = 6 AND sum(until IS NULL) = 0")
    emu.patch("apps/v1", "Deployment", NS, "keep", {"spec": {"replicas": 3}})  # live again
    wait_rows(cache, "SELECT 1 FROM events WHERE name = 'keep' AND op = 0 GROUP BY name HAVING count(*) = 2")
    out, err = finish(proc)

    # what the person saw while it happened: one warning when it began, one line when it was over
    began = [line for line in err.splitlines() if line.startswith("Warning: API unreachable since ")]
    over = [line for line in err.splitlines() if line.startswith("API unreachable since ") and " — recovered after " in line]
    assert len(began) == 1 and len(over) == 1, err
    assert began[0].endswith("): watching stopped; retrying, and what changes meanwhile is caught up once it recovers"), began[0]
    assert " retries) — recovered after " in over[0] and over[0].endswith("; every kind is watched again"), over[0]
    assert "retrying in " not in err  # not one line per attempt

    (deleted,) = query(cache, "SELECT ts, inferred FROM events WHERE name = 'doomed' AND op = 1")
    assert deleted[0] >= int(up) and deleted[1] == 1  # stamped when caught up, marked reconstructed
    assert query(cache, "SELECT inferred FROM events WHERE name = 'keep' ORDER BY id") == [(0,), (0,)]
    gaps = query(cache, "SELECT gvk, since, until, cause FROM coverage_gaps ORDER BY gvk")
    assert {g[0] for g in gaps} == {"apps/v1.Deployment", "apps/v1.StatefulSet", "batch/v1.Job", "batch/v1.CronJob", "v1.Pod",
                                    "apps/v1.ReplicaSet"}
    for gvk, since, until, cause in gaps:
        assert cause == "API unreachable"
        assert down - 2.0 <= since <= stopped, (gvk, since, down, stopped)  # the last bookmark or event before the outage
        assert until >= up, (gvk, until, up)

    table = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith(("apps/", "batch/", "v1."))}
    # listed, applied, metadata, data, deleted live, offline, after outage
    assert table["apps/v1.Deployment"][:7] == ["2", "3", "0", "0", "0", "0", "1"]
    assert "Outage: API unreachable " in out and "changes made then were caught up afterwards, not seen live." in out

    status = run_cli(["status", "--cache", str(cache)], home=tmp_path)
    assert status.code == 0, status.describe()
    assert "interrupted" in status.stdout and "API unreachable " in status.stdout

    export = run_cli(["export", "--cache", str(cache), "-s", f"@{int(down) - 30}", "-t", f"@{int(time.time()) + 1}",
                      "--include-namespaces", NS, "-O", str(tmp_path / "t.sktrace")], home=tmp_path)
    assert export.code == 0, export.describe()
    (coverage,) = [line for line in export.stderr.splitlines() if line.startswith("Warning: coverage: ")]
    # the outage is listed from 5 s on (it lasted 2 s, plus the back-off), else counted among the short gaps
    assert "% of the window" in coverage and "not when they happened" in export.stderr, export.stderr
    assert ", API unreachable)" in export.stderr or re.search(r"\b\d+ gaps? shorter than 5s", export.stderr), export.stderr


@pytest.fixture
def quiet_emu() -> Iterator[Emulator]:
    emulator = Emulator(token="outage-token", seed=3).start()  # bookmarks once a minute, as a real server sends them
    try:
        yield emulator
    finally:
        emulator.stop()


def test_kinds_with_nothing_to_send_watch_again_once_their_watches_connect(tmp_path: Path, quiet_emu: Emulator) -> None:
    # no StatefulSet, Job or CronJob exists: neither their lists nor their resumed watches carry anything, and the
    # next bookmark is a minute away; the watch's connection is what proves such a kind is watched again
    proc, _, cache = record(tmp_path, quiet_emu)
    quiet_emu.stop()
    time.sleep(2.0)
    up = time.time()
    quiet_emu.start()
    wait_rows(cache, "SELECT 1 FROM coverage_gaps GROUP BY run_id HAVING count(DISTINCT gvk) = 6 AND sum(until IS NULL) = 0",
             timeout=20)
    closed = time.time()
    time.sleep(1.0)  # the run goes on: a gap closed at the run's end would end after this
    out, err = finish(proc)

    gaps = query(cache, "SELECT gvk, until FROM coverage_gaps ORDER BY gvk")
    assert {g[0] for g in gaps} >= {"apps/v1.StatefulSet", "batch/v1.Job", "batch/v1.CronJob"}
    for gvk, until in gaps:
        assert up <= until <= closed, (gvk, until, up, closed)  # at the connection, not at the run's end
    over = [line for line in err.splitlines() if line.startswith("API unreachable since ") and " — recovered after " in line]
    assert len(over) == 1 and over[0].endswith("; every kind is watched again"), err
    status = json.loads(run_cli(["status", "--cache", str(cache), "-o", "json"], home=tmp_path).stdout)
    (outage,) = status["outages"]
    assert outage["to"] == format_time(max(until for _, until in gaps)) != status["runs"][0]["stopped"], status
    assert "Outage: API unreachable " in out


def test_a_suspended_recorder_whose_watches_expired_records_the_sleep_as_a_gap(tmp_path: Path, emu: Emulator) -> None:
    proc, _, cache = record(tmp_path, emu)
    asleep = time.time()
    proc.send_signal(signal.SIGSTOP)  # a laptop lid closed, a process stopped
    try:
        time.sleep(0.5)
        emu.drop_watches()  # a real server ends the watches of a client that stopped reading
        time.sleep(0.5)
        emu.delete("apps/v1", "Deployment", NS, "doomed")
        emu.compact()  # the server's history moved on: resuming from the old versions is 410 Gone
        time.sleep(STALL_SECONDS + 1.0 - (time.time() - asleep))  # long enough to be told from a slow scheduler
    finally:
        proc.send_signal(signal.SIGCONT)
    awake = time.time()
    wait_rows(cache, "SELECT 1 FROM events WHERE name = 'doomed' AND op = 1")
    out, err = finish(proc)
    told = [line for line in err.splitlines() if line.startswith("Warning: recorder suspended ")]
    assert len(told) == 1, err  # whether the run saw it begin, or only over (every thread stood still with it)

    (deleted,) = query(cache, "SELECT ts, inferred FROM events WHERE name = 'doomed' AND op = 1")
    assert deleted[0] >= int(awake) - 1 and deleted[1] == 1
    (gap,) = query(cache, "SELECT min(since), max(until), group_concat(DISTINCT cause) FROM coverage_gaps WHERE gvk = 'apps/v1.Deployment'")
    assert gap[0] <= asleep and gap[1] >= awake, (gap, asleep, awake)
    assert "recorder suspended" in gap[2].split(",")  # then, perhaps, the 410 that the resumed watch met
    assert "Outage: " in out


def test_a_kind_dropped_from_the_config_leaves_the_history_at_that_run_without_being_deleted(tmp_path: Path, emu: Emulator) -> None:
    kubeconfig, cache = tmp_path / "kubeconfig", tmp_path / "cache.db"
    emu.write_kubeconfig(kubeconfig)
    rng = random.Random(9)
    emu.create({"apiVersion": "apps/v1", "kind": "Deployment", **deployment_object(NS, "web", replicas=1, rng=rng)})
    sts = deployment_object(NS, "db", replicas=1, rng=rng)
    sts["spec"]["serviceName"] = "db"
    emu.create({"apiVersion": "apps/v1", "kind": "StatefulSet", **sts})
    both, deployments = tmp_path / "both.yaml", tmp_path / "deployments.yaml"
    both.write_text("trackedObjects:\n  apps/v1.Deployment: {}\n  apps/v1.StatefulSet: {}\n")
    deployments.write_text("trackedObjects:\n  apps/v1.Deployment: {}\n")
    common = ["--kubeconfig", str(kubeconfig), "--cache", str(cache), "--duration", "1s"]
    first = run_cli(["start", *common, "--config", str(both)], home=tmp_path)
    assert first.code == 0, first.describe()
    time.sleep(2.0)
    refused = run_cli(["start", *common, "--config", str(deployments)], home=tmp_path)  # dropping a kind is a choice made
    assert refused.code == 1 and refused.stderr.endswith(
        f"Error: --config {deployments} does not track apps/v1.StatefulSet, which the cache's last run (run 1) tracked: add it to "
        f"{deployments}, or pass --drop-kinds to stop recording it (the history recorded so far is kept)\n"), refused.describe()
    assert query(cache, "SELECT count(*) FROM runs") == [(1,)]
    second = run_cli(["start", *common, "--config", str(deployments), "--drop-kinds"], home=tmp_path)
    assert second.code == 0, second.describe()
    # the kind leaves the history at the second run's start: read it, however long the process took to start
    ((dropped_at,),) = query(cache, "SELECT started FROM runs WHERE id = 2")
    assert "apps/v1.StatefulSet is no longer tracked by this config" in second.stderr

    assert query(cache, "SELECT gvk FROM objects") == [("apps/v1.Deployment",)]  # no ghost left live
    assert query(cache, "SELECT op FROM events WHERE name = 'db' ORDER BY id") == [(0,), (2,)]  # history kept, not deleted
    status = run_cli(["status", "--cache", str(cache), "-o", "json"], home=tmp_path)
    kinds = {k["kind"]: k for k in json.loads(status.stdout)["kinds"]}
    assert kinds["apps/v1.StatefulSet"]["live"] == 0 and kinds["apps/v1.StatefulSet"]["deleted"] == 0

    def export(start: float) -> tuple[Any, str]:
        out = tmp_path / f"{start}.sktrace"
        run = run_cli(["export", "--cache", str(cache), "-s", f"@{int(start)}", "-t", f"@{int(time.time()) + 1}",
                       "--include-namespaces", NS, "-O", str(out)], home=tmp_path)
        assert run.code == 0, run.describe()
        return traceformat.read_trace(out), run.stderr

    after, _ = export(dropped_at + 1)
    assert list(after.index) == ["apps/v1.Deployment"]
    spanning, notes = export(dropped_at - 10)
    assert sorted(spanning.index) == ["apps/v1.Deployment", "apps/v1.StatefulSet"]
    assert not any(e["deleted_objs"] for e in spanning.events)
    assert "apps/v1.StatefulSet stopped being tracked at " in notes

    table = run_cli(["status", "--cache", str(cache)], home=tmp_path).stdout
    assert "Config history (what each run tracked from its start on; history recorded before a change is kept):" in table
    assert "dropped apps/v1.StatefulSet" in table

    readded_at = time.time()
    third = run_cli(["start", *common, "--config", str(both)], home=tmp_path)  # tracked again: a new history from this run
    assert third.code == 0, third.describe()
    assert query(cache, "SELECT op, inferred, ts >= ? FROM events WHERE name = 'db' ORDER BY id", int(readded_at)) == [
        (0, 0, 0), (2, 0, 0), (0, 0, 1)]
    again, _ = export(time.time() - 0.5)
    assert sorted(again.index) == ["apps/v1.Deployment", "apps/v1.StatefulSet"]
