"""Pod lifecycle derivation, the update order, deletion, and export's window rules (docs/spec.md §4, §7 step 5)."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_sktrace.trace.lifecycle import (
    EMPTY,
    Lifecycle,
    as_of,
    clamp,
    derive_lifecycle,
    finished,
    merge_lifecycle,
    on_pod_gone,
    overlaps,
    running,
    to_trace_entry,
)

T0 = 1_700_000_000  # 2023-11-14T22:13:20Z


def iso(ts: int, frac: str = "") -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + frac + "Z"


def run(name: str, started: int, frac: str = "") -> dict[str, Any]:
    return {"name": name, "state": {"running": {"startedAt": iso(started, frac)}}}


def term(name: str, started: int | None, ended: int, frac: str = "") -> dict[str, Any]:
    state: dict[str, Any] = {"exitCode": 0, "finishedAt": iso(ended, frac)}
    if started is not None:
        state["startedAt"] = iso(started, frac)
    return {"name": name, "state": {"terminated": state}}


def wait(name: str) -> dict[str, Any]:
    return {"name": name, "state": {"waiting": {"reason": "ContainerCreating"}}}


def pod(containers: list[str], *, init: list[dict[str, Any]] | None = None, regular: list[dict[str, Any]] | None = None, status: bool = True) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [{"name": c, "image": "x"} for c in containers]}}
    if status:
        obj["status"] = {"phase": "Running"}
        if init is not None:
            obj["status"]["initContainerStatuses"] = init
        if regular is not None:
            obj["status"]["containerStatuses"] = regular
    return obj


DERIVE_CASES = [
    pytest.param(pod(["a"], status=False), EMPTY, id="missing-status"),
    pytest.param(pod(["a"]), EMPTY, id="status-without-container-statuses"),
    pytest.param(pod(["a"], regular=[wait("a")]), EMPTY, id="only-waiting"),
    pytest.param(pod(["a"], regular=[{"name": "a"}]), EMPTY, id="status-without-state"),
    pytest.param(pod(["a"], regular=[run("a", T0)]), running(T0), id="one-running"),
    pytest.param(pod(["a"], init=[run("i", T0)], regular=[wait("a")]), running(T0), id="init-running-only"),
    pytest.param(pod(["a"], init=[term("i", T0, T0 + 5)]), running(T0), id="init-containers-only-terminated"),
    pytest.param(pod(["a"], init=[term("i", T0, T0 + 5)], regular=[wait("a")]), running(T0), id="terminated-init-waiting-regular"),
    pytest.param(pod(["a"], init=[term("i", T0, T0 + 5)], regular=[run("a", T0 + 6)]), running(T0), id="init-start-is-earliest"),
    pytest.param(pod(["a", "b"], regular=[run("a", T0 + 3), run("b", T0 + 1)]), running(T0 + 1), id="earliest-of-two-running"),
    pytest.param(pod(["a", "b"], regular=[term("a", T0, T0 + 10), run("b", T0 + 2)]), running(T0), id="one-of-two-terminated"),
    pytest.param(pod(["a", "b"], regular=[term("a", T0, T0 + 10)]), running(T0), id="second-container-has-no-status"),
    pytest.param(pod(["a", "b"], regular=[term("a", T0, T0 + 10), term("b", T0 + 1, T0 + 20)]), finished(T0, T0 + 20), id="all-terminated-latest-end"),
    pytest.param(pod(["a", "b"], regular=[term("a", T0 + 1, T0 + 30), term("b", T0, T0 + 20)]), finished(T0, T0 + 30), id="latest-end-from-first-listed"),
    pytest.param(pod(["a"], init=[term("i", T0, T0 + 5)], regular=[term("a", T0 + 6, T0 + 9)]), finished(T0, T0 + 9), id="init-and-regular-terminated"),
    pytest.param(pod(["a"], regular=[term("a", T0, T0 + 9, ".999999")]), finished(T0, T0 + 9), id="fractional-seconds-truncated"),
    pytest.param(pod(["a"], regular=[run("a", T0, ".5")]), running(T0), id="short-fraction-truncated"),
    pytest.param(pod(["a"], regular=[run("a", T0, ".123456789")]), running(T0), id="nanosecond-fraction-truncated"),
    pytest.param(pod(["a"], regular=[term("a", None, T0 + 9)]), EMPTY, id="terminated-without-start-is-empty"),
    pytest.param(pod(["a", "b"], regular=[term("a", None, T0 + 9), term("b", T0 + 2, T0 + 4)]), finished(T0 + 2, T0 + 9), id="never-started-container-still-ends"),
    pytest.param(pod(["a"], regular=[{"name": "a", "state": {"running": {"startedAt": "garbage"}}}]), EMPTY, id="malformed-time-ignored"),
    pytest.param(pod(["a"], regular=[{"name": "a", "state": {"running": {}}}]), EMPTY, id="running-without-startedAt"),
    pytest.param(pod(["a"], regular=[term("b", T0, T0 + 1)]), running(T0), id="terminated-status-of-other-name"),
    pytest.param({"metadata": {"name": "p"}, "status": {"containerStatuses": [term("a", T0, T0 + 4)]}}, finished(T0, T0 + 4), id="no-spec-falls-back-to-statuses"),
    pytest.param({"status": "nonsense"}, EMPTY, id="status-not-a-dict"),
    pytest.param({"status": {"containerStatuses": "nonsense", "initContainerStatuses": [None, 3]}}, EMPTY, id="statuses-malformed"),
]


@pytest.mark.parametrize("obj, expected", DERIVE_CASES)
def test_derive_lifecycle(obj: dict[str, Any], expected: Lifecycle) -> None:
    assert derive_lifecycle(obj) == expected


def test_derive_uses_state_not_last_state_or_phase() -> None:
    obj = pod(["a"], regular=[{"name": "a", "state": {"running": {"startedAt": iso(T0 + 100)}}, "lastState": {"terminated": {"startedAt": iso(T0), "finishedAt": iso(T0 + 50)}}}])
    obj["status"]["phase"] = "Succeeded"
    obj["status"]["startTime"] = iso(T0 - 100)
    assert derive_lifecycle(obj) == running(T0 + 100)


def test_derive_does_not_mutate_pod() -> None:
    import copy

    obj = pod(["a"], regular=[term("a", T0, T0 + 9)])
    before = copy.deepcopy(obj)
    derive_lifecycle(obj)
    assert obj == before


REFUSAL = "refused lifecycle update {old} -> {new}: only Empty -> Running(s) -> Finished(s, e) with the same start is allowed; keeping {old}"

MERGE_CASES = [
    pytest.param(EMPTY, running(10), running(10), False, id="empty-to-running"),
    pytest.param(EMPTY, finished(10, 20), finished(10, 20), False, id="empty-to-finished"),
    pytest.param(running(10), finished(10, 20), finished(10, 20), False, id="running-to-finished-same-start"),
    pytest.param(running(10), running(10), running(10), False, id="running-unchanged"),
    pytest.param(finished(10, 20), finished(10, 20), finished(10, 20), False, id="finished-unchanged"),
    pytest.param(running(10), EMPTY, running(10), False, id="empty-update-ignored"),
    pytest.param(finished(10, 20), EMPTY, finished(10, 20), False, id="empty-update-after-finished-ignored"),
    pytest.param(EMPTY, EMPTY, EMPTY, False, id="empty-to-empty"),
    pytest.param(running(10), running(15), running(10), True, id="refused-different-start-crashloop"),
    pytest.param(running(10), running(5), running(10), True, id="refused-earlier-start"),
    pytest.param(running(10), finished(11, 20), running(10), True, id="refused-finished-with-other-start"),
    pytest.param(finished(10, 20), finished(10, 25), finished(10, 20), True, id="refused-finished-different-end"),
    pytest.param(finished(10, 20), finished(12, 20), finished(10, 20), True, id="refused-finished-different-start"),
    pytest.param(finished(10, 20), running(10), finished(10, 20), True, id="refused-finished-back-to-running"),
    pytest.param(finished(10, 20), running(30), finished(10, 20), True, id="refused-finished-to-new-running"),
]


@pytest.mark.parametrize("old, new, kept, refused", MERGE_CASES)
def test_merge_lifecycle(old: Lifecycle, new: Lifecycle, kept: Lifecycle, refused: bool) -> None:
    value, reason = merge_lifecycle(old, new)
    assert value == kept
    assert reason == (REFUSAL.format(old=old, new=new) if refused else None)


def test_refusal_text_is_one_readable_line() -> None:
    _, reason = merge_lifecycle(finished(10, 20), running(10))
    assert reason == "refused lifecycle update Finished(10, 20) -> Running(10): only Empty -> Running(s) -> Finished(s, e) with the same start is allowed; keeping Finished(10, 20)"


@pytest.mark.parametrize(
    "current, ts, expected",
    [
        pytest.param(running(10), 50, finished(10, 50), id="running-closed-at-deletion"),
        pytest.param(finished(10, 20), 50, finished(10, 20), id="finished-unchanged"),
        pytest.param(EMPTY, 50, EMPTY, id="empty-stays-empty"),
        pytest.param(running(10), 10, finished(10, 10), id="deleted-in-start-second"),
        pytest.param(running(60), 50, finished(60, 60), id="end-never-before-start"),
    ],
)
def test_on_pod_gone(current: Lifecycle, ts: int, expected: Lifecycle) -> None:
    assert on_pod_gone(current, ts=ts) == expected


START, END = 100, 200

OVERLAP_CASES = [
    pytest.param(running(50), True, id="running-before-window"),
    pytest.param(running(150), True, id="running-inside"),
    pytest.param(running(199), True, id="running-last-second"),
    pytest.param(running(200), False, id="running-at-end-excluded"),
    pytest.param(running(250), False, id="running-after"),
    pytest.param(finished(50, 99), False, id="finished-before-start"),
    pytest.param(finished(50, 100), True, id="finished-at-start-kept"),
    pytest.param(finished(50, 150), True, id="finished-inside-started-before"),
    pytest.param(finished(120, 150), True, id="finished-inside"),
    pytest.param(finished(150, 250), True, id="started-inside-ends-after"),
    pytest.param(finished(50, 250), True, id="spans-whole-window-kept"),
    pytest.param(finished(200, 250), False, id="starts-at-end-excluded"),
    pytest.param(EMPTY, False, id="empty-never"),
]


@pytest.mark.parametrize("lc, expected", OVERLAP_CASES)
def test_overlaps(lc: Lifecycle, expected: bool) -> None:
    assert overlaps(lc, start_ts=START, end_ts=END) is expected


@pytest.mark.parametrize(
    "lc, at, expected",
    [
        pytest.param(finished(50, 150), END, finished(50, 150), id="ended-before"),
        pytest.param(finished(50, 199), END, finished(50, 199), id="ended-in-the-last-second"),
        pytest.param(finished(50, 200), END, running(50), id="ends-at-the-time-still-running"),
        pytest.param(finished(50, 250), END, running(50), id="ends-after-still-running"),
        pytest.param(running(199), END, running(199), id="running-unchanged"),
        pytest.param(running(200), END, EMPTY, id="starts-at-the-time-not-started"),
        pytest.param(finished(220, 250), END, EMPTY, id="starts-after-not-started"),
        pytest.param(finished(50, 199), 199.5, running(50), id="end-second-not-over-still-running"),
        pytest.param(finished(50, 198), 199.5, finished(50, 198), id="end-second-over"),
        pytest.param(running(50), float("-inf"), EMPTY, id="nothing-known"),
        pytest.param(EMPTY, END, EMPTY, id="empty-unchanged"),
    ],
)
def test_as_of(lc: Lifecycle, at: float, expected: Lifecycle) -> None:
    assert as_of(lc, at=at) == expected


@pytest.mark.parametrize(
    "lc, expected",
    [
        pytest.param(running(50), running(100), id="running-clamped"),
        pytest.param(running(150), running(150), id="running-inside-unchanged"),
        pytest.param(finished(50, 150), finished(100, 150), id="finished-start-clamped"),
        pytest.param(finished(50, 250), finished(100, 250), id="spanning-clamped-end-kept"),
        pytest.param(finished(100, 150), finished(100, 150), id="start-equal-unchanged"),
        pytest.param(EMPTY, EMPTY, id="empty-unchanged"),
    ],
)
def test_clamp(lc: Lifecycle, expected: Lifecycle) -> None:
    assert clamp(lc, start_ts=START) == expected


@pytest.mark.parametrize(
    "lc, entry",
    [
        pytest.param(running(5), {"Running": 5}, id="running"),
        pytest.param(finished(5, 9), {"Finished": [5, 9]}, id="finished"),
    ],
)
def test_to_trace_entry(lc: Lifecycle, entry: dict[str, Any]) -> None:
    assert to_trace_entry(lc) == entry


def test_empty_has_no_trace_entry() -> None:
    with pytest.raises(ValueError, match="never stored"):
        to_trace_entry(EMPTY)


@pytest.mark.parametrize(
    "lc, text, flags",
    [
        pytest.param(EMPTY, "Empty", (True, False, False), id="empty"),
        pytest.param(running(3), "Running(3)", (False, True, False), id="running"),
        pytest.param(finished(3, 4), "Finished(3, 4)", (False, False, True), id="finished"),
    ],
)
def test_states(lc: Lifecycle, text: str, flags: tuple[bool, bool, bool]) -> None:
    assert str(lc) == text
    assert (lc.is_empty, lc.is_running, lc.is_finished) == flags


def test_a_crashlooping_pod_keeps_its_first_start_and_is_closed_on_deletion() -> None:
    """A pod's status stream as the recorder sees it: pending, running, restarted, deleted."""
    updates = [
        pod(["a"], regular=[wait("a")]),
        pod(["a"], regular=[run("a", T0)]),
        pod(["a"], regular=[term("a", T0, T0 + 30)]),  # the container exited, the pod is Finished for now
        pod(["a"], regular=[run("a", T0 + 40)]),  # restarted: refused, Finished is kept
    ]
    stored = EMPTY
    reasons = []
    for update in updates:
        stored, reason = merge_lifecycle(stored, derive_lifecycle(update))
        reasons.append(reason)
    assert stored == finished(T0, T0 + 30)
    assert [r is not None for r in reasons] == [False, False, False, True]
    assert on_pod_gone(stored, ts=T0 + 99) == finished(T0, T0 + 30)


def test_restart_before_finishing_keeps_first_start_then_closes_at_deletion() -> None:
    stored, _ = merge_lifecycle(EMPTY, derive_lifecycle(pod(["a"], regular=[run("a", T0)])))
    stored, reason = merge_lifecycle(stored, derive_lifecycle(pod(["a"], regular=[run("a", T0 + 40)])))
    assert stored == running(T0)
    assert reason is not None
    assert on_pod_gone(stored, ts=T0 + 99) == finished(T0, T0 + 99)
