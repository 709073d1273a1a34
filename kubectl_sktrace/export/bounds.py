"""A window's bounds in the recorded history: where it may start (the cache's first second), what the export refuses
of it (a window after everything recorded, a misspelt namespace: refused alike by ``--dry-run``), and until when its
record is final (``history.known_until``, carried into a gap an audit log filled)."""

from __future__ import annotations

import math

from kubectl_sktrace.errors import CacheError, EmptyTraceError, UsageError
from kubectl_sktrace.export.advice import after_history, clamp_note, misspelt_namespaces
from kubectl_sktrace.export.options import ExportFilters
from kubectl_sktrace.store import Cache, backfill, history, status


def runs(cache: Cache) -> list[history.Run]:
    found = history.runs(cache)
    if not found:
        raise CacheError(f"cache {cache.path} holds no recording yet; record first with 'kubectl sktrace start'")
    return found


def refuse_what_export_refuses(cache: Cache, all_runs: list[history.Run], *, start_ts: int, end_ts: int, filters: ExportFilters) -> None:
    """A window after everything recorded, and namespaces asked for that look misspelt (``advice``), refused the same
    by the export and by its ``--dry-run``."""
    if start_ts > all_runs[-1].stopped:
        raise EmptyTraceError(after_history(start_ts=start_ts, end_ts=end_ts, last=all_runs[-1].stopped, running=cache.writer_active()))
    misspelt = misspelt_namespaces(filters.include_namespaces, status.recorded_namespaces(cache))
    if misspelt is not None:
        raise UsageError(misspelt)


def known_until(cache: Cache, all_runs: list[history.Run], *, end_ts: int) -> float:
    """Until when the window's record is final: ``history.known_until``, carried into a gap an audit log filled
    (``backfill.final_until``)."""
    known = history.known_until(all_runs, end=end_ts)
    return backfill.final_until(known, end=end_ts, fills=backfill.fills(cache)) if known < end_ts else known


def filled_before(cache: Cache) -> bool:
    """Whether ``backfill --before-first-run`` wrote the time before the cache's first run (a partial fill)."""
    return any(f.partial for f in backfill.fills(cache))


def clamped_start(all_runs: list[history.Run], *, start_ts: int, end_ts: int, filled_before: bool = False) -> tuple[int, list[str]]:
    """The window's start, moved to the cache's first second when it starts earlier (and the note saying so). What
    ``backfill --before-first-run`` wrote before it (``filled_before``) stays out: a partial fill knows only the objects
    that changed in its log, no state to start a trace from; the note says so, and who reads it."""
    history_start = math.floor(all_runs[0].started)  # the second the first run began in: no event of it is earlier
    if start_ts < history_start < end_ts:
        return history_start, [clamp_note(history_start=history_start, asked=start_ts, filled_before=filled_before)]
    return start_ts, []
