"""The list-then-watch loop for one kind: resource versions, 410, back-off, outages, kinds that come and go.

Pure control flow. The list and watch calls, the sink that receives what happened, the clock, the sleep
and the random source are all injected, so tests drive every path with scripted streams and a fake clock,
and the recorder wires ``Kube.list_page``/``Kube.watch``, ``time.time`` and ``stop.wait``.

What it guarantees (docs/spec.md §5 step 5; docs/coverage.md; docs/architecture.md, measured facts):

- A (re)list reads every page (``listing.relist``: one snapshot, one timestamp, one page ahead).
- A restart resumes a kind's watch where the last run left it instead of its first list, when ``resume_from`` is
  given (``resuming.catch_up``: the changes since, until caught up, then ``relist_end``); a 410 lists instead.
- The watch starts at the list's resourceVersion with bookmarks. The version to resume from is the last
  one seen, from an event or a bookmark; a clean end of stream re-watches from it without a relist.
- **A quiet kind is not an outage.** A real API server sends nothing at all on the watch of a kind that does not
  change: no event, and no bookmark either (it sends those only while the kind's version moves). Silence alone
  cannot tell a quiet connection from a dead one, so every watch asks the server to end its stream after
  ``WATCH_TIMEOUT`` seconds (``timeoutSeconds``): a healthy server does, cleanly, however quiet the kind, and the
  loop re-watches from the same version (one request a minute per kind, no relist). That clean end is the
  connection's proof of liveness; a connection silent ``kube.client.WATCH_GRACE`` seconds past it is dead
  (``SilentConnectionError``, 90 s after its last byte at most, as before). Chosen over TCP keepalive, which
  proves only the nearest hop (a load balancer in front of the API server answers for a dead backend), and over
  a probe on another connection, which proves the server but not this stream: the server's own timeout proves
  the whole way, through proxies, and is the protocol's (client-go renews its watches the same way).
  A connection that the server closes or resets was alive until then: its break is its last proof of liveness.
- 410, as an HTTP status or as an ERROR event, means history before our version is gone: relist.
- A 429 (``ThrottledError``) is the server answering: the run's ``throttle`` retried it in place already; one that
  still reaches the loop backs off as below but opens no outage (docs/coverage.md, *Throttling*).
- ``TransientError`` (connection refused or reset, dead connection, 5xx) backs off 0.8 s doubling to
  30 s with ±20 % jitter, or the server's Retry-After when it is longer (at most 300 s), then re-watches
  from the last version (a relist only when no list has completed yet). The delay resets after a list completes or an
  event or bookmark arrives. A stream that ends at once with nothing in it also backs off, so a server that closes
  every watch immediately is not hammered.
- **Kinds that come and go, permissions that change** (``availability``): a 404 on a list or a watch (or a kind
  absent from discovery, ``resource`` None) is ``NotServedError``, a 403 ``ForbiddenError``. Neither is permanent:
  the sink hears ``unserved(gvk, ts, detail)`` or ``failed(gvk, error)`` once when the kind enters that state, and the
  loop asks again at a slow cadence (asking discovery again first, when ``rediscover`` is given, since a CRD may come
  back under another plural), and lists the kind when it can be read: the sink's ``relist_end`` is then the kind's
  return. A 403 or 404 met during an outage ends the outage (the kind's state is known again).
- Any other ``KubeError`` (401 after the credential reload, a TLS failure, ...) is permanent for this kind:
  ``sink.failed`` and return. The other kinds keep running.
- Coverage (docs/spec.md §5 "Outages are gaps"): once a list has completed, the kind's *last proof of liveness* is
  the latest completed list, successful watch connection, event, bookmark, clean end of stream or break of the
  connection by the server. When a watch fails (a ``TransientError``, or a 410 that forces a relist) the sink hears
  ``interrupted(gvk, since=that proof)``, once per outage, and ``resumed(gvk, ts, horizon)`` when the kind is
  watching again: a relist completed (``horizon`` None: the relist's own rules date what it found), or a resumed
  watch connected (``ts``: its HTTP 200), said at its first event or bookmark, a clean end, or ``SETTLE_SECONDS``
  without an ERROR: a watch answered at once with a 410 or another error was no recovery, and the outage goes on.
  Before such a watch is opened, one ``limit=1`` list reads the server's current resourceVersion, the ``horizon``:
  events of the resumed stream up to it happened while nothing watched (the server replays them from its watch
  cache), so the sink reports them as caught up, not live.
- A process that stood still (SIGSTOP, a laptop asleep) reads what the server sent meanwhile as if it had
  just happened. A shared ``Vigil``, checked twice a second by a thread of its own and before every event
  a watch passes on, notices a stall of ``STALL_SECONDS`` or more: the watch then drops what it just read, the gap
  opens where the stall began (cause ``recorder suspended``), and the watch resumes from its last version
  (the server replays what it missed, caught up, or answers 410 and the kind relists).
- ``stop`` is checked between events, and the watch callable is given it (``Kube.watch`` notices it within
  half a second even on a silent stream); the sleep must return early when ``stop`` is set (``stop.wait``).

Watch objects get ``apiVersion``/``kind`` only when missing. Bookmarks never reach the sink.

Sink protocol: ``relist_begin`` may be followed by another ``relist_begin`` without ``relist_end`` when a
list failed midway (or its continue token expired); the sink drops what the unfinished relist collected.
Only ``relist_end`` means "this page set was complete: reconcile".
"""

