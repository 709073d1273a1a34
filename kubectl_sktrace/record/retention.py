"""``start --retain DURATION``: the running recorder drops history older than DURATION, on a cadence.

What goes is what ``prune --before`` drops (``store/pruning.py``, the one implementation): an export of a window
that starts within the retained time gives the same trace as before the prune, on either engine. A pass runs once
the initial sync is done (a cache that already holds older history is trimmed at once), then every ``every``
seconds (``DEFAULT_EVERY``: hourly), and cuts at ``now - retain``, rounded down to the second.

A pass is a chain of prunes (pruning's ``since``): each link looks only at what was recorded after the link
before it, and runs inside the writer's lock (``Writer.exclusive``: the open batch is committed first, and the
watch threads wait for the link). A link is sized in rows (``pruning.step_before``) to hold the lock about
``LINK_SECONDS``: the next link's size follows the time the last one took (``next_link_rows``), so a long
backlog (the first pass over a cache recorded for months) goes in many short links, and between two links the
lock is free for at least as long as the last one held it, so ingestion keeps up. A recorder's first link starts
at the history's beginning (what earlier prunes kept is walked through in links too); later passes go on from
where the last one stopped (``PrunedTo``).

No VACUUM while recording: it rewrites the whole file under the lock. The pages a prune frees are reused by
what is recorded next, so the file stops growing rather than shrinking (``prune`` on a stopped recorder gives
the room back to the disk). What a prune must keep still grows, slowly: the last version of every object ever
seen (SimKube's index lists deleted objects too), about two rows per object, however often it changed.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from dataclasses import dataclass
from typing import Callable, Protocol, TypeVar

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.plural import counted
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.store.pruning import (
    RETAIN,
    PrunedTo,
    PruneResult,
    prune_before,
    step_before,
)
from kubectl_sktrace.timeparse import format_duration_flag, format_time, parse_duration

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_EVERY = 3600.0
"""Seconds between two passes."""

LINK_SECONDS = 0.25
"""How long one link should hold the writer's lock: a quarter of the one-second stall the recorder allows itself."""

FIRST_LINK_ROWS, MIN_LINK_ROWS, MAX_LINK_ROWS = 2_000, 100, 200_000


class Exclusive(Protocol):
    """What retention needs of the ``Writer``: work under its lock, None once it closed."""

    def exclusive(self, work: Callable[[], T]) -> T | None: ...


@dataclass(frozen=True)
class RetentionPolicy:
    retain: float  # seconds of history kept
    every: float = DEFAULT_EVERY  # seconds between passes


@dataclass(frozen=True)
class PassReport:
    """One pass: where it cut, what it removed, in how many links, and the longest the lock was held for it."""

    cutoff: int
    events_removed: int
    pods_removed: int
    links: int
    longest: float
    bytes_after: int


def retention_policy(retain: str | None) -> RetentionPolicy | None:
    """``--retain DUR`` (``timeparse``'s durations, with a unit); None without it. A bare number is refused: it would
    be seconds, and ``--retain 30`` meant as 30 days would prune all but the last 30 seconds of the history."""
    if retain is None:
        return None
    if re.fullmatch(r"\s*\d+(?:\.\d+)?\s*", retain) and float(retain) > 0:  # zero: the duration's own error says it
        raise UsageError(f"invalid --retain {retain!r}: give it a unit, like '{retain.strip()}d' ({retain.strip()} days) or "
                         f"'{retain.strip()}h'; a number alone would keep only {retain.strip()} seconds of history")
    return RetentionPolicy(retain=parse_duration(retain))


def cutoff_at(now: float, retain: float) -> int:
    """The prune's cutoff at ``now`` (Unix seconds): ``retain`` seconds back, rounded down to a whole second."""
    return math.floor(now - retain)


def next_link_rows(rows: int, took: float, *, target: float = LINK_SECONDS) -> int:
    """The size of the next link, from the last one's (``rows``, that held the lock ``took`` seconds): scaled
    toward ``target``, by at most a factor of two up or four down per link, within the bounds."""
    scale = 2.0 if took <= 0 else min(2.0, max(0.25, target / took))
    return max(MIN_LINK_ROWS, min(MAX_LINK_ROWS, int(rows * scale)))


