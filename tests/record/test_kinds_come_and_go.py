"""A recorder that runs while the cluster changes under it, end to end: quiet kinds, CRDs deleted and re-created, kinds
installed after the start, grants revoked and given again (docs/coverage.md). The emulator runs in this process and
behaves as a real API server does (no bookmark for a kind that does not change, CRDs that take their objects and their
paths with them, roles judged at each request); the recorder is the real CLI in a process of its own, with its cadences
shortened through their module constants (``tuned``), so that a minute of a calm cluster or a 20 s re-check takes a
second here. The bounds asserted are the product's: a kind is asked for again at most ``longest_wait`` apart, a batch
commits within half a second, plus a margin for a loaded machine.
"""

from __future__ import annotations

import json
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest
from reliability_support import private_env, query, run_cli, wait_rows

from sktrace_emulator import Emulator, crd_object

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

NS = "shop"
WIDGET = "example.com/v1.Widget"
CRD_NAME = "widgets.example.com"
LAUNCH = """
import importlib, json, sys
for dotted, value in json.loads(sys.argv[1]).items():
    module, _, name = dotted.rpartition(".")
    setattr(importlib.import_module(module), name, value)
sys.argv = ["kubectl-sktrace", *sys.argv[2:]]
from kubectl_sktrace.cli import main
sys.exit(main())
"""
QUIET = {"kubectl_sktrace.record.watching.WATCH_TIMEOUT": 1, "kubectl_sktrace.kube.client.WATCH_GRACE": 1.0}
"""A watch's minute is a second here, its connection dead after two silent ones (90 s in a real run)."""
RECHECK = 1.0  # NOT_SERVED_RECHECK and FORBIDDEN_RETRY (20 s and 40 s in a real run)
SLACK = 3.0  # a list, a commit (0.5 s) and a loaded machine's scheduling


class Tuned:
    """``kubectl-sktrace start ARGS`` as a user runs it, with some module constants set first; stderr to a file."""

    def __init__(self, tmp_path: Path, args: list[str], tune: dict[str, Any]) -> None:
        self.log = tmp_path / "recorder.log"
        self.out = tmp_path / "recorder.out"
        with open(self.log, "wb") as err, open(self.out, "wb") as out:
            self.proc = subprocess.Popen([sys.executable, "-c", LAUNCH, json.dumps(tune), "start", *args],
                                         env=private_env(tmp_path), stdin=subprocess.DEVNULL, stdout=out, stderr=err)

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, text: str, *, timeout: float) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.stderr():
                return time.time()
            assert self.proc.poll() is None, self.stderr()
            time.sleep(0.05)
        raise AssertionError(f"no {text!r} within {timeout}s:\n{self.stderr()}")

    def stop(self) -> tuple[str, str]:
        self.proc.send_signal(signal.SIGINT)
        assert self.proc.wait(timeout=30) == 0, self.stderr()
        return self.out.read_text(), self.stderr()


def synced(cache: Path) -> None:
    wait_rows(cache, "SELECT 1 FROM runs WHERE synced IS NOT NULL", timeout=30)


def stopped(cache: Path) -> int:
    """The second the last run stopped in: an export ending there has no time without a recorder."""
    return int(query(cache, "SELECT max(stopped) FROM runs")[0][0])


def deployment(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}}


def widget(name: str) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name, "namespace": NS}, "spec": {"size": 1}}


@pytest.fixture
def emu() -> Iterator[Emulator]:
    emulator = Emulator(token="come-and-go", seed=5).start()  # bookmarks as a real server: once a minute, if the kind moves
    try:
        yield emulator
    finally:
        emulator.stop()


@pytest.fixture
def files(tmp_path: Path, emu: Emulator) -> tuple[Path, Path, Path]:
    kubeconfig, cache, config = tmp_path / "kubeconfig", tmp_path / "cache.db", tmp_path / "tracer.yaml"
    emu.write_kubeconfig(kubeconfig)
    config.write_text(f"trackedObjects:\n  apps/v1.Deployment: {{}}\n  {WIDGET}: {{}}\n")
    return kubeconfig, cache, config


def start(tmp_path: Path, files: tuple[Path, Path, Path], *extra: str, **tune: Any) -> Tuned:
    kubeconfig, cache, config = files
    return Tuned(tmp_path, ["--kubeconfig", str(kubeconfig), "--cache", str(cache), "--config", str(config), "--duration", "90",
                            *extra], {**QUIET, **tune})


