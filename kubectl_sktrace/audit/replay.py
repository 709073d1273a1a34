"""What one object's logged writes in a gap mean, by the recorder's own rules. Pure: no I/O.

``replay`` walks an object's writes in time order from the version it had when the gap began, and asks
``record/changes.decide_applied`` of each object the log shows (the same spec hash, metadata and data fingerprints,
``skipOwned``) what a recorder that stayed up would have recorded: a version, a delete then a version (a new uid),
or nothing. A ``scale`` write applies its replicas to the last version known; a delete that removed the object (a
``Status`` answer) deletes it; a delete answered with the object only marked it, and is taken as the object it shows.

The walk is *complete* when every write showed its object: its end is then known, and ``accounts_for`` compares it
with what the restart reconstructed. A write whose level hides its object (``Metadata``, ``Request``), or a scale with
no version to apply it to, leaves the walk incomplete: what it gives then is only the times of its removals
(``removals``), which move a deletion the restart found to its true time, never a body.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from kubectl_sktrace.audit.lines import Logged
from kubectl_sktrace.model import LiveObject, ObjectHead, ObjKey
from kubectl_sktrace.record import changes
from kubectl_sktrace.store.versions import DELETED, OP_OF_CHANGE
from kubectl_sktrace.trace import hashing, revisions, sanitize
from kubectl_sktrace.trace import references as podrefs
from kubectl_sktrace.tracerconfig import TrackedObject


@dataclass(frozen=True)
class Version:
    """An object as the recorder knows it (its live-index entry) with its sanitized whole body."""

    live: LiveObject
    body: Mapping[str, Any] | None

    @classmethod
    def of(cls, *, uid: str, spec_hash: int, body: Mapping[str, Any] | None) -> Version:
        meta = None if body is None else revisions.metadata_hash(body)
        data = None if body is None else revisions.data_hash(body)
        return cls(LiveObject(uid, spec_hash, meta, data), body)


@dataclass(frozen=True)
class Planned:
    """A row to append (``store.recording.EventRow`` made from it), at the API server's time ``at``."""

    at: float
    key: ObjKey
    uid: str
    op: int
    spec_hash: int | None = None
    body: Mapping[str, Any] | None = None
    chain: tuple[ObjKey, ...] = ()
    refs: tuple[tuple[str, str], ...] | None = None
    daemonset: bool | None = None
    inferred: bool = False  # not in the log: an end the restart reconstructed (a log that ends before it)


@dataclass(frozen=True)
class Replayed:
    rows: tuple[Planned, ...]
    end: Version | None  # None: the object does not exist at the gap's end (as the log tells it)
    complete: bool
    removals: tuple[tuple[float, str], ...]  # (time, uid or '') of every logged delete that removed it, or may have


def replay(prior: Version | None, logged: Sequence[Logged], *, options: TrackedObject,
           chain: Callable[[ObjectHead], tuple[ObjKey, ...]]) -> Replayed:
    """The rows a recorder that stayed up would have written for these writes (in time order) of one object."""
    state, rows, complete, removals = prior, [], True, []
    for event in logged:
        if event.verb == "delete" and event.removed is not False:
            removals.append((event.at, event.uid))
            if state is not None and changes.same_uid(state.live.uid, event.uid):
                rows.append(Planned(event.at, event.key, state.live.uid, DELETED))
                state = None
            complete = complete and event.removed is True
            continue
        obj = object_of(event, state)
        if obj is None:
            complete = False
            continue
        head = sanitize.read_head(obj, event.key.gvk)
        if changes.is_skipped_owned(head, skip_owned=options.skip_owned):
            continue
        made, state = _apply(event, obj, head, state, options=options, chain=chain)
        rows += made
    return Replayed(tuple(rows), state, complete, tuple(removals))


def object_of(event: Logged, state: Version | None) -> dict[str, Any] | None:
    """The object a write leaves: the one it shows, or the last version with a Scale's replicas put in."""
    if event.body is not None:
        return event.body
    if event.replicas is not None and state is not None and state.body is not None and changes.same_uid(state.live.uid, event.uid):
        scaled = copy.deepcopy(dict(state.body))
        scaled.setdefault("spec", {})["replicas"] = event.replicas
        return scaled
    return None


def _apply(event: Logged, obj: dict[str, Any], head: ObjectHead, state: Version | None, *, options: TrackedObject,
           chain: Callable[[ObjectHead], tuple[ObjKey, ...]]) -> tuple[list[Planned], Version | None]:
    body = sanitize.sanitize(obj, gvk=event.key.gvk, keep_secret_data=False)
    uid = head.uid or event.uid
    spec_hash = hashing.spec_hash(obj.get("spec"))
    version = Version.of(uid=uid, spec_hash=spec_hash, body=body)
    decision = changes.decide_applied(known=None if state is None else state.live, uid=uid, spec_hash=spec_hash,
                                      meta_hash=version.live.meta_hash, data_hash=version.live.data_hash)
    rows: list[Planned] = []
    if decision.delete_first and state is not None:
        rows.append(Planned(event.at, event.key, state.live.uid, DELETED))
    if decision.change is None:
        return rows, version
    spec = decision.change == revisions.SPEC
    paths = options.pod_spec_template_paths if spec else ()
    rows.append(Planned(event.at, head.key, uid, OP_OF_CHANGE[decision.change], decision.spec_hash,
                        body if spec else revisions.revision_body(body), chain(head) if head.owners else (),
                        podrefs.distinct_references(body, paths) if paths else None, sanitize.is_daemonset_owned(body)))
    return rows, version


def accounts_for(replayed: Replayed, found: Version | None) -> bool:
    """Whether a complete walk ends where the restart found the object (the same uid, spec and fingerprints; or gone)."""
    if not replayed.complete:
        return False
    end = replayed.end
    if end is None or found is None:
        return end is None and found is None
    a, b = end.live, found.live
    return changes.same_uid(a.uid, b.uid) and a.spec_hash == b.spec_hash and not _differs(a.meta_hash, b.meta_hash) \
        and not _differs(a.data_hash, b.data_hash)


def _differs(a: int | None, b: int | None) -> bool:
    return a is not None and b is not None and a != b
