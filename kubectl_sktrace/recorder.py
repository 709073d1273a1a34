"""The recorder: the single writer that turns watch streams into the cache's history.

Shape (SimKube's store, made durable): one watch thread per kind runs ``watching.run_watch`` and hands what
it sees to the ``Writer``, which applies the pure rules (sanitize, change detection, lifecycles, owners) in
``Ingest`` on that thread, under one lock, so the cache keeps a single writer. Writes go in batched ``BEGIN
IMMEDIATE`` transactions committed at least every ``COMMIT_INTERVAL`` seconds, moving the run's heartbeat with
each commit so that a ``kill -9`` loses at most the last half second. The main thread commits quiet batches,
starts the pod watch, marks the sync, reports failures and progress, and stops everything.

What each relist reconciles (SPEC §5), per kind and only once that kind's list is complete (so a partial
first sync never deletes kinds not listed yet):

- cached live objects missing from the list are deleted and marked inferred (the real deletion time lies
  between the previous sight and the relist): a kind's first list of the run records them at the run's
  start, the restart, whichever kind is listed first; a later relist at its own time. A listed object with
  another uid is a delete then an apply, both inferred;
- objects that were created while no recorder ran are stamped with their ``creationTimestamp`` when it
  falls inside that gap (inferred), else with the relist time;
- cached Running pods that vanished become Finished(start, that same time) with ``end_inferred``; listed
  pods that finished offline get their real end from their container states.

Owner chains of pods are resolved at first sight from, in order: owner kinds watched cheaply alongside the
tracked ones (ReplicaSets for Deployments, Jobs for CronJobs), the ``owners`` table, then a GET (cached). The
Pod watch starts only after every other kind finished its initial list, so the 50,000 pods of a large
cluster find their owners in memory instead of costing thousands of GETs.

Memory follows the live cluster, not the history: keys, uids, hashes and lifecycles only; bodies go to disk.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import math
import os
import random
import signal
import threading
import time
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Protocol

from kubectl_sktrace import changes, hashing, lifecycle, owners, sanitize, watching
from kubectl_sktrace.errors import CacheError, ForbiddenError, KubeError
from kubectl_sktrace.model import GVK, POD, ObjKey
from kubectl_sktrace.store.history import CoverageGap, coverage_gaps
from kubectl_sktrace.store.recording import OP_APPLIED, OP_DELETED, EventRow, Identity, OwnerRecord, Recording
from kubectl_sktrace.tracerconfig import TracerConfig

if TYPE_CHECKING:
    from kubectl_sktrace.kube import ClusterClient

log = logging.getLogger(__name__)

COMMIT_INTERVAL = 0.25
"""Seconds a batch may stay open: half the SPEC's bound, so a commit never lags more than 0.5 s."""

IDLE_COMMIT = 0.05
"""Commit early when nothing was written for this long: low traffic is durable at once."""

HEARTBEAT = 1.0
"""Seconds between commits that only move the run's ``stopped`` forward when nothing else is written."""

MALFORMED = (KeyError, TypeError, ValueError, AttributeError, KubeError)
"""What reading an object that breaks the API's shape raises (``sanitize`` says so with a KubeError): that object
is skipped and logged, not fatal."""

GC_THRESHOLD = 50_000
"""The cyclic GC's first threshold while recording: raw API objects are acyclic dicts made by the thousand,
and the default (700) spends a fifth of the ingest time collecting nothing (NOTES: gc while parsing)."""

REPLICASET = GVK("apps", "v1", "ReplicaSet")
DEPLOYMENT = GVK("apps", "v1", "Deployment")
JOB = GVK("batch", "v1", "Job")
CRONJOB = GVK("batch", "v1", "CronJob")
OWNER_KINDS: dict[GVK, GVK] = {DEPLOYMENT: REPLICASET, CRONJOB: JOB}
"""A tracked kind with lifecycles -> the intermediate kind between it and its pods, watched for owner chains."""


@dataclass
class KindStats:
    """Counters per kind for the progress line and the end-of-run summary."""

    listed: int = 0
    applied: int = 0
    deleted_live: int = 0
    deleted_offline: int = 0
    caught_up: int = 0  # changes found after an API outage (applied or deleted), not seen live
    lifecycles: int = 0
    pages: int = 0
    initial_done: bool = False
    failed: str | None = None


@dataclass(frozen=True)
class Outage:
    """A kind's coverage gap while it lasts: its row, since when, and why."""

    gap_id: int
    since: float
    cause: str
    detail: str


@dataclass
class _Pod:
    __slots__ = ("namespace", "name", "owner", "life")
    namespace: str
    name: str
    owner: GVK | None
    life: lifecycle.Lifecycle


@dataclass
class _Relist:
    ts: float
    seen: dict[ObjKey, str] = field(default_factory=dict)  # tracked key -> uid listed
    seen_pods: set[str] = field(default_factory=set)  # pod uids listed
    initial: bool = False
    recovery: bool = False  # the relist ends an outage: what it finds was caught up, not seen live
    broken: int = 0  # items that could not be read: the list is then not trusted for deletions


