"""How the emulator frames watch streams, read off the wire: a raw HTTP/1.1 client on a socket parses the chunked
encoding itself, so each chunk's boundaries are the server's own (http.client would join them)."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
from typing import BinaryIO, Iterator

import pytest

from sktrace_emulator import Emulator

pytestmark = pytest.mark.timeout(30)

TOKEN = "framing-token"


def make_pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}


@pytest.fixture
def emu(request: pytest.FixtureRequest) -> Iterator[Emulator]:
    """A plain-http emulator; ``@pytest.mark.parametrize("emu", [...], indirect=True)`` passes its options."""
    options = getattr(request, "param", {})
    server = Emulator(token=TOKEN, tls=options.get("tls", False), bookmark_interval=options.get("bookmark_interval", 60.0),
                      framing=options.get("framing", "per-event"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


class RawStream:
    """One GET on its own connection; ``chunks()`` yields each HTTP chunk's payload as it was framed."""

    def __init__(self, emu: Emulator, path: str) -> None:
        sock = socket.create_connection(("127.0.0.1", emu.port), timeout=10)
        if emu.tls:
            sock = ssl.create_default_context(cadata=emu.ca_pem.decode()).wrap_socket(sock, server_hostname="127.0.0.1")
        self.sock = sock
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode())
        self.rfile: BinaryIO = sock.makefile("rb")
        status = self.rfile.readline()
        assert status.startswith(b"HTTP/1.1 200"), status
        headers = {}
        while (line := self.rfile.readline()) not in (b"\r\n", b""):
            key, _, value = line.decode().partition(":")
            headers[key.strip().lower()] = value.strip()
        assert headers["transfer-encoding"] == "chunked"

    def chunks(self, count: int) -> list[bytes]:
        """The next ``count`` chunks; the terminating chunk reads as b""."""
        result = []
        for _ in range(count):
            size = int(self.rfile.readline().split(b";")[0], 16)
            data = self.rfile.read(size)
            assert self.rfile.read(2) == b"\r\n"
            result.append(data)
            if size == 0:
                break
        return result

    def close(self) -> None:
        self.rfile.close()
        self.sock.close()


def one_event_each(chunks: list[bytes]) -> list[dict]:
    """The event of each chunk, after checking that the chunk holds exactly one JSON line."""
    events = []
    for chunk in chunks:
        assert chunk.endswith(b"\n") and chunk.count(b"\n") == 1, chunk[:200]
        events.append(json.loads(chunk))
    return events


def lines_per_chunk(chunks: list[bytes]) -> list[int]:
    return [chunk.count(b"\n") for chunk in chunks]


def test_a_burst_replayed_from_history_is_one_chunk_per_event(emu: Emulator) -> None:
    start = emu.resource_version
    for i in range(300):
        emu.create(make_pod(f"p{i:03}"))
    for i in range(0, 300, 3):
        emu.patch("v1", "Pod", "default", f"p{i:03}", {"metadata": {"labels": {"touched": "yes"}}})
    stream = RawStream(emu, f"/api/v1/pods?watch=1&resourceVersion={start}&timeoutSeconds=2")
    try:
        events = one_event_each(stream.chunks(400))
        assert [e["type"] for e in events] == ["ADDED"] * 300 + ["MODIFIED"] * 100
        assert [e["object"]["metadata"]["name"] for e in events[:3]] == ["p000", "p001", "p002"]
        assert stream.chunks(1) == [b""]
    finally:
        stream.close()


def test_a_live_burst_is_one_chunk_per_event(emu: Emulator) -> None:
    stream = RawStream(emu, f"/api/v1/pods?watch=1&resourceVersion={emu.resource_version}")
    try:
        for i in range(500):
            emu.create(make_pod(f"live{i:03}"))
        events = one_event_each(stream.chunks(500))
        assert [e["object"]["metadata"]["name"] for e in events] == [f"live{i:03}" for i in range(500)]
    finally:
        stream.close()


@pytest.mark.parametrize("emu", [{"tls": True}], indirect=True, ids=["https"])
def test_synthetic_added_events_are_one_chunk_each_over_tls(emu: Emulator) -> None:
    for i in range(250):
        emu.create(make_pod(f"p{i:03}"))
    stream = RawStream(emu, "/api/v1/namespaces/default/pods?watch=1")
    try:
        events = one_event_each(stream.chunks(250))
        assert {e["type"] for e in events} == {"ADDED"} and len({e["object"]["metadata"]["name"] for e in events}) == 250
    finally:
        stream.close()


@pytest.mark.parametrize("emu", [{"bookmark_interval": 0.1}], indirect=True, ids=["bookmarks"])
def test_bookmarks_and_errors_are_one_chunk_each(emu: Emulator) -> None:
    stream = RawStream(emu, f"/api/v1/pods?watch=1&resourceVersion={emu.resource_version}&allowWatchBookmarks=true&fieldSelector=metadata.name%3Dq")
    try:
        emu.create(make_pod("o"))  # the kind's version moves; the change is not this watch's
        bookmark, = one_event_each(stream.chunks(1))
        assert bookmark["type"] == "BOOKMARK"
    finally:
        stream.close()
    old = emu.resource_version
    emu.create(make_pod("p"))
    emu.compact()
    stream = RawStream(emu, f"/api/v1/pods?watch=1&resourceVersion={old}")
    try:
        chunks = stream.chunks(2)
        error, = one_event_each(chunks[:1])
        assert error["type"] == "ERROR" and error["object"]["code"] == 410
        assert chunks[1:] == [b""]
    finally:
        stream.close()


@pytest.mark.parametrize("emu", [{"framing": "batched"}], indirect=True, ids=["batched"])
def test_the_batched_framing_still_sends_a_burst_in_few_chunks(emu: Emulator) -> None:
    start = emu.resource_version
    for i in range(2500):
        emu.create(make_pod(f"p{i:04}"))
    stream = RawStream(emu, "/api/v1/pods?watch=1&timeoutSeconds=1")
    try:
        assert lines_per_chunk(stream.chunks(4)) == [1000, 1000, 500, 0]
    finally:
        stream.close()
    stream = RawStream(emu, f"/api/v1/pods?watch=1&resourceVersion={start}&timeoutSeconds=1")
    try:
        assert lines_per_chunk(stream.chunks(2)) == [2500, 0]
    finally:
        stream.close()


def test_an_unknown_framing_is_refused() -> None:
    with pytest.raises(ValueError, match="framing must be one of per-event, batched, not 'lines'"):
        Emulator(framing="lines")


def test_serve_offers_both_framings() -> None:
    result = subprocess.run([sys.executable, "-m", "sktrace_emulator", "serve", "--help"], capture_output=True, text=True, check=True)
    assert "--framing {per-event,batched}" in result.stdout
