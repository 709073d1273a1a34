"""What a person is told about an outage while ``start`` runs: one warning when kinds stop being watched, one
line when every kind watches again with the retries it took, never one line per retry; and about a kind refused or
not served: one line when it stops being readable, one when it is recorded again (``KindNotices``); and about a kind
whose requests the API server throttles: one line when it starts, one when they pass again (``ThrottleNotices``).

The recorder hands in what the ingest knows after each round (the open outages, when a kind last resumed, how
many outages were ever opened); this module decides what to say. Retries are counted by the watch threads,
so the count is guarded by a lock of its own. Times of day only: the person is watching it happen.
"""

from __future__ import annotations

import threading
from typing import Callable, Iterable, Mapping

from kubectl_sktrace.model import GVK
from kubectl_sktrace.plural import counted
from kubectl_sktrace.record.availability import FORBIDDEN, NOT_SERVED, longest_wait
from kubectl_sktrace.record.coverage import RECORDED, KindNews, Outage
from kubectl_sktrace.record.throttle import THROTTLED, ThrottleNews
from kubectl_sktrace.timeparse import format_duration, format_time


def _clock(ts: float) -> str:
    return format_time(ts)[11:]


class OutageNotices:
    """Decides the outage lines of one run. ``warn`` and ``note`` print them (the progress view)."""

    def __init__(self, *, warn: Callable[[str], None], note: Callable[[str], None]) -> None:
        self._warn = warn
        self._note = note
        self._told: Outage | None = None  # the outage told to the person, until every kind watches again
        self._opened_told = 0
        self._retries = 0  # retries of every kind since the told outage began
        self._lock = threading.Lock()

    def count_retry(self, gvk: GVK) -> None:
        """A watch thread retries (the ``retrying`` callback of ``watching.run_watch``)."""
        with self._lock:
            self._retries += 1

    def report(self, *, open_now: Mapping[GVK, Outage], resumed: float, opened: int, last: Outage | None) -> None:
        unseen = opened > self._opened_told and not open_now and self._told is None
        self._opened_told = opened
        with self._lock:
            retries = self._retries
            if not open_now and (self._told is not None or unseen):
                self._retries = 0  # told with the outage's end, below
        if open_now and self._told is None:
            first = min(open_now.values(), key=lambda o: o.since)
            self._told = first
            # no count of kinds: the first kind's failure is told at once, before the others have failed too
            self._warn(f"{first.cause} since {_clock(first.since)} ({first.detail}): watching stopped; "
                       "retrying, and what changes meanwhile is caught up once it recovers")
        elif not open_now and self._told is not None:
            tries = f" ({counted(retries, 'retry', 'retries')})" if retries else ""
            self._note(f"{self._told.cause} since {_clock(self._told.since)}{tries} — recovered after "
                       f"{format_duration(resumed - self._told.since)}; every kind is watched again")
            self._told = None
        elif unseen and last is not None:  # begun and over between two rounds (the whole process stood still)
            self._warn(f"{last.cause} from {_clock(last.since)} for {format_duration(resumed - last.since)} "
                       f"({last.detail}); what changed meanwhile was caught up afterwards")


class KindNotices:
    """The lines of kinds that stop or start being readable (``coverage.KindNews``): one warning when a kind is refused
    (403) or not served (404), one line when it is recorded again; never one per retry."""

    def __init__(self, *, warn: Callable[[str], None], note: Callable[[str], None]) -> None:
        self._warn = warn
        self._note = note
        self.meant: dict[GVK, GVK] = {}  # a kind not served -> the kind of another spelling its group-version serves

    def report(self, news: list[KindNews], *, failed: dict[GVK, BaseException]) -> None:
        """Tell each piece of news; a kind recorded again leaves ``failed`` (the kinds refused, for /readyz)."""
        for item in news:
            if item.state == RECORDED:
                failed.pop(item.gvk, None)
            self._tell(item)

    def _tell(self, news: KindNews) -> None:
        gvk, at = news.gvk, _clock(news.ts)
        if news.state == FORBIDDEN:
            self._warn(f"{news.detail}; {gvk} is not recorded until it may be read (asked again at least every "
                       f"{longest_wait(FORBIDDEN):.0f}s)")
        elif news.state == NOT_SERVED and gvk in self.meant:  # a typo in the config: said as one, never to be served
            self._warn(f"{gvk} is not served by this cluster: did you mean {self.meant[gvk]}? (a kind is spelt as discovery "
                       "spells it, case included); nothing of it is recorded until the config names it right")
        elif news.state == NOT_SERVED:
            self._warn(f"{gvk} is not served by the API server since {at} ({news.detail}): none of its objects can exist "
                       f"meanwhile; it is recorded once it is served (checked at least every {longest_wait(NOT_SERVED):.0f}s)")
        elif news.was == FORBIDDEN:
            self._note(f"{gvk} may be read since {at} (refused for {format_duration(news.ts - news.since)}): recorded "
                       "from then on; what changed while it was refused is reconstructed, not live")
        else:
            self._note(f"{gvk} is served since {at} (not served for {format_duration(news.ts - news.since)}): recorded "
                       "from then on")


class ThrottleNotices:
    """The lines of a stretch of throttling (``throttle.ThrottleNews``), however many kinds it touches: one warning when
    it begins, naming the kinds throttled by then; one line once every kind's requests pass again, naming every kind
    it touched, how long and how many retries. A busy priority level throttles every kind of an identity together, so
    one line per kind would say the same thing three times. Each retry only in the log (-v 4)."""

    def __init__(self, *, warn: Callable[[str], None], note: Callable[[str], None]) -> None:
        self._warn = warn
        self._note = note
        self._kinds: list[GVK] = []  # every kind throttled in the stretch told
        self._open: set[GVK] = set()  # those whose requests do not pass yet
        self._since = self._passed = 0.0
        self._retries = 0

    def report(self, news: list[ThrottleNews]) -> None:
        begun = [item for item in news if item.state == THROTTLED]
        if begun and not self._kinds:
            self._since = min(item.ts for item in begun)
            self._warn(f"{_kinds(item.gvk for item in begun)}: throttled by the API server since {_clock(self._since)} "
                       f"({begun[0].detail}); each request is retried as the server asks (Retry-After), nothing is lost")
        for item in begun:
            if item.gvk not in self._kinds:
                self._kinds.append(item.gvk)
            self._open.add(item.gvk)
        for item in news:
            if item.state != THROTTLED:
                self._open.discard(item.gvk)
                self._retries += item.retries
                self._passed = max(self._passed, item.ts)
        if self._kinds and not self._open:
            self._note(f"{_kinds(self._kinds)}: requests pass again since {_clock(self._passed)} (throttled for "
                       f"{format_duration(self._passed - self._since)}, {counted(self._retries, 'retry', 'retries')})")
            self._kinds, self._retries, self._passed = [], 0, 0.0


def _kinds(kinds: Iterable[GVK]) -> str:
    return ", ".join(str(gvk) for gvk in kinds)
