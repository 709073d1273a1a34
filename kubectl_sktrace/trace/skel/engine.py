"""Applying a parsed SKEL program to trace events, one event at a time, with SimKube's semantics. Pure.

Each command, in order, is applied to every object of ``applied_objs`` and ``deleted_objs``: when its tests
all hold (short-circuiting in order), ``delete`` drops the object, ``remove`` removes what its path reaches
and ``modify`` sets it. An event left with no object is dropped (``apply`` returns None), as is one that
came with none, as SimKube's ``process_trace`` does. The event is changed in place and nothing is kept
between events but the two counters, so a trace of any length streams through.

Tests, as SimKube's ``engine.rs`` evaluates them:

- A path with ``[*]`` reaches many values; ``==``, ``!=`` and the orderings hold when any value reached
  holds against any value of the right side (for ``!=``: differs from all of them). A missing field holds
  for neither ``==`` nor ``!=``. Equality is exact JSON equality: ``1`` is not ``1.0``, not ``true``.
- ``$x := PATH | TEST`` binds ``$x`` to each element of PATH for which TEST holds, in document order; the
  test holds when one does. ``!exists`` holds when no element has the field, and then binds every element.
- ``<``, ``<=``, ``>``, ``>=`` compare numbers; any other value never satisfies them (SimKube crashes).

Counters count as SimKube counts: ``events_matched`` once per object a command's selector matched (its
"trace events matched"), ``resources_modified`` once per target of a remove or modify, a target being the
action's path, or one per binding of the variable it starts with; ``delete`` modifies nothing. Differences
from SimKube, each a fix of a crash or of a wrong result, are listed in ``docs/spec.md``.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from kubectl_sktrace.errors import SktraceError
from kubectl_sktrace.trace.skel.nodes import (
    Action, Command, Delete, Literal, Modify, Op, Path, Program, ResourceTest, Rhs, Test, TimeTest, VarDef,
)
from kubectl_sktrace.trace.skel.paths import (
    MISSING, CStep, Location, Match, PathError, assign, compile_steps, copy_value, get, locate, remove, values,
)

Bindings = dict[str, list[Match]]
"""A variable's name -> the ``(location, value)`` of each element it is bound to, for one object."""
TestFn = Callable[[Any, int, Bindings], bool]
RhsFn = Callable[[Any, Bindings, Any], list[Any]]
ActFn = Callable[[Any, Bindings], int]
Targets = list[tuple[Location, Sequence[CStep]]]

_ORDER: dict[Op, Callable[[Any, Any], bool]] = {
    Op.EQ: operator.eq, Op.NE: operator.ne, Op.LT: operator.lt, Op.LE: operator.le, Op.GT: operator.gt, Op.GE: operator.ge,
}
_NO_BINDINGS: Bindings = {}  # shared by commands that define no variable: nothing writes to it


class SkelTransformError(SktraceError):
    """A command that cannot apply to an object: names the command, where it is written, and the object."""


