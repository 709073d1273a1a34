from __future__ import annotations

import time

import pytest

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.timeparse import (
    format_duration,
    format_time,
    parse_duration,
    parse_time,
)

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("10m", 600), ("2h", 7200), ("1d", 86400), ("1h30m", 5400), ("45", 45), ("1.5m", 90), (" 2H ", 7200)],
)
def test_parse_duration(text, seconds) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(("text", "message"), [("10x", "invalid duration '10x': use a number with a unit, like '90s', '10m', '2h', '1d' or '1h30m'"),
                                                         ("-30d", "invalid duration '-30d': a duration has no sign; did you mean '30d'"), ("0s", "it must be longer than zero"), ("", "invalid duration")])
def test_parse_duration_rejects(text, message) -> None:
    with pytest.raises(UsageError, match=message):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "ts"),
    [
        ("now", NOW),
        ("-30m", NOW - 1800),
        ("-2h", NOW - 7200),
        ("-1d", NOW - 86400),
        ("+90s", NOW + 90),
        ("@1700000000", 1700000000),
        ("2026-11-22T10:00:00Z", 1795341600),
        ("2026-11-22T12:00:00+02:00", 1795341600),
    ],
)
def test_parse_time(text, ts) -> None:
    assert parse_time(text, now=NOW) == ts


def test_time_without_zone_is_local(monkeypatch) -> None:
    monkeypatch.setenv("TZ", "Europe/Paris")
    time.tzset()
    try:
        assert parse_time("2026-11-22T11:00:00", now=NOW) == 1795341600
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.mark.parametrize("text", ["yesterday", "-30x", "@abc", "2026-13-01T00:00:00Z"])
def test_parse_time_rejects(text) -> None:
    with pytest.raises(UsageError) as info:
        parse_time(text, now=NOW)
    assert str(info.value) == (
        f"invalid time {text!r}: use 'now', a relative time like '-30m', '-2h', '-1d', "
        "an RFC 3339 time like '2026-11-22T10:00:00Z', or '@<unix seconds>'"
    )


def test_format_time_and_duration() -> None:
    assert format_time(1795341600.7) == "2026-11-22T10:00:00Z"
    assert [format_duration(s) for s in (0, 59, 61, 3600, 3723)] == ["0s", "59s", "1m01s", "1h00m00s", "1h02m03s"]
