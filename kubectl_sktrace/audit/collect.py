"""A log's lines gathered into what backfill plans from: each tracked object's writes, pods' deletions, the time each
source covers, and the lines that gave nothing, counted (bad ones with their line number).

Memory follows what the log changed of the tracked kinds (their writes, with the objects the level shows), never the
log's length: lines are read one at a time (``sources``), and the lines of reads and of kinds not tracked are dropped
before they are parsed (``lines``). The same line met twice (overlapping rotated files) is taken once, by its
``auditID``. A source's time range is read from the first and last ``stageTimestamp`` of its lines, as strings (the
API server writes them in one form, which sorts as the times do).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

from kubectl_sktrace.audit import forms
from kubectl_sktrace.audit.lines import MAX_LINE_BYTES, OTHER_PODS, STATUS_ONLY, BadLine, Logged, Wanted, parse_time, read_line
from kubectl_sktrace.audit.sources import TOO_LONG, Source, read_lines
from kubectl_sktrace.model import POD, ObjKey, OwnerRef
from kubectl_sktrace.trace import hashing, lifecycle, revisions, sanitize, statuses

OUTSIDE = "outside the offline gaps"


@dataclass
class PodTrail:
    """A pod as the log tells it: its key, owners and stable spec hash (first body), its lifecycle so far (the
    recorder's merge of what each body shows), when it was first written and when it was removed."""

    key: ObjKey
    owners: tuple[OwnerRef, ...] = ()
    stable_hash: int | None = None
    life: lifecycle.Lifecycle = field(default_factory=lambda: lifecycle.Lifecycle(None, None))
    first_at: float | None = None
    removed_at: float | None = None

    def take(self, record: Logged) -> None:
        if record.verb == "delete" and record.removed is not False:
            self.removed_at = record.at if self.removed_at is None else max(self.removed_at, record.at)
            if record.body is not None:  # a pod's final delete answers the Pod: its last container states
                self.life, _ = lifecycle.merge_lifecycle(self.life, lifecycle.derive_lifecycle(record.body))
            return
        if record.body is None:
            return
        if self.first_at is None or record.at < self.first_at:
            self.first_at = record.at
        if self.stable_hash is None:
            self.owners = sanitize.owner_refs(record.body)
            self.stable_hash = hashing.pod_spec_hash(record.body.get("spec") or {})
        self.life, _ = lifecycle.merge_lifecycle(self.life, lifecycle.derive_lifecycle(record.body))

@dataclass(frozen=True)
class StatusLogged:
    """What a person read of an object after a logged write (``trace/statuses.reduce`` of the write's answer)."""

    at: float
    uid: str
    reduced: dict[str, Any]
    scaled: bool = False  # a scale write the log showed nothing of the object before: only its ``desired`` is known


MAX_BAD_SHOWN = 10
_STAGE_AT = re.compile(rb'"stageTimestamp":"([0-9T:.+Z-]+)"')


@dataclass
class Collected:
    """What the log gives, gathered."""

    writes: dict[ObjKey, list[Logged]] = field(default_factory=dict)  # per object, in the order read
    pods: dict[str, PodTrail] = field(default_factory=dict)  # by uid
    owners: dict[ObjKey, tuple[float, str, tuple[OwnerRef, ...]]] = field(default_factory=dict)  # last (time, uid, refs)
    lines: int = 0
    read_bytes: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    bad: int = 0
    bad_shown: list[tuple[str, int, str]] = field(default_factory=list)  # (source, line, reason) of the first bad lines
    spans: list[tuple[float, float]] = field(default_factory=list)  # each source's first and last time
    owner_kinds: frozenset[object] = frozenset()  # kinds read only for pods' owner chains
    created_pods: set[tuple[str, str]] = field(default_factory=set)  # (namespace, name) of the pods the log created
    unnamed_pod_deletes: dict[tuple[str, str], float] = field(default_factory=dict)  # (namespace, name): the last delete
    # of a pod whose line names no uid (Metadata, Request): a name's last delete is its final one
    sweeps: dict[tuple[object, str], list[float]] = field(default_factory=dict)  # (kind, namespace): times of deletecollections
    # without a selector whose level names nothing (every object of the kind in the namespace went then)
    statuses: dict[ObjKey, list[StatusLogged]] = field(default_factory=dict)  # per object, what a person read of it after
    # each write whose answer the log holds (RequestResponse), in the order read
    _seen: set[tuple[str, ObjKey]] = field(default_factory=set)

    def add(self, record: Logged) -> None:
        if record.verb == "deletecollection":
            self.sweeps.setdefault((record.key.gvk, record.key.namespace), []).append(record.at)
            return
        if record.audit_id:
            if (record.audit_id, record.key) in self._seen:
                self.skipped["repeated lines"] += 1
                return
            self._seen.add((record.audit_id, record.key))
        if self._status_only(record):
            return
        if record.key.gvk == POD:
            if record.verb == "create":
                self.created_pods.add((record.key.namespace, record.key.name))
            if not record.uid and record.verb == "delete" and record.removed is None:
                name = (record.key.namespace, record.key.name)
                self.unnamed_pod_deletes[name] = max(record.at, self.unnamed_pod_deletes.get(name, record.at))
            if record.uid:
                trail = self.pods.setdefault(record.uid, PodTrail(record.key))
                trail.take(record)
                if trail.life.end is not None:  # finished: no status write can change its lifecycle (skipped unparsed)
                    self.created_pods.discard((record.key.namespace, record.key.name))
            return
        if record.body is not None and record.uid and (record.key not in self.owners or self.owners[record.key][0] <= record.at):
            self.owners[record.key] = (record.at, record.uid, sanitize.owner_refs(record.body))
        if record.key.gvk in self.owner_kinds:
            return
        kept = self.writes.setdefault(record.key, [])
        if record.body is not None and kept and _same_version(kept[-1], record):
            self.skipped["writes without a change"] += 1  # a status write: what the recorder's rule ignores, not held
            return
        kept.append(record)

    def _status_only(self, record: Logged) -> bool:
        """Whether the write is a status write that gives nothing but a status change: a workload's changes no spec,
        labels or annotations; a pod's not created in the log, no lifecycle a restart's list did not tell."""
        self._status(record)
        if record.subresource != "status" or (record.key.gvk == POD and (record.key.namespace, record.key.name) in self.created_pods):
            return False
        self.skipped[STATUS_ONLY if record.key.gvk != POD else OTHER_PODS] += 1
        return True

    def _status(self, record: Logged) -> None:
        """What a person read of the object after the write: its answer reduced (``trace/statuses``); a ``scale`` write
        (its answer a Scale) the previous reduction with the replicas it asked for, or, when the log showed none, the
        replicas alone (``scaled``: the walk of the gap lays them on the state before, the cache's)."""
        if record.key.gvk in self.owner_kinds or not record.uid:
            return
        scaled = False
        if record.body is not None:
            reduced = statuses.reduce(record.body, pod=record.key.gvk == POD)
        elif record.replicas is not None and self.statuses.get(record.key):
            reduced = {**self.statuses[record.key][-1].reduced, "desired": record.replicas}
        elif record.replicas is not None:
            reduced, scaled = {"desired": record.replicas}, True
        else:
            return
        self.statuses.setdefault(record.key, []).append(StatusLogged(record.at, record.uid, reduced, scaled))

    def covers(self, at: float) -> bool:
        """Whether some source of the log reaches ``at`` (its last line at or after it)."""
        return any(last >= at for _, last in self.spans)

    def in_order(self) -> Iterator[tuple[ObjKey, list[Logged]]]:
        """Each object's writes in time order (ties kept in the order read)."""
        for key in sorted(self.writes):
            yield key, sorted(self.writes[key], key=lambda r: r.at)

    def bad_line(self, source: str, bad: BadLine) -> None:
        self.bad += 1
        if len(self.bad_shown) < MAX_BAD_SHOWN:
            self.bad_shown.append((source, bad.line, bad.reason))


def _same_version(before: Logged, after: Logged) -> bool:
    """Whether a write leaves the object as the previous logged write did, by the recorder's fingerprints (the spec
    hash, metadata and data): the later one is no change, whatever the level. Only writes read in time order compare."""
    if before.body is None or after.body is None or before.uid != after.uid or before.at > after.at or after.subresource == "scale":
        return False
    if hashing.spec_hash(before.body.get("spec")) != hashing.spec_hash(after.body.get("spec")):
        return False
    a, b = (sanitize.sanitize(r.body, gvk=r.key.gvk) for r in (before, after))  # type: ignore[arg-type]
    return revisions.metadata_hash(a) == revisions.metadata_hash(b) and revisions.data_hash(a) == revisions.data_hash(b)


def collect(sources: Iterable[Source], *, wanted: Wanted, within: Sequence[tuple[float, float]] | None = None,
            owner_kinds: frozenset[object] = frozenset(), where: Callable[[bytes], str] | None = None,
            lines_of: Callable[[Source], Iterator[tuple[int, bytes]]] = read_lines) -> Collected:
    """Every source read, line by line, into one ``Collected``; ``within``: the only times wanted (the gaps), lines of
    other times skipped before they are parsed (to the second: the exact test follows the parse) and counted under
    ``where(time)``."""
    out = Collected(owner_kinds=owner_kinds)
    bounds = None if within is None else [(stamp(a - 2), stamp(b + 2)) for a, b in within]
    for source in sources:
        first: bytes | None = None
        last: bytes | None = None
        for number, raw in lines_of(source):
            out.lines += 1
            out.read_bytes += len(raw) + 1
            if raw is TOO_LONG:
                out.bad_line(source.name, BadLine(number, f"longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB"))
                continue
            try:
                events = forms.unwrap(raw)
            except forms.UnreadableLine as exc:
                out.bad_line(source.name, BadLine(number, str(exc)))
                continue
            for event in events:
                found = _STAGE_AT.search(event, max(0, len(event) - 400)) or _STAGE_AT.search(event)
                if found is not None:
                    at = found.group(1)
                    first = at if first is None or at < first else first
                    last = at if last is None or at > last else last
                    if bounds is not None and not any(a < at < b for a, b in bounds):
                        out.skipped[where(at) if where is not None else OUTSIDE] += 1
                        continue
                _take(out, source.name, read_line(event, wanted=wanted, line=number))
        _span(out, first, last)
    return out


def stamp(ts: float) -> bytes:
    if ts in (float("inf"), float("-inf")):
        return b"9999" if ts > 0 else b"0000"
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)).encode()


def _take(out: Collected, source: str, given: tuple[Logged, ...] | str | BadLine) -> None:
    if isinstance(given, BadLine):
        out.bad_line(source, given)
    elif isinstance(given, str):
        out.skipped[given] += 1
    else:
        for record in given:
            out.add(record)


def _span(out: Collected, first: bytes | None, last: bytes | None) -> None:
    if first is None or last is None:
        return
    try:
        out.spans.append((parse_time(first.decode()), parse_time(last.decode())))
    except ValueError:
        pass
