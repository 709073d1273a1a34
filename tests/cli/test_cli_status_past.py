"""``get --at T`` prints kubectl's status columns as real ``kubectl get`` printed them at T, from the recorded status
(docs/spec.md "The history at a time"): during the incident of ``test_cli_statuses`` (a rollout stuck at 2 of 3 ready,
its new pods waiting ImagePullBackOff), real kubectl's tables of the Deployments and the pods taken against the emulator
at a second T; afterwards ``kubectl sktrace get deploy --at T`` and ``get pods --at T`` print the same READY,
UP-TO-DATE, AVAILABLE, STATUS and RESTARTS, ``-o json`` holds the reduced status in the API's shape, ``serve --at T``
gives kubectl the same table, and a cache without status changes prints ``<unknown>``, said once."""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from test_cli_start import sktrace, start_background, stop, wait_synced
from test_cli_statuses import CONFIG, NS, cluster, incident  # noqa: F401 - the fixture
from tests.apiserver.test_serve_past import serve
from tests.cli.test_cli_past import caught_up, kubectl

from kubectl_sktrace.timeparse import format_time
from kubectl_sktrace.trace import statuses
from sktrace_emulator import Emulator

pytestmark = [pytest.mark.timeout(240), pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")]


def rows(table: str, *, drop: tuple[str, ...] = ("AGE",)) -> list[dict[str, str]]:
    """A table's rows as column -> cell, without ``drop``; a failed pull said either way read as one state (as recorded)."""
    lines = table.strip().splitlines()
    header = lines[0].split()
    out = []
    for line in lines[1:]:
        cells = dict(zip(header, line.split()))
        for column in drop:
            cells.pop(column, None)
        if cells.get("STATUS") in statuses.PULL_FAILURES:
            cells["STATUS"] = statuses.PULL_BACKOFF
        out.append(cells)
    return out


def tables(kubeconfig: str) -> dict[str, list[dict[str, str]]]:
    return {kind: rows(kubectl(kubeconfig, "get", kind, "-n", NS).stdout) for kind in ("deploy", "pods")}


def steady(emu: Emulator, kubeconfig: str, cache: str) -> tuple[int, dict[str, list[dict[str, str]]]]:
    """Real kubectl's tables at a second T the state held through: the recorder has received every change before the
    first look (``caught_up``), and a second look after T's second ended shows the same (no pod terminating, which the
    history cannot show: a deletion's timestamp is not kept)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        caught_up(emu, cache)
        taken = time.time()
        first = tables(kubeconfig)
        time.sleep(max(0.0, math.floor(taken) + 1.05 - time.time()))
        caught_up(emu, cache)
        if tables(kubeconfig) == first and not any(r["STATUS"] == "Terminating" for r in first["pods"]):
            return math.floor(taken), first
    raise AssertionError("the stuck rollout never held still for a second")


def test_get_at_prints_the_status_columns_kubectl_printed_then(cluster: tuple[Emulator, str, Path], tmp_path: Path) -> None:  # noqa: F811
    emu, kubeconfig, _ = cluster
    cache, config = str(tmp_path / "cache.db"), tmp_path / "tracer.yaml"
    config.write_text(CONFIG + "  v1.Pod: {}\n")
    proc = start_background(kubeconfig, cache, "--config", str(config), duration="150")
    shots: list[tuple[int, dict[str, list[dict[str, str]]]]] = []
    try:
        wait_synced(cache, 1, proc)
        incident(emu, kubeconfig, tmp_path, stuck=lambda: shots.append(steady(emu, kubeconfig, cache)))
    finally:
        stop(proc)
    (second, seen), = shots
    web = next(r for r in seen["deploy"] if r["NAME"] == "web")
    assert web["READY"] == "2/3" and sum(r["STATUS"] == "ImagePullBackOff" for r in seen["pods"]) == 2, seen
    for kind in ("deploy", "pods"):
        done = sktrace("get", kind, "-n", NS, "--cache", cache, "--at", f"@{second}")
        assert rows(done.stdout) == seen[kind], (kind, done.stdout, seen[kind])
        assert "<unknown>" not in done.stdout and "not known" not in done.stderr, done.stderr
    shown = json.loads(sktrace("get", "deploy", "web", "-n", NS, "--cache", cache, "--at", f"@{second}", "-o", "json").stdout)
    assert shown["status"]["readyReplicas"] == 2 and shown["status"]["updatedReplicas"] == 2, shown["status"]
    pods = json.loads(sktrace("get", "pods", "-n", NS, "--cache", cache, "--at", f"@{second}", "-o", "json").stdout)["items"]
    waiting = [p for p in pods if any(c.get("state") == {"waiting": {"reason": "ImagePullBackOff"}} for c in p["status"].get("containerStatuses", []))]
    assert len(waiting) == 2, [p["status"] for p in pods]
    for served in serve(cache, tmp_path, "--at", f"@{second}"):
        for kind in ("deploy", "pods"):
            assert rows(served.kubectl("get", kind, "-n", NS).stdout) == seen[kind], kind
    _history(cache, second, [p["metadata"]["name"] for p in waiting])
    _without_statuses(cache, tmp_path, second)


def _history(cache: str, second: int, pulling: list[str]) -> None:
    """``history --status``: each recorded status change a line among the versions, at its second; without it, none."""
    from kubectl_sktrace.store import open_cache_readonly
    from kubectl_sktrace.store.statuses import every_row

    with open_cache_readonly(cache) as opened:
        states = [(row.ts, row.reduced) for row in every_row(opened, namespace=NS) if row.key.gvk.kind == "Deployment" and row.key.name == "web"]
    recorded = [ts for i, (ts, state) in enumerate(states) if i == 0 or states[i - 1][1] != state]  # a repeated state says nothing
    said = sktrace("history", "deploy/web", "-n", NS, "--cache", cache, "--status").stdout.splitlines()
    lines = [line for line in said if "status: " in line]
    assert len(lines) == len(recorded) and any("readyReplicas 3 -> 2" in line for line in lines), said
    at = said[0].index("TIME")
    assert [line[at:].split()[0] for line in lines] == [format_time(ts) for ts in recorded], said
    assert "status: " not in sktrace("history", "deploy/web", "-n", NS, "--cache", cache).stdout
    pod = sktrace("history", f"pod/{pulling[0]}", "-n", NS, "--cache", cache, "--status").stdout
    assert "web: state waiting ImagePullBackOff" in pod, pod


def _without_statuses(cache: str, tmp_path: Path, second: int) -> None:
    """A cache made before status changes were recorded: the columns print <unknown>, said once on stderr."""
    bare = tmp_path / "bare.db"
    shutil.copy(cache, bare)
    conn = sqlite3.connect(bare)
    conn.execute("DROP TABLE status_changes")
    conn.execute("DROP TABLE status_objects")
    conn.commit()
    conn.close()
    done = sktrace("get", "deploy", "-n", NS, "--cache", str(bare), "--at", f"@{second}")
    assert all(r["READY"] == "<unknown>" for r in rows(done.stdout)), done.stdout
    assert done.stderr.count("READY, UP-TO-DATE, AVAILABLE: the status at") == 1, done.stderr
    assert "status" not in json.loads(sktrace("get", "deploy", "web", "-n", NS, "--cache", str(bare), "--at", f"@{second}", "-o", "json").stdout)
