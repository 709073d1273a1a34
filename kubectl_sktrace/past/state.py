"""The state at T, one object's lives, the changes of a stretch of time: what ``get --at``, ``history``, ``diff``,
``get --watch`` and the read-only API server over the past all read, through ``Past``.

**T** is a time in Unix seconds; the state at T holds every change stamped at T's second or before (the end of that
second: the recorder stamps a change with the whole second it received it in, as SimKube does). A T before the
history's first row, or in the future, is refused (``Past.second``): the history says nothing there.

**How each object is known** at T (``Knowledge``): ``live`` (its version in force was observed by a running recorder
and a recorder watched its kind at T), ``audit log`` (written by ``backfill`` from the API server's own log, or T lies
in offline time a log covered: exact), ``reconstructed`` (found by a restart's relist, stamped at the restart or at
its creation time), or ``unknown``: T lies in a gap nobody observed (no recorder ran, or its kind's watch was down)
and no log covered it: the object is then its last known version, and the gap is named.

**Identity**: objects are told apart by uid; a name deleted and created again is two lives (``Past.lives``), and a
change that replaced an object by another of the same name is a deletion then an addition.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any, Iterable, Iterator

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.model import POD, ObjKey
from kubectl_sktrace.past.kinds import LIFECYCLES, Kind, recorded, resolve, resolve_many
from kubectl_sktrace.past.objects import Scope, changed_paths, kubectl_form
from kubectl_sktrace.store import attime, history, statuses
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.store.versions import APPLIED
from kubectl_sktrace.timeparse import format_time
from kubectl_sktrace.trace.revisions import describe

LIVE, AUDIT, RECONSTRUCTED, UNKNOWN = "live", "audit log", "reconstructed", "unknown"
ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


@dataclass(frozen=True)
class Gap:
    """Time nobody observed: ``until`` None while it lasts (no recorder since); ``cause`` as ``status`` says it."""

    since: float
    until: float | None
    cause: str

    def __str__(self) -> str:
        end = "now" if self.until is None else format_time(self.until)
        return f"{self.cause} from {format_time(self.since)} to {end}"


@dataclass(frozen=True)
class Knowledge:
    """How a version is known at a time: ``how`` one of LIVE, AUDIT, RECONSTRUCTED, UNKNOWN; ``gap`` the gap T lies in."""

    how: str
    gap: Gap | None = None


@dataclass(frozen=True)
class PodLife:
    """A pod's lifecycle as recorded (whole seconds; None: not started, not finished)."""

    start: int | None
    end: int | None
    end_inferred: bool

    def phase_at(self, second: int) -> str:
        """``Pending``, ``Running`` or ``Terminated`` (how it ended, success or failure, is not recorded)."""
        if self.start is None or self.start > second:
            return "Pending"
        return "Running" if self.end is None or self.end > second else "Terminated"


@dataclass(frozen=True)
class PastObject:
    """One object as it was at a time: ``obj`` in kubectl's JSON form (``objects.kubectl_form``), the second and row of
    its version in force, how it is known, its run, for a pod its lifecycle (None when not recorded), and its reduced
    status in force (``trace/statuses.reduce``: what a person reads of it, {} an object whose status was still empty;
    None where the history does not know it: a cache before status changes, a time before they were first recorded,
    a gap)."""

    kind: Kind
    key: ObjKey
    uid: str
    obj: dict[str, Any]
    second: int
    row_id: int
    run_id: int
    known: Knowledge
    pod: PodLife | None = None
    status: dict[str, Any] | None = None  # its reduced status in force (``trace/statuses``); None: not known at that time


@dataclass(frozen=True)
class Change:
    """One change, as a watch sends it: ``type`` ADDED, MODIFIED or DELETED (a deletion's ``obj`` is the last version);
    ``what`` for people (``created``, ``spec changed``, ``labels changed: tier=web``, ``deleted``); ``known`` LIVE,
    AUDIT or RECONSTRUCTED."""

    type: str
    second: int
    row_id: int
    kind: Kind
    key: ObjKey
    uid: str
    obj: dict[str, Any]
    what: str
    known: str
    run_id: int