def test_a_calm_cluster_has_no_outage_and_a_real_one_is_seen_at_once(tmp_path: Path, emu: Emulator, files: tuple[Path, Path, Path]) -> None:
    # no bookmark, no event for many watch minutes: quiet, not dead; then the control plane goes away for real
    emu.create(deployment("web"))
    emu.create(crd_object("example.com", "Widget", "widgets"))
    emu.create(widget("w1"))
    rec = start(tmp_path, files)
    cache = files[1]
    synced(cache)
    time.sleep(6.0)  # six watch minutes, three silence limits: a recorder that took silence for death reports outages
    assert query(cache, "SELECT count(*) FROM coverage_gaps") == [(0,)], rec.stderr()
    down = time.time()
    emu.stop()
    (since,) = wait_rows(cache, "SELECT min(since) FROM coverage_gaps WHERE cause = 'API unreachable' HAVING count(*) > 0",
                         timeout=SLACK)[0]
    seen = time.time() - down
    emu.start()
    wait_rows(cache, "SELECT 1 FROM coverage_gaps GROUP BY run_id HAVING sum(until IS NULL) = 0", timeout=30)
    out, err = rec.stop()
    assert since >= down - 0.1, (since, down)  # the quiet streams were alive until the server cut them
    assert seen < SLACK
    assert [line for line in err.splitlines() if line.startswith("Warning: API unreachable since ")], err
    print(f"outage seen {seen:.2f}s after the server stopped")


def test_a_crd_deleted_and_created_again_is_recorded_live_and_its_absence_is_not_a_gap(
        tmp_path: Path, emu: Emulator, files: tuple[Path, Path, Path]) -> None:
    emu.create(crd_object("example.com", "Widget", "widgets"))
    for name in ("w1", "w2"):
        emu.create(widget(name))
    # a watch of a real minute: the deletions can only be seen live by a watch open when they happen (one that
    # reconnects just after them is answered 404 and infers them, as it must); a change seen live proves it open
    rec = start(tmp_path, files, **{"kubectl_sktrace.record.availability.NOT_SERVED_RECHECK": RECHECK,
                                    "kubectl_sktrace.record.watching.WATCH_TIMEOUT": 60})
    cache = files[1]
    synced(cache)
    emu.patch("example.com/v1", "Widget", NS, "w2", {"spec": {"size": 2}})
    wait_rows(cache, "SELECT 1 FROM events WHERE name = 'w2' GROUP BY name HAVING count(*) = 2", timeout=SLACK)
    emu.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", CRD_NAME)  # its objects go with it
    wait_rows(cache, "SELECT 1 FROM coverage_gaps WHERE cause = 'not served' AND gvk = ?", WIDGET, timeout=SLACK)
    assert query(cache, "SELECT name, op, inferred FROM events WHERE gvk = ? ORDER BY id", WIDGET) == [
        ("w1", 0, 0), ("w2", 0, 0), ("w2", 0, 0), ("w1", 1, 0), ("w2", 1, 0)]  # their deletions, seen live
    time.sleep(1.0)
    served = time.time()
    emu.create(crd_object("example.com", "Widget", "widgets"))
    for name in ("w3", "w4"):
        emu.create(widget(name))
    wait_rows(cache, "SELECT 1 FROM events WHERE name = 'w4'", timeout=RECHECK * 1.2 + SLACK)
    recorded = time.time() - served
    rec.wait_for(f"{WIDGET} is served since ", timeout=SLACK)
    emu.create(widget("w5"))  # watched again: live
    wait_rows(cache, "SELECT 1 FROM events WHERE name = 'w5'", timeout=SLACK)
    out, err = rec.stop()

    assert query(cache, "SELECT name, op, inferred FROM events WHERE gvk = ? AND id > 5 ORDER BY name", WIDGET) == [
        ("w3", 0, 0), ("w4", 0, 0), ("w5", 0, 0)]  # created after the kind came back: recorded live
    ((since, until),) = query(cache, "SELECT since, until FROM coverage_gaps WHERE cause = 'not served'")
    assert since < served <= until <= served + RECHECK * 1.2 + SLACK
    assert [line for line in err.splitlines() if WIDGET in line and ("not served" in line or "is served" in line)] == [
        line for line in err.splitlines() if line.startswith((f"Warning: {WIDGET} is not served by the API server since ",
                                                              f"{WIDGET} is served since "))]
    told = [line for line in err.splitlines() if WIDGET in line and not line.startswith("listed ")]
    assert len(told) == 2, err  # one line each way, none per check
    assert "Outage" not in out and f"Not served: {WIDGET} " in out

    status = run_cli(["status", "--cache", str(cache)], home=tmp_path)
    assert "clean" in status.stdout and "interrupted" not in status.stdout, status.stdout  # not served is no outage
    assert "Not served during runs (none of their objects could exist then: nothing is missing):" in status.stdout
    data = json.loads(run_cli(["status", "--cache", str(cache), "-o", "json"], home=tmp_path).stdout)
    assert [(u["kind"], u["run"]) for u in data["notServed"]] == [(WIDGET, 1)] and data["outages"] == []
    export = run_cli(["export", "--cache", str(cache), "-s", f"@{int(since) - 5}", "-t", f"@{stopped(cache)}",
                      "--include-namespaces", NS, "-O", str(tmp_path / "t.sktrace")], home=tmp_path)
    assert export.code == 0, export.describe()
    assert f"  {WIDGET} was not served " in export.stderr and "100% of the window" in export.stderr, export.stderr
    print(f"served -> recorded: {recorded:.2f}s (re-check every {RECHECK}s at most, jitter {RECHECK * 0.2}s)")


