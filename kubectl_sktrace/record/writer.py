"""The batching writer: the one lock, the one open transaction, the commit cadence.

The watch threads call the ``Writer`` as their ``watching.Sink``; it hands each message to ``Ingest`` under one
lock, inside a batched ``BEGIN IMMEDIATE`` transaction committed at least every ``COMMIT_INTERVAL`` seconds,
moving the run's heartbeat with each commit so that a ``kill -9`` loses at most the last half second. The main
thread commits quiet batches (``tick``), marks the sync and closes it. Nothing else writes to the cache while a
recorder runs.

The lock order (docs/architecture.md, "Locks and the network"): **nothing shared is held while waiting on the
network**. A request may wait for minutes (a 429's ``Retry-After`` is up to 32 s, ten times over; a silent
connection), and every watch thread needs this lock for each event, so a request made under it would stop the
whole recorder, and a throttled one re-entering the writer to say so deadlocked it for good. So:

- Owner lookups, the only requests the rules need, are made *before* the message is applied: under the lock,
  ``Ingest.owners_wanted`` says which owners applying it would GET (reading memory and the cache only); the lock
  is released, they are fetched, and handed back (``Ingest.owners_fetched``), a level of the chain per round; then
  the message is applied under the lock, where a lookup never fetches (an owner still unknown then counts as one
  that cannot be resolved, as a 404 would).
- ``WriterLock`` knows the thread that holds it, and ``Throttle`` (through which every request goes) refuses to
  send a request from that thread: ``LockOrderError``, a bug caught at once instead of a hang.
- The main thread never waits for the lock without a bound (``hold``): a holder that keeps it ``STUCK_AFTER``
  seconds (``STOP_GRACE`` once a stop or ``--duration`` asks) ends the run with ``WriterStuck``, which says what
  is stuck, instead of a recorder that looks alive and records nothing.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Callable, Iterator, TypeVar

from kubectl_sktrace.errors import CacheError, SktraceError
from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.record.health import STALE_AFTER
from kubectl_sktrace.record.ingest import Ingest
from kubectl_sktrace.record.owners import DEFAULT_MAX_DEPTH
from kubectl_sktrace.store.recording import Recording
from kubectl_sktrace.timeparse import format_time

COMMIT_INTERVAL = 0.25
"""Seconds a batch may stay open: half the bound of docs/spec.md §6, so a commit never lags more than 0.5 s."""

IDLE_COMMIT = 0.05
"""Commit early when nothing was written for this long: low traffic is durable at once."""

T = TypeVar("T")

HEARTBEAT = 1.0
"""Seconds between commits that only move the run's ``stopped`` forward when nothing else is written."""

STUCK_AFTER = 4 * STALE_AFTER
"""Seconds a thread may hold the writer's lock before the run is said to make no progress and ends: two minutes, a
hundred and twenty heartbeats. Far longer than anything the lock may legitimately cover (sqlite's busy timeout, 10 s,
ends a blocked write with an error first; the longest hold measured, the relist end that resolves the owners of
50,000 pods listed first, took 1.6 s on 2 cores), so a cluster far larger than that is not taken for a stuck recorder. ``status`` calls a run not responding
sooner, after ``STALE_AFTER`` without a heartbeat: that only describes it."""

STOP_GRACE = 5.0
"""Seconds a stop (a signal, ``--duration``) waits for a thread that holds the writer's lock before giving it up."""

HOLD_SLICE = 0.25
"""Seconds the main thread waits for the lock at a time, looking at the stop and the holder's age in between."""


class LockOrderError(RuntimeError):
    """A request to the API server from a thread that holds the writer's lock: a bug (see the module docstring)."""


class WriterStuck(SktraceError):
    """A thread has held the writer's lock too long: the run makes no progress and ends."""


