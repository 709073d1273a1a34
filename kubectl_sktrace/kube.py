"""Raw-JSON access to the API server through the ``kubernetes`` package's configuration and transport.

The only module that imports ``kubernetes`` (lazily, in ``Kube.connect``). The client does what it is good
at: turning a kubeconfig into credentials (tokens, client certificates, CA data, exec plugins, expiring
tokens refreshed by its hook) and a configured urllib3 pool (TLS, proxy). Requests are built here and sent
through that pool; bodies are parsed with ``json.loads`` — never the model classes, which are 5-15x slower
and drop what they do not know (NOTES.md) — and never the client's ``Watch`` helper, which mishandles
resource versions and 410.

Guarantees:

- Nothing is written to the user's kubeconfig: the loader gets a dict copy and no persister.
- 401 rebuilds the configuration from the kubeconfig once (re-running an exec plugin, re-reading a token
  file) and retries; a second 401 is a KubeError saying to log in again.
- Failures are one-line errors with the fix (errors.py): ``ForbiddenError`` names the verb, the resource
  and the RBAC rule; ``TransientError`` for what is worth retrying (unreachable, reset, dead connection,
  429 with its Retry-After, 5xx); ``ExpiredError`` for 410; ``KubeError`` otherwise (TLS, 404, ...).
- ``watch`` notices ``stop`` within half a second even on a silent stream (a watchdog thread shuts the
  blocked socket's read side down), and a connection silent for ``idle_timeout`` seconds (bookmarks come
  about once a minute) is declared dead instead of hanging forever.

Thread-safety: one ``Kube`` is shared by one thread per watched kind; the pool is thread-safe and the
credential refresh and rebuild are serialized by a lock.
"""

from __future__ import annotations

import copy
import gc
import http.client
import json
import logging
import socket
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence
from urllib.parse import quote

import urllib3

_loads: Callable[[bytes], Any]
try:  # about twice json's speed on pod-sized documents; the krew archive ships pure-Python dependencies only
    from orjson import loads as _loads
except ImportError:
    _loads = json.loads

from kubectl_sktrace import __version__
from kubectl_sktrace.errors import ExpiredError, ForbiddenError, KubeError, TransientError
from kubectl_sktrace.kubeconfig import KubeTarget
from kubectl_sktrace.model import GVK

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 10.0
REQUEST_TIMEOUT = 60.0
IDLE_TIMEOUT = 90.0
STOP_POLL = 0.5
POOL_MAXSIZE = 32
READ_SIZE = 1 << 18


@dataclass(frozen=True)
class Resource:
    """A served kind as discovery describes it: enough to build its URLs and explain a 403."""

    gvk: GVK
    plural: str
    namespaced: bool
    verbs: frozenset[str]

    def path(self, *, namespace: str | None, name: str | None = None) -> str:
        """``/api/v1/namespaces/ns/pods[/name]``; a cluster-scoped kind ignores ``namespace``."""
        parts = [discovery_path(self.gvk.group_version)]
        if self.namespaced and namespace:
            parts.append(f"/namespaces/{quote(namespace, safe='')}")
        parts.append(f"/{self.plural}")
        if name is not None:
            parts.append(f"/{quote(name, safe='')}")
        return "".join(parts)

    @property
    def rbac_name(self) -> str:
        """``deployments.apps``, ``pods``: how RBAC rules, ``kubectl create role --resource`` and ``kubectl auth
        can-i`` name the resource."""
        return f"{self.plural}.{self.gvk.group}" if self.gvk.group else self.plural

    def forbidden_message(self, verb: str, *, namespace: str | None) -> str:
        """The one-line 403 message: what was refused and the rule that would allow it."""
        if not self.namespaced:
            scope, namespace = "(cluster-scoped)", None
        elif namespace:
            scope = f"in namespace {namespace!r}"
        else:
            scope = "in all namespaces"
        return f"forbidden: cannot {verb} {self.rbac_name} {scope}; {rbac_hint([self.rbac_name], namespace=namespace)}"


