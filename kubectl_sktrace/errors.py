"""Exceptions that reach the user.

Library code raises these with a message that fits on one line and says what to do; the CLI is the one
place that turns them into ``Error: <message>`` on stderr and exit code 1. Anything else that escapes is a
bug and is reported as such (with a traceback only at high verbosity).
"""

from __future__ import annotations


class SktraceError(Exception):
    """Base class: a user-facing error whose message is one line, ending with what to do."""

    exit_code = 1


class UsageError(SktraceError):
    """A bad argument value that click could not catch itself (a time, a selector, a path)."""


class ConfigError(SktraceError):
    """A tracer config file that cannot be loaded or normalized."""


class TraceFormatError(SktraceError):
    """A file that is not a loadable SimKube v2 trace."""


class CacheError(SktraceError):
    """A cache file that cannot be used: not ours, newer schema, locked, another cluster, unwritable."""


class EmptyCacheError(CacheError):
    """A cache file that holds no recording yet: an empty file, or one a recorder is creating right now."""


class EmptyTraceError(SktraceError):
    """An export whose trace would hold no object at all: the message says why and what to pass instead."""


class KubeError(SktraceError):
    """The cluster cannot be reached or refuses us: kubeconfig, network, TLS, 401, 403, unknown kinds."""


class ForbiddenError(KubeError):
    """HTTP 403 for one verb on one resource; carries what RBAC rule is missing. ``cluster_scope``: a kind that
    lives in namespaces was refused at the cluster scope (across all namespaces), as the API server's denial
    says; a grant in one namespace may still allow it there."""

    def __init__(self, message: str, *, verb: str, resource: str, cluster_scope: bool = False, user: str = "") -> None:
        super().__init__(message)
        self.verb = verb
        self.resource = resource
        self.cluster_scope = cluster_scope
        self.user = user  # whom the API server refused, when its message says: the subject to bind a role to


# --- API access: failures the watch engine retries (raised by kube, handled by record/watching.py) ---


class TransientError(KubeError):
    """A failure worth retrying after a back-off: connection refused or reset, a read timeout on a dead
    connection, HTTP 429 or 5xx. ``retry_after`` is the server's Retry-After in seconds, when it sent one.
    Raised at start-up (discovery) it is reported like any KubeError; inside a watch it is retried."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ThrottledError(TransientError):
    """HTTP 429: the API server answered, and asks us to come back after ``retry_after`` seconds (API Priority and
    Fairness rejecting a request of a busy priority level). Retried as the same request (``record/throttle.py``),
    never an outage: the server is there."""


class SilentConnectionError(TransientError):
    """A watch connection that sent nothing for longer than the server's own ``timeoutSeconds`` explains: presumed
    dead since its last byte (a connection the server closed or reset was alive until then)."""


class NotServedError(KubeError):
    """HTTP 404 on a list or a watch: the server does not serve the kind now (its CRD is not installed, or was
    deleted). The watch engine checks again at a slow cadence and records the kind once it is served."""


class ExpiredError(KubeError):
    """HTTP 410 Gone, or a watch ERROR event with code 410: the resource version or the list's continue
    token is older than the server's history. The watch engine answers it with a fresh list."""
