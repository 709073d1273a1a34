"""A 429 on any request the recorder makes, end to end: the real CLI against the emulator, whose priority level is full
exactly for the request under test (``PriorityLevel.full_for``), so the race a busy level wins only sometimes is met
every time. The recorder hung for good on a real server when an owner's GET, made while a relist ended, met a 429: the
throttle's report re-entered the writer's lock that the same thread held (docs/architecture.md, "Locks and the
network"). Here every request type meets one and the recorder must go on: record what changes after it, keep its
heartbeat moving, end at ``--duration`` on time, cleanly.

The bounds are the product's: each 429 asks for ``Retry-After`` seconds (1 s for the first ones: ``apf.Dropped``),
waited for with at most ``throttle.JITTER`` more; a commit lands within half a second; ``SLACK`` is a loaded
machine's scheduling.
"""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path
from typing import Iterator

import pytest
from reliability_support import query, run_cli, wait_rows
from test_kinds_come_and_go import QUIET, Tuned, deployment, synced

from sktrace_emulator import Emulator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

NS = "shop"
DURATION = 12.0
SLACK = 5.0
REJECTED = 2  # 429s in a row for the request under test


@pytest.fixture
def emu() -> Iterator[Emulator]:
    emulator = Emulator(token="throttled", seed=11, tls=True).start()
    try:
        yield emulator
    finally:
        emulator.stop()


def workload(emu: Emulator) -> None:
    """A Deployment, and a pod owned by a Job: no kind the recorder watches knows the Job, so resolving the pod's
    owner chain costs a GET (the request that hung the recorder)."""
    emu.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    emu.create(deployment("web"))
    job = emu.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "nightly", "namespace": NS},
                      "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]}}}})
    emu.create({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "nightly-x", "namespace": NS,
                             "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "nightly",
                                                  "uid": job["metadata"]["uid"], "controller": True}]},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]}})


def stuck_in_the_writer(dump: str) -> set[str]:
    """The threads (by id) of a faulthandler dump whose innermost frame waits in the writer's module."""
    stuck = set()
    for block in re.split(r"\n(?=(?:Current thread|Thread) 0x)", dump):
        lines = block.strip().splitlines()
        ident = re.match(r"(?:Current thread|Thread) (0x[0-9a-f]+)", lines[0]) if lines else None
        if ident and len(lines) > 1 and "record/writer.py" in lines[1]:
            stuck.add(ident.group(1))
    return stuck


@pytest.mark.parametrize(("verb", "resource"), [
    pytest.param("get", "jobs", id="owner GET"),
    pytest.param("get", "", id="discovery"),
    pytest.param("get", "namespaces", id="identity GET"),
    pytest.param("list", "deployments", id="list page"),
    pytest.param("watch", "deployments", id="watch start"),
])
def test_a_429_on_any_request_leaves_the_recorder_recording_and_ending_on_time(
    tmp_path: Path, emu: Emulator, verb: str, resource: str,
) -> None:
    workload(emu)
    level = emu.throttle(100)  # room for everything: only the request under test finds the level full
    assert level is not None
    level.full_for(verb, resource=resource, count=REJECTED)
    kubeconfig, config, cache = tmp_path / "kubeconfig", tmp_path / "tracer.yaml", tmp_path / "cache.db"
    emu.write_kubeconfig(kubeconfig)
    config.write_text("trackedObjects:\n  apps/v1.Deployment: {}\n")
    began = time.monotonic()
    rec = Tuned(tmp_path, ["--kubeconfig", str(kubeconfig), "--cache", str(cache), "--config", str(config), "-n", NS,
                           "--duration", str(DURATION)], dict(QUIET))
    try:
        synced(cache)
        ours = [r for r in level.rejections if r.user_agent.startswith("kubectl-sktrace/")]
        deadline = time.monotonic() + 2 * REJECTED * 1.1 + SLACK
        while len(ours) < REJECTED:  # a watch starts once its list is done: its 429s may come after the sync
            assert time.monotonic() < deadline, (level.rejections, rec.stderr())
            time.sleep(0.1)
            ours = [r for r in level.rejections if r.user_agent.startswith("kubectl-sktrace/")]
        assert {(r.verb, r.resource) for r in ours} == {(verb, resource)}, ours
        emu.create(deployment("after"))  # made after the 429s: recorded live
        wait_rows(cache, "SELECT 1 FROM events WHERE name = 'after'", timeout=SLACK)
        # the stack check: twice a second apart, no thread waits in the writer (a thread stuck on its lock is in both)
        dumps = []
        for _ in range(2):
            size = len(rec.stderr())
            rec.proc.send_signal(signal.SIGUSR1)
            wait_for_dump = time.monotonic() + SLACK
            while "most recent call first" not in rec.stderr()[size:]:
                assert time.monotonic() < wait_for_dump, rec.stderr()
                time.sleep(0.05)
            time.sleep(0.2)  # the rest of the dump
            dumps.append(rec.stderr()[size:])
            time.sleep(1.0)
        assert not stuck_in_the_writer(dumps[0]) & stuck_in_the_writer(dumps[1]), dumps
        status = run_cli(["status", "--cache", str(cache), "-o", "json"], home=tmp_path)
        assert '"state": "running"' in status.stdout, status.stdout
        code = rec.proc.wait(timeout=DURATION + SLACK)
    finally:
        if rec.proc.poll() is None:
            rec.proc.kill()
    ended = time.monotonic() - began
    err = rec.stderr()
    assert code == 0, err
    assert ended <= DURATION + REJECTED * 1.1 + SLACK, (ended, err)  # --duration honoured: the waits at most delay the start
    ((clean, started, stopped),) = query(cache, "SELECT clean, started, stopped FROM runs")
    assert clean == 1 and stopped - started >= DURATION - 1, (clean, stopped - started, err)
    assert "LockOrderError" not in err and "Traceback (most recent call last)" not in err, err
    assert query(cache, "SELECT count(*) FROM coverage_gaps WHERE cause != 'not yet observed'") == [(0,)], err
    if resource == "jobs":  # the pod's owner was fetched after its 429s
        assert query(cache, "SELECT uid IS NOT NULL FROM owners WHERE name = 'nightly'") == [(1,)]
