"""The timeline chart, exactly as a person reads it: SimKube's trace fixtures drawn in block characters and in
ASCII, the counting rules on small made-up traces, and the charset choice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubectl_sktrace.trace.files.format import Trace, read_trace
from kubectl_sktrace.trace.reports.timeline import (
    ASCII,
    UNICODE,
    Charset,
    build_timeline,
    charset_for,
    render_timeline,
)

DATA = Path(__file__).resolve().parents[1] / "data"


def draw(name: str, *, charset: Charset, width: int, top: int = 10) -> str:
    trace = read_trace(DATA / f"{name}.sktrace")
    return "\n".join(render_timeline(build_timeline(trace, top=top), title=f"Trace {name}.sktrace", width=width, charset=charset))


CRONJOB_UNICODE = """\
Trace cronjob.sktrace
Window 2025-03-29T22:20:23Z .. 2025-03-29T22:23:48Z (3m25s)
1 owner with pods or spec changes

CronJob default/hello-simkube 1 │    █████   ████   █████  │
                                │                         ×│
                                └──────────────────────────┘
                                22:20:23Z          22:23:51Z

▁▂▃▄▅▆▇█ running pods; █ = the row's most, at its left
◆ spec applied   × deleted   1 column = 8s"""

CRONJOB_ASCII = """\
Trace cronjob.sktrace
Window 2025-03-29T22:20:23Z .. 2025-03-29T22:23:48Z (3m25s)
1 owner with pods or spec changes

CronJob default/hello-simkube 1 |    @@@@@   @@@@   @@@@@  |
                                |                         x|
                                +--------------------------+
                                22:20:23Z          22:23:51Z

.:-=+*#@ running pods; @ = the row's most, at its left
o spec applied   x deleted   1 column = 8s"""

BARE_PODS_UNICODE = """\
Trace bare-pods.sktrace
Window 2026-06-12T16:41:08Z .. 2026-06-12T16:43:51Z (2m43s)
The top 3 of 4 owners by pods and spec changes

Pod testing/bare-pod-1781282509 1 │          █████████                      │
                                  │          ◆                              │
Pod testing/bare-pod-1781282570 1 │                         █████████       │
                                  │                         ◆               │
Pod testing/bare-pod-1781282630 1 │                                        █│
                                  │                                        ◆│
                                  └─────────────────────────────────────────┘
                                  2026-06-12T16:41:08Z   2026-06-12T16:43:52Z

▁▂▃▄▅▆▇█ running pods; █ = the row's most, at its left
◆ spec applied   × deleted   1 column = 4s"""

BARE_PODS_ASCII = """\
Trace bare-pods.sktrace
Window 2026-06-12T16:41:08Z .. 2026-06-12T16:43:51Z (2m43s)
4 owners with pods or spec changes

Pod testing/bare-pod-1781282509 1 |          @@@@@@@@@                      |
                                  |          o                              |
Pod testing/bare-pod-1781282570 1 |                         @@@@@@@@@       |
                                  |                         o               |
Pod testing/bare-pod-1781282630 1 |                                        @|
                                  |                                        o|
Pod testing/bare-pod-1781282449 1 |@@@                                      |
                                  +-----------------------------------------+
                                  2026-06-12T16:41:08Z   2026-06-12T16:43:52Z

.:-=+*#@ running pods; @ = the row's most, at its left
o spec applied   x deleted   1 column = 4s"""

DSB_UNICODE = """\
Trace dsb-scaling.sktrace
Window 2024-03-19T23:48:58Z .. 2024-03-20T00:07:52Z (18m54s)
The top 4 of 8 owners by pods and spec changes; 19 objects without
either are not shown

Deployment dsb/nginx-thrift         - │            ◆    ◆◆       │
Deployment dsb/compose-post-service - │            ◆            ◆│
Deployment dsb/text-service         - │            ◆        ◆    │
Deployment dsb/post-storage-service - │                 ◆◆       │
                                      └──────────────────────────┘
                                      23:48:58Z          00:08:28Z

▁▂▃▄▅▆▇█ running pods; █ = the row's most, at its left
◆ spec applied   × deleted   1 column = 45s"""

DSB_ASCII_NARROW = """\
Trace dsb-scaling.sktrace
Window 2024-03-19T23:48:58Z ..
2024-03-20T00:07:52Z (18m54s)
The top 3 of 8 owners by pods and spec
changes; 19 objects without either are
not shown

nginx-thrift    - |         o   o     |
compose-post-s~ - |         o        o|
text-service    - |         o      o  |
                  +-------------------+
                  23:48:58Z   00:07:58Z

