"""What a watch event or a relist item means for one tracked object: decisions only, no effects. Pure.

The recorder holds, per object key, what the live index knows (``LiveObject``: uid and last spec hash) and
asks these functions what to record; it performs the writes itself (docs/spec.md §4, §5 steps 2-3).

Guarantees:

- ``decide_applied``: a new object, or one whose spec hash differs from the last recorded, is applied (a
  ``spec`` change: SimKube's event); the same uid with the same spec hash but another metadata or data
  fingerprint (``trace/revisions``) is a ``metadata`` or ``data`` revision (data when both); the same uid with
  the same fingerprints records nothing (status, and what ``revisions.IGNORED_ANNOTATIONS`` names). A
  fingerprint not known (an object recorded before schema 0011) is taken as unchanged: what changed then is
  not known. The same name with another uid is a delete followed by an apply, so a re-created object is never
  mistaken for an update.
- ``vanished``: at a relist, the cached live keys that are missing from the list or listed with another
  uid, sorted so the recorder writes them in a stable order. The recorder records these deletions and
  drops them from its index before applying the listed items, so an object listed with a new uid is then
  new to ``decide_applied`` (one delete, one apply — not two deletes).
- ``spec_hash``: SimKube's hash of a spec, taken again only when the spec's fingerprint differs from the one the
  live index holds (status changes, metadata revisions: most watch events of a busy cluster).
- ``event_second``: changes received in the same integer Unix second belong to one event.

Where this guesses: an empty uid (an object without ``metadata.uid``, which a real server never sends)
matches any uid, so identity falls back to the key rather than recording a delete and an apply on every
change.
"""

from __future__ import annotations

import marshal
import math
from collections.abc import Mapping
from dataclasses import dataclass

from typing import Any

from kubectl_sktrace.model import LiveObject, ObjectHead, ObjKey
from kubectl_sktrace.timeparse import parse_api_time
from kubectl_sktrace.trace.hashing import spec_hash as simkube_spec_hash
from kubectl_sktrace.trace.hashing import spec_hash_by_parts
from kubectl_sktrace.trace.revisions import DATA, METADATA, SPEC
from kubectl_sktrace.trace.revisions import data_hash as revisions_data_hash
from kubectl_sktrace.trace.revisions import metadata_hash as revisions_metadata_hash


@dataclass(frozen=True)
class Decision:
    """What to record for an added/modified/listed object: a delete first (new uid), a version (``change``: a new
    object or spec, ``spec``; a ``metadata`` or ``data`` revision), both, or neither (``change`` None)."""

    delete_first: bool
    change: str | None
    spec_hash: int
    meta_hash: int | None = None
    data_hash: int | None = None
    spec_fp: int | None = None
    meta_fp: int | None = None

    @property
    def apply(self) -> bool:
        """Whether a version is recorded."""
        return self.change is not None

    def live(self, uid: str) -> LiveObject:
        """The live index's entry once recorded."""
        return LiveObject(uid, self.spec_hash, self.meta_hash, self.data_hash, self.spec_fp, self.meta_fp)


def spec_hash(spec: Any, known: LiveObject | None) -> tuple[int, int | None]:
    """``(hash, fingerprint)`` of a spec: the known hash when the live index took it of a spec with this fingerprint,
    else SimKube's walk. The fingerprint is Python's hash of the spec's ``marshal`` bytes (memory only: a process's
    own; a fraction of the walk's cost). marshal is exact, so the same bytes are the same values, hence the same spec
    hash; equal values that share their parts otherwise (marshal refers back to an object held twice) may give other
    bytes, which costs a walk, never a wrong hash: every spec the watch parses is shaped alike. A spec marshal cannot
    write has none. The spec of a known object that changed is hashed by its members (``hashing.spec_hash_by_parts``):
    a large member it shares with a spec hashed so before (its pod template, most often) is not walked again."""
    try:
        fp = hash(marshal.dumps(spec))
    except ValueError:
        return simkube_spec_hash(spec), None
    if known is None:
        return simkube_spec_hash(spec), fp
    if known.spec_fp == fp:
        return known.spec_hash, fp
    return spec_hash_by_parts(spec), fp


def fingerprints(obj: Mapping[str, Any], known: LiveObject | None) -> dict[str, Any]:
    """``decide_applied``'s fingerprints of an object (spec hash, metadata and data fingerprints), each taken again
    only when what it covers changed since the live index's entry."""
    spec, spec_fp = spec_hash(obj.get("spec"), known)
    meta, meta_fp = metadata_hash(obj, known)
    return {"spec_hash": spec, "spec_fp": spec_fp, "meta_hash": meta, "meta_fp": meta_fp, "data_hash": revisions_data_hash(obj)}