class WriterLock:
    """The writer's lock, which knows which thread holds it and since when (for ``refuse_requests`` and ``hold``)."""

    def __init__(self) -> None:
        self.raw = threading.Lock()  # the ``Writer``'s hot path takes it directly, and sets ``holder`` and ``since`` itself
        self.holder: int | None = None  # the holding thread's ident
        self.since = 0.0  # monotonic time it was taken

    def acquire(self, timeout: float = -1) -> bool:
        if not self.raw.acquire(timeout=timeout):
            return False
        self.holder, self.since = threading.get_ident(), time.monotonic()
        return True

    def release(self) -> None:
        self.holder = None
        self.raw.release()

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def held_here(self) -> bool:
        return self.holder == threading.get_ident()

    def holder_name(self) -> str:
        holder = self.holder
        thread = next((t for t in threading.enumerate() if t.ident == holder), None)
        return "?" if thread is None else thread.name

    def refuse_requests(self) -> None:
        """Raise ``LockOrderError`` when the calling thread holds the lock: ``Throttle`` asks before every request."""
        if self.held_here():
            raise LockOrderError("a request to the API server was about to be sent while holding the cache writer's lock; "
                                 "nothing shared may be held while waiting on the network (docs/architecture.md)")


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
        self.lock = WriterLock()
        self._fetch = ingest.take_fetching()  # owner lookups: made here, with no lock held, never by ``ingest`` itself
        self._stop: threading.Event | None = None  # followed (``follow``): a stop gives a stuck holder ``STOP_GRACE``
        self.deadline: float | None = None  # monotonic time ``--duration`` ends the run: as a stop, for ``hold``
        self._abandoned = False  # given up while a thread held the lock: nothing more is committed
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

    def resume_begin(self, gvk: GVK, ts: float) -> None:
        self._write(self.ingest.resume_begin, gvk, ts)

    def relist_page(self, gvk: GVK, items: list[dict[str, Any]], ts: float) -> None:
        self._write(self.ingest.relist_page, gvk, items, ts, owners=self._wanted(gvk, items))

    def relist_end(self, gvk: GVK, resource_version: str, ts: float) -> None:
        self._write(self.ingest.relist_end, gvk, resource_version, ts, news=True, owners=self._wanted(gvk, settling=True))

    def event(self, gvk: GVK, event_type: str, obj: dict[str, Any], ts: float) -> None:
        deleted = event_type == "DELETED"
        wants = self._wanted(gvk, (obj,), deleted=deleted) if self.ingest.may_want_owners(gvk, obj, deleted=deleted) else None
        self._write(self.ingest.event, gvk, event_type, obj, ts, owners=wants)

    def interrupted(self, gvk: GVK, since: float, cause: str, detail: str) -> None:
        self._write(self.ingest.interrupted, gvk, since, cause, detail, news=True)

    def resumed(self, gvk: GVK, ts: float, horizon: str | None) -> None:
        self._write(self.ingest.resumed, gvk, ts, horizon, news=True)

    def unserved(self, gvk: GVK, ts: float, detail: str) -> None:
        self._write(self.ingest.unserved, gvk, ts, detail, news=True, owners=self._wanted(gvk, settling=True))

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
            self._write(record, news=True, owners=self._wanted(gvk, settling=True))
        except BaseException:  # noqa: BLE001 - kept in ``fatal`` for the main thread to raise
            pass

    def _wanted(self, gvk: GVK, objs: tuple[dict[str, Any], ...] | list[dict[str, Any]] = (), *, deleted: bool = False,
                settling: bool = False) -> Callable[[set[ObjKey]], set[ObjKey]] | None:
        """The question ``_write`` asks under the lock before applying a message: which owners would it GET?"""
        if self._fetch is None:
            return None
        return lambda asked: self.ingest.owners_wanted(gvk, objs, deleted=deleted, settling=settling, asked=asked)

    def _write(self, apply: Callable[..., None], *args: Any, news: bool = False,
               owners: Callable[[set[ObjKey]], set[ObjKey]] | None = None) -> None:
        """Apply under the lock. ``owners`` first names the owners applying would GET: then the lock is released, they
        are fetched (the network: no lock held) and handed to ``Ingest``, and the question is asked again (an owner
        fetched may name owners of its own), a level of the chains a round; once nothing is wanted the message is
        applied in the same hold of the lock, so what the question resolved is what the write uses."""
        if owners is None:  # most messages: nothing to look up (the lock taken inline: this runs for every event)
            lock = self.lock
            with lock.raw:
                lock.holder, lock.since = threading.get_ident(), time.monotonic()
                try:
                    if not self._closed:
                        self._apply(apply, args, news=news)
                finally:
                    lock.holder = None
            return
        asked: set[ObjKey] = set()
        for _ in range(DEFAULT_MAX_DEPTH + 1):
            with self.lock:
                if self._closed:
                    return
                try:
                    wanted = owners(asked)
                except BaseException as exc:  # reading the cache failed: fatal, as in a write
                    self.fatal, self._closed = exc, True
                    self.news += 1
                    self._awake.set()
                    raise
                if not wanted:
                    try:
                        self._apply(apply, args, news=news)
                    finally:
                        self.ingest.forget_prepared()
                    return
            asked |= wanted
            fetched = {key: self._fetch(key) for key in sorted(wanted, key=str)} if self._fetch is not None else {}
            self._write(self.ingest.owners_fetched, fetched)
        self._write(apply, *args, news=news)  # chains deeper than any walk: what is still unknown is not resolved

    def _apply(self, apply: Callable[..., None], args: tuple[Any, ...], *, news: bool) -> None:
        """Under the lock: ``apply(*args)`` inside the open batch (opened if none), committed once old enough."""
        now = time.monotonic()
        opened = False
        try:
            if self._opened is None:
                self.rec.begin()
                self._opened, opened = now, True  # the main thread commits it once it goes quiet
            apply(*args)
            self._last_write = now
            if self._abandoned:
                return  # the run ended without this thread: what it wrote is not committed
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
        self._stop = stop

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

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """The lock, for the main thread: waited for a slice at a time, never without a bound. Raises ``WriterStuck``
        once the thread that holds it has held it ``STUCK_AFTER`` seconds, or ``STOP_GRACE`` once the run is to stop."""
        lock = self.lock
        while not lock.acquire(timeout=HOLD_SLICE):
            if lock.holder is None:
                continue  # released meanwhile
            held = time.monotonic() - lock.since
            stopping = (self._stop is not None and self._stop.is_set()) or (self.deadline is not None and time.monotonic() >= self.deadline)
            if held >= STUCK_AFTER or (stopping and held >= STOP_GRACE):
                at = format_time(self.clock() - held)
                raise WriterStuck(f"the recorder made no progress: its thread '{lock.holder_name()}' has held the cache writer's lock "
                                  f"since {at} ({held:.0f}s); the run ends at its last commit, as after a crash: start again "
                                  "to reconcile, and report this with the log of -v 4 (a stack dump: kill -USR1 PID)")
        try:
            yield
        finally:
            lock.release()

    @property
    def abandoned(self) -> bool:
        return self._abandoned

    def abandon(self) -> None:
        """Give up the writer while a stuck thread holds its lock: nothing more is written or committed (the open
        batch, the stuck thread's, is lost as a ``kill -9`` loses it)."""
        self._abandoned = self._closed = True

    def tick(self) -> None:
        """Commit a batch that went quiet (low traffic is durable at once) or grew old; move the run's
        heartbeat when nothing was written for ``HEARTBEAT`` seconds."""
        with self.hold():
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
        with self.hold():
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
        with self.hold():
            failures, self.failures = self.failures, []
            return failures

    def close(self, *, clean: bool) -> None:
        """Stop writing: commit the open batch when ``clean``, else roll it back. Waits for a write in progress (``hold``)."""
        with self.hold():
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
