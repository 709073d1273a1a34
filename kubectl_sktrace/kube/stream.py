"""Reading what the API server sends: whole JSON responses and the lines of a watch stream.

A watch stream is read in the caller's thread, one chunk at a time as it arrives, split into lines and parsed
with one ``loads`` per line (orjson when present, about twice json's speed on pod-sized documents; the krew
archive ships pure-Python dependencies only). A ``Watchdog`` thread interrupts the blocked read of a stream
whose ``stop`` is set, so a silent stream notices ``stop`` within half a second; a connection silent for the
read timeout is declared dead by the socket itself.
"""

from __future__ import annotations

import gc
import http.client
import json
import socket
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import urllib3

from kubectl_sktrace.errors import TransientError
from kubectl_sktrace.kube.errors import root_reason, transport_error

loads: Callable[[bytes], Any]
try:
    from orjson import loads
except ImportError:
    loads = json.loads

STOP_POLL = 0.5
READ_SIZE = 1 << 18


class Watchdog:
    """One thread per client that interrupts the blocked reads of streams whose ``stop`` is set.

    A watch read can block until the next event or bookmark (a minute or more); shutting the socket's read
    side down wakes it at once. The thread runs only while streams are open and polls twice a second.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: dict[int, tuple[Any, threading.Event]] = {}
        self._thread: threading.Thread | None = None

    def watch(self, resp: Any, stop: threading.Event) -> None:
        with self._lock:
            self._streams[id(resp)] = (resp, stop)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="sktrace-watch-stopper", daemon=True)
                self._thread.start()

    def forget(self, resp: Any) -> None:
        with self._lock:
            self._streams.pop(id(resp), None)

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._streams:
                    self._thread = None
                    return
                stopped = [resp for resp, stop in self._streams.values() if stop.is_set()]
                for resp in stopped:
                    self._streams.pop(id(resp), None)
            for resp in stopped:
                _interrupt(resp)
            time.sleep(STOP_POLL / 2)


def events(resp: Any, *, stop: threading.Event | None, watchdog: Watchdog, host: str,
           context: str) -> Iterator[dict[str, Any]]:
    """The events of an open watch response, until the server ends the stream or ``stop`` is set.

    Reading here rather than on a helper thread avoids one thread hand-off per event (each event is its own
    HTTP chunk). A broken or silent connection raises the error ``transport_error`` maps it to.
    """
    chunks = _chunks(resp)
    stopped: Callable[[], bool] = stop.is_set if stop is not None else _never
    if stop is not None:
        watchdog.watch(resp, stop)
    buffer = b""
    clean = False
    try:
        while not stopped():
            data = _next_chunk(chunks, stopped=stopped, host=host, context=context)
            if data is None:
                if stopped():
                    return
                clean = True
                if buffer.strip():
                    yield json_object(buffer, host, what="watch event")
                return
            if b"\n" not in data:
                buffer += data
                continue
            lines = (buffer + data).split(b"\n")
            buffer = lines.pop()
            for line in lines:
                if line:
                    yield json_object(line, host, what="watch event")
    finally:
        if stop is not None:
            watchdog.forget(resp)
        if clean:
            resp.release_conn()
        else:
            resp.close()


def _never() -> bool:
    return False


def _next_chunk(chunks: Iterator[bytes], *, stopped: Callable[[], bool], host: str, context: str) -> bytes | None:
    """The next chunk, or None at the end of the stream or when a read fails because ``stop`` interrupted it."""
    try:
        return next(chunks, None)
    except (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError) as exc:
        if stopped():
            return None
        raise transport_error(exc, host=host, context=context) from exc


def read_json(resp: Any, host: str) -> dict[str, Any]:
    """A whole response body as one JSON object; a body that breaks off is a TransientError."""
    try:
        body = resp.read()
    except urllib3.exceptions.HTTPError as exc:
        resp.close()
        raise TransientError(f"response from {host} broke off ({root_reason(exc)})") from exc
    resp.release_conn()
    with _gc_paused():
        return json_object(body, host, what="response")


def drain(resp: Any) -> bytes:
    """The body of an error response, and the connection back to the pool."""
    try:
        return bytes(resp.read())
    except urllib3.exceptions.HTTPError:
        return b""
    finally:
        resp.release_conn()


def json_object(data: bytes, host: str, *, what: str) -> dict[str, Any]:
    """One JSON object from the server; anything else is a TransientError (retried like a broken stream)."""
    try:
        value = loads(data)
    except ValueError as exc:
        raise TransientError(f"malformed {what} from {host} ({exc})") from exc
    if not isinstance(value, dict):
        raise TransientError(f"malformed {what} from {host}: expected a JSON object")
    return value


_gc_lock = threading.Lock()
_gc_users = 0
_gc_was_enabled = False


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while parsing a big page: ``json.loads`` allocates millions of containers and
    would trigger collections that find nothing (3x slower: docs/architecture.md, measured facts). Reference-counted across threads."""
    global _gc_users, _gc_was_enabled
    with _gc_lock:
        if _gc_users == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_users += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_users -= 1
            if _gc_users == 0 and _gc_was_enabled:
                gc.enable()


def _chunks(resp: Any) -> Iterator[bytes]:
    """What arrives on the stream, as soon as it arrives.

    The body is not content-encoded (we send no Accept-Encoding), so the http.client response under
    urllib3's is read directly: urllib3's per-read bookkeeping cost as much as the reading itself, at
    10,000+ events a second. Its errors (``IncompleteRead``, socket timeouts and resets) are mapped by
    ``transport_error`` like urllib3's. Older urllib3 without that attribute falls back to ``read1``/``stream``.
    """
    raw = getattr(resp, "_fp", None)
    if raw is not None and hasattr(raw, "read1") and not resp.headers.get("Content-Encoding"):
        return iter(lambda: raw.read1(READ_SIZE) or b"", b"")
    read1 = getattr(resp, "read1", None)
    if read1 is not None:
        return iter(lambda: read1(READ_SIZE) or b"", b"")
    return iter(resp.stream(None))


def _interrupt(resp: Any) -> None:
    """Wake the reader thread blocked in a read: shut the socket's read side down."""
    try:
        resp.shutdown()
        return
    except (AttributeError, ValueError, RuntimeError, OSError):
        pass
    sock = getattr(getattr(resp, "connection", None), "sock", None)
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RD)
        except OSError:
            pass