class Ingest:
    """The recorder's rules applied to sink messages, written through ``Recording``. Not thread-safe: the
    ``Writer`` serializes the calls.

    ``fetch_owner(key) -> dict | None`` GETs an owner object (None when gone or forbidden); ``gap_start`` is
    when the previous run last wrote (None for a fresh cache): objects created after it were created offline.
    ``restart`` is when this run started: what a kind's first list finds gone is recorded at that time, one
    time for every kind however long the lists take (None: at each list's own time). ``fresh`` kinds were not
    tracked (or not so) by the previous run: their first list records the cluster as it is, at the list's time,
    not as changes made offline.
    """

    def __init__(
        self, *, recording: Recording, run_id: int, config: TracerConfig, owner_kinds: set[GVK],
        fetch_owner: Callable[[ObjKey], dict[str, Any] | None], gap_start: float | None, restart: float | None = None,
        fresh: frozenset[GVK] = frozenset(),
    ) -> None:
        self.rec = recording
        self.run_id = run_id
        self.restart = restart
        self.config = config
        self.tracked = config.tracked
        self.owner_kinds = owner_kinds
        self.fetch_owner = fetch_owner
        self.stats: dict[GVK, KindStats] = {}
        self.events_recorded = 0
        self.updates_seen = 0  # watch events received, whether or not they changed anything
        live = recording.load_live_objects()
        self.live: dict[GVK, dict[ObjKey, changes.Known]] = {gvk: {} for gvk in self.tracked}
        for key, row in live.items():
            self.live.setdefault(key.gvk, {})[key] = changes.Known(row.uid, row.spec_hash)
        self.pods: dict[str, _Pod] = {
            p.uid: _Pod(p.namespace, p.name, p.owner_gvk, lifecycle.Lifecycle(p.start_ts, p.end_ts))
            for p in recording.load_live_pods().values()
        }
        self.owners: dict[ObjKey, OwnerRecord] = recording.load_owners()
        # kinds the previous run did not track (as now) start their history here: nothing of theirs happened "offline"
        self._gap_start: dict[GVK, float | None] = {gvk: None for gvk in fresh}
        self._default_gap = gap_start
        self._relists: dict[GVK, _Relist] = {}
        self._resource_versions: dict[GVK, str] = {}
        self._pending_rv: dict[GVK, str] = {}
        self.outages: dict[GVK, Outage] = {}  # kind -> its open coverage gap (an outage in progress)
        self._heartbeat = -math.inf  # the last heartbeat committed by this run
        self.last_resumed = 0.0  # when a kind last watched again after an outage
        self.last_outage: Outage | None = None
        self.outages_opened = 0
        self._catch_up: dict[GVK, int] = {}  # kind -> horizon: events up to this resourceVersion were missed live

    # -- the Sink, applied ---------------------------------------------------------------------------

    def relist_begin(self, gvk: GVK, ts: float) -> None:
        stats = self.stats_for(gvk)
        self._relists[gvk] = _Relist(ts=ts, initial=not stats.initial_done, recovery=gvk in self.outages)

    def relist_page(self, gvk: GVK, items: list[dict[str, Any]], ts: float) -> None:
        relist = self._relists.get(gvk) or self._relists.setdefault(gvk, _Relist(ts=ts))
        stats = self.stats_for(gvk)
        stats.pages += 1
        if relist.initial:
            stats.listed += len(items)
        for obj in items:
            try:
                if gvk in self.tracked:
                    key = self._apply(gvk, obj, relist.ts, relist=True, caught_up=relist.recovery)
                    if key is not None:
                        relist.seen[key] = sanitize.object_uid(obj)
                if gvk == POD:
                    relist.seen_pods.add(self._pod(obj, relist.ts, deleted=False))
                if gvk in self.owner_kinds:
                    self._remember_owner(gvk, obj, relist.ts)
            except MALFORMED as exc:
                relist.broken += 1
                log.warning("%s: skipped a listed object that cannot be read (%s: %s)", gvk, type(exc).__name__, exc)

    def relist_end(self, gvk: GVK, resource_version: str, ts: float) -> None:
        relist = self._relists.pop(gvk, None) or _Relist(ts=ts)
        stats = self.stats_for(gvk)
        gone = self.restart if relist.initial and self.restart is not None else relist.ts
        if relist.broken:
            log.warning("%s: %d listed objects could not be read; no deletions inferred from this list", gvk, relist.broken)
        elif gvk in self.tracked:
            live = self.live.setdefault(gvk, {})
            for key in changes.vanished(live, relist.seen):
                self._delete(key, live.pop(key).uid, gone, inferred=True)
                self.owners.pop(key, None)
                if relist.recovery:
                    stats.caught_up += 1
                else:
                    stats.deleted_offline += 1
            self.rec.touch_objects(gvk, relist.ts)
        if gvk == POD and not relist.broken:
            second = changes.event_second(gone)
            for uid in [uid for uid in self.pods if uid not in relist.seen_pods]:
                self._pod_gone(uid, second, gone, inferred=True)
        self._gap_start[gvk] = relist.ts
        self._resource_versions[gvk] = resource_version
        self._pending_rv[gvk] = resource_version
        stats.initial_done = True

    def event(self, gvk: GVK, event_type: str, obj: dict[str, Any], ts: float) -> None:
        self.updates_seen += 1
        try:
            self._event(gvk, event_type, obj, ts)
        except MALFORMED as exc:
            log.warning("%s: skipped a %s event that cannot be read (%s: %s)", gvk, event_type, type(exc).__name__, exc)

    def _event(self, gvk: GVK, event_type: str, obj: dict[str, Any], ts: float) -> None:
        deleted = event_type == "DELETED"
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        caught_up = gvk in self._catch_up and self._caught_up(gvk, rv)
        if gvk in self.tracked:
            if deleted:
                key = sanitize.object_key(obj, gvk)
                live = self.live.get(gvk, {})
                known = live.get(key)
                # identity, not names: a DELETED event for a predecessor (another uid) leaves the successor live
                if known is not None and changes.same_uid(known.uid, sanitize.object_uid(obj)):
                    del live[key]
                    self.owners.pop(key, None)
                    self._delete(key, known.uid, ts, inferred=caught_up)
                    stats = self.stats_for(gvk)
                    if caught_up:
                        stats.caught_up += 1
                    else:
                        stats.deleted_live += 1
            else:
                self._apply(gvk, obj, ts, relist=False, caught_up=caught_up)
        if gvk == POD:
            self._pod(obj, ts, deleted=deleted, caught_up=caught_up)
        if gvk in self.owner_kinds:
            if deleted:
                key = sanitize.object_key(obj, gvk)
                record = self.owners.get(key)
                if record is not None and changes.same_uid(record.uid, sanitize.object_uid(obj)):
                    del self.owners[key]
            else:
                self._remember_owner(gvk, obj, ts)
        self._gap_start[gvk] = ts
        if rv:
            self._pending_rv[gvk] = str(rv)

    def _caught_up(self, gvk: GVK, rv: Any) -> bool:
        """Whether an event of a resumed watch happened during the outage (up to the horizon); the first
        event past the horizon ends the catch-up. A version that is not a number ends it too (live, as before)."""
        try:
            if int(rv) <= self._catch_up[gvk]:
                return True
        except (TypeError, ValueError):
            pass
        del self._catch_up[gvk]
        return False

    def failed(self, gvk: GVK, error: BaseException) -> None:
        self.stats_for(gvk).failed = str(error)

    def interrupted(self, gvk: GVK, since: float, cause: str, detail: str) -> None:
        """The kind's watch failed: a coverage gap opens at its last proof of liveness (closed by ``resumed``;
        a run that ends first closes it at its end)."""
        if gvk not in self.outages:
            gap_id = self.rec.open_gap(self.run_id, gvk, since=since, cause=cause, detail=detail)
            self.outages[gvk] = self.last_outage = Outage(gap_id, since, cause, detail)
            self.outages_opened += 1
            self._catch_up.pop(gvk, None)

    def resumed(self, gvk: GVK, ts: float, horizon: str | None) -> None:
        """The kind is watched again at ``ts``; a resumed watch's events up to ``horizon`` are caught up."""
        outage = self.outages.pop(gvk, None)
        if outage is None:
            return
        self.rec.close_gap(outage.gap_id, until=ts)
        self.last_resumed = ts
        if horizon is not None:
            try:
                self._catch_up[gvk] = int(horizon)
            except ValueError:
                log.debug("%s: resourceVersion %r is not a number; events after the outage count as live", gvk, horizon)

    # -- batching hooks ------------------------------------------------------------------------------

    def before_commit(self, ts: float) -> None:
        """Inside the open batch: the heartbeat and the watch positions reached."""
        for gvk, rv in self._pending_rv.items():
            self.rec.set_watch_state(gvk, rv, ts)
        self._pending_rv.clear()
        self.rec.heartbeat(self.run_id, ts)
        self._heartbeat = max(self._heartbeat, ts)

    def _written(self, recv: float) -> float:
        """The ``recv`` stored for a row: when it was received, but never before a heartbeat already committed.
        An event received before a commit may be written after it (it waited for the writer, or a relist stamps
        its pages with the list's start); exports rely on "every row received before a heartbeat was committed
        with it" (``history.known_until``), so such a row counts as received after that heartbeat."""
        return recv if recv >= self._heartbeat else self._heartbeat

    # -- rules ----------------------------------------------------------------------------------------

    def stats_for(self, gvk: GVK) -> KindStats:
        """The counters of one kind (created on first use)."""
        stats = self.stats.get(gvk)
        if stats is None:
            stats = self.stats[gvk] = KindStats()
        return stats

    def _gap(self, gvk: GVK) -> float | None:
        return self._gap_start.get(gvk, self._default_gap)

    def _apply(self, gvk: GVK, obj: dict[str, Any], recv: float, *, relist: bool, caught_up: bool = False) -> ObjKey | None:
        options = self.tracked[gvk]
        if changes.is_skipped_owned(obj, skip_owned=options.skip_owned):
            return None
        key = sanitize.object_key(obj, gvk)
        uid = sanitize.object_uid(obj)
        live = self.live.setdefault(gvk, {})
        known = live.get(key)
        decision = changes.decide_applied(known=known, uid=uid, spec_hash=hashing.spec_hash(obj.get("spec")))
        gap = self._gap(gvk) if relist else None
        inferred = caught_up or (relist and gap is not None)
        second = changes.event_second(recv)
        stats = self.stats_for(gvk)
        created = sanitize.creation_time(obj)
        ts = second
        if (known is None or decision.delete_first) and gap is not None and created is not None and gap < created < recv:
            ts = min(second, int(created))  # created while offline: stamped with its creation time (inferred)
        if decision.delete_first and known is not None:
            # the old object was gone before its successor was created: its deletion takes the successor's
            # time, recorded first (export keeps the two in order, in two events of that second)
            self._delete(key, known.uid, recv, inferred=inferred, ts=ts)
            if caught_up:
                stats.caught_up += 1
            elif inferred:
                stats.deleted_offline += 1
            else:
                stats.deleted_live += 1
        refs = owners.owner_refs(obj)
        if refs:
            self._store_owner(key, OwnerRecord(uid, tuple((r.gvk, r.name, r.uid) for r in refs)), recv)
        if not decision.apply:
            return key
        chain = tuple(owners.resolve_chain(obj, namespace=key.namespace, lookup=self._lookup)) if refs else ()
        body = sanitize.sanitize(obj, gvk=gvk, keep_secret_data=options.keep_secret_data)
        self.rec.append_event(
            self.run_id,
            EventRow(ts=ts, recv=self._written(recv), key=key, uid=uid, op=OP_APPLIED, inferred=inferred, spec_hash=decision.spec_hash,
                     owner_chain=chain or None, body=body),
        )
        self.events_recorded += 1
        meta = obj.get("metadata") or {}
        self.rec.upsert_object(key, uid=uid, spec_hash=decision.spec_hash, resource_version=str(meta.get("resourceVersion") or ""),
                               created=created, seen=recv)
        live[key] = changes.Known(uid, decision.spec_hash)
        stats.applied += 1
        if caught_up:
            stats.caught_up += 1
        return key

    def _delete(self, key: ObjKey, uid: str, recv: float, *, inferred: bool, ts: int | None = None) -> None:
        second = changes.event_second(recv) if ts is None else ts
        self.rec.append_event(self.run_id, EventRow(ts=second, recv=self._written(recv), key=key, uid=uid, op=OP_DELETED,
                                                    inferred=inferred))
        self.rec.delete_object(key)
        self.events_recorded += 1

    def _pod(self, obj: dict[str, Any], recv: float, *, deleted: bool, caught_up: bool = False) -> str:
        uid = sanitize.object_uid(obj)
        derived = lifecycle.derive_lifecycle(obj)
        known = self.pods.get(uid)
        second = changes.event_second(recv)
        if known is None:
            meta = obj.get("metadata") or {}
            namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
            chain = owners.resolve_chain(obj, namespace=namespace, lookup=self._lookup) if owners.owner_refs(obj) else []
            owner = owners.lifecycle_owner(pod_key=ObjKey(POD, namespace, name), chain=chain, is_tracked_lifecycle_owner=self._is_lifecycle_owner)
            stable = hashing.pod_spec_hash(obj.get("spec") or {}) if owner is not None else None
            self.rec.insert_pod(uid=uid, namespace=namespace, name=name, owner=owner, stable_hash=stable,
                                start_ts=derived.start, end_ts=derived.end, seen=self._written(recv))
            known = self.pods[uid] = _Pod(namespace, name, None if owner is None else owner.gvk, derived)
            if owner is not None and derived.start is not None:
                self.stats_for(owner.gvk).lifecycles += 1
        else:
            kept, refusal = lifecycle.merge_lifecycle(known.life, derived)
            if refusal:
                log.info("pod %s/%s: %s", known.namespace, known.name, refusal)
            if kept != known.life:
                if known.owner is not None and known.life.start is None and kept.start is not None:
                    self.stats_for(known.owner).lifecycles += 1
                known.life = kept
                self.rec.update_pod(uid, start_ts=kept.start, end_ts=kept.end, end_inferred=False, live=True, seen=recv)
        if deleted:
            self._pod_gone(uid, second, recv, inferred=caught_up)
        return uid

    def _pod_gone(self, uid: str, second: int, recv: float, *, inferred: bool) -> None:
        known = self.pods.pop(uid)
        ended = lifecycle.on_pod_gone(known.life, ts=second)
        self.rec.update_pod(uid, start_ts=ended.start, end_ts=ended.end, end_inferred=inferred and ended != known.life,
                            live=False, seen=recv)

    def _remember_owner(self, gvk: GVK, obj: dict[str, Any], recv: float) -> None:
        key = sanitize.object_key(obj, gvk)
        record = OwnerRecord(sanitize.object_uid(obj), tuple((r.gvk, r.name, r.uid) for r in owners.owner_refs(obj)))
        self._store_owner(key, record, recv)

    def _store_owner(self, key: ObjKey, record: OwnerRecord, recv: float) -> None:
        if self.owners.get(key) != record:
            self.owners[key] = record
            self.rec.upsert_owner(key, record, fetched=recv)

    def _lookup(self, ref: owners.OwnerRef, namespace: str) -> list[owners.OwnerRef] | None:
        """The owner references of an owner: memory, then the tracked live index, then the cache, then a GET."""
        key = ref.key(namespace)
        record = self.owners.get(key)
        if record is None and key in self.live.get(key.gvk, {}):
            return []
        if record is None:
            record = self.rec.load_owner(key)
        if record is None or not changes.same_uid(ref.uid, record.uid):
            # unknown, or known under another uid: the cache is stale (the owner may have been re-created under
            # the same name while its own kind has not been relisted yet), so ask the cluster what exists now
            record = self._fetch_owner(key)
            if record is None:
                return None
        self.owners[key] = record
        if not changes.same_uid(ref.uid, record.uid):
            log.info("owner %s is gone: its name now belongs to another object", key)
            return None
        return [owners.OwnerRef(g, n, u) for g, n, u in record.refs]

    def _fetch_owner(self, key: ObjKey) -> OwnerRecord | None:
        obj = self.fetch_owner(key)
        if obj is None:
            log.info("owner %s cannot be resolved (gone or forbidden)", key)
            return None
        record = OwnerRecord(sanitize.object_uid(obj), tuple((r.gvk, r.name, r.uid) for r in owners.owner_refs(obj)))
        self.rec.upsert_owner(key, record, fetched=time.time())
        return record

    def _is_lifecycle_owner(self, key: ObjKey) -> bool:
        options = self.tracked.get(key.gvk)
        if options is None or not options.track_lifecycle:
            return False
        return key in self.live.get(key.gvk, {}) or key in self.owners


