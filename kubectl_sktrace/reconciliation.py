"""What a restart found changed while no recorder ran: the reconciliation report. Pure: no I/O.

A run's initial lists are compared with the cache (docs/spec.md §5): what the cache held live and the cluster no
longer has was deleted while offline; what the cluster has and the cache never recorded under that uid was
created while offline; what it recorded with another spec was changed while offline; pods whose lifecycle
ended in the gap finished while offline. ``store.reconciliation`` reads those rows from the cache (the
inferred rows the run's initial sync wrote), and ``summarize`` groups them per kind and keeps the first
``LIMIT`` of each group, counting the rest, so a report stays readable and its memory bounded however much
changed. ``reconciliation_to_dict`` gives it as plain data (JSON/YAML); ``render`` has its text.

Where it guesses: the real time of an offline deletion lies between the last sight (the previous run's end,
or the start of an outage still open then) and the relist that found it gone; an object created offline has
its creation time only when the API gave a ``creationTimestamp`` inside the gap; a pod that vanished has an
inferred end (the restart), earlier in truth. Times are whole seconds where the cache keeps seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Iterable, TypeVar

from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.timeparse import format_duration, format_time

LIMIT = 10
"""Objects (or pods) named per kind and kind of change; the others are counted as "+N more"."""

DELETED, CREATED, CHANGED = "deleted", "created", "changed"
CHANGE_KINDS = (DELETED, CREATED, CHANGED)
CHANGES_OF_A_VERSION = ("spec", "metadata", "data")
"""What a changed object's new version changed, counted apart: ``trace/revisions``' words (SPEC, METADATA, DATA)."""

T = TypeVar("T")


@dataclass(frozen=True)
class OfflineChange:
    """One object the relist found changed. ``found``: when (the row's receive time). ``before``: deleted, the
    last sight (previous run's end or an outage's start); changed, the second of the last version recorded
    before; created, None. ``created``: the creation second when it lies in the gap, else None. ``detail``: of a
    change, what changed in words (``spec changed``, ``labels changed: release=2026-11``), '' when not said, and
    ``change`` which kind of change it is (``revisions.SPEC``, ``METADATA``, ``DATA``)."""

    key: ObjKey
    found: float
    before: float | None = None
    created: int | None = None
    detail: str = ""
    change: str = ""  # of a change: what the new version changed (``revisions``: spec, metadata or data)


@dataclass(frozen=True)
class OfflinePod:
    """A pod whose lifecycle ended in the gap; ``end_inferred`` when it vanished and its end is the restart."""

    namespace: str
    name: str
    owner: ObjKey | None
    start_ts: int | None
    end_ts: int
    end_inferred: bool


@dataclass(frozen=True)
class Sample(Generic[T]):
    """The first items of a group and how many there were in all."""

    items: tuple[T, ...]
    count: int

    @property
    def more(self) -> int:
        return self.count - len(self.items)


@dataclass(frozen=True)
class KindReconciliation:
    gvk: GVK
    deleted: Sample[OfflineChange]
    created: Sample[OfflineChange]
    changed: Sample[OfflineChange]
    changed_by: tuple[tuple[str, int], ...] = ()  # the changes counted per kind of change (spec, metadata, data)


@dataclass(frozen=True)
class Reconciliation:
    """The report of one run. ``offline_since`` is the previous run's end (None: the first run on this cache,
    nothing to reconcile), ``offline_until`` this run's start; ``synced`` None while its initial lists have
    not all completed (nothing is reported yet)."""

    run_id: int
    offline_since: float | None
    offline_until: float
    synced: float | None
    kinds: tuple[KindReconciliation, ...] = ()
    pods: Sample[OfflinePod] = Sample((), 0)
    workloads: tuple[tuple[str, str], ...] = ()  # (object, state) of each workload as its lists found it: "2 of 3 ready"

    @property
    def empty(self) -> bool:
        return not self.kinds and not self.pods.count


class _Group(Generic[T]):
    __slots__ = ("items", "count", "limit")

    def __init__(self, limit: int) -> None:
        self.items: list[T] = []
        self.count = 0
        self.limit = limit

    def add(self, item: T) -> None:
        self.count += 1
        if len(self.items) < self.limit:
            self.items.append(item)

    def sample(self) -> Sample[T]:
        return Sample(tuple(self.items), self.count)


def summarize(
    *, run_id: int, offline_since: float | None, offline_until: float, synced: float | None,
    changes: Iterable[tuple[str, OfflineChange]], pods: Iterable[OfflinePod], limit: int = LIMIT,
) -> Reconciliation:
    """Group ``changes`` (``(DELETED|CREATED|CHANGED, change)``, in the order to show them) per kind, keeping
    the first ``limit`` of each group and of ``pods``. Kinds come out sorted by their GVK text."""
    groups: dict[GVK, dict[str, _Group[OfflineChange]]] = {}
    by_change: dict[GVK, dict[str, int]] = {}
    for what, change in changes:
        per_kind = groups.get(change.key.gvk)
        if per_kind is None:
            per_kind = groups[change.key.gvk] = {k: _Group[OfflineChange](limit) for k in CHANGE_KINDS}
            by_change[change.key.gvk] = dict.fromkeys(CHANGES_OF_A_VERSION, 0)
        per_kind[what].add(change)
        if what == CHANGED and change.change in CHANGES_OF_A_VERSION:
            by_change[change.key.gvk][change.change] += 1
    pod_group = _Group[OfflinePod](limit)
    for pod in pods:
        pod_group.add(pod)
    kinds = tuple(
        KindReconciliation(gvk, g[DELETED].sample(), g[CREATED].sample(), g[CHANGED].sample(),
                           tuple((c, n) for c, n in by_change[gvk].items() if n))
        for gvk, g in sorted(groups.items(), key=lambda kv: str(kv[0]))
    )
    return Reconciliation(run_id=run_id, offline_since=offline_since, offline_until=offline_until, synced=synced,
                          kinds=kinds, pods=pod_group.sample())


# --- as plain data (JSON/YAML output) -------------------------------------------------------------------------


def _objects(sample: Sample[OfflineChange], what: str) -> list[dict[str, Any]]:
    rows = []
    for c in sample.items:
        row: dict[str, Any] = {"namespace": c.key.namespace or None, "name": c.key.name}
        if what == "deleted":
            row.update(lastSeen=format_time(c.before) if c.before is not None else None, foundGone=format_time(c.found))
        elif what == "created":
            row.update(created=format_time(c.created) if c.created is not None else None, found=format_time(c.found))
        else:
            row.update(lastRecorded=format_time(c.before) if c.before is not None else None, found=format_time(c.found),
                       what=c.detail or None)
        rows.append(row)
    return rows


def _pod_row(pod: OfflinePod) -> dict[str, Any]:
    return {"namespace": pod.namespace, "name": pod.name, "owner": str(pod.owner) if pod.owner else None,
            "started": format_time(pod.start_ts) if pod.start_ts is not None else None, "ended": format_time(pod.end_ts),
            "endInferred": pod.end_inferred}


def reconciliation_to_dict(report: Reconciliation) -> dict[str, Any]:
    """The report as plain data: per kind and change the count, the first objects and how many more."""
    offline = None
    if report.offline_since is not None:
        offline = {"from": format_time(report.offline_since), "to": format_time(report.offline_until),
                   "duration": format_duration(report.offline_until - report.offline_since)}
    return {
        "run": report.run_id,
        "offline": offline,
        "synced": report.synced is not None,
        "kinds": [
            {"kind": str(k.gvk), **{
                f"{what}WhileOffline": {"count": sample.count, "objects": _objects(sample, what), "more": sample.more}
                for what, sample in (("deleted", k.deleted), ("created", k.created), ("changed", k.changed))
            }, "changedWhileOfflineBy": dict(k.changed_by)}
            for k in report.kinds
        ],
        "podsFinishedWhileOffline": {"count": report.pods.count, "pods": [_pod_row(p) for p in report.pods.items],
                                     "more": report.pods.more},
        "workloadsFound": [{"object": name, "state": state} for name, state in report.workloads],
    }


WORKLOADS_SHOWN = 12


def workload_lines(title: str, workloads: tuple[tuple[str, str], ...]) -> list[str]:
    """``title`` then a workload a line, ``  Deployment shop/web: 2 of 3 ready`` (the first ``WORKLOADS_SHOWN``); none: []."""
    if not workloads:
        return []
    more = len(workloads) - WORKLOADS_SHOWN
    return [title, *(f"  {name}: {state}" for name, state in workloads[:WORKLOADS_SHOWN])] + ([f"  +{more} more"] if more > 0 else [])


def _found(report: Reconciliation) -> list[str]:
    return workload_lines("Workloads as this run's lists found them:", report.workloads)


def _clock(ts: float, day: str) -> str:
    """``10:45:00`` on the day ``day`` (``YYYY-MM-DD``), else the whole RFC 3339 time."""
    text = format_time(ts)
    return text[11:19] if text[:10] == day else text


def _span(since: float, until: float) -> str:
    """``2026-11-23T10:02:11Z → 11:30:05 (1h27m54s)``."""
    return f"{format_time(since)} → {_clock(until, format_time(since)[:10])} ({format_duration(until - since)})"


def _headline(report: Reconciliation) -> str | None:
    """The one line said when there is no list to show, else None."""
    if report.offline_since is None:
        return "First recording into this cache: no offline time to reconcile."
    if report.synced is None:
        return f"Run {report.run_id} has not finished its initial lists: nothing reconciled yet."
    if report.empty:
        return (f"Offline {_span(report.offline_since, report.offline_until)}: nothing was deleted, created or "
                "changed, and no pod finished.")
    return None


def _block(title: str, names: list[str], details: list[str], more: int) -> list[str]:
    width = max(len(n) for n in names)
    lines = [f"  {title}:"] + [f"    {n.ljust(width)}  {d}".rstrip() for n, d in zip(names, details)]
    if more:
        lines.append(f"    +{more} more")
    return lines


def reconciliation_lines(report: Reconciliation) -> list[str]:
    """The report for people: the offline gap, then per kind what was deleted, created and changed while offline
    (the first objects named, with their times), then the pods that finished meanwhile."""
    headline = _headline(report)
    if headline is not None:
        return [headline, *_found(report)]
    assert report.offline_since is not None
    day = format_time(report.offline_since)[:10]
    lines = [f"Offline {_span(report.offline_since, report.offline_until)}; found by this run's initial lists:"]
    for kind in report.kinds:
        for what, sample in (("deleted", kind.deleted), ("created", kind.created), ("changed", kind.changed)):
            if not sample.count:
                continue
            details = []
            for c in sample.items:
                if what == "deleted":
                    seen = "-" if c.before is None else _clock(c.before, day)
                    details.append(f"last seen {seen} → found gone {_clock(c.found, day)}")
                elif what == "created":
                    details.append(f"created {_clock(c.created, day)}" if c.created is not None else f"found {_clock(c.found, day)}")
                else:
                    last = "-" if c.before is None else _clock(c.before, day)
                    details.append(f"last recorded {last} → found changed {_clock(c.found, day)}  {c.detail}")
            lines += _block(f"{kind.gvk} {what} while offline ({sample.count})", [c.key.ns_name for c in sample.items],
                            details, sample.more)
    if report.pods.count:
        pods = report.pods
        details = [
            f"ended {_clock(p.end_ts, day)}{' (vanished: ended earlier)' if p.end_inferred else ''}"
            + (f"  owner {p.owner}" if p.owner else "")
            for p in pods.items
        ]
        lines += _block(f"pods finished while offline ({pods.count})", [f"{p.namespace}/{p.name}" for p in pods.items],
                        details, pods.more)
    return lines + _found(report)


def reconciliation_brief(report: Reconciliation) -> list[str]:
    """A short block (``status``): the gap and the counts per kind, no names."""
    headline = _headline(report)
    if headline is not None:
        return [headline, *_found(report)]
    assert report.offline_since is not None
    lines = [f"Offline {_span(report.offline_since, report.offline_until)}, reconciled by run {report.run_id}:"]
    for kind in report.kinds:
        counts = [f"{s.count} {what}" for what, s in (("deleted", kind.deleted), ("created", kind.created), ("changed", kind.changed))
                  if s.count]
        if kind.changed_by:
            counts[-1] += f" ({', '.join(f'{n} {change}' for change, n in kind.changed_by)})"
        lines.append(f"  {kind.gvk}: {', '.join(counts)} while offline")
    if report.pods.count:
        lines.append(f"  pods: {report.pods.count} finished while offline")
    return lines + _found(report)
