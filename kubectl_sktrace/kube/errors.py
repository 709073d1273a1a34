"""What the API server's answers and the network's failures mean for us: one-line errors with the fix.

Pure: ``status_error`` maps an HTTP status (with its body and headers) to an error of ``errors.py``;
``transport_error`` does the same for a urllib3 or socket failure. ``ForbiddenError`` names the verb, the
resource and the RBAC rule (``kube/rbac.py``: ``rbac_hint``, the one wording of that fix); ``TransientError`` is what is worth
retrying (unreachable, reset, dead connection, 5xx; ``ThrottledError`` a 429 with its Retry-After); ``ExpiredError`` is 410;
``NotServedError`` a 404 on a kind's list or watch (a kind not served now, retried slowly); ``KubeError`` the rest
(TLS, 401 after the credential reload, ...).
"""

from __future__ import annotations

import http.client
import json
import re
import socket
from typing import TYPE_CHECKING, Mapping

import urllib3

from kubectl_sktrace.errors import (
    ExpiredError,
    ForbiddenError,
    KubeError,
    NotServedError,
    SilentConnectionError,
    ThrottledError,
    TransientError,
)
from kubectl_sktrace.kube.kubeconfig import IN_CLUSTER

if TYPE_CHECKING:
    from kubectl_sktrace.kube.discovery import Resource


PLUGIN_DOCS = "https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins"


class NotFound(KubeError):
    """A GET of one object or discovery document found nothing (the client answers None)."""


_DENIED_USER = re.compile(r'User "((?:[^"\\]|\\.)*)" cannot')


def denied_user(message: str) -> str:
    """The user an API server's 403 names (``User "system:serviceaccount:ns:sa" cannot list ...``), or ""."""
    found = _DENIED_USER.search(message)
    return found.group(1) if found else ""


def exec_not_found(command: str, *, install_hint: str | None, context: str) -> KubeError:
    """An exec credential plugin that is not installed, in kubectl's words, with the kubeconfig's ``installHint``."""
    hint = " ".join((install_hint or "").split())
    fix = hint or ("it looks like a client-go credential plugin that is not installed: install it or fix the command "
                   f"in your kubeconfig ({PLUGIN_DOCS})")
    return KubeError(f"cannot get the credentials of context {context!r}: exec: executable {command} not found; {fix}")


def exec_failed(command: str, failure: str, *, context: str) -> KubeError:
    """An exec credential plugin that ran and failed: kubectl's words and the plugin's own message.

    ``failure`` is what the ``kubernetes`` loader says ("exec: process returned 1. <stderr>"); the plugin's
    stderr is kept on one line (a plugin run interactively wrote it to the terminal already)."""
    match = re.fullmatch(r"exec: process returned (-?\d+)\.?\s*(.*)", failure, flags=re.DOTALL)
    if match is None:
        detail = " ".join(failure.split())
        what = detail if detail.startswith("exec:") else f"exec: executable {command} failed: {detail}"
        return KubeError(f"cannot get the credentials of context {context!r}: {what}; check the plugin and its "
                         "configuration in your kubeconfig")
    code, stderr = match.group(1), " ".join(match.group(2).split())
    said = f": {stderr}" if stderr else f"; run {command} yourself to see why"
    return KubeError(f"cannot get the credentials of context {context!r}: exec: executable {command} failed with "
                     f"exit code {code}{said}")


def status_error(status: int, body: bytes, headers: Mapping[str, str], *, host: str, context: str, path: str,
                 verb: str, resource: Resource | None, namespace: str | None) -> KubeError:
    """The error for a non-2xx answer to ``verb`` on ``path`` (``resource`` when the path is one kind's)."""
    message = status_message(body)
    if status == 401 and context == IN_CLUSTER:
        return KubeError(f"unauthorized (401) by {host} with the pod's service-account token: it was rejected or has "
                         "expired; check that the pod's ServiceAccount still exists and its token is mounted, then "
                         "restart the pod")
    if status == 401:
        return KubeError(f"unauthorized (401) by {host} with the credentials of context {context!r}: they were "
                         "rejected or have expired; log in again (refresh the token or the exec plugin's login) "
                         "and retry")
    if status == 403:
        return _forbidden(message, path=path, verb=verb, resource=resource, namespace=namespace)
    if status == 404:
        if verb == "get":
            return NotFound(path)
        assert resource is not None
        return NotServedError(f"the server does not serve {resource.gvk} ({path} returned 404); check the kind "
                              "and version in your config, or install its CRD")
    if status == 410:
        return ExpiredError(f"resource version expired (410): {message}")
    if status == 429:
        return ThrottledError(f"the API server at {host} is throttling us (429): {message}",
                              retry_after=retry_after(headers))
    if status >= 500:
        return TransientError(f"the API server at {host} failed ({status}) on {path}: {message}",
                              retry_after=retry_after(headers))
    return KubeError(f"the API server at {host} refused {verb} {path} ({status}): {message}; "
                     "check the server version and your config")


