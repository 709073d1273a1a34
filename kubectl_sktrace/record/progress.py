"""What a person sees while ``start`` runs, on stderr.

On a terminal: one status line rewritten in place — first the initial sync per kind (objects listed so far,
a check mark once a kind's list is complete), then the live status (events recorded, pods tracked, events/s,
the watch updates/s behind them, time left). The status line is cut to the terminal's width (read at each
redraw, so a resized window is followed): a line that wrapped could no longer be rewritten in place and
would scroll. A line meant to stay (a warning, the end of the sync, an outage over, a log record) clears
the status line first, is printed on its own, and the status line is drawn again below it. ``close``
clears the status line, so the summary that follows starts on a clean line (and the ``^C`` the terminal
echoed goes with it).

Without a terminal (a log file, CI): plain lines, one per completed initial list, one when the sync is done,
and a status line every ``LOG_EVERY`` seconds. ``--quiet`` leaves out everything, warnings included.

Output is driven by the recorder's loop (no thread of its own), so it costs nothing while nothing changes;
log records from the watch threads come through ``routed_logs``, under the same lock. After the sync, the
reconciliation report is printed as a block of lines (what changed while no recorder ran).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import threading
import time
from typing import Callable, Iterator, TextIO

from kubectl_sktrace.model import GVK
from kubectl_sktrace.plural import counted
from kubectl_sktrace.terminal import escape
from kubectl_sktrace.reconciliation import Reconciliation, reconciliation_lines
from kubectl_sktrace.record.ingest import KindStats
from kubectl_sktrace.timeparse import format_duration

LOG_EVERY = 30.0
CLEAR_LINE = "\r\x1b[K"
DEFAULT_COLUMNS = 80


def stream_columns(stream: TextIO) -> Callable[[], int]:
    """The width of the terminal ``stream`` writes to, read anew at each call (a window can be resized)."""

    def columns() -> int:
        try:
            return os.get_terminal_size(stream.fileno()).columns or DEFAULT_COLUMNS
        except (OSError, ValueError):
            return DEFAULT_COLUMNS

    return columns


def fit(text: str, columns: int) -> str:
    """``text`` cut to fit one terminal line of ``columns``, the last column left free (a character written
    there leaves some terminals waiting to wrap, and the next redraw would land on the line below)."""
    room = max(columns - 1, 1)
    return text if len(text) <= room else text[: room - 1] + "…"


class Progress:
    def __init__(self, *, stream: TextIO, tty: bool, quiet: bool, clock: Callable[[], float] = time.monotonic,
                 columns: Callable[[], int] = lambda: DEFAULT_COLUMNS) -> None:
        self.stream = stream
        self.tty = tty
        self.quiet = quiet
        self.clock = clock
        self.columns = columns
        self._kinds: dict[GVK, tuple[int, bool, bool]] = {}  # listed, done, failed
        self._status: str | None = None  # the status line on the screen now (terminal only)
        self._lock = threading.Lock()
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
            self._line(f"listed {gvk}: {counted(stats.listed, 'object', grouped=True)}")

    def synced(self, seconds: float) -> None:
        """The sync line gives way to one line that stays."""
        if self.quiet:
            return
        total = sum(listed for listed, _, _ in self._kinds.values())
        with self._lock:
            self._clear()
            stop = "Ctrl-C to stop" if self.tty else "SIGINT or SIGTERM stops it"  # no keyboard in a pod's log
            self._write(f"initial sync done: {counted(total, 'object', grouped=True)} in {seconds:.1f}s; recording changes ({stop})\n")

    # -- while recording -----------------------------------------------------------------------------

    def live(self, *, events: int, pods: int, rate: float, updates_rate: float, left: float | None) -> None:
        """``events``/``rate``: what goes into the trace; ``updates_rate``: watch events received, most of them
        pod status changes that record nothing, so a busy cluster does not look stalled."""
        if self.quiet:
            return
        text = (f"recording: {counted(events, 'event', grouped=True)}, {counted(pods, 'pod', grouped=True)} tracked, {rate:,.1f} events/s "
                f"(watch: {updates_rate:,.0f} updates/s)")
        if left is not None:
            text += f", {format_duration(left)} left"
        if self.tty:
            self._rewrite(text)
            return
        now = self.clock()
        if now - self._last_log >= LOG_EVERY:
            self._last_log = now
            self._line(text)

    def warn(self, message: str) -> None:
        if not self.quiet:
            self._line(f"Warning: {message}")

    def note(self, message: str) -> None:
        """A line worth reading once (an outage over), not a warning."""
        if not self.quiet:
            self._line(message)

    def reconciled(self, report: Reconciliation) -> None:
        """What the initial sync found changed while offline, as a block of lines; left out with ``--quiet``."""
        if not self.quiet:
            self._line("\n".join(reconciliation_lines(report)))

    def close(self) -> None:
        with self._lock:
            self._clear()
            self._status = None

    # -- output --------------------------------------------------------------------------------------

    def _rewrite(self, text: str) -> None:
        with self._lock:
            self._status = text = escape(text)  # its kinds are a cluster's; the control sequences, ours alone
            self._write(CLEAR_LINE + fit(text, self.columns()))

    def _line(self, text: str) -> None:
        """A line that stays: above the status line, which is drawn again below it."""
        with self._lock:
            status = self._status
            self._clear()
            self._write(escape(text) + "\n")
            if status is not None:
                self._status = status
                self._write(fit(status, self.columns()))

    def _clear(self) -> None:
        if self._status is not None:
            self._write(CLEAR_LINE)
            self._status = None

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


class _LineSink:
    """A stream for a logging handler: each complete line goes to ``Progress`` as a line that stays."""

    def __init__(self, view: Progress) -> None:
        self.view = view
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            self.view._line(line)
        return len(text)

    def flush(self) -> None:
        pass


@contextlib.contextmanager
def routed_logs(view: Progress) -> Iterator[None]:
    """While recording, log records that would go to the view's stream (the ``Warning:`` lines of the watch
    threads, or every log line with ``-v``) are printed through ``view``, so they never land in the middle
    of the status line."""
    handlers = [h for h in logging.getLogger().handlers
                if isinstance(h, logging.StreamHandler) and h.stream is view.stream]
    sink = _LineSink(view)
    saved = [h.setStream(sink) for h in handlers]
    try:
        yield
    finally:
        for handler, stream in zip(handlers, saved):
            handler.setStream(stream)


class Rates:
    """The live rates (events recorded and watch updates a second) over the last ``window`` seconds, as of each
    redraw: the counts now against the newest sample at least ``window`` old (or the first one), so a burst shows at
    the next redraw instead of after a whole window, and a quiet spell brings the rate down as it goes. Pure."""

    def __init__(self, *, window: float, now: float) -> None:
        self.window = window
        self._samples: collections.deque[tuple[float, int, int]] = collections.deque([(now, 0, 0)])

    def sample(self, now: float, events: int, updates: int) -> tuple[float, float]:
        """Events/s and updates/s over the window ending ``now``."""
        samples = self._samples
        while len(samples) > 1 and now - samples[1][0] >= self.window:
            samples.popleft()  # the base is the newest sample at least a window old
        base_t, base_events, base_updates = samples[0]
        samples.append((now, events, updates))
        span = now - base_t
        if span <= 0:
            return 0.0, 0.0
        return (events - base_events) / span, (updates - base_updates) / span

