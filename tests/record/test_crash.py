"""Crash suite: the recorder killed with SIGKILL at seeded random moments loses nothing it committed.

A seeded workload runs on the emulated API server in this process (controllers, kubelet, bare pods, Jobs,
scaling and rollouts, plus deletions and same-name re-creations of tracked objects). The recorder runs as
a real subprocess and is killed with SIGKILL at ``KILLS`` moments of four kinds: while starting (imports,
opening and migrating the cache), during the initial sync (between the kinds' lists), while recording
(batched transactions every half second), and during a clean stop (after SIGTERM: final commit,
checkpoint). It is restarted each time after a random offline gap, while the workload goes on.

After every kill: ``PRAGMA integrity_check`` is ``ok`` and every event row committed before is still there,
unchanged. At the end a clean run resyncs, the whole history is exported and judged against the ground
truth the emulator's store committed (``reliability_support.compare``): no object, spec or deletion
invented, no deletion missed or exported twice, every stamp between the change and the moment a recorder
surely had it (the next sync, or a later change its watch delivered), every spec version a recorder surely
received present, the final state and index equal to the cluster's; and every committed event row appears
in the export.

``SKTRACE_SOAK=1`` runs 100 kill points instead of 20.
"""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from reliability_support import (
    Cache,
    Database,
    GroundTruth,
    Recorder,
    Traffic,
    assert_one_error,
    check_lifecycles,
    committed_events,
    compare,
    integrity_check,
    recorded,
    run_cli,
    runs,
    settle,
)

pytestmark = pytest.mark.timeout(900)

SOAK = os.environ.get("SKTRACE_SOAK") == "1"
KILLS = 100 if SOAK else 20
SEED = int(os.environ.get("SKTRACE_SEED", "20261122"))
NAMESPACE = "crash"
PHASES = ("startup", "sync", "live", "live", "shutdown")


def _kill_once(rec: Recorder, phase: str, rng: random.Random) -> str:
    """Kill ``rec`` at a moment of ``phase``; returns what the moment turned out to be."""
    if phase == "startup":
        time.sleep(rng.uniform(0.02, 0.6))
        moment = "startup" if "initial sync done" not in rec.output() else "live"
    elif phase == "sync":
        assert rec.wait_for("listed ", timeout=30), rec.output()
        time.sleep(rng.uniform(0, 0.03))
        moment = "sync" if "initial sync done" not in rec.output() else "live"
    elif phase == "live":
        assert rec.wait_for("initial sync done", timeout=30), rec.output()
        time.sleep(rng.uniform(0.05, 1.5))
        moment = "live"
    else:
        assert rec.wait_for("initial sync done", timeout=30), rec.output()
        time.sleep(rng.uniform(0.1, 0.8))
        rec.signal(signal.SIGTERM)
        time.sleep(rng.uniform(0.0, 0.2))
        moment = "shutdown" if rec.proc.poll() is None else "after-clean-stop"
    code = rec.kill()
    assert code in (-signal.SIGKILL, 0), f"the recorder exited {code} before the kill:\n{rec.output()[-3000:]}"
    return moment


def test_sigkill_at_random_moments_loses_nothing(tmp_path: Path, engine: str) -> None:
    """On either engine (a file, or a history in a PostgreSQL database: ``conftest.engine``)."""
    from kubectl_sktrace.trace.files import format as traceformat
    from sktrace_emulator import Emulator

    rng = random.Random(SEED)
    cache: Cache = Database(engine) if engine.startswith("postgresql://") else Path(engine)
    kubeconfig, log = tmp_path / "kubeconfig", tmp_path / "recorder.log"
    emu = Emulator(seed=SEED).start()
    truth = GroundTruth(emu)
    try:
        emu.write_kubeconfig(kubeconfig)
        traffic = Traffic(emu, seed=SEED, rate=60, namespace=NAMESPACE).start()
        t0 = time.time()
        phases = [PHASES[i % len(PHASES)] for i in range(KILLS)]
        rng.shuffle(phases)
        moments: dict[str, int] = {}
        committed: dict[int, tuple[Any, ...]] = {}
        for phase in phases:
            rec = Recorder(kubeconfig=kubeconfig, cache=cache, home=tmp_path, log=log)
            moment = _kill_once(rec, phase, rng)
            moments[moment] = moments.get(moment, 0) + 1
            if cache.exists():  # a file, or a database history with its tables
                assert integrity_check(cache) == "ok", f"after a kill during {moment}"
                now = committed_events(cache)
                lost = {i: row for i, row in committed.items() if now.get(i) != row}
                assert not lost, f"committed events lost or changed by a kill during {moment}: {list(lost.items())[:5]}"
                committed = now
            time.sleep(rng.uniform(0.0, 0.6))  # offline while the cluster changes
        traffic.stop()
        final = Recorder(kubeconfig=kubeconfig, cache=cache, home=tmp_path, log=log)
        assert final.wait_for("initial sync done", timeout=60), final.output()
        time.sleep(1.5)
        assert final.stop() == 0, final.output()[-3000:]
        assert integrity_check(cache) == "ok"
        rows = committed_events(cache)
        assert all(rows.get(i) == row for i, row in committed.items())

        out = tmp_path / "all.sktrace"
        run = run_cli(["export", "--cache", str(cache), "-s", f"@{int(t0) - 5}", "-t", f"@{int(time.time()) + 2}",
                       "--include-namespaces", NAMESPACE, "-O", str(out)], home=tmp_path)
        assert run.code == 0, run.describe()
        trace = traceformat.read_trace(out)
        truth.save(tmp_path / "truth.json")
        report = compare(truth.snapshot(), trace, runs(cache), rows=recorded(cache), namespaces=frozenset([NAMESPACE]))
        check_lifecycles(trace, truth.started_per_owner(), report)
        assert not report.problems, "\n".join(report.problems[:40])

        exported = {(e["ts"], op, _key(o)) for e in trace.events for op in ("applied_objs", "deleted_objs") for o in e[op]}
        missing = [row for row in rows.values() if row[2] == NAMESPACE
                   and (row[0], "deleted_objs" if row[4] else "applied_objs", (row[1], row[2], row[3])) not in exported]
        assert not missing, f"committed events missing from the export: {missing[:10]}"
        run_rows = runs(cache)
        started_runs = KILLS + 1 - moments.get("startup", 0)  # a kill while starting may come before the run row
        assert started_runs <= len(run_rows) <= KILLS + 1 and run_rows[-1].clean
        print(f"\ncrash suite: {KILLS} kills survived {moments}; {len(rows)} committed event rows kept; "
              f"{traffic.made} workload changes; {report.figures()}")
        assert moments.get("live", 0) >= KILLS // 4
    finally:
        emu.stop()


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    from kubectl_sktrace.trace.sanitize import object_key

    key = object_key(obj)
    assert key is not None
    return (str(key.gvk), key.namespace, key.name)


