"""A picture of a trace for a terminal: per owner, its running pods and spec changes over the window.

``build_timeline`` reduces a trace (a file ``inspect`` read, or the trace ``export`` builds from a window of
the cache) to what is drawn; ``render_timeline`` draws it as lines of text for a given width and character
set. Both are pure: the caller reads the trace, measures the terminal and prints.

What is drawn, and where it guesses:

- The window runs from the first event to the last event, or to the last pod start or end when a lifecycle
  reaches beyond it (SimKube takes a trace's end from its last event; a pod that finished after it would
  fall off the picture). A caller that knows the exact window (``status --timeline``) passes it.
- An owner is an object named by an event or a ``pod_lifecycles`` owner, as ``(gvk, ns/name)``. Its
  activity is the number of its pods plus its spec changes; the ``top`` most active are drawn, ties in
  kind, namespace and name order. Objects with neither pods nor changes in the window are only counted.
- Spec changes are the applied and deleted objects of events after the window's first second: what the
  trace applies in its first second is the state at its start (ours in one synthetic event, SimKube's in
  an empty event and the next one), so a change made in that very second is drawn as start state. An object
  applied again with the spec it had but other labels, annotations, owners or data (a trace exported with
  ``--all-changes`` holds such versions: ``trace/revisions``) is drawn with a mark of its own.
- Running pods of a column are the most pods of the owner running at any one instant of the column's
  seconds, a pod running over ``[start, end)`` (at least its start second; ``Running`` to the window end).
  Each row is scaled to its own most, printed left of the row, so a small owner is as readable as a big
  one.
- Time is in whole seconds, as in traces. A column spans a round number of seconds (5s, 30s, 1m30s, 5m, ...), the
  fewest that fit the window in the width, so the chart may end short of it; when the window has fewer
  seconds than there are columns, a second spans several columns instead.
"""

from __future__ import annotations

import codecs
import math
import textwrap
from dataclasses import dataclass
from typing import Any

from kubectl_sktrace.plural import counted
from kubectl_sktrace.timeparse import format_duration, format_time
from kubectl_sktrace.trace.files.format import Trace
from kubectl_sktrace.trace.hashing import spec_hash
from kubectl_sktrace.trace.revisions import data_hash, metadata_hash
from kubectl_sktrace.trace.sanitize import object_key

MIN_WIDTH = 40
_MIN_COLUMNS = 20
_MIN_LABEL = 10


@dataclass(frozen=True)
class Charset:
    """The characters of a chart: eight levels of running pods, lowest first, the change marks and the
    frame."""

    levels: str
    applied: str
    deleted: str
    revised: str
    edge: str
    axis: str
    left_corner: str
    right_corner: str
    ellipsis: str
    gap: str
    exact: str  # on the time axis: no recorder, but exact from the audit log (``backfill``)


UNICODE = Charset(levels="▁▂▃▄▅▆▇█", applied="◆", deleted="×", revised="◇", edge="│", axis="─", left_corner="└", right_corner="┘", ellipsis="…",
                  gap="┄", exact="═")
ASCII = Charset(levels=".:-=+*#@", applied="o", deleted="x", revised="v", edge="|", axis="-", left_corner="+", right_corner="+", ellipsis="~",
                gap="?", exact="=")


def charset_for(encoding: str | None, *, ascii_only: bool) -> Charset:
    """Block characters when the output is UTF-8 and ASCII is not asked for; ASCII otherwise."""
    if ascii_only or not encoding:
        return ASCII
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return ASCII
    return UNICODE if name == "utf-8" else ASCII


@dataclass(frozen=True)
class OwnerActivity:
    """One owner's pods (``(start, end)`` in seconds, ``end`` None while running) and spec changes."""

    gvk: str
    ns_name: str
    pods: tuple[tuple[int, int | None], ...] = ()
    applied: tuple[int, ...] = ()
    deleted: tuple[int, ...] = ()
    revised: tuple[int, ...] = ()  # applied again with the same spec: labels, annotations or data changed

    @property
    def activity(self) -> int:
        return len(self.pods) + len(self.applied) + len(self.deleted) + len(self.revised)

    @property
    def label(self) -> str:
        """``Deployment shop/web``: the kind without its group and version, as ``inspect --events`` shows it."""
        return f"{self.gvk.rpartition('.')[2]} {self.ns_name}"


@dataclass(frozen=True)
class Timeline:
    """What a chart shows: the window ``[start, end]`` (whole seconds, both drawn), the most active owners
    in order, how many owners and quiet objects there are in all, and the times ``[since, until)`` nothing
    was recorded live (drawn on the time axis)."""

    start: int
    end: int
    owners: tuple[OwnerActivity, ...]
    active: int
    quiet: int
    gaps: tuple[tuple[float, float], ...] = ()
    exact: tuple[tuple[float, float], ...] = ()  # the parts of the gaps an audit log made exact (``trace/observation``)


