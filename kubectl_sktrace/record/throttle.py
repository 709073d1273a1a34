"""Requests the API server throttles: retried where they failed, as client-go does, and told once per kind.

Every Kubernetes API server since 1.20 runs API Priority and Fairness (APF): an identity whose priority level is
full gets ``429 Too many requests, please try again later.`` with a ``Retry-After`` the server raises from 1 s to
32 s while it keeps rejecting. A list costs seats by the objects it returns, so a recorder's parallel first lists
are what a busy level rejects. The server is there and answering: a 429 is no outage.

What this module guarantees:

- A request that meets a 429 (``ThrottledError``), or a 5xx that carries a ``Retry-After``, is sent again as the
  same request (the same list page with the same ``continue`` token; the same watch from the same
  resourceVersion) after ``Retry-After`` seconds (1 s when the server names none), plus up to ``JITTER`` of it so
  that clients told the same second do not come back together; at most ``MAX_RETRIES`` times (client-go's
  bound), then the error goes to the watch loop, which backs off as for any failure (``watching``; a 429 there is
  still no outage). A list is never restarted for it, so its pages are listed once.
- A request is never sent from a thread the ``guard`` refuses (one holding the cache writer's lock: ``writer``).
- The person hears one line when a kind's requests start being throttled and one when they pass again, with how
  long and how many retries (``take_news``), said once they have passed ``PASS_QUIET`` seconds without a 429; each retry is logged at debug level (``-v 4``). ``throttled`` counts
  the throttled requests per kind for ``/metrics`` (``sktrace_throttled_requests_total``).

The sleep is the run's ``stop.wait``: a stop ends the wait at once (the request is then not sent again).
Thread-safe: the lists' page-ahead threads and every kind's watch thread share one ``Throttle``.
"""

from __future__ import annotations

import logging
import random
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, TypeVar

from kubectl_sktrace.errors import ThrottledError, TransientError
from kubectl_sktrace.model import GVK
from kubectl_sktrace.record.listing import Stopped

if TYPE_CHECKING:
    from kubectl_sktrace.kube.cluster import ClusterClient
    from kubectl_sktrace.kube.discovery import Documents, Resource

log = logging.getLogger(__name__)

MAX_RETRIES = 10
"""Retries of one request before it is given up to the watch loop (client-go's ``maxRetries``)."""
JITTER = 0.1
"""Up to this share of ``Retry-After`` is added to each wait."""
DEFAULT_WAIT = 1.0
"""The wait when a 429 names no ``Retry-After`` (client-go's)."""
PASS_QUIET = 5.0
"""Seconds a kind's requests must pass without a 429 before it is told that they pass again: a busy level rejects
some requests and admits others, and a person wants one pair of lines per stretch of throttling, not one per request."""

THROTTLED, PASSED = "throttled", "passed"

T = TypeVar("T")


@dataclass(frozen=True)
class ThrottleNews:
    """A kind's requests started being throttled at ``ts`` (``THROTTLED``, with the server's ``detail``), or passed
    again at ``ts`` (``PASSED``) after being throttled since ``since``, with ``retries`` retries."""

    gvk: GVK
    state: str
    ts: float
    detail: str = ""
    since: float = 0.0
    retries: int = 0


def retries_in_place(exc: TransientError) -> bool:
    """Whether a failure is the server asking us to come back (a 429, a 5xx with Retry-After): retried as is."""
    return isinstance(exc, ThrottledError) or exc.retry_after is not None


