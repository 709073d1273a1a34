"""What the server answers from: the objects of every served kind as they were at the history's time, in memory, and
the changes replayed since (a watch's log), under one condition that wakes the watches.

The state at T is read once, at the start, through the history's one reading of "the state at T" (``past``); the
changes after T come from the replay (``replay``), applied here in recorded order, each taking the next
resourceVersion. A request never reads the cache: a recorder writing the cache beside the server is never waited for,
nor does it wait. Lists page from one snapshot (``limit`` and ``continue``, as a real server), the oldest snapshot
forgotten past ``SNAPSHOTS``; the log keeps the last ``LOG_LIMIT`` changes, and a watch from a version older than that
gets the server's 410.
"""

from __future__ import annotations

import base64
import bisect
import json
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Iterable

from kubectl_sktrace.past.kinds import Kind
from kubectl_sktrace.past.state import PodLife
from kubectl_sktrace.model import GVK
from sktrace_apiserver.selectors import Requirement
from sktrace_apiserver.status import ApiError

Obj = dict[str, Any]
LOG_LIMIT = 100_000
SNAPSHOTS = 32


class Item:
    """One object as served: its JSON bytes, made once, and what selectors read."""

    __slots__ = ("namespace", "name", "uid", "raw", "labels", "fields", "pod", "status", "_prefix")

    def __init__(self, obj: Obj, *, pod: PodLife | None = None, status: Obj | None = None, second: int = 0) -> None:
        meta = obj.get("metadata") or {}
        self.namespace: str = str(meta.get("namespace") or "")
        self.name: str = str(meta.get("name") or "")
        self.uid: str = str(meta.get("uid") or "")
        self.pod = pod  # a pod's recorded lifecycle: its STATUS column where its status is not known
        self.status = status  # its reduced status (``trace/statuses``): the Table's columns; None where not known
        head = {"apiVersion": obj.get("apiVersion", ""), "kind": obj.get("kind", "")}
        self._prefix = len(json.dumps(head, separators=(",", ":"), ensure_ascii=False).encode()) - 1  # '{"apiVersion":..,"kind":..'
        self.raw = json.dumps({**head, **obj}, separators=(",", ":"), ensure_ascii=False).encode()
        self.labels: dict[str, str] = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        self.fields = {"metadata.name": self.name, "metadata.namespace": self.namespace,
                       "spec.nodeName": str(spec.get("nodeName") or "") if isinstance(spec, dict) else "",
                       "status.phase": str(status.get("phase") or "") if isinstance(status, dict) and status.get("phase") else
                       pod.phase_at(second) if pod is not None else ""}

    def obj(self) -> Obj:
        result: Obj = json.loads(self.raw)
        return result

    def item_raw(self) -> bytes:
        """The object as a list's item: without ``apiVersion`` and ``kind``, as a real server lists it."""
        return b"{" + self.raw[self._prefix + 1:] if len(self.raw) > self._prefix + 2 else self.raw


@dataclass(frozen=True)
class Filter:
    """What a list or watch asks for: a namespace (or all) and selectors."""

    namespace: str | None = None
    labels: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()

    def matches(self, item: Item) -> bool:
        if self.namespace is not None and item.namespace != self.namespace:
            return False
        return all(r.matches(item.labels) for r in self.labels) and all(r.matches(item.fields) for r in self.fields)


@dataclass(frozen=True)
class Event:
    rv: int
    gvk: GVK
    type: str
    item: Item


