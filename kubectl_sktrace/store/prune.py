"""``prune --before TIME``: shrink the cache without changing any export that starts at or after TIME.

What is kept and why is documented in ``store/pruning.py``. Prune writes, so it takes the cache's writer
lock: it never runs while a recorder records into the same cache (the recorder would be holding the lock,
and prune says so), and a recorder started during a prune waits for nothing but is refused the same way.
``--dry-run`` only counts: it opens the cache read-only and takes no lock, so it runs beside a recorder.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kubectl_sktrace.errors import CacheError, UsageError
from kubectl_sktrace.model import CacheUrl
from kubectl_sktrace.store import history
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.store.opening import open_cache, open_cache_readonly
from kubectl_sktrace.store.pruning import (
    PrunePlan,
    PruneResult,
    plan_prune,
    prune_before,
)
from kubectl_sktrace.timeparse import format_time


@dataclass(frozen=True)
class PruneReport:
    cache: str
    before: int
    result: PruneResult | PrunePlan

    def as_mapping(self) -> dict[str, object]:
        r = self.result
        head: dict[str, object] = {"cache": self.cache, "before": format_time(self.before)}
        counts = {"eventsRemoved": r.events_removed, "eventsKeptBefore": r.events_kept_before, "podsRemoved": r.pods_removed,
                  "bytesBefore": r.bytes_before}
        if isinstance(r, PrunePlan):
            return {**head, "dryRun": True, **counts}
        return {**head, **counts, "bytesAfter": r.bytes_after, "bytesFreed": r.freed_bytes, "bytesReusable": r.reusable_bytes,
                "vacuumed": r.vacuumed}


_WORDS = {
    "dryRun": "dry run", "eventsRemoved": "events removed", "eventsKeptBefore": "events kept before", "podsRemoved": "pods removed",
    "bytesBefore": "bytes before", "bytesAfter": "bytes after", "bytesFreed": "bytes freed", "bytesReusable": "bytes reusable",
}


def for_people(mapping: dict[str, object]) -> dict[str, object]:
    """``prune``'s table: the mapping's keys in words and yes/no for its flags (json and yaml keep the mapping)."""
    return {_WORDS.get(key, key): ("yes" if value else "no") if isinstance(value, bool) else value for key, value in mapping.items()}


def prune_cache(path: str | CacheUrl, *, before: float, dry_run: bool = False, now: float | None = None) -> PruneReport:
    """Prune the cache at ``path`` of history before ``before`` (Unix seconds, rounded down); with
    ``dry_run``, only count what would go. With ``now``, a cut later than both now and the cache's last record is
    refused: it would cut what a recorder writes next too, and leave no window to export until then."""
    cutoff = math.floor(before)
    if dry_run:
        with open_cache_readonly(path) as cache:
            _refuse_a_cut_to_come(cache, cutoff, now)
            return PruneReport(cache=str(cache.path), before=cutoff, result=plan_prune(cache, before=cutoff))
    with open_cache(path, create=False) as cache:
        _refuse_a_cut_to_come(cache, cutoff, now)
        lock = cache.writer_lock()
        try:
            lock.acquire()
        except CacheError:
            raise CacheError(
                f"a recorder ({lock.holder()}) is writing to {cache.path}; prune cannot run alongside it: stop the recorder, then prune"
            ) from None
        try:
            result = prune_before(cache, before=cutoff)
        finally:
            lock.release()
        where = str(cache.path)
    return PruneReport(cache=where, before=cutoff, result=result)


def _refuse_a_cut_to_come(cache: Cache, cutoff: int, now: float | None) -> None:
    if now is None:
        return
    runs = history.runs(cache)
    last = max(now, runs[-1].stopped if runs else now)
    if cutoff > last:
        raise UsageError(f"--before {format_time(cutoff)} is in the future (it is {format_time(now)}); prune cuts the past: "
                         "pass a time before now, like -7d")
