"""The initial sync's bookkeeping: which kinds are still listing, and what waits for them. Pure: no I/O.

Every kind lists at once, pods beside the others, so the server's time on one list overlaps the recorder's
on another. Two rules of docs/spec.md keep their meaning regardless of which list ends first:

- §5 step 4: nothing is deleted before every kind has listed. A complete list's vanished objects (and
  vanished pods) are only *noted* (``Vanished``) until the last kind settles (listed, or failed for good);
  then ``Ingest`` deletes those still live under the uid the list missed (an object re-created since, under
  another uid, stays). Until then a noted object no longer counts as an existing owner (``is_vanishing``),
  as it would not once deleted.
- §4, lifecycle owners: a pod's owner chain runs through ReplicaSets and Jobs and ends at a tracked kind's
  object. A pod first seen while one of the other kinds is still listing keeps what its resolution needs
  (``Unresolved``: its head and stable spec hash) and is resolved once every other kind has listed, from
  memory as before, instead of costing a GET per owner while the owner lists are still on their way.
  Where this gives way: a run killed in that window (the first seconds of a sync) leaves such a pod's row
  without an owner, and the next run, which finds the pod already known, does not resolve it again.

Memory stays the live cluster's: keys, uids and heads of objects already listed, never bodies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from kubectl_sktrace.model import GVK, POD, ObjectHead, ObjKey


@dataclass(frozen=True)
class Vanished:
    """What one complete list of a kind found gone, to reconcile at ``gone`` (the run's start for a first list)."""

    gvk: GVK
    gone: float
    recovery: bool  # the list ended an outage: what it found is counted as caught up
    keys: tuple[tuple[ObjKey, str], ...] = ()  # tracked objects: key and the uid the list missed
    pods: tuple[str, ...] = ()  # live pods' uids


@dataclass(frozen=True, slots=True)
class Unresolved:
    """A pod seen before its owners could be: what resolving its lifecycle owner later needs."""

    head: ObjectHead
    stable_hash: int


@dataclass
class InitialSync:
    """The kinds whose first list the sync still waits for, and what waits for them (see the module docstring).

    Built with no kinds, it is synced from the start: nothing waits (a relist's findings apply at once)."""

    waiting: set[GVK] = field(default_factory=set)
    vanished: list[Vanished] = field(default_factory=list)
    unresolved: dict[str, Unresolved] = field(default_factory=dict)  # pod uid -> what resolving its owner needs
    _vanishing: dict[ObjKey, str] = field(default_factory=dict)

    @classmethod
    def of(cls, kinds: Iterable[GVK]) -> InitialSync:
        return cls(waiting=set(kinds))

    @property
    def done(self) -> bool:
        """Every kind listed (or failed): deletions may happen."""
        return not self.waiting

    @property
    def owners_listed(self) -> bool:
        """Every kind but pods listed (or failed): pods' owner chains can be resolved."""
        return not self.waiting or self.waiting == {POD}

    def settles_owners(self, gvk: GVK) -> bool:
        """Whether ``settle(gvk)`` would make the owners listed (a question: nothing changes)."""
        return not self.owners_listed and self.waiting - {gvk} <= {POD}

    def settle(self, gvk: GVK) -> tuple[bool, bool]:
        """``gvk`` listed completely or failed for good. Returns whether the owners became listed, and whether
        the sync became done, by this call."""
        owners, done = self.owners_listed, self.done
        self.waiting.discard(gvk)
        return self.owners_listed and not owners, self.done and not done

    def defer(self, found: Vanished) -> None:
        self.vanished.append(found)
        self._vanishing.update(found.keys)

    def is_vanishing(self, key: ObjKey, uid: str) -> bool:
        """Whether a complete list missed this object (this uid) and its deletion waits for the other kinds."""
        return self._vanishing.get(key) == uid

    def take_vanished(self) -> list[Vanished]:
        found, self.vanished = self.vanished, []
        self._vanishing.clear()
        return found

    def take_unresolved(self) -> dict[str, Unresolved]:
        pods, self.unresolved = self.unresolved, {}
        return pods
