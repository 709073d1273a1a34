from collections import Counter

import pytest

from kubectl_sktrace.export.advice import (
    Blind,
    Filled,
    LeftOut,
    coverage_block,
    default_namespace_note,
    empty_trace_reason,
    merge_blind,
)
from kubectl_sktrace.trace.observation import EXACT, LIVE, NOT_OBSERVED, RECONSTRUCTED, exact_spans, how_of, percent, shares, tell

END = 1_800_000_000
TAIL = ", or pass --allow-empty to write it anyway"


@pytest.mark.parametrize(
    "left, include, expected",
    [
        (LeftOut(recorded=1, namespaces=Counter({"default": 1})), None,
         "the only object is in excluded namespaces (default); pass --include-namespaces default"),
        (LeftOut(recorded=3, namespaces=Counter({"monitoring": 2, "kube-system": 1})), None,
         "all 3 objects are in excluded namespaces (kube-system, monitoring); pass --include-namespaces kube-system,monitoring"),
        (LeftOut(recorded=4, namespaces=Counter({"a": 2, "b": 2})), frozenset({"x", "y"}),
         "all 4 objects are outside namespaces x, y (in a, b); pass --include-namespaces a,b"),
        (LeftOut(recorded=2, labels=2), None, "all 2 objects are matched by --exclude-labels; pass fewer --exclude-labels"),
        (LeftOut(recorded=12, namespaces=Counter({"default": 8}), cluster_scoped=3, labels=1), None,
         "all 12 objects were left out: 8 in excluded namespaces (default), 3 cluster-scoped, 1 matched by --exclude-labels; "
         "pass --include-namespaces default"),
        (LeftOut(recorded=0), None,
         "the cache recorded no object before 2027-01-15T08:00:00Z; check the kinds of the tracer config "
         "('kubectl sktrace status' shows what the cache holds)"),
    ],
    ids=["one-in-default", "infrastructure", "wrong-namespaces", "labels", "mixed", "nothing-recorded"],
)
def test_empty_trace_reason(left, include, expected):
    reason = empty_trace_reason(left, include_namespaces=include, end_ts=END, history_start=END - 100)
    assert reason == f"the trace would hold no objects: {expected}{TAIL}"


def test_no_synced_recording():
    reason = empty_trace_reason(LeftOut(), include_namespaces=None, end_ts=END, history_start=None)
    assert reason == f"the trace would hold no objects: no recording in the cache has finished listing the cluster; record with 'kubectl sktrace start' first{TAIL}"


@pytest.mark.parametrize(
    "include, default_exclusions, expected",
    [
        (None, True, "left out 1 object in namespace default (SimKube's excluded namespaces include it); "
                     "to keep them, pass --include-namespaces default,shop"),
        (frozenset({"shop"}), True, None),
        (None, False, None),
    ],
    ids=["default-list", "include-given", "own-exclusions"],
)
def test_default_namespace_note(include, default_exclusions, expected):
    left = LeftOut(recorded=2, namespaces=Counter({"default": 1}), kept_namespaces={"shop"})
    assert default_namespace_note(left, include_namespaces=include, default_exclusions=default_exclusions) == expected


H = 1_800_000_000  # 2027-01-15T08:00:00Z


@pytest.mark.parametrize(
    "spans, expected",
    [
        ([], []),
        ([(H + 10, H + 20, "API unreachable"), (H + 15, H + 30, "API unreachable")], [Blind(H + 10, H + 30, ("API unreachable",))]),
        ([(H + 10, H + 20, "API unreachable"), (H + 20, H + 25, "watch expired")],
         [Blind(H + 10, H + 25, ("API unreachable", "watch expired"))]),
        ([(H - 50, H + 5, "no recorder ran"), (H + 90, H + 200, "no recorder ran")],
         [Blind(H, H + 5, ("no recorder ran",)), Blind(H + 90, H + 100, ("no recorder ran",))]),
        ([(H + 40, H + 41, "watch expired"), (H + 10, H + 12, "API unreachable"), (H + 200, H + 300, "x")],
         [Blind(H + 10, H + 12, ("API unreachable",)), Blind(H + 40, H + 41, ("watch expired",))]),
    ],
    ids=["none", "overlapping-kinds", "touching-causes", "clipped-to-the-window", "sorted-outside-dropped"],
)
def test_merge_blind(spans, expected):
    assert merge_blind(spans, start=H, end=H + 100) == expected


