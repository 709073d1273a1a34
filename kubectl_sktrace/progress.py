"""What a person sees while ``start`` runs, on stderr.

On a terminal: one line rewritten in place — first the initial sync per kind (objects listed so far, a
check mark once a kind's list is complete), then the live status (events recorded, pods tracked, events/s,
the watch updates/s behind them, time left). Without a terminal (a log file, CI): plain lines, one per
completed initial list, one when the sync is done, and a status line every ``LOG_EVERY`` seconds. After the
sync, in both, the reconciliation report as a block of lines (what changed while no recorder ran). Warnings
always print, even with ``--quiet``.
Output is driven by the recorder's loop (no thread of its own), so it costs nothing while nothing changes.
"""

from __future__ import annotations

import time
from typing import Callable, TextIO

from kubectl_sktrace.model import GVK
from kubectl_sktrace.ingest import KindStats
from kubectl_sktrace.reconciliation import Reconciliation
from kubectl_sktrace.render import reconciliation_lines
from kubectl_sktrace.timeparse import format_duration

LOG_EVERY = 30.0


class Progress:
    def __init__(self, *, stream: TextIO, tty: bool, quiet: bool, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.tty = tty
        self.quiet = quiet
        self.clock = clock
        self._kinds: dict[GVK, tuple[int, bool, bool]] = {}  # listed, done, failed
        self._line_open = False
        self._last_log = clock()

    # -- the initial sync ----------------------------------------------------------------------------

    def kind_progress(self, gvk: GVK, stats: KindStats) -> None:
        state = (stats.listed, stats.initial_done, stats.failed is not None)
        before = self._kinds.get(gvk)
        if before == state or self.quiet:
            self._kinds[gvk] = state
            return
        self._kinds[gvk] = state
        if self.tty:
            parts = []
            for kind, (listed, done, failed) in self._kinds.items():
                mark = " forbidden" if failed else " ✓" if done else "…"
                parts.append(f"{kind.kind} {listed:,}{mark}")
            self._rewrite("syncing: " + ", ".join(parts))
        elif stats.initial_done and not (before and before[1]):
            self._print(f"listed {gvk}: {stats.listed:,} objects")

    def synced(self, seconds: float) -> None:
        if self.quiet:
            return
        total = sum(listed for listed, _, _ in self._kinds.values())
        self._end_line()
        self._print(f"initial sync done: {total:,} objects in {seconds:.1f}s; recording changes (Ctrl-C to stop)")

    # -- while recording -----------------------------------------------------------------------------

    def live(self, *, events: int, pods: int, rate: float, updates_rate: float, left: float | None) -> None:
        """``events``/``rate``: what goes into the trace; ``updates_rate``: watch events received, most of them
        pod status changes that record nothing, so a busy cluster does not look stalled."""
        if self.quiet:
            return
        text = (f"recording: {events:,} events, {pods:,} pods tracked, {rate:,.1f} events/s "
                f"(watch: {updates_rate:,.0f} updates/s)")
        if left is not None:
            text += f", {format_duration(left)} left"
        if self.tty:
            self._rewrite(text)
            return
        now = self.clock()
        if now - self._last_log >= LOG_EVERY:
            self._last_log = now
            self._print(text)

    def warn(self, message: str) -> None:
        self._end_line()
        self._print(f"Warning: {message}")

    def note(self, message: str) -> None:
        """A line worth reading once (an outage over), not a warning; left out with ``--quiet``."""
        if self.quiet:
            return
        self._end_line()
        self._print(message)

    def reconciled(self, report: Reconciliation) -> None:
        """What the initial sync found changed while offline, as a block of lines; left out with ``--quiet``."""
        if self.quiet:
            return
        self._end_line()
        for line in reconciliation_lines(report):
            self._print(line)

    def close(self) -> None:
        self._end_line()

    # -- output --------------------------------------------------------------------------------------

    def _rewrite(self, text: str) -> None:
        self.stream.write("\r\x1b[K" + text)
        self.stream.flush()
        self._line_open = True

    def _end_line(self) -> None:
        if self._line_open:
            self.stream.write("\n")
            self.stream.flush()
            self._line_open = False

    def _print(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()
