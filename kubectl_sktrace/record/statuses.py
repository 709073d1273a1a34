"""The status changes of the objects the recorder sees: what it keeps between two events of an object, and when it
writes a row (docs/spec.md "What a status change is").

For each tracked object and each pod, ``StatusIndex`` keeps one integer: the fingerprint of its uid and its reduced
status (``trace/statuses``), all the next comparison needs; the reduction itself goes to the cache, never stays in
memory. An event whose reduction has another fingerprint is a status change, written at its second. What a list finds
(a restart's first list, a relist after a 410 or an outage) is written *inferred*: the state is known, not when it
became so; a restart starts with an empty index, so it records the state it finds, reconstructed. An object that
goes is forgotten, so memory follows the live cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

from kubectl_sktrace.model import POD, ObjectHead, ObjKey
from kubectl_sktrace.record.changes import event_second
from kubectl_sktrace.store.recording import Recording
from kubectl_sktrace.trace import statuses


class StatusIndex:
    """Per object key, the fingerprint of its last recorded status; ``seen`` writes a row when it changes."""

    def __init__(self, recording: Recording, run_id: int, written: Callable[[float], float]) -> None:
        self.rec, self.run_id, self._written = recording, run_id, written
        self.known: dict[ObjKey, int] = {}
        self.recorded = 0

    def seen(self, head: ObjectHead, obj: Mapping[str, Any], recv: float, *, inferred: bool) -> None:
        """An object as a watch event or a list shows it: a row when what a person reads of it changed. An object first
        met with nothing to read (a status not yet written) writes nothing until it has."""
        key = head.key
        reduced = statuses.reduce(obj, pod=key.gvk == POD)
        mark = hash((head.uid, statuses.fingerprint(reduced)))
        known = self.known.get(key)
        if known == mark:
            return
        self.known[key] = mark
        if known is None and not reduced:
            return
        self.rec.append_status(self.run_id, ts=event_second(recv), recv=self._written(recv), key=key, uid=head.uid,
                               inferred=inferred, reduced=reduced)
        self.recorded += 1

    def forget(self, key: ObjKey) -> None:
        """The object is gone: nothing of it is kept."""
        self.known.pop(key, None)
