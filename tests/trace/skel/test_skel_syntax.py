"""SKEL's grammar: what a program parses to, and the one-line error for what does not parse."""

from __future__ import annotations

import pytest

from kubectl_sktrace.errors import SktraceError
from kubectl_sktrace.trace.skel import SkelSyntaxError, parse
from kubectl_sktrace.trace.skel.nodes import Literal, Modify, Op, Path, Remove, ResourceTest, Step, TimeTest
from kubectl_sktrace.trace.skel.parser import parse_path

ERRORS = [
    ("remove(status;", "sanitize.skel:1:14: expected ')' but found ';' in \"remove(status;\""),
    ("# strip it\nremove(status);\nrmove(spec.template.spec.serviceAccount);",
     "sanitize.skel:3:1: expected a command (delete, modify or remove) but found 'rmove' in \"rmove(spec.template.spec.serviceAccount);\""),
    ("remove(status)", "sanitize.skel:1:15: expected ';' after the command but found end of file in \"remove(status)\""),
    ("remove(status)\n\n", "sanitize.skel:1:15: expected ';' after the command but found end of file in \"remove(status)\""),
    ("delete(metadata.name == \"a\");\nremove(status)\n# the end\n\n",
     "sanitize.skel:2:15: expected ';' after the command but found end of file in \"remove(status)\""),
    ("remove(status)\n  delete(*);", "sanitize.skel:1:15: expected ';' after the command but found 'delete' in \"remove(status)\""),
    ("remove(status);\nmodify(metadata.labels.x == 1);", "sanitize.skel:2:30: expected ',' but found ')' in \"modify(metadata.labels.x == 1);\""),
    ("delete(@t > 5d);",
     "sanitize.skel:1:13: expected a time (unix seconds, or 30s, 5m, 2h after the trace's start) but found '5d' in \"delete(@t > 5d);\""),
    ("delete(@x > 5);", "sanitize.skel:1:8: expected '@t' but found '@x' in \"delete(@x > 5);\""),
    ('delete(metadata.name < "m");', "sanitize.skel:1:24: '<' compares numbers but found '\"m\"' in \"delete(metadata.name < \"m\");\""),
    ("remove($x := spec.containers[*] | exists($y.image), $x);",
     "sanitize.skel:1:42: expected a path starting with $x after '|' but found '$y' in \"remove($x := spec.containers[*] | exists($y.image), $x);\""),
    ("remove($x := a[*] | exists($x.b) && $x := c[*] | exists($x.d), $x);",
     "sanitize.skel:1:37: $x is already defined in this command in \"remove($x := a[*] | exists($x.b) && $x := c[*] | exists($x.d), $x);\""),
    ("remove(exists(a), $z);", "sanitize.skel:1:19: $z is not defined (define it in the selector: $z := PATH | TEST) in \"remove(exists(a), $z);\""),
    ("modify(a = $q.name);", "sanitize.skel:1:12: $q is not defined (define it in the selector: $q := PATH | TEST) in \"modify(a = $q.name);\""),
    ("remove($x.name == 1, b);", "sanitize.skel:1:8: $x can be tested only where it is defined ($x := PATH | TEST) in \"remove($x.name == 1, b);\""),
    ('remove(metadata.labels."simkube dev", x);',
     "sanitize.skel:1:24: a quoted path part holds only letters, digits and _ - . / (at least one) in \"remove(metadata.labels.\"simkube dev\", x);\""),
    ('remove(metadata.labels."simkube.dev/foo, x);',
     "sanitize.skel:1:24: expected a field name right after '.' but found a string with no closing '\"' in \"remove(metadata.labels.\"simkube.dev/foo, x);\""),
    ("remove(spec . template);", "sanitize.skel:1:13: expected ')' but found '.' in \"remove(spec . template);\""),
    ("remove(spec.containers[ 0 ]);", "sanitize.skel:1:25: expected a list index or '*' right after '[' but found '0' in \"remove(spec.containers[ 0 ]);\""),
    ("remove(! exists(a), b);", "sanitize.skel:1:10: write '!exists' without a space in \"remove(! exists(a), b);\""),
    ("delete(a == 99999999999999999999);", "sanitize.skel:1:13: integer out of range (64-bit integers) in \"delete(a == 99999999999999999999);\""),
    ("delete(a == 1.5);", "sanitize.skel:1:14: numbers are whole: expected no '.' after a number in \"delete(a == 1.5);\""),
    ("delete(* && a == 1);", "sanitize.skel:1:10: '*' selects every object: it cannot be joined with '&&' in \"delete(* && a == 1);\""),
    ("delete();", "sanitize.skel:1:8: expected a test: a path, exists(...), !exists(...), $x := ..., or @t but found ')' in \"delete();\""),
    ("delete(a == 12abc);", "sanitize.skel:1:13: expected a number, a string, true, false or a path but found '12abc' in \"delete(a == 12abc);\""),
    ("remove(a.$x);", "sanitize.skel:1:10: expected a field name right after '.' (a variable can only start a path) but found '$x' in \"remove(a.$x);\""),
    ("remove(\n  metadata.labels.\"a\" == \"b\",\n\tspec.template..spec);",
     "sanitize.skel:3:16: expected a field name right after '.' but found '.' in \"spec.template..spec);\""),
    ("remove(sta%tus);", "sanitize.skel:1:11: expected ')' but found '%' in \"remove(sta%tus);\""),
    ("remove(a" + "[*]" * 17 + ");", "sanitize.skel:1:8: a path may hold at most 16 [*] in \"remove(a" + "[*]" * 17 + ");\""),
]