def _forbidden(message: str, *, path: str, verb: str, resource: Resource | None,
               namespace: str | None) -> ForbiddenError:
    if resource is None:
        return ForbiddenError(f"forbidden: cannot {verb} {path}; grant {verb} on it to your user "
                              "(the system:discovery role allows discovery)", verb=verb, resource=path)
    # the API server's denial names the scope it refused ("... at the cluster scope"); a 403 in other words
    # (a proxy's) is judged by the request
    denied_everywhere = "at the cluster scope" in message if "is forbidden" in message else not namespace
    user = denied_user(message)
    return ForbiddenError(resource.forbidden_message(verb, namespace=namespace, user=user), verb=verb,
                          resource=resource.plural, cluster_scope=resource.namespaced and denied_everywhere, user=user)


def status_message(body: bytes) -> str:
    """The ``message`` of a Status body, or the start of whatever else the body is."""
    try:
        status = json.loads(body)
    except (ValueError, RecursionError):
        return " ".join(body.decode("utf-8", "replace").split())[:200] or "no details"
    if isinstance(status, dict):
        return str(status.get("message") or status.get("reason") or "no details")
    return "no details"


def retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def transport_error(exc: BaseException, *, host: str, context: str) -> KubeError:
    """Map a urllib3 failure to a one-line error: TLS problems are permanent, the rest retryable."""
    reason = root_reason(exc)
    if _refuses_our_certificate(reason):
        return KubeError(f"the API server at {host} refused the TLS handshake ({reason}): it does not accept the client "
                         f"certificate of context {context!r}; {_CLIENT_CERTIFICATE_FIX}")
    if isinstance(exc, urllib3.exceptions.SSLError) or "CERTIFICATE_VERIFY_FAILED" in reason:
        if "CERTIFICATE_VERIFY_FAILED" in reason or "certificate" in reason.lower() or "hostname" in reason.lower():
            return certificate_authority_error(reason, host=host, context=context)
        return TransientError(f"TLS connection to {host} failed ({reason}); retrying")
    if isinstance(exc, (urllib3.exceptions.ReadTimeoutError, TimeoutError)):
        return SilentConnectionError(f"no data from {host} in time (read timed out); the connection is presumed dead")
    if isinstance(exc, (urllib3.exceptions.NewConnectionError, urllib3.exceptions.ConnectTimeoutError)):
        return TransientError(f"cannot reach the API server at {host} ({reason}); check that the cluster is up "
                              f"and that the server URL of context {context!r} is right")
    return TransientError(f"connection to {host} broken ({reason})")


def certificate_authority_error(reason: str, *, host: str, context: str) -> KubeError:
    """The server's certificate cannot be checked: it is not signed by the CA of the kubeconfig, or that CA is unreadable."""
    return KubeError(f"TLS certificate check failed for {host} ({reason}); check certificate-authority "
                     f"of the cluster of context {context!r} in your kubeconfig, or the server's certificate")


def client_certificate_error(reason: str, *, context: str) -> KubeError:
    """The client certificate or its key cannot be loaded (unreadable, not PEM, a key of another certificate)."""
    return KubeError(f"cannot use the client certificate of context {context!r} ({reason}); {_CLIENT_CERTIFICATE_FIX}")


_CLIENT_CERTIFICATE_FIX = ("check client-certificate and client-key of its user in your kubeconfig (or what its exec "
                           "plugin prints)")
# TLS alerts a server sends when it does not accept the client's certificate (OpenSSL's words, lowercase)
_REFUSED_CERTIFICATE = ("alert certificate", "alert bad certificate", "alert unknown ca", "alert unsupported certificate",
                        "alert access denied", "alert decrypt error")


def _refuses_our_certificate(reason: str) -> bool:
    lowered = reason.lower()
    return any(alert in lowered for alert in _REFUSED_CERTIFICATE)


def root_reason(exc: BaseException) -> str:
    """The most telling short text in an exception chain (``Connection refused``, not an object repr)."""
    if isinstance(exc, http.client.IncompleteRead):
        return f"Connection broken: {exc!r}"
    for item in reversed(_chain(exc)):
        text = str(item)
        start = text.find("certificate verify failed")
        if start >= 0:
            return text[start:].split(" (_ssl.c")[0].rstrip(")")
        if isinstance(item, socket.gaierror):
            return "host name not resolved"
        if isinstance(item, OSError) and item.strerror:
            return item.strerror.split(" (_ssl.c")[0]
    first = exc.args[0] if exc.args else None
    text = " ".join((first if isinstance(first, str) else str(exc)).split())
    if ": " in text and "object at 0x" in text:
        text = text.split(": ", 1)[1]
    return text or type(exc).__name__


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception it was raised from, in or wraps as its ``reason`` (urllib3), each once."""
    seen: list[BaseException] = []
    stack: list[BaseException | None] = [exc]
    while stack:
        cur = stack.pop()
        if cur is None or any(cur is s for s in seen):
            continue
        seen.append(cur)
        reason = getattr(cur, "reason", None)
        stack.extend([cur.__context__, cur.__cause__, reason if isinstance(reason, BaseException) else None])
    return seen
