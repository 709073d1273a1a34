"""What a SKEL program probably got wrong, as warnings: SimKube's semantics are kept, the program runs as written.
Pure; reads only the built-in types' fields (``apischema``: ``apifields.json``).

Three mistakes that SKEL accepts silently, each a warning naming the file and the command's line:

- a bare word on the right of a test or an assignment is a path (``metadata.namespace == shop`` compares with the
  object's field ``shop``), and when no built-in type has a top-level field of that name it is most likely text whose
  quotes were forgotten;
- a value whose type the API contradicts (``modify(spec.replicas = "3")`` writes a string where every built-in type
  with that path holds an integer; a test ``spec.replicas == "3"`` never holds): only where every built-in type that
  has the path agrees on a scalar type, so a field that is an integer in one kind and a string in another is left alone;
- a label or annotation key written with dots (``metadata.labels.quokkasoft.io``) is two steps, which build nested
  maps: the key is one step, quoted (``metadata.labels."quokkasoft.io"``).
"""

from __future__ import annotations

import functools
from typing import Iterator

from kubectl_sktrace.trace.anonymizing.apischema import schema
from kubectl_sktrace.trace.skel.nodes import Command, Literal, Modify, Path, Program, Remove, ResourceTest, Step

_SCALARS = {"int": "an integer", "float": "a number", "bool": "a boolean", "str": "a string", "datetime": "a timestamp string"}
_ACCEPTS = {int: {"int", "float"}, bool: {"bool"}, str: {"str", "datetime"}}
_KEYED = ("labels", "annotations")


def check_program(program: Program) -> list[str]:
    """The warnings of a program, one line each (``FILE:LINE: …``), in the order of its commands."""
    return [f"{program.source}:{command.line}: {text}" for command in program.commands for text in _command_warnings(command)]


def _command_warnings(command: Command) -> Iterator[str]:
    action = command.action
    pairs = [(test.path, test.rhs) for test in command.selector if isinstance(test, ResourceTest)]
    if isinstance(action, Modify):
        pairs.append((action.path, action.rhs))
    paths = [path for path, _ in pairs] + [rhs for _, rhs in pairs if isinstance(rhs, Path)]
    if isinstance(action, Remove):
        paths.append(action.path)
    seen: set[str] = set()
    for text in (*(_bare_word(rhs) for _, rhs in pairs), *(_contradicted(path, rhs) for path, rhs in pairs), *map(_dotted_key, paths)):
        if text is not None and text not in seen:
            seen.add(text)
            yield text


def _bare_word(rhs: object) -> str | None:
    if not isinstance(rhs, Path) or rhs.var is not None or not rhs.steps or rhs.steps[0].key in _top_fields():
        return None
    return (f"{rhs} is read as a path (the object's field {rhs.steps[0].key!r}), and no object has such a field; "
            f'to compare with the text, quote it: "{rhs}"')


def _contradicted(path: Path, rhs: object) -> str | None:
    if not isinstance(rhs, Literal) or path.var is not None:
        return None
    found = _leaf_types(path.steps)
    if not found or not found <= set(_SCALARS) or found & _ACCEPTS[type(rhs.value)]:
        return None
    declared = " or ".join(sorted(_SCALARS[t] for t in found))
    return f"{path} is {declared} in the API, and {rhs} is not: SimKube compares and writes it as given; {_fix(rhs, found, declared)}"


def _fix(rhs: Literal, found: set[str], declared: str) -> str:
    value = rhs.value
    if isinstance(value, str) and value.lstrip("-").isdigit() and found <= {"int", "float"}:
        return f"write {value} (no quotes)"
    if isinstance(value, str) and value.lower() in ("true", "false") and found == {"bool"}:
        return f"write {value.lower()} (no quotes)"
    if found <= {"str", "datetime"}:
        return f'write "{str(rhs)}"'
    return f"give {declared}"


def _dotted_key(path: Path) -> str | None:
    steps = path.steps
    for i, step in enumerate(steps[:-2]):
        if step.key in _KEYED and not step.bracket and i and steps[i - 1].key == "metadata":
            rest = steps[i + 1:]
            if len(rest) >= 2 and not any(s.bracket for s in rest):
                key = ".".join(s.key for s in rest)
                prefix = "".join(str(s) for s in steps[: i + 1]).lstrip(".")
                return (f"{path} builds nested maps under {step.key} ({rest[0].key}: {{{rest[1].key}: …}}); a key with dots is one "
                        f'step: quote it: {prefix}."{key}"')
    return None


@functools.lru_cache(maxsize=1)
def _top_fields() -> frozenset[str]:
    """The top-level fields of every built-in kind (``apiVersion``, ``kind``, ``metadata``, ``spec``, ``data``, …)."""
    api = schema()
    return frozenset(field for model in set(api.kinds.values()) for field in api.types.get(model, {}))


def _leaf_types(steps: tuple[Step, ...]) -> set[str]:
    """The types the built-in kinds give the field a path reaches (none for a path no built-in kind has)."""
    api = schema()
    found = set()
    for model in set(api.kinds.values()):
        kind: str | None = model
        for step in steps:
            kind = _step_type(kind, step, api.types) if kind is not None else None
        if kind is not None:
            found.add(kind)
    return found


def _step_type(kind: str, step: Step, types: dict[str, dict[str, str]]) -> str | None:
    if kind.startswith("list["):
        return kind[5:-1] if step.wild or step.index is not None else None
    if kind.startswith("dict("):
        return kind[kind.index(",") + 1:-1].strip()
    return types.get(kind, {}).get(step.key)