def test_a_kind_installed_after_the_start_is_recorded_once_served(tmp_path: Path, emu: Emulator,
                                                                  files: tuple[Path, Path, Path]) -> None:
    emu.create(deployment("web"))
    rec = start(tmp_path, files, **{"kubectl_sktrace.record.availability.NOT_SERVED_RECHECK": RECHECK})
    cache = files[1]
    synced(cache)
    rec.wait_for(f"Warning: {WIDGET} is not served by the API server since ", timeout=SLACK)
    served = time.time()
    emu.create(crd_object("example.com", "Widget", "widgets"))  # an operator installed later
    emu.create(widget("w1"))
    wait_rows(cache, "SELECT 1 FROM events WHERE name = 'w1' AND inferred = 0", timeout=RECHECK * 1.2 + SLACK)
    print(f"installed -> recorded: {time.time() - served:.2f}s")
    rec.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def probe(port: int, path: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def role(*resources: str) -> list[dict[str, Any]]:
    return [{"apiGroups": ["", "apps", "example.com"], "resources": list(resources), "verbs": ["get", "list", "watch"]}]


def test_a_grant_revoked_mid_run_is_a_forbidden_gap_until_it_is_granted_again(tmp_path: Path, emu: Emulator,
                                                                               files: tuple[Path, Path, Path]) -> None:
    emu.create(deployment("web"))
    everything = role("namespaces", "pods", "deployments", "replicasets", "widgets")
    emu.grant_rules(everything)
    port = free_port()
    rec = start(tmp_path, files, "--health-port", str(port), **{"kubectl_sktrace.record.availability.FORBIDDEN_RETRY": RECHECK})
    cache = files[1]
    synced(cache)
    emu.grant_rules(role("namespaces", "pods", "replicasets", "widgets"))  # Deployments revoked
    rec.wait_for("Warning: forbidden: cannot watch deployments.apps in all namespaces; grant get, list and watch on "
                 "deployments.apps: ", timeout=1 + 1 + SLACK)  # met at the next watch, within a (tuned) watch minute
    emu.create(deployment("late"))  # while refused
    assert probe(port, "/readyz")[0] == 503 and probe(port, "/readyz")[1]["failed"] == ["apps/v1.Deployment"]
    assert probe(port, "/healthz")[0] == 200
    time.sleep(6.0)  # refused long enough that export lists the stretch (it counts those under 5 s)
    granted = time.time()
    emu.grant_rules(everything)
    ((ts, inferred),) = wait_rows(cache, "SELECT ts, inferred FROM events WHERE name = 'late'", timeout=RECHECK * 1.2 + SLACK)
    recorded = time.time() - granted
    rec.wait_for("apps/v1.Deployment may be read since ", timeout=SLACK)
    deadline = time.monotonic() + SLACK
    while probe(port, "/readyz")[0] != 200:
        assert time.monotonic() < deadline, probe(port, "/readyz")
        time.sleep(0.1)
    emu.create(deployment("after"))
    wait_rows(cache, "SELECT 1 FROM events WHERE name = 'after' AND inferred = 0", timeout=SLACK)  # live again
    out, err = rec.stop()

    assert inferred == 1  # first seen when it could be read: reconstructed, not live
    ((since, until),) = query(cache, "SELECT since, until FROM coverage_gaps WHERE cause = 'forbidden'")
    assert since < granted <= until
    assert len([line for line in err.splitlines() if "deployments.apps" in line]) == 1, err  # one warning, none per retry
    assert [line for line in out.splitlines() if line.startswith("Refused: forbidden ")], out
    status = run_cli(["status", "--cache", str(cache)], home=tmp_path)
    assert "interrupted" in status.stdout and "forbidden 20" in status.stdout, status.stdout
    assert "Not recorded at the end" not in status.stdout  # granted again before the run ended
    export = run_cli(["export", "--cache", str(cache), "-s", f"@{int(since) - 5}", "-t", f"@{stopped(cache)}",
                      "--include-namespaces", NS, "-O", str(tmp_path / "t.sktrace")], home=tmp_path)
    assert export.code == 0 and ", forbidden)" in export.stderr, (export.describe(), query(cache, "SELECT * FROM runs"), query(cache, "SELECT * FROM coverage_gaps"), time.time())
    print(f"granted -> recorded: {recorded:.2f}s (retried every {RECHECK}s at most, jitter {RECHECK * 0.2}s)")
