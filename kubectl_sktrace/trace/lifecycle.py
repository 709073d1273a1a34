"""Pod lifecycles: derived from container states, updated only along SimKube's partial order. Pure.

A lifecycle is ``Empty`` (no container has started), ``Running(start)`` or ``Finished(start, end)``, in
integer Unix seconds (fractions truncated, as SimKube does).

Derivation (docs/spec.md §4), from ``status.initContainerStatuses`` and ``status.containerStatuses`` only —
never the pod phase or its creation time, which include time spent pending:

- start = the earliest ``startedAt`` of any init or regular container whose current ``state`` is
  ``running`` or ``terminated``;
- end = the latest ``finishedAt`` of any terminated container (init ones included, as SimKube does;
  they always end before regular containers start), counted only when every regular container of the
  pod has terminated.

Where this guesses: "every regular container" means every name in ``spec.containers``; a pod without a
container list in its spec (never seen from a real server) falls back to the names of its
``containerStatuses``. A terminated state without ``startedAt`` (a container that never ran) adds no
start but its ``finishedAt`` still counts. ``lastState`` is ignored: a restarted container reports a
later ``startedAt``, and the update order below keeps the first start.

Updates (``merge_lifecycle``) follow SimKube's partial order: Empty → Running(s) → Finished(s, e) with
the same start. Anything else — another start, one Finished to a different Finished, Finished back to
Running — is refused with a one-line reason and the stored value is kept. An Empty update carries no
information and is ignored without a reason. Empty is never stored.

When a pod disappears (``on_pod_gone``), a Running lifecycle is closed at the deletion time; the end is
never put before the start (a container clock ahead of the recorder's would otherwise do it).

``as_of``, ``overlaps`` and ``clamp`` are export's window rules (docs/spec.md §7 step 5). A trace of a window that
has ended must not change when it is exported again later, so export first takes each lifecycle as it stood
at the window end (``as_of``): an end at or after it had not happened yet, and the pod is still Running
there; a start at or after it, not started. Only then are the overlap and the clamp applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubectl_sktrace.timeparse import parse_api_time


@dataclass(frozen=True)
class Lifecycle:
    """Empty ``(None, None)``, Running ``(s, None)`` or Finished ``(s, e)``."""

    start: int | None
    end: int | None

    @property
    def is_empty(self) -> bool:
        return self.start is None

    @property
    def is_running(self) -> bool:
        return self.start is not None and self.end is None

    @property
    def is_finished(self) -> bool:
        return self.start is not None and self.end is not None

    def __str__(self) -> str:
        if self.start is None:
            return "Empty"
        if self.end is None:
            return f"Running({self.start})"
        return f"Finished({self.start}, {self.end})"


EMPTY = Lifecycle(None, None)


def running(start: int) -> Lifecycle:
    return Lifecycle(start, None)


def finished(start: int, end: int) -> Lifecycle:
    return Lifecycle(start, end)


def _seconds(value: object) -> int | None:
    """Whole Unix seconds of a container time: SimKube truncates to the second."""
    seconds = parse_api_time(value)
    return None if seconds is None else int(seconds)


def _start_end(container_status: dict[str, Any]) -> tuple[int | None, int | None, bool]:
    """(start, end, terminated) of one container's current state."""
    state = container_status.get("state")
    if not isinstance(state, dict):
        return None, None, False
    run = state.get("running")
    if isinstance(run, dict):
        return _seconds(run.get("startedAt")), None, False
    term = state.get("terminated")
    if isinstance(term, dict):
        return _seconds(term.get("startedAt")), _seconds(term.get("finishedAt")), True
    return None, None, False


def derive_lifecycle(pod: dict[str, Any]) -> Lifecycle:
    """The lifecycle a pod's container states show right now (see the module docstring). One pass over its containers
    (every watch event of a pod comes through here)."""
    status = pod.get("status")
    if not isinstance(status, dict):
        return EMPTY
    start, end, terminated, reported = _containers(status)
    if start is None:
        return EMPTY
    if not terminated:  # the common case: running, whatever the spec names
        return Lifecycle(start, None)
    spec = pod.get("spec")
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if isinstance(containers, list) and containers:
        expected = {c.get("name") for c in containers if isinstance(c, dict)}
    else:
        expected = set(reported)
    if not expected or not expected <= terminated:
        return Lifecycle(start, None)
    return Lifecycle(start, end)


def _containers(status: dict[str, Any]) -> tuple[int | None, int | None, set[Any], list[Any]]:
    """(the earliest start, the latest end) of the init and regular containers, the names of the regular ones that
    terminated, and of every regular one reported."""
    start: int | None = None
    end: int | None = None
    terminated: set[Any] = set()
    reported: list[Any] = []
    for field in ("initContainerStatuses", "containerStatuses"):
        listed = status.get(field)
        if not isinstance(listed, list):
            continue
        regular = field == "containerStatuses"
        for each in listed:
            if not isinstance(each, dict):
                continue
            began, ended, done = _start_end(each)
            if began is not None and (start is None or began < start):
                start = began
            if ended is not None and (end is None or ended > end):
                end = ended
            if regular:
                reported.append(each.get("name"))
                if done:
                    terminated.add(each.get("name"))
    return start, end, terminated, reported


def merge_lifecycle(old: Lifecycle, new: Lifecycle) -> tuple[Lifecycle, str | None]:
    """(value to keep, reason it was refused or None): accept only Empty → Running(s) → Finished(s, e)."""
    if new.is_empty or new == old:
        return old, None
    if old.is_empty:
        return new, None
    if old.is_running and new.start == old.start:
        return new, None
    return old, f"refused lifecycle update {old} -> {new}: only Empty -> Running(s) -> Finished(s, e) with the same start is allowed; keeping {old}"


def on_pod_gone(current: Lifecycle, *, ts: int) -> Lifecycle:
    """The lifecycle after the pod was deleted (or found missing) at ``ts``: Running(s) → Finished(s, ts)."""
    if current.start is None or current.end is not None:
        return current
    return Lifecycle(current.start, max(ts, current.start))


def as_of(lc: Lifecycle, *, at: float) -> Lifecycle:
    """The lifecycle as it stood at time ``at``: a start or end second counts only when the whole second lies
    before ``at`` (``t + 1 <= at``; for a whole-second ``at``, ``t < at``), else the pod had not started
    (Empty) or had not finished (Running) by then."""
    if lc.start is None or lc.start + 1 > at:
        return EMPTY
    if lc.end is not None and lc.end + 1 > at:
        return Lifecycle(lc.start, None)
    return lc


def overlaps(lc: Lifecycle, *, start_ts: int, end_ts: int) -> bool:
    """Whether the pod ran in ``[start_ts, end_ts)``: Running(s) with s < end; Finished(s, e) with s < end, e >= start."""
    if lc.start is None or lc.start >= end_ts:
        return False
    return lc.end is None or lc.end >= start_ts


def clamp(lc: Lifecycle, *, start_ts: int) -> Lifecycle:
    """The lifecycle with its start moved up to ``start_ts`` when it began earlier (Empty unchanged)."""
    if lc.start is None or lc.start >= start_ts:
        return lc
    return Lifecycle(start_ts, lc.end)


def to_trace_entry(lc: Lifecycle) -> dict[str, Any]:
    """``{"Running": s}`` or ``{"Finished": [s, e]}``; Empty has no trace form (it is never stored)."""
    if lc.start is None:
        raise ValueError("an Empty lifecycle has no trace entry: it is never stored")
    if lc.end is None:
        return {"Running": lc.start}
    return {"Finished": [lc.start, lc.end]}