@dataclass(frozen=True)
class StatusChange:
    """One recorded status change of an object (``uid``): its reduced status ``before`` (None: its first) and ``after``;
    ``known`` LIVE or RECONSTRUCTED (a list found it, its time unknown)."""

    second: int
    uid: str
    before: dict[str, Any] | None
    after: dict[str, Any]
    known: str
    run_id: int

    @property
    def what(self) -> str:
        """For people: ``status: 2 of 3 ready`` (its first), ``status: ready 2/3→3/3; readyReplicas 2 -> 3; ...``."""
        from kubectl_sktrace.trace.statuses import describe, ready_of, summary

        if self.before is None:
            return f"status: {summary(self.after)}"
        was, now = ready_of(self.before), ready_of(self.after)
        ready = f"ready {was[0]}/{was[1]}→{now[0]}/{now[1]}; " if was is not None and now is not None and was != now else ""
        return f"status: {ready}{describe(self.before, self.after) or 'as before'}"


@dataclass(frozen=True)
class Life:
    """One object of a name, from its creation to its deletion (``deleted`` None while it lives): its changes in order."""

    uid: str
    changes: tuple[Change, ...]

    @property
    def deleted(self) -> int | None:
        return self.changes[-1].second if self.changes and self.changes[-1].type == DELETED else None


@dataclass(frozen=True)
class Difference:
    """An object added, deleted or changed between two times: ``before`` / ``after`` None where it did not exist."""

    kind: Kind
    key: ObjKey
    before: PastObject | None
    after: PastObject | None

    @property
    def type(self) -> str:
        return ADDED if self.before is None else DELETED if self.after is None else MODIFIED