class Served:
    """The objects at the history's time ``now``, the log of the changes replayed, and the condition watches wait on."""

    def __init__(self, kinds: list[Kind], *, at: float) -> None:
        self.kinds = kinds
        self.changed = threading.Condition()
        self.objects: dict[GVK, dict[tuple[str, str], Item]] = {k.gvk: {} for k in kinds}
        self.log: list[Event] = []
        self.offset = 0  # changes trimmed from the log's front
        self.rv = 1
        self.now = at
        self.stopped = False
        self.watched = threading.Event()  # set by the first watch: a replay's clock starts then
        self._snapshots: OrderedDict[int, tuple[int, list[Item]]] = OrderedDict()
        self._next_snapshot = 0

    def load(self, objects: Iterable[tuple[GVK, Obj, PodLife | None, Obj | None]]) -> int:
        """The state at T (each object with its pod's lifecycle and its reduced status, if known); the number of objects."""
        count = 0
        for gvk, obj, pod, status in objects:
            kind = self.objects.get(gvk)
            if kind is not None:
                item = Item(obj, pod=pod, status=status, second=math.floor(self.now))
                kind[(item.namespace, item.name)] = item
                count += 1
        return count

    def apply(self, *, gvk: GVK, namespace: str, name: str, obj: Obj | None, ts: float, pod: PodLife | None = None,
              status: Obj | None = None) -> None:
        """One recorded change (``obj`` None: the object was deleted), at the history's time ``ts``; a pod's lifecycle
        (None: the one it had, if the same pod); its reduced status then (None: not known)."""
        with self.changed:
            self.now = max(self.now, ts)
            kind = self.objects.get(gvk)
            if kind is None:
                return
            before = kind.get((namespace, name))
            if obj is None:
                if before is None:
                    return
                del kind[(namespace, name)]
                self._log(gvk, "DELETED", before)
            else:
                same = before is not None and before.uid == str((obj.get("metadata") or {}).get("uid") or "")
                item = Item(obj, pod=pod or (before.pod if same and before is not None else None), status=status, second=math.floor(ts))
                kind[(namespace, name)] = item
                self._log(gvk, "ADDED" if before is None else "MODIFIED", item)
            self.changed.notify_all()

    def advance(self, ts: float) -> None:
        """The history's time moved on to ``ts`` with no change (a replay's quiet second)."""
        with self.changed:
            self.now = max(self.now, ts)

    def _log(self, gvk: GVK, event_type: str, item: Item) -> None:
        self.rv += 1
        self.log.append(Event(self.rv, gvk, event_type, item))
        if len(self.log) > LOG_LIMIT + LOG_LIMIT // 4:
            drop = len(self.log) - LOG_LIMIT
            del self.log[:drop]
            self.offset += drop

    def stop(self) -> None:
        with self.changed:
            self.stopped = True
            self.changed.notify_all()

    # reads

    def get(self, gvk: GVK, namespace: str, name: str) -> tuple[Item | None, float]:
        with self.changed:
            return self.objects[gvk].get((namespace, name)), self.now

    def list_page(self, gvk: GVK, flt: Filter, *, limit: int, token: str) -> tuple[int, list[Item], str, int, float]:
        """``(rv, items, continue, remaining, now)``: one page of the matching objects, every page of a list from the
        snapshot its first page took."""
        with self.changed:
            if token:
                number, snapshot, start = self._snapshot(token)
            else:
                items = sorted((i for i in self.objects[gvk].values() if flt.matches(i)), key=lambda i: (i.namespace, i.name))
                number, snapshot, start = 0, (self.rv, items), 0
                if limit and len(items) > limit:
                    self._next_snapshot += 1
                    number = self._next_snapshot
                    self._snapshots[number] = snapshot
                    while len(self._snapshots) > SNAPSHOTS:
                        self._snapshots.popitem(last=False)
            now = self.now
        rv, items = snapshot
        end = start + limit if limit else len(items)
        cont = base64.urlsafe_b64encode(json.dumps([number, end]).encode()).decode() if end < len(items) else ""
        return rv, items[start:end], cont, max(0, len(items) - end), now

    def _snapshot(self, token: str) -> tuple[int, tuple[int, list[Item]], int]:
        try:
            number, start = json.loads(base64.urlsafe_b64decode(token.encode()))
            return int(number), self._snapshots[int(number)], max(0, int(start))
        except (ValueError, TypeError, KeyError):
            raise ApiError(410, "Expired", "The provided continue parameter is too old to display a consistent list result. "
                                           "You can start a new list without the continue parameter.") from None

    def watch_start(self, gvk: GVK, flt: Filter, rv: str) -> tuple[list[Item], int]:
        """The objects a watch starts with (all matching, for no version or ``0``) and its absolute position in the log."""
        with self.changed:
            if rv in ("", "0"):
                return [i for i in self.objects[gvk].values() if flt.matches(i)], self.offset + len(self.log)
            try:
                version = int(rv)
            except ValueError:
                raise ApiError(400, "BadRequest", f"invalid resourceVersion {rv!r}") from None
            if self.log and version < self.log[0].rv - 1:
                raise ApiError(410, "Expired", f"too old resource version: {version} ({self.rv})")
            return [], self.offset + bisect.bisect_right(self.log, version, key=lambda e: e.rv)

    def since(self, position: int, *, wait: float) -> tuple[list[Event] | None, float]:
        """The changes from ``position`` on (waiting up to ``wait`` seconds for one), None when trimmed; and ``now``."""
        with self.changed:
            if position - self.offset >= len(self.log) and not self.stopped:
                self.changed.wait(wait)
            if position < self.offset:
                return None, self.now
            return self.log[position - self.offset:], self.now
