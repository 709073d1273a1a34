"""The edges of what the cache knows, end to end: a cluster whose API server throttles the recorder (API Priority and
Fairness), a kind's slow first list, the tail a running recorder has not committed yet. The real CLI runs in a process of
its own against the emulator in this process (``sktrace_emulator/apf.py`` rejects as kube-apiserver does).

A 429 is the server answering: the request is sent again after ``Retry-After`` (``record/throttle.py``), never an
outage; a list is never restarted for it. The bounds asserted are the product's: each wait is the server's Retry-After
plus at most ``throttle.JITTER`` of it, a stretch of throttling is told once it has passed ``PASS_QUIET`` seconds, a
batch commits within half a second, a heartbeat every second; ``SLACK`` is a loaded machine's scheduling.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest
from reliability_support import query, run_cli, wait_rows
from test_kinds_come_and_go import QUIET, Tuned, deployment, stopped, synced

from kubectl_sktrace.record.throttle import JITTER, PASS_QUIET
from sktrace_emulator import Emulator
from sktrace_emulator.apf import PriorityLevel, Rejected, Seat

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

NS = "shop"
SLACK = 3.0
CONFIGMAPS = 1500


@pytest.fixture
def emu() -> Iterator[Emulator]:
    emulator = Emulator(token="throttled", seed=9, tls=True).start()
    try:
        yield emulator
    finally:
        emulator.stop()


def recorder(tmp_path: Path, emu: Emulator, kind: str, *, cache: Path, tune: dict[str, float] | None = None,
             extra: tuple[str, ...] = ()) -> Tuned:
    kubeconfig, config = tmp_path / "kubeconfig", tmp_path / "tracer.yaml"
    emu.write_kubeconfig(kubeconfig)
    config.write_text(f"trackedObjects:\n  {kind}: {{}}\n")
    home = tmp_path / cache.stem
    home.mkdir(exist_ok=True)
    return Tuned(home, ["--kubeconfig", str(kubeconfig), "--cache", str(cache), "--config", str(config), "-n", NS,
                        "--duration", "120", *extra], dict(tune or {}))


def told(err: str, kind: str) -> list[str]:
    return [line for line in err.splitlines()
            if kind in _named(line) and (": throttled by the API server" in line or ": requests pass again" in line)]


def _named(line: str) -> list[str]:
    """The kinds a throttling line names (``Warning: K1, K2: throttled …``, ``K1, K2: requests pass again …``)."""
    return line.removeprefix("Warning: ").split(": ")[0].split(", ")


def test_a_watch_renewal_that_meets_a_429_keeps_the_run_clean(tmp_path: Path, emu: Emulator) -> None:
    emu.create(deployment("web"))
    cache = tmp_path / "cache.db"
    rec = recorder(tmp_path, emu, "apps/v1.Deployment", cache=cache, tune=QUIET)  # the watches renew every second
    synced(cache)
    time.sleep(1.5)
    emu.fail("Deployment", 429, count=3, retry_after=1)  # the next renewal and its first two retries
    armed = rec.wait_for("Warning: apps/v1.Deployment: throttled by the API server since ", timeout=1 + SLACK)
    emu.create(deployment("api"))  # while the renewal waits: the server replays it once the watch resumes
    wait_rows(cache, "SELECT 1 FROM events WHERE name = 'api'", timeout=3 * (1 + JITTER) + 1 + SLACK)
    rec.wait_for("apps/v1.Deployment: requests pass again", timeout=PASS_QUIET + 1 + SLACK)
    emu.create(deployment("late"))
    wait_rows(cache, "SELECT 1 FROM events WHERE name = 'late'", timeout=1 + SLACK)
    time.sleep(1.5)  # a heartbeat past it: the export below ends at the last whole second
    out, err = rec.stop()

    assert "unreachable" not in err and "Outage" not in out, err
    assert len(told(err, "apps/v1.Deployment")) == 2, err
    assert query(cache, "SELECT count(*) FROM coverage_gaps") == [(0,)]
    ((ts, recv, inferred),) = query(cache, "SELECT ts, recv, inferred FROM events WHERE name = 'api'")
    assert armed <= recv <= armed + 3 * (1 + JITTER) + SLACK and inferred == 0  # replayed once the waits were over
    status = run_cli(["status", "--cache", str(cache)], home=tmp_path)
    assert "clean" in status.stdout and "interrupted" not in status.stdout, status.stdout
    export = run_cli(["export", "--cache", str(cache), "-s", f"@{int(armed) - 3}", "-t", f"@{stopped(cache)}",
                      "-n", NS, "--format", "json", "-O", str(tmp_path / "t.json")], home=tmp_path)
    assert export.code == 0, export.describe()
    trace = json.loads((tmp_path / "t.json").read_text())
    applied = {o["metadata"]["name"]: e["ts"] for e in trace["events"] for o in e["applied_objs"]}
    assert applied["api"] == int(ts) and "late" in applied, trace["events"]


class PoliteClient(threading.Thread):
    """Another client of the recorder's identity listing the namespace's ConfigMaps page by page, again and again
    (``PAUSE`` seconds between two lists), waiting as each 429's Retry-After says (the same page again), until told
    to stop."""

    PAUSE = 0.3

    def __init__(self, emu: Emulator, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.emu, self.halt = emu, stop
        self.context = ssl.create_default_context(cadata=emu.ca_pem.decode())
        self.lists = self.rejected = 0

    def run(self) -> None:
        conn = http.client.HTTPSConnection("127.0.0.1", self.emu.port, context=self.context)
        token = ""
        while not self.halt.is_set():
            conn.request("GET", f"/api/v1/namespaces/{NS}/configmaps?limit=500" + (f"&continue={token}" if token else ""),
                         headers={"Authorization": f"Bearer {self.emu.token}", "User-Agent": "polite-client"})
            resp = conn.getresponse()
            body = resp.read()
            if resp.status == 429:
                self.rejected += 1
                self.halt.wait(float(resp.getheader("Retry-After") or 1))
                continue
            token = json.loads(body)["metadata"].get("continue", "")
            if not token:
                self.lists += 1
                self.halt.wait(self.PAUSE)
        conn.close()


def fill(emu: Emulator) -> None:
    emu.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    for i in range(CONFIGMAPS):  # ~2 KB each: a page of 500 is a megabyte, ten seats (the most a request costs)
        emu.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i:04}", "namespace": NS},
                    "data": {"config": "x" * 2000}})


def first_list(tmp_path: Path, emu: Emulator, cache: Path) -> float:
    """The seconds from a run's start to its sync (every kind listed) with nothing throttled."""
    rec = recorder(tmp_path, emu, "v1.ConfigMap", cache=cache)
    synced(cache)
    rec.stop()
    ((started, sync),) = query(cache, "SELECT started, synced FROM runs")
    return float(sync - started)


