"""The emulator's facade: one store served over HTTP(S) on 127.0.0.1 (``handler.Handler``, one thread per
connection through ``ThreadingHTTPServer``), with its kubeconfig, its TLS certificate and its fault knobs.

``Emulator`` is the facade tests and the demo use: it owns the store, the server thread and the fault
knobs. The knobs act on HTTP requests only; the direct state methods (``create``, ``delete``...) bypass
them, as a controller inside the control plane would.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import shutil
import socket
import ssl
import sys
import threading
from http.server import ThreadingHTTPServer
from typing import Any, Iterable

from sktrace_apiserver import tls
from sktrace_emulator import apf, audit
from sktrace_emulator.handler import LIST_SECONDS_PER_MB, Handler
from sktrace_emulator.records import ApiError, Failure, Obj, ResourceType
from sktrace_emulator.selectors import Filter
from sktrace_emulator.state import Store

_VIEW_VERBS = frozenset({"get", "list", "watch"})

# how watch events are framed: "per-event" (one chunk per event, as a real API server) or "batched" (a burst in
# one chunk: a reader's ceiling)
FRAMINGS = ("per-event", "batched")


class Emulator:
    """A local Kubernetes API server for tests, benchmarks and the demo. Never used against a real cluster."""

    def __init__(
        self,
        *,
        token: str = "emulator-token",
        port: int = 0,
        bookmark_interval: float = 60.0,
        history_limit: int = 200_000,
        continue_ttl: float = 300.0,
        seed: int | None = None,
        tls: bool | None = None,
        framing: str = "per-event",
        list_seconds_per_mb: float = LIST_SECONDS_PER_MB,
        client_ca: bytes | None = None,
    ) -> None:
        if framing not in FRAMINGS:
            raise ValueError(f"framing must be one of {', '.join(FRAMINGS)}, not {framing!r}")
        self.framing = framing
        self.list_seconds_per_mb = list_seconds_per_mb
        self.token = token
        self.unauthorized = 0  # requests answered 401 (a wrong or expired token)
        self.tls = shutil.which("openssl") is not None if tls is None else tls
        if client_ca is not None and not self.tls:
            raise ValueError("client certificates need TLS (tls=True and the openssl command)")
        self.client_ca = client_ca  # PEM: every connection must present a certificate this CA signed
        self.ca_pem = b""
        self.port = port
        self.bookmark_interval = bookmark_interval
        self.store = Store(history_limit=history_limit, continue_ttl=continue_ttl, seed=seed)
        self._httpd: ThreadingHTTPServer | None = None
        self._reserved: socket.socket | None = None  # the port while stopped (``_held``)
        self._thread: threading.Thread | None = None
        self._knob_lock = threading.Lock()
        self._failures: list[Failure] = []
        self._forced_410: dict[str | None, int] = {}
        self.delay = 0.0
        self.apf: apf.PriorityLevel | None = None  # API Priority and Fairness: off until ``throttle``
        self.drop_generation = 0
        self.user = "system:serviceaccount:default:sktrace"
        self._view_namespaces: frozenset[str] | None = None  # None: every request is allowed
        self._rules: tuple[str | None, list[Obj]] | None = None  # grant_rules: (the Role's namespace or None, its rules)
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.store.create(self.store.type_of("v1", "Namespace"), {"metadata": {"name": ns}})

    # lifecycle

    def start(self) -> Emulator:
        handler = type("BoundHandler", (Handler,), {"emulator": self})
        if self._reserved is not None:  # started again after a stop: on the port held since
            self._reserved.close()
            self._reserved = None
        self._httpd = _Server(("127.0.0.1", self.port), handler)
        self._httpd.daemon_threads = True
        if self.tls:
            context, self.ca_pem = _server_context(self.client_ca)
            # the handshake happens on the first read, in the connection's own thread
            self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True, do_handshake_on_connect=False)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1}, name="emulator-http", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self.drop_watches()
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
            self.drop_watches()  # as a stopped API server does, end the watches of connections accepted meanwhile
            self._reserved = _held(self.port)

    def serve_forever(self) -> None:
        """Block until the server thread ends (the standalone command)."""
        if self._thread is not None:
            while self._thread.is_alive():
                self._thread.join(0.5)

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def write_kubeconfig(self, path: str | os.PathLike[str], *, context: str = "emulator", namespace: str = "default",
                         client_certificate: tuple[bytes, bytes] | None = None) -> str:
        """Write a kubeconfig (JSON, which is YAML) with this server, its CA, its bearer token and one context
        whose namespace is ``namespace``; with ``client_certificate`` (``(certificate, key)`` PEM), the user is that
        certificate and its key (``client-certificate-data``, ``client-key-data``) instead of the token."""
        cluster: Obj = {"server": self.url}
        if self.tls:
            cluster["certificate-authority-data"] = base64.b64encode(self.ca_pem).decode()
        user: Obj = {"token": self.token} if client_certificate is None else {
            "client-certificate-data": base64.b64encode(client_certificate[0]).decode(),
            "client-key-data": base64.b64encode(client_certificate[1]).decode()}
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": context, "cluster": cluster}],
            "users": [{"name": context, "user": user}],
            "contexts": [{"name": context, "context": {"cluster": context, "user": context, "namespace": namespace}}],
            "current-context": context,
            "preferences": {},
        }
        fd = os.open(os.fspath(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(config, fh, indent=2)
        return os.fspath(path)

    def write_service_account(self, directory: str | os.PathLike[str], *, namespace: str = "default") -> dict[str, str]:
        """Lay out ``directory`` as a pod's service-account mount (``token``, ``ca.crt``, ``namespace``) for this
        server, and return the environment a pod would have: ``KUBERNETES_SERVICE_HOST``/``PORT``.
        ``rotate_token`` writes a new token as the kubelet does (a new file swapped in by a rename)."""
        os.makedirs(directory, exist_ok=True)
        for name, data in (("ca.crt", self.ca_pem), ("namespace", namespace.encode()), ("token", self.token.encode())):
            _replace_file(os.path.join(directory, name), data)
        return {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(self.port)}

    def rotate_token(self, directory: str | os.PathLike[str], token: str) -> None:
        """A new token for the service account of ``write_service_account``: written into ``directory`` the way the
        kubelet rotates a bound token, and from now on the only one this server accepts (the old one expired)."""
        _replace_file(os.path.join(directory, "token"), token.encode())
        self.token = token

    def enable_audit(self, path: str | os.PathLike[str], policy: audit.Policy | dict[str, Any] | None = None) -> audit.AuditLog:
        """Write the audit log to ``path`` (appended, JSON lines) under ``policy`` (a Policy or its document; None:
        every request at ``RequestResponse``, ``RequestReceived`` omitted), as ``--audit-log-path`` and
        ``--audit-policy-file`` make a real API server do. ``disable_audit`` closes it."""
        chosen = policy if isinstance(policy, audit.Policy) else audit.Policy.at_level("RequestResponse") if policy is None \
            else audit.Policy.of(policy)
        self.disable_audit()
        self.store.audit = audit.AuditLog(open(path, "a", encoding="utf-8"), chosen)  # noqa: SIM115 - closed by disable_audit
        return self.store.audit

    def disable_audit(self) -> None:
        log, self.store.audit = self.store.audit, None
        if log is not None:
            log.close()

    # direct state access

    def _type(self, api_version: str, kind: str) -> ResourceType:
        return self.store.type_of(api_version, kind)

    def create(self, obj: Obj) -> Obj:
        return self.store.create(self._type(obj["apiVersion"], obj["kind"]), json.loads(json.dumps(obj))).obj()

    def update(self, obj: Obj) -> Obj:
        return self.store.update(self._type(obj["apiVersion"], obj["kind"]), json.loads(json.dumps(obj))).obj()

    def update_status(self, obj: Obj) -> Obj:
        return self.store.update(self._type(obj["apiVersion"], obj["kind"]), json.loads(json.dumps(obj)), subresource="status").obj()

    def patch(self, api_version: str, kind: str, namespace: str, name: str, patch: Obj) -> Obj:
        return self.store.patch(self._type(api_version, kind), namespace, name, patch).obj()

    def delete(self, api_version: str, kind: str, namespace: str, name: str, *, graceful: bool = True) -> None:
        self.store.delete(self._type(api_version, kind), namespace, name, graceful=graceful)

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Obj | None:
        stored = self.store.get(self._type(api_version, kind), namespace, name)
        return stored.obj() if stored is not None else None

    def list(self, api_version: str, kind: str, namespace: str | None = None) -> list[Obj]:
        _, items = self.store.current(self._type(api_version, kind), Filter(namespace=namespace))
        return [s.obj() for s in items]

    @property
    def resource_version(self) -> str:
        return str(self.store.rv)

    @property
    def cluster_uid(self) -> str:
        stored = self.store.get(self._type("v1", "Namespace"), "", "kube-system")
        assert stored is not None
        return stored.uid

    def register_kind(self, group: str, version: str, kind: str, plural: str, *, namespaced: bool = True) -> ResourceType:
        return self.store.register(ResourceType(group, version, kind, plural, namespaced=namespaced))

    # fault knobs

    def vanish(self, api_version: str, kind: str, namespace: str, name: str) -> None:
        self.store.vanish(self._type(api_version, kind), namespace, name)

    def compact(self) -> int:
        return self.store.compact()

    def force_410(self, kind: str | None = None) -> None:
        with self._knob_lock:
            self._forced_410[kind] = self._forced_410.get(kind, 0) + 1

    def drop_watches(self) -> None:
        with self.store.changed:
            self.drop_generation += 1
            self.store.changed.notify_all()

    def fail(self, kind: str | None, status: int, *, count: int = 1, retry_after: int | None = None) -> None:
        with self._knob_lock:
            self._failures.append(Failure(kind, status, count, retry_after))

    def serves(self, server: object) -> bool:
        """Whether ``server`` is the one now serving: a handler of a stopped or restarted server ends its stream."""
        return self._httpd is server

    def throttle(self, seats: int | None) -> apf.PriorityLevel | None:
        """API Priority and Fairness on this server's identity (``apf.py``): one priority level of ``seats`` seats
        without queues, rejecting with 429 and a rising Retry-After what does not fit; None turns it off."""
        self.apf = None if seats is None else apf.PriorityLevel(seats=seats)
        return self.apf

    def set_delay(self, seconds: float) -> None:
        self.delay = seconds

    def grant_view(self, namespaces: Iterable[str] | None, *, user: str | None = None) -> None:
        """Authorize HTTP requests as RBAC does for a user whose only grant is a RoleBinding to ``view`` in each
        of ``namespaces``: discovery stays open; get, list and watch inside those namespaces succeed; the rest
        (lists and watches across all namespaces, cluster-scoped kinds, other namespaces, Secrets, writes) is
        403 with the API server's own message, naming ``user``. ``None``: every request allowed (the default)."""
        with self._knob_lock:
            self._view_namespaces = None if namespaces is None else frozenset(namespaces)
            self._rules = None
            if user is not None:
                self.user = user

    # knob checks (server side)

    def take_failure(self, kind: str) -> Failure | None:
        with self._knob_lock:
            for failure in self._failures:
                if failure.remaining > 0 and failure.kind in (None, kind):
                    failure.remaining -= 1
                    if failure.remaining == 0:
                        self._failures.remove(failure)
                    return failure
        return None

    def grant_rules(self, rules: Iterable[Obj], *, namespace: str | None = None, user: str | None = None) -> None:
        """Authorize HTTP requests as RBAC does for a user whose only grant is one role with these PolicyRules
        (``apiGroups``, ``resources``, ``resourceNames``, ``verbs``; ``*`` matches all): a ClusterRole bound across
        the cluster (``namespace`` None) or a Role bound in ``namespace``, which allows only requests inside it.
        Discovery stays open; the rest is 403 with the server's message. Replaces ``grant_view``."""
        with self._knob_lock:
            self._rules = (namespace, [json.loads(json.dumps(rule)) for rule in rules])
            self._view_namespaces = None
            if user is not None:
                self.user = user

    def authenticate(self, authorization: str, connection: Any) -> str:
        """The user a request comes from, as the API server's authenticators find it: the common name of the client
        certificate the TLS handshake verified (``client_ca``), else the bearer token's user; 401 when neither."""
        peer: Any = connection.getpeercert() if isinstance(connection, ssl.SSLSocket) else None
        for rdn in (peer or {}).get("subject", ()):
            for key, value in rdn:
                if key == "commonName":
                    return str(value)
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or token != self.token:  # the scheme is case-insensitive, as the API server's
            self.unauthorized += 1
            raise ApiError(401, "Unauthorized", "Unauthorized")
        return self.user

    def denies(self, verb: str, rtype: ResourceType, namespace: str | None, name: str = "") -> bool:
        if self._rules is not None:
            bound, rules = self._rules
            if bound is not None and namespace != bound:
                return True
            return not any(_rule_allows(rule, verb, rtype, name) for rule in rules)
        granted = self._view_namespaces
        if granted is None:
            return False
        return verb not in _VIEW_VERBS or namespace not in granted or (rtype.group, rtype.plural) == ("", "secrets")

    def take_forced_410(self, kind: str) -> bool:
        with self._knob_lock:
            for key in (kind, None):
                if self._forced_410.get(key, 0) > 0:
                    self._forced_410[key] -= 1
                    return True
        return False


