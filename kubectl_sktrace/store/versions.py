"""The versions of an object in ``events`` (schema 0011): which ops apply it, and a revision made whole.

A row of op 0 is a new object or spec (SimKube's event); ops 3 and 4 are *revisions* (its metadata, or a spec-less
kind's data, changed; the spec did not: ``trace/revisions``), stored without their spec. ``whole`` puts the spec back
from the revision's *base*, the object's last row of op 0 before it, for the readers that show or export the object.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kubectl_sktrace.model import ObjKey
from kubectl_sktrace.store.bodies import decode_body, encode_body, packed_body
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.trace.revisions import DATA as DATA_CHANGE
from kubectl_sktrace.trace.revisions import METADATA as METADATA_CHANGE
from kubectl_sktrace.trace.revisions import SPEC, with_spec

APPLIED, DELETED, UNTRACKED, METADATA, DATA = 0, 1, 2, 3, 4
VERSIONS = f"{APPLIED}, {METADATA}, {DATA}"
"""The ops of rows that apply an object: a new object or spec (SimKube's events), and the revisions. An export keeps
only the first by default."""
OP_OF_CHANGE = {SPEC: APPLIED, METADATA_CHANGE: METADATA, DATA_CHANGE: DATA}
CHANGE_OF_OP = {op: change for change, op in OP_OF_CHANGE.items()}
"""The kind of change (``trace/revisions``) a version's op records, and back."""

class StoredEvent(NamedTuple):
    """One row of ``events``: an applied object (with its stored body blobs, decoded on request) or a
    deletion (no body). A named tuple: an export makes one per row, and it builds at half a dataclass's cost."""

    id: int
    ts: int
    key: ObjKey
    uid: str
    deleted: bool
    inferred: bool
    spec_hash: int | None
    owner_chain: tuple[ObjKey, ...]
    body_blob: bytes | None
    status_blob: bytes | None
    run_id: int = 0
    refs: str | None = None  # ``events.refs`` as stored (JSON), None when not recorded
    daemonset: bool | None = None  # ``events.daemonset``, None when not recorded
    op: int = APPLIED  # as stored: a revision (``versions``) is an applied version whose spec did not change

    @property
    def body(self) -> dict[str, Any] | None:
        """The sanitized object as recorded, status included."""
        return None if self.body_blob is None else decode_body(self.body_blob, self.status_blob)

    def without_status(self) -> dict[str, Any] | None:
        """The sanitized object as recorded, without its status (cheaper: one blob decoded)."""
        return None if self.body_blob is None else decode_body(self.body_blob)

    def packed(self) -> bytes:
        """The object without its status as msgpack bytes, copied into a trace as they are."""
        assert self.body_blob is not None, "a deletion has no body"
        return packed_body(self.body_blob)


_BASE = (f"SELECT body, status FROM events INDEXED BY events_object WHERE gvk = ? AND namespace = ? AND name = ? "
         f"AND (ts < ? OR (ts = ? AND id < ?)) AND op = {APPLIED} ORDER BY ts DESC, id DESC LIMIT 1")


def made_whole(cache: Cache, *, key: ObjKey, ts: int, row_id: int, body_blob: bytes) -> tuple[bytes, bytes | None] | None:
    """A revision's body made whole (``revisions.with_spec``) and its base's status, as stored blobs; None when it has no
    base (none was ever recorded: the revision is what there is). The base is the object's last row of op 0 before it,
    one step back in ``events_object``."""
    row = cache.conn.execute(_BASE, (str(key.gvk), key.namespace, key.name, ts, ts, row_id)).fetchone()
    if row is None or row[0] is None:
        return None
    body, _ = encode_body(with_spec(decode_body(body_blob), decode_body(bytes(row[0]))))
    return body, None if row[1] is None else bytes(row[1])


def whole(cache: Cache, event: StoredEvent) -> StoredEvent:
    """A revision with its object made whole (``made_whole``); any other row as it is."""
    if event.op not in (METADATA, DATA) or event.body_blob is None:
        return event
    found = made_whole(cache, key=event.key, ts=event.ts, row_id=event.id, body_blob=event.body_blob)
    return event if found is None else event._replace(body_blob=found[0], status_blob=found[1])
