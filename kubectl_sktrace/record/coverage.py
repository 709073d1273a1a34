"""What a run knows of each kind's coverage while it records: outages, and kinds refused or not served.

The watch loops report when a kind stops being watched and when it watches again (``watching``: outages) and when it
cannot be read at all (``availability``: a 403, *forbidden*, or a 404 or an absence from discovery, *not served*).
``KindCoverage`` turns those into ``coverage_gaps`` rows, opened once and closed once (docs/coverage.md):

- an outage (``API unreachable``, ``watch expired``, ``recorder suspended``) from the kind's last proof of liveness
  until it watches again;
- ``forbidden``: blind time like an outage, from the refusal until a list succeeds again (what the list finds then
  is reconstructed, not live); a run that ends first ends it;
- ``not yet observed``: from the run's start until the kind's first list took its snapshot (``listing``, or
  ``throttled`` when the API server throttled its requests meanwhile): blind time, no outage;
- ``not served``: no object of the kind can exist while the server does not serve it, so it is no blind time; from
  the 404 (or the start, for a kind discovery did not list) until the kind is listed again (what that list finds is
  live: it was created after the kind came back).

A kind refused while in an outage ends its outage there: its state is known again. Each change of a kind's
readability is kept as ``KindNews`` for the main thread, which tells the person once per change (``session``).

Not thread-safe: the ``Writer`` serializes the calls (through ``Ingest``) inside its open batch.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kubectl_sktrace.model import CAUSE_UNOBSERVED, GVK, UNOBSERVED_MIN
from kubectl_sktrace.record.availability import FORBIDDEN, NOT_SERVED
from kubectl_sktrace.store.recording import Recording

log = logging.getLogger(__name__)

LISTING, THROTTLED = "listing", "throttled"  # why a kind is not yet observed

RECORDED = "recorded"
"""The state a kind reaches when it is listed again after being refused or not served (``KindNews.state``)."""


@dataclass(frozen=True)
class Outage:
    """A kind's coverage gap while it lasts: its row, since when, and why."""

    gap_id: int
    since: float
    cause: str
    detail: str


@dataclass(frozen=True)
class KindNews:
    """A kind stopped being readable (``state``: ``forbidden`` or ``not served``) or became readable again
    (``RECORDED``, after ``was`` since ``since``) at ``ts``."""

    gvk: GVK
    ts: float
    state: str
    detail: str = ""
    was: str = ""
    since: float = 0.0


