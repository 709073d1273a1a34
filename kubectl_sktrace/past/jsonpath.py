"""kubectl's JSONPath templates (``-o jsonpath=…``, ``custom-columns``), the part people type. Pure.

Text and ``{…}`` expressions: ``{.metadata.name}``, ``{.items[*].metadata.name}``, ``{.items[0]}``, ``{.spec.containers[*].image}``,
``{.metadata.labels.app\\.kubernetes\\.io/name}`` (an escaped dot), ``{range .items[*]}…{end}``, ``{"\\n"}`` and ``{'\\t'}``
literals. Several values are joined by a space, as kubectl does; a map or list prints as JSON. Filters (``[?()]``), slices
and ``..`` are refused with one line saying so, never half-read.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kubectl_sktrace.errors import UsageError

MAX_TEMPLATE = 4_096
_PART = re.compile(r"((?:\\.|[^.\[\\])+)|\[(\*|-?\d+)\]")


def _steps(path: str, template: str) -> list[str | int | None]:
    text = path.strip()
    if text in ("", "."):
        return []
    if not text.startswith(".") and not text.startswith("["):
        raise UsageError(f"jsonpath {template!r}: {path!r} does not start with '.' (try '{{.metadata.name}}')")
    if ".." in text or "?" in text or ":" in text:
        raise UsageError(f"jsonpath {template!r}: filters, slices and '..' are not supported; use plain paths like '{{.items[*].metadata.name}}'")
    steps: list[str | int | None] = []
    pos = 0
    while pos < len(text):
        if text[pos] == ".":
            pos += 1
        found = _PART.match(text, pos)
        if found is None:
            raise UsageError(f"jsonpath {template!r}: cannot read {path!r} at {text[pos:]!r}")
        name, index = found.groups()
        steps.append(name.replace("\\.", ".") if name is not None else (None if index == "*" else int(index)))
        pos = found.end()
    return steps


def _walk(values: list[Any], steps: list[str | int | None]) -> list[Any]:
    for step in steps:
        out: list[Any] = []
        for value in values:
            if step is None and isinstance(value, list):
                out.extend(value)
            elif isinstance(step, int) and isinstance(value, list) and -len(value) <= step < len(value):
                out.append(value[step])
            elif isinstance(step, str) and isinstance(value, dict) and step in value:
                out.append(value[step])
        values = out
    return values


def _text(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _tokens(template: str) -> list[tuple[str, str]]:
    """(``text``, literal) and (``expr``, inside the braces)."""
    tokens, pos = [], 0
    for found in re.finditer(r"\{((?:[^{}\"']|\"[^\"]*\"|'[^']*')*)\}", template):
        if found.start() > pos:
            tokens.append(("text", template[pos:found.start()]))
        tokens.append(("expr", found.group(1).strip()))
        pos = found.end()
    if pos < len(template):
        tokens.append(("text", template[pos:]))
    if any(kind == "text" and ("{" in text or "}" in text) for kind, text in tokens):
        raise UsageError(f"jsonpath {template!r}: unmatched brace")
    return tokens


def _literal(expr: str) -> str | None:
    if len(expr) >= 2 and expr[0] == expr[-1] and expr[0] in "\"'":
        return expr[1:-1].replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r")
    return None


def render(template: str, data: Any) -> str:
    """The template applied to ``data`` (a list's JSON form for several objects); UsageError when it is not one."""
    if len(template) > MAX_TEMPLATE:
        raise UsageError(f"the jsonpath template is {len(template)} characters long; at most {MAX_TEMPLATE} are read")
    tokens = _tokens(template)
    out, _ = _run(tokens, 0, data, template)
    return out


def _run(tokens: list[tuple[str, str]], pos: int, data: Any, template: str) -> tuple[str, int]:
    out: list[str] = []
    while pos < len(tokens):
        kind, text = tokens[pos]
        pos += 1
        if kind == "text":
            out.append(text)
        elif text == "end":
            return "".join(out), pos
        elif text.startswith("range "):
            items = _walk([data], _steps(text[6:], template))
            start, end = pos, pos
            for item in items:
                chunk, end = _run(tokens, start, item, template)
                out.append(chunk)
            if not items:
                _, end = _run(tokens, start, None, template)
            pos = end
        elif (literal := _literal(text)) is not None:
            out.append(literal)
        else:
            out.append(" ".join(_text(v) for v in _walk([data], _steps(text, template))))
    return "".join(out), pos


def value(path: str, obj: Any) -> str:
    """One ``custom-columns`` cell: the values ``path`` finds (``.spec.replicas``, ``{.spec.replicas}``), joined by
    commas as kubectl does; ``<none>`` when none."""
    inner = path.strip()
    if inner.startswith("{") and inner.endswith("}"):
        inner = inner[1:-1]
    found = _walk([obj], _steps(inner if inner.startswith((".", "[")) else "." + inner, path))
    return ",".join(_text(v) for v in found) if found else "<none>"