from __future__ import annotations

import logging
import random
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol

from kubectl_sktrace.errors import (
    ExpiredError,
    ForbiddenError,
    KubeError,
    NotServedError,
    SilentConnectionError,
    ThrottledError,
    TransientError,
)
from kubectl_sktrace.model import GVK
from kubectl_sktrace.record.availability import FORBIDDEN, NOT_SERVED, Access, Backoff, longest_wait
from kubectl_sktrace.record.listing import PageBudget, Stopped, horizon, relist, watch_error
from kubectl_sktrace.record.resuming import catch_up
from kubectl_sktrace.timeparse import format_time

if TYPE_CHECKING:
    from kubectl_sktrace.kube.cluster import ListPage, OpenWatch
    from kubectl_sktrace.kube.discovery import Resource

__all__ = ["Backoff", "Sink", "Vigil", "run_watch"]

log = logging.getLogger(__name__)

WATCH_TIMEOUT = 60
"""The ``timeoutSeconds`` of every watch: the server ends each stream that long after it opened, so that a quiet kind
proves its connection alive once a minute without sending anything (the module docstring says why)."""
EMPTY_STREAM_SECONDS = 1.0
SETTLE_SECONDS = 1.0  # a server answers a watch it cannot serve (410) with an ERROR right after its headers
EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED"})


Later = Callable[[float, Callable[[], None]], Callable[[], None]]  # (seconds, fn) -> cancel: fn on a thread, later


class Sink(Protocol):
    """Where the engine reports, in order; implemented by the recorder's single writer."""

    def relist_begin(self, gvk: GVK, ts: float) -> None: ...

    def relist_page(self, gvk: GVK, items: list[dict[str, Any]], ts: float) -> None: ...

    def resume_begin(self, gvk: GVK, ts: float) -> None: ...

    def relist_end(self, gvk: GVK, resource_version: str, ts: float) -> None: ...

    def event(self, gvk: GVK, event_type: str, obj: dict[str, Any], ts: float) -> None: ...

    def failed(self, gvk: GVK, error: Exception) -> None: ...

    def unserved(self, gvk: GVK, ts: float, detail: str) -> None: ...

    def interrupted(self, gvk: GVK, since: float, cause: str, detail: str) -> None: ...

    def resumed(self, gvk: GVK, ts: float, horizon: str | None) -> None: ...


def run_watch(
    *,
    resource: Resource | None,
    namespace: str | None,
    list_page: ListPage,
    watch: OpenWatch,
    sink: Sink,
    clock: Callable[[], float],
    sleep: Callable[[float], Any],
    stop: threading.Event,
    rng: random.Random,
    timeout_seconds: int | None = None,
    max_cycles: int | None = None,
    vigil: Vigil | None = None,
    retrying: Callable[[GVK], None] | None = None,
    later: Later | None = None,
    gvk: GVK | None = None,
    rediscover: Callable[[GVK], Resource | None] | None = None,
    pages: PageBudget | None = None,
    resume_from: str | None = None,
) -> None:
    """Keep ``sink`` in step with one kind until ``stop`` is set or a permanent error.

    ``list_page(resource, namespace=, limit=, continue_token=)`` returns one raw list page;
    ``watch(resource, namespace=, resource_version=, timeout_seconds=, stop=)`` yields raw watch events.
    ``timeout_seconds`` is each watch's (default ``WATCH_TIMEOUT``).
    ``max_cycles`` bounds the number of list-or-watch attempts (for tests); None runs until stopped.
    ``retrying(gvk)`` is told of each retry after a failure during an outage (what a person is told it cost).
    ``later`` times a resumed watch's settling (default: a timer thread; tests inject one they fire).
    ``resource`` None: the kind ``gvk`` is not in the server's discovery (just asked): not served, until
    ``rediscover(gvk)`` finds it. ``pages``: the list pages the run's lists share (``listing.PageBudget``).
    ``resume_from``: the last run's position for the kind, where its watch resumes instead of a first list (``resuming``).
    """
    kind = resource.gvk if resource is not None else gvk
    assert kind is not None, "a kind not in discovery is named by gvk"
    loop = _Loop(gvk=kind, resource=resource, namespace=namespace, list_page=list_page, watch=watch, sink=sink,
                 clock=clock, sleep=sleep, stop=stop, retrying=retrying, rediscover=rediscover,
                 timeout_seconds=WATCH_TIMEOUT if timeout_seconds is None else timeout_seconds,
                 backoff=Backoff(rng), access=Access(rng), asked=resource is None,
                 vigil=vigil or Vigil(clock=clock, monotonic=clock, threshold=float("inf")), later=later or _timer,
                 pages=pages, resume_from=resume_from)
    cycles = 0
    while not stop.is_set() and (max_cycles is None or cycles < max_cycles):
        cycles += 1
        if not loop.cycle():
            return


