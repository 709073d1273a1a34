"""The local web server of ``kubectl sktrace view``: who may ask, what they may ask, and how it stops.

What it guarantees:

- **Only the person who started it reads the cache.** The history is behind a session token (``secrets.token_urlsafe``,
  256 bits) that the page holds in its tab's ``sessionStorage`` and sends in the ``X-Sktrace-Token`` header of every
  API request. Browsers keep ``sessionStorage`` per origin (scheme, host *and port*) and send a custom header only
  from scripts of our own origin (another origin would need a CORS preflight, refused): unlike a cookie, which a
  browser sends to every port of 127.0.0.1, the token reaches no other local server. The page's own files are
  public (they hold no data); every ``/api/`` request without the token gets 403.
- **No lasting secret on a command line.** The address printed carries the token in its fragment (``/#token=…``,
  never sent to any server), for the person at the terminal; the browser that ``view`` starts gets a one-time code
  instead (``/#code=…``, in ``/proc/PID/cmdline`` for every local user to read): the page trades it for the token
  at its first request, and it is useless after that, or after ``CODE_SECONDS``. A download (a navigation, which
  cannot carry a header) is authorized by a one-time code the page asks for just before.
- **DNS rebinding is refused**: the ``Host`` header must name ``localhost`` or an IP address (any port: SSH and
  ``kubectl port-forward`` put their own); a page served from a name that an attacker rebinds to 127.0.0.1 sends
  its name, and is refused with 421.
- **Nothing changes anything.** Only GET (and HEAD) are served, other methods get 405; a request with a body is
  refused and its connection closed (the body is never read as a next request); the cache is opened read-only
  for each request (``store.open_cache_readonly``: never migrated or created, a snapshot while a recorder writes).
- **Bounded work per client, and no client locks the others out**: at most ``MAX_CONNECTIONS`` connections at once.
  Every local client comes from 127.0.0.1, so no cap per address can tell an attacker from the page: when all are
  taken, a new connection closes the one that has waited longest for a request's line and headers (one that has
  sent no whole request, or sits idle between two), and is itself refused only when every one is answering a
  request. A new connection's request line and headers must be in within ``REQUEST_HEAD_SECONDS`` of its
  accept, a later request's within as long from its first byte (a client trickling them could hold a slot for
  good); an idle one is closed after ``IDLE_SECONDS``; headers over ``MAX_HEADER_BYTES`` are refused with 431
  before anything reads them; a client that goes away costs one line on stderr, never a traceback.
- **The page runs only our own files**: a strict Content-Security-Policy (``'self'`` only, no inline script), no
  frames, no referrer, nothing cached by the browser.
- It listens on 127.0.0.1 unless told otherwise, and serves until ``stop`` (Ctrl-C or SIGTERM in the CLI).
"""

from __future__ import annotations

import errno
import hmac
import io
import ipaddress
import json
import secrets
import shutil
import socket
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import IO, Any, Callable, Mapping, cast

from kubectl_sktrace.errors import SktraceError
from kubectl_sktrace.terminal import escape

STATIC_TYPES = {".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                ".svg": "image/svg+xml"}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    "Cross-Origin-Resource-Policy": "same-origin",
}

TOKEN_HEADER = "X-Sktrace-Token"
CODE_SECONDS = 120
"""How long a one-time code waits for its use: a browser's cold start, with room."""
MAX_CONNECTIONS = 64
IDLE_SECONDS = 30
REQUEST_HEAD_SECONDS = 15
"""Seconds a request's line and headers may take from their first byte: a browser sends them at once, and a slow link
a few seconds; past this the connection is closed."""
MAX_HEADER_BYTES = 16 << 10
MAX_HEADERS = 64
MAX_PARAMS = 100

Answer = Callable[[Mapping[str, str]], Any]
"""An API endpoint: the query's parameters -> JSON-ready data (SktraceError: 400 with its one line)."""


@dataclass(frozen=True)
class Download:
    """An answer that is a file: its name, type, and its bytes (``data``) or a stream of ``size`` bytes to copy."""

    name: str
    content_type: str
    data: bytes = b""
    stream: IO[bytes] | None = None
    size: int = 0


def static_files() -> dict[str, bytes]:
    """The page's files (package data), by name: the only files ever served."""
    folder = resources.files("kubectl_sktrace.view").joinpath("static")
    return {entry.name: entry.read_bytes() for entry in folder.iterdir() if entry.name.rsplit(".", 1)[-1] in ("html", "css", "js", "svg")}


