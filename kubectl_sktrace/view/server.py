"""The local web server of ``kubectl sktrace view``: who may ask, what they may ask, and how it stops.

What it guarantees:

- **Only the person who started it reads the cache.** A random token (``secrets.token_urlsafe``, 256 bits) is in the
  address it prints; the first request carries it and gets it back as a cookie (``HttpOnly``, ``SameSite=Strict``,
  named for the port, since cookies do not tell ports apart), then a redirect to the same address without it (out of
  the history and the screen). Every request after must carry the cookie; anything else is refused with 403, the
  page included. Other local users (who can reach 127.0.0.1) and other web pages (which cannot read our cookie or
  our answers: no CORS header is ever sent) get nothing.
- **DNS rebinding is refused**: the ``Host`` header must name ``localhost`` or an IP address (any port: SSH and
  ``kubectl port-forward`` put their own); a page served from a name that an attacker rebinds to 127.0.0.1 sends
  its name, and is refused with 421.
- **Nothing changes anything.** Only GET (and HEAD) are served, other methods get 405; the cache is opened read-only
  for each request (``store.open_cache_readonly``: never migrated or created, a snapshot while a recorder writes).
- **The page runs only our own files**: a strict Content-Security-Policy (``'self'`` only, no inline script), no
  frames, no referrer, nothing cached by the browser.
- It listens on 127.0.0.1 unless told otherwise, and serves until ``stop`` (Ctrl-C or SIGTERM in the CLI).
"""

from __future__ import annotations

import hmac
import http.cookies
import ipaddress
import json
import secrets
import shutil
import socket
import threading
import urllib.parse
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import IO, Any, Callable, Mapping

from kubectl_sktrace.errors import SktraceError

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


class _IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


class ViewServer:
    """The server over an ``api`` of endpoints (path -> answer); ``address`` and ``port`` as bound (port 0: any free one)."""

    def __init__(self, *, api: Mapping[str, Answer], address: str = "127.0.0.1", port: int = 0, token: str | None = None) -> None:
        self.token = token or secrets.token_urlsafe(32)
        self.api = dict(api)
        self.static = static_files()
        handler = _handler(self)
        server_class = _IPv6Server if ":" in address else ThreadingHTTPServer
        try:
            self.httpd = server_class((address, port), handler)
        except OSError as exc:
            raise SktraceError(f"cannot listen on {address}:{port} ({exc.strerror or exc}); pass another --port, or 0 for any free one") from None
        self.httpd.daemon_threads = True
        self.address, self.port = str(self.httpd.server_address[0]), int(self.httpd.server_address[1])
        self.cookie = f"sktrace-view-{self.port}"

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.address in ("0.0.0.0", "") else f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}/?token={self.token}"

    def serve(self) -> None:
        """Serve until ``stop`` (from another thread or a signal handler)."""
        self.httpd.serve_forever(poll_interval=0.2)

    def stop(self) -> None:
        threading.Thread(target=self.httpd.shutdown, daemon=True).start()

    def close(self) -> None:
        self.httpd.server_close()

    def authorized(self, cookie_header: str | None) -> bool:
        cookies = http.cookies.SimpleCookie()
        try:
            cookies.load(cookie_header or "")
        except http.cookies.CookieError:
            return False
        morsel = cookies.get(self.cookie)
        return morsel is not None and hmac.compare_digest(morsel.value.encode(), self.token.encode())

    def token_matches(self, value: str | None) -> bool:
        return value is not None and hmac.compare_digest(value.encode(), self.token.encode())


def _handler(server: ViewServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "kubectl-sktrace-view"
        sys_version = ""

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the terminal shows the address and the stop, not every request

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
    params = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
    if url.path == "/" and "token" in params:
        if not server.token_matches(params["token"]):
            _reply(handler, HTTPStatus.FORBIDDEN, b"refused: this token is not the one kubectl sktrace view printed\n", text, head=head)
            return
        cookie = f"{server.cookie}={server.token}; Path=/; HttpOnly; SameSite=Strict"
        _reply(handler, HTTPStatus.SEE_OTHER, b"", text, head=head, extra={"Location": "/", "Set-Cookie": cookie})
        return
    if not server.authorized(handler.headers.get("Cookie")):
        _reply(handler, HTTPStatus.FORBIDDEN, b"refused: open the address kubectl sktrace view printed (it carries the token)\n", text,
               head=head)
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