def test_a_killed_recorder_never_blocks_the_next(tmp_path: Path) -> None:
    """The lock dies with the process: a start right after a SIGKILL records; a start beside a live one is refused."""
    from sktrace_emulator import Emulator

    with Emulator(seed=1) as emu:
        kubeconfig, cache = tmp_path / "kubeconfig", tmp_path / "cache.db"
        emu.write_kubeconfig(kubeconfig)
        first = Recorder(kubeconfig=kubeconfig, cache=cache, home=tmp_path, log=tmp_path / "a.log")
        assert first.wait_for("initial sync done", timeout=60), first.output()
        before = cache.read_bytes()
        second = run_cli(["start", "--kubeconfig", str(kubeconfig), "--cache", str(cache), "--duration", "5s"], home=tmp_path)
        line = assert_one_error(second, f"pid {first.proc.pid}", "stop it first")
        assert "another recorder" in line
        assert len(cache.read_bytes()) >= len(before)
        first.kill()
        third = Recorder(kubeconfig=kubeconfig, cache=cache, home=tmp_path, log=tmp_path / "b.log", args=["--duration", "1s"])
        assert third.proc.wait(timeout=60) == 0, third.output()
        assert integrity_check(cache) == "ok"


# --- same-name re-creation: what the crash suite found ------------------------------------------------------


def _deployment(name: str, *, image: str) -> dict[str, Any]:
    from sktrace_emulator.builders import deployment_object

    obj = {"apiVersion": "apps/v1", "kind": "Deployment", **deployment_object("shop", name, replicas=1, rng=random.Random(name))}
    obj["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return obj


def _export_and_compare(tmp_path: Path, cache: Path, truth: GroundTruth, t0: float) -> list[str]:
    from kubectl_sktrace.trace.files import format as traceformat

    out = tmp_path / "out.sktrace"
    run = run_cli(["export", "--cache", str(cache), "-s", f"@{int(t0) - 5}", "-t", f"@{int(time.time()) + 2}",
                   "--include-namespaces", "shop", "-O", str(out)], home=tmp_path)
    assert run.code == 0, run.describe()
    return compare(truth.snapshot(), traceformat.read_trace(out), runs(cache), rows=recorded(cache),
                   namespaces=frozenset(["shop"])).problems


def _start_for(tmp_path: Path, kubeconfig: Path, cache: Path, seconds: str) -> None:
    run = run_cli(["start", "--kubeconfig", str(kubeconfig), "--cache", str(cache), "--duration", seconds], home=tmp_path)
    assert run.code == 0, run.describe()


def test_recreated_while_offline_stays_alive(tmp_path: Path) -> None:
    from sktrace_emulator import Emulator

    with Emulator(seed=3) as emu:
        truth = GroundTruth(emu)
        kubeconfig, cache = tmp_path / "kubeconfig", tmp_path / "cache.db"
        emu.write_kubeconfig(kubeconfig)
        emu.create(_deployment("web", image="web:1"))
        t0 = time.time()
        _start_for(tmp_path, kubeconfig, cache, "1s")
        time.sleep(1.1)
        emu.delete("apps/v1", "Deployment", "shop", "web")
        emu.create(_deployment("web", image="web:2"))
        time.sleep(1.1)
        _start_for(tmp_path, kubeconfig, cache, "1s")
        assert _export_and_compare(tmp_path, cache, truth, t0) == []


def test_recreated_within_one_second_stays_alive(tmp_path: Path) -> None:
    from sktrace_emulator import Emulator

    with Emulator(seed=4) as emu:
        truth = GroundTruth(emu)
        kubeconfig, cache = tmp_path / "kubeconfig", tmp_path / "cache.db"
        emu.write_kubeconfig(kubeconfig)
        emu.create(_deployment("web", image="web:1"))
        t0 = time.time()
        rec = Recorder(kubeconfig=kubeconfig, cache=cache, home=tmp_path, log=tmp_path / "rec.log")
        assert rec.wait_for("initial sync done", timeout=60), rec.output()
        time.sleep(1.0 - time.time() % 1.0 + 0.05)  # early in a second, so both changes share it
        emu.delete("apps/v1", "Deployment", "shop", "web")
        emu.create(_deployment("web", image="web:2"))
        settle(emu, cache, truth, "shop")
        assert rec.stop() == 0, rec.output()
        assert _export_and_compare(tmp_path, cache, truth, t0) == []