class Writer:
    """The ``watching.Sink`` the watch threads call: each call applies the rules and writes, under one lock.

    The thread that receives an event applies it, so a pod event is parsed, judged and freed on one thread
    (handing parsed objects to another thread cost the GIL hand-off and the cross-core frees of every event,
    more CPU than the rules themselves). The lock keeps the cache single-writer: one connection, one batch
    at a time. A batch is committed by whichever thread holds the lock once it is ``COMMIT_INTERVAL`` old,
    and by the main thread's ``tick`` once it has gone quiet; after ``close`` nothing more is written.

    What escapes ``Ingest`` (which skips unreadable objects itself) means the cache or the writing failed: a
    sqlite error, a full disk, a ``CacheError``. That is fatal to the run, not to one kind: it is kept in
    ``fatal`` for the main thread to raise, and nothing more is written. A kind's own failure (403, a kind
    no longer served) is queued in ``failures`` for its warning, and the other kinds go on.
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

    # -- the Sink (watch threads) ----------------------------------------------------------------------

    def relist_begin(self, gvk: GVK, ts: float) -> None:
        self._write(self.ingest.relist_begin, gvk, ts)

    def relist_page(self, gvk: GVK, items: list[dict[str, Any]], ts: float) -> None:
        self._write(self.ingest.relist_page, gvk, items, ts)

    def relist_end(self, gvk: GVK, resource_version: str, ts: float) -> None:
        self._write(self.ingest.relist_end, gvk, resource_version, ts)

    def event(self, gvk: GVK, event_type: str, obj: dict[str, Any], ts: float) -> None:
        self._write(self.ingest.event, gvk, event_type, obj, ts)

    def interrupted(self, gvk: GVK, since: float, cause: str, detail: str) -> None:
        self._write(self.ingest.interrupted, gvk, since, cause, detail)

    def resumed(self, gvk: GVK, ts: float, horizon: str | None) -> None:
        self._write(self.ingest.resumed, gvk, ts, horizon)

    def failed(self, gvk: GVK, error: BaseException) -> None:
        with self.lock:
            if isinstance(error, CacheError):
                self.fatal = self.fatal or error
                self._closed = True
            elif not self._closed:
                self.ingest.failed(gvk, error)
                self.failures.append((gvk, error))

    def _write(self, apply: Callable[..., None], *args: Any) -> None:
        with self.lock:
            if self._closed:
                return
            now = time.monotonic()
            try:
                if self._opened is None:
                    self.rec.begin()
                    self._opened = now
                apply(*args)
                self._last_write = now
                if now - self._opened >= COMMIT_INTERVAL:
                    self._commit(now)
            except BaseException as exc:
                self.fatal, self._closed = exc, True
                raise

    # -- the main thread -------------------------------------------------------------------------------

    @property
    def in_batch(self) -> bool:
        return self._opened is not None

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


class ProgressView(Protocol):
    """What the recorder tells the person watching (``progress.Progress``)."""

    def kind_progress(self, gvk: GVK, stats: KindStats) -> None: ...
    def synced(self, seconds: float) -> None: ...
    def live(self, *, events: int, pods: int, rate: float, updates_rate: float, left: float | None) -> None: ...
    def warn(self, message: str) -> None: ...
    def note(self, message: str) -> None: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class SummaryRow:
    kind: str
    listed: int
    applied: int
    deleted_live: int
    deleted_offline: int
    caught_up: int
    lifecycles: int


@dataclass(frozen=True)
class Summary:
    cache: str
    run_id: int
    started: float
    stopped: float
    synced: float | None
    events: int
    rows: tuple[SummaryRow, ...]
    warnings: tuple[str, ...]
    outages: tuple[CoverageGap, ...] = ()


class Session:
    """One ``start``: the watch threads, the consumer loop and the run bookkeeping, around an open cache.

    ``kube`` offers ``discover``, ``cluster_identity``, ``list_page``, ``watch`` and ``get`` (``kube.Kube``);
    ``run_watch`` is ``watching.run_watch``. Both are injected so tests can run the loop on fakes.
    ``context_namespace`` is the kubeconfig context's namespace: what to suggest to a user refused everywhere else.
    """

    def __init__(
        self, *, kube: ClusterClient, recording: Recording, config: TracerConfig, identity: Identity, namespace: str | None,
        duration: float | None, stop: threading.Event, progress: ProgressView,
        run_watch: Callable[..., None], clock: Callable[[], float] = time.time, context_namespace: str | None = None,
    ) -> None:
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
        self._failed: dict[GVK, BaseException] = {}
        self._vigil = watching.Vigil(clock=clock, monotonic=time.monotonic)
        self._outage: Outage | None = None  # the outage reported to the person, until every kind watches again
        self._outages_told = 0

    def run(self) -> Summary:
        from kubectl_sktrace.tracerconfig import config_change, config_to_yaml, stored_config

        self.rec.check_identity(self.identity)
        previous = self.rec.previous_run()
        started = self.clock()
        resources = self._discover()
        tracked = [g for g in self.config.tracked if g in resources]
        owner_kinds = {OWNER_KINDS[g] for g in tracked if g in OWNER_KINDS and self.config.tracked[g].track_lifecycle}
        owner_kinds = {g for g in owner_kinds if g in resources and g not in self.config.tracked}
        before = stored_config(self.rec.previous_config())
        run_id = self.rec.begin_run(started=started, pid=os.getpid(), config_yaml=config_to_yaml(self.config))
        fresh: frozenset[GVK] = frozenset()
        if before is not None:
            change = config_change(before, self.config)
            self._untrack(run_id, [*change.dropped, *change.changed], started)
            fresh = frozenset([*change.added, *change.changed])
        ingest = Ingest(
            recording=self.rec, run_id=run_id, config=self.config, owner_kinds=owner_kinds,
            fetch_owner=lambda key: self._fetch(resources, key), gap_start=None if previous is None else previous.stopped,
            restart=started, fresh=fresh,
        )
        writer = Writer(ingest, self.rec, clock=self.clock)
        self._watch_vigil()
        first_wave = list(dict.fromkeys([*tracked, *sorted(owner_kinds)]))
        first_wave = [g for g in first_wave if g != POD]
        for gvk in first_wave:
            self._start_watch(resources[gvk], writer)
        watched = list(first_wave)
        pods_pending = POD in resources
        synced_at: float | None = None
        deadline = None if self.duration is None else time.monotonic() + self.duration
        clean = False
        saved_gc = gc.get_threshold()
        gc.set_threshold(GC_THRESHOLD, saved_gc[1], saved_gc[2])
        last_view = 0.0
        rate_mark = (time.monotonic(), 0, 0)
        rate = updates_rate = 0.0
        try:
            while True:
                self.stop.wait(IDLE_COMMIT if writer.in_batch else 0.2)
                if writer.fatal is not None:
                    raise writer.fatal
                now_mono = time.monotonic()
                if self.stop.is_set() or (deadline is not None and now_mono >= deadline):
                    break
                for gvk, error in writer.take_failures():
                    self._report_failure(gvk, error)
                self._report_outage(ingest, writer)
                self._check_failures(tracked, resources)
                with writer.lock:
                    settled = all(self._settled(ingest, g) for g in watched)
                if synced_at is None and (settled or now_mono - last_view >= 0.5):
                    last_view = now_mono
                    self._show_sync(ingest, writer, watched)
                if pods_pending and settled:
                    self._start_watch(resources[POD], writer)
                    watched.append(POD)
                    pods_pending = False
                elif synced_at is None and not pods_pending and settled:
                    synced_at = self.clock()
                    writer.mark_synced(run_id, synced_at)
                    self.progress.synced(synced_at - started)
                    gc.freeze()  # the live index is long-lived: keep full collections from walking it
                writer.tick()
                if synced_at is not None and now_mono - last_view >= 0.5:
                    last_view = now_mono
                    mark_t, mark_n, mark_u = rate_mark
                    if now_mono - mark_t >= 2.0:
                        rate = (ingest.events_recorded - mark_n) / (now_mono - mark_t)
                        updates_rate = (ingest.updates_seen - mark_u) / (now_mono - mark_t)
                        rate_mark = (now_mono, ingest.events_recorded, ingest.updates_seen)
                    self.progress.live(events=ingest.events_recorded, pods=len(ingest.pods), rate=rate,
                                       updates_rate=updates_rate,
                                       left=None if deadline is None else max(0.0, deadline - now_mono))
            self._report_outage(ingest, writer)  # an outage that ended since the last round is said to be over
            clean = True
        except KubeError:
            clean = True  # a reported cluster error (every kind forbidden): what was written stands, the cache is sound
            raise
        finally:
            self.stop.set()
            clean = clean and writer.fatal is None
            # the watch threads write nothing after this; what they received before the stop is committed
            writer.close(clean=clean)
            stopped = self.clock()
            gc.set_threshold(*saved_gc)
            gc.unfreeze()
            self.rec.stop_run(run_id, stopped, clean=clean)
            if clean:
                self.rec.cache.checkpoint()
            # The watch threads write nothing after ``close``: no need to wait for their streams to notice the
            # stop (up to half a second each); they are daemons and end with the process.
            self.progress.close()
        if writer.fatal is not None:
            raise writer.fatal  # met by a watch thread after the loop ended
        rows = tuple(
            SummaryRow(str(g), s.listed, s.applied, s.deleted_live, s.deleted_offline, s.caught_up, s.lifecycles)
            for g, s in sorted(ingest.stats.items(), key=lambda kv: str(kv[0]))
            if g in self.config.tracked or g == POD
        )
        return Summary(cache=str(self.rec.cache.path), run_id=run_id, started=started, stopped=stopped, synced=synced_at,
                       events=ingest.events_recorded, rows=rows, warnings=tuple(self.warnings),
                       outages=tuple(g for g in coverage_gaps(self.rec.cache) if g.run_id == run_id))

    # -- pieces ---------------------------------------------------------------------------------------

    def _discover(self) -> dict[GVK, Any]:
        wanted = list(dict.fromkeys([*self.config.tracked, POD, *OWNER_KINDS.values()]))
        cached = self.rec.load_discovery()
        resources, docs = self.kube.discover(wanted, cached=cached)
        if docs:
            self.rec.save_discovery(docs, fetched=self.clock())
        missing = [g for g in self.config.tracked if g not in resources]
        for gvk in missing:
            self._warn(f"kind {gvk} is not served by this cluster; it is not recorded (check the config's GVK and the cluster's API versions)")
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
            self._warn(f"{gvk} is {verb} by this config: its {count} live object(s) leave the history at this run's start; "
                       "earlier history is kept")

    def _report_outage(self, ingest: Ingest, writer: Writer) -> None:
        """One warning when kinds stop being watched, one line when all watch again (not one per retry)."""
        from kubectl_sktrace.timeparse import format_duration, format_time

        with writer.lock:
            open_now, resumed, opened, last = dict(ingest.outages), ingest.last_resumed, ingest.outages_opened, ingest.last_outage
        unseen = opened > self._outages_told and not open_now and self._outage is None
        self._outages_told = opened
        if open_now and self._outage is None:
            first = min(open_now.values(), key=lambda o: o.since)
            self._outage = first
            self._warn(f"{first.cause} since {format_time(first.since)} ({first.detail}); "
                       f"{len(open_now)} kind(s) not watched until it recovers, what changes meanwhile is caught up afterwards")
        elif not open_now and self._outage is not None:
            self.progress.note(f"{self._outage.cause} since {format_time(self._outage.since)}: recovered after "
                               f"{format_duration(resumed - self._outage.since)}; every kind is watched again")
            self._outage = None
        elif unseen and last is not None:  # begun and over between two rounds (the whole process stood still)
            self._warn(f"{last.cause} from {format_time(last.since)} for {format_duration(resumed - last.since)} "
                       f"({last.detail}); what changed meanwhile was caught up afterwards")

    def _watch_vigil(self) -> None:
        """A thread that only sleeps and checks, so a stall it sees is the process's, never a busy lock's."""
        vigil, stop = self._vigil, self.stop

        def target() -> None:
            while not stop.wait(0.5):
                vigil.check()

        threading.Thread(target=target, name="vigil", daemon=True).start()

    def _start_watch(self, resource: Any, writer: Writer) -> None:
        gvk = resource.gvk
        stop = self.stop

        def target() -> None:
            try:
                self.run_watch(
                    resource=resource, namespace=self.namespace, list_page=self.kube.list_page, watch=self.kube.watch,
                    sink=writer, clock=self.clock, sleep=stop.wait, stop=stop, rng=random.Random(), vigil=self._vigil,
                )
            except BaseException as exc:  # noqa: BLE001 - reported on the main thread
                writer.failed(gvk, exc)

        threading.Thread(target=target, name=f"watch {gvk}", daemon=True).start()

    def _report_failure(self, gvk: GVK, error: BaseException) -> None:
        """One warning per kind and run (the watch loop only logs it)."""
        self._failed[gvk] = error
        if isinstance(error, ForbiddenError):
            self._warn(f"{error}; {gvk} is not recorded")
        else:
            self._warn(f"watching {gvk} failed: {error}; it is not recorded")

    def _show_sync(self, ingest: Ingest, writer: Writer, watched: list[GVK]) -> None:
        """The initial sync's progress per kind."""
        with writer.lock:
            stats = [(g, dataclasses.replace(ingest.stats_for(g))) for g in watched]
        for gvk, kind_stats in stats:
            self.progress.kind_progress(gvk, kind_stats)

    def _settled(self, ingest: Ingest, gvk: GVK) -> bool:
        stats = ingest.stats_for(gvk)
        return stats.initial_done or stats.failed is not None

    def _check_failures(self, tracked: list[GVK], resources: Mapping[GVK, Any]) -> None:
        """Every tracked kind failed: nothing useful can be recorded, so stop with the fix.

        Refused across the cluster, a user may still read one namespace (a RoleBinding to ``view``): that
        namespace (the kubeconfig context's) comes first, before asking for a ClusterRole."""
        from kubectl_sktrace.kube import rbac_hint

        failed = [g for g in tracked if g in self._failed]
        if not tracked or len(failed) < len(tracked):
            return
        refused = [e for e in (self._failed[g] for g in failed) if isinstance(e, ForbiddenError)]
        if len(refused) == len(failed):
            names = [resources[g].rbac_name for g in [*tracked, POD] if g in resources]
            cluster = self.namespace is None and all(e.cluster_scope for e in refused)
            scope = " at the cluster scope" if cluster else f" in namespace {self.namespace!r}" if self.namespace else ""
            ns = self.context_namespace if self.context_namespace != self.namespace else None
            first = ""
            if ns and all(resources[g].namespaced for g in failed):
                first = f"you may only have access to namespace {ns!r}: record it with -n {ns}, or "
            elif cluster:
                first = "you may only have access to some namespaces: record one with -n NAMESPACE, or "
            raise KubeError(f"forbidden to list and watch every tracked kind{scope}; {first}"
                            f"{rbac_hint(names, namespace=self.namespace)}, or track other kinds with --config")
        raise KubeError(f"no tracked kind can be watched ({self._failed[failed[0]]}); check the cluster and the config")

    def _fetch(self, resources: Mapping[GVK, Any], key: ObjKey) -> dict[str, Any] | None:
        resource = resources.get(key.gvk)
        if resource is None:
            try:
                found, docs = self.kube.discover([key.gvk], cached=self.rec.load_discovery())
            except KubeError:
                return None
            resource = found.get(key.gvk)
            if resource is None:
                return None
        try:
            obj: dict[str, Any] | None = self.kube.get(resource, namespace=key.namespace or None, name=key.name)
            return obj
        except KubeError as exc:
            log.info("cannot GET owner %s: %s", key, exc)
            return None

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        self.progress.warn(message)


