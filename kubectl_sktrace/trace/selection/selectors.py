"""kubectl label selectors (``-l``/``--exclude-labels``): parse and match. Pure functions.

Syntax, as kubectl and the API server accept it: comma-separated requirements, all of which must hold::

    a=b   a==b          label a exists and equals b          (matchLabels)
    a!=b                label a is absent or differs from b  (NotIn with one value)
    a in (x,y)          label a exists and is x or y         (In)
    a notin (x,y)       label a is absent or is neither      (NotIn)
    a                   label a exists                       (Exists)
    !a                  label a is absent                    (DoesNotExist)

Keys are an optional DNS-subdomain prefix and ``/`` then a name of at most 63 characters of
``[A-Za-z0-9-_.]`` that starts and ends alphanumeric; values are empty or such a name. Anything else is a
UsageError naming the selector and the syntax, never a crash (a defect of SimKube's exporter we fix).
An empty selector is refused too: kubectl reads it as "everything", which for an exclusion would silently
export nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from kubectl_sktrace.errors import UsageError

SYNTAX = "use kubectl syntax like 'a=b,c!=d,e in (x,y),f notin (z),g,!h'"

_NAME = r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_PREFIX = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*"
_KEY_RE = re.compile(rf"(?:{_PREFIX}/)?{_NAME}")
_VALUE_RE = re.compile(rf"(?:{_NAME})?")
_SET_RE = re.compile(r"^(?P<key>\S+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_EQ_RE = re.compile(r"^(?P<key>[^=!\s]*)\s*(?P<op>==|=|!=)\s*(?P<value>.*)$")

EQUALS, NOT_EQUALS, IN, NOT_IN, EXISTS, DOES_NOT_EXIST = "=", "!=", "in", "notin", "exists", "!"


@dataclass(frozen=True)
class Requirement:
    """One term of a selector: ``key`` ``op`` ``values`` (values empty for exists / does-not-exist)."""

    key: str
    op: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op == EXISTS:
            return present
        if self.op == DOES_NOT_EXIST:
            return not present
        if self.op in (EQUALS, IN):
            return present and labels[self.key] in self.values
        return not present or labels[self.key] not in self.values  # != and notin


@dataclass(frozen=True)
class Selector:
    """A parsed selector: it matches a set of labels when every requirement does."""

    text: str
    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        found = labels or {}
        return all(r.matches(found) for r in self.requirements)


def parse_selector(text: str) -> Selector:
    """Parse a kubectl label selector; a malformed one is a UsageError that names it."""
    terms = _split_terms(text)
    if not terms:
        raise _error(text, "it is empty")
    return Selector(text=text, requirements=tuple(_parse_term(text, term) for term in terms))


def matches_any(selectors: tuple[Selector, ...] | list[Selector], labels: Mapping[str, str] | None) -> bool:
    """True when at least one selector matches (how repeated ``--exclude-labels`` combine)."""
    return any(s.matches(labels) for s in selectors)


def _split_terms(text: str) -> list[str]:
    """Split on the commas that are not inside ``( )``; unbalanced parentheses are an error."""
    terms: list[str] = []
    depth, current = 0, list[str]()
    for char in text:
        if char == "(":
            depth += 1
            if depth > 1:
                raise _error(text, "nested '('")
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise _error(text, "')' without '('")
        if char == "," and depth == 0:
            terms.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    if depth:
        raise _error(text, "'(' without ')'")
    terms.append("".join(current).strip())
    if terms == [""]:
        return []
    if any(not t for t in terms):
        raise _error(text, "an empty requirement between commas")
    return terms


def _parse_term(text: str, term: str) -> Requirement:
    if term.startswith("!"):
        key = term[1:].strip()
        return Requirement(key=_check_key(text, key), op=DOES_NOT_EXIST)
    set_match = _SET_RE.match(term)
    if set_match:
        key = _check_key(text, set_match["key"])
        raw = [v.strip() for v in set_match["values"].split(",")]
        if raw == [""]:
            raise _error(text, f"'{set_match['op']}' needs at least one value")
        return Requirement(key=key, op=set_match["op"], values=frozenset(_check_value(text, v) for v in raw))
    if "(" in term or ")" in term:
        raise _error(text, f"cannot read {quoted(term)}")
    eq_match = _EQ_RE.match(term)
    if eq_match:
        key = _check_key(text, eq_match["key"])
        value = _check_value(text, eq_match["value"].strip())
        op = NOT_EQUALS if eq_match["op"] == "!=" else EQUALS
        return Requirement(key=key, op=op, values=frozenset([value]))
    return Requirement(key=_check_key(text, term), op=EXISTS)


def _check_key(text: str, key: str) -> str:
    if not key:
        raise _error(text, "a requirement has an empty key")
    if not _KEY_RE.fullmatch(key):
        raise _error(text, f"{quoted(key)} is not a valid label key")
    return key


def _check_value(text: str, value: str) -> str:
    if not _VALUE_RE.fullmatch(value):
        raise _error(text, f"{quoted(value)} is not a valid label value")
    return value


def _error(text: str, reason: str) -> UsageError:
    return UsageError(f"invalid label selector {quoted(text)}: {reason}; {SYNTAX}")


def quoted(text: str, *, limit: int = 80) -> str:
    """``text`` quoted for a one-line error, cut to its first ``limit`` characters (a flag may be a megabyte long)."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"… ({len(text)} characters)"
