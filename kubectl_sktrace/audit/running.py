"""``backfill`` wired: the cache opened for writing under its writer lock, the log read, the gaps filled, and what was
done told for people. The command line (``cli/backfilling.py``) only parses its flags and calls ``run``.

Bad lines are skipped, counted and named (the first ten, with their line numbers) on stderr; the rest of the log is
used. A log of which no line is an audit Event is an error (exit 1), and writes nothing.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import IO, Callable, ContextManager, Sequence

from kubectl_sktrace.audit.backfill import GapReport, Outcome, check_same_cluster, fill, owner_kinds, wanted_kinds
from kubectl_sktrace.audit.check import Disagreement, check, live_spans
from kubectl_sktrace.audit.collect import Collected, stamp, collect
from kubectl_sktrace.audit.sources import expand
from kubectl_sktrace.errors import CacheError, UsageError
from kubectl_sktrace.model import CacheUrl, ObjKey
from kubectl_sktrace.plural import counted
from kubectl_sktrace.store.backfill import fills, gaps
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.store.opening import open_cache, open_cache_readonly
from kubectl_sktrace.timeparse import format_duration, format_time


@dataclass(frozen=True)
class BackfillResult:
    cache: str
    collected: Collected
    outcome: Outcome


def run(location: str | CacheUrl, *, paths: Sequence[str], before_first: bool, force: bool, stdin: IO[bytes],
        open_url: Callable[[str], ContextManager[IO[bytes]]], is_url: Callable[[str], bool]) -> BackfillResult:
    """Fill the cache at ``location`` from the logs ``paths`` (files, folders, ``-``, URLs)."""
    sources = expand(paths, stdin=stdin, open_url=open_url, is_url=is_url)
    with open_cache(location, create=False) as cache:
        lock = cache.writer_lock()
        try:
            lock.acquire()
        except CacheError:
            raise CacheError(f"a recorder ({lock.holder()}) is writing to {cache.path}; backfill cannot run alongside it: "
                             "stop the recorder, then backfill") from None
        try:
            wanted, configs = wanted_kinds(cache)
            within = [(g.since, g.reach) for g in gaps(cache, before_first=before_first)]
            collected = collect(sources, wanted=wanted, within=within, owner_kinds=owner_kinds(configs), where=_regions(cache))
            if collected.lines and collected.bad == collected.lines:
                source, line, reason = collected.bad_shown[0]
                raise UsageError(f"no line of the audit log is an audit Event ({source} line {line}: {reason}); nothing was "
                                 "written: pass the API server's log (--audit-log-format json)")
            check_same_cluster(cache, collected, force=force)
            outcome = fill(cache, collected, configs=configs, before_first=before_first)
        finally:
            with contextlib.suppress(Exception):
                lock.release()
        return BackfillResult(str(cache.path), collected, outcome)


def run_check(location: str | CacheUrl, *, paths: Sequence[str], stdin: IO[bytes], open_url: Callable[[str], ContextManager[IO[bytes]]],
              is_url: Callable[[str], bool]) -> tuple[Collected, int, list[Disagreement]]:
    """``--check``: the logs compared with the time the cache observed live; the cache is only read."""
    sources = expand(paths, stdin=stdin, open_url=open_url, is_url=is_url)
    with open_cache_readonly(location) as cache:
        wanted, configs = wanted_kinds(cache)
        spans = live_spans(cache)
        collected = collect(sources, wanted=wanted, within=spans, owner_kinds=owner_kinds(configs), where=lambda at: "outside time observed live")
        checked, found = check(cache, collected, spans=spans, configs=configs)
    return collected, checked, found


def check_lines(collected: Collected, checked: int, found: list[Disagreement]) -> list[str]:
    """What ``--check`` found, for people."""
    head = f"checked {counted(checked, 'logged write')} in time observed live ({counted(collected.lines, 'line')} read): "
    if not checked:  # nothing compared is no agreement: the log may be of another time, or of another cluster
        return [head + "nothing to compare: the log has no write of a tracked kind in the time the cache observed live"]
    if not found:
        return [head + "the recording agrees with the log"]
    return [head + f"{counted(len(found), 'disagreement')}", *(f"  {d.line()}" for d in found)]


def _regions(cache: Cache) -> Callable[[bytes], str]:
    """Where a time outside the gaps falls, for the count of lines skipped there (the time as the log writes it)."""
    first, last = cache.conn.execute("SELECT MIN(started), MAX(stopped) FROM runs").fetchone()
    filled = any(f.partial for f in fills(cache))  # an earlier --before-first-run wrote what these lines give
    before = "before the cache's first run (" + ("filled by an earlier --before-first-run" if filled else "--before-first-run fills it") + ")"

    def where(at: bytes) -> str:
        if first is not None and at < stamp(first):
            return before
        if last is not None and at > stamp(last):
            return "after the cache's last run"
        return "in time observed live"
    return where


def summary_lines(result: BackfillResult) -> list[str]:
    """What backfill did, for people (stdout)."""
    c = result.collected
    taken = sum(len(v) for v in c.writes.values())
    skipped = ", ".join(f"{reason} {n}" for reason, n in sorted(c.skipped.items()))
    lines = [f"read {counted(c.lines, 'line')} ({c.read_bytes / 1e6:.1f} MB): {counted(taken, 'write')} of tracked kinds"
             + (f"; skipped: {skipped}" if skipped else "")]
    for report in result.outcome.gaps:
        lines += _gap_lines(report)
    if not result.outcome.gaps:
        lines.append("no offline gap of the cache is in the log's time: nothing was filled")
    for where, n in sorted(result.outcome.outside.items()):
        hint = " (compare them with the recording: --check)" if where == "in time observed live" else \
            " (pass --before-first-run to fill it, marked partial)" if where == "before the cache's first run" else ""
        lines.append(f"not filled: {counted(n, 'write')} {where}{hint}")
    return lines


def _gap_lines(report: GapReport) -> list[str]:
    gap = report.gap
    if gap.partial:
        what = f"the time before run {gap.run_id} (partial: objects that never changed in the log are not known)"
    else:
        span = f"{format_time(gap.since)} to {format_time(gap.until)} ({format_duration(gap.until - gap.since)}"
        what = f"outage of {gap.gvk} {span}, run {gap.run_id})" if gap.gvk else f"gap {span}, before run {gap.run_id})"
    levels = ", ".join(sorted(report.levels)) or "no write"
    if not report.filled:
        lines = [f"{what}: nothing new from the audit log ({levels}): what it gives is in the cache already"]
    else:
        lines = [f"{what}: filled from the audit log ({levels}, {counted(report.written, 'event')} written, "
                 f"{report.replaced} reconstructed replaced, {counted(report.pods_ended, 'pod lifecycle')} ended)"]
    lines += _status_lines(report)
    if gap.partial and report.filled:  # no start state can be made of a partial fill (export/bounds.clamped_start)
        lines.append("  not exported: an export starts at the cache's first run; kubectl sktrace get --at reads it")
    if report.covered is None:
        lines.append("  the log covers none of it")
    elif not gap.partial and (report.covered[0] > gap.since + 1 or report.covered[1] < gap.until - 1):
        first, last = (format_time(t) for t in report.covered)
        lines.append(f"  the log covers {first if first == last else f'{first} to {last}'} of it; the rest stays reconstructed")
    if report.kept:
        lines.append(f"  {counted(report.kept, 'object')} kept as reconstructed: the log does not account for "
                     f"{'it' if report.kept == 1 else 'them'} (writes whose level hides the object, or writes missing): "
                     + _named(report.kept_keys))
    if report.ends_reconstructed:
        lines.append(f"  {counted(len(report.ends_reconstructed), 'object')} written from the log with "
                     f"{'its end' if len(report.ends_reconstructed) == 1 else 'their ends'} reconstructed at the restart "
                     f"(the log ends before {'it' if len(report.ends_reconstructed) == 1 else 'them'}): " + _named(report.ends_reconstructed))
    return lines


def _status_lines(report: GapReport) -> list[str]:
    if not (report.statuses or report.statuses_replaced):
        return []
    return [f"  {counted(report.statuses, 'status change')} at {'its' if report.statuses == 1 else 'their'} logged second, "
            f"{report.statuses_replaced} reconstructed replaced"]


def _named(keys: list[ObjKey], shown: int = 10) -> str:
    names = [f"{k.gvk} {k.namespace + '/' if k.namespace else ''}{k.name}" for k in keys[:shown]]
    return ", ".join(names) + (f" and {len(keys) - shown} more" if len(keys) > shown else "")


def bad_lines(c: Collected) -> list[str]:
    """The bad lines, for stderr: counted, the first named with their line numbers."""
    if not c.bad:
        return []
    lines = [f"Warning: {counted(c.bad, 'bad line')} skipped (not audit Events):"]
    lines += [f"  {source} line {line}: {reason}" for source, line, reason in c.bad_shown]
    if c.bad > len(c.bad_shown):
        lines.append(f"  and {c.bad - len(c.bad_shown)} more")
    return lines
