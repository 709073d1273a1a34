"""Times and durations as users write them on the command line. Pure functions.

Times (docs/spec.md §2): ``now``; relative ``-30m``, ``-2h``, ``-1d``, ``-90s`` (a leading ``+`` counts forward);
RFC 3339 / ISO 8601 (``2026-11-22T10:00:00Z``; a time without a zone is local time, as ``date`` reads it);
``@<unix seconds>``. Durations: ``90s``, ``10m``, ``2h``, ``1d``, combinations such as ``1h30m``, or plain
seconds. Every failure is a UsageError naming the accepted forms.
"""

from __future__ import annotations

import functools
import re
from datetime import datetime, timezone

from kubectl_sktrace.errors import UsageError

_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)([smhd]))+?")
_DURATION_FULL = re.compile(r"^(?:\d+(?:\.\d+)?[smhd])+$")

TIME_FORMS = "use 'now', a relative time like '-30m', '-2h', '-1d', an RFC 3339 time like '2026-11-22T10:00:00Z', or '@<unix seconds>'"


def parse_duration(text: str) -> float:
    """Seconds in ``90s``, ``10m``, ``2h``, ``1d``, ``1h30m`` or a plain number of seconds; > 0."""
    value = text.strip().lower()
    seconds: float
    if re.fullmatch(r"\d+(?:\.\d+)?", value):
        seconds = float(value)
    elif _DURATION_FULL.match(value):
        seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in _DURATION.findall(value))
    elif value[:1] in "+-" and (_DURATION_FULL.match(value[1:]) or re.fullmatch(r"\d+(?:\.\d+)?", value[1:])):
        raise UsageError(f"invalid duration {text!r}: a duration has no sign; did you mean '{value[1:]}'?")
    else:
        raise UsageError(f"invalid duration {text!r}: use a number with a unit, like '90s', '10m', '2h', '1d' or '1h30m'")
    if seconds <= 0:
        raise UsageError(f"invalid duration {text!r}: it must be longer than zero")
    return seconds


def parse_time(text: str, *, now: float) -> float:
    """Unix seconds for a time expression, relative ones counted from ``now``."""
    value = text.strip()
    if value.lower() == "now":
        return now
    if value[:1] in "+-" and len(value) > 1:
        try:
            offset = parse_duration(value[1:])
        except UsageError:
            raise UsageError(f"invalid time {text!r}: {TIME_FORMS}") from None
        return now - offset if value[0] == "-" else now + offset
    if value.startswith("@"):
        try:
            return float(value[1:])
        except ValueError:
            raise UsageError(f"invalid time {text!r}: {TIME_FORMS}") from None
    if _DURATION_FULL.match(value.lower()):
        raise UsageError(f"invalid time {text!r}: a time relative to now has a sign; did you mean '-{value}' ({value} ago)?")
    iso = value[:-1] + "+00:00" if value[-1:] in "zZ" else value
    try:
        parsed = datetime.fromisoformat(iso)
    except ValueError:
        raise UsageError(f"invalid time {text!r}: {TIME_FORMS}") from None
    if parsed.tzinfo is None:
        parsed = parsed.astimezone()  # a time without a zone is local time
    return parsed.timestamp()


_FRACTION = re.compile(r"\.(\d+)")


def parse_api_time(value: object) -> float | None:
    """Unix seconds of a Kubernetes API timestamp (RFC 3339 with a zone); ``None`` when missing or malformed.

    Fractional seconds of any length are normalized to microseconds first, so that Python 3.10's
    ``fromisoformat`` (which accepts only 3 or 6 digits) reads nanosecond times too.
    """
    if not isinstance(value, str) or not value[:1].isdigit():
        return None
    return _parse_api_text(value)


@functools.lru_cache(maxsize=16_384)
def _parse_api_text(value: str) -> float | None:
    """Memoized: a running pod's container start times come back in every status update it gets."""
    text = _FRACTION.sub(lambda m: "." + (m.group(1) + "000000")[:6], value, count=1)
    try:
        return parse_time(text, now=0.0)
    except UsageError:
        return None


FIRST_TIME, LAST_TIME = -62_104_060_800, 253_370_764_799
"""0002-01-01T00:00:00Z and 9998-12-31T23:59:59Z: the times ``format_time`` can print (datetime's years 1 to 9999),
with a year's room on either side for what a report computes from them (an end one second later, a bucket)."""


def is_printable_time(value: int) -> bool:
    return FIRST_TIME <= value <= LAST_TIME


def format_time(ts: float) -> str:
    """RFC 3339 in UTC with second precision, the form every report prints."""
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_duration(seconds: float) -> str:
    """``1h02m03s``-style text for reports."""
    total = int(round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def format_duration_flag(seconds: float) -> str:
    """A duration as the flags take it (``parse_duration``): ``30d``, ``1h30m``, ``90s`` reads ``1m30s``."""
    rest = int(round(seconds))
    parts = []
    for unit in ("d", "h", "m", "s"):
        count, rest = divmod(rest, _UNIT_SECONDS[unit])
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"


def format_span(since: float, until: float) -> str:
    """``2026-11-23T10:46:31Z–10:46:51Z``: the end's date is left out when it is the start's."""
    start, end = format_time(since), format_time(until)
    return f"{start}–{end[11:] if end[:10] == start[:10] else end}"
