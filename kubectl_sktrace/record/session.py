"""The recording session: plan the kinds, the main loop (asleep until something is due), finish the run.

Shape (SimKube's store, made durable): one watch thread per kind runs ``watching.run_watch`` and hands what it
sees to the ``Writer`` (``writer.py``: the batches and the one lock), which applies it through ``Ingest``
(``ingest.py``: the rules and the reconciliation of relists) on that thread, so the cache keeps a single
writer. This module is the main thread: it plans which kinds to watch (the tracked ones, the owner kinds of
their pods, the kinds no longer tracked as before), starts the watches, and then, when the writer wakes it or
something is due, commits quiet batches, reports failures, outages and progress, starts the pod watch, marks
the sync; at the end it stops everything and records how the run ended. ``starting.start`` wires cluster, cache, signals.

Every kind lists at once, pods beside the others, so the server's encoding of one list overlaps the parsing
of another. What the initial sync must not do before every kind listed (delete, resolve pods' owners from
half-listed owner kinds) waits for it in ``Ingest`` (``initialsync``), so the 50,000 pods of a large cluster
still find their owners in memory instead of costing thousands of GETs.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import os
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

from kubectl_sktrace.errors import ForbiddenError, KubeError
from kubectl_sktrace.model import GVK, OWNER_KINDS, POD, ObjKey
from kubectl_sktrace.plural import counted
from kubectl_sktrace.reconciliation import Reconciliation
from kubectl_sktrace.record import watching
from kubectl_sktrace.record.failures import every_kind_failed
from kubectl_sktrace.record.health import HealthBoard, HealthSample
from kubectl_sktrace.record.ingest import Ingest, KindStats
from kubectl_sktrace.record.listing import PAGES_HELD, PageBudget
from kubectl_sktrace.record.metrics import MetricsBoard, WatchCounters, read_sample
from kubectl_sktrace.record.notices import KindNotices, OutageNotices, ThrottleNotices
from kubectl_sktrace.record.progress import Rates
from kubectl_sktrace.record.resuming import resumable
from kubectl_sktrace.record.retention import Retention, RetentionPolicy, start_retention
from kubectl_sktrace.record.summary import Summary, SummaryRow
from kubectl_sktrace.record.throttle import Throttle
from kubectl_sktrace.record.unchanged import keep, last_stop
from kubectl_sktrace.record.writer import IDLE_COMMIT, Writer, WriterStuck
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.store.history import unserved_spans
from kubectl_sktrace.store.recording import Identity, Recording
from kubectl_sktrace.store.status import outages_of
from kubectl_sktrace.trace.files import collector
from kubectl_sktrace.tracerconfig import TracerConfig

if TYPE_CHECKING:
    from kubectl_sktrace.kube.cluster import ClusterClient

log = logging.getLogger(__name__)

GC_THRESHOLD = 50_000
"""The cyclic GC's first threshold while recording: raw API objects are acyclic dicts made by the thousand,
and the default (700) spends a fifth of the ingest time collecting nothing (docs/architecture.md, measured facts)."""

VIEW_EVERY = 0.5
"""Seconds between two redraws of the progress line."""

RATE_WINDOW = 2.0
"""Seconds over which the live rates (events/s, updates/s) are measured."""


class ProgressView(Protocol):
    """What the recorder tells the person watching (``progress.Progress``)."""

    def kind_progress(self, gvk: GVK, stats: KindStats) -> None: ...
    def synced(self, seconds: float) -> None: ...
    def live(self, *, events: int, pods: int, rate: float, updates_rate: float, left: float | None) -> None: ...
    def warn(self, message: str) -> None: ...
    def note(self, message: str) -> None: ...
    def reconciled(self, report: Reconciliation) -> None: ...
    def close(self) -> None: ...


@dataclass
class _Run:
    """One run's moving parts and the main loop's state."""

    run_id: int
    started: float
    resources: dict[GVK, Any]
    tracked: list[GVK]  # the configured kinds this cluster serves (at the start)
    ingest: Ingest
    writer: Writer
    watched: list[GVK]  # kinds whose watch was started
    resume: dict[GVK, str]  # kinds whose watch resumes where the last run stopped (``resuming``), from that version
    deadline: float | None  # monotonic time at which ``--duration`` ends the run
    synced_at: float | None = None
    reconciliation: Reconciliation | None = None
    last_view: float = 0.0  # monotonic time of the last progress redraw
    rates: Rates = dataclasses.field(default_factory=lambda: Rates(window=RATE_WINDOW, now=time.monotonic()))  # the live rates


class Session:
    """One ``start``: the watch threads, the consumer loop and the run bookkeeping, around an open cache.

    ``kube`` offers ``discover``, ``cluster_identity``, ``list_page``, ``watch`` and ``get`` (``kube/client.py``: ``Kube``);
    ``run_watch`` is ``watching.run_watch``. Both are injected so tests can run the loop on fakes.
    ``context_namespace`` is the kubeconfig context's namespace: what to suggest to a user refused everywhere else.
    ``health`` (``start --health-port``) gets the loop's commits and the watches' state at every round.
    """

    def __init__(
        self, *, kube: ClusterClient, recording: Recording, config: TracerConfig, identity: Identity, namespace: str | None,
        duration: float | None, stop: threading.Event, progress: ProgressView,
        run_watch: Callable[..., None], clock: Callable[[], float] = time.time, context_namespace: str | None = None,
        health: HealthBoard | None = None, retention: RetentionPolicy | None = None, metrics: MetricsBoard | None = None,
        throttle: Throttle | None = None,
    ) -> None:
        self.health, self.metrics, self.retention, self._counters = health, metrics, retention, WatchCounters()
        self.kube = kube
        self.rec = recording
        self.config = config
        self.identity = identity
        self.namespace = namespace
        self.context_namespace = context_namespace
        self.duration = duration
        self.stop = stop
        self.progress = progress
        self.run_watch = run_watch
        self.clock = clock
        self.warnings: list[str] = []
        self._gc_enabled = True  # whether the cyclic GC ran when the run began: on again once synced
        self._failed: dict[GVK, BaseException] = {}
        self._vigil = watching.Vigil(clock=clock, monotonic=time.monotonic)
        self._pages = PageBudget(PAGES_HELD)  # every kind lists at once; the pages they hold together stay few
        self._notices = OutageNotices(warn=self._warn, note=progress.note)
        self._kind_notices = KindNotices(warn=self._warn, note=progress.note)
        self._throttle = throttle or Throttle(clock=clock, stop=stop)  # ``start`` sends every request through it
        self._throttle_notices = ThrottleNotices(warn=self._warn, note=progress.note)
        self._news = -1  # the writer's news last reported (failures, outages)
        self.pruner: Retention | None = None
        self._discovery: dict[str, Any] = {}  # the discovery documents known at the start: where an owner's kind is served

    def run(self) -> Summary:
        run = self._plan()
        run.writer.follow(self.stop)
        run.writer.deadline = run.deadline
        saved_gc = collector.for_recording(GC_THRESHOLD)  # off until synced (``_advance_sync``)
        self._gc_enabled = saved_gc[1]
        try:
            self._launch(run)
        except BaseException:
            collector.restore(saved_gc)
            raise
        clean = False
        try:
            try:
                while self._step(run):
                    pass
                self._report_outage(run)  # an outage that ended since the last round is said to be over
                clean = True
            except KubeError:
                clean = True  # a reported cluster error (every kind forbidden): what was written stands, the cache is sound
                raise
            finally:
                stopped = self._finish(run, clean=clean, saved_gc=saved_gc)
        except WriterStuck:
            self._give_up(run, saved_gc=saved_gc)
            raise
        if run.writer.fatal is not None:
            raise run.writer.fatal  # met by a watch thread after the loop ended
        return self._summary(run, stopped)

    # -- the steps of a run ---------------------------------------------------------------------------

    def _plan(self) -> _Run:
        """Check the cache's identity, discover the kinds, open the run and build its ingest and writer."""
        from kubectl_sktrace.tracerconfig import (
            config_change,
            config_to_yaml,
            stored_config,
            watched_owner_kinds,
        )

        self.rec.check_identity(self.identity)
        previous = self.rec.previous_run()
        started = self.clock()
        resources = self._discover()
        tracked = [g for g in self.config.tracked if g in resources]
        owner_kinds = watched_owner_kinds(self.config, served=resources)
        before = stored_config(self.rec.previous_config())
        run_id = self.rec.begin_run(started=started, pid=os.getpid(), config_yaml=config_to_yaml(self.config),
                                    retain=None if self.retention is None else self.retention.retain)
        fresh: frozenset[GVK] = frozenset()
        if before is not None:
            change = config_change(before, self.config)
            self._untrack(run_id, [*change.dropped, *change.changed], started)
            fresh = frozenset([*change.added, *change.changed])
        # a tracked kind the server does not serve (yet) is watched too: its loop asks again until it is served
        watched = [g for g in dict.fromkeys([*self.config.tracked, *sorted(owner_kinds)]) if g != POD] + ([POD] if POD in resources else [])
        ingest = Ingest(
            recording=self.rec, run_id=run_id, config=self.config, owner_kinds=owner_kinds,
            fetch_owner=lambda key: self._fetch(resources, key), gap_start=None if previous is None else previous.stopped,
            restart=started, fresh=fresh, initial_kinds=frozenset(watched),
            versions=last_stop(self.rec, previous, cluster_uid=self.identity.cluster_uid),
        )
        sizes = Counter(key.gvk for key in ingest.owners) + Counter({g: len(live) for g, live in ingest.live.items()})
        sizes[POD] = len(ingest.pods)
        resume = {} if previous is None else resumable(
            positions=self.rec.resume_positions(previous.id), watched=[g for g in watched if g in resources], fresh=fresh,
            cluster_uid=self.identity.cluster_uid, stored_uid=self.rec.cache.get_meta("cluster.uid"), sizes=sizes)
        return _Run(run_id=run_id, started=started, resources=resources, tracked=tracked, ingest=ingest,
                    writer=Writer(ingest, self.rec, clock=self.clock), watched=watched, resume=resume,
                    deadline=None if self.duration is None else time.monotonic() + self.duration)

    def _launch(self, run: _Run) -> None:
        """The vigil and every kind's watch, at once, each not yet observed until its first list."""
        run.writer.not_yet_observed()
        self._throttle.listen(run.writer.throttled)
        self._throttle.guard(run.writer.lock.refuse_requests)  # no request from a thread that holds the writer's lock
        self._watch_vigil()
        if run.resume:
            self.progress.note(f"resuming the watches of {counted(len(run.resume), 'kind')} where the last run left them (no list): "
                               + ", ".join(str(g) for g in run.resume))
        for gvk in run.watched:
            self._start_watch(gvk, run.resources.get(gvk), run.writer, resume_from=run.resume.get(gvk))

    def _step(self, run: _Run) -> bool:
        """One round of the main loop, asleep until something is due; False once the run should stop (a stop, the duration)."""
        writer, now = run.writer, time.monotonic()
        writer.sleep((min(writer.next_due(now), run.last_view + (float("inf") if getattr(self.progress, "quiet", False) else VIEW_EVERY), run.deadline or float("inf")) if run.synced_at else now + (IDLE_COMMIT if writer.in_batch else 0.2)) - now)
        now = time.monotonic()
        if self.stop.is_set() or (run.deadline is not None and now >= run.deadline):
            return False
        if writer.news != self._news or run.synced_at is None:  # failures and outages come with the writer's news
            self._news = writer.news
            for gvk, error in writer.take_failures():
                self._report_failure(gvk, error)
            self._report_kinds(run)
            self._report_outage(run)
            fatal = every_kind_failed(tracked=run.tracked, failures=self._failed, resources=run.resources, namespace=self.namespace,
                                      context_namespace=self.context_namespace, synced=run.synced_at is not None)
            if fatal is not None:
                raise fatal
        self._throttle_notices.report(self._throttle.take_news())
        self._advance_sync(run, now)
        writer.tick()
        self._post(run)
        if run.synced_at is not None and now - run.last_view >= VIEW_EVERY:
            run.last_view = now
            self._show_live(run, now)
        return True

    def _post(self, run: _Run) -> None:
        """The round's samples for ``/healthz``, ``/readyz`` and ``/metrics``, read under the writer's lock."""
        writer, synced, failed = run.writer, run.synced_at is not None, tuple(str(g) for g in self._failed)
        with writer.hold():
            outages = tuple(str(g) for g in run.ingest.coverage.outages)
            if self.metrics is not None:
                size = self.rec.cache.size_bytes() if self.metrics.size_due(time.monotonic()) else None
                self.metrics.post(read_sample(ingest=run.ingest, committed=writer.last_commit, synced=synced, served=run.resources,
                                              kinds=dict.fromkeys([*self.config.tracked, *run.watched]), failed=self._failed,
                                              counters=self._counters, pruner=self.pruner, cache_bytes=size,
                                              throttled=self._throttle.counts()))
        if self.health is not None:
            self.health.post(HealthSample(committed=writer.last_commit, synced=synced, outages=outages, failed=failed))

    def _advance_sync(self, run: _Run, now: float) -> None:
        """The initial sync: its progress, then the sync mark once every kind listed."""
        if run.synced_at is not None:
            return  # every round of a run's life comes here: once synced, nothing to look at
        with run.writer.hold():
            settled = all(self._settled(run.ingest, g) for g in run.watched)
        if settled or now - run.last_view >= VIEW_EVERY:
            run.last_view = now
            self._show_sync(run)
        if settled:
            run.synced_at = self.clock()
            run.writer.mark_synced(run.run_id, run.synced_at)
            self.progress.synced(run.synced_at - run.started)
            self._check_namespace(run)
            run.reconciliation = self._reconcile(run)
            if run.ingest.versions.unchanged:  # after the report, which follows the sync line
                self.progress.note(f"{counted(run.ingest.versions.unchanged, 'listed object')} as the last run's clean stop left them: "
                                   "not walked again")
            gc.freeze()  # the live index is long-lived: keep full collections from walking it
            if self._gc_enabled:
                gc.enable()
            if self.retention is not None:  # --retain: its passes start once the history is whole
                self.pruner = start_retention(self.retention, cache=self.rec.cache, writer=run.writer, stop=self.stop,
                                              tell=self.progress.note)

    def _show_live(self, run: _Run, now: float) -> None:
        """The live status line; the rates are measured over the last ``RATE_WINDOW`` seconds (``progress.Rates``)."""
        ingest = run.ingest
        rate, updates_rate = run.rates.sample(now, ingest.events_recorded, ingest.updates_seen)
        self.progress.live(events=ingest.events_recorded, pods=len(ingest.pods), rate=rate, updates_rate=updates_rate,
                           left=None if run.deadline is None else max(0.0, run.deadline - now))

    def _finish(self, run: _Run, *, clean: bool, saved_gc: collector.SavedGC) -> float:
        """Stop the watches, commit (clean) or roll back the open batch, and record the run's end; returns it."""
        self.stop.set()
        if self.health is not None:
            self.health.stopping()
        clean = clean and run.writer.fatal is None
        # the watch threads write nothing after this; what they received before the stop is committed
        run.writer.close(clean=clean)
        stopped = self.clock()
        collector.restore(saved_gc)
        if clean:  # the versions applied last, for the next start (``unchanged``): a run that did not stop cleanly leaves none
            keep(self.rec, run.run_id, run.ingest.versions, run.ingest.status.known)
        self.rec.stop_run(run.run_id, stopped, clean=clean)
        if clean:
            self.rec.cache.checkpoint()
        # the watch threads write nothing after ``close``: no need to wait for them (daemons, they end with the process)
        self._throttle_notices.report(self._throttle.take_news(final=True))  # requests that passed, however lately
        self.progress.close()
        return stopped

    def _give_up(self, run: _Run, *, saved_gc: collector.SavedGC) -> None:
        """The writer is stuck (``WriterStuck``): the run ends without it, at once. What was committed stands; the
        stuck thread's open batch is lost, as a ``kill -9`` loses it, and nothing more is written: the run's row keeps
        its last heartbeat as its end, so ``status`` and the next start see it ended there (crashed, not clean), and the
        next start reconciles from there."""
        self.stop.set()
        run.writer.abandon()
        if self.health is not None:
            self.health.stopping()
        collector.restore(saved_gc)
        self.progress.close()

    def _summary(self, run: _Run, stopped: float) -> Summary:
        rows = tuple(
            SummaryRow(str(g), s.listed, s.applied, s.deleted_live, s.deleted_offline, s.caught_up, s.lifecycles, s.metadata, s.data)
            for g, s in sorted(run.ingest.stats.items(), key=lambda kv: str(kv[0]))
            if g in self.config.tracked or g == POD
        )
        return Summary(cache=str(self.rec.cache.path), run_id=run.run_id, started=run.started, stopped=stopped,
                       synced=run.synced_at, events=run.ingest.events_recorded, rows=rows, warnings=tuple(self.warnings),
                       outages=tuple(g for g in outages_of(self.rec.cache) if g.run_id == run.run_id),
                       reconciliation=run.reconciliation,
                       unserved=tuple(u for u in unserved_spans(self.rec.cache) if u.run_id == run.run_id))

    def _reconcile(self, run: _Run) -> Reconciliation | None:
        """Once, right after the sync mark: what the initial lists found changed while offline, read back from the
        cache (the report ``status`` gives for this run), shown to the person."""
        from kubectl_sktrace.store.reconciliation import reconciliation

        with run.writer.hold():  # the watch threads write on the same connection
            report = reconciliation(self.rec.cache, run_id=run.run_id)
        if report is None or report.synced is None:
            return None  # the writer closed before the sync mark (a fatal error is on its way)
        self.progress.reconciled(report)
        return report

    # -- pieces ---------------------------------------------------------------------------------------

    def _discover(self) -> dict[GVK, Any]:
        wanted = list(dict.fromkeys([*self.config.tracked, POD, *OWNER_KINDS.values()]))
        cached = self.rec.load_discovery()
        resources, docs = self.kube.discover(wanted, cached=cached)
        if docs:
            self.rec.save_discovery(docs, fetched=self.clock())
        self._discovery = {**cached, **docs}
        from kubectl_sktrace.kube.discovery import misspelt_kind

        missing = [g for g in self.config.tracked if g not in resources]
        for gvk in missing:  # a kind its group-version serves by another spelling: a typo, said so when it is not served
            meant = misspelt_kind(gvk, self._discovery)
            if meant is not None:
                self._kind_notices.meant[gvk] = meant
        if len(missing) == len(self.config.tracked):
            raise KubeError(
                "none of the configured kinds is served by this cluster ("
                + ", ".join(str(g) for g in missing) + "); fix the GVKs in --config"
            )
        return dict(resources)

    def _untrack(self, run_id: int, kinds: list[GVK], started: float) -> None:
        """The config no longer tracks these kinds (or tracks them otherwise): their objects leave the history at
        this run's start, before the relists (a kind tracked again starts a new history with them)."""
        if not kinds:
            return
        with self.rec.batch():
            counts = {gvk: self.rec.untrack(run_id, gvk, ts=started) for gvk in kinds}
        for gvk, count in counts.items():
            verb = "no longer tracked" if gvk not in self.config.tracked else "tracked with other options"
            self._warn(f"{gvk} is {verb} by this config: its {counted(count, 'live object')} leave the history at this run's start; "
                       "earlier history is kept")

    def _report_kinds(self, run: _Run) -> None:
        """One line per kind that stopped or started being readable; a kind refused stays in ``_failed`` until recorded."""
        with run.writer.hold():
            news = run.ingest.coverage.take_news()
        self._kind_notices.report(news, failed=self._failed)

    def _report_outage(self, run: _Run) -> None:
        ingest = run.ingest
        with run.writer.hold():
            cover = ingest.coverage
            open_now, resumed, opened, last = dict(cover.outages), cover.last_resumed, cover.outages_opened, cover.last_outage
        self._notices.report(open_now=open_now, resumed=resumed, opened=opened, last=last)

    def _watch_vigil(self) -> None:
        """A thread that only sleeps and checks, so a stall it sees is the process's, never a busy lock's."""
        vigil, stop = self._vigil, self.stop

        def target() -> None:
            while not stop.wait(0.5):
                vigil.check()

        threading.Thread(target=target, name="vigil", daemon=True).start()

    def _start_watch(self, gvk: GVK, resource: Any, writer: Writer, *, resume_from: str | None = None) -> None:
        """The watch of ``gvk`` on a thread of its own; ``resource`` None: discovery does not list it (yet). A kind not
        served is looked up again in a fresh discovery document, never the cache's."""
        stop = self.stop

        def target() -> None:
            try:
                self.run_watch(
                    resource=resource, gvk=gvk, namespace=self.namespace,
                    list_page=self._counters.lists(self.kube.list_page), watch=self._counters.watches(self.kube.watch),
                    sink=writer, clock=self.clock, sleep=stop.wait, stop=stop, rng=random.Random(), vigil=self._vigil,
                    retrying=self._notices.count_retry, rediscover=lambda kind: self.kube.discover([kind], cached={})[0].get(kind),
                    pages=self._pages, resume_from=resume_from,
                )
            except BaseException as exc:  # noqa: BLE001 - reported on the main thread
                writer.failed(gvk, exc)

        threading.Thread(target=target, name=f"watch {gvk}", daemon=True).start()

    def _report_failure(self, gvk: GVK, error: BaseException) -> None:
        """A kind refused (403: told with the kinds' news) or given up (one warning; the watch loop only logs it)."""
        self._failed[gvk] = error
        if not isinstance(error, ForbiddenError):
            self._warn(f"watching {gvk} failed: {error}; it is not recorded")


    def _show_sync(self, run: _Run) -> None:
        """The initial sync's progress per kind."""
        with run.writer.hold():
            stats = [(g, dataclasses.replace(run.ingest.stats_for(g))) for g in run.watched]
        for gvk, kind_stats in stats:
            self.progress.kind_progress(gvk, kind_stats)

    def _settled(self, ingest: Ingest, gvk: GVK) -> bool:
        """Listed, not served, or refused and already reported: a failure the watch thread recorded after this round took
        the failures waits for the next round, so the run is never synced before its every-kind-failed check saw it."""
        stats = ingest.stats_for(gvk)
        return stats.initial_done or (stats.failed is not None and gvk in self._failed) or ingest.coverage.not_served(gvk)

    def _fetch(self, resources: Mapping[GVK, Any], key: ObjKey) -> dict[str, Any] | None:
        """GET an owner (None when gone, forbidden or not served): on a watch thread, with no lock held (``writer``)."""
        resource = resources.get(key.gvk)
        if resource is None:
            try:
                found, docs = self.kube.discover([key.gvk], cached=self._discovery)
            except KubeError:
                return None
            self._discovery.update(docs)  # asked once per group-version (one update of a dict: safe across watch threads)
            resource = found.get(key.gvk)
            if resource is None:
                return None
        try:
            obj: dict[str, Any] | None = self.kube.get(resource, namespace=key.namespace or None, name=key.name)
            return obj
        except KubeError as exc:
            log.info("cannot GET owner %s: %s", key, exc)
            return None

    def _check_namespace(self, run: _Run) -> None:
        """``-n NS`` and nothing listed in it: a namespace that does not exist (a typo, most likely) is said, once the
        lists are done; one that exists and is empty, or that this user may not GET, is not."""
        if not self.namespace:
            return
        with run.writer.hold():
            listed = sum(run.ingest.stats_for(g).listed for g in run.watched)
        if listed:
            return
        from kubectl_sktrace.kube.discovery import Resource

        namespaces = Resource(GVK("", "v1", "Namespace"), "namespaces", namespaced=False, verbs=frozenset({"get"}))
        try:
            found = self.kube.get(namespaces, namespace=None, name=self.namespace)
        except KubeError:
            return
        if found is None:
            self._warn(f"namespace {self.namespace!r} does not exist: nothing was listed in it; recording what is created "
                       f"there (a typo? 'kubectl get namespaces' lists them)")

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        self.progress.warn(message)
