"""What the recorder knows of owners, and the lookups an owner chain makes. Not thread-safe: ``Ingest``'s caller
serializes the calls.

An owner's own references are looked up in order: the owner records in memory (owner kinds watched alongside the
tracked ones, objects with owners), the tracked live index (a tracked object without owners), the cache's ``owners``
table, and last the cluster (a GET, kept in memory and the cache). A record known under another uid than the
reference's is stale (the owner may have been re-created under the same name while its kind has not been relisted
yet): the cluster is asked what exists now.

Where the GET is made (docs/architecture.md, "Locks and the network"): in place when ``Ingest`` is applied alone
(tests, benchmarks); under the ``Writer`` never while a message is applied. The writer takes the fetching
(``take_fetching``), asks first which owners a message's chains would GET (``wanted``: the same walk, reading memory
and the cache only, writing nothing), fetches them with no lock held and hands them in (``fetched``); a lookup made
while the message is then applied finds them, and an owner still unknown there (one the chains reach only after the
walk, a race with another kind's message) counts as one that cannot be resolved, as a 404 would.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Iterable

from kubectl_sktrace.model import GVK, LiveObject, ObjectHead, ObjKey, OwnerRef
from kubectl_sktrace.record import changes, owners
from kubectl_sktrace.record.initialsync import InitialSync
from kubectl_sktrace.store.recording import OwnerRecord, Recording
from kubectl_sktrace.trace import sanitize

log = logging.getLogger(__name__)

Fetch = Callable[[ObjKey], "dict[str, Any] | None"]


class OwnerIndex:
    """The owner records (``records``: key -> uid and owner references) and the chain lookups (module docstring)."""

    def __init__(self, *, recording: Recording, fetch: Fetch | None, live: dict[GVK, dict[ObjKey, LiveObject]],
                 sync: InitialSync) -> None:
        self.rec = recording
        self.fetch = fetch
        self.records: dict[ObjKey, OwnerRecord] = recording.load_owners()
        self._live, self._sync = live, sync
        self._wanted: set[ObjKey] | None = None  # owners a dry run would GET; None: not a dry run
        self._asked: frozenset[ObjKey] | set[ObjKey] = frozenset()  # owners fetched already for the message in hand

    def take_fetching(self) -> Fetch | None:
        """Hand the GETs to the caller: from now on a lookup never fetches (see the module docstring)."""
        fetch, self.fetch = self.fetch, None
        return fetch

    def wanted(self, heads: Iterable[ObjectHead], *, asked: set[ObjKey]) -> tuple[set[ObjKey], dict[int, tuple[ObjectHead, list[ObjKey]]]]:
        """The owners that resolving these objects' chains would GET, none of ``asked``, and the chains as resolved
        (complete when nothing is wanted), by ``id(head)`` beside the head itself (kept alive, so no other object takes
        its id); writes nothing."""
        self._wanted, self._asked = set(), asked
        try:
            chains = {id(head): (head, owners.resolve_chain(head, lookup=self.lookup)) for head in heads}
            return self._wanted, chains
        finally:
            self._wanted, self._asked = None, frozenset()

    def fetched(self, found: dict[ObjKey, dict[str, Any] | None]) -> None:
        """Owners fetched for ``wanted`` (None: gone or forbidden), kept in memory and the cache (inside a batch)."""
        for key, obj in found.items():
            if obj is None:
                log.info("owner %s cannot be resolved (gone or forbidden)", key)
                continue
            try:
                self._keep(key, obj)
            except sanitize.MALFORMED as exc:
                log.warning("owner %s: skipped a fetched object that cannot be read (%s: %s)", key, type(exc).__name__, exc)

    def store(self, head: ObjectHead, recv: float) -> None:
        """An object with owners, or of an owner kind, seen: its record, written when it changed."""
        record = OwnerRecord(head.uid, head.owners)
        if self.records.get(head.key) != record:
            self.records[head.key] = record
            self.rec.upsert_owner(head.key, record, fetched=recv)

    def forget(self, head: ObjectHead) -> None:
        """A DELETED owner: forgotten unless its name already belongs to a successor (another uid)."""
        record = self.records.get(head.key)
        if record is not None and changes.same_uid(record.uid, head.uid):
            del self.records[head.key]

    def lookup(self, ref: OwnerRef, namespace: str) -> tuple[OwnerRef, ...] | None:
        """The owner references of an owner (``owners.resolve_chain``'s lookup); None when it cannot be resolved."""
        key = ref.key(namespace)
        record = self.records.get(key)
        known = self._live.get(key.gvk, {}).get(key)
        if record is None and known is not None and not self._sync.is_vanishing(key, known.uid):
            return ()
        if record is None:
            record = self.rec.load_owner(key)
        if record is None or not changes.same_uid(ref.uid, record.uid):
            record = self._fetch(key)  # unknown, or known under another uid: ask the cluster what exists now
            if record is None:
                return None
        self.records[key] = record
        if not changes.same_uid(ref.uid, record.uid):
            log.info("owner %s is gone: its name now belongs to another object", key)
            return None
        return record.refs

    def _fetch(self, key: ObjKey) -> OwnerRecord | None:
        if self._wanted is not None:  # a dry run: named, not fetched
            if key not in self._asked:
                self._wanted.add(key)
            return None
        if self.fetch is None:
            log.debug("owner %s not resolved: not known when its dependent was written", key)
            return None
        obj = self.fetch(key)
        if obj is None:
            log.info("owner %s cannot be resolved (gone or forbidden)", key)
            return None
        return self._keep(key, obj)

    def _keep(self, key: ObjKey, obj: dict[str, Any]) -> OwnerRecord:
        head = sanitize.read_head(obj, key.gvk)
        record = OwnerRecord(head.uid, head.owners)
        self.records[key] = record
        self.rec.upsert_owner(key, record, fetched=time.time())
        return record
