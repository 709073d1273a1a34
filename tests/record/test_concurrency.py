"""Concurrency: readers beside a writing recorder, a second recorder refused, exports racing each other.

One recorder records a busy seeded workload (about 80 changes a second) while, in parallel processes,
``export``, ``status``, ``inspect`` and ``validate`` run over and over against the same cache: every one must
succeed, and every export must be a loadable trace. Exports of a window that already ended must give
identical bytes: started at the same moment (also onto the same output path), or one while the recorder
runs and pods go on starting and finishing, and one after it stopped. A second ``start`` on the
cache and a ``prune`` beside the recorder are refused with one line naming the running process, and the
recorder carries on undisturbed. Every test runs on both engines: a sqlite file and a history in a PostgreSQL
database.
"""

from __future__ import annotations

import math
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator

import pytest
from reliability_support import (
    EXE,
    Cache,
    Database,
    Recorder,
    Run,
    Traffic,
    assert_one_error,
    integrity_check,
    private_env,
    query,
    run_cli,
)

from kubectl_sktrace.model import mask_url
from kubectl_sktrace.trace.files import format as traceformat

pytestmark = pytest.mark.timeout(240)

NAMESPACE = "busy"


@pytest.fixture
def recording(tmp_path: Path, engine: str) -> Iterator[tuple[Recorder, Cache, float]]:
    """A recorder writing a busy workload into a new cache of each engine (a file, a database's history); yields it,
    the cache and its start time."""
    from sktrace_emulator import Emulator

    emu = Emulator(seed=21).start()
    traffic = None
    try:
        kubeconfig = tmp_path / "kubeconfig"
        cache: Cache = Database(engine) if engine.startswith("postgresql://") else Path(engine)
        emu.write_kubeconfig(kubeconfig)
        traffic = Traffic(emu, seed=21, rate=80, namespace=NAMESPACE).start()
        t0 = time.time()
        rec = Recorder(kubeconfig=kubeconfig, cache=cache, home=tmp_path, log=tmp_path / "rec.log")
        assert rec.wait_for("initial sync done", timeout=60), rec.output()
        time.sleep(2.0)
        yield rec, cache, t0
        if rec.proc.poll() is None:
            assert rec.stop() == 0, rec.output()[-3000:]
        else:  # a test stopped it (SIGTERM: exit 0), or it died
            assert rec.proc.returncode == 0, f"the recorder died:\n{rec.output()[-3000:]}"
        assert integrity_check(cache) == "ok"
    finally:
        if traffic is not None:
            traffic.stop()
        emu.stop()


