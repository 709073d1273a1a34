"""A restart that lists does not walk again what did not change since the last run's clean stop.

A restart lists a kind when it cannot resume its watch (``resuming``: the API server answered 410, it forgot the history
since the last run; or the kind is too small to resume, or newly tracked): every object comes again, and walking each
(its spec hash and fingerprints, its status's reduction, a pod's lifecycle, its owner record) costs what the first sync
cost, although on a calm cluster almost nothing changed. The API server gives every write of an object a new
``metadata.resourceVersion``, so an object listed at the version the recorder applied last is the object it applied:

- ``Versions`` keeps in memory, per live tracked object and live pod (by uid), the resourceVersion of the version
  applied last (``applied``: set once a watch event or a listed item was applied whole, dropped with the object). No
  write per event: a clean stop writes them all at once, with the bytes of each one's status reduction
  (``store/stopped``), carrying forward those of the last stop it trusted for the objects it never saw change.
- The next start trusts them (``trusted``) only when the run right before it wrote them and stopped cleanly (a run
  that crashed may have applied versions it never wrote down), on the same cluster (its kube-system uid read and
  equal to the cache's: a server at the same address could be another cluster, whose versions mean nothing here), by
  this kubectl-sktrace (another reduces statuses and derives lifecycles its own way). They describe the state at that
  stop only: a run that began is the last run, so no later start trusts them but through this run's own clean stop.
- During a kind's first list of the run (not a resumed watch's catch-up: what it sends changed), an item whose uid
  and resourceVersion are those a trusted row holds, and which the live index and the live pods hold under that uid
  (``as_recorded``), is unchanged (``Ingest._unchanged``): it counts as listed (so what the list misses is gone, as
  before) and its status is written as every restart writes what it finds, reconstructed and whole, from the bytes
  the row kept; nothing else is walked or written, since the cache holds what applying it again would give (its live
  row and fingerprints, its pod's lifecycle and owner, its ``created`` second). Its fingerprints, in memory only, are
  taken again at its next change. Once every kind listed the rows are dropped from memory.

Every row the cache gets is the row it gets without the skip (``tests/record/test_unchanged.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Callable

from kubectl_sktrace import __version__
from kubectl_sktrace.model import GVK, POD, LiveObject, ObjectHead, ObjKey
from kubectl_sktrace.record import changes
from kubectl_sktrace.record.resuming import Relist
from kubectl_sktrace.record.statuses import StatusIndex
from kubectl_sktrace.store import stopped
from kubectl_sktrace.store.recording import PreviousRun, Recording
from kubectl_sktrace.tracerconfig import TrackedObject


class Versions:
    """The versions applied last, in memory, and those the last clean stop left (``stopped``: uid -> resourceVersion
    and status bytes) until every kind listed; ``carried_from``: the run that left them (None: none trusted)."""

    def __init__(self, stopped_rows: dict[str, tuple[str, bytes]] | None = None, carried_from: int | None = None) -> None:
        self.applied: dict[str, str] = {}
        self.stopped = stopped_rows or {}
        self.carried_from = carried_from if stopped_rows is not None else None
        self.unchanged = 0  # listed objects found unchanged since that stop

    def at_stop(self, head: ObjectHead) -> bytes | None:
        """The status bytes the last clean stop kept of this object, when it is listed at the version kept then; each row
        is asked once."""
        row = self.stopped.pop(head.uid, None)
        return row[1] if row is not None and row[0] == head.resource_version else None

    def rows(self, statuses: Mapping[Any, Any]) -> Iterator[tuple[str, str, bytes]]:
        """(uid, resourceVersion, status bytes) of the objects applied in this run, for the clean stop; ``statuses``: the
        status index (uid -> its entry, whose ``packed`` are the bytes)."""
        for uid, version in self.applied.items():
            known = statuses.get(uid)
            if known is not None and known.uid == uid:
                yield uid, version, known.packed


class UnchangedLists:
    """``Ingest``'s skip of what a list finds unchanged (a mixin: ``Ingest`` sets these attributes)."""

    versions: Versions
    tracked: dict[GVK, TrackedObject]
    live: dict[GVK, dict[ObjKey, LiveObject]]
    pods: dict[str, Any]
    owner_kinds: set[GVK]
    status: StatusIndex
    _store_owner: Callable[[ObjectHead, float], None]

    def _unchanged(self, relist: Relist, head: ObjectHead, obj: Mapping[str, Any]) -> bool:
        """A listed object at the version the last clean stop kept, as the live index and the live pods hold it: listed,
        its status written as found (from the bytes kept), its owner record as before; nothing walked. False: walk it."""
        kept = self.versions.at_stop(head) if head.uid else None
        gvk = head.key.gvk
        tracked = gvk in self.tracked
        if kept is None or not (tracked or gvk == POD) or (gvk == POD and head.uid not in self.pods) or (
                tracked and not as_recorded(self.live.get(gvk, {}).get(head.key), head, obj, skip_owned=self.tracked[gvk].skip_owned)):
            return False
        if tracked:
            relist.seen[head.key] = head.uid
        if gvk == POD:
            relist.seen_pods.add(head.uid)
        if (tracked and head.owners) or gvk in self.owner_kinds:
            self._store_owner(head, relist.ts)
        self.status.seen_unchanged(head, kept, relist.ts)
        self.versions.unchanged += 1
        return True


def as_recorded(known: LiveObject | None, head: ObjectHead, obj: Mapping[str, Any], *, skip_owned: bool) -> bool:
    """Whether the live index's entry of a tracked object listed unchanged is what applying it gives: the same uid, every
    fingerprint known (an entry of a cache before schema 0011 learns them from the next version applied) and tracked."""
    return (known is not None and known.uid == head.uid and known.meta_hash is not None
            and (known.data_hash is not None or "spec" in obj) and not changes.is_skipped_owned(head, skip_owned=skip_owned))


def trusted(*, previous: PreviousRun | None, written_by: str | None, cluster_uid: str, stored_uid: str | None) -> bool:
    """Whether the rows of ``previous`` (the last run) may be trusted (the module docstring says when)."""
    return (previous is not None and previous.clean and written_by == __version__ and bool(cluster_uid)
            and stored_uid == cluster_uid)


def last_stop(recording: Recording, previous: PreviousRun | None, *, cluster_uid: str) -> Versions:
    """The versions the last run's clean stop left, when trusted; else none."""
    cache = recording.cache
    if previous is None or not trusted(previous=previous, written_by=cache.get_meta(stopped.RECORDER), cluster_uid=cluster_uid,
                                       stored_uid=cache.get_meta("cluster.uid")):
        return Versions()
    return Versions(stopped.load(cache, previous.id), previous.id)


def keep(recording: Recording, run_id: int, versions: Versions, statuses: Mapping[Any, Any]) -> int:
    """At a clean stop, in a batch of its own: the versions for the next start (``store/stopped.keep``)."""
    with recording.batch():
        return stopped.keep(recording.cache, run_id=run_id, carried_from=versions.carried_from, rows=versions.rows(statuses),
                            recorder=__version__)