def rbac_hint(resources: Sequence[str], *, namespace: str | None = None) -> str:
    """What to grant so that ``resources`` (RBAC names, ``deployments.apps``) can be recorded, in ``namespace`` or
    across the cluster: the one wording of the RBAC fix, for one kind's 403 and for every kind refused."""
    if namespace:
        role = f"a Role with rules for those resources in namespace {namespace!r}"
    else:
        role = "a ClusterRole with rules for those resources"
    return f"grant get, list and watch on {', '.join(resources)} (e.g. {role}, bound to your user)"


def discovery_path(group_version: str) -> str:
    """``/api/v1`` for the core group, ``/apis/<group>/<version>`` for the others."""
    return "/api/v1" if group_version == "v1" else f"/apis/{group_version}"


def resources_from_discovery(group_version: str, doc: Mapping[str, Any]) -> dict[GVK, Resource]:
    """The kinds of one APIResourceList document (subresources such as ``pods/status`` left out)."""
    group, _, version = group_version.rpartition("/")
    out: dict[GVK, Resource] = {}
    for entry in doc.get("resources") or []:
        name = entry.get("name") or ""
        kind = entry.get("kind")
        if not name or "/" in name or not kind:
            continue
        gvk = GVK(group=group, version=version, kind=kind)
        out.setdefault(gvk, Resource(gvk=gvk, plural=name, namespaced=bool(entry.get("namespaced")),
                                     verbs=frozenset(entry.get("verbs") or ())))
    return out


