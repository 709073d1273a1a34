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
from typing import Callable

from kubectl_sktrace.apiserver.state import Served
from kubectl_sktrace.model import POD, CacheUrl
from kubectl_sktrace.past.objects import Scope
from kubectl_sktrace.past.state import DELETED, Change, Past, PodLife
from kubectl_sktrace.store import open_cache_readonly

WINDOW = 60.0
POLL = 1.0  # seconds between two looks for a recorder's news, once the replay reached the present


def replay(location: str | CacheUrl, state: Served, *, at: float, speed: float, stop: threading.Event,
           clock: Callable[[], float] = time.monotonic) -> None:
    """Apply the changes after ``at`` at ``speed`` times their pace, from the first watch on, until ``stop`` is set."""
    while not state.watched.wait(0.2):
        if stop.is_set():
            return
    started, cursor = clock(), at
    after_row: int | None = None  # following the recorder's news, after this row
    seen: set[int] = set()  # the rows of the window that reached the present

    def due(change: Change) -> float:
        return started + (change.second - at) / speed

    while not stop.is_set():
        now = min(at + (clock() - started) * speed, time.time())
        state.advance(now)
        if after_row is not None:
            with open_cache_readonly(location) as cache:
                history = Past(cache)
                news, after_row = history.follow(state.kinds, Scope(), after_row=after_row)
                changes = [(c, _pod(history, c)) for c in news if c.row_id not in seen]
            if not _apply(state, changes, due=due, clock=clock, stop=stop):
                stop.wait(POLL)
            continue
        if math.floor(now) <= math.floor(cursor):
            stop.wait(0.2)
            continue
        with open_cache_readonly(location) as cache:
            mark = Past(cache).last_row()  # before the window's Past: whatever it misses was written after this row
            history = Past(cache)
            end = min(now + WINDOW * speed, history.now)
            changes = [(c, _pod(history, c)) for c in history.changes(state.kinds, Scope(), after=cursor, until=end)]
        if end >= history.now:
            after_row, seen = mark, {c.row_id for c, _ in changes}
        _apply(state, changes, due=due, clock=clock, stop=stop)
        cursor = end  # read ahead: the history's clock (``Served.now``, the ages) moves with the wall's, above


def _apply(state: Served, changes: list[tuple[Change, PodLife | None]], *, due: Callable[[Change], float], clock: Callable[[], float],
           stop: threading.Event) -> bool:
    """Each change applied when its second comes; whether there was any."""
    for change, pod in changes:
        if stop.wait(max(0.0, due(change) - clock())):
            return True
        obj = None if change.type == DELETED else change.obj
        state.apply(gvk=change.kind.gvk, namespace=change.key.namespace, name=change.key.name, obj=obj, ts=change.second, pod=pod)
    return bool(changes)


def _pod(history: Past, change: Change) -> PodLife | None:
    """A pod's recorded lifecycle, as at the second of its change (None for any other kind, or a deletion)."""
    if change.kind.gvk != POD or change.type == DELETED:
        return None
    found = history.object_at(change.kind, change.key.namespace, change.key.name, change.second)
    return None if found is None else found.pod