@dataclass(frozen=True)
class StartOptions:
    kubeconfig: str | None
    context: str | None
    namespace: str | None
    cache: str | None
    config_path: str | None
    duration: float | None
    quiet: bool


def start(options: StartOptions, *, progress: ProgressView) -> Summary:
    """``kubectl sktrace start``: resolve the cluster, open and lock the cache, record until stopped."""
    from kubectl_sktrace import kube as kube_module
    from kubectl_sktrace import kubeconfig, watching
    from kubectl_sktrace.store import WriterLock, open_cache
    from kubectl_sktrace.tracerconfig import default_config, load_config

    config = load_config(options.config_path) if options.config_path else default_config()
    target = kubeconfig.resolve_target(kubeconfig=options.kubeconfig, context=options.context)
    cache_path = kubeconfig.resolve_cache_path(cache=options.cache, kubeconfig=options.kubeconfig, context=options.context)
    namespace = options.namespace or None
    stop = threading.Event()
    with _stop_on_signals(stop):
        # leaving the cache's context turns sqlite errors met while recording (damage deep in the file, a full
        # disk) into one-line CacheErrors
        with open_cache(cache_path, create=True) as cache, WriterLock(cache.path):
            kube = kube_module.Kube.connect(target)
            try:
                server, cluster_uid = kube.cluster_identity()
                identity = Identity(server=server, cluster_uid=cluster_uid or "", context=target.context, namespace=namespace or "")
                session = Session(
                    kube=kube, recording=Recording(cache), config=config, identity=identity, namespace=namespace,
                    duration=options.duration, stop=stop, progress=progress, run_watch=watching.run_watch,
                    context_namespace=target.namespace,
                )
                return session.run()
            finally:
                kube.close()


class _stop_on_signals:
    """SIGINT and SIGTERM set ``stop`` (a prompt, clean stop) instead of raising in the middle of a write."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.saved: dict[int, Any] = {}

    def __enter__(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.saved[sig] = signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.stop.is_set():
            raise KeyboardInterrupt  # a second Ctrl-C: the user insists
        self.stop.set()

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)


def iter_rows(summary: Summary) -> Iterator[dict[str, Any]]:
    for row in summary.rows:
        yield {
            "kind": row.kind, "listed": row.listed, "applied": row.applied, "deleted live": row.deleted_live,
            "deleted while offline": row.deleted_offline, "after outage": row.caught_up, "lifecycles": row.lifecycles,
        }
