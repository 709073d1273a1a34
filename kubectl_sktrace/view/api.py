"""The page's questions about a cache, answered as JSON-ready data: each one aggregated or paged here, never the history.

- ``overview``: the cache, its span, every run, offline stretch and blind stretch (``spans``), its kinds and namespaces;
- ``histogram``: the rate of changes per kind in buckets of a nice width over the range shown;
- ``window``: what a window holds per kind (from the counts the cache keeps), what of it the filters keep
  (``figures``: bounded, cancelled by the page's next window), its blind stretches, and the export command;
- ``report``: what the export of the window holds, written by export's own code: only when asked, one at a time,
  below ``REPORT_LIMIT`` events;
- ``decisions``: what ``export --dry-run`` says each rule decides of the window: only when asked, one at a time;
- ``objects``: a page of objects of a kind and namespace, with their changes and pods in the range shown;
- ``objects_total``: how many objects a search finds (asked beside its rows);
- ``version``: one recorded version of an object and its diff from the previous one;
- ``status_change``: one status change (a mark on a pod, a step of a workload's band) and what it changed.

Each reads inside one snapshot of the cache (``history.read_snapshot``), so its figures agree with one another.
"""

from __future__ import annotations

import io
import threading
from typing import Any, Mapping

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.export.window import audit_fills
from kubectl_sktrace.store import Cache, history, statuses, viewing
from kubectl_sktrace.timeparse import format_time
from kubectl_sktrace.trace.statuses import describe, summary
from kubectl_sktrace.view import exports, figures, rates
from kubectl_sktrace.view.diff import as_yaml, changes
from kubectl_sktrace.view.params import int_param, search_param, time_param
from kubectl_sktrace.view.spans import CATEGORIES, LANES, Span, aligned, bucket_width, overlapping, timeline_spans

MAX_BUCKETS = 2000
REPORT_LIMIT = 10_000
"""Events in a window above which the export's report waits for the download: export writes them all to count them,
in memory (~20 KB an event: 80,000 events took 1.5 GB)."""
PAGE_LIMIT = 200
TICK_PX = 2
"""A change's tick is 2 px wide on the page: a row's changes are answered per column of that width."""


def _spans(cache: Cache) -> list[Span]:
    unrecorded = history.unrecorded_kinds(cache) + history.unserved_spans(cache)
    return timeline_spans(runs=history.runs(cache), gaps=history.coverage_gaps(cache), unrecorded=unrecorded,
                          running=cache.writer_active(), fills=audit_fills(cache))


def overview(cache: Cache, *, title: str, command_base: tuple[str, ...]) -> dict[str, Any]:
    with history.read_snapshot(cache):
        spans = _spans(cache)
        first, last = viewing.first_and_last(cache)
        kinds = viewing.kinds_and_namespaces(cache)
    runs = [s for s in spans if s.category == "run"]
    begin = min([s.since for s in runs] + ([first] if first is not None else []), default=None)
    end = max([s.until for s in runs] + ([last + 1] if last is not None else []), default=None)
    per_kind: dict[str, int] = {}
    for gvk, _, n in kinds:
        per_kind[gvk] = per_kind.get(gvk, 0) + n
    return {
        "title": title, "cache": str(cache.path), "server": cache.get_meta("cluster.server"), "context": cache.get_meta("cluster.context"),
        "begin": begin, "end": end, "firstEvent": first, "lastEvent": last, "spans": [s.to_dict() for s in spans],
        "categories": list(CATEGORIES), "lanes": sorted(set(LANES.values()), key=list(LANES.values()).index),
        "kinds": [{"gvk": g, "events": n} for g, n in sorted(per_kind.items())],
        "namespaces": sorted({ns for _, ns, _ in kinds}), "commandBase": list(command_base),
        "recording": any(s.state == "running" for s in spans),
    }


def histogram(cache: Cache, params: Mapping[str, str], *, index: rates.RateIndex | None = None) -> dict[str, Any]:
    start, end = time_param(params, "start"), time_param(params, "end")
    if end <= start:
        raise UsageError("the range is empty")
    width = bucket_width(start=start, end=end, buckets=min(MAX_BUCKETS, max(1, int_param(params, "buckets", 200))))
    first, last = aligned(start=start, end=end, width=width)
    with history.read_snapshot(cache):
        rows, complete = rates.bucket_rows(index, cache, start=first, end=last, width=width)
    counts = viewing.per_bucket(rows)
    buckets: list[dict[str, Any]] = [{"t": first + b * width, "kinds": {c.gvk: c.applied + c.deleted for c in kinds},
                                      "inferred": sum(c.inferred for c in kinds)} for b, kinds in sorted(counts.items())]
    return {"start": first, "end": last, "width": width, "buckets": buckets, "complete": complete,
            "counted": 1.0 if complete or index is None else round(index.progress, 3),
            "max": max((sum(b["kinds"].values()) for b in buckets), default=0)}


