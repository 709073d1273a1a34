"""What a list page costs: the emulator waits before a page's first byte in proportion to the page's bytes,
as a real API server spends that time encoding it (``LIST_SECONDS_PER_MB``, ``Emulator(list_seconds_per_mb=...)``)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from typing import Iterator

import pytest

from sktrace_emulator import Emulator
from sktrace_emulator.handler import LIST_SECONDS_PER_MB, page_delay

pytestmark = pytest.mark.timeout(30)

TOKEN = "cost-token"
SECONDS_PER_MB = 2.0  # far above the default, so that a page of ~100 KB waits a time a test can see


@pytest.mark.parametrize(
    ("size", "seconds_per_mb", "expected"),
    [
        (3_500_000, LIST_SECONDS_PER_MB, 0.0805),  # a page of 500 pods of 7 KB: 80 ms, as on a real server
        (35_000, LIST_SECONDS_PER_MB, 0.000805),  # a page 100 times smaller waits 100 times less
        (1_000_000, 1.0, 1.0),
        (0, 1.0, 0.0),
        (1_000_000, 0.0, 0.0),  # the model off: pages cost nothing, as before
        (1_000_000, -1.0, 0.0),
    ],
    ids=["500-pods", "5-pods", "one-mb", "empty", "off", "negative"],
)
def test_page_delay_grows_with_the_page(size: int, seconds_per_mb: float, expected: float) -> None:
    assert page_delay(size, seconds_per_mb) == pytest.approx(expected)


def test_the_default_is_the_real_servers_rate() -> None:
    assert LIST_SECONDS_PER_MB == 0.023
    assert Emulator(tls=False).list_seconds_per_mb == LIST_SECONDS_PER_MB
    result = subprocess.run([sys.executable, "-m", "sktrace_emulator", "serve", "--help"], capture_output=True, text=True, check=True)
    assert "--list-seconds-per-mb SECONDS" in result.stdout


@pytest.fixture
def emu() -> Iterator[Emulator]:
    server = Emulator(token=TOKEN, tls=False, list_seconds_per_mb=SECONDS_PER_MB)
    for i in range(40):
        server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm{i:02}", "namespace": "default"},
                       "data": {"blob": "x" * 2_000}})
    server.start()
    try:
        yield server
    finally:
        server.stop()


def timed_get(emu: Emulator, path: str, *, accept: str = "application/json") -> tuple[float, bytes]:
    """Seconds from the request to the response's first byte, and the body (Content-Length framed)."""
    with socket.create_connection(("127.0.0.1", emu.port), timeout=10) as sock:
        rfile = sock.makefile("rb")
        started = time.monotonic()
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\nAccept: {accept}\r\n\r\n".encode())
        status = rfile.readline()
        first_byte = time.monotonic() - started
        assert status.startswith(b"HTTP/1.1 200"), status
        length = 0
        while (line := rfile.readline()) != b"\r\n":
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return first_byte, rfile.read(length)


def test_each_page_waits_in_proportion_to_its_bytes(emu: Emulator) -> None:
    waited, body = timed_get(emu, "/api/v1/configmaps?limit=30")
    page = json.loads(body)
    assert len(page["items"]) == 30 and len(body) > 60_000
    assert waited >= page_delay(len(body), SECONDS_PER_MB)
    waited, body = timed_get(emu, f"/api/v1/configmaps?limit=30&continue={page['metadata']['continue']}")
    assert len(json.loads(body)["items"]) == 10 and waited >= page_delay(len(body), SECONDS_PER_MB)


def test_table_pages_pay_for_their_own_bytes(emu: Emulator) -> None:
    waited, body = timed_get(emu, "/api/v1/configmaps", accept="application/json;as=Table;v=v1;g=meta.k8s.io")
    assert json.loads(body)["kind"] == "Table" and waited >= page_delay(len(body), SECONDS_PER_MB)
