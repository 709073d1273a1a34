"""Raw-JSON access to the API server through the ``kubernetes`` package's configuration and transport.

The only module that imports ``kubernetes`` (lazily, in ``_rebuild``, and without its typed API: ``lazy``). The client does what it is good at:
turning a kubeconfig into credentials (tokens, client certificates, CA data, exec plugins, expiring tokens
refreshed by its hook) and a configured urllib3 pool (TLS, proxy). Requests are built here and sent through
that pool; bodies are parsed by ``stream`` — never the model classes, which are 5-15x slower and drop what
they do not know (docs/architecture.md, measured facts) — and never the client's ``Watch`` helper, which mishandles resource versions
and 410.

Guarantees:

- Nothing is written to the user's kubeconfig: the loader gets a dict copy and no persister.
- No credential is written to any file: the ``*-data`` fields are taken out of that copy and an exec plugin's
  certificate and key are kept from the loader (``_exec_in_memory``), which would write them to temp files removed only
  at a clean exit; they make the pool's ``ssl.SSLContext`` in memory (``tls``), anew at each (re)load.
- 401 rebuilds the configuration from the kubeconfig once (re-running an exec plugin, re-reading a token
  file) and retries; in a pod, the service account's token is also read again as soon as the kubelet rotates
  it (``serviceaccount``); a second 401 is a KubeError saying to log in again.
- Failures are one-line errors with the fix (``kube.errors``).
- Every request is logged on ``kubectl_sktrace.kube.requests`` at INFO, in ``kubectl -v 6``'s words: method,
  URL (query included, no credentials: they travel in headers, which are never logged), status and the
  milliseconds until the response headers arrived (for a watch: until the stream opened, not per event).
- ``watch`` notices ``stop`` at once even on a silent stream (``stream.Watchdog``). A watch asks the server to end
  its stream after ``timeoutSeconds``, which a healthy server does however quiet the kind (a real one sends no byte
  at all, not even a bookmark, while a kind does not change); a connection silent ``WATCH_GRACE`` seconds longer
  than that is declared dead instead of hanging forever (``SilentConnectionError``).

Thread-safety: one ``Kube`` is shared by one thread per watched kind; the pool is thread-safe and the
credential refresh and rebuild are serialized by a lock.
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import logging
import os
import shutil
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Iterable, Iterator, Mapping
from urllib.parse import urlencode, urlsplit, urlunsplit

import urllib3

from kubectl_sktrace import __version__
from kubectl_sktrace.errors import ForbiddenError, KubeError
from kubectl_sktrace.kube import discovery, stream, tls
from kubectl_sktrace.kube.discovery import Documents, Resource
from kubectl_sktrace.kube.errors import (
    NotFound,
    exec_failed,
    exec_not_found,
    status_error,
    transport_error,
)
from kubectl_sktrace.kube.kubeconfig import KubeTarget
from kubectl_sktrace.kube.lazy import lighten
from kubectl_sktrace.kube.serviceaccount import TokenFile, check_ca_file
from kubectl_sktrace.model import GVK

log = logging.getLogger(__name__)
# an exec plugin's failure, logged where the loader logs its own (outside ours: _load_credentials reports it)
exec_log = logging.getLogger("kubernetes.config.kube_config")
request_log = logging.getLogger("kubectl_sktrace.kube.requests")

CONNECT_TIMEOUT = 10.0
REQUEST_TIMEOUT = 60.0
WATCH_GRACE = 30.0
"""Seconds a watch may stay silent beyond the ``timeoutSeconds`` it asked for before its connection is presumed dead.
With the recorder's minute (``watching.WATCH_TIMEOUT``), a connection that died without a word is noticed after 90 s
at most, as before quiet kinds were told from dead ones; one closed or reset is noticed at once."""
POOL_MAXSIZE = 32


class Kube:
    """One connection to one cluster for one run."""

    def __init__(self, target: KubeTarget, *, connect_timeout: float = CONNECT_TIMEOUT,
                 request_timeout: float = REQUEST_TIMEOUT, idle_timeout: float | None = None) -> None:
        self.target = target
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.idle_timeout = idle_timeout  # None: each watch's timeoutSeconds plus WATCH_GRACE
        self._lock = threading.Lock()
        self._generation = 0
        self._api: Any = None
        self._token: TokenFile | None = None  # in a pod: the service account's token, read again when rotated
        self._renew_at: float | None = None  # when an exec plugin's client certificate expires (epoch seconds)
        self._host = target.cluster_server
        self._watchdog = stream.Watchdog()

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

    def close(self) -> None:
        with self._lock:
            if self._api is not None:
                self._api.rest_client.pool_manager.clear()

    # --- requests ---------------------------------------------------------------------------------------

    def discover(self, gvks: Iterable[GVK], *,
                 cached: Mapping[str, dict[str, Any]] = {}) -> tuple[dict[GVK, Resource], Documents]:
        """Resolve ``gvks`` by fetching only their group-versions, reusing ``cached`` documents.

        Kinds the server does not serve are absent from the result, for the caller to warn about. Returns the
        resources and the documents fetched now (to store in the cache's ``discovery`` table).
        """
        return discovery.discover(gvks, cached=cached, fetch=self._get_discovery)

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
        return stream.read_json(resp, self._host)

    def get(self, resource: Resource, *, namespace: str | None, name: str) -> dict[str, Any] | None:
        """One object as raw JSON, or None when it does not exist."""
        return self._get_json(resource.path(namespace=namespace, name=name), verb="get", resource=resource,
                              namespace=namespace)

    def watch(self, resource: Resource, *, namespace: str | None, resource_version: str, timeout_seconds: int,
              stop: threading.Event | None = None) -> Iterator[dict[str, Any]]:
        """Watch events as raw dicts, one ``loads`` per line, bookmarks included.

        Ends cleanly when the server ends the stream (``timeoutSeconds``) or ``stop`` is set; raises
        TransientError when the connection breaks, SilentConnectionError when it stays silent ``WATCH_GRACE`` seconds
        past ``timeout_seconds`` (or for ``idle_timeout`` seconds, when given).
        """
        query = {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": resource_version,
                 "timeoutSeconds": str(int(timeout_seconds))}
        silence = self.idle_timeout if self.idle_timeout is not None else int(timeout_seconds) + WATCH_GRACE
        resp = self._open(resource.path(namespace=namespace), query, read_timeout=silence,
                          verb="watch", resource=resource, namespace=namespace)
        return stream.events(resp, stop=stop, watchdog=self._watchdog, host=self._host, context=self.target.context)

    # --- transport --------------------------------------------------------------------------------------

    def _rebuild(self) -> None:
        """(Re)load credentials and the pool from the kubeconfig dict. Caller holds the lock."""
        lighten()  # the package without its typed API: 30 MB and 0.2 s less (lazy.py)
        from kubernetes.client import ApiClient, Configuration

        configuration = Configuration()
        held = self._load_credentials(configuration)
        configuration.connection_pool_maxsize = POOL_MAXSIZE
        if not configuration.verify_ssl:
            # kubectl warns once; urllib3 would warn on every request, flooding the live status line
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
            if self._api is None:
                log.warning("context %r skips TLS verification (insecure-skip-tls-verify)", self.target.context)
        api = ApiClient(configuration)
        host = configuration.host.rstrip("/")
        if host.startswith("https:"):
            # what the loader left in the configuration are paths of the user's own files
            material = tls.TlsMaterial(verify=bool(configuration.verify_ssl),
                                       ca=held.ca or tls.Pem(path=configuration.ssl_ca_cert),
                                       cert=held.cert or tls.Pem(path=configuration.cert_file),
                                       key=held.key or tls.Pem(path=configuration.key_file))
            # the pool's connections use this context as it is: urllib3 reads no CA, certificate or key file
            api.rest_client.pool_manager.connection_pool_kw.update(
                ssl_context=tls.client_context(material, host=host, context=self.target.context),
                ca_certs=None, cert_file=None, key_file=None)
        old, self._api = self._api, api
        self._host = host
        self._renew_at = held.expires
        self._generation += 1
        if old is not None:
            old.rest_client.pool_manager.clear()

    def _load_credentials(self, configuration: Any) -> Held:
        """Fill ``configuration`` from the kubeconfig (or the pod's service account); one-line errors. Returns the
        certificates and key held in memory, never given to the loader (``tls``).

        The loader only logs an exec credential plugin's failure and goes on without credentials (the server
        would then answer 401): a plugin that is missing or fails is reported here instead, as kubectl does."""
        from kubernetes.config.config_exception import ConfigException

        plugin = _exec_plugin(self.target.config)
        if plugin is not None:
            _check_installed(plugin, context=self.target.context)
        try:
            with _loader_errors() as failures:
                held = self._run_loader(configuration)
        except (ConfigException, OSError, KeyError, ValueError) as exc:
            detail = " ".join(str(exc).split()) or type(exc).__name__
            raise KubeError(f"cannot load the credentials of context {self.target.context!r}: {detail}; "
                            "fix the user and cluster entries in your kubeconfig") from exc
        if plugin is not None and failures:
            raise exec_failed(str(plugin.get("command")), failures[0], context=self.target.context)
        return held

    def _run_loader(self, configuration: Any) -> Held:
        if self.target.in_cluster:
            # not the client's InClusterConfigLoader: it reads the server from os.environ, not from the target,
            # and its token from a file it re-reads only once a minute (serviceaccount.py)
            configuration.host = self.target.cluster_server
            configuration.ssl_ca_cert = check_ca_file(self.target.config["ca-file"])
            self._token = TokenFile(self.target.config["token-file"])
            self._token.bearer()
            return Held()
        from kubernetes.config.kube_config import KubeConfigLoader

        config = copy.deepcopy(self.target.config)
        held = _take_tls_data(config)
        loader = KubeConfigLoader(config_dict=config, active_context=self.target.context, config_persister=None)
        loader._load_from_exec_plugin = functools.partial(_exec_in_memory, loader, held)
        loader.load_and_set(configuration)
        return held

    def _snapshot(self) -> tuple[int, Any, str, dict[str, str]]:
        """The current pool and headers; the client's refresh hook renews an expiring token here."""
        with self._lock:
            if self._renew_at is not None and time.time() >= self._renew_at:
                log.info("the client certificate of context %r has expired: running its exec plugin again", self.target.context)
                self._rebuild()
            configuration = self._api.configuration
            headers = {"Accept": "application/json", "User-Agent": f"kubectl-sktrace/{__version__}"}
            for setting in configuration.auth_settings().values():
                if setting.get("in") == "header" and setting.get("value"):
                    headers[setting["key"]] = setting["value"]
            if self._token is not None:
                headers["Authorization"] = f"Bearer {self._token.bearer()}"
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
            url = request_url(host, path, query)
            started = time.monotonic()
            try:
                resp = pool.request("GET", url, headers=headers, preload_content=False,
                                    timeout=urllib3.Timeout(connect=self.connect_timeout, read=read_timeout),
                                    retries=False, redirect=False)
            except urllib3.exceptions.HTTPError as exc:
                request_log.info("%s", request_line("GET", url, status=None, reason="", seconds=time.monotonic() - started))
                raise transport_error(exc, host=host, context=self.target.context) from exc
            request_log.info("%s", request_line("GET", url, status=resp.status, reason=resp.reason or "",
                                                seconds=time.monotonic() - started))
            if 200 <= resp.status < 300:
                return resp
            body = stream.drain(resp)
            if resp.status == 401 and attempt == 0:
                self._reload_after_401(generation)
                continue
            raise status_error(resp.status, body, resp.headers, host=self._host, context=self.target.context,
                               path=path, verb=verb, resource=resource, namespace=namespace)
        raise AssertionError("unreachable")

    def _get_discovery(self, path: str) -> dict[str, Any] | None:
        return self._get_json(path, verb="get", resource=None, namespace=None)

    def _get_json(self, path: str, *, verb: str, resource: Resource | None,
                  namespace: str | None) -> dict[str, Any] | None:
        try:
            resp = self._open(path, {}, read_timeout=self.request_timeout, verb=verb, resource=resource,
                              namespace=namespace)
        except NotFound:
            return None
        return stream.read_json(resp, self._host)


def request_url(host: str, path: str, query: Mapping[str, str]) -> str:
    """The URL a request is sent to: the query's keys in order, as client-go encodes them."""
    return host + path + ("?" + urlencode(sorted(query.items())) if query else "")


def request_line(method: str, url: str, *, status: int | None, reason: str, seconds: float) -> str:
    """One request as ``kubectl -v 6`` logs it: ``GET URL 200 OK in 4 milliseconds``; a request that got no
    answer has no status (``GET URL  in 0 milliseconds``). A user and password in the URL are left out."""
    parts = urlsplit(url)
    if "@" in parts.netloc:
        parts = parts._replace(netloc=parts.netloc.rsplit("@", 1)[1])
    answer = "" if status is None else f"{status} {reason or _phrase(status)}"
    return f"{method} {urlunsplit(parts)} {answer} in {int(seconds * 1000)} milliseconds"


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _exec_plugin(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``exec`` entry of the target's user, if it authenticates with a credential plugin."""
    for entry in config.get("users") or []:
        plugin = ((entry or {}).get("user") or {}).get("exec")
        if isinstance(plugin, dict):
            return plugin
    return None


def _check_installed(plugin: Mapping[str, Any], *, context: str) -> None:
    """Raise kubectl's "executable ... not found" when the plugin's command cannot be run.

    The command is looked up as the loader's child process will be: on the PATH of its environment (the
    plugin's ``env`` entries over ours); a command with a path separator is already absolute (``kube/kubeconfig.py``)."""
    command = plugin.get("command")
    if not isinstance(command, str) or not command:
        return  # the loader reports the malformed entry
    path = os.environ.get("PATH", os.defpath)
    for item in plugin.get("env") or []:
        if isinstance(item, dict) and item.get("name") == "PATH":
            path = str(item.get("value") or "")
    if shutil.which(command, path=path) is None:
        hint = plugin.get("installHint")
        raise exec_not_found(command, install_hint=hint if isinstance(hint, str) else None, context=context)


@dataclass
class Held:
    """What is kept from the loader, in memory: the kubeconfig's ``*-data`` fields, decoded, and the certificate and
    key an exec plugin printed, with their expiry (epoch seconds)."""

    ca: tls.Pem = tls.Pem()
    cert: tls.Pem = tls.Pem()
    key: tls.Pem = tls.Pem()
    expires: float | None = None


# each ``*-data`` field, the field naming a file that it overrides, and where it goes
_TLS_DATA = (("clusters", "cluster", "certificate-authority", "ca"), ("users", "user", "client-certificate", "cert"),
             ("users", "user", "client-key", "key"))


def _take_tls_data(config: dict[str, Any]) -> Held:
    """Remove the ``*-data`` fields (and the file fields they override, as in kubectl) from ``config`` before the
    loader sees them, which would write them to temp files; return them decoded."""
    held = Held()
    for section, entry, field, slot in _TLS_DATA:
        for item in config.get(section) or []:
            values = (item or {}).get(entry)
            if not isinstance(values, dict) or not values.get(f"{field}-data"):
                continue
            data = values.pop(f"{field}-data")
            values.pop(field, None)
            try:
                decoded = base64.standard_b64decode(data.encode() if isinstance(data, str) else data)
            except (binascii.Error, TypeError) as exc:
                raise ValueError(f"{field}-data is not base64: {exc}") from exc
            setattr(held, slot, tls.Pem(data=decoded))
    return held


def _exec_in_memory(loader: Any, held: Held) -> bool | None:
    """The loader's ``_load_from_exec_plugin`` keeping a client certificate and key in ``held`` instead of writing
    them to temp files; also what its refresh hook runs when an exec token expires. Errors are logged, as it does."""
    from kubernetes.config.dateutil import parse_rfc3339
    from kubernetes.config.exec_provider import ExecProvider

    if "exec" not in loader._user:
        return None
    try:
        status = ExecProvider(loader._user["exec"], loader._get_base_path(loader._cluster.path), loader._cluster).run()
        if "token" in status:
            loader.token = f"Bearer {status['token']}"
        elif "clientCertificateData" in status and "clientKeyData" in status:
            held.cert, held.key = tls.Pem(data=status["clientCertificateData"].encode()), tls.Pem(data=status["clientKeyData"].encode())
            loader.cert_file = loader.key_file = None  # so the loader does not read the user's own, as in its version
        else:
            missing = "clientKeyData" if "clientCertificateData" in status else "token or clientCertificateData"
            exec_log.error("exec: missing %s field in plugin output", missing)
            return None
        if "expirationTimestamp" in status:
            loader.expiry = parse_rfc3339(status["expirationTimestamp"])
            held.expires = loader.expiry.timestamp() if "token" not in status else None
        return True
    except Exception as exc:  # noqa: BLE001 - the loader's own handling: logged, reported by _load_credentials
        exec_log.error("%s", exc)
        return None


class _Collect(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.ERROR)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        if record.module == "kube_config" or record.name == exec_log.name:
            self.into.append(record.getMessage())


@contextmanager
def _loader_errors() -> Iterator[list[str]]:
    """The errors the ``kubernetes`` kubeconfig loader logs (to the root logger) instead of raising them."""
    failures: list[str] = []
    handler = _Collect(failures)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield failures
    finally:
        root.removeHandler(handler)
