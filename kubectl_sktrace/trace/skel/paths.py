"""Reading, setting and removing what a path reaches in one decoded object. Pure; mutates in place.

Objects are decoded JSON or msgpack: dicts, lists or tuples (msgpack's ``use_list=False``), strings,
numbers, booleans and None. Steps arrive compiled as ``(key, index, wild, bracket)`` tuples (``compile_steps``):
a key reads a dict's field, or a list's element when the key is also an index, as a JSON pointer does;
``wild`` (``[*]``) reads every element of a list and nothing of anything else. A location is the concrete
way to a value: a tuple of dict keys and list indexes.

Writing never copies an object: a tuple on the way to a write is replaced by a list in its parent (msgpack
writes both the same way). Values written are copied when they are lists or maps, so that no two places
of an object share one. What SimKube does differently here, and why, is in ``docs/spec.md`` (SKEL
transformations): a removal that reaches nothing leaves the object alone, where SimKube fails on a list
index past the end or a field inside a scalar; ``[*]`` in a modify target sets every element that exists,
where SimKube refuses it.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from kubectl_sktrace.trace.skel.nodes import Step

CStep = tuple[str, "int | None", bool, bool]
Location = tuple["str | int", ...]
Match = tuple[Location, Any]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""What ``get`` returns where the path reaches nothing (None is JSON null, a value)."""


class PathError(Exception):
    """A write that cannot be done: the message says why, the engine adds the command and the object."""


def compile_steps(steps: Iterable[Step]) -> tuple[CStep, ...]:
    return tuple((step.key, step.index, step.wild, step.bracket) for step in steps)


def get(node: Any, steps: Sequence[CStep]) -> Any:
    """The value a path without ``[*]`` reaches, or MISSING."""
    for key, index, _, _ in steps:
        kind = type(node)
        if kind is dict:
            node = node.get(key, MISSING)
            if node is MISSING:
                return MISSING
        elif (kind is list or kind is tuple) and index is not None and index < len(node):
            node = node[index]
        else:
            return MISSING
    return node


def values(node: Any, steps: Sequence[CStep]) -> list[Any]:
    """Every value the path reaches, in document order."""
    frontier = [node]
    for key, index, wild, _ in steps:
        reached: list[Any] = []
        for item in frontier:
            kind = type(item)
            if wild:
                if kind is list or kind is tuple:
                    reached.extend(item)
            elif kind is dict:
                child = item.get(key, MISSING)
                if child is not MISSING:
                    reached.append(child)
            elif (kind is list or kind is tuple) and index is not None and index < len(item):
                reached.append(item[index])
        if not reached:
            return reached
        frontier = reached
    return frontier


def locate(node: Any, steps: Sequence[CStep], base: Location = ()) -> list[Match]:
    """Every ``(location, value)`` the path reaches from ``node`` (found at ``base``), in document order."""
    frontier: list[Match] = [(base, node)]
    for key, index, wild, _ in steps:
        reached: list[Match] = []
        for where, item in frontier:
            kind = type(item)
            if wild:
                if kind is list or kind is tuple:
                    reached.extend(((*where, i), child) for i, child in enumerate(item))
            elif kind is dict:
                child = item.get(key, MISSING)
                if child is not MISSING:
                    reached.append(((*where, key), child))
            elif (kind is list or kind is tuple) and index is not None and index < len(item):
                reached.append(((*where, index), item[index]))
        if not reached:
            return reached
        frontier = reached
    return frontier


def remove(root: Any, targets: Sequence[tuple[Location, Sequence[CStep]]]) -> None:
    """Remove what each target (a location, then steps from there) reaches; what is not there is skipped.

    All targets are found first and then removed, list elements from the last to the first, so that the
    indexes of one command's targets all refer to the object as the command found it."""
    if len(targets) == 1 and _remove_field_fast(root, *targets[0]):
        return
    groups: dict[Location, list[CStep]] = {}
    for base, steps in targets:
        if not steps:
            if base:
                groups.setdefault(base[:-1], []).append(_step_to(base[-1]))
            continue
        start = get(root, [_step_to(k) for k in base])
        for parent, _ in locate(start, steps[:-1], base):
            groups.setdefault(parent, []).append(steps[-1])
    for parent, lasts in groups.items():
        _remove_in(_writable(root, parent), lasts)


