"""A restart that resumes each kind's watch where the last run stopped, instead of listing the whole cluster again.

A stop of a minute leaves the API server holding every change since (its watch cache, etcd's compaction window). A
watch opened at the resourceVersion the last run reached for a kind receives exactly those changes, intermediate
versions included, where a list would send every object again to be decoded, hashed and compared. So a kind resumes
(``resume_from``) when all of these hold, and lists otherwise (docs/spec.md §5, "A restart that resumes"), walking
only what changed since the last clean stop (``unchanged``):

- the last run stored the position as fully applied (``Positions``: only once every kind had listed, since the
  initial sync defers deletions until then; a run that never synced, or an older recorder, stored none);
- the kind is tracked as the last run tracked it (a kind newly tracked, or whose options changed, is ``fresh``:
  its history starts with a list);
- the cluster is known to be the same one: its kube-system uid was read and matches the cache's (a server at the
  same address could be another cluster, whose resourceVersions mean nothing here);
- the kind is large: the cache holds at least ``RESUME_AT_LEAST`` live objects of it (a page of a list). A smaller
  kind lists in one request, sooner than a catch-up can prove it is over (a second: ``CATCH_UP_SECONDS``).

The resumed watch's catch-up (``watching``) ends once it passed the server's resourceVersion read when it began, or
once a short stream brought nothing more; until then ``Ingest`` takes its events for a list's items (stamped as a
restart's list stamps what it finds, inferred: creations at their ``creationTimestamp`` inside the gap; a version at
its latest ``managedFields`` time inside the gap, ``changes.written_second``, else at the restart) and its deletions
as what a list would miss (deleted at the run's start once every kind settled, or at the creation of an object
re-created under the name). A 410 ends the attempt: the kind lists, as before. Where no event reaches the version read
first, the proof that a catch-up is over is a stream of a second (``CATCH_UP_SECONDS``) that ends with ``QUIET_SECONDS``
of silence after its last event, or with nothing in it (the server's watch cache sends what it holds at once): about a
second for a kind, changed or not, whatever its size, against a list's time that grows with it.

Pure decisions, and the bookkeeping of the positions stored; the writes go through ``Recording``.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol

from kubectl_sktrace.model import GVK, LiveObject, ObjKey
from kubectl_sktrace.record import changes
from kubectl_sktrace.record.listing import PAGE_LIMIT, Stopped, horizon, watch_error
from kubectl_sktrace.store.recording import Recording

if TYPE_CHECKING:
    from kubectl_sktrace.kube.cluster import ListPage, OpenWatch
    from kubectl_sktrace.kube.discovery import Resource


class Sink(Protocol):
    """What a catch-up reports (a part of ``watching.Sink``)."""

    def resume_begin(self, gvk: GVK, ts: float) -> None: ...

    def event(self, gvk: GVK, event_type: str, obj: dict[str, Any], ts: float) -> None: ...

    def relist_end(self, gvk: GVK, resource_version: str, ts: float) -> None: ...


RESUME_AT_LEAST = PAGE_LIMIT
"""Live objects of a kind in the cache from which its restart resumes rather than lists (the module docstring)."""


def resumable(*, positions: Mapping[GVK, str], watched: Collection[GVK], fresh: Collection[GVK], cluster_uid: str,
              stored_uid: str | None, sizes: Mapping[GVK, int], at_least: int = RESUME_AT_LEAST) -> dict[GVK, str]:
    """The kinds that resume their watch, and from which resourceVersion (the module docstring says when); ``sizes``:
    the live objects of each kind the cache holds."""
    if not cluster_uid or stored_uid != cluster_uid:
        return {}
    return {gvk: rv for gvk, rv in positions.items() if gvk in watched and gvk not in fresh and rv and sizes.get(gvk, 0) >= at_least}


class Positions:
    """The watch positions of a run, stored with each commit; marked as the run's (resumable) once the sync is done.

    Before the sync, a position is stored without a run: ``status`` shows it, the next run lists. A kind refused or not
    served (``unresumable``) keeps its position unmarked until a list of it completes again."""

    def __init__(self, recording: Recording, run_id: int) -> None:
        self.rec, self.run_id = recording, run_id
        self.pending: dict[GVK, str] = {}
        self._reached: dict[GVK, str] = {}  # every position of the run, to mark once synced
        self._marked = False
        self.unresumable: set[GVK] = set()

    def reached(self, gvk: GVK, rv: str) -> None:
        self.pending[gvk] = rv

    def listed(self, gvk: GVK, rv: str) -> None:
        """A complete list (or a resumed watch's catch-up) reached ``rv``: the kind may resume from there."""
        self.pending[gvk] = rv
        self.unresumable.discard(gvk)

    def refused(self, gvk: GVK) -> None:
        """The kind cannot be read (refused, not served, given up): the next run lists it."""
        self.unresumable.add(gvk)
        self.rec.unmark_watch_state(gvk)
        self._reached.pop(gvk, None)
        self.pending.pop(gvk, None)

    def store(self, ts: float, *, synced: bool) -> None:
        """Inside the open batch: the positions reached since the last commit (all of them, the first time synced)."""
        if synced and not self._marked:
            self.pending, self._marked = {**self._reached, **self.pending}, True
        for gvk, rv in self.pending.items():
            if not synced:
                self._reached[gvk] = rv
            self.rec.set_watch_state(gvk, rv, ts, run_id=self.run_id if synced and gvk not in self.unresumable else None)
        self.pending.clear()


@dataclass
class Relist:
    """A list under way (``Ingest``'s bookkeeping), or a resumed watch's catch-up standing for one (``resume``)."""

    ts: float
    seen: dict[ObjKey, str] = field(default_factory=dict)  # tracked key -> uid listed
    seen_pods: set[str] = field(default_factory=set)  # pod uids listed
    initial: bool = False
    recovery: bool = False  # the relist ends an outage: what it finds was caught up, not seen live
    broken: int = 0  # items that could not be read: the list is then not trusted for deletions
    resume: bool = False  # a resumed watch: only what it saw deleted is gone, the rest is as the last run left it
    gone: dict[ObjKey, str] = field(default_factory=dict)  # resumed: tracked objects deleted meanwhile -> uid
    gone_pods: set[str] = field(default_factory=set)  # resumed: pods deleted meanwhile

    def missed(self, live: Mapping[ObjKey, LiveObject], pods: Collection[str]) -> tuple[tuple[tuple[ObjKey, str], ...], tuple[str, ...]]:
        """What the complete list missed of the live objects and pods (their keys and uids): gone since."""
        if self.resume:
            return tuple(sorted(self.gone.items())), tuple(sorted(uid for uid in self.gone_pods if uid in pods))
        return tuple((key, live[key].uid) for key in changes.vanished(live, self.seen)), tuple(u for u in pods if u not in self.seen_pods)


CATCH_UP_SECONDS = 1
"""The ``timeoutSeconds`` of a catch-up's streams: a stream that ends after it with nothing in it proves that the
server held nothing more since the version it resumed from (its watch cache sends what it holds at once)."""

QUIET_SECONDS = 0.5
"""Silence between a catch-up stream's last event and its end that proves the server held nothing more: a watch cache
sends the events it holds back to back, and a stream cut short by its timeout while sending ends without a pause."""


def catch_up(*, resource: Resource, namespace: str | None, since: str, list_page: ListPage, watch: OpenWatch,
             sink: Sink, clock: Callable[[], float], stop: threading.Event, reached: Callable[[str], None]) -> tuple[str, float]:
    """Resume the kind's watch at ``since`` and pass on what changed since then, until caught up: the server's
    resourceVersion read first (``listing.horizon``) reached, or a stream of ``CATCH_UP_SECONDS`` that brought nothing.
    Then ``sink.relist_end``, as a list ends (an event past that version, made since, follows it: live); returns the
    version reached and the catch-up's start. ``reached(version)`` hears each version passed on (a catch-up broken by
    the network goes on from there). Raises ``ExpiredError`` when the server no longer holds that history (a 410: the
    kind lists instead)."""
    gvk = resource.gvk
    target = _number(horizon(resource, namespace=namespace, list_page=list_page))
    began = clock()
    sink.resume_begin(gvk, began)
    state = _CatchUp(target=target, version=since)
    while not state.done:
        _stream(watch(resource, namespace=namespace, resource_version=state.version, timeout_seconds=CATCH_UP_SECONDS, stop=stop),
                gvk=gvk, state=state, sink=sink, clock=clock, stop=stop, reached=reached)
    sink.relist_end(gvk, state.version, began)
    if state.live is not None:
        sink.event(gvk, state.live[0], state.live[1], clock())
        state.version = str(state.live[1]["metadata"]["resourceVersion"])
        reached(state.version)
    return state.version, began


@dataclass
class _CatchUp:
    target: int | None  # the server's resourceVersion when the catch-up began
    version: str  # the last version passed on
    done: bool = False
    live: tuple[str, dict[str, Any]] | None = None  # the first event made since the catch-up began: passed on after it


def _stream(stream: Any, *, gvk: GVK, state: _CatchUp, sink: Sink, clock: Callable[[], float], stop: threading.Event,
            reached: Callable[[str], None]) -> None:
    """One catch-up stream, its events passed on; ``state.done`` once caught up (a stream with nothing in it is, and one
    that ended ``QUIET_SECONDS`` after its last event)."""
    state.done = True
    last = clock()
    try:
        for event in stream:
            if stop.is_set():
                raise Stopped
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                raise watch_error(gvk, obj)
            if kind not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
                continue
            rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
            number = _number(rv)
            past = state.target is not None and number is not None and number > state.target
            if kind != "BOOKMARK":
                obj.setdefault("apiVersion", gvk.api_version)
                obj.setdefault("kind", gvk.kind)
                if past:
                    state.live, state.done = (str(kind), obj), True
                    return
                sink.event(gvk, str(kind), obj, clock())
            state.done = past or (state.target is not None and number == state.target)
            if rv:
                state.version = rv
                reached(rv)
            if state.done:
                return
            last = clock()
        if stop.is_set():
            raise Stopped
        state.done = state.done or clock() - last >= QUIET_SECONDS
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()


def _number(version: str | None) -> int | None:
    try:
        return int(version) if version else None
    except ValueError:
        return None  # not a number: caught up only by a stream with nothing in it