def _parallel(home: Path, commands: list[list[str]]) -> list[Run]:
    """Start every command at once, as separate processes, and collect what each printed."""
    procs = [(args, subprocess.Popen([EXE, *args], env=private_env(home), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)) for args in commands]
    results = []
    for args, proc in procs:
        out, err = proc.communicate(timeout=120)
        results.append(Run(tuple(args), proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")))
    return results


def test_readers_run_while_the_recorder_writes(tmp_path: Path, recording: tuple[Recorder, Cache, float]) -> None:

    rec, cache, t0 = recording
    rounds, runs_done, events_seen = 4, 0, []
    for i in range(rounds):
        out = tmp_path / f"live-{i}.sktrace"
        results = _parallel(tmp_path, [
            ["export", "--cache", str(cache), "-s", f"@{int(t0) - 5}", "-t", "now", "--include-namespaces", NAMESPACE, "-O", str(out)],
            ["status", "--cache", str(cache)],
            ["status", "--cache", str(cache), "-o", "json"],
            ["export", "--cache", str(cache), "-s", f"@{int(t0) - 5}", "-t", "now", "--format", "json", "-O", "-"],
        ])
        for result in results:
            assert result.code == 0 and "Traceback" not in result.stderr, result.describe()
        events_seen.append(len(traceformat.read_trace(out).events))
        checks = _parallel(tmp_path, [["inspect", str(out)], ["validate", "-o", "json", str(out)]])
        assert checks[0].code == 0, checks[0].describe()
        assert checks[1].code in (0, 1) and '"findings"' in checks[1].stdout, checks[1].describe()
        runs_done += len(results) + len(checks)
        time.sleep(0.5)
    assert events_seen == sorted(events_seen) and events_seen[-1] > 0, events_seen
    print(f"\nconcurrency: {runs_done} reader processes beside the recorder; export event counts {events_seen}")


def test_two_exports_of_a_closed_window_are_identical(tmp_path: Path, recording: tuple[Recorder, Cache, float]) -> None:
    rec, cache, t0 = recording
    end = int(time.time()) - 1  # every event before this second is committed (commits are at most 0.5 s apart)
    time.sleep(1.0)
    shared = tmp_path / "shared.sktrace"
    window = ["--cache", str(cache), "-s", f"@{int(t0) - 5}", "-t", f"@{end}", "--include-namespaces", NAMESPACE]
    results = _parallel(tmp_path, [
        ["export", *window, "-O", str(tmp_path / "a.sktrace")],
        ["export", *window, "-O", str(tmp_path / "b.sktrace")],
        ["export", *window, "-O", str(shared)],
        ["export", *window, "-O", str(shared)],
    ])
    for result in results:
        assert result.code == 0, result.describe()
    a, b = (tmp_path / "a.sktrace").read_bytes(), (tmp_path / "b.sktrace").read_bytes()
    assert a == b == shared.read_bytes()
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")], "no temporary file left behind"


def test_a_closed_window_exports_the_same_bytes_while_recording_and_after_the_stop(
    tmp_path: Path, recording: tuple[Recorder, Cache, float],
) -> None:
    rec, cache, t0 = recording
    # a window that holds a finished pod lifecycle as well as running ones: wait until the cache has one that ended
    # whole seconds ago, instead of hoping the workload's jobs (0.5-2 s) finished in time. Ended in the window, that is:
    # the workload runs before the recorder starts, and the first list finds Jobs' pods that finished before the
    # cache's first second, where the window starts (on a busy machine, the only ones for a while)
    (started,), = query(cache, "SELECT min(started) FROM runs")
    deadline = time.monotonic() + 60
    while not query(cache, "SELECT 1 FROM pods WHERE owner_gvk IS NOT NULL AND namespace = ? AND end_ts >= ? AND end_ts + 3 <= ? LIMIT 1",
                    NAMESPACE, math.floor(started), time.time()):
        assert time.monotonic() < deadline, "no pod of the workload finished in a minute"
        time.sleep(0.2)
    end = int(time.time()) - 1  # every event before this second is committed (commits are at most 0.5 s apart)
    time.sleep(1.0)
    window = ["--cache", str(cache), "-s", f"@{int(t0) - 5}", "-t", f"@{end}", "--include-namespaces", NAMESPACE]

    out = tmp_path / "window.sktrace"

    def export() -> tuple[bytes, str]:
        """The trace and what export told the user about it."""
        result = run_cli(["export", *window, "-O", str(out)], home=tmp_path)
        assert result.code == 0, result.describe()
        return out.read_bytes(), result.stderr

    while_recording = export()
    time.sleep(3.0)  # the workload's pods (jobs of 0.5-2 s) go on starting and finishing
    later = export()
    assert rec.stop() == 0, rec.output()[-3000:]
    stopped = export()
    assert later == while_recording
    assert stopped == while_recording
    lifecycles = traceformat.read_trace(out).pod_lifecycles
    entries = [entry for hashes in lifecycles.values() for lives in hashes.values() for entry in lives]
    assert any("Running" in entry for entry in entries) and any("Finished" in entry for entry in entries), entries


def test_second_recorder_and_prune_are_refused(tmp_path: Path, recording: tuple[Recorder, Cache, float]) -> None:
    rec, cache, t0 = recording
    kubeconfig = tmp_path / "kubeconfig"
    shown, holder = (cache, f"pid {rec.proc.pid}") if isinstance(cache, Path) else (
        f"{mask_url(cache.url)} (history emulator)", f"pid {rec.proc.pid} on host ")
    second = run_cli(["start", "--kubeconfig", str(kubeconfig), "--cache", str(cache), "--duration", "5s"], home=tmp_path)
    line = assert_one_error(second, f"another recorder ({holder}", f"is already writing to {shown}", "stop it first")
    assert "s3cret" not in line
    prune = run_cli(["prune", "--cache", str(cache), "--kubeconfig", str(kubeconfig), "--before", "-1h"], home=tmp_path)
    assert_one_error(prune, f"a recorder ({holder}", f"is writing to {shown}", "stop the recorder, then prune")
    with ThreadPoolExecutor(4) as pool:
        refused = list(pool.map(lambda _: run_cli(["start", "--kubeconfig", str(kubeconfig), "--cache", str(cache)], home=tmp_path),
                                range(4)))
    for result in refused:
        assert_one_error(result, f"pid {rec.proc.pid}")
    time.sleep(1.0)
    assert rec.proc.poll() is None
    assert "Error" not in rec.output()