def _rule_allows(rule: Obj, verb: str, rtype: ResourceType, name: str) -> bool:
    """Whether one RBAC PolicyRule allows ``verb`` on one object (``name``) or collection (``""``) of ``rtype``."""
    def has(key: str, value: str) -> bool:
        values = rule.get(key) or []
        return value in values or "*" in values

    names = rule.get("resourceNames") or []
    return (has("verbs", verb) and has("apiGroups", rtype.group) and has("resources", rtype.plural)
            and (not names or name in names))


def _replace_file(path: str, data: bytes) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def _held(port: int) -> socket.socket | None:
    """The port of a stopped server, bound without listening: a connection to it is refused, as to a stopped API
    server, and no other socket of the machine (another test's server, a client's ephemeral port) takes it meanwhile,
    so that ``start`` binds it again (an outage test restarts the server where its clients look for it)."""
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the closed server's connections linger in TIME_WAIT
    try:
        held.bind(("127.0.0.1", port))
    except OSError:
        held.close()
        return None
    return held


class _Server(ThreadingHTTPServer):
    """The HTTP server, whose failed connections (a TLS handshake a client broke off, a plain-HTTP request to the TLS
    port, a reset) are one line on stderr each, never a traceback: a real API server logs them as one line too."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        host, port = client_address[:2] if isinstance(client_address, tuple) else (client_address, "")
        sys.stderr.write(f"sktrace-emulator: a connection from {host}:{port} failed: {type(error).__name__}: {error}\n")


@functools.lru_cache(maxsize=1)
def _self_signed() -> tuple[bytes, bytes]:
    """The serving certificate for 127.0.0.1 and its key, made by the openssl command once per process. TLS is on by
    default because kubectl sends a bearer token only over https."""
    return tls.self_signed("sktrace-emulator")


@functools.lru_cache(maxsize=8)
def _server_context(client_ca: bytes | None) -> tuple[ssl.SSLContext, bytes]:
    """The TLS context serving ``_self_signed``'s certificate, and that certificate. With ``client_ca``, every client
    must present a certificate it signed (``CERT_REQUIRED``): stricter than a real API server, which asks for one,
    checks it in its authenticator and answers 401 (or tries a token) when it does not verify. That context speaks
    TLS 1.2 at most, so that a refused certificate is an alert inside the handshake, which the client always reads:
    over TLS 1.3 the alert follows the client's first request, and closing the connection may lose it (the client
    then sees an EOF, a third of the time on loopback)."""
    cert, key = _self_signed()
    context = tls.server_context(cert, key, client_ca=client_ca)
    if client_ca is not None:
        context.maximum_version = ssl.TLSVersion.TLSv1_2
    return context, cert
