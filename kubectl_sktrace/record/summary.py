"""What ``start`` reports when a run ends: the summary per kind, the outages, the kinds not served, the warnings and
the reconciliation, as rows and lines for the table and as one document for ``-o json|yaml``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from kubectl_sktrace.model import CAUSE_FORBIDDEN
from kubectl_sktrace.reconciliation import Reconciliation, reconciliation_to_dict
from kubectl_sktrace.store.history import CoverageGap, UnrecordedKind
from kubectl_sktrace.timeparse import format_duration, format_span, format_time


@dataclass(frozen=True)
class SummaryRow:
    kind: str
    listed: int
    applied: int
    deleted_live: int
    deleted_offline: int
    caught_up: int
    lifecycles: int
    metadata: int = 0  # label, annotation, owner-reference changes (``applied``: new objects and spec changes)
    data: int = 0  # data changes of spec-less kinds


@dataclass(frozen=True)
class Summary:
    cache: str
    run_id: int
    started: float
    stopped: float
    synced: float | None
    events: int
    rows: tuple[SummaryRow, ...]
    warnings: tuple[str, ...]
    outages: tuple[CoverageGap, ...] = ()
    reconciliation: Reconciliation | None = None  # what the initial sync found changed while offline (None: not synced)
    unserved: tuple[UnrecordedKind, ...] = ()  # when kinds were not served during the run


def iter_rows(summary: Summary) -> Iterator[dict[str, Any]]:
    for row in summary.rows:
        yield {
            "kind": row.kind, "listed": row.listed, "applied": row.applied, "metadata": row.metadata, "data": row.data,
            "deleted live": row.deleted_live,
            "deleted while offline": row.deleted_offline, "after outage": row.caught_up, "lifecycles": row.lifecycles,
        }


def summary_to_dict(summary: Summary) -> dict[str, Any]:
    """``start -o json|yaml``: the end-of-run summary as one document."""
    return {
        "cache": summary.cache,
        "run": summary.run_id,
        "started": format_time(summary.started),
        "synced": format_time(summary.synced) if summary.synced is not None else None,
        "stopped": format_time(summary.stopped),
        "duration": format_duration(summary.stopped - summary.started),
        "events": summary.events,
        "kinds": [
            {"kind": r.kind, "listed": r.listed, "applied": r.applied, "metadataChanges": r.metadata, "dataChanges": r.data,
             "deletedLive": r.deleted_live,
             "deletedWhileOffline": r.deleted_offline, "afterOutage": r.caught_up, "lifecycles": r.lifecycles}
            for r in summary.rows
        ],
        "outages": [
            {"cause": g.cause, "from": format_time(g.since), "to": format_time(g.until),
             "duration": format_duration(g.until - g.since), "kinds": list(g.kinds)}
            for g in summary.outages
        ],
        "notServed": [
            {"kind": u.gvk, "from": format_time(u.since), "to": format_time(u.until), "duration": format_duration(u.until - u.since)}
            for u in summary.unserved
        ],
        "warnings": list(summary.warnings),
        "reconciliation": None if summary.reconciliation is None else reconciliation_to_dict(summary.reconciliation),
    }


def coverage_lines(summary: Summary) -> Iterator[str]:
    """The lines under the table: each outage or refusal merged across kinds, then each kind not served, with its span."""
    for gap in summary.outages:
        span = f"{gap.cause} {format_span(gap.since, gap.until)} ({format_duration(gap.until - gap.since)}; {', '.join(gap.kinds)})"
        if gap.cause == CAUSE_FORBIDDEN:
            yield f"Refused: {span}: not recorded then; what changed was reconstructed once it could be read, not seen live."
        elif gap.until >= summary.stopped:  # closed by the run's end: the API never came back while it ran
            yield (f"Outage: {span}: not over when the run ended; changes made then were not recorded (the next start "
                   "reconciles them from its lists).")
        else:
            yield f"Outage: {span}: changes made then were caught up afterwards, not seen live."
    for kind in summary.unserved:
        yield (f"Not served: {kind.gvk} {format_span(kind.since, kind.until)} ({format_duration(kind.until - kind.since)}): "
               "none of its objects could exist then; nothing is missing.")
