"""Whether an object passes a command's tests, and what the tests bind its variables to. Pure.

As SimKube's ``engine.rs`` evaluates tests:

- A path with ``[*]`` reaches many values; ``==``, ``!=`` and the orderings hold when any value reached
  holds against the right side: equal to one of its values (``==``), different from all (``!=``), ordered
  against one (``<`` …). A missing field holds for neither ``==`` nor ``!=``.
- Equality is exact JSON equality: ``1`` is not ``1.0`` nor ``true``; a list equals a list (or a tuple).
- ``$x := PATH | TEST`` binds ``$x`` to each element of PATH for which TEST holds, in document order, and
  holds when one does. ``!exists`` holds when no element has the field, and then binds every element.

Where we differ, to fix a crash or a wrong result (``docs/spec.md``): ``<``, ``<=``, ``>``, ``>=`` compare
numbers, and any other value never satisfies them (SimKube crashes on any field that exists); a right side
that reaches nothing makes neither ``==`` nor ``!=`` hold (SimKube fails on a plain path, and lets ``!=``
hold for a variable's); ``$y := $x.…`` ranges over ``$x``'s elements (SimKube looks for a field named
``$x``); ``$x := … | $x.a == $x.b`` compares each element with itself (SimKube panics); ``!exists`` binds;
an element is bound once however many of its values hold (SimKube binds it once per value).
"""

from __future__ import annotations

import operator
from typing import Any, Callable

from kubectl_sktrace.trace.skel.nodes import Literal, Op, Path, ResourceTest, Rhs, Test, TimeTest, VarDef
from kubectl_sktrace.trace.skel.paths import Match, compile_any, compile_filter, compile_locate, compile_steps, compile_values

Bindings = dict[str, list[Match]]
"""For one object: a variable's name -> the ``(location, value)`` of each element it is bound to; and a
variable's path from the root, by pointer -> what it reaches, kept until an action may change that."""
TestFn = Callable[[Any, int, Bindings], bool]
RhsFn = Callable[[Any, Bindings, Any], list[Any]]

_ORDER: dict[Op, Callable[[Any, Any], bool]] = {
    Op.EQ: operator.eq, Op.NE: operator.ne, Op.LT: operator.lt, Op.LE: operator.le, Op.GT: operator.gt, Op.GE: operator.ge,
}


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
    check, rhs = _checker(test, None)
    if rhs is None:
        return check  # the generated function is the test: (object, ts, unused)
    rights_of = rhs

    def compare(obj: Any, ts: int, bindings: Bindings) -> bool:
        rights = rights_of(obj, bindings, None)
        return bool(rights) and check(obj, ts, rights)

    return compare


def _checker(test: ResourceTest, defining: str | None) -> tuple[Callable[..., bool], RhsFn | None]:
    """The compiled test on what its path reaches, ``f(node, ts, rights)``, and the right side's values
    when it has a path there (None: no right side, or a literal compiled into ``f``)."""
    condition, constants, rhs = _condition(test, defining)
    found = test.op is not Op.NOT_EXISTS or defining is not None  # a variable's element is checked for the field
    return compile_any(compile_steps(test.path.steps), condition, constants, found=found), rhs


def _condition(test: ResourceTest, defining: str | None) -> tuple[str, dict[str, Any], RhsFn | None]:
    """Python for the test on one value ``v`` (``arg``: the right side's values), and the right side."""
    if test.op in (Op.EXISTS, Op.NOT_EXISTS):
        return "True", {}, None
    assert test.rhs is not None
    if isinstance(test.rhs, Literal):
        value = test.rhs.value
        literal: dict[str, Any] = {"VALUE": value, "TYPE": type(value)}
        if test.op is Op.EQ:
            return "type(v) is TYPE and v == VALUE", literal, None
        if test.op is Op.NE:
            return "not (type(v) is TYPE and v == VALUE)", literal, None
        return f"(type(v) is int or type(v) is float) and v {test.op.value} VALUE", literal, None
    rhs = compile_rhs(test.rhs, defining)
    constants: dict[str, Any] = {"holds_one": holds_one, "OP": test.op, "CONTAINERS": (dict, list, tuple)}
    if test.op is Op.EQ:  # a scalar not in the list by Python's == is not there by JSON's either: no call
        return "(v in arg or type(v) in CONTAINERS) and holds_one(OP, v, arg)", constants, rhs
    if test.op is Op.NE:
        return "(v not in arg and type(v) not in CONTAINERS) or holds_one(OP, v, arg)", constants, rhs
    return "holds_one(OP, v, arg)", constants, rhs


