"""The batching writer: the one lock, the one open transaction, the commit cadence.

The watch threads call the ``Writer`` as their ``watching.Sink``; it hands each message to ``Ingest`` under one
lock, inside a batched ``BEGIN IMMEDIATE`` transaction committed at least every ``COMMIT_INTERVAL`` seconds,
moving the run's heartbeat with each commit so that a ``kill -9`` loses at most the last half second. The main
thread commits quiet batches (``tick``), marks the sync and closes it. Nothing else writes to the cache while a
recorder runs.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, TypeVar

from kubectl_sktrace.errors import CacheError
from kubectl_sktrace.model import GVK
from kubectl_sktrace.record.ingest import Ingest
from kubectl_sktrace.store.recording import Recording

COMMIT_INTERVAL = 0.25
"""Seconds a batch may stay open: half the bound of docs/spec.md §6, so a commit never lags more than 0.5 s."""

IDLE_COMMIT = 0.05
"""Commit early when nothing was written for this long: low traffic is durable at once."""

T = TypeVar("T")

HEARTBEAT = 1.0
"""Seconds between commits that only move the run's ``stopped`` forward when nothing else is written."""


class Writer:
    """The ``watching.Sink`` the watch threads call: each call applies the rules and writes, under one lock.

    The thread that receives an event applies it, so a pod event is parsed, judged and freed on one thread
    (handing parsed objects to another thread cost the GIL hand-off and the cross-core frees of every event,
    more CPU than the rules themselves). The lock keeps the cache single-writer: one connection, one batch
    at a time. A batch is committed by whichever thread holds the lock once it is ``COMMIT_INTERVAL`` old,
    and by the main thread's ``tick`` once it has gone quiet; after ``close`` nothing more is written.

    What escapes ``Ingest`` (which skips unreadable objects itself) means the cache or the writing failed: a
    sqlite error, a full disk, a ``CacheError``. That is fatal to the run, not to one kind: it is kept in
    ``fatal`` for the main thread to raise, and nothing more is written. A kind's own failure (a 403, retried by its
    watch; a failure that gives it up) is queued in ``failures`` for the main thread, and the other kinds go on.
    """

    def __init__(self, ingest: Ingest, recording: Recording, *, clock: Callable[[], float]) -> None:
        self.ingest = ingest
        self.rec = recording
        self.clock = clock
        self.lock = threading.Lock()
        self.fatal: BaseException | None = None
        self.failures: list[tuple[GVK, BaseException]] = []
        self._closed = False
        self._opened: float | None = None  # monotonic time the open batch began; None: no batch
        self._last_write = 0.0
        self._last_commit = time.monotonic()
        self._awake = threading.Event()  # ends the main thread's sleep: a batch opened, news, a fatal error, the stop
        self.news = 0  # counts what the main thread reports on: failures, outages begun or over, relists done

    # -- the Sink (watch threads) ----------------------------------------------------------------------

    def relist_begin(self, gvk: GVK, ts: float) -> None:
        self._write(self.ingest.relist_begin, gvk, ts)

    def relist_page(self, gvk: GVK, items: list[dict[str, Any]], ts: float) -> None:
        self._write(self.ingest.relist_page, gvk, items, ts)

    def relist_end(self, gvk: GVK, resource_version: str, ts: float) -> None:
        self._write(self.ingest.relist_end, gvk, resource_version, ts, news=True)

    def event(self, gvk: GVK, event_type: str, obj: dict[str, Any], ts: float) -> None:
        self._write(self.ingest.event, gvk, event_type, obj, ts)

    def interrupted(self, gvk: GVK, since: float, cause: str, detail: str) -> None:
        self._write(self.ingest.interrupted, gvk, since, cause, detail, news=True)

    def resumed(self, gvk: GVK, ts: float, horizon: str | None) -> None:
        self._write(self.ingest.resumed, gvk, ts, horizon, news=True)

    def unserved(self, gvk: GVK, ts: float, detail: str) -> None:
        self._write(self.ingest.unserved, gvk, ts, detail, news=True)

    def not_yet_observed(self) -> None:
        """The run begins: its kinds are not yet observed (``Ingest.not_yet_observed``)."""
        self._write(self.ingest.not_yet_observed)

    def throttled(self, gvk: GVK) -> None:
        """The API server throttles the kind's requests (``throttle.Throttle.listen``)."""
        self._write(self.ingest.coverage.throttled, gvk)

    def failed(self, gvk: GVK, error: BaseException) -> None:
        if isinstance(error, CacheError):
            with self.lock:
                self.fatal = self.fatal or error
                self._closed = True
            self._awake.set()
            return

        def record() -> None:
            self.ingest.failed(gvk, error, self.clock())
            self.failures.append((gvk, error))

        try:
            self._write(record, news=True)
        except BaseException:  # noqa: BLE001 - kept in ``fatal`` for the main thread to raise
            pass

    def _write(self, apply: Callable[..., None], *args: Any, news: bool = False) -> None:
        with self.lock:
            if self._closed:
                return
            now = time.monotonic()
            opened = False
            try:
                if self._opened is None:
                    self.rec.begin()
                    self._opened, opened = now, True  # the main thread commits it once it goes quiet
                apply(*args)
                self._last_write = now
                if now - self._opened >= COMMIT_INTERVAL:
                    self._commit(now)
            except BaseException as exc:
                self.fatal, self._closed = exc, True
                news = True
                raise
            finally:
                self.news += news
                if news or opened:
                    self._awake.set()

    # -- the main thread -------------------------------------------------------------------------------

    @property
    def in_batch(self) -> bool:
        return self._opened is not None

    def sleep(self, seconds: float) -> None:
        """The main thread's wait until something is due: ended early when a batch opens (to commit it once it
        goes quiet), a watch thread has news (a failure, an outage begun or over), or the stop followed is set;
        then raises a fatal error met by a watch thread. No polling: an idle recorder wakes for the heartbeat."""
        self._awake.wait(max(0.0, seconds))
        self._awake.clear()
        if self.fatal is not None:
            raise self.fatal

    def follow(self, stop: threading.Event) -> None:
        """End ``sleep`` as soon as ``stop`` is set: one thread blocks on it (and ends with it)."""
        def relay() -> None:
            stop.wait()
            self._awake.set()

        threading.Thread(target=relay, name="stop relay", daemon=True).start()

    def next_due(self, now: float) -> float:
        """When ``tick`` has something to do next (monotonic time), for the main thread to sleep until then: an open
        batch is looked at ``IDLE_COMMIT`` after it opened (committed if it went quiet), then committed at
        ``COMMIT_INTERVAL`` (unless a write did it first); with no batch open, the heartbeat is due."""
        opened = self._opened
        if opened is None:
            return self._last_commit + HEARTBEAT
        return opened + IDLE_COMMIT if now < opened + IDLE_COMMIT else opened + COMMIT_INTERVAL

    @property
    def last_commit(self) -> float:
        """Monotonic time of the last commit: the heartbeat's, when nothing else was written."""
        return self._last_commit

    def tick(self) -> None:
        """Commit a batch that went quiet (low traffic is durable at once) or grew old; move the run's
        heartbeat when nothing was written for ``HEARTBEAT`` seconds."""
        with self.lock:
            if self._closed:
                return
            now = time.monotonic()
            if self._opened is not None:
                if now - self._last_write >= IDLE_COMMIT or now - self._opened >= COMMIT_INTERVAL:
                    self._commit(now)
            elif now - self._last_commit >= HEARTBEAT:
                self.rec.begin()
                self._commit(now)

    def mark_synced(self, run_id: int, ts: float) -> None:
        """Commit what the initial sync wrote together with the run's ``synced`` mark."""
        with self.lock:
            if self._closed:
                return
            if self._opened is None:
                self.rec.begin()
            self.rec.mark_synced(run_id, ts)
            self._commit(time.monotonic())

    def exclusive(self, work: Callable[[], T]) -> T | None:
        """Run ``work`` (a transaction of its own: a link of the retention's prune) under the lock, after committing
        the open batch; None once closed. The watch threads wait meanwhile: ``work`` must be short."""
        with self.lock:
            if self._closed:
                return None
            if self._opened is not None:
                self._commit(time.monotonic())
            return work()

    def take_failures(self) -> list[tuple[GVK, BaseException]]:
        with self.lock:
            failures, self.failures = self.failures, []
            return failures

    def close(self, *, clean: bool) -> None:
        """Stop writing: commit the open batch when ``clean``, else roll it back. Waits for a write in progress."""
        with self.lock:
            self._closed = True
            if self._opened is None:
                return
            if clean:
                self._commit(time.monotonic())
            else:
                self.rec.rollback()
                self._opened = None

    def _commit(self, now: float) -> None:
        self.ingest.before_commit(self.clock())
        self.rec.commit()
        self._opened = None
        self._last_commit = now
