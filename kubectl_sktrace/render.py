"""Output for people: tables, JSON and YAML. The only importer of ``tabulate``.

Every reporting command builds a plain dict (or list of dicts) and hands it here with the ``-o`` value:
``table`` is tabulate's ``simple`` format, ``json`` is ``json.dumps(indent=2)`` in the data's own key order,
``yaml`` is ``yaml.safe_dump(sort_keys=False)``. Renderers return text without a trailing newline.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from tabulate import tabulate

from kubectl_sktrace.terminal import escape

FORMATS = ("table", "json", "yaml")


def dump(data: object, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data, indent=2, sort_keys=False)
    if fmt == "yaml":
        text: str = yaml.safe_dump(data, sort_keys=False, default_flow_style=False)
        return text.rstrip("\n")
    raise ValueError(f"unknown output format {fmt!r}")


def _cell(value: Any) -> Any:
    """A cell's text; a cluster's control characters made visible before the table is laid out (a carriage return
    would otherwise split its row: ``terminal``)."""
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return escape(", ".join(str(v) for v in value)) if value else "-"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=False)
    return escape(value) if isinstance(value, str) else value


def render_mapping(data: dict[str, Any], fmt: str) -> str:
    """One record: ``key  value`` lines as a table, or the mapping itself as JSON/YAML."""
    if fmt != "table":
        return dump(data, fmt)
    text: str = tabulate([(k, _cell(v)) for k, v in data.items()], tablefmt="plain", disable_numparse=True)
    return text


def render_table(rows: list[dict[str, Any]], fmt: str, *, columns: list[str] | None = None) -> str:
    """Rows of records; ``columns`` picks and orders them (default: the keys of the first row)."""
    if fmt != "table":
        return dump(rows, fmt)
    cols = columns if columns is not None else (list(rows[0]) if rows else [])
    body = [[_cell(row.get(c)) for c in cols] for row in rows]
    text: str = tabulate(body, headers=[c.upper() for c in cols], tablefmt="simple", disable_numparse=True)
    return text


def section(title: str, rows: list[dict[str, Any]], columns: list[str], empty: str) -> str:
    if not rows:
        return f"{title}: {empty}"
    return f"{title}:\n{render_table(rows, 'table', columns=columns)}"