class Past:
    """The history of one open cache asked at times. Reads only; ``now`` bounds the times asked (the future is refused).
    On PostgreSQL a cache opened read-only is one snapshot: ``follow`` wants a cache opened anew for each poll."""

    def __init__(self, cache: Cache, *, now: float | None = None) -> None:
        self.cache = cache
        self.now = time.time() if now is None else now
        self._kinds: list[Kind] | None = None
        self._gaps: list[tuple[str, Gap]] | None = None
        self._fills: list[tuple[str, float, float, bool]] | None = None
        self._first: tuple[int | None] | None = None
        self._status_since: tuple[float | None] | None = None

    # kinds and times

    def kinds(self) -> list[Kind]:
        """Every recorded kind with its names, by GVK (what discovery of the past serves)."""
        if self._kinds is None:
            self._kinds = recorded(self.cache)
        return self._kinds

    def kind(self, term: str) -> Kind:
        """The recorded kind ``term`` names as kubectl takes it (``deploy``, ``deployments.apps``, ``apps/v1.Deployment``)."""
        return resolve(self.kinds(), term)

    def kinds_named(self, terms: str) -> list[Kind]:
        """The recorded kinds ``deploy,cm`` or ``all`` names (``kinds.resolve_many``)."""
        return resolve_many(self.kinds(), terms)

    def begins(self) -> int | None:
        """The second of the history's first row (None: no history yet)."""
        if self._first is None:
            self._first = (attime.first_second(self.cache),)
        return self._first[0]

    def second(self, at: float) -> int:
        """T's whole second, checked: a UsageError when T is before the history, in the future, or not a time."""
        if not math.isfinite(at):
            raise UsageError("the time asked is not a time; give '-2h', an RFC 3339 time or '@<unix seconds>'")
        first = self.begins()
        if first is None:
            raise UsageError(f"the cache {self.cache.path} holds no history yet; record some with 'kubectl sktrace start'")
        if at > self.now + 1:
            raise UsageError(f"{format_time(at)} is in the future (now is {format_time(self.now)}): the history ends now")
        if math.floor(at) < first:
            raise UsageError(f"{format_time(at)} is before the history, which begins at {format_time(first)}")
        return math.floor(at)

    # how a time is known

    def knowledge(self, kind: Kind, second: int) -> Knowledge | None:
        """How the state of ``kind`` at ``second`` is known as a whole: UNKNOWN with its gap, AUDIT when a log covered
        that gap, None when a recorder watched the kind then (each object is then known as its version is)."""
        gap = self._gap_at(str(kind.gvk), second)
        if gap is None:
            return None
        if self._fills is None:
            self._fills = attime.audit_fills(self.cache)
        # a log fills the tracked kinds' objects; of pods only their lifecycles (``audit/collect``): tracked pods' objects stay unknown
        if (kind.gvk != POD or kind.lifecycles) and any(gvk in ("", str(kind.gvk)) and since <= second + 1 and second < until
                                                         for gvk, since, until, _ in self._fills):
            return Knowledge(AUDIT, gap)
        return Knowledge(UNKNOWN, gap)

    def _gap_at(self, gvk: str, second: int) -> Gap | None:
        if self._gaps is None:
            self._gaps = self._all_gaps()
        for kind, gap in self._gaps:
            if kind in ("", gvk) and gap.since < second + 1 and (gap.until is None or gap.until > second):
                return gap
        return None

    def _all_gaps(self) -> list[tuple[str, Gap]]:
        runs = history.runs(self.cache)
        gaps: list[tuple[str, Gap]] = []
        for before, after in zip(runs, runs[1:]):
            if after.started > before.stopped:
                gaps.append(("", Gap(before.stopped, after.started, "no recorder ran")))
        if runs and not self.cache.writer_active():
            gaps.append(("", Gap(max(r.stopped for r in runs), None, "no recorder ran")))
        for gap in history.coverage_gaps(self.cache):
            gaps.extend((kind, Gap(gap.since, gap.until, gap.cause)) for kind in gap.kinds)
        return gaps

    def _known(self, row: attime.Row, whole: Knowledge | None) -> Knowledge:
        if whole is not None:
            return whole
        return Knowledge(AUDIT if row.audit else RECONSTRUCTED if row.inferred else LIVE)

    # the state at T

    def objects_at(self, kind: Kind, scope: Scope, at: float) -> Iterator[PastObject]:
        """The objects of ``kind`` that ``scope`` selects as they were at ``at``, by namespace then name."""
        second = self.second(at)
        whole = self.knowledge(kind, second)
        statuses_known = self._statuses_known(whole, second)
        found = self._lifecycle_pods(kind, scope, second, whole) if kind.lifecycles else self._versions(kind, scope, second, whole)
        chunk: list[PastObject] = []
        for each in found:
            chunk.append(each)
            if len(chunk) >= 500:
                yield from self._completed(chunk, second, statuses_known)
                chunk = []
        yield from self._completed(chunk, second, statuses_known)

    def _versions(self, kind: Kind, scope: Scope, second: int, whole: Knowledge | None) -> Iterator[PastObject]:
        """The versions in force at ``second`` of the objects of ``kind`` that ``scope`` selects, without their status."""
        for row in attime.rows_at(self.cache, gvk=kind.gvk, second=second, namespace=scope.namespace_filter(), names=scope.name_filter()):
            assert row.body is not None
            obj = kubectl_form(row.body, key=row.key, uid=row.uid, created=row.created)
            if scope.selects(row.key, obj):
                yield PastObject(kind, row.key, row.uid, obj, row.ts, row.id, row.run_id, self._known(row, whole))

    def _lifecycle_pods(self, kind: Kind, scope: Scope, second: int, whole: Knowledge | None) -> Iterator[PastObject]:
        """Pods known by their lifecycles only (``Kind.lifecycles``): those running at ``second``, with their identity and
        nothing the cache did not keep (no labels: a label selector is refused rather than answered with nothing)."""
        if scope.labels is not None:
            raise UsageError(f"-l cannot select pods by their labels: {LIFECYCLES}")
        for row_id, namespace, name, uid, start, end, inferred in attime.pods_running(
                self.cache, second=second, namespace=scope.namespace_filter(), names=scope.name_filter()):
            key = ObjKey(POD, namespace, name)
            if scope.selects(key, None):
                obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "uid": uid}}
                yield PastObject(kind, key, uid, obj, start, row_id, 0, whole or Knowledge(RECONSTRUCTED if inferred and end is not None else LIVE))

    def _completed(self, chunk: list[PastObject], second: int, statuses_known: bool) -> Iterator[PastObject]:
        """The chunk's objects with their status in force (when known at ``second``) and, for pods, their lifecycles."""
        if not chunk:
            return
        if statuses_known:
            found = statuses.in_force(self.cache, gvk=chunk[0].kind.gvk, keys=[(o.key.namespace, o.key.name) for o in chunk], second=second)
            chunk = [replace(o, status=_status_of(found.get((o.key.namespace, o.key.name)), o.uid, lifecycles=o.kind.lifecycles)) for o in chunk]
        if chunk[0].kind.gvk != POD:
            yield from chunk
            return
        lives = attime.pod_phases(self.cache, uids=[o.uid for o in chunk])
        for each in chunk:
            life = lives.get(each.uid)
            yield each if life is None else replace(each, pod=PodLife(*life))

    def _statuses_known(self, whole: Knowledge | None, second: int) -> bool:
        """Whether statuses are known at ``second`` for a kind known there as ``whole``: watched then, or in time between
        runs a log at RequestResponse filled (its status changes filled too)."""
        if whole is None:
            return self.status_known(second)
        return whole.how == AUDIT and any(filled and since <= second + 1 and second < until for _, since, until, filled in self._fills or [])

    def status_known(self, second: int) -> bool:
        """Whether the history knows statuses at ``second`` (a kind's gap aside: ``knowledge``): status changes were
        recorded by then, from the end of the first recording run's lists that wrote one."""
        if self._status_since is None:
            run = statuses.first_run(self.cache)
            found = next((r.synced or r.started for r in history.runs(self.cache) if r.id == run), None) if run is not None else None
            self._status_since = (found,)
        since = self._status_since[0]
        return since is not None and second >= math.floor(since)

    def object_at(self, kind: Kind, namespace: str, name: str, at: float) -> PastObject | None:
        """One object as it was at ``at``; None when it did not exist then."""
        return next(self.objects_at(kind, Scope(namespace=namespace, names=(name,)), at), None)

    # changes

    def changes(self, kinds: Iterable[Kind], scope: Scope, *, after: float, until: float) -> Iterator[Change]:
        """The changes of ``kinds`` that ``scope`` sees after ``after`` up to ``until`` (both checked as times), in
        time order: what a watch started at ``after`` would have sent (an ``after`` before the history: from its
        beginning). An object entering the scope (its labels now match) is ADDED, one leaving it DELETED, as the API
        server's watch with a selector does."""
        last = self.second(until)
        first = max(math.floor(after), self.begins() or 0) + 1 if math.isfinite(after) else self.second(after)
        by_gvk = {k.gvk: k for k in kinds if not k.lifecycles}  # pods known by their lifecycles have no versions to change
        rows = attime.rows_between(self.cache, gvks=list(by_gvk), first=first, last=last, namespace=scope.namespace_filter())
        yield from self._as_changes(rows, by_gvk, scope)

    def follow(self, kinds: Iterable[Kind], scope: Scope, *, after_row: int) -> tuple[list[Change], int]:
        """The changes written since the row ``after_row`` (``last_row()`` to begin), in the order written, and the row
        to ask after next time: a running recorder's news, polled."""
        _versioned(kinds)
        by_gvk = {k.gvk: k for k in kinds}
        rows = attime.rows_since(self.cache, gvks=list(by_gvk), after_id=after_row)
        newest = max((r.id for r in rows), default=after_row)
        return list(self._as_changes(iter(rows), by_gvk, scope)), newest

    def as_object(self, change: Change) -> PastObject:
        """A change as the object it made, with its status then (a watch's row: ``get -w``)."""
        found = PastObject(change.kind, change.key, change.uid, change.obj, change.second, change.row_id, change.run_id, Knowledge(change.known))
        return next(self._completed([found], change.second, self._statuses_known(self.knowledge(change.kind, change.second), change.second)))

    def status_news(self, kinds: Iterable[Kind], scope: Scope, *, after_status: int = 0, after: float | None = None,
                    until: float | None = None) -> tuple[list[PastObject], int]:
        """The objects whose status changed, as they were then (with that status): the status changes written after the
        row ``after_status`` (a running recorder's news), or stamped in ``(after, until]``; and the last row read."""
        by_gvk = {k.gvk: k for k in kinds}
        bounds = {} if after is None or until is None else {"first": max(math.floor(after), self.begins() or 0) + 1, "last": self.second(until)}
        rows = statuses.rows_after(self.cache, gvks=list(by_gvk), after_id=after_status, namespace=scope.namespace_filter(), **bounds)
        found = []
        for row in rows:
            one = Scope(namespace=row.key.namespace, names=(row.key.name,), labels=scope.labels, fields=scope.fields)
            named = Scope(namespace=scope.namespace, names=scope.names, fields=scope.fields).selects(row.key, None)
            now = next(self.objects_at(by_gvk[row.key.gvk], one, row.ts), None) if named else None
            if now is not None and now.uid == row.uid:
                found.append(replace(now, second=row.ts, status=row.reduced if now.status is not None else None))
        return found, max((row.id for row in rows), default=after_status)

    def last_status_row(self) -> int:
        """The last status change written: where ``status_news`` begins."""
        return statuses.last_row(self.cache)

    def pods(self, kind: Kind, namespace: str, name: str) -> list[tuple[str, str, PodLife]]:
        """``(name, uid, lifecycle)`` of the pods whose lifecycle owner is the object, in the order first recorded."""
        return [(n, u, PodLife(start, end, inferred)) for n, u, start, end, inferred in attime.pods_of(self.cache, ObjKey(kind.gvk, namespace, name))]

    def last_row(self) -> int:
        """The last row written: where ``follow`` begins."""
        return attime.last_id(self.cache)

    def _as_changes(self, rows: Iterator[attime.Row], by_gvk: dict[Any, Kind], scope: Scope) -> Iterator[Change]:
        previous: dict[ObjKey, tuple[attime.Row | None, dict[str, Any] | None]] = {}
        for row in rows:
            if row.key in previous:
                before, old = previous[row.key]
            else:
                before = attime.row_before(self.cache, row)
                old = _selected(before, scope)
            new = _selected(row, scope)
            previous[row.key] = (row, new)
            yield from _change(by_gvk[row.key.gvk], before, row, old, new)

    # one object's lives

    def lives(self, kind: Kind, namespace: str, name: str) -> list[Life]:
        """Every life of one name, oldest first: each object (uid) from its creation to its deletion, its changes."""
        _versioned([kind])
        found: list[tuple[str, list[Change]]] = []
        before: attime.Row | None = None
        old: dict[str, Any] | None = None
        for row in attime.object_rows(self.cache, ObjKey(kind.gvk, namespace, name)):
            new = _selected(row, Scope())
            for change in _change(kind, before, row, old, new):
                if change.type == ADDED or not found:
                    found.append((change.uid, []))
                found[-1][1].append(change)
            before, old = row, new
        return [Life(uid, tuple(changes)) for uid, changes in found]

    def status_changes(self, kind: Kind, namespace: str, name: str) -> list[StatusChange]:
        """Every recorded status change of one name (every life's: ``uid`` tells them apart), oldest first; a row that
        repeats the state before it is left out."""
        found: list[StatusChange] = []
        last: dict[str, dict[str, Any]] = {}
        for row in statuses.history_of(self.cache, ObjKey(kind.gvk, namespace, name), start=0, end=2**62):
            if last.get(row.uid) != row.reduced:  # a row that changes nothing a person reads (a relist's) says nothing
                how = AUDIT if row.filled else RECONSTRUCTED if row.inferred else LIVE
                found.append(StatusChange(row.ts, row.uid, last.get(row.uid), row.reduced, how, row.run_id))
            last[row.uid] = row.reduced
        return found

    # between two times

    def differences(self, kinds: Iterable[Kind], scope: Scope, *, start: float, end: float) -> Iterator[Difference]:
        """What was added, deleted and changed between ``start`` and ``end``, by kind, namespace and name; a name
        re-created is a deletion and an addition. Reads only the objects with a change in between."""
        first, last = self.second(start), self.second(end)
        for kind in kinds:
            for key in attime.keys_changed(self.cache, gvks=[kind.gvk], first=first + 1, last=last, namespace=scope.namespace_filter()):
                one = Scope(namespace=key.namespace, names=(key.name,), labels=scope.labels, fields=scope.fields)
                if not Scope(names=scope.names, fields=scope.fields).selects(key, None):
                    continue
                old_row, new_row = attime.row_in_force(self.cache, key, second=first), attime.row_in_force(self.cache, key, second=last)
                if old_row == new_row or not any(row is not None and row[1] for row in (old_row, new_row)):
                    continue  # the same version at both ends, or none (a change undone is two rows: compared whole below)
                old, new = self.object_at_scope(kind, one, first), self.object_at_scope(kind, one, last)
                yield from _differences(kind, key, old, new)

    def object_at_scope(self, kind: Kind, scope: Scope, second: int) -> PastObject | None:
        return next(self.objects_at(kind, scope, second), None)