def seats_when_free(level: PriorityLevel, width: int) -> Seat:
    """``width`` seats of the level as soon as they fit: a client's list holds the whole level for a moment at a time."""
    deadline = time.monotonic() + 30
    while True:
        if level.in_use() + width <= level.seats:  # asked only when it fits, so its own tries are seldom rejections
            try:
                return level.admit(width, verb="list", user_agent="test")
            except Rejected:
                pass
        assert time.monotonic() < deadline, "the level never had room"
        time.sleep(0.005)


def throttled_kinds(err: str) -> set[str]:
    return {kind for line in err.splitlines() if ": throttled by the API server" in line or ": requests pass again" in line
            for kind in _named(line)}


def test_a_first_list_in_a_saturated_level_completes_without_starting_over(tmp_path: Path, emu: Emulator) -> None:
    fill(emu)
    idle = first_list(tmp_path, emu, tmp_path / "idle.db")
    level = emu.throttle(10)  # a page of 500 ConfigMaps takes the whole level: it runs alone
    assert level is not None
    halt = threading.Event()
    clients = [PoliteClient(emu, halt) for _ in range(4)]
    for client in clients:
        client.start()
    time.sleep(1.0)  # the level is busy
    # and too full for a list when the recorder starts (a GET of one seat still fits), until it has been refused one:
    # however the clients' pace and the recorder's fall on a busy machine, the level rejects its list at least once
    # (then the clients alone contend with it)
    blocker = seats_when_free(level, level.seats - 1)
    cache = tmp_path / "busy.db"
    rec = recorder(tmp_path, emu, "v1.ConfigMap", cache=cache)
    try:
        deadline = time.monotonic() + 60
        while not any(r.user_agent.startswith("kubectl-sktrace/") and r.verb == "list" for r in level.rejections):
            assert time.monotonic() < deadline, rec.stderr()
            time.sleep(0.05)
        blocker.release()
        # every wait is a Retry-After of 32 s at most, ten retries a request at most
        rec.wait_for("initial sync done", timeout=120)
        # one line once every kind's requests pass again (a request still waiting may wait one more Retry-After)
        rec.wait_for(": requests pass again", timeout=PASS_QUIET + 32 * (1 + JITTER) + SLACK)
    finally:
        blocker.release()
        halt.set()
    out, err = rec.stop()
    for client in clients:
        client.join(timeout=40)

    ((started, sync),) = query(cache, "SELECT started, synced FROM runs")
    asked = [r.retry_after for r in level.rejections if r.user_agent.startswith("kubectl-sktrace/") and started <= r.ts <= sync]
    assert asked, "the level never rejected the recorder: nothing was tested"
    assert sync - started <= 2 * idle + sum(asked) * (1 + JITTER) + SLACK, (sync - started, idle, asked)
    assert f"listed v1.ConfigMap: {CONFIGMAPS:,} objects" in err, err  # each object once: no list started over
    for kind in throttled_kinds(err) | {"v1.ConfigMap"}:
        assert len(told(err, kind)) in (0, 1, 2), err  # named when the stretch begins (if by then) and ends: never per retry
    assert len([line for line in err.splitlines() if ": throttled by the API server" in line]) == 1, err  # one stretch, one warning
    assert throttled_kinds(err), err
    assert "unreachable" not in err and "Outage" not in out, err
    assert query(cache, "SELECT count(*) FROM coverage_gaps WHERE cause != 'not yet observed'") == [(0,)]
    assert sum(c.lists for c in clients) > 0 and sum(c.rejected for c in clients) > 0
    # before its first list a kind was not yet observed (throttled, when the server throttled it meanwhile); what
    # existed at the start is in the state at the start, not created mid-trace
    for kind, since, until, detail in query(cache, "SELECT gvk, since, until, detail FROM coverage_gaps"):
        assert since == started and until <= sync and (detail == "listing" or kind in throttled_kinds(err)), (kind, detail, err)
    assert query(cache, "SELECT DISTINCT ts FROM events WHERE gvk = 'v1.ConfigMap'") == [(int(started),)]
    assert run_cli(["status", "--cache", str(cache)], home=tmp_path).stdout.count("interrupted") == 0
    print(f"idle {idle:.2f}s; saturated {sync - started:.2f}s, {len(asked)} rejections of the recorder asking {sum(asked)}s")