class Kube:
    """One connection to one cluster for one run."""

    def __init__(self, target: KubeTarget, *, connect_timeout: float = CONNECT_TIMEOUT,
                 request_timeout: float = REQUEST_TIMEOUT, idle_timeout: float = IDLE_TIMEOUT) -> None:
        self.target = target
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.idle_timeout = idle_timeout
        self._lock = threading.Lock()
        self._generation = 0
        self._api: Any = None
        self._host = target.cluster_server
        self._watchdog = _Watchdog()

    @classmethod
    def connect(cls, target: KubeTarget, **timeouts: float) -> Kube:
        """Load credentials for ``target`` (running an exec plugin if the kubeconfig says so).

        No request is sent yet: the first one (discovery, usually) reports an unreachable server.
        """
        kube = cls(target, **timeouts)
        with kube._lock:
            kube._rebuild()
        return kube

    @property
    def host(self) -> str:
        return self._host

    @property
    def api_client(self) -> Any:
        """The client's ``ApiClient`` on the same credentials (for comparisons with the typed path)."""
        return self._api

    def close(self) -> None:
        with self._lock:
            if self._api is not None:
                self._api.rest_client.pool_manager.clear()

    # --- requests ---------------------------------------------------------------------------------------

    def discover(self, gvks: Iterable[GVK], *, cached: Mapping[str, dict[str, Any]] = {}) -> tuple[dict[GVK, Resource], dict[str, dict[str, Any]]]:
        """Resolve ``gvks`` by fetching only their group-versions, reusing ``cached`` documents.

        A cached document that lacks a wanted kind is fetched again (a CRD installed since). Kinds the
        server does not serve are absent from the result, for the caller to warn about. Returns the
        resources and the documents fetched now (to store in the cache's ``discovery`` table).
        """
        wanted: dict[str, set[str]] = {}
        for gvk in gvks:
            wanted.setdefault(gvk.group_version, set()).add(gvk.kind)
        resources: dict[GVK, Resource] = {}
        fetched: dict[str, dict[str, Any]] = {}
        for group_version in sorted(wanted):
            doc = cached.get(group_version)
            found = resources_from_discovery(group_version, doc) if doc else {}
            if not wanted[group_version] <= {g.kind for g in found}:
                doc = self._get_json(discovery_path(group_version), verb="get", resource=None, namespace=None)
                if doc is None:
                    continue
                fetched[group_version] = doc
                found = resources_from_discovery(group_version, doc)
            for gvk, resource in found.items():
                if gvk.kind in wanted[group_version]:
                    resources[gvk] = resource
        return resources, fetched

    def cluster_identity(self) -> tuple[str, str]:
        """The server URL and the uid of the ``kube-system`` namespace ("" when it cannot be read)."""
        try:
            ns = self._get_json("/api/v1/namespaces/kube-system", verb="get", resource=None, namespace=None)
        except ForbiddenError:
            ns = None
        uid = ((ns or {}).get("metadata") or {}).get("uid") or ""
        return self._host, str(uid)

    def list_page(self, resource: Resource, *, namespace: str | None, limit: int = 500,
                  continue_token: str | None = None) -> dict[str, Any]:
        """One page of a list, as raw JSON; resourceVersion unset, so the read is consistent and current."""
        query: dict[str, Any] = {"limit": str(limit)}
        if continue_token:
            query["continue"] = continue_token
        resp = self._open(resource.path(namespace=namespace), query, read_timeout=self.request_timeout,
                          verb="list", resource=resource, namespace=namespace)
        return _read_json(resp, self._host)

    def get(self, resource: Resource, *, namespace: str | None, name: str) -> dict[str, Any] | None:
        """One object as raw JSON, or None when it does not exist."""
        return self._get_json(resource.path(namespace=namespace, name=name), verb="get", resource=resource,
                              namespace=namespace)

    def watch(self, resource: Resource, *, namespace: str | None, resource_version: str, timeout_seconds: int,
              stop: threading.Event | None = None) -> Iterator[dict[str, Any]]:
        """Watch events as raw dicts, one ``json.loads`` per line, bookmarks included.

        Ends cleanly when the server ends the stream (``timeoutSeconds``) or ``stop`` is set; raises
        TransientError when the connection breaks or stays silent for ``idle_timeout`` seconds.
        """
        query = {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": resource_version,
                 "timeoutSeconds": str(int(timeout_seconds))}
        resp = self._open(resource.path(namespace=namespace), query, read_timeout=self.idle_timeout,
                          verb="watch", resource=resource, namespace=namespace)
        return self._stream(resp, stop)

    # --- transport --------------------------------------------------------------------------------------

    def _rebuild(self) -> None:
        """(Re)load credentials and the pool from the kubeconfig dict. Caller holds the lock."""
        from kubernetes.client import ApiClient, Configuration
        from kubernetes.config.config_exception import ConfigException

        configuration = Configuration()
        try:
            if self.target.in_cluster:
                from kubernetes.config.incluster_config import InClusterConfigLoader

                InClusterConfigLoader(token_filename=self.target.config["token-file"],
                                      cert_filename=self.target.config["ca-file"]).load_and_set(configuration)
            else:
                from kubernetes.config.kube_config import KubeConfigLoader

                loader = KubeConfigLoader(config_dict=copy.deepcopy(self.target.config),
                                          active_context=self.target.context, config_persister=None)
                loader.load_and_set(configuration)
        except (ConfigException, OSError, KeyError, ValueError) as exc:
            detail = " ".join(str(exc).split()) or type(exc).__name__
            raise KubeError(f"cannot load the credentials of context {self.target.context!r}: {detail}; "
                            "fix the user and cluster entries in your kubeconfig") from exc
        configuration.connection_pool_maxsize = POOL_MAXSIZE
        if not configuration.verify_ssl:
            # kubectl warns once; urllib3 would warn on every request, flooding the live status line
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
            if self._api is None:
                log.warning("context %r skips TLS verification (insecure-skip-tls-verify)", self.target.context)
        old = self._api
        self._api = ApiClient(configuration)
        self._host = configuration.host.rstrip("/")
        self._generation += 1
        if old is not None:
            old.rest_client.pool_manager.clear()

    def _snapshot(self) -> tuple[int, Any, str, dict[str, str]]:
        """The current pool and headers; the client's refresh hook renews an expiring token here."""
        with self._lock:
            configuration = self._api.configuration
            headers = {"Accept": "application/json", "User-Agent": f"kubectl-sktrace/{__version__}"}
            for setting in configuration.auth_settings().values():
                if setting.get("in") == "header" and setting.get("value"):
                    headers[setting["key"]] = setting["value"]
            return self._generation, self._api.rest_client.pool_manager, self._host, headers

    def _reload_after_401(self, generation: int) -> None:
        with self._lock:
            if generation == self._generation:  # another thread may have reloaded already
                log.info("401 from %s: reloading credentials", self._host)
                self._rebuild()

    def _open(self, path: str, query: Mapping[str, str], *, read_timeout: float, verb: str,
              resource: Resource | None, namespace: str | None) -> Any:
        """Send a GET and return the undecoded urllib3 response with a 2xx status, or raise."""
        for attempt in range(2):
            generation, pool, host, headers = self._snapshot()
            try:
                resp = pool.request("GET", host + path, fields=dict(query), headers=headers, preload_content=False,
                                    timeout=urllib3.Timeout(connect=self.connect_timeout, read=read_timeout),
                                    retries=False, redirect=False)
            except urllib3.exceptions.HTTPError as exc:
                raise transport_error(exc, host=host, context=self.target.context) from exc
            if 200 <= resp.status < 300:
                return resp
            body = _drain(resp)
            if resp.status == 401 and attempt == 0:
                self._reload_after_401(generation)
                continue
            raise self._status_error(resp.status, body, resp.headers, path=path, verb=verb, resource=resource,
                                     namespace=namespace)
        raise AssertionError("unreachable")

    def _get_json(self, path: str, *, verb: str, resource: Resource | None,
                  namespace: str | None) -> dict[str, Any] | None:
        try:
            resp = self._open(path, {}, read_timeout=self.request_timeout, verb=verb, resource=resource,
                              namespace=namespace)
        except _NotFound:
            return None
        return _read_json(resp, self._host)

    def _status_error(self, status: int, body: bytes, headers: Mapping[str, str], *, path: str, verb: str,
                      resource: Resource | None, namespace: str | None) -> KubeError:
        message = _status_message(body)
        if status == 401:
            return KubeError(f"unauthorized (401) by {self._host} with the credentials of context "
                             f"{self.target.context!r}: they were rejected or have expired; log in again "
                             "(refresh the token or the exec plugin's login) and retry")
        if status == 403:
            if resource is not None:
                # the API server's denial names the scope it refused ("... at the cluster scope"); a 403 in
                # other words (a proxy's) is judged by the request
                denied_everywhere = "at the cluster scope" in message if "is forbidden" in message else not namespace
                scoped = resource.namespaced and denied_everywhere
                return ForbiddenError(resource.forbidden_message(verb, namespace=namespace), verb=verb,
                                      resource=resource.plural, cluster_scope=scoped)
            return ForbiddenError(f"forbidden: cannot {verb} {path}; grant {verb} on it to your user "
                                  "(the system:discovery role allows discovery)", verb=verb, resource=path)
        if status == 404:
            if verb == "get":
                return _NotFound(path)
            assert resource is not None
            return KubeError(f"the server does not serve {resource.gvk} ({path} returned 404); check the kind "
                             "and version in your config, or install its CRD")
        if status == 410:
            return ExpiredError(f"resource version expired (410): {message}")
        retry_after = _retry_after(headers)
        if status == 429:
            return TransientError(f"the API server at {self._host} is throttling us (429): {message}",
                                  retry_after=retry_after)
        if status >= 500:
            return TransientError(f"the API server at {self._host} failed ({status}) on {path}: {message}",
                                  retry_after=retry_after)
        return KubeError(f"the API server at {self._host} refused {verb} {path} ({status}): {message}; "
                         "check the server version and your config")

    def _stream(self, resp: Any, stop: threading.Event | None) -> Iterator[dict[str, Any]]:
        """Read the stream in this thread and parse each line; the watchdog interrupts the read on stop.

        Reading here rather than on a helper thread avoids one thread hand-off per event (each event is its
        own HTTP chunk); a silent connection ends with the socket's read timeout (``idle_timeout``).
        """
        chunks = _chunks(resp)
        if stop is not None:
            self._watchdog.watch(resp, stop)
        buffer = b""
        clean = False
        try:
            while True:
                if stop is not None and stop.is_set():
                    return
                try:
                    data = next(chunks, None)
                except (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError) as exc:
                    if stop is not None and stop.is_set():
                        return
                    raise transport_error(exc, host=self._host, context=self.target.context) from exc
                if data is None:
                    if stop is not None and stop.is_set():
                        return
                    clean = True
                    if buffer.strip():
                        yield _parse_line(buffer, self._host)
                    return
                if b"\n" not in data:
                    buffer += data
                    continue
                lines = (buffer + data).split(b"\n")
                buffer = lines.pop()
                for line in lines:
                    if line:
                        yield _parse_line(line, self._host)
        finally:
            if stop is not None:
                self._watchdog.forget(resp)
            if clean:
                resp.release_conn()
            else:
                resp.close()