.:-=+*#@ running pods; @ = the row's
most, at its left
o spec applied   x deleted   1 column =
1m00s"""


@pytest.mark.parametrize(
    ("name", "charset", "width", "top", "expected"),
    [
        ("cronjob", UNICODE, 60, 10, CRONJOB_UNICODE),
        ("cronjob", ASCII, 60, 10, CRONJOB_ASCII),
        ("bare-pods", UNICODE, 80, 3, BARE_PODS_UNICODE),
        ("bare-pods", ASCII, 80, 10, BARE_PODS_ASCII),
        ("dsb-scaling", UNICODE, 72, 4, DSB_UNICODE),
        ("dsb-scaling", ASCII, 40, 3, DSB_ASCII_NARROW),
    ],
    ids=["cronjob-unicode", "cronjob-ascii", "bare-pods-top3", "bare-pods-ascii", "dsb-top4", "dsb-narrowest-ascii"],
)
def test_fixture_charts(name: str, charset: Charset, width: int, top: int, expected: str) -> None:
    text = draw(name, charset=charset, width=width, top=top)
    assert text == expected
    assert max(len(line) for line in text.splitlines()) <= width


def _trace(events: list[dict[str, Any]], lifecycles: dict[tuple[str, str], list[dict[str, Any]]] | None = None) -> Trace:
    return Trace(version=2, config={"trackedObjects": {}}, events=events, index={},
                 pod_lifecycles={owner: {7: entries} for owner, entries in (lifecycles or {}).items()})


def _deployment(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "shop"}}


T0 = 1_800_000_000


def test_bars_scale_to_the_rows_most_and_a_second_spans_several_columns() -> None:
    """Pods 1..8 running together at seconds 0..7 (one more each second), none at 8: one level a second; 9
    seconds in 32 columns is 3 columns a second. Marks sit in a second's first column."""
    pods = [{"Finished": [T0 + i, T0 + 8]} for i in range(8)]
    trace = _trace([{"ts": T0, "applied_objs": [_deployment("web")], "deleted_objs": []},
                    {"ts": T0 + 3, "applied_objs": [_deployment("web")], "deleted_objs": []},
                    {"ts": T0 + 8, "applied_objs": [], "deleted_objs": [_deployment("web")]}],
                   {("apps/v1.Deployment", "shop/web"): pods})
    assert render_timeline(build_timeline(trace, top=10), title="t", width=56, charset=UNICODE) == [
        "t",
        "Window 2027-01-15T08:00:00Z .. 2027-01-15T08:00:08Z (8s)",
        "1 owner with pods or spec changes",
        "",
        "Deployment shop/web 8 │▁▁▁▂▂▂▃▃▃▄▄▄▅▅▅▆▆▆▇▇▇███   │",
        "                      │         ◆              ×  │",
        "                      └───────────────────────────┘",
        "                      08:00:00Z           08:00:09Z",
        "",
        "▁▂▃▄▅▆▇█ running pods; █ = the row's most, at its left",
        "◆ spec applied   × deleted   1 second = 3 columns",
    ]
    ascii_lines = render_timeline(build_timeline(trace, top=10), title="t", width=56, charset=ASCII)
    assert ascii_lines[4:6] == ["Deployment shop/web 8 |...:::---===+++***###@@@   |",
                                "                      |         o              x  |"]


def test_running_pods_are_the_most_at_one_instant_of_a_column() -> None:
    """Two pods one after the other in one 2-second column count as one; a Running pod lasts to the end."""
    trace = _trace([{"ts": T0, "applied_objs": [_deployment("web")], "deleted_objs": []},
                    {"ts": T0 + 99, "applied_objs": [], "deleted_objs": []}],
                   {("apps/v1.Deployment", "shop/web"): [{"Finished": [T0, T0 + 1]}, {"Finished": [T0 + 1, T0 + 2]},
                                                          {"Running": T0 + 50}, {"Finished": [T0 + 50, T0 + 50]}]})
    timeline = build_timeline(trace, top=10)
    assert timeline is not None and (timeline.start, timeline.end, timeline.active, timeline.quiet) == (T0, T0 + 99, 1, 0)
    lines = render_timeline(timeline, title="t", width=80, charset=ASCII)
    assert lines[4:5] + lines[-1:] == ["Deployment shop/web 2 |=                        @========================|",
                                       "o spec applied   x deleted   1 column = 2s"]