def test_a_slow_first_list_leaves_its_kind_not_yet_observed_and_what_existed_in_the_start_state(tmp_path: Path) -> None:
    paced = 7.0  # seconds per MB a list page costs the server before its first byte: a page of 500 ConfigMaps, ~7 s
    with Emulator(token="paced", seed=3, tls=True, list_seconds_per_mb=paced) as emu:
        emu.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        for i in range(500):
            emu.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i:04}", "namespace": NS},
                        "data": {"config": "x" * 2000}})
        cache = tmp_path / "cache.db"
        rec = recorder(tmp_path, emu, "v1.ConfigMap", cache=cache)
        # while the first page is on its way, status says so
        wait_rows(cache, "SELECT 1 FROM coverage_gaps WHERE gvk = 'v1.ConfigMap' AND cause = 'not yet observed'", timeout=30)
        listing = json.loads(run_cli(["status", "--cache", str(cache), "-o", "json"], home=tmp_path).stdout)
        rec.wait_for("initial sync done", timeout=60)
        time.sleep(2.0)  # recorded live for a while
        out, err = rec.stop()

    ((started, stopped_at),) = query(cache, "SELECT started, stopped FROM runs")
    ((since, until, detail),) = query(cache, "SELECT since, until, detail FROM coverage_gaps WHERE gvk = 'v1.ConfigMap' "
                                              "AND cause = 'not yet observed'")
    assert since == started and until - started >= 5.0 and detail == "listing"  # its first page answered ~7 s in
    assert query(cache, "SELECT count(*) FROM coverage_gaps WHERE cause != 'not yet observed'") == [(0,)]
    assert query(cache, "SELECT DISTINCT ts, inferred FROM events WHERE gvk = 'v1.ConfigMap'") == [(int(started), 0)]
    assert "Outage" not in out and "unreachable" not in err, err

    status = run_cli(["status", "--cache", str(cache)], home=tmp_path)
    assert "clean" in status.stdout and "interrupted" not in status.stdout, status.stdout
    assert "Not yet observed at a run's start (until the kind's first list: blind time, no outage):" in status.stdout
    data = json.loads(run_cli(["status", "--cache", str(cache), "-o", "json"], home=tmp_path).stdout)
    assert [(u["kind"], u["cause"]) for u in data["notYetObserved"]] == [("v1.ConfigMap", "listing")]
    assert data["outages"] == [] and data["runs"][0]["state"] == "clean"

    assert listing["runs"][0]["state"] == "running" and listing["outages"] == []
    assert ("v1.ConfigMap", "listing") in [(u["kind"], u["cause"]) for u in listing["notYetObserved"]], listing

    window_start = int(started) + 1  # the ConfigMaps existed all along: in the state at the window's start
    export = run_cli(["export", "--cache", str(cache), "-s", f"@{window_start}", "-t", f"@{int(stopped_at)}", "-n", NS,
                      "--format", "json", "-O", str(tmp_path / "t.json")], home=tmp_path)
    assert export.code == 0, export.describe()
    trace = json.loads((tmp_path / "t.json").read_text())
    assert len(trace["events"][0]["applied_objs"]) == 500
    assert [o for e in trace["events"][1:] for o in e["applied_objs"]] == []  # none created mid-trace
    assert "coverage: " in export.stderr and ", not yet observed)" in export.stderr, export.stderr
    assert "100% of the window" not in export.stderr


def test_an_export_while_a_recorder_runs_names_the_tail_not_yet_committed(tmp_path: Path, emu: Emulator) -> None:
    emu.create(deployment("web"))
    cache = tmp_path / "cache.db"
    rec = recorder(tmp_path, emu, "apps/v1.Deployment", cache=cache)
    try:
        rec.wait_for("initial sync done", timeout=30)
        time.sleep(2.0)
        ((started,),) = query(cache, "SELECT started FROM runs")
        export = run_cli(["export", "--cache", str(cache), "-s", f"@{int(started) + 1}", "-t", "now", "-n", NS,
                          "-O", str(tmp_path / "t.sktrace")], home=tmp_path)
    finally:
        rec.stop()
    assert export.code == 0, export.describe()
    assert "not yet committed: its recorder is running)" in export.stderr, export.stderr
    assert "no recorder ran" not in export.stderr, export.stderr
