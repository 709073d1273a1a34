"""An object's version as text and its difference from the previous one. Pure.

Objects are shown as YAML with their keys in the order recorded (``sort_keys=False``), the form people read them in
``kubectl get -o yaml``; the difference is a unified diff of those texts, three lines of context.
"""

from __future__ import annotations

import difflib
from typing import Any

import yaml


def as_yaml(body: dict[str, Any] | None) -> str:
    if body is None:
        return ""
    return str(yaml.safe_dump(body, sort_keys=False, default_flow_style=False, allow_unicode=True))


def unified(before: dict[str, Any] | None, after: dict[str, Any] | None, *, before_name: str, after_name: str) -> str:
    """The unified diff from ``before`` to ``after`` (either None: nothing, as for a creation or a deletion)."""
    lines = difflib.unified_diff(as_yaml(before).splitlines(keepends=True), as_yaml(after).splitlines(keepends=True),
                                 fromfile=before_name, tofile=after_name, n=3)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