def host_allowed(host: str | None) -> bool:
    """Whether a ``Host`` header names this machine by address or as ``localhost`` (not by a name DNS could rebind)."""
    if not host:
        return False
    name = host.rsplit(":", 1)[0] if not host.endswith("]") and host.count(":") == 1 else host
    if name.startswith("[") and "]" in name:
        name = name[1:name.index("]")]
    if name.lower() == "localhost":
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class _BoundedServer(ThreadingHTTPServer):
    """A thread per connection, ``MAX_CONNECTIONS`` at most, a longer listen queue, and one line on stderr for a
    connection that failed (a client gone, a reset), never a traceback. When every slot is taken, the connection that
    has waited longest for a request is closed to make room (``waiting``, oldest first); with none waiting, the new
    one is closed unanswered."""

    request_queue_size = 128
    daemon_threads = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.lock = threading.Lock()
        self.open: set[socket.socket] = set()
        self.waiting: dict[socket.socket, None] = {}  # the connections awaiting a request, the longest waiting first
        super().__init__(*args, **kwargs)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.lock:
            if len(self.open) >= MAX_CONNECTIONS and not self._make_room():
                self.shutdown_request(request)
                return
            self.open.add(request)
            self.waiting[request] = None
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._forget(request)
            raise

    def _make_room(self) -> bool:
        """Close the connection that has waited longest for a request (under ``lock``): its thread reads the end of
        it and finishes. False when every connection is answering one."""
        oldest = next(iter(self.waiting), None)
        if oldest is None:
            return False
        del self.waiting[oldest]
        self.open.discard(oldest)
        try:
            oldest.shutdown(socket.SHUT_RDWR)  # not closed here: its own thread still holds the descriptor
        except OSError:
            pass
        return True

    def awaiting(self, request: socket.socket, waits: bool) -> None:
        """A connection starts waiting for its next request (the last in line to be closed), or has one to answer."""
        with self.lock:
            self.waiting.pop(request, None)
            if waits and request in self.open:
                self.waiting[request] = None

    def _forget(self, request: socket.socket) -> None:
        with self.lock:
            self.open.discard(request)
            self.waiting.pop(request, None)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._forget(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        failure = sys.exc_info()[1]
        _log(f"a request from {client_address[0]} failed: {type(failure).__name__}: {failure}")


class _IPv6Server(_BoundedServer):
    address_family = socket.AF_INET6


def _log(line: str) -> None:
    try:
        sys.stderr.write(f"view: {escape(line)}\n")  # a request's path is any local user's
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class _HeadReader(io.RawIOBase):
    """A connection's reads, bounded while a request's line and headers come in: from the connection's accept (its
    first request) or from their first byte (a later one), a read waits only for what is left of
    ``REQUEST_HEAD_SECONDS``, and none starts past it (the TimeoutError closes the connection, as a silence of
    ``IDLE_SECONDS`` does)."""

    def __init__(self, raw: io.RawIOBase, sock: socket.socket) -> None:
        super().__init__()
        self._raw, self._sock = raw, sock
        self._waiting = False
        self._deadline: float | None = time.monotonic() + REQUEST_HEAD_SECONDS

    def readable(self) -> bool:
        return True

    def expect_head(self) -> None:
        """The next request is awaited as any silence is (the first one, from the accept); its first byte starts its
        deadline."""
        if self._deadline is None:
            self._waiting = True
            self._sock.settimeout(IDLE_SECONDS)

    def head_read(self) -> None:
        """The request's line and headers are in: the connection's reads and writes wait ``IDLE_SECONDS`` again."""
        self._waiting, self._deadline = False, None
        self._sock.settimeout(IDLE_SECONDS)

    def readinto(self, buffer: Any) -> int | None:
        if self._deadline is not None:
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request's line and headers took too long")
            self._sock.settimeout(min(IDLE_SECONDS, left))
        count = self._raw.readinto(buffer)
        if count and self._waiting:
            self._waiting, self._deadline = False, time.monotonic() + REQUEST_HEAD_SECONDS
        return count

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class ViewServer:
    """The server over an ``api`` of endpoints (path -> answer); ``address`` and ``port`` as bound (port 0: any free one)."""

    def __init__(self, *, api: Mapping[str, Answer], address: str = "127.0.0.1", port: int = 0, token: str | None = None) -> None:
        self.token = token or secrets.token_urlsafe(32)
        self.api = dict(api)
        self.static = static_files()
        self._codes: dict[str, float] = {}
        self._codes_lock = threading.Lock()
        handler = _handler(self)
        server_class = _IPv6Server if ":" in address else _BoundedServer
        try:
            self.httpd = server_class((address, port), handler)
        except OSError as exc:  # the port taken or not ours to take, or no such address on this machine
            fix = "pass another --port, or 0 for any free one" if exc.errno in (errno.EADDRINUSE, errno.EACCES) else \
                "pass an address of this machine to --address (127.0.0.1, the default; 0.0.0.0 for every one)"
            raise SktraceError(f"cannot listen on {address}:{port} ({exc.strerror or exc}); {fix}") from None
        self.address, self.port = str(self.httpd.server_address[0]), int(self.httpd.server_address[1])

    @property
    def origin(self) -> str:
        host = "127.0.0.1" if self.address in ("0.0.0.0", "") else f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}"

    @property
    def url(self) -> str:
        """The address to print: the token in the fragment, for the person at the terminal."""
        return f"{self.origin}/#token={self.token}"

    def browser_url(self) -> str:
        """An address for a browser's command line: a fresh one-time code, traded for the token by the page."""
        return f"{self.origin}/#code={self.new_code()}"

    def new_code(self) -> str:
        """A code that authorizes one request within ``CODE_SECONDS``."""
        code = secrets.token_urlsafe(32)
        now = time.monotonic()
        with self._codes_lock:
            self._codes = {c: t for c, t in self._codes.items() if t > now}
            self._codes[code] = now + CODE_SECONDS
        return code

    def redeem(self, code: str) -> bool:
        """Whether ``code`` is a live one-time code; it is spent either way."""
        with self._codes_lock:
            deadline = self._codes.pop(code, None)
        return deadline is not None and deadline > time.monotonic()

    def serve(self) -> None:
        """Serve until ``stop`` (from another thread or a signal handler)."""
        self.httpd.serve_forever(poll_interval=0.2)

    def stop(self) -> None:
        threading.Thread(target=self.httpd.shutdown, daemon=True).start()

    def close(self) -> None:
        self.httpd.server_close()

    def token_matches(self, value: str | None) -> bool:
        return value is not None and hmac.compare_digest(value.encode(errors="replace"), self.token.encode())