class Transformer:
    """A program made ready for one trace (relative times counted from ``start_ts``): ``apply`` each event."""

    def __init__(self, program: Program, *, start_ts: int) -> None:
        self.program = program
        self.start_ts = start_ts
        self.events_matched = 0
        self.resources_modified = 0
        self._commands = tuple(_Compiled.of(command, start_ts) for command in program.commands)

    def apply(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """The event transformed in place, or None when it holds no object any more."""
        ts = event["ts"]
        alive = False
        for key in ("applied_objs", "deleted_objs"):
            objs = event.get(key)
            if not objs:
                continue
            kept = [obj for obj in objs if self._keep(obj, ts)]
            if len(kept) != len(objs):
                event[key] = kept
            alive = alive or bool(kept)
        return event if alive else None

    def _keep(self, obj: Any, ts: int) -> bool:
        """Apply every command to one object; False when one deletes it."""
        compiled = None
        try:
            for compiled in self._commands:
                bindings = {} if compiled.binds else _NO_BINDINGS
                if compiled.test is None or compiled.test(obj, ts, bindings):
                    self.events_matched += 1
                    if compiled.act is None:
                        return False
                    self.resources_modified += compiled.act(obj, bindings)
        except PathError as error:
            assert compiled is not None
            command = compiled.command
            raise SkelTransformError(
                f"{self.program.source}:{command.line}: {command.text} cannot apply to {describe_object(obj)}: {error}"
            ) from None
        return True


@dataclass(frozen=True)
class _Compiled:
    command: Command
    test: TestFn | None  # None: every object
    binds: bool  # its selector defines variables
    act: ActFn | None  # None: delete

    @classmethod
    def of(cls, command: Command, start_ts: int) -> _Compiled:
        tests = [compile_test(test, start_ts=start_ts) for test in command.selector]
        binds = any(isinstance(test, ResourceTest) and test.var is not None for test in command.selector)
        return cls(command, _all_of(tests), binds, compile_action(command.action))


def describe_object(obj: Any) -> str:
    """``Kind namespace/name`` from the object's own fields, as far as it has them."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    kind = obj.get("kind") if isinstance(obj, dict) else None
    name = "/".join(str(meta[key]) for key in ("namespace", "name") if meta.get(key))
    return " ".join(str(part) for part in (kind or "object", name) if part)


def _all_of(tests: list[TestFn]) -> TestFn | None:
    if not tests:
        return None
    if len(tests) == 1:
        return tests[0]

    def all_hold(obj: Any, ts: int, bindings: Bindings) -> bool:
        for test in tests:
            if not test(obj, ts, bindings):
                return False
        return True

    return all_hold


# --- tests ---


def time_matches(op: Op, event_ts: int, ts: int) -> bool:
    """``@t OP ts`` for an event at ``event_ts``."""
    return _ORDER[op](event_ts, ts)


def compile_test(test: Test, *, start_ts: int) -> TestFn:
    """One test as a function of (object, event time, bindings); a variable test adds its binding."""
    if isinstance(test, TimeTest):
        at, order = test.at(start_ts), _ORDER[test.op]
        return lambda obj, ts, bindings: order(ts, at)
    if test.var is not None:
        return _variable_test(test, test.var)
    steps = compile_steps(test.path.steps)
    if test.op in (Op.EXISTS, Op.NOT_EXISTS):
        want = test.op is Op.EXISTS
        if test.path.has_wildcard:
            return lambda obj, ts, bindings: bool(values(obj, steps)) is want
        return lambda obj, ts, bindings: (get(obj, steps) is not MISSING) is want
    assert test.rhs is not None
    if isinstance(test.rhs, Literal) and not test.path.has_wildcard:
        holds = _against(test.op, test.rhs.value)
        return lambda obj, ts, bindings: holds(get(obj, steps))
    op, rhs = test.op, compile_rhs(test.rhs, None)

    def compare(obj: Any, ts: int, bindings: Bindings) -> bool:
        lefts = values(obj, steps)
        return bool(lefts) and holds_any(op, lefts, rhs(obj, bindings, None))

    return compare


def _variable_test(test: ResourceTest, var: VarDef) -> TestFn:
    name, op, rest = var.name, test.op, compile_steps(test.path.steps)
    elements_of = _locator(var.path)
    rhs = compile_rhs(test.rhs, name) if test.rhs is not None else None
    per_element = isinstance(test.rhs, Path) and test.rhs.var == name

    def bind(obj: Any, ts: int, bindings: Bindings) -> bool:
        elements = elements_of(obj, bindings)
        if rhs is None:
            bound = [match for match in elements if values(match[1], rest)]
        else:
            rights = None if per_element or not elements else rhs(obj, bindings, None)
            bound = [
                (where, node) for where, node in elements
                if holds_any(op, values(node, rest), rhs(obj, bindings, node) if per_element else rights)
            ]
        if op is Op.NOT_EXISTS:
            if bound:
                return False
            bindings[name] = elements
            return True
        if not bound:
            return False
        bindings[name] = bound
        return True

    return bind


def holds_any(op: Op, lefts: list[Any] | None, rights: list[Any] | None) -> bool:
    """Whether some left value holds against the right side: equal to one (``==``), different from all
    (``!=``), ordered against one (numbers only); never with nothing on either side."""
    if not lefts or not rights:
        return False
    if op is Op.EQ:
        return any(json_equal(left, right) for left in lefts for right in rights)
    if op is Op.NE:
        return any(not any(json_equal(left, right) for right in rights) for left in lefts)
    order = _ORDER[op]
    return any(_is_number(left) and _is_number(right) and order(left, right) for left in lefts for right in rights)


def _against(op: Op, value: Any) -> Callable[[Any], bool]:
    """``x OP value`` for one value ``x`` (MISSING: never), the fast path of a literal right side."""
    if op is Op.EQ:
        return lambda x: x is not MISSING and json_equal(x, value)
    if op is Op.NE:
        return lambda x: x is not MISSING and not json_equal(x, value)
    order = _ORDER[op]
    return lambda x: _is_number(x) and order(x, value)


def _is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float


def json_equal(a: Any, b: Any) -> bool:
    """Exact JSON equality: same type (lists and tuples alike), same value; ``1`` differs from ``1.0`` and ``true``."""
    kind = type(a)
    if kind is not type(b):
        sequences = (list, tuple)
        return kind in sequences and type(b) in sequences and _sequences_equal(a, b)
    if kind is dict:
        return a.keys() == b.keys() and all(json_equal(value, b[key]) for key, value in a.items())
    if kind is list or kind is tuple:
        return _sequences_equal(a, b)
    return bool(a == b)


def _sequences_equal(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))


# --- right sides, paths and actions ---


def compile_rhs(rhs: Rhs, defining: str | None) -> RhsFn:
    """The values of a right side, as a function of (object, bindings, element): a literal; a path's values
    in the object; a variable path's values under each of its bindings, or under ``element`` when the
    variable is the one being defined (``$x := … | $x.a == $x.b``: each element against itself)."""
    if isinstance(rhs, Literal):
        constant = [rhs.value]
        return lambda obj, bindings, element: constant
    steps, var = compile_steps(rhs.steps), rhs.var
    if var is None:
        return lambda obj, bindings, element: values(obj, steps)
    if var == defining:
        return lambda obj, bindings, element: values(element, steps)
    return lambda obj, bindings, element: [value for _, node in bindings[var] for value in values(node, steps)]


def rhs_values(rhs: Rhs, obj: Any, bindings: Bindings) -> list[Any]:
    """The values a right side gives for an object and its bindings."""
    return compile_rhs(rhs, None)(obj, bindings, None)


def _locator(path: Path) -> Callable[[Any, Bindings], list[Match]]:
    steps, var = compile_steps(path.steps), path.var
    if var is None:
        return lambda obj, bindings: locate(obj, steps)
    return lambda obj, bindings: [match for where, node in bindings[var] for match in locate(node, steps, where)]


def targets(path: Path, bindings: Bindings) -> Targets:
    """Where an action's path points: itself, or once per binding of the variable it starts with."""
    steps = compile_steps(path.steps)
    if path.var is None:
        return [((), steps)]
    return [(where, steps) for where, _ in bindings[path.var]]


def compile_action(action: Action) -> ActFn | None:
    """The action as a function of (object, bindings) returning how many targets it counted; None: delete."""
    if isinstance(action, Delete):
        return None
    path = action.path
    constant = targets(path, _NO_BINDINGS) if path.var is None else None

    def targets_of(bindings: Bindings) -> Targets:
        return constant if constant is not None else targets(path, bindings)

    if not isinstance(action, Modify):
        return lambda obj, bindings: _remove_counted(obj, targets_of(bindings))
    rhs, shown = compile_rhs(action.rhs, None), str(action.rhs)

    def modify(obj: Any, bindings: Bindings) -> int:
        found = rhs(obj, bindings, None)
        if len(found) != 1:
            raise PathError(f"its right side {shown} gives {len(found)} values, and modify needs exactly one")
        value, where = copy_value(found[0]), targets_of(bindings)
        for base, steps in where:
            assign(obj, base, steps, value)
        return len(where)

    return modify


def _remove_counted(obj: Any, where: Targets) -> int:
    remove(obj, where)
    return len(where)
