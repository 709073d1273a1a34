"""``prune --before TIME``: shrink the cache without changing any export that starts at or after TIME.

What is kept and why is documented in ``store/pruning.py``. Prune writes, so it takes the cache's writer
lock: it never runs while a recorder records into the same cache (the recorder would be holding the lock,
and prune says so), and a recorder started during a prune waits for nothing but is refused the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kubectl_sktrace.errors import CacheError
from kubectl_sktrace.store import WriterLock, open_cache
from kubectl_sktrace.store.pruning import PruneResult, prune_before
from kubectl_sktrace.timeparse import format_time


@dataclass(frozen=True)
class PruneReport:
    cache: str
    before: int
    result: PruneResult

    def as_mapping(self) -> dict[str, object]:
        r = self.result
        return {
            "cache": self.cache,
            "before": format_time(self.before),
            "eventsRemoved": r.events_removed,
            "eventsKeptBefore": r.events_kept_before,
            "podsRemoved": r.pods_removed,
            "bytesBefore": r.bytes_before,
            "bytesAfter": r.bytes_after,
            "bytesFreed": r.freed_bytes,
            "vacuumed": r.vacuumed,
        }


def prune_cache(path: str, *, before: float) -> PruneReport:
    """Prune the cache at ``path`` of history before ``before`` (Unix seconds, rounded down)."""
    cutoff = math.floor(before)
    with open_cache(path, create=False) as cache:
        lock = WriterLock(path)
        try:
            lock.acquire()
        except CacheError:
            holder = _lock_holder(lock)
            raise CacheError(
                f"a recorder (pid {holder}) is writing to {path}; prune cannot run alongside it: stop the recorder, then prune"
            ) from None
        try:
            result = prune_before(cache, before=cutoff)
        finally:
            lock.release()
    return PruneReport(cache=str(path), before=cutoff, result=result)


def _lock_holder(lock: WriterLock) -> str:
    try:
        return lock.path.read_text().strip() or "unknown"
    except OSError:
        return "unknown"