def build_timeline(trace: Trace, *, top: int, start: int | None = None, end: int | None = None,
                   gaps: tuple[tuple[float, float], ...] = (), exact: tuple[tuple[float, float], ...] = ()) -> Timeline | None:
    """The ``top`` most active owners of ``trace`` over its window (``start``/``end`` override the window's
    ends, ``end`` included), with the ``gaps`` of the record; None when the trace has no event."""
    if not trace.events:
        return None
    first = trace.events[0]["ts"] if start is None else start
    found: dict[tuple[str, str], dict[str, list[Any]]] = {}
    last = max(_collect_changes(trace, first, found), _collect_pods(trace, found), first)
    owners = [
        OwnerActivity(gvk=gvk, ns_name=ns_name, pods=tuple(lists["pods"]), applied=tuple(lists["applied"]), deleted=tuple(lists["deleted"]),
                      revised=tuple(lists["revised"]))
        for (gvk, ns_name), lists in found.items()
    ]
    active = sorted((o for o in owners if o.activity), key=lambda o: (-o.activity, o.gvk.rpartition(".")[2], o.ns_name, o.gvk))
    stop = max(first, last if end is None else end)
    return Timeline(start=first, end=stop, owners=tuple(active[:top]), active=len(active), quiet=len(owners) - len(active),
                    gaps=tuple((since, until) for since, until in gaps if since < stop + 1 and until > first), exact=exact)


def _entry(found: dict[tuple[str, str], dict[str, list[Any]]], gvk: str, ns_name: str) -> dict[str, list[Any]]:
    return found.setdefault((gvk, ns_name), {"pods": [], "applied": [], "deleted": [], "revised": []})


def _collect_changes(trace: Trace, first: int, found: dict[tuple[str, str], dict[str, list[Any]]]) -> int:
    """Each object's applied, revised and deleted times after ``first`` into ``found``; the last event's time."""
    last = first
    specs: dict[Any, tuple[int, int, int | None] | None] = {}  # each object's last version applied (None: deleted)
    for event in trace.events:
        ts = event["ts"]
        last = max(last, ts)
        for field, objs in (("applied", event["applied_objs"]), ("deleted", event["deleted_objs"])):
            for obj in objs:
                key = object_key(obj)
                if key is None:
                    continue
                seen = specs.get(key)
                now = (spec_hash(obj.get("spec")), metadata_hash(obj), data_hash(obj)) if field == "applied" else None
                same = now is not None and seen is not None and seen[0] == now[0] and seen != now
                specs[key] = now
                changes = _entry(found, str(key.gvk), key.ns_name)["revised" if same else field]
                if ts > first:
                    changes.append(ts)
    return last


def _collect_pods(trace: Trace, found: dict[tuple[str, str], dict[str, list[Any]]]) -> int:
    """Each owner's pod spans into ``found``; the latest time a span names (0 without any)."""
    last = 0
    for (gvk, ns_name), by_hash in trace.pod_lifecycles.items():
        pods = _entry(found, gvk, ns_name)["pods"]
        for lifecycles in by_hash.values():
            for lifecycle in lifecycles:
                span = _pod_span(lifecycle)
                if span is not None:
                    pods.append(span)
                    last = max(last, *(t for t in span if t is not None))
    return last


def _pod_span(lifecycle: dict[str, Any]) -> tuple[int, int | None] | None:
    if "Running" in lifecycle:
        return int(lifecycle["Running"]), None
    if "Finished" in lifecycle:
        started, ended = lifecycle["Finished"]
        return int(started), int(ended)
    return None


@dataclass(frozen=True)
class _Grid:
    """Columns over the window: ``buckets`` of ``seconds`` each, every bucket drawn ``repeat`` columns wide."""

    start: int
    buckets: int
    seconds: int
    repeat: int

    @property
    def columns(self) -> int:
        return self.buckets * self.repeat

    @property
    def end(self) -> int:
        """The right edge: the first second after the last column."""
        return self.start + self.buckets * self.seconds

    def bucket_of(self, ts: int) -> int | None:
        index = (ts - self.start) // self.seconds
        return index if 0 <= index < self.buckets else None

    def describe(self) -> str:
        if self.repeat > 1:
            return f"1 second = {self.repeat} columns"
        return f"1 column = {format_duration(self.seconds)}"


