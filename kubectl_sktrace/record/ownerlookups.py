"""Owner lookups made by the writer with no lock held: what applying a message would GET, prepared before it is applied.

The part of ``Ingest`` that ``writer.Writer`` calls outside the writer's lock (docs/architecture.md, "Locks and the
network"): under the lock it names the owners the message's chains would GET (``owners_wanted``, from memory and the
cache only); the writer fetches them unlocked and hands them in; the heads read and the chains resolved here are kept
for the message applied next, in the same hold of the lock (``_chain``), so nothing is read or resolved twice.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from kubectl_sktrace.model import GVK, POD, ObjectHead, ObjKey, OwnerRef
from kubectl_sktrace.record import changes, owners
from kubectl_sktrace.record.initialsync import InitialSync
from kubectl_sktrace.record.ownerindex import OwnerIndex
from kubectl_sktrace.trace import sanitize
from kubectl_sktrace.tracerconfig import TrackedObject

MALFORMED = sanitize.MALFORMED


class OwnerLookups:
    """``Ingest``'s owner lookups (a mixin: ``Ingest`` sets these attributes)."""

    tracked: dict[GVK, TrackedObject]
    pods: dict[str, Any]
    sync: InitialSync
    owner_index: OwnerIndex
    _prepared_heads: dict[int, ObjectHead]  # by id(obj): read by ``owners_wanted`` for the message applied next
    _prepared_chains: dict[int, tuple[ObjectHead, list[ObjKey]]]  # by id(head): the chains resolved for them
    _lookup: Callable[[OwnerRef, str], Sequence[OwnerRef] | None]

    def may_want_owners(self, gvk: GVK, obj: dict[str, Any], *, deleted: bool) -> bool:
        """Whether ``obj`` might look an owner up (owners, and tracked or a pod met first); safe without the lock."""
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        if not isinstance(meta, dict) or not meta.get("ownerReferences"):
            return False
        return (gvk in self.tracked and not deleted) or (gvk == POD and meta.get("uid") not in self.pods)

    def owners_wanted(self, gvk: GVK, objs: tuple[dict[str, Any], ...] | list[dict[str, Any]], *, deleted: bool, settling: bool,
                      asked: set[ObjKey]) -> set[ObjKey]:
        """The owners applying a message (``objs`` of ``gvk``; ``settling``: its kind lists, fails or goes away) would GET:
        the chains of tracked objects, of pods met first, of the pods that waited for the owner kinds it settles."""
        heads, read = [], {}
        for obj in objs:
            if not self.may_want_owners(gvk, obj, deleted=deleted):
                continue
            tracked = gvk in self.tracked and not deleted
            if tracked or self.sync.owners_listed:
                try:
                    read[id(obj)] = head = sanitize.read_head(obj, gvk)
                except MALFORMED:
                    continue  # the write skips it and says so
                if not (tracked and changes.is_skipped_owned(head, skip_owned=self.tracked[gvk].skip_owned)):
                    heads.append(head)
        if settling and self.sync.settles_owners(gvk):
            heads.extend(pending.head for pending in self.sync.unresolved.values())
        wanted, chains = self.owner_index.wanted(heads, asked=asked)
        if not wanted:  # applied next, in the same hold of the writer's lock: what was read and resolved here is kept
            self._prepared_heads, self._prepared_chains = read, chains
        return wanted

    def forget_prepared(self) -> None:
        """The message was applied: the heads and chains ``owners_wanted`` prepared for it are dropped."""
        self._prepared_heads, self._prepared_chains = {}, {}

    def _chain(self, head: ObjectHead) -> list[ObjKey]:
        """The object's owner chain: as ``owners_wanted`` resolved it for this message, else resolved now."""
        prepared = self._prepared_chains.pop(id(head), None) if self._prepared_chains else None
        return prepared[1] if prepared is not None and prepared[0] is head else owners.resolve_chain(head, lookup=self._lookup)

