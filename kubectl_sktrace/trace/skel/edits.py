"""Removing and setting fields of one decoded object, in place. Pure.

Writing never copies an object: a tuple (msgpack's ``use_list=False``) on the way to a write is replaced by
a list in its parent, which msgpack writes the same way. Values written are copied when they are lists or
maps, so that no two places of an object share one.

Where SimKube differs (``docs/spec.md``, SKEL transformations): removing what is not there leaves the object
alone, where SimKube fails on a list index past the end or a field inside a scalar; ``[*]`` in a modify
target sets every element that exists, where SimKube refuses it; ``[N]`` one past a list's end appends.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from kubectl_sktrace.trace.skel.paths import MISSING, CStep, Location

Removal = tuple[Location, Any, CStep]
"""A child to remove: its parent's location, the parent, and the child's step."""


class EditError(Exception):
    """A write that cannot be done: the message says why, the engine adds the command and the object."""


def step_to(key: str | int) -> CStep:
    """The step that reaches one element of a location."""
    return (str(key), key, False, True) if isinstance(key, int) else (key, None, False, False)


def remove_children(root: Any, removals: Iterable[Removal]) -> None:
    """Remove each child that is there. A map's field goes at once; a list's elements go after all were
    found, from the last to the first, so that every index refers to the list as the command found it."""
    pending: dict[Location, list[CStep]] = {}
    for where, parent, step in removals:
        if type(parent) is dict:
            if not step[2]:
                parent.pop(step[0], None)
        elif type(parent) is list or type(parent) is tuple:
            pending.setdefault(where, []).append(step)
    for where, steps in pending.items():
        container = writable(root, where)
        if type(container) is dict:
            for key, _, wild, _ in steps:
                if not wild:
                    container.pop(key, None)
        elif any(step[2] for step in steps):
            container.clear()
        else:
            for index in sorted({i for _, i, _, _ in steps if i is not None and i < len(container)}, reverse=True):
                del container[index]


def remove_at(root: Any, locations: Iterable[Location]) -> None:
    """Remove the values at these locations (found in the object as it is): list elements from the last to
    the first, so that every index refers to the list as the command found it."""
    groups: dict[Location, list[Any]] = {}
    for where in locations:
        if where:
            groups.setdefault(where[:-1], []).append(where[-1])
    for parent_at, keys in groups.items():
        parent = writable(root, parent_at)
        if type(parent) is dict:
            for key in keys:
                parent.pop(key, None)
        else:
            for index in sorted(set(keys), reverse=True):
                del parent[index]


def assign(root: Any, base: Location, steps: Sequence[CStep], value: Any) -> None:
    """Set what the steps reach from ``base`` (which exists) to a copy of ``value``: replace it, or add it
    and any missing parents (a map; a list where the next step is ``[0]``); at ``[*]``, every element that
    exists. EditError when it cannot be done: a field inside a scalar, an index past a list's end."""
    if not steps:
        if not base:
            raise EditError("it cannot replace the whole object")
        _put(writable(root, base[:-1]), step_to(base[-1]), value)
        return
    _assign_in(writable(root, base), steps, value)


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
        if node is MISSING:
            return
    _put(node, steps[-1], value)


def _child_for_write(node: Any, step: CStep, next_step: CStep) -> Any:
    """The child to go on into, made when missing; MISSING when it is missing and ``[*]`` follows: no list,
    no element to set, nothing is made."""
    key, index, _, _ = step
    kind = type(node)
    if kind is dict:
        child = node.get(key, MISSING)
        if child is MISSING and next_step[2]:
            return MISSING
        if child is MISSING:
            child = node[key] = _new_parent(next_step)
        elif type(child) is tuple:
            child = node[key] = list(child)
        return child
    if kind is list and index is not None and index <= len(node):
        if index == len(node):
            if next_step[2]:
                return MISSING
            node.append(_new_parent(next_step))
        elif type(node[index]) is tuple:
            node[index] = list(node[index])
        return node[index]
    raise EditError(_cannot(node, key))


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
        raise EditError(_cannot(node, key))


def _new_parent(next_step: CStep) -> Any:
    """A missing parent, made for the step after it: a list for ``[0]``, else a map."""
    return [] if next_step[3] and next_step[1] == 0 else {}


def _cannot(node: Any, key: str) -> str:
    if type(node) is list:
        return f"index {key} is past the end of a list of {len(node)}" if key.isdigit() else f"it cannot set field '{key}' in a list"
    return f"it cannot set '{key}' inside {_describe(node)}"


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    return {str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(type(value), "a value")


def writable(root: Any, where: Location) -> Any:
    """The node at ``where`` (which exists), each tuple on the way replaced by a list in its parent."""
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
