"""Fault suite: one recorder run survives each API fault and its export still matches the ground truth.

For each fault a seeded workload runs on the emulated API server (in this process), one recorder runs as a
subprocess, the fault is injected repeatedly for a while, the recorder is given time to recover and is then
stopped cleanly (it must still be running: a fault never ends a recording) once it has recorded one last
change of each kind (``reliability_support.settle``). The export of the whole run is judged against what the
emulator's store committed (``reliability_support.compare``): nothing invented, duplicated or missed, every
stamp between the change and the moment the recorder surely had it (a later change its watch delivered).
Faults:

- ``drop-watches``: every watch connection cut mid-stream, again and again (re-watch from the last version);
- ``410-storm``: history compacted and watches cut every second, so every resume is 410 Gone and relists
  (a blind period, from the fault's start until the recorder settled: a relist may legitimately skip what
  came and went, and stamps what it finds at its own start);
- ``429-retry-after``: bursts of 429 Too Many Requests with ``Retry-After: 1`` on every request;
- ``500-burst``: bursts of 500 Internal Server Error;
- ``slow-server``: every response delayed by 300 ms, watches cut now and then;
- ``401-exec-renewal``: the server's token rotates; the kubeconfig's exec credential plugin (a shell
  script written here) prints the current token, and the recorder must run it again after a 401;
- ``server-restart``: the API server goes away (connection refused) and comes back on the same port with the
  same state, while the cluster keeps changing.

``SKTRACE_SOAK=1`` makes each fault last longer (and the server outage a minute, as the issue asks).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from reliability_support import (
    GroundTruth,
    Recorder,
    Traffic,
    check_lifecycles,
    compare,
    recorded,
    run_cli,
    runs,
    settle,
)

pytestmark = pytest.mark.timeout(300)

SOAK = os.environ.get("SKTRACE_SOAK") == "1"
FAULT_SECONDS = 20.0 if SOAK else 3.5
OUTAGE_SECONDS = 60.0 if SOAK else 3.0
NAMESPACE = "faults"


_RETRY = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) .*retrying in (\d+(?:\.\d+)?)s", re.M)


def _wait_for_recovery(rec: Recorder, *, deadline: float) -> None:
    """Wait until every back-off the recorder announced (``retrying in Ns``) has passed, plus a margin."""
    while True:
        due = max((time.mktime(time.strptime(m[1], "%Y-%m-%d %H:%M:%S")) + int(m[2]) / 1000 + float(m[3])
                   for m in _RETRY.finditer(rec.output())), default=0.0)
        wait = due + 1.5 - time.time()
        if wait <= 0:
            return
        assert time.time() + wait < deadline, f"the recorder is still backing off {wait:.0f}s after the fault ended"
        time.sleep(wait)


def _every(period: float, action: Callable[[], None]) -> int:
    """Run ``action`` every ``period`` seconds for the fault's duration; returns how many times."""
    count, end = 0, time.monotonic() + FAULT_SECONDS
    while time.monotonic() < end:
        action()
        count += 1
        time.sleep(period)
    return count


def _drop(emu: Any, ctx: dict[str, Any]) -> int:
    return _every(0.7, emu.drop_watches)


def _storm_410(emu: Any, ctx: dict[str, Any]) -> int:
    def storm() -> None:
        emu.compact()
        emu.drop_watches()
    return _every(1.0, storm)


def _burst(status: int, retry_after: int | None) -> Callable[[Any, dict[str, Any]], int]:
    def inject(emu: Any, ctx: dict[str, Any]) -> int:
        def burst() -> None:
            emu.fail(None, status, count=4, retry_after=retry_after)
            emu.drop_watches()
        bursts = _every(2.0, burst)
        return bursts * 4 - _drain(emu)
    return inject


def _drain(emu: Any) -> int:
    """End the fault: use up the failures the recorder did not meet (it was backing off); returns how many."""
    import ssl
    import urllib.error
    import urllib.request

    context = ssl.create_default_context(cadata=emu.ca_pem.decode()) if emu.tls else None
    request = urllib.request.Request(f"{emu.url}/api/v1/namespaces/default/configmaps?limit=1",
                                     headers={"Authorization": f"Bearer {emu.token}"})
    for drained in range(10_000):
        try:
            with urllib.request.urlopen(request, context=context, timeout=10):
                return drained
        except urllib.error.HTTPError:
            continue
    raise AssertionError("the emulator kept failing after the fault")


def _slow(emu: Any, ctx: dict[str, Any]) -> int:
    emu.set_delay(0.3)
    try:
        return _every(1.5, emu.drop_watches)
    finally:
        emu.set_delay(0.0)


def _rotate_token(emu: Any, ctx: dict[str, Any]) -> int:
    def rotate() -> None:
        ctx["generation"] += 1
        token = f"token-{ctx['generation']}"
        ctx["token_file"].write_text(token)
        emu.token = token
        emu.drop_watches()
    return _every(1.5, rotate)