def _versioned(kinds: Iterable[Kind]) -> None:
    """A UsageError when a question about versions names pods known by their lifecycles only."""
    if any(kind.lifecycles for kind in kinds):
        raise UsageError(LIFECYCLES)


def _status_of(row: statuses.StatusRow | None, uid: str, *, lifecycles: bool = False) -> dict[str, Any] | None:
    """The reduced status of the life ``uid`` from its name's last status change: {} when that change is another life's
    (a name re-created, the new object's status not yet written) or there is none (nothing to read yet); for a pod known
    by its lifecycle only, None (not known: a pod's status is written when it is first seen)."""
    if row is not None and row.uid == uid:
        return row.reduced
    return None if lifecycles else {}


def _differences(kind: Kind, key: ObjKey, old: PastObject | None, new: PastObject | None) -> Iterator[Difference]:
    if old is not None and new is not None and old.uid != new.uid:
        yield Difference(kind, key, old, None)
        yield Difference(kind, key, None, new)
    elif (old is None) != (new is None) or (old is not None and new is not None and old.obj != new.obj):
        yield Difference(kind, key, old, new)


def _change(kind: Kind, before: attime.Row | None, row: attime.Row, old: dict[str, Any] | None, new: dict[str, Any] | None) -> Iterator[Change]:
    """The watch events one row makes after ``before`` (the object's previous row); ``old`` and ``new`` the two versions
    as a watcher's scope sees them (``_selected``: None where it sees no object)."""
    how = AUDIT if row.audit else RECONSTRUCTED if row.inferred else LIVE
    if old is not None and new is not None and before is not None and before.uid != row.uid:
        yield Change(DELETED, row.ts, row.id, kind, row.key, before.uid, old, "deleted", how, row.run_id)
        old = None
    if new is not None:
        if old == new:
            return  # a row of nothing the history shows (a pod's node, dropped)
        what = _what(old, new, row.op) if old is not None else "created" if row.created is None or row.created >= row.ts - 1 else \
            f"first recorded (created {format_time(row.created)})"
        yield Change(ADDED if old is None else MODIFIED, row.ts, row.id, kind, row.key, row.uid, new, what, how, row.run_id)
    elif old is not None and before is not None:
        what = "deleted" if not row.applies else "left the selector"
        yield Change(DELETED, row.ts, row.id, kind, row.key, before.uid, old, what, how, row.run_id)


def _selected(row: attime.Row | None, scope: Scope) -> dict[str, Any] | None:
    if row is None or not row.applies or row.body is None:
        return None
    obj = kubectl_form(row.body, key=row.key, uid=row.uid, created=row.created)
    return obj if scope.selects(row.key, obj) else None


def _what(old: dict[str, Any], new: dict[str, Any], op: int) -> str:
    said = describe(old, new)
    paths = changed_paths(old.get("spec"), new.get("spec"), "spec") if op == APPLIED else []
    spec = f"spec changed: {', '.join(paths[:3])}{f' +{len(paths) - 3} more' if len(paths) > 3 else ''}" if paths else ""
    return "; ".join(part for part in (spec, said) if part) or "no change the history keeps"
