"""``view TRACE``: a SimKube trace file answering the page's questions as a cache does, with ``validate``'s findings.

The trace is read whole (``trace/files/format.read_trace``: a path, ``-`` or an object-store URL) and indexed once: its
events as rows in trace order (an event's applied then deleted objects), each object's rows, its owner (the controller
of its last applied version's ``ownerReferences``), the pod lifecycles its index entry owns, and the findings of
``trace/reports/validation.check_trace`` by object. A trace holds no runs and no gaps, and no window of it can be exported (its
objects are already a trace): the page hides those parts. What is answered has the shapes of ``view/api``'s answers.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Mapping

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.timeparse import format_time
from kubectl_sktrace.trace.files.format import Trace
from kubectl_sktrace.trace.sanitize import object_key
from kubectl_sktrace.trace.reports.validation import RULES, check_trace
from kubectl_sktrace.view.diff import as_yaml, changes
from kubectl_sktrace.view.params import int_param, search_param, time_param
from kubectl_sktrace.view.spans import aligned, bucket_width

PAGE_LIMIT = 200
MAX_TICKS = 150


@dataclass(frozen=True)
class Row:
    id: int
    ts: int
    key: ObjKey
    op: int  # 0 applied, 1 deleted
    body: dict[str, Any]


def _owner(body: dict[str, Any], namespace: str) -> ObjKey | None:
    metadata = body.get("metadata")
    refs = metadata.get("ownerReferences") if isinstance(metadata, dict) else None
    for ref in refs if isinstance(refs, list) else []:
        if isinstance(ref, dict) and ref.get("controller") and ref.get("apiVersion") and ref.get("kind") and ref.get("name"):
            return ObjKey(GVK.from_api_version(str(ref["apiVersion"]), str(ref["kind"])), namespace, str(ref["name"]))
    return None


@dataclass
class TraceIndex:
    """A trace's rows, objects, owners, lifecycles and findings, for the page."""

    name: str
    rows: list[Row] = field(default_factory=list)
    ordered: list[Row] = field(default_factory=list)  # by time
    times: list[int] = field(default_factory=list)
    objects: dict[ObjKey, list[int]] = field(default_factory=dict)
    pods: dict[tuple[str, str], list[tuple[int, int | None]]] = field(default_factory=dict)
    findings: dict[ObjKey | None, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))

    @classmethod
    def of(cls, trace: Trace, *, name: str) -> TraceIndex:
        index = cls(name=name)
        for event in trace.events:
            for op, objs in ((0, event["applied_objs"]), (1, event["deleted_objs"])):
                for obj in objs:
                    key = object_key(obj)
                    if key is None:
                        continue
                    row = Row(len(index.rows), int(event["ts"]), key, op, obj)
                    index.rows.append(row)
                    index.objects.setdefault(key, []).append(row.id)
        index.ordered = sorted(index.rows, key=lambda r: (r.ts, r.id))
        index.times = [r.ts for r in index.ordered]
        for (owner_gvk, ns_name), by_hash in trace.pod_lifecycles.items():
            lives = index.pods.setdefault((owner_gvk, ns_name), [])
            for entries in by_hash.values():
                for entry in entries:
                    lives.append((int(entry["Running"]), None) if "Running" in entry else (int(entry["Finished"][0]), int(entry["Finished"][1])))
        for finding in check_trace(trace):
            index.findings[finding.object].append({"code": finding.code, "rule": RULES.get(finding.code, ""), "message": finding.message,
                                                   "ts": finding.ts})
        return index

    def overview(self) -> dict[str, Any]:
        kinds: dict[str, int] = defaultdict(int)
        for row in self.rows:
            kinds[str(row.key.gvk)] += 1
        first = self.times[0] if self.times else None
        last = self.times[-1] if self.times else None
        loose = [{**f, "object": None} for f in self.findings.get(None, [])]
        found = loose + [{**f, "object": f"{k.gvk}/{k.namespace}/{k.name}"} for k, fs in self.findings.items() if k is not None for f in fs]
        return {
            "title": self.name, "source": "trace", "cache": self.name, "server": None, "context": None,
            "begin": first, "end": None if last is None else last + 1, "firstEvent": first, "lastEvent": last, "spans": [],
            "categories": [], "lanes": [], "kinds": [{"gvk": g, "events": n} for g, n in sorted(kinds.items())],
            "namespaces": sorted({k.namespace for k in self.objects}), "commandBase": [], "findings": found,
        }

    def _range(self, start: int, end: int) -> range:
        return range(bisect.bisect_left(self.times, start), bisect.bisect_left(self.times, end))

    def histogram(self, params: Mapping[str, str]) -> dict[str, Any]:
        start, end = time_param(params, "start"), time_param(params, "end")
        width = bucket_width(start=start, end=end, buckets=min(2000, max(1, int_param(params, "buckets", 200))))
        first, last = aligned(start=start, end=end, width=width)
        buckets: dict[int, dict[str, int]] = {}
        for i in self._range(first, last):
            row = self.ordered[i]
            kinds = buckets.setdefault(first + (row.ts - first) // width * width, {})
            kinds[str(row.key.gvk)] = kinds.get(str(row.key.gvk), 0) + 1
        listed: list[dict[str, Any]] = [{"t": t, "kinds": k, "inferred": 0} for t, k in sorted(buckets.items())]
        return {"start": first, "end": last, "width": width, "buckets": listed, "complete": True, "counted": 1.0,
                "max": max((sum(b["kinds"].values()) for b in listed), default=0)}

    def window(self, params: Mapping[str, str]) -> dict[str, Any]:
        start, end = time_param(params, "start"), time_param(params, "end")
        if end <= start:
            raise UsageError("the window is empty; drag across the axis to pick one")
        counts: dict[str, list[int]] = {}
        for i in self._range(start, end):
            row = self.ordered[i]
            counts.setdefault(str(row.key.gvk), [0, 0])[row.op] += 1
        return {"start": start, "end": end, "from": format_time(start), "to": format_time(end), "events": sum(map(sum, counts.values())),
                "kinds": [{"gvk": g, "applied": a, "deleted": d, "inferred": 0} for g, (a, d) in sorted(counts.items())],
                "gaps": [], "command": None, "fileName": None, "exact": False}

    def _found(self, params: Mapping[str, str]) -> list[ObjKey]:
        gvk, namespace, search = params.get("gvk") or None, params.get("namespace") or None, search_param(params).lower()
        return sorted((k for k in self.objects if (gvk is None or str(k.gvk) == gvk) and (namespace is None or k.namespace == namespace)
                       and search in (f"{k.namespace}/{k.name}" if "/" in search else k.name).lower()),
                      key=lambda k: (str(k.gvk), k.namespace, k.name))

    def objects_total(self, params: Mapping[str, str]) -> dict[str, Any]:
        """How many objects a search finds (the page asks it beside a full page of rows, as of a cache)."""
        return {"total": len(self._found(params))}

    def objects_page(self, params: Mapping[str, str]) -> dict[str, Any]:
        """As a cache's: the objects changed in the range first, the most changes first, then those alive in it, then the
        others, each by kind and name."""
        start, end = time_param(params, "start"), time_param(params, "end")
        changes = {k: sum(1 for i in self.objects[k] if start <= self.rows[i].ts < end) for k in self._found(params)}

        def alive(key: ObjKey) -> bool:
            first, last = self.rows[self.objects[key][0]], self.rows[self.objects[key][-1]]
            return first.ts < end and (last.op != 1 or last.ts >= start)

        keys = sorted(changes, key=lambda k: (-changes[k], not changes[k] and not alive(k)))  # stable: by kind and name among equals
        offset, limit = max(0, int_param(params, "offset", 0)), min(PAGE_LIMIT, max(1, int_param(params, "limit", 50)))
        return {"total": len(keys), "changed": sum(1 for n in changes.values() if n),
                "objects": [self._object(k, start=start, end=end) for k in keys[offset:offset + limit]], "maxTicks": MAX_TICKS}

    def _object(self, key: ObjKey, *, start: int, end: int) -> dict[str, Any]:
        rows = [self.rows[i] for i in self.objects[key]]
        applied = [r for r in rows if r.op == 0]
        owner = _owner(applied[-1].body, key.namespace) if applied else None
        ticks = [r for r in rows if start <= r.ts < end]
        pods = sorted(self.pods.get((str(key.gvk), f"{key.namespace}/{key.name}"), []), key=lambda p: p[0])
        shown = [p for p in pods if p[0] < end and (p[1] is None or p[1] >= start)]
        return {
            "gvk": str(key.gvk), "kind": key.gvk.kind, "namespace": key.namespace, "name": key.name, "id": f"{key.gvk}/{key.namespace}/{key.name}",
            "first": rows[0].ts, "last": rows[-1].ts, "deleted": rows[-1].op == 1,
            "owner": None if owner is None else f"{owner.gvk}/{owner.namespace}/{owner.name}",
            "ownerName": None if owner is None else f"{owner.gvk.kind}/{owner.name}",
            "ticks": [{"id": r.id, "ts": r.ts, "op": r.op, "inferred": False, "n": 1} for r in ticks[:MAX_TICKS]], "ticksTotal": len(ticks),
            "pods": [{"name": f"pod {n + 1}", "start": s, "end": e, "live": e is None} for n, (s, e) in enumerate(shown[:60])],
            "podsTotal": len(shown), "findings": self.findings.get(key, []),
        }

    def version(self, params: Mapping[str, str]) -> dict[str, Any]:
        row_id = int_param(params, "id")
        if not 0 <= row_id < len(self.rows):
            raise UsageError(f"no recorded change has the id {row_id}")
        row = self.rows[row_id]
        before = [self.rows[i] for i in self.objects[row.key] if i < row_id and self.rows[i].op == 0]
        previous = before[-1] if before else None
        title = f"{row.key.gvk.kind}/{row.key.name}"
        diff, status_diff = changes(None if previous is None else previous.body, row.body if row.op == 0 else None,
                                    before_name=f"{title} at {format_time(previous.ts)}" if previous else "(nothing before)",
                                    after_name=f"{title} at {format_time(row.ts)}" if row.op == 0 else "(deleted)")
        return {
            "id": row.id, "ts": row.ts, "at": format_time(row.ts), "recv": row.ts, "gvk": str(row.key.gvk), "namespace": row.key.namespace,
            "name": row.key.name, "uid": _uid(row.body), "op": "applied" if row.op == 0 else "deleted",
            "inferred": False, "yaml": as_yaml(row.body), "previousId": None if previous is None else previous.id,
            "diff": diff, "statusDiff": status_diff,
        }


def _uid(body: dict[str, Any]) -> str:
    metadata = body.get("metadata")
    uid = metadata.get("uid") if isinstance(metadata, dict) else None
    return uid if isinstance(uid, str) else ""


def trace_api(index: TraceIndex) -> dict[str, Any]:
    """The endpoints over a trace (no report and no download: a trace is already one)."""
    return {"/api/overview": lambda _: index.overview(), "/api/histogram": index.histogram, "/api/window": index.window,
            "/api/objects": index.objects_page, "/api/objects-total": index.objects_total, "/api/version": index.version,
            "/api/status-change": _no_status}


def _no_status(params: Mapping[str, str]) -> dict[str, Any]:
    """A trace carries no status (SimKube's tracer strips it): no mark of one is drawn, none is asked."""
    raise UsageError(f"no recorded status change has the id {params.get('id')}: a trace holds no status, a cache does")
