"""The rate of changes per kind: read from the counts a cache keeps (schema 0010, ``viewing.rate_counts``), or for an
older cache (the view never migrates) counted per minute once per server and kept in memory.

No index of the cache counts rows by time cheaply: the database walks every row of a range (``events_ts``), about 2 µs a
row, so a week of a busy cluster (a million rows) costs seconds however it is asked. The server therefore counts the
history once, a day at a time, in a background thread (``RateIndex.fill``) into per-minute counts of each kind and
operation: 8 weeks are 80,640 minutes, a few hundred kB per kind. Every histogram and every window's counts are then
sums over those minutes; what is not counted yet (the last minutes while a recorder writes, or a range asked before the
thread reached it) is counted by the database directly when the range is small (``DIRECT_SECONDS``), else answered as
far as it is known and marked ``complete: false`` (the page asks again). The partial minutes at a window's edges are
counted directly, so a window's figures are exact.

History is final once written (docs/architecture.md), so counted minutes stay right while a recorder appends after them;
a ``prune`` while the view runs leaves the pruned minutes counted until the view restarts.
"""

from __future__ import annotations

import threading
from array import array
from typing import Callable, Iterator

from kubectl_sktrace.store import Cache, viewing

MINUTE = 60
CHUNK_SECONDS = 86400
DIRECT_SECONDS = 6 * 3600
"""A range up to this long is counted by the database when its minutes are not all counted yet (~50k rows at 2/s)."""

Opener = Callable[[], Cache]
Series = tuple[str, int, int]  # (gvk, op, inferred)


class RateIndex:
    """Per-minute counts of ``[begin, end)`` (whole minutes, from the epoch), filled by ``fill`` in time order."""

    def __init__(self, *, open_cache: Opener, begin: float, end: float) -> None:
        self.open_cache = open_cache
        self.begin = int(begin // MINUTE) * MINUTE
        self.end = -int(-end // MINUTE) * MINUTE
        self.size = max(1, (self.end - self.begin) // MINUTE)
        self.counts: dict[Series, array[int]] = {}
        self.filled_until = self.begin  # minutes before this are counted
        self.lock = threading.Lock()
        self.error: str | None = None

    def fill(self, *, stop: threading.Event | None = None) -> None:
        """Count the history a day at a time (each chunk one query in its own read-only connection)."""
        try:
            with self.open_cache() as cache:
                for start in range(self.begin, self.end, CHUNK_SECONDS):
                    if stop is not None and stop.is_set():
                        return
                    end = min(self.end, start + CHUNK_SECONDS)
                    self._add(cache, start=start, end=end)
        except Exception as exc:  # the page still draws, counting each range itself
            self.error = f"{type(exc).__name__}: {exc}"

    def _add(self, cache: Cache, *, start: int, end: int) -> None:
        rows = viewing.minute_counts(cache, start=start, end=end, width=MINUTE)
        first = (start - self.begin) // MINUTE
        with self.lock:
            for minute, gvk, op, inferred, n in rows:
                series = self.counts.get((gvk, op, inferred))
                if series is None:
                    series = self.counts[(gvk, op, inferred)] = array("q", bytes(8 * self.size))
                series[first + minute] += n
            self.filled_until = end

    @property
    def progress(self) -> float:
        """The share of the history counted so far."""
        return (self.filled_until - self.begin) / max(1, self.end - self.begin)

    def sums(self, *, start: int, end: int, width: int) -> Iterator[tuple[int, str, int, int, int]]:
        """``(bucket, gvk, op, inferred, n)`` over buckets of ``width`` (whole minutes) from ``start``, of counted minutes."""
        first = max(start, self.begin)
        last = min(end, self.filled_until)
        per = width // MINUTE
        with self.lock:
            for (gvk, op, inferred), series in self.counts.items():
                for bucket_start in range(first - (first - start) % width, last, width):
                    i = (max(bucket_start, self.begin) - self.begin) // MINUTE
                    j = min((bucket_start + width - self.begin) // MINUTE, (last - self.begin) // MINUTE, i + per)
                    n = sum(series[i:j])
                    if n:
                        yield (bucket_start - start) // width, gvk, op, inferred, n


def bucket_rows(index: RateIndex | None, cache: Cache, *, start: int, end: int, width: int) -> tuple[list[tuple[int, str, int, int, int]], bool]:
    """The rows of ``viewing.minute_counts`` for ``[start, end)`` in buckets of ``width`` from ``start`` (a bucket may
    come in two rows), and whether they are complete: the minutes counted from the index, the rest by the database
    when it is little (recorded since the view started, or a short range), else left out (the page asks again)."""
    if viewing.has_rates(cache):
        return viewing.rate_counts(cache, start=start, end=end, width=width), True
    if index is None or width % MINUTE:
        return viewing.minute_counts(cache, start=start, end=end, width=width), True
    counted = min(end, index.filled_until)
    rows = list(index.sums(start=start, end=counted, width=width)) if counted > start else []
    rest = max(start, index.filled_until)
    if rest >= end:
        return rows, True
    uncounted_history = max(0, min(end, index.end) - rest)
    if uncounted_history > DIRECT_SECONDS:
        return rows, False
    return rows + viewing.minute_counts(cache, start=rest, end=end, width=width, origin=start), True


def window_rows(index: RateIndex | None, cache: Cache, *, start: int, end: int) -> list[tuple[int, str, int, int, int]]:
    """Every row of ``[start, end)`` counted exactly: the whole minutes from the index, the partial ones at the edges and
    the minutes not counted yet by the database."""
    if viewing.has_rates(cache):
        return viewing.rate_counts(cache, start=start, end=end, width=max(1, end - start))
    inner_start, inner_end = -(-start // MINUTE) * MINUTE, (end // MINUTE) * MINUTE
    if index is None or inner_end <= inner_start:
        return viewing.minute_counts(cache, start=start, end=end, width=max(1, end - start))
    rows: list[tuple[int, str, int, int, int]] = []
    for a, b in ((start, inner_start), (inner_end, end)):
        if b > a:
            rows += viewing.minute_counts(cache, start=a, end=b, width=b - a)
    counted_end = max(inner_start, min(inner_end, index.filled_until))
    if counted_end > inner_start and index.begin <= inner_start:
        rows += [(0, g, o, f, n) for _, g, o, f, n in index.sums(start=inner_start, end=counted_end, width=counted_end - inner_start)]
    else:
        counted_end = inner_start
    if inner_end > counted_end:
        rows += viewing.minute_counts(cache, start=counted_end, end=inner_end, width=inner_end - counted_end)
    return [(0, g, o, f, n) for _, g, o, f, n in rows]