def _handler(server: ViewServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "kubectl-sktrace-view"
        sys_version = ""
        timeout = IDLE_SECONDS  # a connection silent this long (between requests, or within one) is closed

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the terminal shows the address and the stop, not every request

        def log_error(self, format: str, *args: Any) -> None:
            if format.startswith("Request timed out"):
                return  # an idle connection closed, as promised: no failure
            _log(f"a request from {self.client_address[0]} failed: {format % args}")

        def setup(self) -> None:
            super().setup()
            self.head = _HeadReader(cast(io.BufferedReader, self.rfile).detach(), self.connection)
            self.rfile = io.BufferedReader(self.head)

        def handle_one_request(self) -> None:
            self.head.expect_head()
            cast(_BoundedServer, self.server).awaiting(self.connection, True)
            super().handle_one_request()

        def parse_request(self) -> bool:
            try:
                parsed = super().parse_request()
            finally:
                self.head.head_read()
                cast(_BoundedServer, self.server).awaiting(self.connection, False)
            if not parsed:
                return False
            size = sum(len(name) + len(value) for name, value in self.headers.items())
            if size > MAX_HEADER_BYTES or len(self.headers) > MAX_HEADERS:
                self.close_connection = True
                _reply(self, HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, b"refused: the request's headers are too large\n",
                       "text/plain; charset=utf-8")
                return False
            if self.headers.get("Content-Length", "0").strip() not in ("", "0") or "Transfer-Encoding" in self.headers:
                self.close_connection = True  # the body is never read, so nothing after it on this connection is either
                _reply(self, HTTPStatus.BAD_REQUEST, b"refused: the view takes no request bodies\n", "text/plain; charset=utf-8")
                return False
            return True

        def do_GET(self) -> None:
            _serve(server, self, head=False)

        def do_HEAD(self) -> None:
            _serve(server, self, head=True)

        def _refuse_method(self) -> None:
            _reply(self, HTTPStatus.METHOD_NOT_ALLOWED, b"only GET: the view never changes anything\n", "text/plain; charset=utf-8",
                   extra={"Allow": "GET, HEAD"})

        do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = _refuse_method

    return Handler


def _reply(handler: BaseHTTPRequestHandler, status: HTTPStatus, body: bytes, content_type: str, *, head: bool = False,
           extra: Mapping[str, str] | None = None) -> None:
    handler.send_response(status)
    for name, value in {**SECURITY_HEADERS, "Content-Type": content_type, "Content-Length": str(len(body)), **(extra or {})}.items():
        handler.send_header(name, value)
    handler.end_headers()
    if not head:
        handler.wfile.write(body)


def _serve(server: ViewServer, handler: BaseHTTPRequestHandler, *, head: bool) -> None:
    text = "text/plain; charset=utf-8"
    if not host_allowed(handler.headers.get("Host")):
        _reply(handler, HTTPStatus.MISDIRECTED_REQUEST, b"refused: the Host header must be localhost or an IP address\n", text, head=head)
        return
    url = urllib.parse.urlsplit(handler.path)
    try:
        params = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True, max_num_fields=MAX_PARAMS).items()}
    except ValueError:
        _reply(handler, HTTPStatus.BAD_REQUEST, f"refused: more than {MAX_PARAMS} query parameters\n".encode(), text, head=head)
        return
    if url.path.startswith("/api/"):
        code = params.pop("code", None)  # spent here, whatever else the request holds
        if not (server.token_matches(handler.headers.get(TOKEN_HEADER)) or (code is not None and server.redeem(code))):
            _reply(handler, HTTPStatus.FORBIDDEN, b"refused: open the address kubectl sktrace view printed (it carries the token)\n", text,
                   head=head)
            return
        if url.path == "/api/session":
            _reply(handler, HTTPStatus.OK, json.dumps({"token": server.token}).encode(), "application/json", head=head)
            return
        if url.path == "/api/code":
            _reply(handler, HTTPStatus.OK, json.dumps({"code": server.new_code()}).encode(), "application/json", head=head)
            return
    _route(server, handler, url.path, params, head=head)


