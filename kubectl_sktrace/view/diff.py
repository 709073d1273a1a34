"""An object's version as text and its difference from the previous one. Pure.

Objects are shown as YAML with their keys in one canonical order (sorted at every level, as ``kubectl get -o yaml``
prints them), whatever order they were recorded in: a list sends ``apiVersion`` and ``kind`` after ``spec``, a watch
before it, and the same object must read the same. The difference (``changes``) is a unified diff of those texts,
three lines of context, of the object without its ``status``, and the status's own difference apart: what the
cluster reports about an object is no change of the object.

``difflib`` is quadratic in the lines it compares, and a recorded value may be megabytes (a ConfigMap's data, an env
value of 20,000 lines). So the lines the two versions share at their start and end are set aside first (linear), and
only the middle is compared, when it is at most ``MAX_PAIRS`` line pairs; a larger middle is summarized in one hunk
that says how many lines each side has there.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

import yaml

CONTEXT = 3
MAX_PAIRS = 1_000_000
_HUNK = re.compile(r"@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def as_yaml(body: dict[str, Any] | None) -> str:
    if body is None:
        return ""
    return str(yaml.safe_dump(body, sort_keys=True, default_flow_style=False, allow_unicode=True))


def _without_status(body: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if body is None else {k: v for k, v in body.items() if k != "status"}


def _status(body: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if body is None or body.get("status") is None else {"status": body["status"]}


def changes(before: dict[str, Any] | None, after: dict[str, Any] | None, *, before_name: str, after_name: str) -> tuple[str, str]:
    """``(the object's diff, its status's diff)`` from ``before`` to ``after``: each "" when that part is the same."""
    return (unified(_without_status(before), _without_status(after), before_name=before_name, after_name=after_name),
            unified(_status(before), _status(after), before_name=before_name, after_name=after_name))


def unified(before: dict[str, Any] | None, after: dict[str, Any] | None, *, before_name: str, after_name: str) -> str:
    """The unified diff from ``before`` to ``after`` (either None: nothing, as for a creation or a deletion)."""
    old, new = as_yaml(before).splitlines(keepends=True), as_yaml(after).splitlines(keepends=True)
    head = _shared(old, new, range(min(len(old), len(new))))
    tail = _shared(old, new, range(-1, -1 - (min(len(old), len(new)) - head), -1))
    start = max(0, head - CONTEXT)
    old_middle, new_middle = old[start:len(old) - max(0, tail - CONTEXT)], new[start:len(new) - max(0, tail - CONTEXT)]
    if len(old_middle) * len(new_middle) > MAX_PAIRS:
        changed_old, changed_new = len(old) - head - tail, len(new) - head - tail
        return (f"--- {before_name}\n+++ {after_name}\n"
                f"@@ -{head + 1},{changed_old} +{head + 1},{changed_new} @@ too many lines to compare here: "
                f"{changed_old} lines before, {changed_new} after (the version's YAML shows them all)\n")
    lines = difflib.unified_diff(old_middle, new_middle, fromfile=before_name, tofile=after_name, n=CONTEXT)
    return "".join(_moved(line, start) if line.startswith("@@") else line if line.endswith("\n") else line + "\n" for line in lines)


def _shared(old: list[str], new: list[str], positions: range) -> int:
    """How many of ``positions`` (from the start, or negative from the end) hold the same line in both."""
    count = 0
    for i in positions:
        if old[i] != new[i]:
            break
        count += 1
    return count


def _moved(hunk: str, offset: int) -> str:
    """A hunk header of the middle, numbered as in the whole texts."""
    match = _HUNK.match(hunk)
    assert match is not None
    old_at, old_len, new_at, new_len = match.groups()
    return f"@@ -{int(old_at) + offset}{old_len or ''} +{int(new_at) + offset}{new_len or ''} @@\n"
