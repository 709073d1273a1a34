"""A request's query parameters as numbers, each checked: a UsageError (400, one line) for anything that is not one.

Only decimal digits, an optional sign and an optional fraction (the page's figures; the fraction is dropped) are
numbers: ``inf``, ``1e400``, ``0x10`` and a thousand digits are not, so that no conversion can overflow, run long or
reach the database. Integers stay within ±2**53 (what the page's JavaScript holds exactly), and times within the
years 2 to 9998 (``timeparse.is_printable_time``: every report can print them, and what it computes from them). Pure.
"""

from __future__ import annotations

import re
from typing import Mapping

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.timeparse import is_printable_time

LIMIT = 2**53
_NUMBER = re.compile(r"(-?[0-9]{1,16})(?:\.[0-9]{0,20})?\Z")


def int_param(params: Mapping[str, str], name: str, default: int | None = None) -> int:
    """The integer parameter ``name`` (a fraction dropped), ``default`` when absent (None: it is required)."""
    text = params.get(name)
    if text is None:
        if default is None:
            raise UsageError(f"the request lacks {name}")
        return default
    match = _NUMBER.match(text)
    value = int(match.group(1)) if match else None
    if value is None or not -LIMIT <= value <= LIMIT:
        raise UsageError(f"{name}={text[:40]!r}{'…' if len(text) > 40 else ''} is not a number (decimal digits, at most ±2^53)")
    return value


def time_param(params: Mapping[str, str], name: str) -> int:
    """The required time parameter ``name``: unix seconds within the years 2 to 9998."""
    value = int_param(params, name)
    if not is_printable_time(value):
        raise UsageError(f"{name}={value} is not a time between the years 2 and 9998 (unix seconds)")
    return value


MAX_SEARCH = 253 + 1 + 63
"""The longest name search that can find anything: a namespace (63 characters at most), a slash and a name (253)."""


def search_param(params: Mapping[str, str], name: str = "q") -> str:
    """The name search ``name`` ("" when absent); longer than ``MAX_SEARCH`` it could find no object, and the database
    would refuse its pattern as too complex."""
    text = params.get(name, "")
    if len(text) > MAX_SEARCH:
        raise UsageError(f"{name} is {len(text)} characters long; no namespace/name is longer than {MAX_SEARCH}")
    return text