@dataclass
class _Loop:
    """The state of one kind's loop between attempts, and what each attempt and each failure does to it."""

    gvk: GVK
    resource: Resource | None  # None: not in the server's discovery
    namespace: str | None
    list_page: ListPage
    watch: OpenWatch
    sink: Sink
    clock: Callable[[], float]
    sleep: Callable[[float], Any]
    stop: threading.Event
    timeout_seconds: int
    retrying: Callable[[GVK], None] | None
    rediscover: Callable[[GVK], Resource | None] | None
    backoff: Backoff
    access: Access
    asked: bool  # discovery was asked just before the loop began: the first attempt need not ask it again
    vigil: Vigil
    later: Later
    position: _Position | None = None  # None: no complete list yet, or a 410 asked for a new one
    coverage: _Coverage = field(default_factory=lambda: _Coverage())
    pages: PageBudget | None = None
    resume_from: str | None = None  # the last run's position: the first attempt resumes there instead of listing

    def cycle(self) -> bool:
        """One list-or-watch attempt; False when this kind is done (stopped, or a permanent error)."""
        try:
            if self.position is None and self.resume_from is not None:
                self._resume(self.resume_from)
            elif self.position is None:
                self._list()
            else:
                self._watch(self.position)
        except Stopped:
            return False
        except _Suspended as exc:
            assert self.position is not None
            self._lost(since=min(self.position.alive, exc.since), cause=CAUSE_SUSPENDED, detail=str(exc))
            self.position.epoch = self.vigil.epoch
        except ExpiredError as exc:
            log.info("%s: %s; relisting", self.gvk, exc)
            if self.position is not None:
                self._lost(since=self.position.alive, cause=CAUSE_EXPIRED, detail=str(exc))
            self.position = None
        except TransientError as exc:
            if self.stop.is_set():
                return False
            self._retry_later(exc)
        except NotServedError as exc:
            self._refused(NOT_SERVED, exc)
        except ForbiddenError as exc:
            self._refused(FORBIDDEN, exc)
        except KubeError as exc:
            log.info("%s: %s", self.gvk, exc)
            self.sink.failed(self.gvk, exc)
            return False
        return True

    def _list(self) -> None:
        resource = self._resource()
        version, listed_at = relist(resource=resource, namespace=self.namespace, list_page=self.list_page,
                                    sink=self.sink, clock=self.clock, stop=self.stop, pages=self.pages)
        self.position = _Position(version, alive=listed_at, epoch=self.vigil.check())
        self.coverage.watching(self.sink, self.gvk, listed_at, horizon=None)
        self.backoff.reset()
        was = self.access.readable()
        if was is not None:
            log.info("%s: %s no longer: listed and watched", self.gvk, was)

    def _resume(self, since: str) -> None:
        """The kind's catch-up from where the last run left it stands for its first list; a 410 lists instead."""
        resource = self._resource()
        try:
            version, began = catch_up(resource=resource, namespace=self.namespace, since=since, list_page=self.list_page,
                                      watch=self.watch, sink=self.sink, clock=self.clock, stop=self.stop,
                                      reached=lambda rv: setattr(self, "resume_from", rv))
        except ExpiredError as exc:
            log.info("%s: %s; listing", self.gvk, exc)
            self.resume_from = None
            return
        self.resume_from = None
        self.position = _Position(version, alive=began, epoch=self.vigil.check())
        self.backoff.reset()

    def _resource(self) -> Resource:
        """The kind as discovery describes it; a kind discovery does not know (now) is not served."""
        if self.resource is None and self.rediscover is not None and not self.asked:
            self.resource = self.rediscover(self.gvk)
        self.asked = False
        if self.resource is None:
            raise NotServedError(f"the server does not serve {self.gvk} (its discovery does not list it); check the kind "
                                 "and version in your config, or install its CRD")
        return self.resource

    def _watch(self, position: _Position) -> None:
        resource = self._resource()
        position.received = False
        down = self.coverage.down
        horizon_rv = horizon(resource, namespace=self.namespace, list_page=self.list_page) if down else None
        started = self.clock()
        proof = _Proof(lambda ts: self.coverage.watching(self.sink, self.gvk, ts, horizon=horizon_rv),
                       later=self.later if down else None)
        _watch_once(resource=resource, namespace=self.namespace, watch=self.watch, sink=self.sink,
                    clock=self.clock, stop=self.stop, position=position, timeout_seconds=self.timeout_seconds,
                    vigil=self.vigil, proof=proof)
        if position.received:
            self.backoff.reset()
        elif not self.stop.is_set() and self.clock() - started < EMPTY_STREAM_SECONDS:
            delay = self.backoff.next_delay()
            log.info("%s: watch ended at once with nothing in it; re-watching in %.1fs", self.gvk, delay)
            self.sleep(delay)

    def _lost(self, *, since: float, cause: str, detail: str) -> None:
        self.coverage.lost(self.sink, self.gvk, since=since, cause=cause, detail=detail)

    def _retry_later(self, exc: TransientError) -> None:
        throttled = isinstance(exc, ThrottledError)  # the server answered: no outage (its retries were told: ``throttle``)
        if self.position is not None and not throttled:
            self._lost(since=self.position.alive, cause=CAUSE_UNREACHABLE, detail=str(exc))
        if self.position is not None and self.position.received:
            self.backoff.reset()
        delay = self.backoff.next_delay(exc.retry_after)
        # one failure after a success is routine (a server restart, a connection cut); an outage is reported once
        # by the sink's owner; say it loudly only when failures repeat before any list
        quiet = self.backoff.attempt == 1 or self.coverage.down or self.access.state is not None or throttled
        log.log(logging.INFO if quiet else logging.WARNING, "%s: %s; retrying in %.1fs", self.gvk, exc, delay)
        if self.coverage.down and self.retrying is not None:
            self.retrying(self.gvk)
        self.sleep(delay)

    def _refused(self, state: str, exc: KubeError) -> None:
        """A 404 (not served) or 403 (forbidden): the sink hears it once per change of state, then the kind is asked
        for again at the slow cadence of ``availability``, from a fresh list (and a fresh discovery, for a 404)."""
        if self.access.refused(state):
            log.info("%s: %s; asking again at least every %.0fs", self.gvk, exc, longest_wait(state))
            if state == NOT_SERVED:
                self.sink.unserved(self.gvk, self.clock(), str(exc))
            else:
                self.sink.failed(self.gvk, exc)
            self.coverage.down = False  # the sink ended this kind's outage: its state is known again
        self.position = self.resume_from = None
        if state == NOT_SERVED and self.rediscover is not None:
            self.resource = None
        delay = self.access.next_delay()
        log.debug("%s: %s; asking again in %.1fs", self.gvk, state, delay)
        self.sleep(delay)