def pass_line(report: PassReport, retain: str) -> str:
    """What a person is told of a pass that removed something."""
    removed = counted(report.events_removed, "event", grouped=True)
    pods = f" and {counted(report.pods_removed, 'finished pod', grouped=True)}" if report.pods_removed else ""
    return (f"Retention ({retain}): pruned {removed}{pods} recorded before {format_time(report.cutoff)} "
            f"({counted(report.links, 'link')}, the longest holding the writer {report.longest:.2f} s).")


class Retention:
    """The passes of one run, on a thread of their own (``start``); ``prune_pass`` is one pass, for tests.

    ``wait(seconds)`` sleeps and says whether the run is stopping (the stop event's ``wait``); ``clock`` is wall
    time (the cutoff), ``monotonic`` measures the links. The counters are read by the main loop for ``/metrics``."""

    def __init__(self, *, policy: RetentionPolicy, cache: Cache, writer: Exclusive, wait: Callable[[float], bool],
                 tell: Callable[[str], None], retain_text: str, clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.policy = policy
        self.cache = cache
        self.writer = writer
        self.wait = wait
        self.tell = tell
        self.retain_text = retain_text
        self.clock = clock
        self.monotonic = monotonic
        self.since: PrunedTo | None = None
        self.rows = FIRST_LINK_ROWS
        self.passes = 0
        self.events_removed = 0
        self.pods_removed = 0
        self.last: PassReport | None = None
        self.bytes_after = 0  # the cache's size after the last link (measured under the lock: the connection is the writer's)

    def run(self) -> None:
        """Pass after pass until the run stops; a pass that fails is told and tried again at the next."""
        while True:
            try:
                report = self.prune_pass()
            except Exception as exc:  # noqa: BLE001 - the recording goes on; the next pass tries again
                log.warning("retention: pruning failed (%s); history older than %s is kept until the next pass", exc, self.retain_text)
                report = None
            if report is not None and report.events_removed + report.pods_removed:
                self.tell(pass_line(report, self.retain_text))
            if self.wait(self.policy.every):
                return

    def prune_pass(self) -> PassReport | None:
        """Prune up to ``now - retain`` in links; None when the run stopped before the pass was through."""
        cutoff = cutoff_at(self.clock(), self.policy.retain)
        removed = pods = links = 0
        longest = 0.0
        result: PruneResult | None = None
        reached: int | None = None if self.since is None else self.since.before
        while reached is None or reached < cutoff:
            timed = self.writer.exclusive(lambda: self._link(cutoff))
            if timed is None:
                return None
            result, took = timed
            reached = result.pruned.before if result.pruned is not None else cutoff
            removed, pods, links, longest = removed + result.events_removed, pods + result.pods_removed, links + 1, max(longest, took)
            self.events_removed += result.events_removed
            self.pods_removed += result.pods_removed
            self.rows = next_link_rows(self.rows, took)
            if reached < cutoff and self.wait(took):  # the lock free for as long as the link held it
                return None
        self.passes += 1
        self.last = PassReport(cutoff=cutoff, events_removed=removed, pods_removed=pods, links=links, longest=longest,
                               bytes_after=result.bytes_after if result is not None else self.bytes_after)
        return self.last

    def _link(self, cutoff: int) -> tuple[PruneResult, float]:
        """One link, under the writer's lock: the next cutoff about ``rows`` rows on, and the prune up to it."""
        started = self.monotonic()
        before = step_before(self.cache, after=None if self.since is None else self.since.before, until=cutoff, rows=self.rows)
        result = prune_before(self.cache, before=before, since=self.since, compact=False, source=RETAIN)
        self.since = result.pruned
        self.bytes_after = result.bytes_after
        return result, self.monotonic() - started


def start_retention(policy: RetentionPolicy, *, cache: Cache, writer: Exclusive, stop: threading.Event,
                    tell: Callable[[str], None]) -> Retention:
    """The run's passes, on a daemon thread that ends with the run (``stop``)."""
    retention = Retention(policy=policy, cache=cache, writer=writer, wait=stop.wait, tell=tell,
                          retain_text=format_duration_flag(policy.retain))
    threading.Thread(target=retention.run, name="retention", daemon=True).start()
    return retention