@pytest.mark.parametrize(
    "blind, unrecorded, inferred, expected",
    [
        ([], [], (0, 0), None),
        ([(H + 100, H + 120, "API unreachable")], [], (0, 0),
         "coverage: 99.4% of the window (1h00m00s) observed live; not observed:\n"
         "  2027-01-15T08:01:40Z–08:02:00Z (20s, API unreachable)"),
        ([(H + 100 * i, H + 100 * i + 10, "watch expired") for i in range(1, 8)] + [(H + 2000, H + 2001, "API unreachable")], [], (0, 0),
         "coverage: 98.0% of the window (1h00m00s) observed live; not observed:\n"
         + "".join(f"  2027-01-15T08:{m:02d}:{s:02d}Z–08:{m:02d}:{s + 10:02d}Z (10s, watch expired)\n"
                   for m, s in [(1, 40), (3, 20), (5, 0), (6, 40), (8, 20)])
         + "  and 2 more gaps and 1 gap shorter than 5s"),
        ([(H + 3599.5, H + 3600, "watch expired")], [("apps/v1.StatefulSet", 3, "forbidden")], (14, 3),
         "coverage: 99.9% of the window (1h00m00s) observed live; not observed:\n"
         "  1 gap shorter than 5s\n"
         "  apps/v1.StatefulSet was not recorded by run 3 (forbidden): its changes during that run are not in the trace\n"
         "  14 events reconstructed after a gap (3 deletions, 11 creations or changes): "
         "their times are when the recorder caught up, not when they happened"),
        ([], [], (1, 0),
         "coverage: 100% of the window (1h00m00s) observed live\n"
         "  1 event reconstructed after a gap (0 deletions, 1 creation or change): "
         "their times are when the recorder caught up, not when they happened"),
        ([(H + 61, H + 63, "no recorder ran")], [], (0, 0),
         "coverage: 99.9% of the window (1h00m00s) observed live; not observed:\n"
         "  2027-01-15T08:01:01Z–08:01:03Z (2s, no recorder ran)"),
        ([(H + 61, H + 61.4, "no recorder ran"), (H + 70, H + 71, "no recorder ran")], [], (0, 0),
         "coverage: 99.9% of the window (1h00m00s) observed live; not observed:\n"
         "  2027-01-15T08:01:10Z–08:01:11Z (1s, no recorder ran)\n"
         "  and 1 gap shorter than 5s"),
    ],
    ids=["all-observed", "one-outage", "many-gaps", "never-100-percent-with-a-gap", "reconstructed-only", "a-short-stop-is-listed",
         "a-handover-under-a-second-is-counted-not-listed"],
)
def test_coverage_block(blind, unrecorded, inferred, expected):
    block = coverage_block(start_ts=H, end_ts=H + 3600, blind=blind, unrecorded=unrecorded, inferred=inferred[0],
                           inferred_deleted=inferred[1])
    assert block == expected


def test_a_gap_a_log_filled_is_listed_once_and_counted_as_exact():
    """A gap of 20 min that a RequestResponse log covered for its first 12 min, and one it did not cover: the headline
    counts the exact time apart, each gap is one line, the filled one says what filled it and what stays reconstructed."""
    filled = Filled(H + 600, H + 1800, H + 600.4, H + 1320, ("RequestResponse",), 9, 0)
    block = coverage_block(start_ts=H, end_ts=H + 3600, blind=[(H + 600, H + 1800, "no recorder ran"), (H + 3000, H + 3060, "no recorder ran")],
                           filled=[filled])
    assert block == (
        "coverage: 65.0% of the window (1h00m00s) observed live, 20.0% exact from the audit log, 15.0% not observed; not observed live:\n"
        "  2027-01-15T08:10:00Z–08:30:00Z (20m00s, no recorder ran); filled from the audit log (RequestResponse, 9 events); "
        "2027-01-15T08:22:00Z–08:30:00Z not in the log: reconstructed\n"
        "  2027-01-15T08:50:00Z–08:51:00Z (1m00s, no recorder ran)")


def test_a_gap_a_log_filled_whole_leaves_nothing_not_observed_to_count():
    """Every blind second exact from the log: the headline counts what there is, as ``status`` says it (no "0.0% not
    observed" of nothing), and still lists the gap with what filled it."""
    filled = Filled(H + 600, H + 1800, H + 599.5, H + 1800.5, ("RequestResponse",), 9, 0)
    block = coverage_block(start_ts=H, end_ts=H + 3600, blind=[(H + 600, H + 1800, "no recorder ran")], filled=[filled])
    assert block == (
        "coverage: 66.6% of the window (1h00m00s) observed live, 33.3% exact from the audit log; not observed live:\n"
        "  2027-01-15T08:10:00Z–08:30:00Z (20m00s, no recorder ran); filled from the audit log (RequestResponse, 9 events)")


def test_stretches_are_told_live_exact_or_reconstructed():
    stretches = tell(start=H, end=H + 100, blind=[(H + 10, H + 50)], exact=[(H + 10, H + 30), (H + 90, H + 100)])
    assert [(s.since - H, s.until - H, s.how) for s in stretches] == [
        (0, 10, LIVE), (10, 30, EXACT), (30, 50, RECONSTRUCTED), (50, 100, LIVE)]
    assert shares(stretches) == {LIVE: 60, EXACT: 20, NOT_OBSERVED: 20}
    assert [percent(x) for x in (0.0, 0.0004, 0.0015, 0.9996, 1.0)] == ["0.0%", "<0.1%", "0.1%", "99.9%", "100%"]
    assert how_of(H + 10, H + 50, [(H + 10, H + 30)]) == "exact from the audit log, then from 08:00:30Z reconstructed"
    metadata = Filled(H, H + 100, H, H + 100, ("Metadata",), 2, 0)
    assert exact_spans([metadata]) == []  # a Metadata log only moved deletions: the time stays reconstructed
