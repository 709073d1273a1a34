"""What ``history`` and ``diff`` print: an object's lives as lines (or JSON/YAML), differences as diffs of YAML."""

from __future__ import annotations

from typing import Any, Sequence

from kubectl_sktrace.timeparse import format_time


def _change_row(life: int, change: Any) -> dict[str, Any]:
    return {"life": life, "uid": change.uid, "time": format_time(change.second), "change": change.what, "known": change.known,
            "run": change.run_id}


def _status_row(life: int, change: Any) -> dict[str, Any]:
    return {"life": life, "uid": change.uid, "time": format_time(change.second), "change": change.what, "known": change.known,
            "run": change.run_id, "status": change.after}


def _merged(life: Any, statuses: Sequence[Any]) -> list[Any]:
    """A life's changes and its status changes (``--status``) in time order, a version before a status of its second."""
    own = [s for s in statuses if s.uid == life.uid]
    return sorted([*life.changes, *own], key=lambda c: (c.second, hasattr(c, "after")))


def history_text(lives: Sequence[Any], pods: Sequence[tuple[str, str, Any]], *, output: str, show_diff: bool,
                 statuses: Sequence[Any] = ()) -> str:
    """The lives of one name, one line a change; with ``show_diff`` each change's diff under its line; with ``statuses``
    each life's status changes among its changes (``status: readyReplicas 3 -> 2``); the pods after."""
    if output != "table":
        data = {"lives": [{"uid": life.uid, "changes": [_change_row(i, c) | ({"object": c.obj} if show_diff else {}) for c in life.changes]}
                          | ({"statuses": [_status_row(i, s) for s in statuses if s.uid == life.uid]} if statuses else {})
                          for i, life in enumerate(lives, 1)],
                "pods": [{"name": n, "uid": u, "started": _t(p.start), "ended": _t(p.end)} for n, u, p in pods]}
        from kubectl_sktrace import render  # tabulate and YAML loaded only for what prints with them

        return render.dump(data, output)
    from kubectl_sktrace.past.printing import layout

    rows = [[str(n), c.uid if i == 0 else "", format_time(c.second), c.what, c.known, str(c.run_id)]
            for n, life in enumerate(lives, 1) for i, c in enumerate(_merged(life, statuses))]
    lines = _with_diffs(lives, statuses, rows) if show_diff else [layout(["LIFE", "UID", "TIME", "CHANGE", "KNOWN", "RUN"], rows)]
    if pods:
        lines.append("")
        lines.append(layout(["POD", "UID", "STARTED", "ENDED"], [[n, u, _t(p.start) or "-", _t(p.end) or "-"] for n, u, p in pods]))
    return "\n".join(lines)


def _with_diffs(lives: Sequence[Any], statuses: Sequence[Any], rows: list[list[str]]) -> list[str]:
    from kubectl_sktrace.view.diff import unified

    lines: list[str] = []
    previous = None
    for change, row in zip([c for life in lives for c in _merged(life, statuses)], rows):
        if hasattr(change, "after"):  # a status change: its line says it whole
            lines.append("   ".join(row))
            continue
        previous = None if change.type == "ADDED" else previous
        lines.append("   ".join(row))
        after = None if change.type == "DELETED" else change.obj
        text = unified(previous, after, before_name="before", after_name=format_time(change.second))
        lines.extend("    " + line for line in text.rstrip("\n").splitlines())
        previous = after
    return lines


def _t(second: int | None) -> str | None:
    return None if second is None else format_time(second)


def difference_text(found: Sequence[Any], *, output: str) -> str:
    """``-o name``: one ``deployment.apps/web`` line each; else a header and the diff of each object's YAML."""
    from kubectl_sktrace.view.diff import unified

    if output == "name":
        return "\n".join(dict.fromkeys(f"{d.kind.name_prefix}/{d.key.name}" for d in found))
    parts = []
    for d in found:
        where = f" -n {d.key.namespace}" if d.key.namespace else ""
        parts.append(f"{d.type} {d.kind.name_prefix}/{d.key.name}{where}")
        before = None if d.before is None else d.before.obj
        after = None if d.after is None else d.after.obj
        start = "(none)" if d.before is None else format_time(d.before.second)
        end = "(none)" if d.after is None else format_time(d.after.second)
        parts.append(unified(before, after, before_name=start, after_name=end).rstrip("\n"))
    return "\n".join(parts)
