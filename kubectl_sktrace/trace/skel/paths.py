"""Reading an object along a path, compiled once per path into a small Python function. Pure.

Objects are decoded JSON or msgpack: dicts, lists or tuples (msgpack's ``use_list=False``), strings,
numbers, booleans and None. A path's steps arrive as ``(key, index, wild, bracket)`` tuples
(``compile_steps``): a key reads a dict's field, or a list's element when the key is also an index, as a
JSON pointer does (``.0`` and ``[0]`` alike; ``[0]`` on a map reads the key ``"0"``); ``wild`` (``[*]``)
reads every element of a list and nothing of anything else. A location is the concrete way to a value: a
tuple of dict keys and list indexes.

Why generated code: a transform applies every command to every object of a trace, and most commands find
nothing; an interpreter walking step tuples spends its time in calls, not in the object. Each path is
therefore written out once as straight Python (nested loops for ``[*]``), in four forms: does some value
satisfy a condition (``compile_any``), which of many nodes have one (``compile_filter``), all values
(``compile_values``), all ``(location, value)`` (``compile_locate``). Keys and values from a program enter
the generated text only as names of constants bound at compile time, never as code, so a program cannot
inject any; the conditions are written by ``matching``.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Iterable, Sequence

from kubectl_sktrace.trace.skel.nodes import MAX_WILDCARDS, Step

CStep = tuple[str, "int | None", bool, bool]
Location = tuple["str | int", ...]
Match = tuple[Location, Any]
_NAMES = itertools.count()


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""Where a path reaches nothing (None is JSON null, a value)."""


def compile_steps(steps: Iterable[Step]) -> tuple[CStep, ...]:
    return tuple((step.key, step.index, step.wild, step.bracket) for step in steps)


def element(node: Any, key: str, index: int) -> tuple[Any, str | int]:
    """A step that is both a field name and an index: the child and its location element, or MISSING."""
    kind = type(node)
    if kind is dict:
        return node.get(key, MISSING), key
    if (kind is list or kind is tuple) and index < len(node):
        return node[index], index
    return MISSING, index


def compile_any(steps: Sequence[CStep], condition: str, constants: dict[str, Any], *, found: bool = True) -> Callable[..., bool]:
    """``f(node, ts, arg)``: ``found`` if some value ``v`` the path reaches from ``node`` makes ``condition``
    (Python over ``v``, ``arg`` and ``constants``) true, else ``not found``. With ``ts`` and ``arg`` unused
    it is a test on an object as the engine calls one."""
    walk: Callable[..., bool] = _build(steps, "node, ts, arg", f"if {condition}: return {found}", f"return {not found}", constants, False)
    return walk


def compile_filter(steps: Sequence[CStep], condition: str, constants: dict[str, Any]) -> Callable[[list[Match], int, Any], list[Match]]:
    """``f(matches, ts, arg)``: the ``(location, node)`` matches from whose node the path reaches a value
    ``v`` that makes ``condition`` true; one call for them all where the path has no ``[*]``."""
    if any(step[2] for step in steps):
        any_value = compile_any(steps, condition, constants)
        return lambda matches, ts, arg: [match for match in matches if any_value(match[1], ts, arg)]
    names = dict(constants, MISSING=MISSING, element=element)
    lines = ["def keep(matches, ts, arg):", "    out = []", "    for match in matches:", "        v = match[1]"]
    for number, (key, index, _, _) in enumerate(steps):
        names[f"K{number}"] = key
        reach = f"v.get(K{number}, MISSING) if type(v) is dict else MISSING" if index is None else f"element(v, K{number}, {index})[0]"
        lines += [f"        v = {reach}", "        if v is MISSING: continue"]
    lines += [f"        if {condition}: out.append(match)", "    return out"]
    exec(compile("\n".join(lines), f"<skel path {next(_NAMES)}>", "exec"), names)  # our own text; keys are constants
    keep: Callable[[list[Match], int, Any], list[Match]] = names["keep"]
    return keep


def compile_values(steps: Sequence[CStep]) -> Callable[[Any], list[Any]]:
    """``f(node)``: every value the path reaches from ``node``, in document order."""
    walk: Callable[[Any], list[Any]] = _build(steps, "node", "out.append(v)", "return out", {}, False)
    return walk


def compile_locate(steps: Sequence[CStep]) -> Callable[[Any, Location], list[Match]]:
    """``f(node, base)``: every ``(location, value)`` the path reaches from ``node``, found at ``base``."""
    walk: Callable[[Any, Location], list[Match]] = _build(steps, "node, base", "out.append((where, v))", "return out", {}, True)
    return walk


def _build(steps: Sequence[CStep], params: str, reach: str, final: str, constants: dict[str, Any], track: bool) -> Any:
    if sum(1 for step in steps if step[2]) > MAX_WILDCARDS:
        raise ValueError(f"a path may hold at most {MAX_WILDCARDS} [*]")
    names = dict(constants, MISSING=MISSING, element=element)
    lines = [f"def walk({params}):"]
    if reach.startswith("out."):
        lines.append("    out = []")
    node, parts, depth, loops = "node", [], 1, 0
    counter = itertools.count()
    for key, index, wild, _ in steps:
        child, give_up = f"n{next(counter)}", ("continue" if loops else final)
        pad = "    " * depth
        if wild:
            position = f"i{next(counter)}"
            lines += [f"{pad}if type({node}) is not list and type({node}) is not tuple: {give_up}",
                      f"{pad}for {position}, {child} in enumerate({node}):"]
            parts.append(position)
            depth, loops = depth + 1, loops + 1
        else:
            constant = f"K{next(counter)}"
            names[constant] = key
            if index is None:
                lines.append(f"{pad}{child} = {node}.get({constant}, MISSING) if type({node}) is dict else MISSING")
                parts.append(constant)
            else:
                part = f"p{next(counter)}"
                lines.append(f"{pad}{child}, {part} = element({node}, {constant}, {index})")
                parts.append(part)
            lines.append(f"{pad}if {child} is MISSING: {give_up}")
        node = child
    pad = "    " * depth
    if track:
        lines.append(f"{pad}where = base + ({''.join(p + ', ' for p in parts)})")
    lines += [f"{pad}v = {node}", f"{pad}{reach}", f"    {final}"]
    exec(compile("\n".join(lines), f"<skel path {next(_NAMES)}>", "exec"), names)  # our own text; keys are constants
    return names["walk"]
