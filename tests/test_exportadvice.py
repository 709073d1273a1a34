from collections import Counter

import pytest

from kubectl_sktrace.exportadvice import LeftOut, default_namespace_note, empty_trace_reason

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
