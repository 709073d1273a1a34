"""SimKube's own 114 SKEL test cases (``tests/data/skel/simkube_tests.json``), as golden vectors.

Whole-command cases (``itest.rs``: kinds ``event`` and ``trace``) and grammar cases (``parser_test.rs``) go
through ``parse`` and ``Transformer`` as they are. SimKube's unit-level cases are mapped onto our seams:

- ``ast_test.rs``: each fragment is parsed inside the smallest command that holds it (a selector in
  ``delete(…)``, a path in ``remove(…)``, a right side in ``modify(x = …)``, a variable already defined
  written as an earlier definition in the same command), and the parsed nodes are shown in SimKube's terms
  (JSON pointers, ``Eq``/``Exists``…, ``All``) to compare. One input, ``$x := … | exists($x))``, carries a
  stray ``)`` that SimKube's rule-level parse ignores; it is dropped here.
- ``engine_test.rs``: SimKube's match context (``entries``: a variable's pointers and values) becomes our
  bindings; its conditionals become our test nodes, compiled by ``compile_test``; its action functions are
  our compiled actions; ``variable_substitution`` and ``reify_pointers`` (pointers with ``$x`` replaced)
  are where our ``targeter`` starts an action's path; ``rhs_to_values`` is ``rhs_values``. SimKube's error
  names become ours: ``MultipleMatchingValues`` is the one-value rule of ``modify``. Two cases give a
  variable's pointers without its values (SimKube's context keeps them apart); those values are null here,
  so that ``process_modify_event_obj_multi_val`` meets two values, as its name says.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path as FilePath
from typing import Any

import pytest

from kubectl_sktrace.trace.skel import SkelSyntaxError, Transformer, parse
from kubectl_sktrace.trace.skel.actions import compile_action, targeter
from kubectl_sktrace.trace.skel.edits import EditError
from kubectl_sktrace.trace.skel.matching import compile_test, rhs_values, time_matches
from kubectl_sktrace.trace.skel.nodes import (
    Command, Delete, Literal, Modify, Op, Path, Program, Remove, ResourceTest, Step, TimeTest, VarDef,
)

CASES = json.loads((FilePath(__file__).parents[2] / "data" / "skel" / "simkube_tests.json").read_text())["cases"]
OPS = {Op.EQ: "Eq", Op.NE: "Ne", Op.LT: "Lt", Op.LE: "Le", Op.GT: "Gt", Op.GE: "Ge", Op.EXISTS: "Exists", Op.NOT_EXISTS: "NotExists"}
OP_OF = {name: op for op, name in OPS.items()}


def _cases(*kinds: str) -> list[Any]:
    return [pytest.param(case, id=case["id"]) for case in CASES if case["kind"] in kinds]


def test_all_114_cases_are_here() -> None:
    assert len(CASES) == 114
    assert len(_cases("event", "trace", "grammar", "ast", "engine")) == 114


# --- SimKube's terms for our nodes, and back ---


def _rhs_shape(rhs: Any) -> dict[str, Any]:
    return {"value": rhs.value} if isinstance(rhs, Literal) else {"path": rhs.pointer}


def _test_shape(test: Any, start_ts: int) -> dict[str, Any]:
    if isinstance(test, TimeTest):
        return {"type": "time", "ts": test.at(start_ts), "op": OPS[test.op]}
    return {
        "type": "resource", "ptr": test.path.pointer, "op": OPS[test.op],
        "rhs": None if test.rhs is None else _rhs_shape(test.rhs),
        "var": None if test.var is None else {"name": test.var.name, "pointer": test.var.path.pointer},
    }


def _selector_shape(selector: tuple[Any, ...], start_ts: int) -> Any:
    return "All" if not selector else [_test_shape(test, start_ts) for test in selector]


def _command_shape(command: Command, start_ts: int) -> dict[str, Any]:
    action = command.action
    if isinstance(action, Delete):
        shown: list[Any] = ["Delete"]
    elif isinstance(action, Modify):
        shown = ["Modify", action.path.pointer, _rhs_shape(action.rhs)]
    else:
        shown = ["Remove", action.path.pointer]
    return {"selector": _selector_shape(command.selector, start_ts), "action": shown}


def _path(pointer: str) -> Path:
    """A JSON pointer as a path: ``/$x/name``, ``/spec/containers/*``; digits are list indexes."""
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:] if t]
    var = tokens.pop(0) if tokens and tokens[0].startswith("$") else None
    return Path(var, tuple(Step.element(None) if t == "*" else Step.field(t) for t in tokens))


def _location(pointer: str) -> tuple[Any, ...]:
    return tuple(int(t) if t.isdigit() else t.replace("~1", "/") for t in pointer.split("/")[1:] if t)


def _pointer(location: tuple[Any, ...]) -> str:
    return "/" + "/".join(str(part).replace("~", "~0").replace("/", "~1") for part in location)


def _bindings(entries: dict[str, Any]) -> dict[str, Any]:
    """SimKube's context entries as bindings; where a case gives pointers but no values, the values are null."""
    return {name: [(_location(pointer), entry["values"][i] if i < len(entry["values"]) else None)
                   for i, pointer in enumerate(entry["pointers"])] for name, entry in entries.items()}


def _entries(bindings: dict[str, Any]) -> dict[str, Any]:
    """The variables' bindings in SimKube's shape (our kept root paths, keyed by pointer, left out)."""
    return {name: {"pointers": [_pointer(where) for where, _ in found], "values": [value for _, value in found]}
            for name, found in bindings.items() if name.startswith("$")}


def _rhs(shape: dict[str, Any]) -> Any:
    return Literal(shape["value"]) if "value" in shape else _path(shape["path"])


def _conditional(shape: dict[str, Any]) -> Any:
    if shape["type"] == "time":
        return TimeTest(OP_OF[shape["op"]], shape["ts"], None)
    var = shape["var"]
    return ResourceTest(_path(shape["ptr"]), OP_OF[shape["op"]], None if shape["rhs"] is None else _rhs(shape["rhs"]),
                        None if var is None else VarDef(var["name"], _path(var["pointer"])))


def _action(shape: list[Any]) -> Any:
    kind = shape[0]
    return Delete() if kind == "Delete" else Remove(_path(shape[1])) if kind == "Remove" else Modify(_path(shape[1]), _rhs(shape[2]))


# --- itest.rs: whole commands on events and traces ---


@pytest.mark.parametrize("case", _cases("event"))
def test_whole_command_on_an_event(case: dict[str, Any]) -> None:
    transformer = Transformer(parse(case["skel"], source="itest.skel"), start_ts=case["start_ts"])
    assert transformer.apply(copy.deepcopy(case["event"])) == case["expected_event"]


@pytest.mark.parametrize("case", _cases("trace"))
def test_whole_command_on_a_trace(case: dict[str, Any]) -> None:
    transformer = Transformer(parse(case["skel"], source="itest.skel"), start_ts=case["start_ts"])
    events = [transformer.apply(event) for event in copy.deepcopy(case["events"])]
    assert [event for event in events if event is not None] == case["expected_events"]


# --- parser_test.rs: what parses ---


@pytest.mark.parametrize("case", _cases("grammar"))
def test_grammar(case: dict[str, Any]) -> None:
    if case["expect"] == "ok":
        parse(case["skel"], source="parser.skel")
    else:
        with pytest.raises(SkelSyntaxError, match=r"^parser\.skel:\d+:\d+: "):
            parse(case["skel"], source="parser.skel")


# --- ast_test.rs: what a fragment parses to ---


def _fragment_command(case: dict[str, Any]) -> str:
    """The smallest command that holds the case's fragment, with its already-defined variables defined."""
    text, defined = case["input"], case.get("defined_vars", [])
    definitions = "".join(f"{name} := metadata | exists({name}) && " for name in defined)
    if case["fn"] == "parse_command":
        return text + ";"
    if case["fn"] == "parse_resource_path":
        return f"remove({text});"
    if case["fn"] == "parse_rhs":
        return f"modify({definitions[:-4]}, x = {text});" if definitions else f"modify(x = {text});"
    if text.endswith("))"):
        text = text[:-1]  # the stray ')' of resource_conditional case_4, which a rule-level parse ignores
    return f"delete({definitions}{text});"


@pytest.mark.parametrize("case", _cases("ast"))
def test_ast(case: dict[str, Any]) -> None:
    source = _fragment_command(case)
    if "expected_error" in case:
        with pytest.raises(SkelSyntaxError):
            parse(source, source="ast.skel")
        return
    (command,) = parse(source, source="ast.skel").commands
    start_ts = case.get("start_ts", 0)
    fn = case["fn"]
    if fn == "parse_command":
        assert _command_shape(command, start_ts) == case["expected"]
    elif fn == "parse_trace_selector":
        assert _selector_shape(command.selector, start_ts) == case["expected"]
        assert [t.var.name for t in command.selector if isinstance(t, ResourceTest) and t.var] == case["expected_vars"]
    elif fn in ("parse_resource_conditional", "parse_ts_conditional"):
        assert _test_shape(command.selector[-1], start_ts) == case["expected"]
    elif fn == "parse_resource_path":
        assert isinstance(command.action, Remove) and command.action.path.pointer == case["expected"]
    else:
        assert isinstance(command.action, Modify) and _rhs_shape(command.action.rhs) == case["expected"]


@pytest.mark.parametrize(
    ("case_id", "message"),
    [("ast_test.rs::test_parse_resource_conditional_errors::undefined_name", "expected a path starting with $x after '|' but found '$y'"),
     ("ast_test.rs::test_parse_resource_conditional_errors::duplicate_names", "$x is already defined in this command"),
     ("ast_test.rs::test_skel_parse_rhs_undefined_var", "$x is not defined")],
)
def test_ast_errors_say_which_variable(case_id: str, message: str) -> None:
    (case,) = [c for c in CASES if c["id"] == case_id]
    with pytest.raises(SkelSyntaxError, match=message.replace("$", r"\$").replace("(", r"\(")):
        parse(_fragment_command(case), source="ast.skel")


# --- engine_test.rs: the engine's functions on a given match context ---


def _engine_process_event(case: dict[str, Any]) -> None:
    command = Command((), _action(case["cmd"]["action"]), "delete(*)", 1)
    transformer = Transformer(Program("engine.skel", (command,)), start_ts=0)
    result = transformer.apply(copy.deepcopy(case["event"]))
    assert (result or {**case["event"], "applied_objs": [], "deleted_objs": []}) == case["expected_event"]


def _engine_action(case: dict[str, Any]) -> None:
    path = _path(case["ptr"])
    action = Remove(path) if case["fn"] == "process_remove_event_obj" else Modify(path, _rhs(case["rhs"]))
    act = compile_action(action)
    assert act is not None
    obj = copy.deepcopy(case["obj"])
    if "expected_error" in case:
        with pytest.raises(EditError, match="modify needs exactly one"):
            act(obj, _bindings(case["ctx"]["entries"]))
        return
    assert act(obj, _bindings(case["ctx"]["entries"])) == case["expected_modified"]
    assert obj == case["expected_obj"]


def _engine_trace_matches(case: dict[str, Any]) -> None:
    selector = () if case["selector"] == "All" else tuple(_conditional(shape) for shape in case["selector"])
    transformer = Transformer(Program("engine.skel", (Command(selector, Remove(_path("/nothing")), "…", 1),)), start_ts=0)
    transformer.apply({"ts": case["ts"], "applied_objs": [copy.deepcopy(case["ctx"]["obj"])], "deleted_objs": []})
    assert (transformer.events_matched == 1) is case["expected"]


def _engine_resource_conditional(case: dict[str, Any]) -> None:
    shape = {"type": "resource", "ptr": case["lhs"], "op": case["op"], "rhs": case["rhs"], "var": case["var"]}
    bindings = _bindings(case["ctx"]["entries"])
    given = set(bindings)
    assert compile_test(_conditional(shape), start_ts=0)(case["ctx"]["obj"], 0, bindings) is case["expected"]
    if "expected_entries" in case:
        assert _entries({name: found for name, found in bindings.items() if name not in given}) == case["expected_entries"]


def _engine_targets(case: dict[str, Any]) -> None:
    if case["fn"] == "variable_substitution":
        path, entries = _path(case["input"]), {case["var_name"]: {"pointers": [case["pointer"]], "values": [None]}}
    else:
        path, entries = _path(case["ptr"]), case["ctx"]["entries"]
    found = targeter(path)({}, _bindings(entries))
    pointers = [_pointer(where + tuple(step.key for step in path.steps)) for where, _ in found]
    if case["fn"] == "variable_substitution" and case["expected"] is None:
        assert pointers == [case["input"]]  # no variable: the path itself, as SimKube's caller falls back to
    else:
        assert pointers == ([case["expected"]] if case["fn"] == "variable_substitution" else case["expected"])


ENGINE_SEAMS = {
    "process_event": _engine_process_event,
    "process_modify_event_obj": _engine_action,
    "process_remove_event_obj": _engine_action,
    "trace_matches": _engine_trace_matches,
    "resource_conditional_matches": _engine_resource_conditional,
    "variable_substitution": _engine_targets,
    "reify_pointers": _engine_targets,
}


@pytest.mark.parametrize("case", _cases("engine"))
def test_engine(case: dict[str, Any]) -> None:
    fn = case["fn"]
    if fn == "time_conditional_matches":
        assert time_matches(OP_OF[case["op"]], case["evt_ts"], case["ts"]) is case["expected"]
    elif fn == "rhs_to_values":
        assert rhs_values(_rhs(case["rhs"]), case["ctx"]["obj"], _bindings(case["ctx"]["entries"])) == case["expected"]
    else:
        ENGINE_SEAMS[fn](case)
