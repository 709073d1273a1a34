"""How each stretch of recorded time was observed, told one way by every reader (docs/coverage.md, "Who sees it"):
``export``'s coverage block, ``status`` (its coverage line and gaps), ``status --timeline``; the view draws the same.

- **observed live**: a recorder watched;
- **exact from the audit log**: no recorder watched, but an audit log at ``RequestResponse`` covered it and
  ``backfill`` wrote what happened at the times the API server logged (``store/backfill.Fill``: the part of the gap
  its lines reach);
- **reconstructed**: no recorder watched and no such log covers it: a restart's relist or a resumed watch caught it up
  later, at that time (a ``Metadata`` log only moved deletions: still reconstructed);

and, for the share of a window: **not observed**, the reconstructed time. Pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Protocol, Sequence

from kubectl_sktrace.timeparse import format_time

LIVE = "observed live"
EXACT = "exact from the audit log"
RECONSTRUCTED = "reconstructed"
NOT_OBSERVED = "not observed"


class Filling(Protocol):
    """A gap a log filled, as ``store/backfill.Fill`` and ``export/advice.Filled`` hold it."""

    @property
    def since(self) -> float: ...

    @property
    def until(self) -> float: ...

    @property
    def covered_since(self) -> float | None: ...

    @property
    def covered_until(self) -> float | None: ...

    @property
    def levels(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class Stretch:
    since: float
    until: float
    how: str  # LIVE, EXACT or RECONSTRUCTED


def exact_spans(fills: Iterable[Filling]) -> list[tuple[float, float]]:
    """The times a ``RequestResponse`` log made exact: each fill's covered part, within its gap."""
    out = []
    for f in fills:
        if f.levels != ("RequestResponse",) or f.covered_since is None or f.covered_until is None:
            continue
        since, until = max(f.since, f.covered_since), min(f.until, f.covered_until)
        if f.covered_since <= f.since + 1:
            since = f.since  # a log from the gap's start on (its first line a second in): the gap's start is exact too
        if f.covered_until >= f.until - 1:
            until = f.until
        if until > since:
            out.append((since, until))
    return out


def tell(*, start: float, end: float, blind: Iterable[tuple[float, float]], exact: Iterable[tuple[float, float]]) -> list[Stretch]:
    """``[start, end)`` cut where how it was observed changes, in time order: blind time (no recorder, an outage, a
    refusal) is exact where ``exact`` covers it, else reconstructed; the rest is live."""
    blind_spans = _merged(blind, start, end)
    exact_spans_ = _merged(exact, start, end)
    cuts = sorted({start, end, *(t for span in blind_spans + exact_spans_ for t in span)})
    out: list[Stretch] = []
    for a, b in zip(cuts, cuts[1:]):
        middle = (a + b) / 2
        how = LIVE if not _inside(blind_spans, middle) else EXACT if _inside(exact_spans_, middle) else RECONSTRUCTED
        if out and out[-1].how == how and out[-1].until == a:
            out[-1] = Stretch(out[-1].since, b, how)
        else:
            out.append(Stretch(a, b, how))
    return out


def shares(stretches: Sequence[Stretch]) -> dict[str, float]:
    """Seconds of each way (LIVE, EXACT, NOT_OBSERVED) over the stretches."""
    out = {LIVE: 0.0, EXACT: 0.0, NOT_OBSERVED: 0.0}
    for s in stretches:
        out[NOT_OBSERVED if s.how == RECONSTRUCTED else s.how] += s.until - s.since
    return out


def percent(share: float) -> str:
    """``97.2%``, rounded down so that a window with anything unobserved never reads ``100%``."""
    if share >= 1:
        return "100%"
    if 0 < share < 0.001:
        return "<0.1%"  # some, too little to show: never ``0.0%`` of something there is
    return f"{math.floor(max(share, 0.0) * 1000) / 10:.1f}%"


def coverage_words(stretches: Sequence[Stretch]) -> str:
    """``44.5% observed live, 38.0% exact from the audit log, 17.5% not observed`` (the exact share only when there is
    some; ``100% observed live`` when nothing was blind)."""
    told = shares(stretches)
    total = sum(told.values())
    if total <= 0:
        return f"100% {LIVE}"
    words = [f"{percent(told[LIVE] / total)} {LIVE}"]
    if told[EXACT] > 0:
        words.append(f"{percent(told[EXACT] / total)} {EXACT}")
    if told[NOT_OBSERVED] > 0:
        words.append(f"{percent(told[NOT_OBSERVED] / total)} {NOT_OBSERVED}")
    return ", ".join(words)


def how_of(since: float, until: float, exact: Iterable[tuple[float, float]]) -> str:
    """How a blind stretch was told: ``exact from the audit log``, ``reconstructed``, or the parts of each in order
    (``exact from the audit log to 10:04:38Z, then reconstructed``: times of day)."""
    parts = [s for s in tell(start=since, end=until, blind=[(since, until)], exact=exact) if s.until - s.since >= 1]
    if not parts:
        return RECONSTRUCTED
    if len(parts) == 1:
        return parts[0].how
    words = [parts[0].how] + [f"from {format_time(p.since)[11:]} {p.how}" for p in parts[1:]]
    return ", then ".join(words)


def _merged(spans: Iterable[tuple[float, float]], start: float, end: float) -> list[tuple[float, float]]:
    clipped = sorted((max(a, start), min(b, end)) for a, b in spans if min(b, end) > max(a, start))
    out: list[tuple[float, float]] = []
    for a, b in clipped:
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _inside(spans: list[tuple[float, float]], t: float) -> bool:
    return any(a <= t < b for a, b in spans)