class Throttle:
    """Wraps a run's ``list_page`` and ``watch`` callables: throttled requests are retried in place (module docstring)."""

    def __init__(self, *, clock: Callable[[], float], stop: threading.Event, rng: random.Random | None = None,
                 sleep: Callable[[float], Any] | None = None) -> None:
        self._clock, self._stop = clock, stop
        self._sleep = sleep if sleep is not None else stop.wait
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._since: dict[GVK, float] = {}  # kinds throttled now: since when
        self._retries: dict[GVK, int] = {}  # retries of each kind since it was throttled
        self._passed_at: dict[GVK, float] = {}  # throttled kinds whose requests pass again: since when
        self._news: list[ThrottleNews] = []
        self.throttled: dict[str, int] = {}  # throttled requests per kind, for /metrics
        self._listener: Callable[[GVK], None] | None = None
        self._guard: Callable[[], None] | None = None
        self._told_start = False  # a request of no kind was throttled, and the person told

    def lists(self, list_page: Callable[..., T]) -> Callable[..., T]:
        def retried(resource: Any, **kw: Any) -> T:
            return self.call(resource.gvk, lambda: list_page(resource, **kw))
        return retried

    def watches(self, watch: Callable[..., T]) -> Callable[..., T]:
        def retried(resource: Any, **kw: Any) -> T:
            return self.call(resource.gvk, lambda: watch(resource, **kw))
        return retried

    def call(self, gvk: GVK | None, request: Callable[[], T]) -> T:
        """``request()``, sent again after each throttled answer (at most ``MAX_RETRIES`` times). ``gvk`` None: a request
        of no kind (discovery, the cluster's identity), logged but not told per kind."""
        if self._guard is not None:
            self._guard()
        retries = 0
        while True:
            try:
                result = request()
            except TransientError as exc:
                if not retries_in_place(exc) or retries >= MAX_RETRIES:
                    raise
                retries += 1
                try:
                    self._wait(gvk, exc, retries)
                except Stopped:
                    if gvk is None:
                        raise exc from None  # stopped while starting: the error says why nothing was recorded
                    raise
                continue
            if gvk is not None:
                self._passed(gvk)
            return result

    def take_news(self, *, final: bool = False) -> list[ThrottleNews]:
        """What to tell: kinds throttled, and kinds whose requests passed ``PASS_QUIET`` seconds without a 429 (however
        lately, when ``final``: the run ends)."""
        now = self._clock()
        with self._lock:
            for gvk, at in list(self._passed_at.items()):
                if final or now - at >= PASS_QUIET:
                    del self._passed_at[gvk]
                    self._news.append(ThrottleNews(gvk, PASSED, at, since=self._since.pop(gvk), retries=self._retries.pop(gvk)))
            news, self._news = self._news, []
            return news

    def listen(self, throttled: Callable[[GVK], None]) -> None:
        """``throttled(gvk)`` is told, on the request's thread, when a kind's stretch of throttling begins."""
        self._listener = throttled

    def guard(self, check: Callable[[], None]) -> None:
        """``check()`` runs before every request, on its thread, and may refuse it by raising (the writer's lock order)."""
        self._guard = check

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self.throttled)

    def _wait(self, gvk: GVK | None, exc: TransientError, retry: int) -> None:
        asked = exc.retry_after if exc.retry_after is not None else DEFAULT_WAIT
        delay = asked * (1 + self._rng.uniform(0, JITTER))
        if gvk is None:  # discovery, the cluster's identity: said once (a warning), then logged
            level, self._told_start = (logging.INFO, True) if self._told_start else (logging.WARNING, True)
            log.log(level, "%s; retrying the same request in %.1fs, as the server asks (retry %d of %d)", exc, delay, retry,
                    MAX_RETRIES)
        else:
            self._throttled(gvk, exc)
            log.debug("%s: %s; retrying the same request in %.1fs (retry %d of %d)", gvk, exc, delay, retry, MAX_RETRIES)
        if self._sleep(delay) is True or self._stop.is_set():
            raise Stopped

    def _throttled(self, gvk: GVK, exc: TransientError) -> None:
        now = self._clock()
        with self._lock:
            self.throttled[str(gvk)] = self.throttled.get(str(gvk), 0) + 1
            begins = gvk not in self._since
            if begins:
                self._since[gvk] = now
                self._retries[gvk] = 0
                self._news.append(ThrottleNews(gvk, THROTTLED, now, detail=str(exc)))
            self._passed_at.pop(gvk, None)  # still throttled: the same stretch goes on
            self._retries[gvk] += 1
        if begins and self._listener is not None:
            self._listener(gvk)

    def _passed(self, gvk: GVK) -> None:
        if gvk not in self._since:  # unlocked read: a kind is marked only by its own threads, under the lock
            return
        now = self._clock()
        with self._lock:
            if gvk in self._since:
                self._passed_at.setdefault(gvk, now)


class ThrottledCluster:
    """A ``ClusterClient`` whose every request goes through a ``Throttle``: what ``start`` records with."""

    def __init__(self, kube: ClusterClient, throttle: Throttle) -> None:
        self._kube, self._throttle = kube, throttle

    def discover(self, gvks: Iterable[GVK], *,
                 cached: Mapping[str, dict[str, Any]] | None = None) -> tuple[dict[GVK, Resource], Documents]:
        wanted = list(gvks)
        if cached is None:
            return self._throttle.call(None, lambda: self._kube.discover(wanted))
        known = cached
        return self._throttle.call(None, lambda: self._kube.discover(wanted, cached=known))

    def cluster_identity(self) -> tuple[str, str]:
        return self._throttle.call(None, self._kube.cluster_identity)

    def list_page(self, resource: Resource, *, namespace: str | None, limit: int = 500,
                  continue_token: str | None = None) -> dict[str, Any]:
        return self._throttle.call(resource.gvk, lambda: self._kube.list_page(
            resource, namespace=namespace, limit=limit, continue_token=continue_token))

    def watch(self, resource: Resource, *, namespace: str | None, resource_version: str, timeout_seconds: int,
              stop: threading.Event | None = None) -> Iterator[dict[str, Any]]:
        return self._throttle.call(resource.gvk, lambda: self._kube.watch(
            resource, namespace=namespace, resource_version=resource_version, timeout_seconds=timeout_seconds, stop=stop))

    def get(self, resource: Resource, *, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self._throttle.call(resource.gvk, lambda: self._kube.get(resource, namespace=namespace, name=name))

    def close(self) -> None:
        self._kube.close()
