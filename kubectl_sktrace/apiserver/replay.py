"""``serve --replay-speed N``: the recorded changes after T applied to the served state as the history's clock, T plus
the wall time since the first watch times N, reaches each; the clock stops at the present. It starts at the first
watch, so that the first watcher (``kubectl get -w``, k9s, a controller: each lists, then watches from the list's
version) sees the past unfold from T whenever it comes, not from wherever the clock got to meanwhile.

The changes are read a window at a time (``WINDOW`` seconds of history ahead of the clock), each window in a cache
opened anew and read at once: a running recorder is never waited for, nor waits. Once a window reaches the present,
the replay follows the recorder's news (``Past.follow``: rows written after the last row seen before that window was
read, each applied as its second comes), so that what a recorder commits while the server runs comes too; a row both
windows and news hold is applied once.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any, Callable

from kubectl_sktrace.apiserver.state import Served
from kubectl_sktrace.errors import SktraceError
from kubectl_sktrace.model import POD, CacheUrl
from kubectl_sktrace.past.objects import Scope
from kubectl_sktrace.past.printing import with_status
from kubectl_sktrace.past.state import DELETED, Change, Past, PodLife
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
        self.seen: set[int] = set()  # the rows of the window that reached the present

    def due(self, change: Change) -> float:
        return self.started + (change.second - self.at) / self.speed

    def step(self) -> None:
        """One read (a window, or the recorder's news) and its changes applied as their seconds come."""
        now = min(self.at + (self.clock() - self.started) * self.speed, time.time())
        self.state.advance(now)
        if self.after_row is not None:
            with open_cache_readonly(self.location) as cache:
                history = Past(cache)
                news, after_row = history.follow(self.state.kinds, Scope(), after_row=self.after_row)
                changes = [(c, *_at(history, c)) for c in news if c.row_id not in self.seen]
            self.after_row = after_row
            if not _apply(self.state, changes, due=self.due, clock=self.clock, stop=self.stop):
                self.stop.wait(POLL)
            return
        if math.floor(now) <= math.floor(self.cursor):
            self.stop.wait(0.2)
            return
        with open_cache_readonly(self.location) as cache:
            mark = Past(cache).last_row()  # before the window's Past: whatever it misses was written after this row
            history = Past(cache)
            end = min(now + WINDOW * self.speed, history.now)
            changes = [(c, *_at(history, c)) for c in history.changes(self.state.kinds, Scope(), after=self.cursor, until=end)]
        if end >= history.now:
            self.after_row, self.seen = mark, {c[0].row_id for c in changes}
        _apply(self.state, changes, due=self.due, clock=self.clock, stop=self.stop)
        self.cursor = end  # read ahead: the history's clock (``Served.now``, the ages) moves with the wall's, above


Applied = tuple[Change, PodLife | None, dict[str, Any] | None, dict[str, Any] | None]


def _apply(state: Served, changes: list[Applied], *, due: Callable[[Change], float], clock: Callable[[], float], stop: threading.Event) -> bool:
    """Each change applied when its second comes; whether there was any."""
    for change, pod, obj, status in changes:
        if stop.wait(max(0.0, due(change) - clock())):
            return True
        state.apply(gvk=change.kind.gvk, namespace=change.key.namespace, name=change.key.name, obj=obj, ts=change.second, pod=pod,
                    status=status)
    return bool(changes)


def _at(history: Past, change: Change) -> tuple[PodLife | None, dict[str, Any] | None, dict[str, Any] | None]:
    """As at the second of its change: a pod's recorded lifecycle, the object as served (with its status where known),
    its reduced status; all None for a deletion."""
    if change.type == DELETED:
        return None, None, None
    found = history.object_at(change.kind, change.key.namespace, change.key.name, change.second)
    if found is None or found.uid != change.uid:
        return None, change.obj, None
    return found.pod if change.kind.gvk == POD else None, with_status(change.obj, found.status), found.status
