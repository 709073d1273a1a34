"""health: what /healthz and /readyz answer for each state of the recorder, and the server that answers them."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from typing import Any

import pytest

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.record.health import (
    STALE_AFTER,
    HealthBoard,
    HealthSample,
    HealthServer,
    verdict,
)

NOW = 1000.0
LIVE = HealthSample(committed=NOW - 0.4, synced=True)


@pytest.mark.parametrize(("path", "sample", "status", "why"), [
    pytest.param("/healthz", LIVE, 200, "committing", id="live"),
    pytest.param("/healthz", HealthSample(committed=NOW - STALE_AFTER, synced=True), 503, "no commit for 30 s", id="stale"),
    pytest.param("/healthz", HealthSample(committed=NOW, synced=True, stopping=True), 503, "stopping", id="stopping"),
    pytest.param("/healthz", HealthSample(committed=NOW, synced=True, outages=("v1.Pod",)), 200, "committing",
                 id="an-outage-is-not-death"),
    pytest.param("/readyz", LIVE, 200, "recording", id="ready"),
    pytest.param("/readyz", HealthSample(committed=NOW, synced=False), 503, "initial sync in progress", id="syncing"),
    pytest.param("/readyz", HealthSample(committed=NOW, synced=True, outages=("apps/v1.Deployment", "v1.Pod")), 503,
                 "outage: apps/v1.Deployment, v1.Pod", id="outage"),
    pytest.param("/readyz", HealthSample(committed=NOW, synced=True, failed=("batch/v1.Job",)), 503,
                 "not recorded: batch/v1.Job", id="given-up"),
    pytest.param("/readyz", HealthSample(committed=NOW - 60, synced=True), 503, "not live", id="stale"),
])
def test_verdict(path: str, sample: HealthSample, status: int, why: str) -> None:
    got, body = verdict(path, sample, now=NOW)
    assert (got, body["status"]) == (status, why)
    assert body["heartbeatAgeSeconds"] == round(NOW - sample.committed, 1)


def test_an_unknown_path_is_404_naming_every_page() -> None:
    assert verdict("/health", LIVE, now=NOW) == (404, {"error": "not found; ask /healthz, /readyz or /metrics"})


def get(port: int, path: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_server_answers_what_the_board_holds_now() -> None:
    clock = [NOW]
    board = HealthBoard(clock=lambda: clock[0])
    server = HealthServer(0, board)
    try:
        assert get(server.port, "/healthz")[0] == 200  # starting: counted live from the board's creation
        assert get(server.port, "/readyz") == (503, {"status": "initial sync in progress", "live": True, "heartbeatAgeSeconds": 0.0,
                                                      "synced": False, "outages": [], "failed": []})
        board.post(HealthSample(committed=NOW + 1, synced=True))
        clock[0] = NOW + 2
        assert get(server.port, "/readyz?verbose") == (200, {"status": "recording", "live": True, "heartbeatAgeSeconds": 1.0,
                                                             "synced": True, "outages": [], "failed": []})
        clock[0] = NOW + 1 + STALE_AFTER
        assert get(server.port, "/healthz")[0] == 503
        board.post(HealthSample(committed=clock[0], synced=True))
        board.stopping()
        assert get(server.port, "/healthz")[1]["status"] == "stopping"
    finally:
        server.close()


def test_a_port_in_use_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UsageError) as info:
            HealthServer(port, HealthBoard())
    assert str(info.value) == f"--health-port {port}: cannot listen (Address already in use); pick a free port"
