"""Label and field selectors as the API server parses them (``labelSelector``, ``fieldSelector``): what a list or a
watch asks for, its syntax errors a 400 with the server's words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sktrace_apiserver.status import ApiError


class Kind(Protocol):
    """What a field selector's error names of the kind asked for."""

    @property
    def group(self) -> str: ...

    @property
    def version(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def plural(self) -> str: ...


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!exists"
    values: frozenset[str]

    def matches(self, mapping: dict[str, str]) -> bool:
        present = self.key in mapping
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        if self.op in ("=", "in"):
            return present and mapping[self.key] in self.values
        return not present or mapping[self.key] not in self.values


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def parse_label_selector(text: str) -> tuple[Requirement, ...]:
    """kubectl's selector syntax: ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``, ``a notin (x)``, ``a``, ``!a``."""
    reqs = []
    for part in _split_top(text or ""):
        words = part.split()
        if len(words) >= 2 and words[1] in ("in", "notin"):
            inner = part.split(None, 2)[2].strip()
            if not (inner.startswith("(") and inner.endswith(")")):
                raise ApiError(400, "BadRequest", f"unable to parse requirement: {part!r}")
            values = frozenset(v.strip() for v in inner[1:-1].split(",") if v.strip())
            reqs.append(Requirement(words[0], words[1], values))
        elif "!=" in part:
            key, value = part.split("!=", 1)
            reqs.append(Requirement(key.strip(), "!=", frozenset([value.strip()])))
        elif "=" in part:
            key, value = part.replace("==", "=").split("=", 1)
            reqs.append(Requirement(key.strip(), "=", frozenset([value.strip()])))
        elif part.startswith("!"):
            reqs.append(Requirement(part[1:].strip(), "!exists", frozenset()))
        else:
            reqs.append(Requirement(part, "exists", frozenset()))
    return tuple(reqs)


FIELD_SELECTABLE = ("metadata.name", "metadata.namespace", "spec.nodeName", "status.phase")


def parse_field_selector(text: str, rtype: Kind) -> tuple[Requirement, ...]:
    """Field selectors the real server supports for these kinds: ``=``, ``==``, ``!=`` on a few fields."""
    reqs = []
    for part in _split_top(text or ""):
        op = "!=" if "!=" in part else "="
        key, _, value = part.replace("==", "=").partition(op)
        key = key.strip()
        allowed = FIELD_SELECTABLE if rtype.kind == "Pod" else FIELD_SELECTABLE[:2]
        if key not in allowed:
            raise ApiError(
                400,
                "BadRequest",
                f'Unable to find "{rtype.group}/{rtype.version}, Resource={rtype.plural}" that match label selector "", field selector "{text}": "{key}" is not a known field selector: only "{", ".join(allowed)}"',
            )
        reqs.append(Requirement(key, op, frozenset([value.strip()])))
    return tuple(reqs)
