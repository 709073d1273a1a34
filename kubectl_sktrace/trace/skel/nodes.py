"""The parsed form of a SKEL program: commands, selectors, tests, paths and values. Pure, immutable data.

A ``Path`` is what SimKube turns into a JSON pointer: an optional variable at its head, then steps. A step
is one pointer token, so ``.0`` and ``[0]`` reach the same element of a list, and ``[0]`` on a map reads the
key ``"0"``, as SimKube's pointers do; the only step of its own is ``[*]``, every element of a list.
Relative times (``@t > 5m``) stay relative here: they become instants when a transformer is made for a
trace, whose start is known then, so that one parsed program serves any trace.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Union

_FREE_PART = re.compile(r"[A-Za-z0-9_-]+\Z")
_INDEX = re.compile(r"(?:0|[1-9][0-9]*)\Z")
MAX_WILDCARDS = 16
"""More ``[*]`` in one path is refused: a path becomes nested loops, and Python nests at most 20 in a function."""
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600}
"""The units of a relative time, as SimKube has them: seconds, minutes, hours."""


class Op(enum.Enum):
    """A test's operation, spelled as in SKEL."""

    EQ = "=="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    EXISTS = "exists"
    NOT_EXISTS = "!exists"


COMPARATORS = {op.value: op for op in (Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE)}
ORDERINGS = frozenset({Op.LT, Op.LE, Op.GT, Op.GE})


@dataclass(frozen=True)
class Step:
    """One step of a path: ``key`` is the pointer token (a field name, digits, or ``*`` for ``[*]``);
    ``index`` is the list index the token also means, when it is one; ``bracket``: written ``[…]``."""

    key: str
    index: int | None
    bracket: bool

    @property
    def wild(self) -> bool:
        return self.bracket and self.key == "*"

    @classmethod
    def field(cls, name: str) -> Step:
        return cls(name, int(name) if _INDEX.match(name) else None, False)

    @classmethod
    def element(cls, index: int | None) -> Step:
        """``[N]``, or ``[*]`` when ``index`` is None."""
        return cls("*", None, True) if index is None else cls(str(index), index, True)

    def __str__(self) -> str:
        if self.bracket:
            return f"[{self.key}]"
        return f".{self.key}" if _FREE_PART.match(self.key) else f'."{self.key}"'


@dataclass(frozen=True)
class Path:
    """``$var.a."b/c"[0][*]``: ``var`` (with its ``$``) or None, then the steps."""

    var: str | None
    steps: tuple[Step, ...]

    @property
    def pointer(self) -> str:
        """The JSON pointer SimKube makes of it (``~1`` for ``/``; a variable as its own token ``$x``)."""
        tokens = ([self.var] if self.var else []) + [s.key.replace("~", "~0").replace("/", "~1") for s in self.steps]
        return "/" + "/".join(tokens)

    @property
    def has_wildcard(self) -> bool:
        return any(step.wild for step in self.steps)

    def __str__(self) -> str:
        text = (self.var or "") + "".join(str(step) for step in self.steps)
        return text[1:] if text.startswith(".") else text


@dataclass(frozen=True)
class Literal:
    """A value written in the program: an integer, a string or a boolean."""

    value: str | int | bool

    def __str__(self) -> str:
        if isinstance(self.value, bool):
            return "true" if self.value else "false"
        return f'"{self.value}"' if isinstance(self.value, str) else str(self.value)


Rhs = Union[Literal, Path]
"""The right side of a comparison or an assignment: a value, or a path read from the object."""


@dataclass(frozen=True)
class VarDef:
    """``$x := path``: the variable's name (with ``$``) and the path it ranges over."""

    name: str
    path: Path


@dataclass(frozen=True)
class ResourceTest:
    """A test on the object: ``path OP rhs``, ``exists(path)`` or ``!exists(path)`` (``rhs`` None), with
    ``var`` when it defines a variable (``$x := …  | $x…``; then ``path`` starts with that variable)."""

    path: Path
    op: Op
    rhs: Rhs | None = None
    var: VarDef | None = None


@dataclass(frozen=True)
class TimeTest:
    """``@t OP amount[unit]``: unit None for an absolute unix time, else relative to the trace's start."""

    op: Op
    amount: int
    unit: str | None

    def at(self, start_ts: int) -> int:
        """The instant this test compares the event's time with, for a trace starting at ``start_ts``."""
        return self.amount if self.unit is None else start_ts + self.amount * UNIT_SECONDS[self.unit]


Test = Union[ResourceTest, TimeTest]


@dataclass(frozen=True)
class Delete:
    """``delete(selector)``: drop the object from its event."""


@dataclass(frozen=True)
class Remove:
    """``remove(selector, path)``: remove what the path reaches."""

    path: Path


@dataclass(frozen=True)
class Modify:
    """``modify(selector, path = rhs)``: set what the path reaches, adding it (and its parents) if missing."""

    path: Path
    rhs: Rhs


Action = Union[Delete, Remove, Modify]


@dataclass(frozen=True)
class Command:
    """One command: its tests (all must hold; none: every object), its action, and where it was written
    (``text``: its source on one line, comments and line breaks dropped; ``line``: where it starts)."""

    selector: tuple[Test, ...]
    action: Action
    text: str
    line: int

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Program:
    """A parsed SKEL file: its commands in order, and the name it was read from (for messages)."""

    source: str
    commands: tuple[Command, ...]
