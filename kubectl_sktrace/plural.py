"""Counts in sentences for people: ``1 object``, ``2 objects``, never ``1 objects`` or ``object(s)``.

Pure. Every message that prints a count next to a noun goes through ``counted``.
"""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None, *, grouped: bool = False) -> str:
    """``count`` and ``noun``, the noun in the plural unless the count is one. ``plural`` for a noun whose
    plural is not noun + s (``"creation or change"``, ``"creations or changes"``); ``grouped`` writes
    thousands with commas (``12,000 events``)."""
    word = noun if count == 1 else plural if plural is not None else noun + "s"
    return f"{count:,} {word}" if grouped else f"{count} {word}"
