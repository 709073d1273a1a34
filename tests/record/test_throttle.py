"""Throttled requests (429, API Priority and Fairness) retried where they failed, as client-go does: the same list page
with the same continue token, the same watch from the same resourceVersion; never an outage; told once per kind."""

from __future__ import annotations

import random
import threading
from typing import Any, Iterable

import pytest
from test_watching import DEPLOY, RES, Clock, Recorder, Script, ev, page

from kubectl_sktrace.errors import ThrottledError, TransientError
from kubectl_sktrace.kube.discovery import Resource
from kubectl_sktrace.model import GVK, POD
from kubectl_sktrace.record import throttle as throttle_module
from kubectl_sktrace.record.listing import Stopped
from kubectl_sktrace.record.notices import ThrottleNotices
from kubectl_sktrace.record.throttle import MAX_RETRIES, PASS_QUIET, PASSED, THROTTLED, Throttle, ThrottleNews
from kubectl_sktrace.record.watching import run_watch

pytestmark = pytest.mark.timeout(10)

BUSY = "the API server at https://x is throttling us (429): Too many requests, please try again later."


def throttled(retry_after: float | None = 2.0) -> ThrottledError:
    return ThrottledError(BUSY, retry_after=retry_after)


class Waits:
    """The throttle's sleep: moves the fake clock, writes down each wait."""

    def __init__(self, clock: Clock) -> None:
        self.clock, self.slept = clock, []  # type: list[float]

    def __call__(self, seconds: float) -> bool:
        self.slept.append(seconds)
        self.clock.now += seconds
        return False


def make(clock: Clock, *, seed: int = 1) -> tuple[Throttle, Waits, threading.Event]:
    stop, waits = threading.Event(), Waits(clock)
    return Throttle(clock=clock, stop=stop, rng=random.Random(seed), sleep=waits), waits, stop


def test_a_throttled_list_page_is_asked_again_with_the_same_continue_token_after_retry_after() -> None:
    clock = Clock()
    script = Script([page(["a"], cont="c1"), throttled(2.0), throttled(4.0), page(["b"], rv="7")], [[]], clock)
    gate, waits, stop = make(clock)
    sink = Recorder()
    run_watch(resource=RES, namespace="ns", list_page=gate.lists(script.list_page), watch=gate.watches(script.watch), sink=sink,
              clock=clock, sleep=lambda s: None, stop=stop, rng=random.Random(0), max_cycles=1)
    assert script.list_calls == [("ns", 500, None), ("ns", 500, "c1"), ("ns", 500, "c1"), ("ns", 500, "c1")]
    assert [c[0] for c in sink.calls] == ["begin", "page", "page", "end"]  # one list, each object once
    assert 2.0 <= waits.slept[0] <= 2.0 * 1.1 and 4.0 <= waits.slept[1] <= 4.0 * 1.1  # Retry-After, plus jitter
    assert gate.counts() == {str(DEPLOY): 2}


def test_a_watch_renewal_that_meets_a_429_resumes_from_its_version_without_an_outage() -> None:
    clock = Clock()
    script = Script([page([], rv="10")], [[ev("ADDED", "a", "11")], throttled(1.0), throttled(2.0), [ev("MODIFIED", "a", "12")]],
                    clock)
    gate, waits, stop = make(clock)
    sink = Recorder()
    run_watch(resource=RES, namespace="ns", list_page=gate.lists(script.list_page), watch=gate.watches(script.watch), sink=sink,
              clock=clock, sleep=lambda s: None, stop=stop, rng=random.Random(0), max_cycles=3)
    assert script.watch_calls == ["10", "11", "11", "11"]
    assert not [c for c in sink.calls if c[0] in ("interrupted", "resumed")]
    assert [c[:2] for c in sink.calls if c[0] in ("ADDED", "MODIFIED")] == [("ADDED", "a"), ("MODIFIED", "a")]
    assert len(waits.slept) == 2


def test_a_5xx_with_retry_after_is_retried_in_place_and_one_without_is_not() -> None:
    clock = Clock()
    gate, waits, _ = make(clock)
    answers: list[Any] = [TransientError("failed (503)", retry_after=3.0), "ok"]

    def request() -> str:
        item = answers.pop(0)
        if isinstance(item, BaseException):
            raise item
        return str(item)

    assert gate.call(DEPLOY, request) == "ok" and len(waits.slept) == 1
    with pytest.raises(TransientError, match="reset"):
        gate.call(DEPLOY, lambda: (_ for _ in ()).throw(TransientError("connection reset")))


def test_retries_are_bounded_then_the_watch_loop_backs_off_without_an_outage() -> None:
    clock = Clock()
    gate, waits, stop = make(clock)
    calls = []

    def always_busy(resource: Resource, **kw: Any) -> Iterable[dict[str, Any]]:
        calls.append(kw["resource_version"])
        raise throttled(1.0)

    script = Script([page([], rv="10")], [], clock)
    sink = Recorder()
    slept: list[float] = []
    run_watch(resource=RES, namespace="ns", list_page=gate.lists(script.list_page), watch=gate.watches(always_busy), sink=sink,
              clock=clock, sleep=slept.append, stop=stop, rng=random.Random(0), max_cycles=2)
    assert calls == ["10"] * (MAX_RETRIES + 1)  # the first try and its retries, all from the same version
    assert len(slept) == 1  # then the loop's own back-off
    assert not [c for c in sink.calls if c[0] in ("interrupted", "resumed", "failed")]


def test_a_stop_during_the_wait_ends_the_request() -> None:
    clock = Clock()
    stop = threading.Event()
    gate = Throttle(clock=clock, stop=stop, rng=random.Random(1), sleep=lambda s: stop.set())
    with pytest.raises(Stopped):
        gate.call(DEPLOY, lambda: (_ for _ in ()).throw(throttled()))


