"""Applying a parsed SKEL program to trace events, one event at a time, with SimKube's semantics. Pure.

Each command, in order, is applied to every object of ``applied_objs`` and ``deleted_objs``: when its tests
all hold (in order, stopping at the first that fails), ``delete`` drops the object, ``remove`` and
``modify`` change it (``actions``). An event left with no object is dropped (``apply`` returns None); one that
came with none is kept (SimKube's ``process_trace`` drops it too, which moves the start of a trace whose window
began empty: an export's first event is the state at the window's start, empty or not); its other keys are kept. The event is changed
in place and nothing is kept between events but the two counters, so a trace of any length streams through.

The counters count as SimKube counts: ``events_matched`` once per object a command's selector matched (its
"trace events matched" counts objects, not events), ``resources_modified`` once per target of a remove or
modify (``actions``); ``delete`` modifies nothing.

Speed, without changing any result: commands that begin with the same test, one after another, share its
outcome while no action runs in between (the object is unchanged): when it fails they are all skipped, when
it holds it is not tested again. A block of commands behind one cheap guard costs that test on the objects
it does not concern; the built-in ``sanitize`` is written that way. What a variable's path reaches from the
root is found once per object and kept until an action changes a part of the object it could reach.
"""

from __future__ import annotations

from typing import Any, Sequence

from kubectl_sktrace.errors import SktraceError
from kubectl_sktrace.trace.skel.actions import ActFn, compile_action
from kubectl_sktrace.trace.skel.edits import EditError
from kubectl_sktrace.trace.skel.matching import Bindings, TestFn, compile_test
from kubectl_sktrace.trace.skel.nodes import Command, Delete, Path, Program, ResourceTest, Step


class SkelTransformError(SktraceError):
    """A command that cannot apply to an object: names the command, where it is written, and the object."""


class Transformer:
    """A program made ready for one trace (relative times counted from ``start_ts``): ``apply`` each event."""

    def __init__(self, program: Program, *, start_ts: int) -> None:
        self.program = program
        self.start_ts = start_ts
        self.events_matched = 0
        self.resources_modified = 0
        self._plan = _plan(program.commands, start_ts)

    def apply(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """The event transformed in place, or None when it holds no object any more."""
        ts = event["ts"]
        held = alive = False
        for key in ("applied_objs", "deleted_objs"):
            objs = event.get(key)
            if not objs:
                continue
            kept = [obj for obj in objs if self._keep(obj, ts)]
            if len(kept) != len(objs):
                event[key] = kept
            held, alive = True, alive or bool(kept)
        return event if alive or not held else None

    def _keep(self, obj: Any, ts: int) -> bool:
        """Apply every command to one object; False when one deletes it."""
        plan, number, end = self._plan, 0, len(self._plan)
        bindings: Bindings = {}
        held = -1  # the last command whose first test held, with no action since
        try:
            while number < end:
                first, others, act, skip, same_first, stale = plan[number]
                if first is not None and not (same_first and held == number - 1) and not first(obj, ts, bindings):
                    number = skip
                    continue
                held, number = number, number + 1
                if others is None or others(obj, ts, bindings):
                    self.events_matched += 1
                    if act is None:
                        return False
                    self.resources_modified += act(obj, bindings)
                    held = -1
                    for pointer in stale:
                        bindings.pop(pointer, None)
        except EditError as error:
            command = self.program.commands[number - 1]
            raise SkelTransformError(
                f"{self.program.source}:{command.line}: {command.text} cannot apply to {describe_object(obj)}: {error}"
            ) from None
        return True


_Compiled = tuple["TestFn | None", "TestFn | None", "ActFn | None", int, bool, tuple[str, ...]]
"""A command made ready: its first test and the others (None: none), its action (None: delete), where to go
on when its first test fails (past the commands after it that begin with the same test), whether it begins
with the same test as the command before it, and the kept paths its action may make stale (by pointer)."""


def _plan(commands: Sequence[Command], start_ts: int) -> tuple[_Compiled, ...]:
    kept = {t.var.path.pointer: t.var.path for c in commands for t in c.selector
            if isinstance(t, ResourceTest) and t.var is not None and t.var.path.var is None}
    plan = []
    for number, command in enumerate(commands):
        tests = [compile_test(test, start_ts=start_ts) for test in command.selector]
        skip = number + 1
        while skip < len(commands) and command.selector and commands[skip].selector[:1] == command.selector[:1]:
            skip += 1
        same_first = number > 0 and bool(command.selector) and commands[number - 1].selector[:1] == command.selector[:1]
        stale = () if isinstance(command.action, Delete) else _stale(command, kept)
        plan.append((tests[0] if tests else None, _all_of(tests[1:]), compile_action(command.action), skip, same_first, stale))
    return tuple(plan)


def _stale(command: Command, kept: dict[str, Path]) -> tuple[str, ...]:
    """The kept paths an action of this command may change: all but those that part from its target's path
    at a field of another name (what lies under another field is neither moved nor replaced)."""
    assert not isinstance(command.action, Delete)
    target = _steps_from_root(command.action.path, command)
    return tuple(pointer for pointer, path in kept.items() if not _part(target, path.steps))


def _steps_from_root(path: Path, command: Command) -> tuple[Step, ...]:
    """A path's steps from the object's root: a variable's own path resolved through its definition."""
    if path.var is None:
        return path.steps
    var = next(t.var for t in command.selector if isinstance(t, ResourceTest) and t.var and t.var.name == path.var)
    return _steps_from_root(var.path, command) + path.steps


def _part(a: tuple[Step, ...], b: tuple[Step, ...]) -> bool:
    """Whether two paths part at a field: then neither reaches into the other's part of any object."""
    return any(not x.wild and not y.wild and x.key != y.key for x, y in zip(a, b))


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


def describe_object(obj: Any) -> str:
    """``Kind namespace/name`` from the object's own fields, as far as it has them."""
    fields: dict[str, Any] = obj if isinstance(obj, dict) else {}
    meta = fields.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name = "/".join(str(meta[key]) for key in ("namespace", "name") if meta.get(key))
    return " ".join(part for part in (str(fields.get("kind") or "object"), name) if part)