def _window_counts(cache: Cache, request: exports.WindowRequest, index: rates.RateIndex | None) -> list[viewing.KindCount]:
    return viewing.per_bucket(rates.window_rows(index, cache, start=request.start, end=request.end)).get(0, [])


def window(cache: Cache, params: Mapping[str, str], *, command_base: tuple[str, ...], index: rates.RateIndex | None = None,
           windows: figures.Windows | None = None) -> dict[str, Any]:
    request = exports.window_request(params)
    superseded = (windows or figures.Windows()).ask(params.get("tab", ""), int_param(params, "seq", 0))
    with history.read_snapshot(cache):
        counts = _window_counts(cache, request, index)
        spans = overlapping(_spans(cache), start=request.start, end=request.end)
        total = sum(c.applied + c.deleted for c in counts)
        try:
            kept = figures.kept(cache, request, total=total, asked=params.get("pass") == "1", superseded=superseded)
        except figures.Superseded:
            return {"superseded": True}
    return {
        "start": request.start, "end": request.end, "from": format_time(request.start), "to": format_time(request.end),
        "events": total, "kinds": [{"gvk": c.gvk, "applied": c.applied, "deleted": c.deleted, "inferred": c.inferred} for c in counts],
        "gaps": [s.to_dict() for s in spans if s.category != "run" and s.until > s.since],
        "command": exports.export_command(request, base=command_base), "fileName": request.file_name,
        "exact": total <= REPORT_LIMIT, **figures.as_answer(kept),
    }


_REPORTING = threading.Lock()


def report(cache: Cache, params: Mapping[str, str], *, index: rates.RateIndex | None = None) -> dict[str, Any]:
    """What the export of the window holds: export's own report of the trace it writes (as sktrace, to count it)."""
    request = exports.window_request(params)
    with history.read_snapshot(cache):
        total = sum(c.applied + c.deleted for c in _window_counts(cache, request, index))
    if total > REPORT_LIMIT:
        return {"tooLarge": True, "events": total, "limit": REPORT_LIMIT}
    if not _REPORTING.acquire(blocking=False):
        raise UsageError("the view is already counting what an export holds; ask again when it is done")
    try:
        buffer = io.BytesIO()
        counted = exports.write_window(cache, exports.WindowRequest(**{**request.__dict__, "fmt": "sktrace"}), buffer)
        return exports.report_of(counted, buffer.getvalue())
    finally:
        _REPORTING.release()


def decisions(cache: Cache, params: Mapping[str, str]) -> dict[str, Any]:
    """Each rule in force and the objects it decides in the window, as ``export --dry-run`` prints them."""
    request = exports.window_request(params)
    if not _REPORTING.acquire(blocking=False):
        raise UsageError("the view is already counting what an export holds; ask again when it is done")
    try:
        return exports.decisions(cache, request)
    finally:
        _REPORTING.release()