CAUSE_UNREACHABLE = "API unreachable"
CAUSE_EXPIRED = "watch expired"
CAUSE_SUSPENDED = "recorder suspended"
STALL_SECONDS = 5.0


class Vigil:
    """Notices that the whole process stood still: ``check`` is called every half second by a thread of its
    own and by every watch before it passes an event on; a call that finds the previous one
    ``threshold`` seconds or more ago (monotonic time) starts a new epoch, whose stall began at the previous
    call's wall time. Whichever thread runs first after the stall notices it."""

    def __init__(self, *, clock: Callable[[], float], monotonic: Callable[[], float], threshold: float = STALL_SECONDS) -> None:
        self._clock, self._monotonic, self._threshold = clock, monotonic, threshold
        self._lock = threading.Lock()
        self._last_mono, self._last_wall = monotonic(), clock()
        self.epoch = 0
        self.stalled_at = 0.0

    def check(self) -> int:
        with self._lock:
            mono = self._monotonic()
            if mono - self._last_mono >= self._threshold:
                self.epoch += 1
                self.stalled_at = self._last_wall
                log.info("the recorder stood still for %.0fs (suspended?)", mono - self._last_mono)
            self._last_mono, self._last_wall = mono, self._clock()
            return self.epoch


class _Suspended(Exception):
    """Internal: the process stood still since this watch last heard from the server."""

    def __init__(self, since: float) -> None:
        super().__init__(f"the process stood still from {format_time(since)}")
        self.since = since


