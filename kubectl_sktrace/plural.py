"""Counts in sentences for people: ``1 object``, ``2 objects``, never ``1 objects`` or ``object(s)``; and the
word a person probably meant (``closest``).

Pure. Every message that prints a count next to a noun goes through ``counted``, every "did you mean" through
``closest``.
"""

from __future__ import annotations

import difflib
from typing import Iterable


def counted(count: int, noun: str, plural: str | None = None, *, grouped: bool = False) -> str:
    """``count`` and ``noun``, the noun in the plural unless the count is one. ``plural`` for a noun whose
    plural is not noun + s (``"creation or change"``, ``"creations or changes"``); ``grouped`` writes
    thousands with commas (``12,000 events``)."""
    word = noun if count == 1 else plural if plural is not None else noun + "s"
    return f"{count:,} {word}" if grouped else f"{count} {word}"


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice ``word`` is most likely a typo of (case aside), or None when none is close."""
    by_folded = {choice.lower(): choice for choice in choices}
    found = difflib.get_close_matches(word.lower(), list(by_folded), n=1, cutoff=0.75)
    return by_folded[found[0]] if found else None
