"""The status changes of the objects the recorder sees: what it keeps between two events of an object, and when it
writes a row (docs/spec.md "What a status change is").

For each tracked object and each pod, ``StatusIndex`` keeps what the next comparison needs: the bytes of
its last reduced status (``trace/statuses``; tens of bytes, compared as they are), its uid, the ``status_objects`` row
its changes in this run go under, and how many rows it wrote since its last whole one (a clean stop keeps the bytes of
each one's reduction for the next start: ``unchanged``). An event whose reduction has
other bytes is a status change, written at its second as what changed since the last (``store/statuses``). What a
list finds (a restart's first list, a relist after a 410 or an outage) is written *inferred*: the state is known, not
when it became so; a restart starts with an empty index, so it records the state it finds, reconstructed and whole
(of an object listed as the last clean stop left it, from the bytes kept then: ``seen_unchanged``, the same rows).
An object that goes is forgotten, so memory follows the live cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, NamedTuple

from kubectl_sktrace.model import ObjectHead, ObjKey
from kubectl_sktrace.record.changes import event_second
from kubectl_sktrace.store.recording import Recording
from kubectl_sktrace.store.statuses import FULL_EVERY
from kubectl_sktrace.trace import statuses

NONE_YET = 0
"""The object of an object met with nothing to read: no ``status_objects`` row until it has."""


class _Known(NamedTuple):
    object: int
    uid: str
    packed: bytes  # the bytes of its last reduction (``statuses.packed``)
    since_full: int  # rows written since its last whole one (0: the next is whole)


class StatusIndex:
    """Per object, its last recorded status; ``seen`` writes a row when it changes. Objects are found by their uid (a
    string: its hash kept, compared in C), by their key when they have none."""

    def __init__(self, recording: Recording, run_id: int, written: Callable[[float], float]) -> None:
        self.rec, self.run_id, self._written = recording, run_id, written
        self.known: dict[str | ObjKey, _Known] = {}
        self.recorded = 0
        self._next_object: int | None = None

    def seen(self, head: ObjectHead, obj: Mapping[str, Any], recv: float, *, inferred: bool, pod: bool = False) -> None:
        """An object as a watch event or a list shows it (``pod``: a Pod): a row when what a person reads of it changed.
        An object first met with nothing to read (a status not yet written) writes nothing until it has."""
        ident = head.uid or head.key
        reduced = statuses.reduce(obj, pod=pod)
        packed = statuses.packed(reduced)
        known = self.known.get(ident)
        if known is not None and known.packed == packed and known.uid == head.uid:
            return
        self._changed(head, ident, known, reduced, packed, recv, inferred=inferred)

    def seen_unchanged(self, head: ObjectHead, kept: bytes, recv: float) -> None:
        """An object a restart's list finds as the last run's clean stop left it (``unchanged``), ``kept`` the bytes of
        its reduction then: the rows ``seen`` writes of it (reconstructed), with no reduction taken again (the bytes
        packed again: this process's own, whichever JSON wrote them)."""
        ident = head.uid or head.key
        reduced = statuses.unpacked(kept)
        packed = statuses.packed(reduced)
        known = self.known.get(ident)
        if known is not None and known.packed == packed and known.uid == head.uid:
            return
        self._changed(head, ident, known, reduced, packed, recv, inferred=True)

    def _changed(self, head: ObjectHead, ident: str | ObjKey, known: _Known | None, reduced: dict[str, Any], packed: bytes,
                 recv: float, *, inferred: bool) -> None:
        key = head.key
        if known is None and not reduced:
            self.known[ident] = _Known(NONE_YET, head.uid, packed, 0)
            return
        if known is None or known.uid != head.uid or known.object == NONE_YET:
            known = _Known(self._new_object(key, head.uid), head.uid, packed, 0)
        before = statuses.unpacked(known.packed) if known.since_full else None
        self.rec.append_status_change(self.run_id, ts=event_second(recv), recv=self._written(recv), object_id=known.object,
                               inferred=inferred, reduced=reduced, before=before)
        self.known[ident] = _Known(known.object, head.uid, packed, (known.since_full + 1) % FULL_EVERY)
        self.recorded += 1

    def _new_object(self, key: ObjKey, uid: str) -> int:
        if self._next_object is None:
            self._next_object = self.rec.next_status_object()
        object_id, self._next_object = self._next_object, self._next_object + 1
        self.rec.add_status_object(object_id, key, uid)
        return object_id

    def forget(self, ident: str | ObjKey) -> None:
        """The object gone, by its uid (its key when it has none): nothing of it is kept."""
        self.known.pop(ident, None)
