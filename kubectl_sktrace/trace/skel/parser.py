"""SKEL's grammar: a recursive-descent parser over the lexer's tokens, with one-line errors. Pure.

The grammar is SimKube's (``sk-skel/src/skel.pest``), written by hand so that every error names the file, the
line and the column and what was expected there, with no parser dependency for a ten-rule language::

    program   := (command ';')*
    command   := delete '(' selector ')'
               | remove '(' [selector ','] path ')'
               | modify '(' [selector ','] path '=' rhs ')'
    selector  := '*' | test ('&&' test)*
    test      := '@t' CMP time | $var ':=' path '|' restest | restest
    restest   := 'exists' '(' path ')' | '!exists' '(' path ')' | path CMP rhs
    path      := (field | "quoted" | $var) ('.' (field | "quoted") | '[' digits ']' | '[*]')*   (no spaces)
    rhs       := integer | "string" | true | false (any case) | path
    time      := digits | digits ('s' | 'm' | 'h')

Variables are checked as SimKube checks them (``ast.rs``): each is defined once per command; the test after
``|`` is on the variable it defines, and no other test has a variable on its left; a right side, a later
definition and the action's path may use any variable defined before them (a right side also the one
being defined). Where SimKube's grammar is stricter or looser than its own engine can bear, we say so:

- A one-digit number followed by whitespace (``@t < 5 &&``) crashes SimKube's parser; here it is a number.
- ``-5`` is the number minus five; SimKube reads it as a path to a field named ``-5``.
- ``<``, ``<=``, ``>``, ``>=`` against a literal string or boolean are refused here (they compare numbers);
  SimKube accepts them and then crashes on any object that has the field.
- ``$x := path | TEST`` where TEST is not on ``$x`` is refused here; SimKube accepts it and panics at run
  time.
- Strings have no escapes: a string runs to the next ``"``, as in SimKube.
"""

from __future__ import annotations

import re

from kubectl_sktrace.errors import SktraceError
from kubectl_sktrace.trace.skel.lexer import AT, EOF, PUNCT, STRING, VAR, WORD, Positions, Token, tokenize
from kubectl_sktrace.trace.skel.nodes import (
    COMPARATORS, MAX_WILDCARDS, ORDERINGS, Action, Command, Delete, Literal, Modify, Op, Path, Program, Remove,
    ResourceTest, Rhs, Step, Test, TimeTest, VarDef,
)

_INTEGER = re.compile(r"-?[0-9]+\Z")
_DIGITS = re.compile(r"[0-9]+\Z")
_TIME = re.compile(r"([0-9]+)([smh]?)\Z")
_QUOTED_PART = re.compile(r"[A-Za-z0-9_./-]+\Z")
_INT64 = 2**63
_COMMANDS = ("delete", "modify", "remove")
_RHS = "a number, a string, true, false or a path"
_TIME_HINT = "a time (unix seconds, or 30s, 5m, 2h after the trace's start)"


class SkelSyntaxError(SktraceError):
    """A SKEL file that does not parse: ``file:line:col: what was expected but found … in "the line"``."""


def parse(text: str, *, source: str) -> Program:
    """Parse a whole SKEL program; ``source`` names it in messages (a file name, or ``sanitize``)."""
    return Program(source, _Parser(text, source).program())


def parse_path(text: str, *, source: str = "<path>") -> Path:
    """Parse one path, as written in a command (``spec.containers[*].env``); its variable is not checked."""
    parser = _Parser(text, source)
    path = parser.path()
    parser.expect_end()
    return path