def _remove_field_fast(root: Any, base: Location, steps: Sequence[CStep]) -> bool:
    """The common case, a field of a map found without ``[*]``: removed here, True; False: not this case."""
    if not steps or any(step[2] for step in steps):
        return False
    parent = get(root, [_step_to(k) for k in base] + list(steps[:-1]))
    if parent is MISSING:
        return True
    if type(parent) is not dict:
        return False
    parent.pop(steps[-1][0], None)
    return True


def _remove_in(container: Any, lasts: list[CStep]) -> None:
    if type(container) is dict:
        for key, _, wild, _ in lasts:
            if not wild:
                container.pop(key, None)
    elif type(container) is list:
        if any(step[2] for step in lasts):
            container.clear()
            return
        for index in sorted({step[1] for step in lasts if step[1] is not None and step[1] < len(container)}, reverse=True):
            del container[index]


def assign(root: Any, base: Location, steps: Sequence[CStep], value: Any) -> None:
    """Set what the steps reach from ``base`` to a copy of ``value``: replace it, or add it and any missing
    parents (a map, or a list when the next step is ``[0]``); at ``[*]``, every element that exists.
    PathError when it cannot be done: a field inside a scalar, an index past a list's end."""
    if not steps:
        if not base:
            raise PathError("cannot replace the whole object")
        _put(_writable(root, base[:-1]), _step_to(base[-1]), value)
        return
    _assign_in(_writable(root, base), steps, value)


def _assign_in(node: Any, steps: Sequence[CStep], value: Any) -> None:
    for position in range(len(steps) - 1):
        step = steps[position]
        if step[2]:
            if type(node) is list:
                for i, child in enumerate(node):
                    if type(child) is tuple:
                        child = node[i] = list(child)
                    _assign_in(child, steps[position + 1 :], value)
            return
        node = _child_for_write(node, step, steps[position + 1])
    _put(node, steps[-1], value)


def _child_for_write(node: Any, step: CStep, next_step: CStep) -> Any:
    key, index, _, _ = step
    kind = type(node)
    if kind is dict:
        child = node.get(key, MISSING)
        if child is MISSING:
            child = node[key] = _new_parent(next_step)
        elif type(child) is tuple:
            child = node[key] = list(child)
        return child
    if kind is list and index is not None and index <= len(node):
        if index == len(node):
            node.append(_new_parent(next_step))
        elif type(node[index]) is tuple:
            node[index] = list(node[index])
        return node[index]
    raise PathError(_cannot(node, key))


def _put(node: Any, step: CStep, value: Any) -> None:
    key, index, wild, _ = step
    kind = type(node)
    if wild:
        if kind is list:
            node[:] = [copy_value(value) for _ in node]
    elif kind is dict:
        node[key] = copy_value(value)
    elif kind is list and index is not None and index <= len(node):
        if index == len(node):
            node.append(copy_value(value))
        else:
            node[index] = copy_value(value)
    else:
        raise PathError(_cannot(node, key))


def _cannot(node: Any, key: str) -> str:
    if type(node) is list:
        return f"index {key} is past the end of a list of {len(node)}" if key.isdigit() else f"cannot set field '{key}' in a list"
    return f"cannot set '{key}' inside {_describe(node)}"


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    return {str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(type(value), "a value")


def _new_parent(next_step: CStep) -> Any:
    """A missing parent, made for the step after it: a list for ``[0]``, else a map."""
    return [] if next_step[3] and next_step[1] == 0 else {}


def _step_to(key: str | int) -> CStep:
    """The step that follows one element of a location."""
    return (str(key), key, False, True) if isinstance(key, int) else (key, None, False, False)


def _writable(root: Any, where: Location) -> Any:
    """The node at ``where`` (which exists), with each tuple on the way replaced by a list in its parent."""
    node = root
    for key in where:
        child = node[key]
        if type(child) is tuple:
            child = node[key] = list(child)
        node = child
    return node


def copy_value(value: Any) -> Any:
    """``value`` itself when a scalar, else a copy of its lists and maps (tuples become lists)."""
    kind = type(value)
    if kind is dict:
        return {k: copy_value(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [copy_value(v) for v in value]
    return value