@dataclass
class _Coverage:
    """Whether the kind is in an outage: opened by ``lost`` (once), closed by ``watching``."""

    down: bool = False

    def lost(self, sink: Sink, gvk: GVK, *, since: float, cause: str, detail: str) -> None:
        if not self.down:
            self.down = True
            sink.interrupted(gvk, since, cause, detail)

    def watching(self, sink: Sink, gvk: GVK, ts: float, *, horizon: str | None) -> None:
        if self.down:
            self.down = False
            sink.resumed(gvk, ts, horizon)


class _Proof:
    """Says once, at its connection's time, that a stream proved itself: from the watch's thread (an event, a
    bookmark, a clean end) or the settle timer (``later``: only for a watch that would end an outage). An event
    waits for an announcement under way (``resumed`` comes first); after ``withdraw`` none is under way."""

    def __init__(self, announce: Callable[[float], None], *, later: Later | None) -> None:
        self._announce, self._later, self._lock = announce, later, threading.Lock()
        self._pending, self._opened = True, 0.0
        self._cancel: Callable[[], None] | None = None

    def connected(self, ts: float) -> None:
        self._opened = ts
        if self._later is not None:
            self._cancel = self._later(SETTLE_SECONDS, self.confirm)

    def confirm(self) -> None:
        with self._lock:
            if self._pending:
                self._pending = False
                self._announce(self._opened)

    def withdraw(self) -> None:
        with self._lock:
            self._pending = False
        if self._cancel is not None:
            self._cancel()


def _timer(seconds: float, fn: Callable[[], None]) -> Callable[[], None]:
    timer = threading.Timer(seconds, fn)
    timer.daemon = True
    timer.start()
    return timer.cancel


@dataclass
class _Position:
    """Where the watch stands: the version to resume from and whether the current stream gave anything.

    Updated in place as events arrive, so that when a stream breaks midway the caller resumes from the
    last event seen, not from where that stream began (which would replay events).
    """

    version: str
    alive: float  # the last proof that the kind was watched: a list, a connection, an event, a bookmark, a clean end, a break
    epoch: int  # the Vigil's epoch at that proof
    received: bool = False


def _watch_once(*, resource: Resource, namespace: str | None, watch: OpenWatch,
                sink: Sink, clock: Callable[[], float], stop: threading.Event, position: _Position,
                timeout_seconds: int, proof: _Proof, vigil: Vigil) -> None:
    """Consume one watch stream, moving ``position`` forward with every event and bookmark."""
    gvk = resource.gvk
    stream = watch(resource, namespace=namespace, resource_version=position.version,
                   timeout_seconds=timeout_seconds, stop=stop)
    position.alive = clock()  # the server answered 200: connected
    position.epoch = vigil.check()
    proof.connected(position.alive)
    confirmed = False  # the stream proved itself here: an event, a bookmark or a clean end, not an ERROR at once
    try:
        for event in stream:
            if stop.is_set():
                raise Stopped
            if vigil.check() != position.epoch:
                raise _Suspended(vigil.stalled_at)
            kind = event.get("type")
            obj = event.get("object") or {}
            if kind == "ERROR":
                raise watch_error(gvk, obj)
            if not confirmed:
                confirmed = True
                proof.confirm()
            if kind in EVENT_TYPES:
                obj.setdefault("apiVersion", gvk.api_version)
                obj.setdefault("kind", gvk.kind)
                position.alive = clock()
                sink.event(gvk, kind, obj, position.alive)
            elif kind == "BOOKMARK":
                position.alive = clock()
            else:
                log.debug("%s: ignoring watch event of type %r", gvk, kind)
                continue
            position.received = True
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                position.version = str(rv)
        if not stop.is_set():
            position.alive = clock()  # a clean end (``timeoutSeconds``): the stream was alive until now, quiet or not
            if not confirmed:
                proof.confirm()
    except TransientError as exc:
        if vigil.check() != position.epoch:
            raise _Suspended(vigil.stalled_at) from exc  # broken while the process stood still: when, nobody knows
        if not isinstance(exc, SilentConnectionError):
            position.alive = clock()  # closed or reset by the server: this connection was alive until it broke
        raise  # (a silent one: dead since its last byte, when it was last proven alive)
    finally:
        proof.withdraw()
        close = getattr(stream, "close", None)
        if close is not None:
            close()