class _Parser:
    def __init__(self, text: str, source: str) -> None:
        self._tokens = tokenize(text)
        self._pos = 0
        self._source = source
        self._text = text
        self._positions = Positions(text)

    # --- tokens and errors ---

    def _peek(self, ahead: int = 0) -> Token:
        return self._tokens[min(self._pos + ahead, len(self._tokens) - 1)]

    def _next(self) -> Token:
        token = self._peek()
        self._pos = min(self._pos + 1, len(self._tokens) - 1)
        return token

    def _error(self, token: Token, message: str) -> SkelSyntaxError:
        line, col = self._positions.line_col(token.start)
        return SkelSyntaxError(f'{self._source}:{line}:{col}: {message} in "{self._positions.snippet(token.start)}"')

    def _expected(self, what: str, token: Token | None = None) -> SkelSyntaxError:
        token = token or self._peek()
        return self._error(token, f"expected {what} but found {token.describe()}")

    def _expect(self, punct: str) -> Token:
        if not self._peek().is_punct(punct):
            raise self._expected(f"'{punct}'")
        return self._next()

    def expect_end(self) -> None:
        if self._peek().kind != EOF:
            raise self._expected("end of file")

    # --- program and commands ---

    def program(self) -> tuple[Command, ...]:
        commands = []
        while self._peek().kind != EOF:
            commands.append(self._command())
        return tuple(commands)

    def _command(self) -> Command:
        first_index, first = self._pos, self._next()
        if first.kind != WORD or first.text not in _COMMANDS:
            raise self._expected("a command (delete, modify or remove)", first)
        self._expect("(")
        defined: set[str] = set()
        selector: tuple[Test, ...]
        action: Action
        if first.text == "delete":
            selector, action = self._selector(defined), Delete()
        else:
            selector, action = self._selector_and_action(first.text, defined)
        self._expect(")")
        text = self._text_from(first_index)
        self._expect_semicolon()
        return Command(selector, action, text, self._positions.line_col(first.start)[0])

    def _expect_semicolon(self) -> None:
        """The ';' a command ends with, its absence reported right after the command's ')' (not where the next token
        is: after the file's end, or on a later line)."""
        if self._peek().is_punct(";"):
            self._next()
            return
        closer = self._tokens[self._pos - 1]
        end = closer.start + len(closer.text)
        line, col = self._positions.line_col(end)
        raise SkelSyntaxError(f"{self._source}:{line}:{col}: expected ';' after the command but found {self._peek().describe()} "
                              f'in "{self._positions.snippet(closer.start)}"')

    def _text_from(self, start: int) -> str:
        """The command's tokens so far, as written, on one line."""
        parts = [(" " if token.spaced and i else "") + token.text for i, token in enumerate(self._tokens[start : self._pos])]
        return "".join(parts)

    def _selector_and_action(self, command: str, defined: set[str]) -> tuple[tuple[Test, ...], Action]:
        """``remove``/``modify``'s arguments: a selector and a comma, unless the first argument is the target."""
        if not self._starts_selector():
            lhs_token = self._peek()
            path = self.path()
            if command == "remove" and not self._peek_comparator():
                self._check_defined(path, defined, lhs_token)
                return (), self._finish_remove(path)
            if command == "modify" and self._peek().is_punct("="):
                self._check_defined(path, defined, lhs_token)
                return (), self._finish_modify(path, defined)
            if not self._peek_comparator():
                raise self._expected("')'" if command == "remove" else "'='")
            tests: list[Test] = [self._comparison(path, lhs_token, defined, None)]
            tests.extend(self._more_tests(defined))
            selector: tuple[Test, ...] = tuple(tests)
        else:
            selector = self._selector(defined)
        self._expect(",")
        target_token = self._peek()
        target = self.path()
        self._check_defined(target, defined, target_token)
        return selector, (self._finish_remove(target) if command == "remove" else self._finish_modify(target, defined))

    def _finish_remove(self, path: Path) -> Remove:
        if not self._peek().is_punct(")"):
            raise self._expected("')'")
        return Remove(path)

    def _finish_modify(self, path: Path, defined: set[str]) -> Modify:
        self._expect("=")
        return Modify(path, self._rhs(defined))

    def _starts_selector(self) -> bool:
        token = self._peek()
        return (
            token.is_punct("*") or token.is_punct("!") or token.kind == AT
            or (token.kind == VAR and self._peek(1).is_punct(":="))
            or (token.is_word("exists") and self._peek(1).is_punct("("))
        )

    # --- selectors and tests ---

    def _selector(self, defined: set[str]) -> tuple[Test, ...]:
        if self._peek().is_punct("*"):
            self._next()
            if self._peek().is_punct("&&"):
                raise self._error(self._peek(), "'*' selects every object: it cannot be joined with '&&'")
            return ()
        return (self._test(defined), *self._more_tests(defined))

    def _more_tests(self, defined: set[str]) -> list[Test]:
        tests: list[Test] = []
        while self._peek().is_punct("&&"):
            self._next()
            tests.append(self._test(defined))
        return tests

    def _test(self, defined: set[str]) -> Test:
        token = self._peek()
        if token.kind not in (WORD, STRING, VAR, AT) and not token.is_punct("!"):
            raise self._expected("a test: a path, exists(...), !exists(...), $x := ..., or @t")
        if token.kind == AT:
            return self._time_test()
        if token.kind == VAR and self._peek(1).is_punct(":="):
            return self._var_test(defined)
        return self._resource_test(defined, None)

    def _time_test(self) -> TimeTest:
        at = self._next()
        if at.text != "@t":
            raise self._expected("'@t'", at)
        op = self._comparator()
        token = self._next()
        match = _TIME.match(token.text) if token.kind == WORD else None
        if not match:
            raise self._expected(_TIME_HINT, token)
        return TimeTest(op, self._whole(token, match.group(1)), match.group(2) or None)

    def _var_test(self, defined: set[str]) -> ResourceTest:
        name_token = self._next()
        name = name_token.text
        if name in defined:
            raise self._error(name_token, f"{name} is already defined in this command")
        self._expect(":=")
        path_token = self._peek()
        path = self.path()
        self._check_defined(path, defined, path_token)
        self._expect("|")
        defined.add(name)
        return self._resource_test(defined, VarDef(name, path))

    def _resource_test(self, defined: set[str], var: VarDef | None) -> ResourceTest:
        token = self._peek()
        if token.is_word("exists") and self._peek(1).is_punct("("):
            self._next()
            return self._existence(Op.EXISTS, var)
        if token.is_punct("!"):
            self._next()
            word = self._next()
            if word.is_word("exists") and word.spaced:
                raise self._error(word, "write '!exists' without a space")
            if not word.is_word("exists"):
                raise self._expected("'exists' right after '!'", word)
            return self._existence(Op.NOT_EXISTS, var)
        path = self.path()
        if not self._peek_comparator():
            raise self._expected("a comparison (==, !=, <, <=, >, >=)")
        return self._comparison(path, token, defined, var)

    def _existence(self, op: Op, var: VarDef | None) -> ResourceTest:
        self._expect("(")
        token = self._peek()
        path = self.path()
        self._check_lhs(path, token, var)
        self._expect(")")
        return ResourceTest(path, op, None, var)

    def _comparison(self, path: Path, token: Token, defined: set[str], var: VarDef | None) -> ResourceTest:
        self._check_lhs(path, token, var)
        op = self._comparator()
        rhs_token = self._peek()
        rhs = self._rhs(defined)
        if op in ORDERINGS and isinstance(rhs, Literal) and (isinstance(rhs.value, (bool, str))):
            raise self._error(rhs_token, f"'{op.value}' compares numbers but found {rhs_token.describe()}")
        return ResourceTest(path, op, rhs, var)

    def _peek_comparator(self) -> bool:
        token = self._peek()
        return token.kind == PUNCT and token.text in COMPARATORS

    def _comparator(self) -> Op:
        if not self._peek_comparator():
            raise self._expected("a comparison (==, !=, <, <=, >, >=)")
        return COMPARATORS[self._next().text]

    def _check_lhs(self, path: Path, token: Token, var: VarDef | None) -> None:
        """The left of a test: on the variable being defined after '|', and on no variable elsewhere."""
        if var is not None and path.var != var.name:
            raise self._expected(f"a path starting with {var.name} after '|'", token)
        if var is None and path.var is not None:
            raise self._error(token, f"{path.var} can be tested only where it is defined ({path.var} := PATH | TEST)")

    def _check_defined(self, path: Path, defined: set[str], token: Token) -> None:
        if path.var is not None and path.var not in defined:
            raise self._error(token, f"{path.var} is not defined (define it in the selector: {path.var} := PATH | TEST)")

    # --- values and paths ---

    def _rhs(self, defined: set[str]) -> Rhs:
        token = self._peek()
        if token.kind == STRING:
            self._next()
            return Literal(token.text[1:-1])
        if token.kind == WORD and _INTEGER.match(token.text):
            self._next()
            value = self._whole(token, token.text)
            if self._peek().is_punct(".") and not self._peek().spaced:
                raise self._error(self._peek(), "numbers are whole: expected no '.' after a number")
            return Literal(value)
        if token.kind == WORD and token.text.lower() in ("true", "false"):
            self._next()
            return Literal(token.text.lower() == "true")
        if token.kind == VAR or (token.kind == WORD and not token.text[0].isdigit() and token.text[0] != "-"):
            path = self.path()
            self._check_defined(path, defined, token)
            return path
        raise self._expected(_RHS, token)

    def path(self) -> Path:
        token = self._next()
        var: str | None = None
        steps: list[Step] = []
        if token.kind == VAR:
            var = token.text
        elif token.kind in (WORD, STRING):
            steps.append(self._field(token))
        else:
            raise self._expected("a path", token)
        while not self._peek().spaced and (self._peek().is_punct(".") or self._peek().is_punct("[")):
            steps.append(self._path_step(self._next()))
        if sum(1 for step in steps if step.wild) > MAX_WILDCARDS:
            raise self._error(token, f"a path may hold at most {MAX_WILDCARDS} [*]")
        return Path(var, tuple(steps))

    def _path_step(self, opener: Token) -> Step:
        token = self._next()
        if opener.text == ".":
            if token.spaced or token.kind not in (WORD, STRING):
                hint = " (a variable can only start a path)" if token.kind == VAR else ""
                raise self._expected(f"a field name right after '.'{hint}", token)
            return self._field(token)
        if token.spaced or not (token.is_punct("*") or (token.kind == WORD and token.text.isdigit())):
            raise self._expected("a list index or '*' right after '['", token)
        closer = self._next()
        if closer.spaced or not closer.is_punct("]"):
            raise self._expected("']'", closer)
        return Step.element(None if token.text == "*" else self._whole(token, token.text))

    def _field(self, token: Token) -> Step:
        name = token.text if token.kind == WORD else token.text[1:-1]
        if token.kind != WORD and not _QUOTED_PART.match(name):
            raise self._error(token, "a quoted path part holds only letters, digits and _ - . / (at least one)")
        if _DIGITS.match(name):  # digits are also a list index
            self._whole(token, name)
        return Step.field(name)

    def _whole(self, token: Token, digits: str) -> int:
        """``digits`` (an optional '-', then 0-9) as a 64-bit integer; past it, the error at ``token``, before any
        conversion (Python refuses to convert more than 4300 digits, and converting is quadratic below that)."""
        significant = digits.lstrip("-").lstrip("0")
        value = int(("-" if digits.startswith("-") else "") + (significant or "0")) if len(significant) <= 19 else _INT64
        if not -_INT64 <= value < _INT64:
            raise self._error(token, "integer out of range (64-bit integers)")
        return value