def test_top_orders_by_activity_then_kind_and_name() -> None:
    events = [{"ts": T0, "applied_objs": [_deployment(n) for n in ("a", "b", "c", "quiet")], "deleted_objs": []},
              {"ts": T0 + 10, "applied_objs": [_deployment("b"), _deployment("c")], "deleted_objs": []},
              {"ts": T0 + 20, "applied_objs": [_deployment("c")], "deleted_objs": [_deployment("a")]}]
    timeline = build_timeline(_trace(events), top=2)
    assert timeline is not None
    assert [o.label for o in timeline.owners] == ["Deployment shop/c", "Deployment shop/a"]
    assert (timeline.active, timeline.quiet) == (3, 1)


def test_a_trace_without_events_or_activity() -> None:
    assert render_timeline(build_timeline(_trace([]), top=10), title="Trace e", width=60, charset=UNICODE) == [
        "Trace e", "No events: nothing to draw."]
    state_only = _trace([{"ts": T0, "applied_objs": [_deployment("web")], "deleted_objs": []}])
    assert render_timeline(build_timeline(state_only, top=10), title="Trace s", width=80, charset=UNICODE) == [
        "Trace s", "Window 2027-01-15T08:00:00Z .. 2027-01-15T08:00:00Z (0s)",
        "No pods and no spec changes in the window (1 object in its start state)."]


def test_too_narrow_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 40 columns"):
        render_timeline(None, title="t", width=39, charset=ASCII)


@pytest.mark.parametrize(
    ("encoding", "ascii_only", "expected"),
    [("utf-8", False, UNICODE), ("UTF8", False, UNICODE), ("utf-8", True, ASCII), ("ascii", False, ASCII),
     ("latin-1", False, ASCII), (None, False, ASCII), ("no-such-codec", False, ASCII)],
    ids=["utf-8", "utf8-spelling", "asked-for-ascii", "ascii", "latin-1", "unknown", "bogus"],
)
def test_charset_for(encoding: str | None, ascii_only: bool, expected: Charset) -> None:
    assert charset_for(encoding, ascii_only=ascii_only) is expected


def test_gaps_in_the_record_are_drawn_on_the_axis() -> None:
    """Seconds 2 and 3 were not recorded live, in part or whole: their columns on the axis say so."""
    trace = _trace([{"ts": T0, "applied_objs": [_deployment("web")], "deleted_objs": []},
                    {"ts": T0 + 5, "applied_objs": [_deployment("web")], "deleted_objs": []}])
    timeline = build_timeline(trace, top=10, end=T0 + 7, gaps=((T0 - 9.0, T0 - 1.0), (T0 + 2.5, T0 + 4.0)))
    assert timeline is not None and timeline.gaps == ((T0 + 2.5, T0 + 4.0),)  # the one before the window is dropped
    assert render_timeline(timeline, title="t", width=52, charset=UNICODE)[5:] == [
        "Deployment shop/web - │               ◆        │",
        "                      └──────┄┄┄┄┄┄────────────┘",
        "                      08:00:00Z        08:00:08Z",
        "",
        "▁▂▃▄▅▆▇█ running pods; █ = the row's most, at its",
        "left",
        "◆ spec applied   × deleted   1 second = 3 columns",
        "┄ no recorder, or a watch down: changes then were",
        "caught up later, at that time",
    ]


def test_time_an_audit_log_made_exact_is_drawn_as_exact_not_as_a_gap() -> None:
    """Seconds 2 to 4 were not recorded live; a log made seconds 2 and 3 exact (backfill): those columns say exact, the
    rest of the gap stays a gap, and the legend tells both."""
    trace = _trace([{"ts": T0, "applied_objs": [_deployment("web")], "deleted_objs": []},
                    {"ts": T0 + 5, "applied_objs": [_deployment("web")], "deleted_objs": []}])
    timeline = build_timeline(trace, top=10, end=T0 + 7, gaps=((T0 + 2.0, T0 + 5.0),), exact=((T0 + 2.0, T0 + 4.0),))
    assert timeline is not None
    assert render_timeline(timeline, title="t", width=52, charset=UNICODE)[6:] == [
        "                      └──────══════┄┄┄─────────┘",
        "                      08:00:00Z        08:00:08Z",
        "",
        "▁▂▃▄▅▆▇█ running pods; █ = the row's most, at its",
        "left",
        "◆ spec applied   × deleted   1 second = 3 columns",
        "┄ no recorder, or a watch down: changes then were",
        "caught up later, at that time",
        "═ no recorder, but exact from the audit log",
        "(backfill): changes at their logged time",
    ]
