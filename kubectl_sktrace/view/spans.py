"""What the time axis draws: runs, offline time and each kind of blind time as named spans; the buckets' width. Pure.

Each span has a category the page colours (``run``, ``offline``, ``filled``, ``outage``, ``forbidden``, ``not-served``,
``watch-failed``) and a name said on hover, in the words ``status`` and ``export`` use for the same stretch
(docs/coverage.md): ``API unreachable 2026-11-23T10:46:31Z–10:46:51Z (20s): apps/v1.Deployment``. A run's state is
``status``'s: clean, interrupted (it had outages or refusals), crashed (not stopped cleanly), running.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from kubectl_sktrace.export.advice import Filled, filled_words
from kubectl_sktrace.model import CAUSE_FORBIDDEN, CAUSE_NOT_SERVED
from kubectl_sktrace.store.history import CAUSE_FAILED, CoverageGap, Run, UnrecordedKind, uncovered
from kubectl_sktrace.timeparse import format_duration, format_span

NO_RECORDER = "no recorder ran"
EXACT = "exact from the audit log"
CATEGORIES = ("run", "offline", "outage", "forbidden", "not-served", "watch-failed", "filled")
LANES = {"run": "recording", "offline": "recording", "outage": "blind", "forbidden": "blind", "watch-failed": "blind",
         "not-served": "not served", "filled": "recording"}

# bucket widths the rate histogram uses, in seconds: whole units of the axis's labels
NICE_WIDTHS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 2 * 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400,
               2 * 86400, 7 * 86400, 14 * 86400, 28 * 86400)


@dataclass(frozen=True)
class Span:
    category: str
    since: float
    until: float
    name: str
    kinds: tuple[str, ...] = ()
    run_id: int | None = None
    state: str | None = None  # a run's: clean, interrupted, crashed or running
    lane: str = ""  # its category's lane, unless said (what a log filled of a kind's outage: the outage's)

    def to_dict(self) -> dict[str, Any]:
        return {"category": self.category, "lane": self.lane or LANES[self.category], "since": self.since, "until": self.until, "name": self.name,
                "kinds": list(self.kinds), "run": self.run_id, "state": self.state}


def category_of(cause: str) -> str:
    """The colour of a ``coverage_gaps`` cause: refusals, kinds not served, kinds given up, and every other cause an outage."""
    return {CAUSE_FORBIDDEN: "forbidden", CAUSE_NOT_SERVED: "not-served", CAUSE_FAILED: "watch-failed"}.get(cause, "outage")


def _named(what: str, since: float, until: float, kinds: Iterable[str] = ()) -> str:
    listed = ", ".join(kinds)
    return f"{what} {format_span(since, until)} ({format_duration(until - since)})" + (f": {listed}" if listed else "")


def filled(name: str, since: float, until: float, fills: Iterable[Filled], *, kinds: Iterable[str] = ()) -> str:
    """A blind stretch's name, with what an audit log filled of it (``backfill``) in export's words
    (``advice.filled_words``); as it was when none did."""
    wanted = set(kinds)
    for fill in fills:
        same = fill.kind in wanted if fill.kind else not wanted  # a kind's outage, or the time between runs
        if same and fill.until > since and fill.since < until:
            name += f"; {filled_words(fill)}"
    return name


def exact(since: float, until: float, fills: Iterable[Filled], *, kinds: Iterable[str] = (), lane: str = "") -> list[Span]:
    """The parts of a blind stretch an audit log covered: exact from the log (its own colour, over the stretch's),
    named with what the log filled."""
    wanted = set(kinds)
    found = []
    for fill in fills:
        same = fill.kind in wanted if fill.kind else not wanted
        if not same or fill.covered_since is None or fill.covered_until is None:
            continue
        a, b = max(since, fill.since, fill.covered_since), min(until, fill.until, fill.covered_until)
        if b > a:
            found.append(Span("filled", a, b, f"{_named(EXACT + ':', a, b, wanted)}; {filled_words(fill)}", tuple(sorted(wanted)), lane=lane))
    return found


def timeline_spans(*, runs: list[Run], gaps: list[CoverageGap], unrecorded: list[UnrecordedKind], running: bool,
                   fills: Iterable[Filled] = ()) -> list[Span]:
    """Every span of the history, in time order: the runs, the time between them (with what an audit log filled of
    it), the outages and refusals (merged per run and cause, as ``status`` lists them), the kinds given up, and when
    kinds were not served."""
    fills = list(fills)
    interrupted = {g.run_id for g in gaps}
    spans: list[Span] = []
    for n, run in enumerate(runs):
        last = n == len(runs) - 1
        state = ("interrupted" if run.id in interrupted else "clean") if run.clean else "running" if last and running else "crashed"
        spans.append(Span("run", run.started, run.stopped, _named(f"run {run.id}, {state}:", run.started, run.stopped), run_id=run.id,
                          state=state))
    if runs:
        for since, until in uncovered(runs, start=runs[0].started, end=runs[-1].stopped):
            spans.append(Span("offline", since, until, filled(_named(f"{NO_RECORDER}:", since, until), since, until, fills)))
            spans += exact(since, until, fills)
    for gap in gaps:
        name = _named(gap.cause, gap.since, gap.until, gap.kinds)
        if category_of(gap.cause) == "outage":
            name = filled(name, gap.since, gap.until, fills, kinds=gap.kinds)
            spans += exact(gap.since, gap.until, fills, kinds=gap.kinds, lane=LANES["outage"])
        spans.append(Span(category_of(gap.cause), gap.since, gap.until, name, gap.kinds, gap.run_id))
    for kind in unrecorded:
        spans.append(Span(category_of(kind.cause), kind.since, kind.until, _named(kind.cause, kind.since, kind.until, [kind.gvk]),
                          (kind.gvk,), kind.run_id))
    return sorted(spans, key=lambda s: (s.since, CATEGORIES.index(s.category), s.until))


def overlapping(spans: list[Span], *, start: float, end: float) -> list[Span]:
    return [s for s in spans if s.until >= start and s.since <= end]


def bucket_width(*, start: float, end: float, buckets: int) -> int:
    """The smallest nice width that cuts ``[start, end)`` into at most ``buckets`` buckets (or the largest)."""
    wanted = (end - start) / max(1, buckets)
    return next((w for w in NICE_WIDTHS if w >= wanted), NICE_WIDTHS[-1])


def aligned(*, start: float, end: float, width: int) -> tuple[int, int]:
    """``[start, end)`` widened to whole buckets of ``width`` counted from the epoch, so that panning keeps the buckets."""
    first = int(start // width) * width
    last = -int(-end // width) * width
    return first, max(last, first + width)
