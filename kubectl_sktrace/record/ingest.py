"""The rules' caller (SimKube's handler): what each watch message means for the cache's history.

``Ingest`` receives the messages of ``watching.Sink`` (relist begin/page/end, watch events, outages) and applies
the pure rules to them (``sanitize``, ``changes``, ``lifecycle``, ``owners``), writing through ``Recording``. It
keeps the live index (keys, uids, spec hashes), the live pods' lifecycles and the owner records in memory, and
the bookkeeping of relists in progress; ``coverage.KindCoverage`` keeps that of outages and of kinds refused or not
served. It is not thread-safe and never commits: the ``Writer`` serializes the calls and owns the batches.

What each relist reconciles (docs/spec.md §5), per kind and only once that kind's list is complete, and during the
initial sync only once every kind has listed (``initialsync``: a partial first sync deletes nothing):

- cached live objects missing from the list are deleted and marked inferred (the real deletion time lies
  between the previous sight and the relist): a kind's first list of the run records them at the run's
  start, the restart, whichever kind is listed first; a later relist at its own time. A listed object with
  another uid is a delete then an apply, both inferred;
- objects that were created while no recorder ran are stamped with their ``creationTimestamp`` when it
  falls inside that gap (inferred), else with the relist time;
- cached Running pods that vanished become Finished(start, that same time) with ``end_inferred``; listed
  pods that finished offline get their real end from their container states.

A restart's watch resumed where the last run left it (``resuming``) stands for the kind's first list: its catch-up's
events are taken as listed items (``resume_begin``), its deletions as what the list missed, reconciled alike. A restart's
list does not walk again what it finds as the last run's clean stop left it (``unchanged``).

Owner chains of pods are resolved at first sight from, in order: owner kinds watched cheaply alongside the
tracked ones (ReplicaSets for Deployments, Jobs for CronJobs), the ``owners`` table, then a GET (cached); a pod
seen while those kinds are still listing is resolved as soon as they have (``initialsync``). Under the ``Writer``
no GET is made while a message is applied: the writer fetches first, with no lock held (``ownerindex``).

Memory follows the live cluster, not the history: keys, uids, hashes and lifecycles only; bodies go to disk.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
from typing import Any, Callable

from kubectl_sktrace.errors import ForbiddenError
from kubectl_sktrace.model import GVK, POD, LiveObject, ObjectHead, ObjKey
from kubectl_sktrace.record import changes, owners
from kubectl_sktrace.record.availability import FORBIDDEN, NOT_SERVED
from kubectl_sktrace.record.coverage import KindCoverage
from kubectl_sktrace.record.initialsync import InitialSync, Unresolved, Vanished
from kubectl_sktrace.record.ownerindex import OwnerIndex
from kubectl_sktrace.record.ownerlookups import OwnerLookups
from kubectl_sktrace.record.resuming import Positions, Relist
from kubectl_sktrace.record.stats import KindStats as KindStats  # where the progress line and the session import it
from kubectl_sktrace.record.statuses import StatusIndex
from kubectl_sktrace.record.unchanged import UnchangedLists, Versions
from kubectl_sktrace.store.history import CAUSE_FAILED
from kubectl_sktrace.store.recording import OP_DELETED, OP_OF_CHANGE, EventRow, Recording
from kubectl_sktrace.trace import hashing, lifecycle, revisions, sanitize
from kubectl_sktrace.trace import references as podrefs
from kubectl_sktrace.tracerconfig import TracerConfig

log = logging.getLogger(__name__)

MALFORMED = sanitize.MALFORMED


@dataclass
class _Pod:
    __slots__ = ("namespace", "name", "owner", "life")
    namespace: str
    name: str
    owner: GVK | None
    life: lifecycle.Lifecycle


class Ingest(OwnerLookups, UnchangedLists):
    """The recorder's rules applied to sink messages, written through ``Recording``. Not thread-safe: the
    ``Writer`` serializes the calls.

    ``fetch_owner(key) -> dict | None`` GETs an owner object (None when gone or forbidden); ``gap_start`` is
    when the previous run last wrote (None for a fresh cache): objects created after it were created offline.
    ``restart`` is when this run started: what a kind's first list finds gone is recorded at that time, one
    time for every kind however long the lists take (None: at each list's own time). ``fresh`` kinds were not
    tracked (or not so) by the previous run: their first list records the cluster as it is, at the list's time,
    not as changes made offline. ``initial_kinds`` are the kinds whose first list the initial sync waits for
    before it deletes anything (none: each list reconciles at its end).
    """

    def __init__(
        self, *, recording: Recording, run_id: int, config: TracerConfig, owner_kinds: set[GVK],
        fetch_owner: Callable[[ObjKey], dict[str, Any] | None] | None, gap_start: float | None, restart: float | None = None,
        fresh: frozenset[GVK] = frozenset(), initial_kinds: frozenset[GVK] = frozenset(), versions: Versions | None = None,
    ) -> None:
        self.rec = recording
        self.run_id = run_id
        self.restart = restart
        self.tracked = config.tracked
        self.owner_kinds = owner_kinds
        self.stats: dict[GVK, KindStats] = {}
        self.events_recorded = 0
        self.updates_seen = 0  # watch events received, whether or not they changed anything
        self.live: dict[GVK, dict[ObjKey, LiveObject]] = {gvk: {} for gvk in self.tracked}
        for key, known in recording.load_live_objects().items():
            self.live.setdefault(key.gvk, {})[key] = known
        self.pods: dict[str, _Pod] = {
            p.uid: _Pod(p.namespace, p.name, p.owner_gvk, lifecycle.Lifecycle(p.start_ts, p.end_ts))
            for p in recording.load_live_pods().values()
        }
        # kinds the previous run did not track (as now) start their history here: nothing of theirs happened "offline"
        self._gap_start: dict[GVK, float | None] = {gvk: None for gvk in fresh}
        self._default_gap = gap_start
        self._relists: dict[GVK, Relist] = {}
        self.positions = Positions(recording, run_id)  # the watch positions, resumable once synced (``resuming``)
        self.coverage = KindCoverage(recording, run_id)  # outages, kinds refused or not served: their gaps while open
        self.status = StatusIndex(recording, run_id, self._written)  # what a person reads of each status (``statuses``)
        self.versions = versions or Versions()  # the versions applied last, and the last clean stop's (``unchanged``)
        self._heartbeat = -math.inf  # the last heartbeat committed by this run
        self.sync = InitialSync.of(initial_kinds)
        self._unobserved: set[GVK] = set(initial_kinds) if restart is not None else set()  # whose first list is to come
        self.owner_index = OwnerIndex(recording=recording, fetch=fetch_owner, live=self.live, sync=self.sync)
        self.owners = self.owner_index.records
        self._lookup, self._store_owner, self._forget_owner = self.owner_index.lookup, self.owner_index.store, self.owner_index.forget
        self.take_fetching, self.owners_fetched = self.owner_index.take_fetching, self.owner_index.fetched  # for the Writer
        self._prepared_heads: dict[int, ObjectHead] = {}  # by id(obj): read by ``owners_wanted`` for the message applied next
        self._prepared_chains: dict[int, tuple[ObjectHead, list[ObjKey]]] = {}  # by id(head): the chains resolved for them

    # -- the Sink, applied ---------------------------------------------------------------------------

    def relist_begin(self, gvk: GVK, ts: float) -> None:
        stats = self.stats_for(gvk)
        if not stats.initial_done:
            stats.listed = 0  # a first list begun again (an expired continue token) counts each object once
        self._relists[gvk] = Relist(ts=ts, initial=not stats.initial_done, recovery=self.coverage.reconstructs(gvk))

    def resume_begin(self, gvk: GVK, ts: float) -> None:
        """The kind's watch resumes where the last run stopped: its catch-up stands for a first list (``resuming``)."""
        held = self._relists.get(gvk)
        if held is None or not held.resume:
            self._relists[gvk] = Relist(ts=ts, initial=not self.stats_for(gvk).initial_done, resume=True)

    def relist_page(self, gvk: GVK, items: list[dict[str, Any]], ts: float) -> None:
        relist = self._relists.get(gvk) or self._relists.setdefault(gvk, Relist(ts=ts))
        stats = self.stats_for(gvk)
        stats.pages += 1
        if relist.initial:
            stats.listed += len(items)
        prepared = self._prepared_heads
        for obj in items:
            try:
                head = (prepared.pop(id(obj), None) if prepared else None) or sanitize.read_head(obj, gvk)
                self._listed(relist, head, obj)
            except MALFORMED as exc:
                relist.broken += 1
                log.warning("%s: skipped a listed object that cannot be read (%s: %s)", gvk, type(exc).__name__, exc)

    def _listed(self, relist: Relist, head: ObjectHead, obj: dict[str, Any]) -> None:
        """An object as a list finds it, or as a resumed watch's catch-up does (added or changed meanwhile)."""
        gvk = head.key.gvk
        if relist.initial and not relist.resume and self.versions.stopped and self._unchanged(relist, head, obj):
            return
        written = changes.written_second(obj, gap=self._gap(gvk), recv=relist.ts) if relist.resume else None
        applied = gvk in self.tracked and self._apply(head, obj, relist.ts, relist=True, caught_up=relist.recovery,
                                                      first=gvk in self._unobserved, written=written)
        if applied:
            relist.seen[head.key] = head.uid
        if gvk == POD:
            self._pod(head, obj, relist.ts, deleted=False, caught_up=True)
            relist.seen_pods.add(head.uid)
        if gvk in self.owner_kinds:
            self._store_owner(head, relist.ts)
        if (applied or gvk == POD) and head.uid:
            self.versions.applied[head.uid] = head.resource_version

    def _caught_up_deletion(self, relist: Relist, head: ObjectHead, obj: dict[str, Any]) -> None:
        """A resumed watch's catch-up saw the object deleted: as a list that misses it (``resuming``); a pod's last
        state still gives its lifecycle (a real end, when its containers finished)."""
        gvk = head.key.gvk
        known = self.live.get(gvk, {}).get(head.key) if gvk in self.tracked else None
        if known is not None and changes.same_uid(known.uid, head.uid):
            relist.gone[head.key] = known.uid
        if gvk == POD:
            self._pod(head, obj, relist.ts, deleted=False, caught_up=True)
            relist.gone_pods.add(head.uid)
        if gvk in self.owner_kinds:
            self._forget_owner(head)

    def relist_end(self, gvk: GVK, resource_version: str, ts: float) -> None:
        relist = self._relists.pop(gvk, None) or Relist(ts=ts)
        self._observed(gvk, relist.ts)
        self._complete(gvk, relist)
        self.stats_for(gvk).initial_done = True
        self.positions.listed(gvk, resource_version)
        if self.coverage.listed(gvk, relist.ts) == FORBIDDEN:
            self.stats_for(gvk).failed = None
        self._settled(gvk)

    def _complete(self, gvk: GVK, relist: Relist) -> None:
        """A complete list: what it missed is gone (at once, or once every kind listed: ``initialsync``)."""
        gone = self.restart if relist.initial and self.restart is not None else relist.ts
        if relist.broken:
            log.warning("%s: %d listed objects could not be read; no deletions inferred from this list", gvk, relist.broken)
        else:
            keys, pods = relist.missed(self.live.get(gvk, {}) if gvk in self.tracked else {}, self.pods.keys() if gvk == POD else ())
            found = Vanished(gvk, gone, relist.recovery, keys=keys, pods=pods)
            if self.sync.done:
                self._reconcile(found)
            else:
                self.sync.defer(found)
        self._gap_start[gvk] = relist.ts

    def not_yet_observed(self) -> None:
        """The run begins: no kind is observed until its first list (``coverage.unobserved``)."""
        if self.restart is not None:
            self.coverage.unobserved(sorted(self._unobserved, key=str), self.restart)

    def _observed(self, gvk: GVK, ts: float) -> None:
        """A kind's first list this run completed, its snapshot taken at ``ts``: not yet observed until then."""
        self._unobserved.discard(gvk)
        self.coverage.observed(gvk, ts)

    def _settled(self, gvk: GVK) -> None:
        """``gvk`` listed or failed for good: what waited for it (pods' owners, the sync's deletions) goes on."""
        owners_listed, done = self.sync.settle(gvk)
        if owners_listed:
            for uid, pod in self.sync.take_unresolved().items():
                self._resolve_owner(uid, pod)
        if done:
            self.versions.stopped = {}  # every kind listed: the last stop's versions are of no more use
            for found in self.sync.take_vanished():
                self._reconcile(found)

    def _reconcile(self, found: Vanished) -> None:
        """Delete what a complete list found gone, at ``found.gone``, inferred; an object re-created since (another
        uid) or deleted since stays as it is."""
        live = self.live.get(found.gvk, {})
        for key, uid in found.keys:
            known = live.get(key)
            if known is not None and known.uid == uid:
                del live[key]
                self._delete(key, uid, found.gone, inferred=True)
                self.owners.pop(key, None)
                self._count_deleted(found.gvk, caught_up=found.recovery, offline=True)
        second = changes.event_second(found.gone)
        for uid in found.pods:
            if uid in self.pods:
                self._pod_gone(uid, second, inferred=True)

    def event(self, gvk: GVK, event_type: str, obj: dict[str, Any], ts: float) -> None:
        self.updates_seen += 1
        try:
            self._event(gvk, event_type, obj, ts)
        except MALFORMED as exc:
            log.warning("%s: skipped a %s event that cannot be read (%s: %s)", gvk, event_type, type(exc).__name__, exc)

    def _event(self, gvk: GVK, event_type: str, obj: dict[str, Any], ts: float) -> None:
        prepared = self._prepared_heads  # read by ``owners_wanted`` for this message, if it asked
        head = (prepared.pop(id(obj), None) if prepared else None) or sanitize.read_head(obj, gvk)
        deleted = event_type == "DELETED"
        relist = self._relists.get(gvk)
        if relist is not None and relist.resume:  # a resumed watch catching up: what changed while no recorder ran
            if deleted:
                self._caught_up_deletion(relist, head, obj)
            else:
                self._listed(relist, head, obj)
            if head.resource_version:
                self.positions.reached(gvk, head.resource_version)
            return
        caught_up = self.coverage.caught_up(gvk, head.resource_version)
        applied = False
        if gvk in self.tracked:
            if deleted:
                self._deleted(head, ts, caught_up=caught_up)
            else:
                applied = self._apply(head, obj, ts, relist=False, caught_up=caught_up)
        if gvk == POD:
            self._pod(head, obj, ts, deleted=deleted, caught_up=caught_up)
        if gvk in self.owner_kinds:
            if deleted:
                self._forget_owner(head)
            else:
                self._store_owner(head, ts)
        self._gap_start[gvk] = ts
        if head.resource_version:
            self.positions.reached(gvk, head.resource_version)
        if (applied or (gvk == POD and not deleted)) and head.uid:
            self.versions.applied[head.uid] = head.resource_version

    def failed(self, gvk: GVK, error: BaseException, ts: float) -> None:
        """A 403: the kind is refused from ``ts`` until a list succeeds again (a ``forbidden`` gap). Any other error
        gives the kind up for the rest of the run: kept as a gap of its own cause, so ``status`` remembers it."""
        self.stats_for(gvk).failed = str(error)
        self.positions.refused(gvk)
        if isinstance(error, ForbiddenError):
            self.coverage.refuse(gvk, ts, FORBIDDEN, str(error))
        else:
            self.coverage.observed(gvk, ts)
            self.rec.open_gap(self.run_id, gvk, since=ts, cause=CAUSE_FAILED, detail=str(error))
        self._settled(gvk)

    def unserved(self, gvk: GVK, ts: float, detail: str) -> None:
        """The server does not serve the kind from ``ts`` on (a 404, or absent from discovery): no object of it can
        exist, so what the live index still holds of it is gone (as a complete, empty list at ``ts`` finds), and what
        a list finds once it is served again was created since: recorded live, at that list's time."""
        initial, recovery = not self.stats_for(gvk).initial_done, self.coverage.reconstructs(gvk)
        if not self.coverage.refuse(gvk, ts, NOT_SERVED, detail):
            return
        self.positions.refused(gvk)
        self._unobserved.discard(gvk)  # none of its objects can exist: what it finds once served is recorded live
        self._relists.pop(gvk, None)  # a list under way when the kind went away
        self._complete(gvk, Relist(ts=ts, initial=initial, recovery=recovery))
        self._gap_start[gvk] = None
        self._settled(gvk)

    def interrupted(self, gvk: GVK, since: float, cause: str, detail: str) -> None:
        """The kind's watch failed: a coverage gap opens at its last proof of liveness (closed by ``resumed``;
        a run that ends first closes it at its end)."""
        self.coverage.interrupted(gvk, since, cause, detail)

    def resumed(self, gvk: GVK, ts: float, horizon: str | None) -> None:
        """The kind is watched again at ``ts``; a resumed watch's events up to ``horizon`` are caught up."""
        self.coverage.resumed(gvk, ts, horizon)

    # -- batching hooks ------------------------------------------------------------------------------

    def before_commit(self, ts: float) -> None:
        """Inside the open batch: the heartbeat and the watch positions reached, resumable once synced (``resuming``)."""
        self.positions.store(ts, synced=self.sync.done)
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
        return self.stats.setdefault(gvk, KindStats())

    def _gap(self, gvk: GVK) -> float | None:
        return self._gap_start.get(gvk, self._default_gap)

    def _apply(self, head: ObjectHead, obj: dict[str, Any], recv: float, *, relist: bool, caught_up: bool = False,
               first: bool = False, written: int | None = None) -> bool:
        """An added, modified or listed object; False when its kind skips it (owned objects of ``skipOwned``); ``written``:
        the second a resumed watch's version was written in the gap (``changes.written_second``)."""
        gvk = head.key.gvk
        options = self.tracked[gvk]
        if changes.is_skipped_owned(head, skip_owned=options.skip_owned):
            return False
        live = self.live.setdefault(gvk, {})
        known = live.get(head.key)
        decision = changes.decide_applied(known=known, uid=head.uid, **changes.fingerprints(obj, known))
        gap = self._gap(gvk) if relist else None
        inferred = caught_up or (relist and gap is not None)
        ts = changes.event_second(recv) if written is None else written
        if (known is None or decision.delete_first) and relist and head.created is not None:
            ts, inferred = changes.creation_second(head.created, ts=ts, recv=recv, gap=gap, start=self.restart if first else None,
                                                   inferred=inferred)
        if decision.delete_first and known is not None:
            # the old object was gone before its successor was created: its deletion takes the successor's time, recorded
            # first (export keeps the two in order, in two events of that second)
            self._delete(head.key, known.uid, recv, inferred=inferred, ts=ts)
            self._count_deleted(gvk, caught_up=caught_up, offline=inferred)
        if head.owners:
            self._store_owner(head, recv)
        self._note_created(head, known, relist=relist)
        self.status.seen(head, obj, recv, inferred=relist or caught_up, pod=gvk == POD)
        if decision.apply:
            self._record_applied(head, obj, recv, ts=ts, decision=decision, inferred=inferred)
            if caught_up:
                self.stats_for(gvk).caught_up += 1
        elif known is not None and (now := decision.live(known.uid)) != known:
            # the spec's fingerprint (memory only), or those a cache before 0011 did not keep
            live[head.key] = now if replace(now, spec_fp=known.spec_fp, meta_fp=known.meta_fp) == known else self._upsert(head.key, now)
        return True

    def _note_created(self, head: ObjectHead, known: LiveObject | None, *, relist: bool) -> None:  # first sight, or listed
        if head.created is not None and head.uid and (relist or known is None or known.uid != head.uid):
            self.rec.record_created(head.uid, head.created)

    def _record_applied(self, head: ObjectHead, obj: dict[str, Any], recv: float, *, ts: int, decision: changes.Decision,
                        inferred: bool) -> None:
        """The version of a tracked object (a new object or spec, or a revision), its owner chain resolved, and its row
        in the live index."""
        key = head.key
        chain = tuple(self._chain(head)) if head.owners else ()
        options = self.tracked[key.gvk]
        body = sanitize.sanitize(obj, gvk=key.gvk, keep_secret_data=options.keep_secret_data)
        spec = decision.change == revisions.SPEC
        paths = options.pod_spec_template_paths if spec else ()  # a revision's references are its base's
        self.rec.append_event(
            self.run_id,
            EventRow(ts=ts, recv=self._written(recv), key=key, uid=head.uid, op=OP_OF_CHANGE[decision.change or revisions.SPEC],
                     inferred=inferred, spec_hash=decision.spec_hash, owner_chain=chain or None,
                     body=body if spec else revisions.revision_body(body),
                     refs=podrefs.distinct_references(body, paths) if paths else None, daemonset=sanitize.is_daemonset_owned(body)),
        )
        self.events_recorded += 1
        self.live[key.gvk][key] = self._upsert(key, decision.live(head.uid))
        self.stats_for(key.gvk).count(decision.change)

    def _upsert(self, key: ObjKey, live: LiveObject) -> LiveObject:
        self.rec.upsert_object(key, uid=live.uid, spec_hash=live.spec_hash, meta_hash=live.meta_hash, data_hash=live.data_hash)
        return live

    def _deleted(self, head: ObjectHead, recv: float, *, caught_up: bool) -> None:
        """A DELETED event of a tracked object."""
        live = self.live.get(head.key.gvk, {})
        known = live.get(head.key)
        # identity, not names: a DELETED event for a predecessor (another uid) leaves the successor live
        if known is not None and changes.same_uid(known.uid, head.uid):
            del live[head.key]
            self.owners.pop(head.key, None)
            self._delete(head.key, known.uid, recv, inferred=caught_up)
            self._count_deleted(head.key.gvk, caught_up=caught_up, offline=False)

    def _count_deleted(self, gvk: GVK, *, caught_up: bool, offline: bool) -> None:
        self.stats_for(gvk).count_deleted(caught_up=caught_up, offline=offline)

    def _delete(self, key: ObjKey, uid: str, recv: float, *, inferred: bool, ts: int | None = None) -> None:
        """A tracked object's deletion row; its status is forgotten (memory follows the live cluster)."""
        self.status.forget(uid or key)
        self.versions.applied.pop(uid, None)
        second = changes.event_second(recv) if ts is None else ts
        self.rec.append_event(self.run_id, EventRow(ts=second, recv=self._written(recv), key=key, uid=uid, op=OP_DELETED,
                                                    inferred=inferred))
        self.rec.delete_object(key)
        self.events_recorded += 1

    def _pod(self, head: ObjectHead, obj: dict[str, Any], recv: float, *, deleted: bool, caught_up: bool = False) -> None:
        derived = lifecycle.derive_lifecycle(obj)
        self.status.seen(head, obj, recv, inferred=caught_up, pod=True)
        known = self.pods.get(head.uid)
        if known is None:
            self._first_sight(head, obj, derived, recv)
        else:
            self._merge_pod(head.uid, known, derived)
        if deleted:
            self._pod_gone(head.uid, changes.event_second(recv), inferred=caught_up)

    def _first_sight(self, head: ObjectHead, obj: dict[str, Any], derived: lifecycle.Lifecycle, recv: float) -> None:
        """A pod met for the first time: its lifecycle owner, resolved once (or once its owners listed), and its row."""
        key = head.key
        owner: ObjKey | None = None
        if head.owners and not self.sync.owners_listed:
            self.sync.unresolved[head.uid] = Unresolved(head, hashing.pod_spec_hash(obj.get("spec") or {}))
        else:
            owner = self._lifecycle_owner(head)
        stable = hashing.pod_spec_hash(obj.get("spec") or {}) if owner is not None else None
        self.rec.insert_pod(uid=head.uid, namespace=key.namespace, name=key.name, owner=owner, stable_hash=stable,
                            start_ts=derived.start, end_ts=derived.end, first_seen=self._written(recv))
        self.pods[head.uid] = _Pod(key.namespace, key.name, None if owner is None else owner.gvk, derived)
        if owner is not None and derived.start is not None:
            self.stats_for(owner.gvk).lifecycles += 1

    def _lifecycle_owner(self, head: ObjectHead) -> ObjKey | None:
        chain = self._chain(head) if head.owners else []
        return owners.lifecycle_owner(pod_key=head.key, chain=chain, is_tracked_lifecycle_owner=self._is_lifecycle_owner)

    def _resolve_owner(self, uid: str, pending: Unresolved) -> None:
        """A pod first seen while its owners were still listing: its lifecycle owner, now that they have."""
        owner = self._lifecycle_owner(pending.head)
        if owner is None:
            return
        self.rec.set_pod_owner(uid, owner=owner, stable_hash=pending.stable_hash)
        pod = self.pods.get(uid)
        if pod is not None:
            pod.owner = owner.gvk
            if pod.life.start is not None:
                self.stats_for(owner.gvk).lifecycles += 1

    def _merge_pod(self, uid: str, known: _Pod, derived: lifecycle.Lifecycle) -> None:
        kept, refusal = lifecycle.merge_lifecycle(known.life, derived)
        if refusal:
            log.info("pod %s/%s: %s", known.namespace, known.name, refusal)
        if kept != known.life:
            if known.owner is not None and known.life.start is None and kept.start is not None:
                self.stats_for(known.owner).lifecycles += 1
            known.life = kept
            self.rec.update_pod(uid, start_ts=kept.start, end_ts=kept.end, end_inferred=False, live=True)

    def _pod_gone(self, uid: str, second: int, *, inferred: bool) -> None:
        known = self.pods.pop(uid)
        self.status.forget(uid or ObjKey(POD, known.namespace, known.name))
        self.versions.applied.pop(uid, None)
        ended = lifecycle.on_pod_gone(known.life, ts=second)
        self.rec.update_pod(uid, start_ts=ended.start, end_ts=ended.end, end_inferred=inferred and ended != known.life, live=False)

    def _is_lifecycle_owner(self, key: ObjKey) -> bool:
        options = self.tracked.get(key.gvk)
        if options is None or not options.track_lifecycle:
            return False
        known = self.live.get(key.gvk, {}).get(key)
        if known is not None and self.sync.is_vanishing(key, known.uid):
            return False  # its list missed it: deleted once every kind listed
        return known is not None or key in self.owners