def _route(server: ViewServer, handler: BaseHTTPRequestHandler, path: str, params: dict[str, str], *, head: bool) -> None:
    name = "index.html" if path == "/" else path[len("/static/"):] if path.startswith("/static/") else None
    if name is not None:
        data = server.static.get(name)
        if data is None:
            _reply(handler, HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8", head=head)
            return
        _reply(handler, HTTPStatus.OK, data, STATIC_TYPES["." + name.rsplit(".", 1)[-1]], head=head)
        return
    answer = server.api.get(path)
    if answer is None:
        _reply(handler, HTTPStatus.NOT_FOUND, b'{"error": "no such endpoint"}', "application/json", head=head)
        return
    try:
        result = answer(params)
    except SktraceError as exc:
        _reply(handler, HTTPStatus.BAD_REQUEST, json.dumps({"error": str(exc)}).encode(), "application/json", head=head)
        return
    except Exception as exc:  # a bug: one line to the page, the server goes on
        message = f"unexpected {type(exc).__name__}: {exc} (please report it)"
        _reply(handler, HTTPStatus.INTERNAL_SERVER_ERROR, json.dumps({"error": message}).encode(), "application/json", head=head)
        return
    if isinstance(result, Download):
        _send_download(handler, result, head=head)
        return
    _reply(handler, HTTPStatus.OK, json.dumps(result, separators=(",", ":")).encode(), "application/json", head=head)


def _send_download(handler: BaseHTTPRequestHandler, download: Download, *, head: bool) -> None:
    quoted = urllib.parse.quote(download.name)
    disposition = {"Content-Disposition": f"attachment; filename=\"{download.name}\"; filename*=UTF-8''{quoted}"}
    if download.stream is None:
        _reply(handler, HTTPStatus.OK, download.data, download.content_type, head=head, extra=disposition)
        return
    try:
        handler.send_response(HTTPStatus.OK)
        for name, value in {**SECURITY_HEADERS, "Content-Type": download.content_type, "Content-Length": str(download.size),
                            **disposition}.items():
            handler.send_header(name, value)
        handler.end_headers()
        if not head:
            shutil.copyfileobj(download.stream, handler.wfile, 1 << 20)
    finally:
        download.stream.close()