def metadata_hash(obj: Mapping[str, Any], known: LiveObject | None) -> tuple[int, int | None]:
    """``(revisions.metadata_hash, fingerprint)`` of an object: the known one when the live index took it of labels,
    annotations and owner references with this fingerprint (``spec_hash``'s, of those three), else computed."""
    meta = obj.get("metadata")
    fields = (meta.get("labels"), meta.get("annotations"), meta.get("ownerReferences")) if isinstance(meta, dict) else None
    try:
        fp = hash(marshal.dumps(fields))
    except ValueError:
        return revisions_metadata_hash(obj), None
    if known is not None and known.meta_fp == fp and known.meta_hash is not None:
        return known.meta_hash, fp
    return revisions_metadata_hash(obj), fp


def same_uid(a: str, b: str) -> bool:
    """Whether two uids name the same object; an empty uid is unknown and matches any."""
    return a == b or not a or not b


def decide_applied(*, known: LiveObject | None, uid: str, spec_hash: int, meta_hash: int | None = None,
                   data_hash: int | None = None, spec_fp: int | None = None, meta_fp: int | None = None) -> Decision:
    """What an added, modified or listed object with ``uid`` and these fingerprints means, given what is known."""
    if known is None:
        return Decision(False, SPEC, spec_hash, meta_hash, data_hash, spec_fp, meta_fp)
    if not same_uid(known.uid, uid):
        return Decision(True, SPEC, spec_hash, meta_hash, data_hash, spec_fp, meta_fp)
    if known.spec_hash != spec_hash:
        return Decision(False, SPEC, spec_hash, meta_hash, data_hash, spec_fp, meta_fp)
    data = _differs(known.data_hash, data_hash)
    if data or _differs(known.meta_hash, meta_hash):
        return Decision(False, DATA if data else METADATA, spec_hash, meta_hash, data_hash, spec_fp, meta_fp)
    return Decision(False, None, spec_hash, _kept(known.meta_hash, meta_hash), _kept(known.data_hash, data_hash), spec_fp, meta_fp)


def _differs(known: int | None, now: int | None) -> bool:
    return known is not None and now is not None and known != now


def _kept(known: int | None, now: int | None) -> int | None:
    return now if known is None else known


def is_skipped_owned(head: ObjectHead, *, skip_owned: bool) -> bool:
    """Whether a ``skipOwned`` kind's object is ignored: it has at least one (readable) ownerReference."""
    return skip_owned and len(head.owners) > 0


def vanished(known: Mapping[ObjKey, LiveObject], seen: Mapping[ObjKey, str]) -> list[ObjKey]:
    """Keys cached as live that a complete list no longer shows, or shows with another uid (sorted)."""
    return sorted(key for key, k in known.items() if key not in seen or not same_uid(k.uid, seen[key]))


def event_second(recv: float) -> int:
    """The event timestamp of a change received at ``recv``: its integer Unix second (floor)."""
    return math.floor(recv)


def creation_second(created: float, *, ts: int, recv: float, gap: float | None, start: float | None,
                    inferred: bool) -> tuple[int, bool]:
    """When a list (received at ``recv``, the second ``ts``) finds an object the cache does not know, created at
    ``created``: the second it is recorded at, and whether that is inferred.

    After an offline gap that began at ``gap``: created while offline, at its creation time (inferred). At a kind's
    first list of a run with no history before it (``start``: the run's start; a new cache, a kind newly tracked):
    created before the start, it existed then, recorded at the start (the spec at that time is the one first seen);
    created since, at its creation time (a reconstructed creation, inferred). Else at the list.

    ``creationTimestamp`` has whole seconds: an object created in the second the gap began in (after the last run
    stopped, since that run did not see it) carries that second, which is before the gap's instant."""
    if gap is not None:
        return (min(ts, int(created)) if math.floor(gap) <= created < recv else ts), inferred
    if start is not None and created < recv:
        if created <= start:
            return event_second(start), inferred
        return min(ts, int(created)), True
    return ts, inferred


def written_second(obj: Mapping[str, Any], *, gap: float | None, recv: float) -> int | None:
    """When the version a resumed watch's catch-up shows (``resuming``) was written, if it was inside the gap that began
    at ``gap``: the latest ``managedFields`` time, which the API server sets to the second of every write (spec, metadata
    or status) to the manager that made it. None when the object carries none in the gap (then: at the restart)."""
    meta = obj.get("metadata")
    entries = meta.get("managedFields") if isinstance(meta, dict) else None
    if gap is None or not isinstance(entries, list):
        return None
    times = [t for t in (parse_api_time(e.get("time")) for e in entries if isinstance(e, dict)) if t is not None]
    latest = max(times, default=None)
    return int(latest) if latest is not None and math.floor(gap) <= latest < recv else None