class KindCoverage:
    """The open coverage gaps of one run, per kind, and the news of kinds that come and go."""

    def __init__(self, recording: Recording, run_id: int) -> None:
        self.rec = recording
        self.run_id = run_id
        self.outages: dict[GVK, Outage] = {}  # kind -> its open outage
        self.refused: dict[GVK, Outage] = {}  # kind -> its open ``forbidden`` or ``not served`` row
        self.last_resumed = 0.0  # when a kind last watched again after an outage
        self.last_outage: Outage | None = None
        self.outages_opened = 0
        self._news: list[KindNews] = []
        self.first: dict[GVK, Outage] = {}  # kinds not yet observed this run (their first list): their open row
        self._catch_up: dict[GVK, int] = {}  # kind -> horizon: events up to this resourceVersion were missed live

    def interrupted(self, gvk: GVK, since: float, cause: str, detail: str) -> bool:
        """The kind's watch failed: an outage opens at ``since`` (its last proof of liveness); False if one is open."""
        if gvk in self.outages:
            return False
        gap_id = self.rec.open_gap(self.run_id, gvk, since=since, cause=cause, detail=detail)
        self.outages[gvk] = self.last_outage = Outage(gap_id, since, cause, detail)
        self.outages_opened += 1
        self._catch_up.pop(gvk, None)
        return True

    def resumed(self, gvk: GVK, ts: float, horizon: str | None = None) -> bool:
        """The kind watches again at ``ts``: its outage closes (False if none was open); a resumed watch's events up to
        ``horizon`` (the server's resourceVersion when it reconnected) happened during the outage (``caught_up``)."""
        outage = self.outages.pop(gvk, None)
        if outage is None:
            return False
        self.rec.close_gap(outage.gap_id, until=ts)
        self.last_resumed = max(self.last_resumed, ts)  # a stream proves itself late, with its connection's time
        if horizon is not None:
            try:
                self._catch_up[gvk] = int(horizon)
            except ValueError:
                log.debug("%s: resourceVersion %r is not a number; events after the outage count as live", gvk, horizon)
        return True

    def caught_up(self, gvk: GVK, rv: str) -> bool:
        """Whether an event of a resumed watch happened during the outage (up to the horizon); the first event past
        the horizon ends the catch-up. A version that is not a number ends it too (live, as before)."""
        horizon = self._catch_up.get(gvk)
        if horizon is None:
            return False
        try:
            if int(rv) <= horizon:
                return True
        except (TypeError, ValueError):
            pass
        del self._catch_up[gvk]
        return False

    def refuse(self, gvk: GVK, ts: float, state: str, detail: str) -> bool:
        """The kind cannot be read from ``ts`` on (``state``: ``forbidden`` or ``not served``): its outage ends, its
        row opens unless one of that state is open. Returns whether that is news."""
        self.observed(gvk, ts)
        self.resumed(gvk, ts)
        self._catch_up.pop(gvk, None)
        held = self.refused.get(gvk)
        if held is not None and held.cause == state:
            return False
        if held is not None:
            self.rec.close_gap(held.gap_id, until=ts)
        gap_id = self.rec.open_gap(self.run_id, gvk, since=ts, cause=state, detail=detail)
        self.refused[gvk] = Outage(gap_id, ts, state, detail)
        self._news.append(KindNews(gvk, ts, state, detail=detail))
        return True

    def listed(self, gvk: GVK, ts: float) -> str | None:
        """A list of the kind that began at ``ts`` completed: a refusal ends there. Returns the state it ended."""
        held = self.refused.pop(gvk, None)
        if held is None:
            return None
        self.rec.close_gap(held.gap_id, until=ts)
        self._news.append(KindNews(gvk, ts, RECORDED, was=held.cause, since=held.since))
        return held.cause

    def unobserved(self, kinds: list[GVK], since: float) -> None:
        """The run begins at ``since``: each kind is not yet observed until its first list (``observed``)."""
        for gvk in kinds:
            gap_id = self.rec.open_gap(self.run_id, gvk, since=since, cause=CAUSE_UNOBSERVED, detail=LISTING)
            self.first[gvk] = Outage(gap_id, since, CAUSE_UNOBSERVED, LISTING)

    def throttled(self, gvk: GVK) -> None:
        """The API server throttles the kind's requests: if it is not yet observed, that is why."""
        held = self.first.get(gvk)
        if held is not None and held.detail != THROTTLED:
            self.rec.set_gap_detail(held.gap_id, THROTTLED)
            self.first[gvk] = Outage(held.gap_id, held.since, held.cause, THROTTLED)

    def observed(self, gvk: GVK, ts: float) -> None:
        """The kind's first list took its snapshot at ``ts`` (or it was refused, or given up, then): not yet observed
        until then, a row kept when that lasted ``UNOBSERVED_MIN`` or more (shorter is within a trace's resolution)."""
        held = self.first.pop(gvk, None)
        if held is None:
            return
        if ts - held.since >= UNOBSERVED_MIN:
            self.rec.close_gap(held.gap_id, until=ts)
        else:
            self.rec.drop_gap(held.gap_id)

    def not_served(self, gvk: GVK) -> bool:
        held = self.refused.get(gvk)
        return held is not None and held.cause == NOT_SERVED

    def reconstructs(self, gvk: GVK) -> bool:
        """Whether what a list of the kind finds now happened while it was not watched (an outage, a refusal)."""
        held = self.refused.get(gvk)
        return gvk in self.outages or (held is not None and held.cause == FORBIDDEN)

    def take_news(self) -> list[KindNews]:
        news, self._news = self._news, []
        return news
