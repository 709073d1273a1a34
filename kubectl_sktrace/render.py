"""Output for people: tables, JSON and YAML. The only importer of ``tabulate``.

Every reporting command builds a plain dict (or list of dicts) and hands it here with the ``-o`` value:
``table`` is tabulate's ``simple`` format, ``json`` is ``json.dumps(indent=2)`` in the data's own key order,
``yaml`` is ``yaml.safe_dump(sort_keys=False)``. Renderers return text without a trailing newline.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import yaml
from tabulate import tabulate

from kubectl_sktrace.plural import counted
from kubectl_sktrace.timeparse import format_duration, format_time

if TYPE_CHECKING:
    from kubectl_sktrace.export import ExportReport
    from kubectl_sktrace.reconciliation import Reconciliation
    from kubectl_sktrace.validation import ValidationReport

FORMATS = ("table", "json", "yaml")


def _dump(data: object, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data, indent=2, sort_keys=False)
    if fmt == "yaml":
        text: str = yaml.safe_dump(data, sort_keys=False, default_flow_style=False)
        return text.rstrip("\n")
    raise ValueError(f"unknown output format {fmt!r}")


def _cell(value: Any) -> Any:
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) if value else "-"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=False)
    return value


def render_mapping(data: dict[str, Any], fmt: str) -> str:
    """One record: ``key  value`` lines as a table, or the mapping itself as JSON/YAML."""
    if fmt != "table":
        return _dump(data, fmt)
    text: str = tabulate([(k, _cell(v)) for k, v in data.items()], tablefmt="plain", disable_numparse=True)
    return text


def render_table(rows: list[dict[str, Any]], fmt: str, *, columns: list[str] | None = None) -> str:
    """Rows of records; ``columns`` picks and orders them (default: the keys of the first row)."""
    if fmt != "table":
        return _dump(rows, fmt)
    cols = columns if columns is not None else (list(rows[0]) if rows else [])
    body = [[_cell(row.get(c)) for c in cols] for row in rows]
    text: str = tabulate(body, headers=[c.upper() for c in cols], tablefmt="simple", disable_numparse=True)
    return text


def _section(title: str, rows: list[dict[str, Any]], columns: list[str], empty: str) -> str:
    if not rows:
        return f"{title}: {empty}"
    return f"{title}:\n{render_table(rows, 'table', columns=columns)}"


def render_inspection(result: dict[str, Any], fmt: str) -> str:
    """``kubectl sktrace inspect``: a summary, then objects per kind, the index, lifecycles and events."""
    if fmt != "table":
        return _dump(result, fmt)
    window = result["window"]
    summary = {
        "File": result["file"],
        "Format version": result["formatVersion"],
        "Window": f"{window['start']} .. {window['end']} ({window['duration']})" if window else "- (no events)",
        "Events": result["events"],
        "Applied objects": result["applied"],
        "Deleted objects": result["deleted"],
        "Tracked kinds": result["trackedKinds"],
    }
    parts = [render_mapping(summary, "table")]
    parts.append(_section("Objects per kind", result["objects"], ["kind", "namespace", "objects"], "none"))
    parts.append(_section("Index", result["index"], ["kind", "objects"], "empty"))
    parts.append(
        _section("Pod lifecycles", result["podLifecycles"], ["owner", "object", "podSpecs", "running", "finished"], "none")
    )
    if "eventList" in result:
        rows = [
            {"ts": e["ts"], "time": e["time"], "change": change}
            for e in result["eventList"]
            for change in (e["changes"] or ["(no changes)"])
        ]
        parts.append(_section("Events", rows, ["ts", "time", "change"], "none"))
    return "\n\n".join(parts)


def validation_to_dict(report: ValidationReport) -> dict[str, Any]:
    """A ValidationReport as plain data (JSON/YAML output)."""
    return {
        "file": report.path,
        "valid": not report.has_errors,
        "errors": report.errors,
        "warnings": report.warnings,
        "findings": [
            {
                "code": f.code,
                "severity": "error" if f.is_error else "warning",
                "ts": f.ts,
                "object": str(f.object) if f.object is not None else None,
                "message": f.message,
            }
            for f in report.findings
        ],
    }


def render_unreadable(path: str, error: str, fmt: str) -> str:
    """``validate -o json|yaml`` of a file that is no trace at all: the error in the format asked for, shaped
    like a report (``valid: false``) so that a program reads one shape either way."""
    from kubectl_sktrace.traceformat import source_name

    return _dump({"file": source_name(path), "valid": False, "error": error, "errors": 1, "warnings": 0, "findings": []}, fmt)


def render_validation(report: ValidationReport, fmt: str) -> str:
    """``kubectl sktrace validate``: the findings, then one verdict line."""
    data = validation_to_dict(report)
    if fmt != "table":
        return _dump(data, fmt)
    verdict = (
        f"{report.path}: {'invalid' if report.has_errors else 'valid'}, "
        f"{counted(report.errors, 'error')}, {counted(report.warnings, 'warning')}"
    )
    if not data["findings"]:
        return verdict
    table = render_table(data["findings"], "table", columns=["code", "ts", "object", "message"])
    return f"{table}\n\n{verdict}"


# --- the reconciliation report (what a restart found changed while offline) and start's summary -------------


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
        return [headline]
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
                    details.append(f"last recorded {last} → found changed {_clock(c.found, day)}")
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
    return lines


def reconciliation_brief(report: Reconciliation) -> list[str]:
    """A short block (``status``): the gap and the counts per kind, no names."""
    headline = _headline(report)
    if headline is not None:
        return [headline]
    assert report.offline_since is not None
    lines = [f"Offline {_span(report.offline_since, report.offline_until)}, reconciled by run {report.run_id}:"]
    for kind in report.kinds:
        counts = [f"{s.count} {what}" for what, s in (("deleted", kind.deleted), ("created", kind.created), ("changed", kind.changed))
                  if s.count]
        lines.append(f"  {kind.gvk}: {', '.join(counts)} while offline")
    if report.pods.count:
        lines.append(f"  pods: {report.pods.count} finished while offline")
    return lines


def export_sentence(report: ExportReport, *, where: str) -> str:
    """The one line ``export`` ends with: what it wrote, and the window as ``inspect`` will show it."""
    return (
        f"Wrote {where}: {counted(report.events, 'event')} ({report.applied} applied, {report.deleted} deleted after the start state), "
        f"{counted(report.index_objects, 'object')} in the index, {counted(report.lifecycles, 'pod lifecycle')}, "
        f"window {format_time(report.start_ts)} .. {format_time(report.last_event_ts)} "
        f"({format_duration(report.last_event_ts - report.start_ts)}, first to last event as inspect shows it; "
        f"exported up to {format_time(report.end_ts)})."
    )
