"""``serve --at T``: a read-only Kubernetes API server on 127.0.0.1 over the cache as it was at T.

TLS always, with a certificate made at the start for 127.0.0.1 whose key never leaves the process's memory
(``sktrace_apiserver.tls``), and one bearer token, 256 random bits, in the kubeconfig it prints or writes (0600) and
nowhere else: any local user can reach the port, none gets past the 401 without the file. At most ``MAX_REQUESTS``
requests are served at once (beyond, a 429 with Retry-After), at most ``MAX_OPEN`` connections are held open (beyond,
closed at once), and a failed connection is one line on stderr.

The state at T is read once at the start (``past.state.Past``), so that requests never touch the cache; with a replay
speed, a thread applies the changes after T as the history's clock reaches them (``replay``).
"""

from __future__ import annotations

import secrets
import sys
import threading
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from typing import Any, Callable

from kubectl_sktrace.apiserver.handler import Handler
from kubectl_sktrace.apiserver.replay import replay
from kubectl_sktrace.apiserver.state import Served
from kubectl_sktrace.errors import SktraceError, UsageError
from kubectl_sktrace.model import CacheUrl
from kubectl_sktrace.past.objects import Scope
from kubectl_sktrace.past.printing import document
from kubectl_sktrace.past.state import Past
from kubectl_sktrace.store import open_cache_readonly
from kubectl_sktrace.terminal import escape
from kubectl_sktrace.timeparse import format_time
from sktrace_apiserver import tls

MAX_REQUESTS = 64
MAX_OPEN = 256
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class Settings:
    """What ``serve`` was asked: the cache, the time, the replay speed (0: none) and the port (0: a free one)."""

    location: str | CacheUrl
    at: float
    replay_speed: float = 0.0
    port: int = 0


def load(settings: Settings) -> tuple[Served, int, list[str]]:
    """The state at T, read once through the history's one reading of it (``past``), in one snapshot of the cache; how
    many objects it holds; and a line for each kind whose state at T nobody observed (a gap: its last known version)."""
    with open_cache_readonly(settings.location) as cache:
        history = Past(cache)
        second = history.second(settings.at)
        state = Served(history.kinds(), at=settings.at)
        count = state.load((found.kind.gvk, document(found), found.pod, found.status)
                           for kind in state.kinds for found in history.objects_at(kind, Scope(), settings.at))
        unknown = [f"{kind.resource}: {known.how} at {format_time(settings.at)} ({known.gap}); its objects are their last known versions"
                   for kind in state.kinds if (known := history.knowledge(kind, second)) is not None and known.gap is not None]
    return state, count, unknown


class HistoryServer:
    """The server: its state, its token and certificate, its socket; started, then stopped."""

    def __init__(self, state: Served, *, at: float, port: int = 0) -> None:
        self.served = state
        self.token = secrets.token_urlsafe(32)
        self.refusal = f"read-only history at {format_time(at)}: this server answers get, list and watch only"
        try:
            self.cert, key = tls.self_signed("kubectl-sktrace-history")
        except tls.TlsUnavailable as exc:
            raise SktraceError(str(exc)) from None
        self._open = threading.BoundedSemaphore(MAX_OPEN)
        self._requests = threading.BoundedSemaphore(MAX_REQUESTS)
        handler = type("BoundHandler", (Handler,), {"history": self})
        try:
            self._httpd = _Server((LOOPBACK, port), handler, owner=self)
        except OSError as exc:
            raise UsageError(f"cannot listen on {LOOPBACK}:{port} ({exc.strerror or exc}); pass another --port, or 0 for a free one") from None
        self._httpd.socket = tls.server_context(self.cert, key).wrap_socket(self._httpd.socket, server_side=True, do_handshake_on_connect=False)
        self.port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.2}, name="history-http", daemon=True)

    def start(self) -> HistoryServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.served.stop()
        self._httpd.shutdown()
        self._httpd.server_close()

    def take_slot(self) -> bool:
        """One of the ``MAX_REQUESTS`` requests served at once (a watch holds its slot while it streams); False: none free."""
        return self._requests.acquire(blocking=False)

    def free_slot(self) -> None:
        self._requests.release()

    def admit(self) -> bool:
        """One of the ``MAX_OPEN`` connections held open; False: none free (the connection is closed at once)."""
        return self._open.acquire(blocking=False)

    def closed(self) -> None:
        self._open.release()

    def kubeconfig(self, *, context: str = "sktrace-history") -> str:
        """The kubeconfig of this server (YAML): its address, its certificate as the CA, the token."""
        import base64

        ca = base64.b64encode(self.cert).decode()
        return (f"apiVersion: v1\nkind: Config\nclusters:\n- name: {context}\n  cluster:\n    server: https://{LOOPBACK}:{self.port}\n"
                f"    certificate-authority-data: {ca}\ncontexts:\n- name: {context}\n  context:\n    cluster: {context}\n"
                f"    user: {context}\ncurrent-context: {context}\nusers:\n- name: {context}\n  user:\n    token: {self.token}\n")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: Any, *, owner: HistoryServer) -> None:
        self.owner = owner
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.owner.admit():  # too many connections held open: this one is closed at once
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.owner.closed()

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        host, port = client_address[:2] if isinstance(client_address, tuple) else (client_address, "")
        sys.stderr.write(escape(f"kubectl-sktrace serve: a connection from {host}:{port} failed: {type(error).__name__}: {error}") + "\n")


def write_kubeconfig(path: str, text: str) -> None:
    """The kubeconfig at ``path``, readable by its owner only (it holds the token), replaced whole."""
    import os

    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        raise UsageError(f"cannot write the kubeconfig to {path} ({exc.strerror or exc}); pass a --kubeconfig-out in a directory "
                         "you can write") from None


def run(settings: Settings, *, kubeconfig_out: str | None, say: Callable[..., None], warn: Callable[[str], None],
        stop: threading.Event) -> None:
    """Serve until ``stop`` is set: the state at T loaded, the server started, its kubeconfig given, the replay run."""
    state, count, unknown = load(settings)
    for line in unknown:
        warn(line)
    server = HistoryServer(state, at=settings.at, port=settings.port).start()
    try:
        kinds = len(state.kinds)
        told = (f"Serving the cluster as it was at {format_time(settings.at)} ({count} objects of {kinds} kinds), read-only, "
                f"on https://{LOOPBACK}:{server.port}" + (f", its changes since replayed at {settings.replay_speed:g}x"
                                                           if settings.replay_speed else "") + ", until Ctrl-C.")
        if kubeconfig_out:
            write_kubeconfig(kubeconfig_out, server.kubeconfig())
            served = [kind.resource for kind in state.kinds]
            example = "pods" if "pods" in served or not served else served[0]  # a kind it serves
            say(f"{told}\nIts kubeconfig: {kubeconfig_out}\nIn another terminal:\n  kubectl --kubeconfig {kubeconfig_out} get {example} -A")
        else:
            say(told, err=True)
            say(server.kubeconfig(), nl=False)
        if settings.replay_speed:
            threading.Thread(target=replay, args=(settings.location, state), kwargs={"at": settings.at, "speed": settings.replay_speed,
                             "stop": stop, "warn": warn}, name="replay", daemon=True).start()
        while not stop.wait(0.5):
            pass
    finally:
        stop.set()
        server.stop()
