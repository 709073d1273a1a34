"""API Priority and Fairness (APF) as kube-apiserver v1.28 applies it to one priority level: seats, widths, 429s.

Off unless a test turns it on (``Emulator.throttle``). Every request the emulator authorizes comes from its one
identity (its token), so all of them share one priority level, as a ServiceAccount's do on a real server; other
clients of the same identity take seats from it.

- **Seats.** The level has ``seats`` (its concurrency limit). A request occupies its *width* in seats while it
  executes; it is admitted when the seats in use plus its width fit the limit, or, for a request wider than the
  whole limit, when nothing else executes (the queueset's rule). The level has no queues (a level of one share
  that rejects at once, as the issue measured): a request that does not fit is rejected.
- **Width.** A list's width grows with the objects it may return (``list_width``: the list work estimator,
  100 objects a seat, 1 to 10 seats; a consistent paginated list from etcd counts twice its ``limit``); any other
  request (a get, a watch's start) is one seat. A watch holds its seat only while it starts: the handler releases it
  once the stream's headers are out (``Seat.release``).
- **Rejection.** ``429`` with the body a real server writes (``http.Error``: the text ``Too many requests, please
  try again later.``, ``text/plain``, not a ``Status``) and a ``Retry-After`` from the level's dropped-requests
  tracker (``Dropped``): 1 s at first, doubled (to 32 s at most) when the rejections of the last ``Retry-After``
  seconds reach three times it, and lowered by 1 s when they fall below it; re-evaluated when a rejection opens a
  new second.

``rejections`` keeps what was rejected (time, user agent, Retry-After, verb, resource) so tests can add up the
waits a client was asked for. ``full_for`` makes the level full for the next requests of one verb (and resource): a
saturated level met at exactly that request, so a test can put a 429 where a race would put it only sometimes.
Discovery (``/api``, ``/apis``, a group-version's resource list) is admitted as a one-seat ``get`` of no resource, as
a real server's flow schemas admit non-resource requests.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Callable

OBJECTS_PER_SEAT = 100
MIN_SEATS = 1
MAX_SEATS = 10
MAX_RETRY_AFTER = 32
MESSAGE = "Too many requests, please try again later."


def list_width(*, stored: int, limit: int, selector: bool) -> int:
    """The seats a list occupies: what kube-apiserver's list work estimator says for a list served from etcd
    (``resourceVersion`` unset). ``stored``: the objects of the kind; ``limit`` 0 for none. Pure."""
    returned = min(limit, stored) if 0 < limit < stored else stored
    objects = stored + returned if selector else 2 * returned
    return max(MIN_SEATS, min(MAX_SEATS, math.ceil(objects / OBJECTS_PER_SEAT)))


class Rejected(Exception):
    """A request APF rejected: answered 429 with ``MESSAGE`` and ``Retry-After``."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(MESSAGE)
        self.retry_after = retry_after


class Dropped:
    """kube-apiserver's dropped-requests tracker for one priority level: the Retry-After it answers with."""

    def __init__(self) -> None:
        self.retry_after = 1
        self._updated = 0  # the second retry_after was last raised
        self._current = 0  # the second being counted, and its rejections
        self._count = 0
        self._history: list[tuple[int, int]] = []  # (second, rejections) before the current one

    def record(self, unix: int) -> None:
        if unix == self._current:
            self._count += 1
            return
        if self._count:
            self._history.append((self._current, self._count))
        keep = min(2 * self.retry_after, MAX_RETRY_AFTER)
        self._history = [(t, n) for t, n in self._history if unix - t <= keep]
        self._current, self._count = unix, 1
        self._update(unix)

    def _update(self, unix: int) -> None:
        window = self.retry_after
        dropped = sum(n for t, n in self._history if unix - t <= window and t < unix)
        if unix - self._updated >= window and dropped >= 3 * window:
            self.retry_after = min(2 * window, MAX_RETRY_AFTER)
            self._updated = unix
        elif dropped < window and window > 1:
            self.retry_after = window - 1


@dataclass(frozen=True)
class Rejection:
    ts: float
    user_agent: str
    retry_after: int
    verb: str
    resource: str = ""


class Seat:
    """The seats one admitted request holds, until ``release`` (called again, it does nothing)."""

    def __init__(self, level: PriorityLevel | None, width: int) -> None:
        self._level, self.width = level, width

    def release(self) -> None:
        level, self._level = self._level, None
        if level is not None:
            level.give(self.width)

    def __enter__(self) -> Seat:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class PriorityLevel:
    """One priority level without queues: ``admit`` a request of some width now, or raise ``Rejected``."""

    def __init__(self, *, seats: int, clock: Callable[[], float] = time.time) -> None:
        if seats < 1:
            raise ValueError("a priority level has at least one seat")
        self.seats = seats
        self._clock = clock
        self._lock = threading.Lock()
        self._in_use = 0
        self._executing = 0
        self._dropped = Dropped()
        self.rejections: list[Rejection] = []
        self.admitted = 0
        self._full_for: dict[tuple[str, str | None], int] = {}  # (verb, resource) -> requests still to reject

    def full_for(self, verb: str, *, resource: str | None = None, count: int = 1) -> None:
        """The next ``count`` requests of ``verb`` on ``resource`` (a plural; "": discovery; None: any) find the level full."""
        with self._lock:
            self._full_for[(verb, resource)] = self._full_for.get((verb, resource), 0) + count

    def _forced(self, verb: str, resource: str) -> bool:
        for key in ((verb, resource), (verb, None)):
            if self._full_for.get(key, 0) > 0:
                self._full_for[key] -= 1
                return True
        return False

    def admit(self, width: int, *, verb: str = "", user_agent: str = "", resource: str = "") -> Seat:
        with self._lock:
            fits = self._in_use + width <= self.seats or (width > self.seats and self._executing == 0)
            if not fits or self._forced(verb, resource):
                now = self._clock()
                self._dropped.record(int(now))
                retry_after = self._dropped.retry_after
                self.rejections.append(Rejection(now, user_agent, retry_after, verb, resource))
                raise Rejected(retry_after)
            self._in_use += width
            self._executing += 1
            self.admitted += 1
        return Seat(self, width)

    def give(self, width: int) -> None:
        with self._lock:
            self._in_use -= width
            self._executing -= 1

    def in_use(self) -> int:
        with self._lock:
            return self._in_use


def admit(level: PriorityLevel | None, *, verb: str, stored: int, query: dict[str, str], user_agent: str, resource: str = "") -> Seat:
    """The seats of one request (``verb`` on ``resource``, a plural, "" for discovery; ``stored``: its kind's objects),
    or ``Rejected``; no level: APF is off, and the seat holds nothing."""
    if level is None:
        return Seat(None, 0)
    selector = bool(query.get("labelSelector") or query.get("fieldSelector"))
    width = list_width(stored=stored, limit=int(query.get("limit") or 0), selector=selector) if verb == "list" else MIN_SEATS
    return level.admit(width, verb=verb, user_agent=user_agent, resource=resource)


def send_rejection(handler: BaseHTTPRequestHandler, rejected: Rejected) -> None:
    """APF's 429 as kube-apiserver writes it (``http.Error``): plain text, not a Status, with its Retry-After."""
    body = f"{rejected}\n".encode()
    handler.send_response(429)
    for key, value in (("Content-Type", "text/plain; charset=utf-8"), ("X-Content-Type-Options", "nosniff"),
                       ("Retry-After", str(rejected.retry_after)), ("Content-Length", str(len(body)))):
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(body)
