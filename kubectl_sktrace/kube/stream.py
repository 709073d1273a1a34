"""Reading what the API server sends: whole JSON responses and the lines of a watch stream.

A watch stream is read in the caller's thread in large blocks: once urllib3 has sent the request and read the
headers, the body is read straight from the connection's socket file (``read1``: one ``recv`` of up to
``READ_SIZE`` bytes, whatever arrived), its chunked framing decoded by ``chunked.ChunkedLines``, and the
complete lines of each read parsed with one ``loads`` per line (orjson when present, about twice json's speed
on pod-sized documents; the krew archive ships pure-Python dependencies only). A real API server sends every
event as its own chunk (docs/architecture.md, measured facts): decoding the framing in ``http.client`` cost
several Python-level reads per event, more than the parse.

A connection silent for the read timeout is declared dead by the socket itself. ``stop`` is noticed without
polling: a ``Watchdog`` thread per stop event blocks on that event and, once it is set, shuts the read side
of every socket registered with it down, which wakes their blocked reads at once.
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
from kubectl_sktrace.kube.chunked import ChunkedLines, FramingError
from kubectl_sktrace.kube.errors import root_reason, transport_error

loads: Callable[[bytes], Any]
try:
    from orjson import loads
except ImportError:
    loads = json.loads

READ_SIZE = 1 << 16
COALESCE_MIN = 0.02
COALESCE_MAX = 0.1
"""Seconds a watch waits before its next read after a read that had to wait for data (``coalesce_pause`` picks
within these bounds). A real API server sends each event as its own chunk, flushed at once: reading each as it
comes costs a thread wakeup and the whole event path run with cold caches, per event, which is most of an
event's cost at a few hundred a second. Waiting lets the events arrive in batches, read back to back (one wakeup
per pause, not one per event). The longest pause keeps an event's way to the cache inside the commit bound
(this pause, then at most ``writer.COMMIT_INTERVAL`` until its batch commits: well under half a second) and a
stop well inside a second. A backlog is read without pauses (its reads never wait), and a silent stream is not
woken by them: the next read blocks as before."""
BATCH_BYTES = 128 * 1024
"""Bytes a pause lets a stream queue at its recent rate: what a TCP receive buffer holds by default (Linux,
macOS), so that a server's writes do not wait for the reader (a real API server closes a watch that stays
unresponsive). A busy stream is paused less (down to ``COALESCE_MIN``), a slower one up to ``COALESCE_MAX``."""
WAITED = 0.001
"""A read that took longer than this waited for data: the stream is paced, not backlogged."""
ERROR_BODY_LIMIT = 64 << 10
"""Bytes of an error answer's body read at most: a Status, whose message is the error's, is far shorter; the rest of a
longer body is never read (an 800 MB body was read whole, and held, before its first characters made the error)."""
GUARD_LINGER = 60.0
"""Seconds a watchdog thread waits on a stop event no stream uses any more before it ends."""


class Watchdog:
    """Interrupts the blocked reads of streams whose ``stop`` is set, without polling.

    A watch read can block until the next event or bookmark (a minute or more); shutting the socket's read
    side down wakes it at once. One thread per distinct stop event blocks on it (the recorder shares one stop
    among its kinds: one thread); it wakes only when the stop is set, or every ``GUARD_LINGER`` seconds to end
    itself once no stream uses that stop any more.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: dict[threading.Event, dict[int, Any]] = {}

    def watch(self, resp: Any, stop: threading.Event) -> None:
        with self._lock:
            streams = self._streams.get(stop)
            if streams is None:
                streams = self._streams[stop] = {}
                threading.Thread(target=self._guard, args=(stop,), name="sktrace-watch-stopper", daemon=True).start()
            streams[id(resp)] = resp

    def forget(self, resp: Any, stop: threading.Event) -> None:
        with self._lock:
            self._streams.get(stop, {}).pop(id(resp), None)

    def _guard(self, stop: threading.Event) -> None:
        while not stop.wait(GUARD_LINGER):
            with self._lock:
                if not self._streams.get(stop):
                    self._streams.pop(stop, None)
                    return
        with self._lock:
            stopped = list(self._streams.pop(stop, {}).values())
        for resp in stopped:
            _interrupt(resp)


def events(resp: Any, *, stop: threading.Event | None, watchdog: Watchdog, host: str,
           context: str) -> Iterator[dict[str, Any]]:
    """The events of an open watch response, until the server ends the stream or ``stop`` is set.

    Reading here rather than on a helper thread avoids one thread hand-off per read. A broken or silent
    connection raises the error ``transport_error`` maps it to; a body that is not chunked transfer coding
    is a TransientError (retried like a broken stream).
    """
    read, then, lines = _body(resp)
    stopped: Callable[[], bool] = stop.is_set if stop is not None else _never
    if stop is not None:
        watchdog.watch(resp, stop)
    clean = False
    try:
        since, received, pause = time.monotonic(), 0, COALESCE_MIN  # the bytes received since the last pause began
        while not stopped():
            started = time.monotonic()
            data = _read(read, stopped=stopped, host=host, context=context)
            now = time.monotonic()
            waited, read, received = now - started, then, received + len(data)
            if not data and stopped():
                return
            try:
                batch = lines.feed(data) if data else []
                ended = lines.done or not data
                last = lines.finish() if ended else []
            except FramingError as exc:
                if not data:  # the connection closed before the last chunk
                    raise transport_error(http.client.IncompleteRead(b""), host=host, context=context) from exc
                raise TransientError(f"malformed watch stream from {host} ({exc})") from exc
            for line in batch:
                yield json_object(line, host, what="watch event")
            if batch and waited > WAITED:
                pause = coalesce_pause(received=received, seconds=now - since, waited=waited, previous=pause)
                time.sleep(pause)
                since, received = now, 0
            if ended:
                clean = True
                for line in last:
                    yield json_object(line, host, what="watch event")
                return
    finally:
        if stop is not None:
            watchdog.forget(resp, stop)
        if clean:
            _release(resp)
        else:
            resp.close()


