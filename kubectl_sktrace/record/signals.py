"""SIGINT and SIGTERM during ``start``: a prompt, clean stop instead of an exception in the middle of a write; SIGUSR1
prints every thread's stack to stderr (``kill -USR1 PID``), for a recorder that seems stuck."""

from __future__ import annotations

import faulthandler
import signal
import sys
import threading
from types import FrameType
from typing import Any


class StopOnSignals:
    """SIGINT and SIGTERM set ``stop`` (a prompt, clean stop) instead of raising in the middle of a write."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.saved: dict[int, Any] = {}

    def __enter__(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.saved[sig] = signal.signal(sig, self._handle)
        if hasattr(signal, "SIGUSR1") and sys.stderr is not None:
            faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)  # kill -USR1 PID: every thread's stack

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.stop.is_set():
            raise KeyboardInterrupt  # a second Ctrl-C: the user insists
        self.stop.set()

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        if self.saved and hasattr(signal, "SIGUSR1"):
            faulthandler.unregister(signal.SIGUSR1)
