"""Quiet kinds, kinds that come and go, permissions that change: the watch loop's decisions, on scripted streams
with a fake clock (``test_watching``'s tools), and ``availability``'s back-off (docs/coverage.md)."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest
from test_watching import DEPLOY, RES, Clock, Recorder, Script, bookmark, ev, page, run

from kubectl_sktrace.errors import ForbiddenError, NotServedError, TransientError
from kubectl_sktrace.kube.discovery import Resource
from kubectl_sktrace.record import availability
from kubectl_sktrace.record.availability import FORBIDDEN, NOT_SERVED, Access
from kubectl_sktrace.record.watching import WATCH_TIMEOUT, run_watch

pytestmark = pytest.mark.timeout(10)

GONE = NotServedError("the server does not serve apps/v1.Deployment (/apis/apps/v1/deployments returned 404)")
REFUSED = ForbiddenError("forbidden: cannot list deployments.apps in all namespaces; grant ...", verb="list",
                         resource="deployments")


def drive(lists: list[Any], watches: list[Any], *, cycles: int, resource: Resource | None = RES,
          rediscover: Any = None, step: float = 2.0, timeout_seconds: int | None = 300) -> tuple[Recorder, Script, list[float]]:
    clock = Clock()
    script = Script(lists, watches, clock, step=step)
    sink = Recorder()
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.now += seconds

    run_watch(resource=resource, gvk=DEPLOY, namespace=None, list_page=script.list_page, watch=script.watch, sink=sink,
              clock=clock, sleep=sleep, stop=threading.Event(), rng=random.Random(3), timeout_seconds=timeout_seconds,
              max_cycles=cycles, later=lambda seconds, fn: (lambda: None), rediscover=rediscover)
    return sink, script, slept


def told(sink: Recorder, *kinds: str) -> list[tuple[Any, ...]]:
    return [c for c in sink.calls if c[0] in kinds]


# -- a quiet kind is not an outage --------------------------------------------------------------------------


def test_every_watch_asks_the_server_to_end_it_after_a_minute():
    seen: dict[str, Any] = {}
    stop = threading.Event()

    def watch(resource: Resource, **kw: Any) -> Any:
        seen.update(kw)
        stop.set()
        return iter(())

    run_watch(resource=RES, namespace=None, list_page=lambda r, **kw: page([], rv="4"), watch=watch, sink=Recorder(),
              clock=Clock(), sleep=lambda s: None, stop=stop, rng=random.Random(0))
    assert seen["timeout_seconds"] == WATCH_TIMEOUT == 60


def test_a_quiet_stream_the_server_ends_is_watched_again_from_its_version_and_proves_the_kind_alive():
    # a kind that does not change: each stream stays silent for its whole minute, then the server ends it cleanly;
    # the connection that is refused next finds the kind alive until the last clean end, not since the list
    refused = TransientError("connection refused")
    sink, script, slept = drive([page(["a"], rv="100")], [[60.0], [60.0], refused, [ev("ADDED", "b", "101")]], cycles=5)
    assert script.list_calls == [(None, 500, None)] and script.watch_calls == ["100", "100", "100", "100"]
    assert told(sink, "interrupted") == [("interrupted", 1000.0 + 2 + 60 + 60, "API unreachable")]
    assert len(slept) == 1  # the refusal's back-off; no back-off after a stream that lasted its minute


def test_a_connection_found_broken_after_the_process_stood_still_is_a_suspension_not_a_break_proven_alive():
    # a laptop asleep: the server cut the quiet stream at some point of the sleep; its break proves nothing
    sink, _, _ = run([page([], rv="100")], [[bookmark("101"), 30.0, TransientError("reset")], [ev("ADDED", "a", "102")]],
                     cycles=3, stall=5.0)
    assert told(sink, "interrupted") == [("interrupted", 1004.0, "recorder suspended")]


# -- kinds that come and go ---------------------------------------------------------------------------------


def test_a_kind_not_served_is_told_once_asked_again_slowly_and_listed_once_served():
    sink, script, slept = drive([GONE] * 8 + [page(["a"], rv="7")], [[ev("ADDED", "b", "8")]], cycles=10)
    assert told(sink, "unserved") == [("unserved", 1002.0, str(GONE))]  # once, not once per retry
    # every try begins a list that a 404 leaves unfinished (the sink drops it); the last one completes
    assert [c[0] for c in sink.calls if c[0] != "begin"] == ["unserved", "page", "end", "ADDED"]
    assert [round(d / min(2 ** i, availability.NOT_SERVED_RECHECK), 1) for i, d in enumerate(slept)] == \
        pytest.approx([1.0] * 8, abs=0.21)  # 1 s doubling to 20 s, ±20 %: a served kind is listed within 24 s
    assert max(slept) <= availability.NOT_SERVED_RECHECK * 1.2


def test_a_kind_absent_from_discovery_is_found_again_by_discovery_then_listed():
    found: list[Resource | None] = [None, None, RES]
    asked: list[str] = []

    def rediscover(gvk: Any) -> Resource | None:
        asked.append(str(gvk))
        return found.pop(0)

    sink, script, slept = drive([page(["a"], rv="7")], [[]], cycles=4, resource=None, rediscover=rediscover)
    assert asked == ["apps/v1.Deployment"] * 3  # not at the first attempt: the session has just asked discovery
    (unserved,) = told(sink, "unserved")
    assert unserved[1] == 1000.0 and "its discovery does not list it" in unserved[2]
    assert [c[0] for c in sink.calls[1:]] == ["begin", "page", "end"] and len(slept) == 3


def test_a_crd_deleted_mid_run_sends_its_deletions_then_the_kind_is_not_served_until_it_comes_back():
    # the server sends DELETED for each object, ends the stream, then answers 404 until a CRD serves the kind again
    rediscovered: list[Resource | None] = [None, RES]
    sink, script, slept = drive([page(["a"], rv="100"), page(["c"], rv="300")],
                                [[ev("DELETED", "a", "150")], GONE, [ev("ADDED", "d", "301")]], cycles=6,
                                rediscover=lambda gvk: rediscovered.pop(0))
    assert [c[:2] for c in sink.calls] == [
        ("begin", 1002.0), ("page", ["a"]), ("end", "100"), ("DELETED", "a"), ("unserved", 1004.0),
        ("begin", pytest.approx(1006.0 + slept[0] + slept[1])), ("page", ["c"]), ("end", "300"), ("ADDED", "d")]
    assert told(sink, "interrupted", "resumed", "failed") == []  # no outage, no failure: the kind was merely not served
    assert script.watch_calls == ["100", "150", "300"]  # re-watched from the last deletion: 404


# -- permissions that change --------------------------------------------------------------------------------


def test_a_refused_kind_is_told_once_asked_again_at_most_every_48s_and_recorded_once_granted():
    sink, script, slept = drive([REFUSED] * 9 + [page(["a"], rv="7")], [[]], cycles=11)
    assert told(sink, "failed") == [("failed", str(REFUSED))]
    assert [c[0] for c in sink.calls if c[0] != "begin"] == ["failed", "page", "end"]
    assert max(slept) <= availability.FORBIDDEN_RETRY * 1.2 < 60  # a grant is recorded within 60 s
    assert slept[8] >= availability.FORBIDDEN_RETRY * 0.8  # capped, not hammering: a few requests a minute


def test_a_grant_revoked_mid_run_is_met_at_the_next_request_and_a_refusal_ends_an_outage():
    # an open watch keeps streaming after its grant is revoked: the 403 comes when it is opened again
    down = TransientError("connection refused")
    sink, script, slept = drive([page(["a"], rv="100"), page(["a"], rv="200")],
                                [[ev("MODIFIED", "a", "101")], down, ForbiddenError("forbidden: cannot watch deployments.apps",
                                                                                     verb="watch", resource="deployments")],
                                cycles=5)
    assert [c[0] for c in sink.calls] == ["begin", "page", "end", "MODIFIED", "interrupted", "failed",
                                          "begin", "page", "end"]
    assert script.horizon_calls == 1 and script.watch_calls == ["100", "101", "101"]


def test_stop_during_a_slow_retry_ends_the_kind_promptly():
    stop = threading.Event()
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        stop.set()

    clock = Clock()
    script = Script([GONE] * 3, [], clock)
    run_watch(resource=RES, namespace=None, list_page=script.list_page, watch=script.watch, sink=Recorder(), clock=clock,
              sleep=sleep, stop=stop, rng=random.Random(0), max_cycles=5)
    assert len(waits) == 1 and len(script.list_calls) == 1


# -- availability, pure ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("states", "news"), [
    ((NOT_SERVED, NOT_SERVED, NOT_SERVED), [True, False, False]),
    ((FORBIDDEN, NOT_SERVED, FORBIDDEN), [True, True, True]),
], ids=["the same state", "another state"])
def test_a_refusal_is_news_only_when_the_state_changes(states, news):
    access = Access(random.Random(0))
    assert [access.refused(state) for state in states] == news
    assert access.readable() == states[-1] and access.readable() is None


def test_the_back_off_starts_over_with_each_new_state(monkeypatch):
    monkeypatch.setattr(availability, "FORBIDDEN_RETRY", 4.0)
    access = Access(random.Random(0))
    access.refused(FORBIDDEN)
    first = [access.next_delay() for _ in range(5)]
    assert [round(d / b, 1) for d, b in zip(first, (1, 2, 4, 4, 4))] == pytest.approx([1.0] * 5, abs=0.21)
    access.readable()
    access.refused(FORBIDDEN)
    assert access.next_delay() <= 1.2
    assert availability.longest_wait(FORBIDDEN) == pytest.approx(4.8)


def test_a_stream_answered_with_its_first_bookmark_only_is_watched_from_it():
    sink, script, _ = drive([page([], rv="100")], [[bookmark("150")], [60.0]], cycles=3)
    assert script.watch_calls == ["100", "150"] and told(sink, "interrupted") == []
