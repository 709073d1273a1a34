"""SKEL's tokens, cut from the source with their positions. Pure.

Whitespace is a space, a tab, a carriage return or a line feed, and ``#`` starts a comment that runs to the
end of its line, as in SimKube's grammar. Each token remembers whether whitespace or a comment came before
it (``spaced``): a path is written without any (``spec.template``, not ``spec . template``), and the parser
checks that with this flag. A character that starts no token becomes a ``BAD`` token rather than an
exception, so that the parser reports the first problem in reading order, with what it expected there.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

WORD = "word"  # letters, digits, '_' and '-': a field name, a command, a number, a time, true/false
STRING = "string"  # "…", quotes included in its text
VAR = "var"  # $name
AT = "at"  # '@' and the word after it: "@t"
PUNCT = "punct"
BAD = "bad"
EOF = "eof"

_WORD = re.compile(r"[A-Za-z0-9_-]+")
_VAR = re.compile(r"\$[A-Za-z_][A-Za-z0-9_]*")
_PUNCT = ("&&", "==", "!=", "<=", ">=", ":=", "(", ")", ",", ";", ".", "[", "]", "*", "|", "=", "<", ">", "!")
_SPACE = " \t\r\n"


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    start: int
    spaced: bool

    def is_punct(self, text: str) -> bool:
        return self.kind == PUNCT and self.text == text

    def is_word(self, text: str) -> bool:
        return self.kind == WORD and self.text == text

    def describe(self) -> str:
        """How a message names this token: ``'text'``, or what it is when it has no text to show."""
        if self.kind == EOF:
            return "end of file"
        if self.kind == BAD and self.text.startswith('"'):
            return "a string with no closing '\"'"
        shown = self.text if len(self.text) <= 40 else self.text[:37] + "..."
        return f"'{shown}'"


def tokenize(text: str) -> list[Token]:
    """All tokens of ``text``, ending with one ``EOF`` token."""
    tokens: list[Token] = []
    i, n, spaced = 0, len(text), True
    while i < n:
        char = text[i]
        if char in _SPACE:
            i, spaced = i + 1, True
            continue
        if char == "#":
            end = text.find("\n", i)
            i, spaced = (n if end < 0 else end), True
            continue
        token = _token_at(text, i, spaced)
        tokens.append(token)
        i, spaced = i + len(token.text), False
    tokens.append(Token(EOF, "", n, spaced))
    return tokens


def _token_at(text: str, i: int, spaced: bool) -> Token:
    char = text[i]
    match = _WORD.match(text, i)
    if match:
        return Token(WORD, match.group(), i, spaced)
    if char == '"':
        end = text.find('"', i + 1)
        return Token(BAD, text[i:], i, spaced) if end < 0 else Token(STRING, text[i : end + 1], i, spaced)
    if char == "$":
        match = _VAR.match(text, i)
        return Token(VAR, match.group(), i, spaced) if match else Token(BAD, char, i, spaced)
    if char == "@":
        match = _WORD.match(text, i + 1)
        return Token(AT, "@" + (match.group() if match else ""), i, spaced)
    for punct in _PUNCT:
        if text.startswith(punct, i):
            return Token(PUNCT, punct, i, spaced)
    return Token(BAD, char, i, spaced)


class Positions:
    """Line and column (both from 1) of an offset in a text, and the text of its line."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line_col(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._starts, offset) - 1
        return line + 1, offset - self._starts[line] + 1

    def snippet(self, offset: int) -> str:
        """The line holding ``offset``, trimmed, and cut to about 70 characters around it when longer."""
        line, col = self.line_col(offset)
        start = self._starts[line - 1]
        end = self._text.find("\n", start)
        raw = self._text[start : len(self._text) if end < 0 else end].rstrip()
        stripped = raw.lstrip()
        col -= len(raw) - len(stripped)
        if len(stripped) <= 70:
            return stripped
        left = max(0, min(col - 35, len(stripped) - 70))
        return ("..." if left else "") + stripped[left : left + 70] + ("..." if left + 70 < len(stripped) else "")