def coalesce_pause(*, received: int, seconds: float, waited: float, previous: float) -> float:
    """The pause before the next read of a stream that sent ``received`` bytes over the last ``seconds``, whose last
    read waited ``waited`` seconds for them, after a pause of ``previous``: as long as that rate takes to send
    ``BATCH_BYTES``, within ``COALESCE_MIN`` and ``COALESCE_MAX``, and at most twice the previous pause (one cycle's
    rate is noisy: a server that stalled for a moment must not buy a busy stream a long pause). A stream that was
    quiet longer than the longest pause gets the shortest: what ended the quiet may be the start of a burst."""
    if received <= 0 or waited > COALESCE_MAX:
        return COALESCE_MIN
    return min(COALESCE_MAX, 2 * previous, max(COALESCE_MIN, BATCH_BYTES * seconds / received))


def _never() -> bool:
    return False


def _read(read: Callable[[int], bytes], *, stopped: Callable[[], bool], host: str, context: str) -> bytes:
    """The next block of the body (b"" at its end or when a read fails because ``stop`` interrupted it)."""
    try:
        return read(READ_SIZE)
    except (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError, ValueError) as exc:
        if stopped():
            return b""
        raise transport_error(exc, host=host, context=context) from exc


def _body(resp: Any) -> tuple[Callable[[int], bytes], Callable[[int], bytes], ChunkedLines]:
    """How to read the first block of the body and every block after it, and the decoder of what they hold.

    A chunked body (every watch of a real server) is read from the connection under ``http.client``'s response,
    which has read nothing of the body yet (``preload_content=False``): first from its socket file (which may
    hold the start of the body, read with the headers: ``read1`` returns that, or reads the socket once), then
    from the socket itself, skipping urllib3's, http.client's and the file's per-read layers. Anything else (a
    ``Content-Length`` body, a content encoding, a client without these attributes) is read through the
    response's own ``read1``, which removes the framing."""
    raw = getattr(resp, "_fp", None)
    fp: Any = getattr(raw, "fp", None)
    sock: Any = getattr(getattr(resp, "connection", None), "sock", None)
    if getattr(raw, "chunked", False) and getattr(raw, "chunk_left", 0) is None and hasattr(fp, "read1") \
            and not resp.headers.get("Content-Encoding") and hasattr(sock, "recv"):
        return fp.read1, sock.recv, ChunkedLines()
    read1 = getattr(resp, "read1", None)
    if read1 is None:
        parts = resp.stream(READ_SIZE)
        read1 = lambda size: next(parts, b"")  # noqa: E731 - an old urllib3 without read1
    return read1, read1, ChunkedLines(chunked=False)


def _release(resp: Any) -> None:
    """The body was read to its end: mark http.client's response finished (it never saw the body go by) and
    give the connection back to the pool for the next request."""
    raw = getattr(resp, "_fp", None)
    if raw is not None and not raw.isclosed():
        raw.close()  # closes the socket file only; the connection stays open
    resp.release_conn()


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
    """The start of an error response's body, ``ERROR_BODY_LIMIT`` bytes at most, and the connection back to the pool:
    reused when the body ended there, closed when some of it was left unread (a server may send any amount)."""
    body, whole = b"", False
    try:
        body = bytes(resp.read(ERROR_BODY_LIMIT))
        whole = len(body) < ERROR_BODY_LIMIT
    except urllib3.exceptions.HTTPError:
        pass
    finally:
        if not whole:
            resp.close()
        resp.release_conn()
    return body


def json_object(data: bytes, host: str, *, what: str) -> dict[str, Any]:
    """One JSON object from the server; anything else is a TransientError (retried like a broken stream)."""
    try:
        value = loads(data)
    except ValueError as exc:
        raise TransientError(f"malformed {what} from {host} ({exc})") from exc
    except RecursionError:  # json's parser (orjson says it as a ValueError)
        raise TransientError(f"malformed {what} from {host} (JSON nested too deeply)") from None
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


def _interrupt(resp: Any) -> None:
    """Wake the reader thread blocked in a read: shut the socket's read side down."""
    try:
        resp.shutdown()
        return
    except (AttributeError, ValueError, RuntimeError, OSError):
        pass
    sock: Any = getattr(getattr(resp, "connection", None), "sock", None)
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RD)
        except OSError:
            pass