_DAY = 86_400
# column spans a person reads at a glance (1 column = 30s, 5m, 2h); the chart may end short of the width
_STEPS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 30, 45, 60, 90, 120, 180, 240, 300, 360, 480, 600, 720, 900, 1200, 1800,
          2700, 3600, 5400, 7200, 10_800, 14_400, 21_600, 28_800, 43_200, _DAY)


def _grid(timeline: Timeline, columns: int) -> _Grid:
    span = timeline.end - timeline.start + 1
    if span < columns:
        return _Grid(start=timeline.start, buckets=span, seconds=1, repeat=columns // span)
    least = math.ceil(span / columns)
    seconds = next((step for step in _STEPS if step >= least), math.ceil(least / _DAY) * _DAY)
    return _Grid(start=timeline.start, buckets=math.ceil(span / seconds), seconds=seconds, repeat=1)


def running_pods(pods: tuple[tuple[int, int | None], ...], grid: _Grid) -> list[int]:
    """Per bucket, the most pods running at one instant of it (a pod runs over ``[start, end)``, at least
    its start second)."""
    changes = sorted(
        [(started, 1) for started, _ in pods]
        + [(max(ended, started + 1), -1) for started, ended in pods if ended is not None],
    )  # at one instant, ends (-1) sort before starts: a pod that ends as another starts is not counted twice
    peaks: list[int] = []
    index = running = 0
    for bucket in range(grid.buckets):
        begin = grid.start + bucket * grid.seconds
        while index < len(changes) and changes[index][0] <= begin:
            running += changes[index][1]
            index += 1
        peak = running
        while index < len(changes) and changes[index][0] < begin + grid.seconds:
            running += changes[index][1]
            index += 1
            peak = max(peak, running)
        peaks.append(peak)
    return peaks


def _bars(peaks: list[int], most: int, charset: Charset) -> list[str]:
    levels = len(charset.levels)
    return [" " if not p else charset.levels[math.ceil(p * levels / most) - 1] for p in peaks]


def _marks(owner: OwnerActivity, grid: _Grid, charset: Charset) -> list[str]:
    marks = [" "] * grid.buckets
    for ts in owner.revised:
        bucket = grid.bucket_of(ts)
        if bucket is not None:
            marks[bucket] = charset.revised
    for ts in owner.applied:
        bucket = grid.bucket_of(ts)
        if bucket is not None and marks[bucket] in (" ", charset.revised):
            marks[bucket] = charset.applied
    for ts in owner.deleted:
        bucket = grid.bucket_of(ts)
        if bucket is not None:
            marks[bucket] = charset.deleted
    return marks


def _fit(owner: OwnerActivity, width: int, charset: Charset) -> str:
    """The owner's label, else without its kind, else its name, cut short when even that is too long."""
    for label in (owner.label, owner.ns_name, owner.ns_name.rpartition("/")[2]):
        if len(label) <= width:
            return label
    return label[: width - 1] + charset.ellipsis


def render_timeline(timeline: Timeline | None, *, title: str, width: int, charset: Charset) -> list[str]:
    """The chart as lines of at most ``width`` characters (``width`` >= MIN_WIDTH), legend included.

    An owner with pods gets a row of bars and, when it has spec changes, a row of marks under it; an owner
    without pods gets one row, its marks, with ``-`` for its most running pods."""
    if width < MIN_WIDTH:
        raise ValueError(f"a timeline needs at least {MIN_WIDTH} columns, not {width}")
    if timeline is None:
        return _wrapped([title, "No events: nothing to draw."], width)
    window = (f"Window {format_time(timeline.start)} .. {format_time(timeline.end)} "
              f"({format_duration(timeline.end - timeline.start)})")
    if not timeline.owners:
        quiet = f" ({counted(timeline.quiet, 'object')} in its start state)" if timeline.quiet else ""
        return _wrapped([title, window, f"No pods and no spec changes in the window{quiet}."], width)
    head = _wrapped([title, window, _owners_line(timeline)], width) + [""]
    rows, grid = _chart(timeline, width, charset)
    revised = f"{charset.revised} labels, annotations or data changed   " if any(o.revised for o in timeline.owners) else ""
    legend = _wrapped([
        f"{charset.levels} running pods; {charset.levels[-1]} = the row's most, at its left",
        f"{charset.applied} spec applied   {revised}{charset.deleted} deleted   {grid.describe()}",
        *_axis_legend(next(r for r in rows if charset.left_corner in r), charset),
    ], width)
    return head + rows + [""] + legend


def _axis_legend(axis: str, charset: Charset) -> list[str]:
    """What the time axis's marks mean, for those it shows."""
    return ([f"{charset.gap} no recorder, or a watch down: changes then were caught up later, at that time"] if charset.gap in axis else []) + \
        ([f"{charset.exact} no recorder, but exact from the audit log (backfill): changes at their logged time"] if charset.exact in axis else [])


def _owners_line(timeline: Timeline) -> str:
    shown = len(timeline.owners)
    owners = (f"{counted(shown, 'owner')} with pods or spec changes" if shown == timeline.active
              else f"The top {shown} of {timeline.active} owners by pods and spec changes")
    quiet = f"; {counted(timeline.quiet, 'object')} without either {'is' if timeline.quiet == 1 else 'are'} not shown" if timeline.quiet else ""
    return f"{owners}{quiet}"


def _chart(timeline: Timeline, width: int, charset: Charset) -> tuple[list[str], _Grid]:
    """The owners' rows, the time axis and its labels; and the grid they were drawn on."""
    # an owner's most running pods is the same however the window is cut into columns: count it on one
    most = {o: max(running_pods(o.pods, _grid(timeline, 1)), default=0) for o in timeline.owners}
    digits = max(len(str(n)) for n in most.values())
    labels = {o: _fit(o, max(_MIN_LABEL, width - digits - 4 - _MIN_COLUMNS), charset) for o in timeline.owners}
    label_width = max(len(label) for label in labels.values())
    grid = _grid(timeline, width - label_width - digits - 4)
    pad = " " * (label_width + 1 + digits + 1)
    rows: list[str] = []
    for owner in timeline.owners:
        label = f"{labels[owner]:<{label_width}}"
        marks = "".join(mark + " " * (grid.repeat - 1) for mark in _marks(owner, grid, charset))
        if not owner.pods:
            rows.append(f"{label} {'-':>{digits}} {charset.edge}{marks}{charset.edge}")
            continue
        bars = "".join(bar * grid.repeat for bar in _bars(running_pods(owner.pods, grid), most[owner], charset))
        rows.append(f"{label} {most[owner]:>{digits}} {charset.edge}{bars}{charset.edge}")
        if owner.applied or owner.deleted or owner.revised:
            rows.append(f"{pad}{charset.edge}{marks}{charset.edge}")
    axis = "".join(_axis_mark(timeline, grid, bucket, charset) * grid.repeat for bucket in range(grid.buckets))
    rows.append(f"{pad}{charset.left_corner}{axis}{charset.right_corner}")
    rows += _axis_labels(timeline.start, grid.end, pad=pad, span=grid.columns + 2)
    return rows, grid


def _in_gap(gaps: tuple[tuple[float, float], ...], grid: _Grid, bucket: int) -> bool:
    begin = grid.start + bucket * grid.seconds
    return any(since < begin + grid.seconds and until > begin for since, until in gaps)


def _axis_mark(timeline: Timeline, grid: _Grid, bucket: int, charset: Charset) -> str:
    """A column of the time axis: observed live, blind (a gap), or blind but exact from the audit log (all of its blind
    time inside the log's exact stretches)."""
    if not _in_gap(timeline.gaps, grid, bucket):
        return charset.axis
    begin, end = grid.start + bucket * grid.seconds, grid.start + (bucket + 1) * grid.seconds
    blind = [(max(a, begin), min(b, end)) for a, b in timeline.gaps if a < end and b > begin]
    exact = all(any(x <= a and b <= y for x, y in timeline.exact) for a, b in blind)
    return charset.exact if exact else charset.gap


def _wrapped(lines: list[str], width: int) -> list[str]:
    return [part for line in lines for part in textwrap.wrap(line, width, break_on_hyphens=False)]


def _axis_labels(start: int, end: int, *, pad: str, span: int) -> list[str]:
    """The left and right edges' times under the frame's corners: in full when both fit, else the times of
    day (the window line above has the dates), else one under the other."""
    left, right = format_time(start), format_time(end)
    if len(left) + 1 + len(right) > span:
        left, right = left[11:], right[11:]
    if len(left) + 1 + len(right) <= span:
        return [f"{pad}{left}{' ' * (span - len(left) - len(right))}{right}"]
    return [f"{pad}{left}", f"{pad}{right:>{span}}"]


def draw(trace: Trace, *, title: str, top: int, width: int, charset: Charset, start: int | None = None, end: int | None = None,
         gaps: tuple[tuple[float, float], ...] = (), exact: tuple[tuple[float, float], ...] = ()) -> str:
    """``build_timeline`` then ``render_timeline``: the chart of ``trace`` as one text."""
    timeline = build_timeline(trace, top=top, start=start, end=end, gaps=gaps, exact=exact)
    return "\n".join(render_timeline(timeline, title=title, width=width, charset=charset))