class _Watchdog:
    """One thread per ``Kube`` that interrupts the blocked reads of streams whose ``stop`` is set.

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


class _NotFound(KubeError):
    """Internal: a GET of one object or discovery document found nothing."""


def transport_error(exc: BaseException, *, host: str, context: str) -> KubeError:
    """Map a urllib3 failure to a one-line error: TLS problems are permanent, the rest retryable."""
    reason = _root_reason(exc)
    if isinstance(exc, urllib3.exceptions.SSLError) or "CERTIFICATE_VERIFY_FAILED" in reason:
        if "CERTIFICATE_VERIFY_FAILED" in reason or "certificate" in reason.lower() or "hostname" in reason.lower():
            return KubeError(f"TLS certificate check failed for {host} ({reason}); check certificate-authority "
                             f"of the cluster of context {context!r} in your kubeconfig, or the server's certificate")
        return TransientError(f"TLS connection to {host} failed ({reason}); retrying")
    if isinstance(exc, (urllib3.exceptions.ReadTimeoutError, TimeoutError)):
        return TransientError(f"no data from {host} in time (read timed out); the connection is presumed dead")
    if isinstance(exc, (urllib3.exceptions.NewConnectionError, urllib3.exceptions.ConnectTimeoutError)):
        return TransientError(f"cannot reach the API server at {host} ({reason}); check that the cluster is up "
                              f"and that the server URL of context {context!r} is right")
    return TransientError(f"connection to {host} broken ({reason})")


def _root_reason(exc: BaseException) -> str:
    """The most telling short text in an exception chain (``Connection refused``, not an object repr)."""
    if isinstance(exc, http.client.IncompleteRead):
        return f"Connection broken: {exc!r}"
    seen: list[BaseException] = []
    stack: list[BaseException | None] = [exc]
    while stack:
        cur = stack.pop()
        if cur is None or any(cur is s for s in seen):
            continue
        seen.append(cur)
        reason = getattr(cur, "reason", None)
        stack.extend([cur.__context__, cur.__cause__, reason if isinstance(reason, BaseException) else None])
    for item in reversed(seen):
        text = str(item)
        start = text.find("certificate verify failed")
        if start >= 0:
            return text[start:].split(" (_ssl.c")[0].rstrip(")")
        if isinstance(item, socket.gaierror):
            return "host name not resolved"
        if isinstance(item, OSError) and item.strerror:
            return item.strerror
    first = exc.args[0] if exc.args else None
    text = " ".join((first if isinstance(first, str) else str(exc)).split())
    if ": " in text and "object at 0x" in text:
        text = text.split(": ", 1)[1]
    return text or type(exc).__name__


def _drain(resp: Any) -> bytes:
    try:
        return bytes(resp.read())
    except urllib3.exceptions.HTTPError:
        return b""
    finally:
        resp.release_conn()


def _status_message(body: bytes) -> str:
    try:
        status = json.loads(body)
    except ValueError:
        return " ".join(body.decode("utf-8", "replace").split())[:200] or "no details"
    if isinstance(status, dict):
        return str(status.get("message") or status.get("reason") or "no details")
    return "no details"


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


_gc_lock = threading.Lock()
_gc_users = 0
_gc_was_enabled = False


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while parsing a big page: ``json.loads`` allocates millions of containers and
    would trigger collections that find nothing (3x slower, NOTES.md). Reference-counted across threads."""
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


def _read_json(resp: Any, host: str) -> dict[str, Any]:
    try:
        body = resp.read()
    except urllib3.exceptions.HTTPError as exc:
        resp.close()
        raise TransientError(f"response from {host} broke off ({_root_reason(exc)})") from exc
    resp.release_conn()
    with _gc_paused():
        return _json_object(body, host, what="response")


def _parse_line(line: bytes, host: str) -> dict[str, Any]:
    return _json_object(line, host, what="watch event")


def _json_object(data: bytes, host: str, *, what: str) -> dict[str, Any]:
    """One JSON object from the server; anything else is a TransientError (retried like a broken stream)."""
    try:
        value = _loads(data)
    except ValueError as exc:
        raise TransientError(f"malformed {what} from {host} ({exc})") from exc
    if not isinstance(value, dict):
        raise TransientError(f"malformed {what} from {host}: expected a JSON object")
    return value


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