def test_one_line_when_a_kind_is_throttled_and_one_when_its_requests_have_passed_for_a_while() -> None:
    clock = Clock()
    gate, _, _ = make(clock)
    answers: list[Any] = [throttled(1.0), "ok", throttled(2.0), throttled(4.0), "ok", "ok"]

    def request() -> str:
        item = answers.pop(0)
        if isinstance(item, BaseException):
            raise item
        return str(item)

    gate.call(DEPLOY, request)
    news = gate.take_news()
    assert [(n.state, n.ts) for n in news] == [(THROTTLED, 1000.0)]
    gate.call(DEPLOY, request)  # throttled again before PASS_QUIET: the same stretch
    passed_at = clock.now
    gate.call(DEPLOY, request)
    assert gate.take_news() == []
    clock.now += PASS_QUIET
    assert gate.take_news() == [ThrottleNews(DEPLOY, PASSED, passed_at, since=1000.0, retries=3)]
    assert gate.take_news() == []


def test_the_lines_a_person_reads() -> None:
    lines: list[str] = []
    notices = ThrottleNotices(warn=lambda m: lines.append(f"Warning: {m}"), note=lines.append)
    notices.report([ThrottleNews(DEPLOY, THROTTLED, 1764240000.0, detail=BUSY),
                    ThrottleNews(DEPLOY, PASSED, 1764240047.0, since=1764240000.0, retries=5)])
    assert lines == [
        f"Warning: apps/v1.Deployment: throttled by the API server since 10:40:00Z ({BUSY}); each request is retried as the "
        "server asks (Retry-After), nothing is lost",
        "apps/v1.Deployment: requests pass again since 10:40:47Z (throttled for 47s, 5 retries)",
    ]


def test_a_stretch_that_throttles_several_kinds_is_told_once_naming_them() -> None:
    """A saturated level throttles every kind of the identity: one warning and one line for the stretch, not one per kind."""
    lines: list[str] = []
    notices = ThrottleNotices(warn=lambda m: lines.append(f"Warning: {m}"), note=lines.append)
    pods, cms = POD, GVK("", "v1", "ConfigMap")
    notices.report([ThrottleNews(DEPLOY, THROTTLED, 1764240000.0, detail=BUSY), ThrottleNews(pods, THROTTLED, 1764240000.5, detail=BUSY)])
    notices.report([ThrottleNews(cms, THROTTLED, 1764240003.0, detail=BUSY)])  # joins the stretch told
    notices.report([ThrottleNews(DEPLOY, PASSED, 1764240040.0, since=1764240000.0, retries=5),
                    ThrottleNews(pods, PASSED, 1764240041.0, since=1764240000.5, retries=2)])
    assert len(lines) == 1  # v1.ConfigMap still throttled
    notices.report([ThrottleNews(cms, PASSED, 1764240047.0, since=1764240003.0, retries=1)])
    assert lines == [
        f"Warning: apps/v1.Deployment, v1.Pod: throttled by the API server since 10:40:00Z ({BUSY}); each request is retried "
        "as the server asks (Retry-After), nothing is lost",
        "apps/v1.Deployment, v1.Pod, v1.ConfigMap: requests pass again since 10:40:47Z (throttled for 47s, 8 retries)",
    ]
    notices.report([ThrottleNews(pods, THROTTLED, 1764240100.0, detail=BUSY)])  # a stretch of its own
    assert lines[-1].startswith("Warning: v1.Pod: throttled by the API server since 10:41:40Z")


def test_jitter_stays_within_its_share_of_retry_after() -> None:
    clock = Clock()
    for seed in range(20):
        gate, waits, _ = make(clock, seed=seed)
        answers: list[Any] = [throttled(8.0), "ok"]
        gate.call(DEPLOY, lambda: answers.pop(0) if answers[0] == "ok" else (_ for _ in ()).throw(answers.pop(0)))
        assert 8.0 <= waits.slept[0] <= 8.0 * (1 + throttle_module.JITTER)


def test_a_throttled_start_is_said_once_then_logged(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    caplog.set_level(logging.INFO, logger="kubectl_sktrace.record.throttle")
    clock = Clock()
    gate, waits, _ = make(clock)
    answers: list[Any] = [throttled(1.0), throttled(2.0), {"kind": "APIGroupList"}, throttled(1.0), "uid"]

    def request() -> Any:
        item = answers.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    assert gate.call(None, request) == {"kind": "APIGroupList"} and gate.call(None, request) == "uid"
    assert [r.levelname for r in caplog.records] == ["WARNING", "INFO", "INFO"]
    assert gate.take_news() == [] and gate.counts() == {}  # no kind to tell of


@pytest.mark.parametrize("body", [
    b"Too many requests, please try again later.\n",  # kube-apiserver's http.Error, as the emulator writes it
    b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Too many requests, please try again later.",'
    b'"reason":"TooManyRequests","details":{"retryAfterSeconds":3},"code":429}',  # a Status, as a proxy in front may write it
], ids=["plain-text", "status"])
def test_a_429_is_throttling_whichever_body_the_server_writes(body: bytes) -> None:
    from kubectl_sktrace.errors import ThrottledError
    from kubectl_sktrace.kube.errors import status_error

    error = status_error(429, body, {"Retry-After": "3"}, host="https://api", context="c", path="/api/v1/configmaps", verb="list",
                         resource=None, namespace=None)
    assert isinstance(error, ThrottledError) and error.retry_after == 3.0
    assert str(error) == "the API server at https://api is throttling us (429): Too many requests, please try again later."