@pytest.mark.parametrize(("text", "message"), ERRORS, ids=[message.split(": ", 1)[1][:40] for _, message in ERRORS])
def test_a_syntax_error_is_one_line_with_file_line_column_and_text(text: str, message: str) -> None:
    with pytest.raises(SkelSyntaxError) as raised:
        parse(text, source="sanitize.skel")
    assert str(raised.value) == message
    assert "\n" not in str(raised.value)
    assert isinstance(raised.value, SktraceError)


def test_a_long_line_is_cut_around_the_error() -> None:
    text = "remove(" + ".".join(f"field{i}" for i in range(30)) + " ;"
    with pytest.raises(SkelSyntaxError) as raised:
        parse(text, source="x.skel")
    message = str(raised.value)
    assert message.startswith("x.skel:1:") and " but found ';' in \"..." in message
    assert len(message.split(' in "', 1)[1]) <= 80


def test_empty_files_and_comments_parse_to_nothing() -> None:
    assert parse("", source="x").commands == ()
    assert parse("# only a comment\n   \n# another", source="x").commands == ()


def test_whitespace_and_comments_between_tokens_are_ignored_and_the_text_is_kept_on_one_line() -> None:
    program = parse("# head\n\nremove(  # the selector\n  exists( status )\n  ,\n  status\n) ;  # done\ndelete(*);", source="x")
    first, second = program.commands
    assert (first.line, first.text) == (3, "remove( exists( status ) , status )")
    assert (second.line, second.text, str(second)) == (8, "delete(*)", "delete(*)")
    assert first.selector == (ResourceTest(Path(None, (Step.field("status"),)), Op.EXISTS),)


@pytest.mark.parametrize(
    ("text", "rhs"),
    [("1", 1), ("0", 0), ("-5", -5), ('"a b # c"', "a b # c"), ('"back\\slash"', "back\\slash"), ("tRuE", True), ("FALSE", False), ('""', "")],
)
def test_values(text: str, rhs: object) -> None:
    (command,) = parse(f"modify(spec.x = {text});", source="x").commands
    assert isinstance(command.action, Modify)
    assert command.action.rhs == Literal(rhs)
    assert type(command.action.rhs.value) is type(rhs)