def _restart(emu: Any, ctx: dict[str, Any]) -> int:
    emu.stop()
    time.sleep(OUTAGE_SECONDS)
    emu.start()
    return 1


EXEC_PLUGIN = """#!/bin/sh
echo call >> {calls}
printf '{{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {{"token": "%s"}}}}' "$(cat {token})"
"""


def _use_exec_plugin(tmp_path: Path, kubeconfig: Path, emu: Any, ctx: dict[str, Any]) -> None:
    """Replace the kubeconfig's token with an exec credential plugin that prints the current token."""
    ctx["generation"] = 0
    ctx["token_file"], ctx["calls"] = tmp_path / "token", tmp_path / "calls"
    ctx["token_file"].write_text(emu.token)
    plugin = tmp_path / "credential-plugin.sh"
    plugin.write_text(EXEC_PLUGIN.format(calls=ctx["calls"], token=ctx["token_file"]))
    plugin.chmod(0o755)
    doc = yaml.safe_load(kubeconfig.read_text())
    doc["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "interactiveMode": "Never"}}
    kubeconfig.write_text(yaml.safe_dump(doc))


FAULTS = [
    # id, inject, whether relists may skip versions (410 Gone)
    pytest.param(_drop, False, id="drop-watches"),
    pytest.param(_storm_410, True, id="410-storm"),
    pytest.param(_burst(429, 1), False, id="429-retry-after"),
    pytest.param(_burst(500, None), False, id="500-burst"),
    pytest.param(_slow, False, id="slow-server"),
    pytest.param(_rotate_token, False, id="401-exec-renewal"),
    pytest.param(_restart, False, id="server-restart"),
]


@pytest.mark.parametrize(("inject", "blind"), FAULTS)
def test_recording_survives_the_fault(tmp_path: Path, request: pytest.FixtureRequest, inject: Callable[[Any, dict[str, Any]], int],
                                      blind: bool) -> None:
    from kubectl_sktrace.trace.files import format as traceformat
    from sktrace_emulator import Emulator

    fault = request.node.callspec.id
    emu = Emulator(seed=hash(fault) % 1000, bookmark_interval=1.0).start()
    ctx: dict[str, Any] = {}
    try:
        truth = GroundTruth(emu)
        kubeconfig, cache = tmp_path / "kubeconfig", tmp_path / "cache.db"
        emu.write_kubeconfig(kubeconfig)
        if fault == "401-exec-renewal":
            _use_exec_plugin(tmp_path, kubeconfig, emu, ctx)
        traffic = Traffic(emu, seed=7, rate=40, namespace=NAMESPACE).start()
        t0 = time.time()
        rec = Recorder(kubeconfig=kubeconfig, cache=cache, home=tmp_path, log=tmp_path / "rec.log", args=["-v", "2"])
        assert rec.wait_for("initial sync done", timeout=60), rec.output()
        time.sleep(0.5)
        fault_start = time.time()
        injected = inject(emu, ctx)
        fault_end = time.time()
        _wait_for_recovery(rec, deadline=time.time() + 70)  # back-off is capped at 30 s: two rounds of it at most
        traffic.stop()
        settled = settle(emu, cache, truth, NAMESPACE)
        assert rec.proc.poll() is None, f"the recorder ended during the fault:\n{rec.output()[-3000:]}"
        assert rec.stop(timeout=90) == 0, rec.output()[-3000:]

        out = tmp_path / "all.sktrace"
        run = run_cli(["export", "--cache", str(cache), "-s", f"@{int(t0) - 5}", "-t", f"@{int(time.time()) + 2}",
                       "--include-namespaces", NAMESPACE, "-O", str(out)], home=tmp_path)
        assert run.code == 0, run.describe()
        trace = traceformat.read_trace(out)
        run_rows = runs(cache)
        assert len(run_rows) == 1 and run_rows[0].clean
        truth.save(tmp_path / "truth.json")
        report = compare(truth.snapshot(), trace, run_rows, rows=recorded(cache), namespaces=frozenset([NAMESPACE]),
                         blind=[(fault_start, settled)] if blind else [])
        check_lifecycles(trace, truth.started_per_owner(), report)
        assert not report.problems, "\n".join(report.problems[:40])
        assert report.deletions_checked > 0 and report.truth_changes > 0
        if fault == "401-exec-renewal":
            calls = len(ctx["calls"].read_text().split())
            assert calls > ctx["generation"] // 2, f"the exec plugin ran {calls} times for {ctx['generation']} token rotations"
            ctx["figure"] = f", exec plugin ran {calls} times for {ctx['generation']} rotations"
        print(f"\nfault {fault}: {injected} injected over {fault_end - fault_start:.1f}s; {report.figures()}{ctx.get('figure', '')}")
    finally:
        emu.stop()
