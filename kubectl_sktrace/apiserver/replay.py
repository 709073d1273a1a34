"""``serve --replay-speed N``: the recorded changes after T applied to the served state as the history's clock, T plus
the wall time since the first watch times N, reaches each; the clock stops at the present. It starts at the first
watch, so that the first watcher (``kubectl get -w``, k9s, a controller: each lists, then watches from the list's
version) sees the past unfold from T whenever it comes, not from wherever the clock got to meanwhile.

The changes are read a window at a time (``WINDOW`` seconds of history ahead of the clock), each window in a cache
opened anew and read at once: a running recorder is never waited for, nor waits. Once a window reaches the present,
the replay follows the recorder's news (``Past.follow``: rows written after the last row seen before that window was
read, each applied as its second comes), so that what a recorder commits while the server runs comes too; a row both
windows and news hold is applied once. Status changes come the same way (``Past.status_news``), each a MODIFIED of its
own with that change's state, so that a watcher sees readiness move as it did live.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any, Callable, NamedTuple

from kubectl_sktrace.apiserver.state import Served
from kubectl_sktrace.errors import SktraceError
from kubectl_sktrace.model import GVK, POD, CacheUrl
from kubectl_sktrace.past.objects import Scope
from kubectl_sktrace.past.printing import with_status
from kubectl_sktrace.past.state import DELETED, Change, Past, PastObject, PodLife
from kubectl_sktrace.store import open_cache_readonly

WINDOW = 60.0
POLL = 1.0  # seconds between two looks for a recorder's news, once the replay reached the present


def replay(location: str | CacheUrl, state: Served, *, at: float, speed: float, stop: threading.Event,
           warn: Callable[[str], None], clock: Callable[[], float] = time.monotonic) -> None:
    """Apply the changes after ``at`` at ``speed`` times their pace, from the first watch on, until ``stop`` is set. A
    read the cache refuses (a recorder began writing a file read as unchanging, a database gone) is said once and
    tried again after ``POLL`` seconds: the state served stays as it was meanwhile."""
    while not state.watched.wait(0.2):
        if stop.is_set():
            return
    player = _Player(location, state, at=at, speed=speed, stop=stop, clock=clock)
    said = ""
    while not stop.is_set():
        try:
            player.step()
        except SktraceError as exc:
            if str(exc) != said:
                said = str(exc)
                warn(f"the replay could not read the cache ({said}); trying again")
            stop.wait(POLL)


class _Player:
    """The replay's place: the history's clock, the end of what was read, and the recorder's news once at the present."""

    def __init__(self, location: str | CacheUrl, state: Served, *, at: float, speed: float, stop: threading.Event,
                 clock: Callable[[], float]) -> None:
        self.location, self.state, self.at, self.speed, self.stop, self.clock = location, state, at, speed, stop, clock
        self.started, self.cursor = clock(), at
        self.after_row: int | None = None  # following the recorder's news, after this row
        self.after_status = 0  # and after this status change
        self.seen: set[int] = set()  # the rows of the window that reached the present

    def due(self, step: Step) -> float:
        return self.started + (step.second - self.at) / self.speed

    def step(self) -> None:
        """One read (a window, or the recorder's news) and its changes applied as their seconds come."""
        now = min(self.at + (self.clock() - self.started) * self.speed, time.time())
        self.state.advance(now)
        if self.after_row is not None:
            with open_cache_readonly(self.location) as cache:
                history = Past(cache)
                news, after_row = history.follow(self.state.kinds, Scope(), after_row=self.after_row)
                statuses, self.after_status = history.status_news(self.state.kinds, Scope(), after_status=self.after_status)
                changes = _steps(history, [c for c in news if c.row_id not in self.seen], statuses)
            self.after_row = after_row
            if not _apply(self.state, changes, due=self.due, clock=self.clock, stop=self.stop):
                self.stop.wait(POLL)
            return
        if math.floor(now) <= math.floor(self.cursor):
            self.stop.wait(0.2)
            return
        with open_cache_readonly(self.location) as cache:
            mark = Past(cache).last_row()  # before the window's Past: whatever it misses was written after this row
            marked = Past(cache).last_status_row()
            history = Past(cache)
            end = min(now + WINDOW * self.speed, history.now)
            window = list(history.changes(self.state.kinds, Scope(), after=self.cursor, until=end))
            statuses, last_status = history.status_news(self.state.kinds, Scope(), after=self.cursor, until=end)
            changes = _steps(history, window, statuses)
        if end >= history.now:
            self.after_row, self.seen = mark, {c.row_id for c in window}
            self.after_status = max(marked, last_status)
        _apply(self.state, changes, due=self.due, clock=self.clock, stop=self.stop)
        self.cursor = end  # read ahead: the history's clock (``Served.now``, the ages) moves with the wall's, above


class Step(NamedTuple):
    """One change to apply at its second: the object as served (None: deleted), a pod's lifecycle, its reduced status."""

    second: int
    gvk: GVK
    namespace: str
    name: str
    obj: dict[str, Any] | None
    pod: PodLife | None
    status: dict[str, Any] | None


def _steps(history: Past, changes: list[Change], statuses: list[PastObject]) -> list[Step]:
    """The changes (spec, labels...: as at each one's second) and the status changes (each with its own state), in time
    order, a version before a status of the same second."""
    steps = [Step(c.second, c.kind.gvk, c.key.namespace, c.key.name, *_at(history, c)) for c in changes]
    steps += [Step(o.second, o.kind.gvk, o.key.namespace, o.key.name, with_status(o.obj, o.status), o.pod if o.kind.gvk == POD else None,
                   o.status) for o in statuses]
    return sorted(steps, key=lambda step: step.second)


def _apply(state: Served, steps: list[Step], *, due: Callable[[Step], float], clock: Callable[[], float], stop: threading.Event) -> bool:
    """Each change applied when its second comes; whether there was any."""
    for step in steps:
        if stop.wait(max(0.0, due(step) - clock())):
            return True
        state.apply(gvk=step.gvk, namespace=step.namespace, name=step.name, obj=step.obj, ts=step.second, pod=step.pod, status=step.status)
    return bool(steps)


def _at(history: Past, change: Change) -> tuple[dict[str, Any] | None, PodLife | None, dict[str, Any] | None]:
    """As at the second of its change: the object as served (with its status where known), a pod's recorded lifecycle,
    its reduced status; all None for a deletion."""
    if change.type == DELETED:
        return None, None, None
    found = history.object_at(change.kind, change.key.namespace, change.key.name, change.second)
    if found is None or found.uid != change.uid:
        return change.obj, None, None
    return with_status(change.obj, found.status), found.pod if change.kind.gvk == POD else None, found.status