def objects(cache: Cache, params: Mapping[str, str]) -> dict[str, Any]:
    """A page of objects, those changed in the range first (most changes first: ``changed`` of them; null when the range
    holds too many changes to rank, and every object is by kind and name); a row's changes answered one per column at
    most: ``MAX_TICKS`` columns, or fewer when the plot's ``width`` holds fewer ticks of ``TICK_PX`` (what the page can
    draw apart): bounded by pixels, not changes.
    With ``total=0``, a full page comes without its total (null): the page asks ``objects_total`` beside it."""
    start, end = time_param(params, "start"), time_param(params, "end")
    limit = min(PAGE_LIMIT, max(1, int_param(params, "limit", 50)))
    width = int_param(params, "width", 0)
    columns = min(viewing.MAX_TICKS, max(1, width // TICK_PX)) if width > 0 else viewing.MAX_TICKS
    with history.read_snapshot(cache):
        page = viewing.active_page(cache, gvk=params.get("gvk") or None, namespace=params.get("namespace") or None,
                                   search=search_param(params), start=start, end=end, offset=max(0, int_param(params, "offset", 0)),
                                   limit=limit, columns=columns, count=params.get("total") != "0")
        rows = [_with_status(cache, _object(r), r, start=start, end=end) for r in page.rows]
    return {"total": page.total, "changed": page.changed, "objects": rows, "maxTicks": columns}


def _with_status(cache: Cache, drawn: dict[str, Any], row: viewing.ObjectRow, *, start: int, end: int) -> dict[str, Any]:
    """An object's row with what a person reads of its status (``store/statuses``): a workload's ``band`` of ready
    against desired replicas, ``[ts, ready, desired]`` from the range's start, and on each pod its ``marks`` (restarts,
    crash loops, OOM kills, failed pulls: ``{id, ts, marks}``, the id a status change's, for ``status_change``)."""
    drawn["band"] = [list(point) for point in statuses.band(cache, row.key, start=start, end=end)]
    marked = statuses.pod_marks(cache, row.key.namespace, [(life.name, life.uid) for life in row.pods], start=start, end=end)
    for pod, life in zip(drawn["pods"], row.pods):
        pod["marks"] = [{"id": i, "ts": ts, "marks": marks} for i, ts, marks in marked.get((life.name, life.uid), [])]
    return drawn


def status_change(cache: Cache, params: Mapping[str, str]) -> dict[str, Any]:
    """One status change, as the page shows it when a mark is clicked: what changed, and the state it left."""
    with history.read_snapshot(cache):
        found = statuses.change(cache, int_param(params, "id"))
        audit = found is not None and statuses.from_audit_log(cache, found[0].id)
    if found is None:
        raise UsageError(f"no recorded status change has the id {params.get('id')}")
    row, before = found
    return {"id": row.id, "ts": row.ts, "at": format_time(row.ts), "gvk": str(row.key.gvk), "namespace": row.key.namespace,
            "name": row.key.name, "uid": row.uid, "inferred": row.inferred, "audit": audit, "state": summary(row.reduced),
            "change": describe(None if before is None else before.reduced, row.reduced), "yaml": as_yaml(row.reduced)}


def objects_total(cache: Cache, params: Mapping[str, str]) -> dict[str, Any]:
    """How many objects a search finds, of every time: asked beside a full page of its rows, counted while they are read."""
    with history.read_snapshot(cache):
        total = viewing.object_total(cache, gvk=params.get("gvk") or None, namespace=params.get("namespace") or None,
                                     search=search_param(params))
    return {"total": total}


def _object(row: viewing.ObjectRow) -> dict[str, Any]:
    owner = row.owner
    return {
        "gvk": str(row.key.gvk), "kind": row.key.gvk.kind, "namespace": row.key.namespace, "name": row.key.name,
        "id": f"{row.key.gvk}/{row.key.namespace}/{row.key.name}", "first": row.first_ts, "last": row.last_ts, "deleted": row.deleted,
        "owner": None if owner is None else f"{owner.gvk}/{owner.namespace}/{owner.name}",
        "ownerName": None if owner is None else f"{owner.gvk.kind}/{owner.name}",
        "ticks": [{"id": t.id, "ts": t.ts, "op": t.op, "inferred": t.inferred, "n": t.n} for t in row.ticks], "ticksTotal": row.ticks_total,
        "pods": [{"name": p.name, "start": p.start, "end": p.end, "live": p.live} for p in row.pods], "podsTotal": row.pods_total,
    }


OP_WORDS = {0: "applied", 1: "deleted", 3: "metadata changed", 4: "data changed"}
"""What a row did, as the page says it (``store/versions``: a metadata change is drawn apart from a spec change)."""


def version(cache: Cache, params: Mapping[str, str]) -> dict[str, Any]:
    with history.read_snapshot(cache):
        found = viewing.version(cache, int_param(params, "id"))
    if found is None:
        raise UsageError(f"no recorded change has the id {params.get('id')}")
    title = f"{found.key.gvk.kind}/{found.key.name}"
    before = f"{title} at {format_time(found.previous_ts)}" if found.previous_ts is not None else "(nothing before)"
    after = f"{title} at {format_time(found.ts)}" if found.body is not None else "(deleted)"
    diff, status_diff = changes(found.previous_body, found.body, before_name=before, after_name=after)
    return {
        "id": found.id, "ts": found.ts, "at": format_time(found.ts), "recv": found.recv, "gvk": str(found.key.gvk),
        "namespace": found.key.namespace, "name": found.key.name, "uid": found.uid, "op": OP_WORDS.get(found.op, "applied"),
        "inferred": found.inferred, "yaml": as_yaml(found.body), "previousId": found.previous_id,
        "diff": diff, "statusDiff": status_diff,
    }
