"""What a command does to an object its selector matched: remove or modify what its path reaches. Pure.

An action's path points at one place, or, when it starts with a variable, at the rest of the path from each
element the variable is bound to. The count an action returns is SimKube's "resources modified": one per
such target, whether or not anything was there (``remove(status)`` counts every object it is applied to),
and a ``[*]`` inside the path does not multiply it. ``modify`` needs exactly one value on its right, read
before anything is written, as SimKube reads it.
"""

from __future__ import annotations

from typing import Any, Callable

from kubectl_sktrace.trace.skel.edits import EditError, assign, copy_value, remove_at, remove_children
from kubectl_sktrace.trace.skel.matching import Bindings, compile_rhs
from kubectl_sktrace.trace.skel.nodes import Action, Delete, Modify, Path
from kubectl_sktrace.trace.skel.paths import Match, compile_locate, compile_steps

ActFn = Callable[[Any, Bindings], int]


def targeter(path: Path) -> Callable[[Any, Bindings], list[Match]]:
    """Where an action's path starts in an object, as ``(location, node)``: the object itself, or each
    element its variable is bound to; the path's steps go on from there."""
    var = path.var
    if var is None:
        return lambda obj, bindings: [((), obj)]
    return lambda obj, bindings: bindings[var]


def compile_action(action: Action) -> ActFn | None:
    """The action as a function of (object, bindings) returning how many targets it counted; None: delete."""
    if isinstance(action, Delete):
        return None
    if isinstance(action, Modify):
        return _modify(action)
    targets_of, steps = targeter(action.path), compile_steps(action.path.steps)
    if not steps:  # remove($x): the bound elements themselves

        def remove_bound(obj: Any, bindings: Bindings) -> int:
            found = targets_of(obj, bindings)
            remove_at(obj, [where for where, _ in found])
            return len(found)

        return remove_bound
    parents_of, last = compile_locate(steps[:-1]), steps[-1]

    def remove_path(obj: Any, bindings: Bindings) -> int:
        found = targets_of(obj, bindings)
        remove_children(obj, [(where, parent, last) for base, node in found for where, parent in parents_of(node, base)])
        return len(found)

    return remove_path


def _modify(action: Modify) -> ActFn:
    targets_of, steps = targeter(action.path), compile_steps(action.path.steps)
    rhs, shown = compile_rhs(action.rhs, None), str(action.rhs)

    def modify(obj: Any, bindings: Bindings) -> int:
        found = rhs(obj, bindings, None)
        if len(found) != 1:
            raise EditError(f"its right side {shown} gives {len(found)} values, and modify needs exactly one")
        value, targets = copy_value(found[0]), targets_of(obj, bindings)
        for base, _ in targets:
            assign(obj, base, steps, value)
        return len(targets)

    return modify