@pytest.mark.parametrize("text", ["@t < 5 && a == 2 , b", "@t<5&&a==2,b", "a == 2\n, b", "@t >= 5\n&& a != 7 ,\nb"])
def test_a_single_digit_number_followed_by_whitespace_parses(text: str) -> None:
    (command,) = parse(f"remove({text});", source="x").commands  # SimKube's parser crashes on these
    assert isinstance(command.action, Remove) and command.action.path == Path(None, (Step.field("b"),))
    assert [getattr(t, "rhs", None) or getattr(t, "amount") for t in command.selector][-1] in (Literal(2), Literal(7))


@pytest.mark.parametrize(
    ("text", "amount", "unit", "at"),
    [("@t == 1234", 1234, None, 1234), ("@t == 1234s", 1234, "s", 2234), ("@t == 123m", 123, "m", 8380), ("@t == 12h", 12, "h", 44200)],
)
def test_times_absolute_and_relative(text: str, amount: int, unit: str | None, at: int) -> None:
    (command,) = parse(f"delete({text});", source="x").commands
    assert command.selector == (TimeTest(Op.EQ, amount, unit),)
    assert command.selector[0].at(1000) == at


@pytest.mark.parametrize(
    ("text", "pointer", "shown"),
    [
        ("metadata.labels.\"simkube.dev/foo\"", "/metadata/labels/simkube.dev~1foo", 'metadata.labels."simkube.dev/foo"'),
        ("spec.containers[0].env[*].name", "/spec/containers/0/env/*/name", "spec.containers[0].env[*].name"),
        ("spec.containers.0", "/spec/containers/0", "spec.containers.0"),
        ("$x.valueFrom", "/$x/valueFrom", "$x.valueFrom"),
        ('"a.b".c', "/a.b/c", '"a.b".c'),
        ("meta-data.name_x", "/meta-data/name_x", "meta-data.name_x"),
        ("exists", "/exists", "exists"),
    ],
)
def test_paths(text: str, pointer: str, shown: str) -> None:
    path = parse_path(text)
    assert (path.pointer, str(path)) == (pointer, shown)
    assert parse_path(str(path)) == path


def test_dot_digits_and_bracket_digits_are_the_same_pointer_token_but_remember_how_they_were_written() -> None:
    dot, bracket = parse_path("a.0").steps[1], parse_path("a[0]").steps[1]
    assert (dot.key, dot.index, dot.bracket) == ("0", 0, False)
    assert (bracket.key, bracket.index, bracket.bracket) == ("0", 0, True)
    assert parse_path("a.01").steps[1].index is None  # not an index in a JSON pointer


def test_one_argument_forms_and_star_select_everything() -> None:
    commands = parse("remove(status); remove(*, status); modify(a.b = 1); modify(*, a.b = 1); delete(*);", source="x").commands
    assert [c.selector for c in commands] == [()] * 5


def test_a_variable_defined_once_may_be_used_by_later_tests_definitions_and_the_action() -> None:
    (command,) = parse(
        "modify($x := spec.volumes[*] | exists($x.secret) && $y := $x.items[*] | $y.key == $x.name && a == $y.path, $y.mode = 1);",
        source="x",
    ).commands
    x, y, last = command.selector
    assert isinstance(x, ResourceTest) and x.var is not None and x.var.name == "$x"
    assert isinstance(y, ResourceTest) and y.var is not None and y.var.path == parse_path("$x.items[*]")
    assert isinstance(last, ResourceTest) and last.rhs == parse_path("$y.path")


def test_the_right_side_may_use_the_variable_being_defined() -> None:
    (command,) = parse("delete($x := spec.containers[*] | $x.name == $x.image);", source="x").commands
    assert command.selector[0].rhs == parse_path("$x.image")


def test_orderings_accept_numbers_and_paths() -> None:
    (command,) = parse("delete(spec.replicas >= 3 && spec.replicas < status.replicas && a <= -1 && b > 0);", source="x").commands
    assert [t.op for t in command.selector] == [Op.GE, Op.LT, Op.LE, Op.GT]
