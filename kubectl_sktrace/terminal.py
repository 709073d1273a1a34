"""What reaches a person's terminal is text, never a command to it. Pure functions.

Names, labels, messages and file contents come from a cluster or a trace that someone else may write: a Deployment
named with ``ESC ] 52 ; c ; …`` would set the reader's clipboard, ``ESC ] 0 ;`` their window's title, a carriage
return overwrite the line before it, a right-to-left override reorder what they read (CVE-2021-25743 is kubectl's
own). Every line the commands print as text goes through ``escape``: C0 controls but newline and tab, DEL, C1
controls and the bidirectional controls are written as visible escapes (``\\x1b``, ``\\u202e``). Output meant for
programs is left to its writer, which escapes in its own syntax (JSON ``\\u001b``, YAML ``"\\e"``); escaping those
again changes nothing, as neither writes a raw control character.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: str) -> str:
    """``text`` with every character that a terminal would act on, or that reorders what it shows, made visible."""
    return _UNSAFE.sub(_visible, text)