def _variable_test(test: ResourceTest, var: VarDef) -> TestFn:
    name, not_exists = var.name, test.op is Op.NOT_EXISTS
    elements_of, pointer = compile_elements(var.path), var.path.pointer if var.path.var is None else None
    condition, constants, rights_of = _condition(test, name)
    keep = compile_filter(compile_steps(test.path.steps), condition, constants)
    per_element = isinstance(test.rhs, Path) and test.rhs.var == name

    def bind(obj: Any, ts: int, bindings: Bindings) -> bool:
        elements = bindings.get(pointer) if pointer else None  # found before, while the object is unchanged
        if elements is None:
            elements = elements_of(obj, bindings)
            if pointer:
                bindings[pointer] = elements
        if rights_of is None:
            bound = keep(elements, ts, None)
        elif per_element:
            bound = [match for match in elements if (rights := rights_of(obj, bindings, match[1])) and keep([match], ts, rights)]
        else:
            rights = rights_of(obj, bindings, None) if elements else []
            bound = keep(elements, ts, rights) if rights else []
        if not_exists:
            if bound:
                return False
            bindings[name] = elements
            return True
        if not bound:
            return False
        bindings[name] = bound
        return True

    return bind


def compile_elements(path: Path) -> Callable[[Any, Bindings], list[Match]]:
    """What a variable's path reaches, as ``(location, value)``: from the root, or from each binding of the
    variable at its head. (A variable test keeps what a path from the root reached in the bindings, under
    the path's pointer, until an action may change it: the engine drops it then.)"""
    locate, var = compile_locate(compile_steps(path.steps)), path.var
    if var is None:
        return lambda obj, bindings: locate(obj, ())
    return lambda obj, bindings: [match for where, node in bindings[var] for match in locate(node, where)]


def compile_rhs(rhs: Rhs, defining: str | None) -> RhsFn:
    """The values of a right side, as a function of (object, bindings, element): a literal; a path's values
    in the object; a variable path's values under each of its bindings, or under ``element`` when the
    variable is the one being defined (``$x := … | $x.a == $x.b``: each element against itself)."""
    if isinstance(rhs, Literal):
        constant = [rhs.value]
        return lambda obj, bindings, element: constant
    values_of, var = compile_values(compile_steps(rhs.steps)), rhs.var
    if var is None:
        return lambda obj, bindings, element: values_of(obj)
    if var == defining:
        return lambda obj, bindings, element: values_of(element)
    return lambda obj, bindings, element: [value for _, node in bindings[var] for value in values_of(node)]


def rhs_values(rhs: Rhs, obj: Any, bindings: Bindings) -> list[Any]:
    """The values a right side gives for an object and its bindings."""
    return compile_rhs(rhs, None)(obj, bindings, None)


def holds_one(op: Op, left: Any, rights: list[Any]) -> bool:
    """Whether one left value holds against the right side's values (see the module's rules)."""
    if op is Op.EQ:
        return any(json_equal(left, right) for right in rights)
    if op is Op.NE:
        return not any(json_equal(left, right) for right in rights)
    order = _ORDER[op]
    return is_number(left) and any(is_number(right) and order(left, right) for right in rights)


def is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float


def json_equal(a: Any, b: Any) -> bool:
    """Exact JSON equality: same type (lists and tuples alike), same value; ``1`` differs from ``1.0`` and ``true``."""
    kind = type(a)
    if kind is not type(b):
        sequences = (list, tuple)
        return kind in sequences and type(b) in sequences and _sequences_equal(a, b)
    if kind is dict:
        return bool(a.keys() == b.keys()) and all(json_equal(value, b[key]) for key, value in a.items())
    if kind is list or kind is tuple:
        return _sequences_equal(a, b)
    return bool(a == b)


def _sequences_equal(a: Any, b: Any) -> bool:
    return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
