"""The list/watch engine driven by scripted list pages and watch streams, with a fake clock and sleep."""

from __future__ import annotations

import random
import threading
from typing import Any, Callable, Iterable

import pytest

from kubectl_sktrace.errors import (
    ExpiredError,
    ForbiddenError,
    KubeError,
    NotServedError,
    SilentConnectionError,
    TransientError,
)
from kubectl_sktrace.kube.discovery import Resource
from kubectl_sktrace.model import GVK
from kubectl_sktrace.record import resuming
from kubectl_sktrace.record.watching import SETTLE_SECONDS, Backoff, Vigil, run_watch

pytestmark = pytest.mark.timeout(10)

DEPLOY = GVK("apps", "v1", "Deployment")
RES = Resource(gvk=DEPLOY, plural="deployments", namespaced=True, verbs=frozenset({"list", "watch"}))


def obj(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}


def page(names: list[str], *, rv: str = "100", cont: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": rv}
    if cont:
        meta["continue"] = cont
    return {"kind": "DeploymentList", "metadata": meta, "items": [obj(n, "1") for n in names]}


def ev(kind: str, name: str, rv: str) -> dict[str, Any]:
    return {"type": kind, "object": obj(name, rv)}


def bookmark(rv: str) -> dict[str, Any]:
    return {"type": "BOOKMARK", "object": {"kind": "Deployment", "metadata": {"resourceVersion": rv}}}


def expired_event(reason: str = "Expired") -> dict[str, Any]:
    return {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": reason, "message": "too old resource version"}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Recorder:
    """A Sink that writes down every call, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def relist_begin(self, gvk: GVK, ts: float) -> None:
        self.calls.append(("begin", ts))

    def resume_begin(self, gvk: GVK, ts: float) -> None:
        self.calls.append(("resume", ts))

    def relist_page(self, gvk: GVK, items: list[dict[str, Any]], ts: float) -> None:
        self.calls.append(("page", [i["metadata"]["name"] for i in items], ts))
        assert all(i["apiVersion"] == "apps/v1" and i["kind"] == "Deployment" for i in items)

    def relist_end(self, gvk: GVK, resource_version: str, ts: float) -> None:
        self.calls.append(("end", resource_version, ts))

    def event(self, gvk: GVK, event_type: str, obj: dict[str, Any], ts: float) -> None:
        assert obj["apiVersion"] == "apps/v1" and obj["kind"] == "Deployment"
        self.calls.append((event_type, obj["metadata"]["name"], ts))

    def failed(self, gvk: GVK, error: Exception) -> None:
        self.calls.append(("failed", str(error)))

    def unserved(self, gvk: GVK, ts: float, detail: str) -> None:
        self.calls.append(("unserved", ts, detail))

    def interrupted(self, gvk: GVK, since: float, cause: str, detail: str) -> None:
        self.calls.append(("interrupted", since, cause))

    def resumed(self, gvk: GVK, ts: float, horizon: str | None) -> None:
        self.calls.append(("resumed", ts, horizon))


class Script:
    """Scripted list/watch callables. Each list step is a page dict or an exception; each watch step is a
    list of events (an exception object among them is raised at that point) or an exception."""

    def __init__(self, lists: list[Any], watches: list[Any], clock: Clock, *, step: float = 0.0) -> None:
        self.lists = list(lists)
        self.watches = list(watches)
        self.clock = clock
        self.step = step
        self.list_calls: list[tuple[str | None, int, str | None]] = []
        self.watch_calls: list[str] = []
        self.horizon: str | BaseException = "999"
        self.horizon_calls = 0

    def list_page(self, resource: Resource, *, namespace: str | None, limit: int, continue_token: str | None) -> dict[str, Any]:
        if limit == 1:  # the probe of the server's current version before a watch resumes after an outage
            self.horizon_calls += 1
            self.clock.now += self.step
            if isinstance(self.horizon, BaseException):
                raise self.horizon
            return page([], rv=self.horizon)
        self.list_calls.append((namespace, limit, continue_token))
        self.clock.now += self.step
        item = self.lists.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    def watch(self, resource: Resource, *, namespace: str | None, resource_version: str, timeout_seconds: int,
              stop: threading.Event | None) -> Iterable[dict[str, Any]]:
        self.watch_calls.append(resource_version)
        item = self.watches.pop(0)
        if isinstance(item, BaseException):
            raise item

        def stream() -> Iterable[dict[str, Any]]:
            for e in item:
                if isinstance(e, float):  # the process stands still this long before the next item
                    self.clock.now += e
                    continue
                if callable(e):  # something happens while the stream sends nothing (a timer fires)
                    e()
                    continue
                self.clock.now += self.step
                if isinstance(e, BaseException):
                    raise e
                yield e
        return stream()


class Timers:
    """An injected ``later``: it remembers what it was asked to run, and runs it when the test says so."""

    def __init__(self) -> None:
        self.asked: list[tuple[float, Callable[[], None]]] = []
        self.cancelled: list[bool] = []

    def __call__(self, seconds: float, fn: Callable[[], None]) -> Callable[[], None]:
        index = len(self.asked)
        self.asked.append((seconds, fn))
        self.cancelled.append(False)

        def cancel() -> None:
            self.cancelled[index] = True
        return cancel

    def fire(self) -> None:
        """The time is up for every timer that is not cancelled."""
        for (_, fn), cancelled in zip(self.asked, self.cancelled):
            if not cancelled:
                fn()


def run(lists: list[Any], watches: list[Any], *, cycles: int, step: float = 2.0, seed: int = 1,
        stop: threading.Event | None = None, sleep: Callable[[float], None] | None = None,
        horizon: str | BaseException = "999", stall: float | None = None,
        retrying: Callable[[GVK], None] | None = None, later: Any = "never",
        sink: Recorder | None = None, resume_from: str | None = None) -> tuple[Recorder, Script, list[float]]:
    """``later``: the settle timer; by default one that never fires (a real one with None)."""
    clock = Clock()
    script = Script(lists, watches, clock, step=step)
    script.horizon = horizon
    sink = sink or Recorder()
    slept: list[float] = []

    def fake_sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.now += seconds

    vigil = None if stall is None else Vigil(clock=clock, monotonic=clock, threshold=stall)
    run_watch(resource=RES, namespace=None, list_page=script.list_page, watch=script.watch, sink=sink, clock=clock,
              sleep=sleep or fake_sleep, stop=stop or threading.Event(), rng=random.Random(seed), timeout_seconds=300,
              max_cycles=cycles, vigil=vigil, retrying=retrying, later=Timers() if later == "never" else later, resume_from=resume_from)
    return sink, script, slept


def test_paginated_list_then_watch_from_the_list_version():
    sink, script, slept = run([page(["a", "b"], cont="c1"), page(["c"], rv="120")],
                              [[ev("ADDED", "d", "121"), ev("MODIFIED", "a", "122")]], cycles=2)
    assert script.list_calls == [(None, 500, None), (None, 500, "c1")]
    assert script.watch_calls == ["120"]
    # all pages at one relist time (the time its first page answered: the snapshot's), events at their receive time
    assert sink.calls == [("begin", 1002.0), ("page", ["a", "b"], 1002.0), ("page", ["c"], 1002.0), ("end", "120", 1002.0),
                          ("ADDED", "d", 1006.0), ("MODIFIED", "a", 1008.0)]
    assert slept == []


def test_410_on_a_continue_token_restarts_the_list():
    sink, script, _ = run([page(["a"], cont="c1"), ExpiredError("continue too old"), page(["a"], cont="c2"), page(["b"], rv="7")],
                          [], cycles=1)
    assert script.list_calls == [(None, 500, None), (None, 500, "c1"), (None, 500, None), (None, 500, "c2")]
    assert sink.calls == [("begin", 1002.0), ("page", ["a"], 1002.0), ("begin", 1006.0), ("page", ["a"], 1006.0),
                          ("page", ["b"], 1006.0), ("end", "7", 1006.0)]


@pytest.mark.parametrize("expired", [
    ExpiredError("resource version expired (410)"),
    [ev("ADDED", "x", "101"), expired_event("Expired")],
    [expired_event("Gone")],
    [{"type": "ERROR", "object": {"kind": "Status", "code": 410}}],
], ids=["http-410", "error-event-expired", "error-event-gone", "error-event-code-only"])
def test_410_on_watch_relists(expired):
    sink, script, slept = run([page(["a"], rv="100"), page(["b"], rv="200")], [expired, []], cycles=4, step=0)
    assert script.watch_calls == ["100", "200"]
    assert [c for c in sink.calls if c[0] in ("begin", "end")] == [("begin", 1000.0), ("end", "100", 1000.0),
                                                                   ("begin", 1000.0), ("end", "200", 1000.0)]
    assert slept[:0] == []  # a relist happens at once; only the final empty stream backs off
    assert len(slept) == 1


@pytest.mark.parametrize("stream,resume", [
    ([ev("ADDED", "a", "101"), ev("MODIFIED", "a", "105")], "105"),
    ([ev("ADDED", "a", "101"), bookmark("150")], "150"),
    ([bookmark("150"), ev("DELETED", "a", "160")], "160"),
    ([{"type": "ADDED", "object": {"metadata": {"name": "n"}}}], "100"),
], ids=["last-event", "bookmark-after-event", "event-after-bookmark", "event-without-version"])
def test_clean_end_rewatches_from_the_last_version_seen(stream, resume):
    sink, script, slept = run([page([], rv="100")], [stream, [ev("ADDED", "z", "999")]], cycles=3)
    assert script.watch_calls == ["100", resume]
    assert script.list_calls == [(None, 500, None)]
    assert slept == []


def test_bookmarks_are_not_passed_to_the_sink():
    sink, _, _ = run([page([], rv="1")], [[bookmark("5"), ev("ADDED", "a", "6"), bookmark("7")]], cycles=2)
    assert [c[0] for c in sink.calls] == ["begin", "end", "ADDED"]


@pytest.mark.parametrize(("boom", "since"), [
    (TransientError("connection reset"), 1006.0),  # the server reset this connection: it was alive until then
    (SilentConnectionError("no data (read timed out)"), 1004.0),  # silent: alive until its last event, no later
], ids=["reset", "silent"])
def test_transient_error_midstream_resumes_from_the_last_event_without_relisting(boom, since):
    sink, script, slept = run([page([], rv="100")], [[ev("ADDED", "a", "101"), boom], [ev("ADDED", "b", "102")]], cycles=3)
    assert script.watch_calls == ["100", "101"]
    assert script.list_calls == [(None, 500, None)]
    assert [c[:2] for c in sink.calls[2:]] == [("ADDED", "a"), ("interrupted", since), ("resumed", 1008.0 + slept[0]),
                                              ("ADDED", "b")]
    assert sink.calls[3] == ("interrupted", since, "API unreachable")  # since the last proof of liveness
    assert sink.calls[4][2] == "999" and script.horizon_calls == 1  # the version the resumed stream catches up to
    assert slept == [pytest.approx(0.8, rel=0.2)]


def test_an_outage_is_one_interruption_however_many_retries_and_ends_when_watching_again():
    down = TransientError("connection refused")
    sink, script, slept = run([page([], rv="100")], [[bookmark("105"), down], down, down, [ev("ADDED", "b", "106")]], cycles=5)
    script_calls = [c for c in sink.calls if c[0] in ("interrupted", "resumed")]
    assert script_calls == [("interrupted", 1006.0, "API unreachable"), ("resumed", pytest.approx(1012.0 + sum(slept)), "999")]
    assert script.horizon_calls == 3 and script.watch_calls == ["100", "105", "105", "105"]
    assert [round(d / base, 1) >= 0.8 and round(d / base, 1) <= 1.2 for d, base in zip(slept, (0.8, 1.6, 3.2))] == [True] * 3


def test_each_retry_of_an_outage_is_told_but_not_a_retry_before_the_first_list():
    down = TransientError("connection refused")
    retries: list[GVK] = []
    run([down, page([], rv="100")], [[bookmark("105"), down], down, down, [ev("ADDED", "b", "106")]], cycles=6,
        retrying=retries.append)
    assert retries == [RES.gvk] * 3  # the three failed attempts of the outage, each followed by a retry


def test_the_back_off_grows_while_the_probe_before_a_resumed_watch_fails():
    down = TransientError("connection refused")
    sink, script, slept = run([page([], rv="100")], [[ev("ADDED", "a", "101"), down]], cycles=5, horizon=down)
    # the server is still down when each probe asks for its version: 0.8, 1.6, 3.2 s, not 0.8 s forever
    assert [0.8 <= d / base <= 1.2 for d, base in zip(slept, (0.8, 1.6, 3.2, 6.4))] == [True] * 4, slept
    assert script.horizon_calls == 3


def test_an_outage_ended_by_a_relist_resumes_at_the_relist_without_a_horizon():
    sink, script, slept = run([page(["a"], rv="100"), page(["a"], rv="300")],
                              [[ev("MODIFIED", "a", "101"), TransientError("reset")], ExpiredError("too old")], cycles=4)
    assert [c for c in sink.calls if c[0] in ("interrupted", "resumed", "begin")] == [
        ("begin", 1002.0), ("interrupted", 1006.0, "API unreachable"), ("begin", pytest.approx(1010.0 + slept[0])),
        ("resumed", pytest.approx(1010.0 + slept[0]), None)]


def test_a_410_on_a_healthy_watch_is_a_gap_from_the_last_event_until_the_relist():
    sink, script, slept = run([page([], rv="100"), page([], rv="300")], [[ev("ADDED", "a", "101"), expired_event()]], cycles=3)
    assert [c for c in sink.calls if c[0] in ("interrupted", "resumed")] == [
        ("interrupted", 1004.0, "watch expired"), ("resumed", 1008.0, None)]


def test_a_failure_before_the_first_list_completes_is_no_gap():
    sink, script, slept = run([TransientError("refused"), page([], rv="100")], [[ev("ADDED", "a", "101")]], cycles=3)
    assert not [c for c in sink.calls if c[0] in ("interrupted", "resumed")]


def test_backoff_doubles_to_the_cap_with_jitter_and_resets_after_success():
    fail = TransientError("503")
    watches = [fail] * 8 + [[ev("ADDED", "a", "101")], fail]
    sink, script, slept = run([page([], rv="100")], watches, cycles=11)
    bases = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    assert len(slept) == 9
    for got, base in zip(slept, bases):
        assert base * 0.8 <= got <= base * 1.2
    assert len(set(slept[6:8])) == 2  # jittered, not identical
    assert 0.64 <= slept[8] <= 0.96  # reset by the event that arrived
    assert script.watch_calls == ["100"] * 9 + ["101"]


def test_backoff_survives_a_very_long_outage():
    backoff = Backoff(random.Random(3))
    delays = [backoff.next_delay() for _ in range(5000)]
    assert max(delays) <= 36.0 and min(delays[10:]) >= 24.0


def test_backoff_jitter_is_deterministic_per_seed():
    a = [Backoff(random.Random(7)).next_delay() for _ in range(3)]
    b = [Backoff(random.Random(7)).next_delay() for _ in range(3)]
    assert a == b


@pytest.mark.parametrize("retry_after,expected", [(5.0, 5.0), (0.1, None), (1000.0, 300.0)],
                         ids=["longer-wins", "shorter-ignored", "capped"])
def test_retry_after_is_respected(retry_after, expected):
    sink, script, slept = run([page([], rv="100")], [TransientError("429", retry_after=retry_after), []], cycles=2)
    if expected is None:
        assert 0.64 <= slept[0] <= 0.96
    else:
        assert slept[0] == expected


def test_transient_list_failure_backs_off_and_lists_again():
    sink, script, slept = run([page(["a"], cont="c1"), TransientError("reset"), page(["a"], rv="5")], [], cycles=2, step=0)
    assert sink.calls == [("begin", 1000.0), ("page", ["a"], 1000.0), ("begin", pytest.approx(1000.0, abs=1)),
                          ("page", ["a"], pytest.approx(1000.0, abs=1)), ("end", "5", pytest.approx(1000.0, abs=1))]
    assert len(slept) == 1


def test_410_on_a_first_page_backs_off_instead_of_looping():
    _, script, slept = run([ExpiredError("410"), page([], rv="5")], [], cycles=2)
    assert len(slept) == 1 and len(script.list_calls) == 2


def test_an_empty_stream_that_ends_at_once_backs_off():
    _, script, slept = run([page([], rv="9")], [[], [], [bookmark("10")], []], cycles=5, step=0)
    assert len(slept) == 3
    assert 0.64 <= slept[0] <= 0.96 and 1.28 <= slept[1] <= 1.92
    assert 0.64 <= slept[2] <= 0.96  # the bookmark counted as a success
    assert script.watch_calls == ["9", "9", "9", "10"]


@pytest.mark.parametrize("where", ["list", "watch"])
def test_permanent_error_reports_failed_and_stops_this_kind(where):
    error = KubeError("unauthorized (401) by https://h with the credentials of context 'c': log in again")
    lists = [error] if where == "list" else [page([], rv="1")]
    watches = [error] if where == "watch" else []
    sink, script, slept = run(lists, watches, cycles=10)
    assert sink.calls[-1] == ("failed", str(error))
    assert slept == []


def test_other_error_events_are_retried_with_backoff():
    err = {"type": "ERROR", "object": {"kind": "Status", "code": 500, "message": "internal error"}}
    sink, script, slept = run([page([], rv="1")], [[err], [ev("ADDED", "a", "2")]], cycles=3)
    assert script.watch_calls == ["1", "1"] and len(slept) == 1
    assert script.list_calls == [(None, 500, None)]


def test_stop_set_before_start_does_nothing():
    stop = threading.Event()
    stop.set()
    sink, script, _ = run([page([], rv="1")], [], cycles=10, stop=stop)
    assert sink.calls == [] and script.list_calls == []


def test_stop_is_noticed_between_events():
    stop = threading.Event()
    clock = Clock()
    sink = Recorder()

    def watch(resource, **kw):
        yield ev("ADDED", "a", "2")
        stop.set()
        yield ev("ADDED", "b", "3")
        raise AssertionError("read past stop")

    run_watch(resource=RES, namespace=None, list_page=lambda r, **kw: page([], rv="1"), watch=watch, sink=sink,
              clock=clock, sleep=lambda s: None, stop=stop, rng=random.Random(0))
    assert [c[:2] for c in sink.calls] == [("begin", 1000.0), ("end", "1"), ("ADDED", "a")]


@pytest.mark.slow
def test_stop_during_a_backoff_sleep_ends_promptly_with_real_threads():
    """The recorder passes stop.wait as the sleep: a 30 s back-off must not delay a Ctrl-C."""
    import time
    stop = threading.Event()
    sink = Recorder()
    calls = []

    def watch(resource, **kw):
        calls.append(1)
        raise TransientError("down", retry_after=30)

    thread = threading.Thread(target=run_watch, kwargs=dict(
        resource=RES, namespace=None, list_page=lambda r, **kw: page([], rv="1"), watch=watch, sink=sink,
        clock=time.time, sleep=stop.wait, stop=stop, rng=random.Random(0)))
    thread.start()
    time.sleep(0.2)
    started = time.monotonic()
    stop.set()
    thread.join(2)
    assert not thread.is_alive() and time.monotonic() - started < 0.5
    assert calls == [1]


def test_stop_during_pagination_stops_before_the_next_page():
    stop = threading.Event()
    pages = iter([page(["a"], cont="c1"), page(["b"], rv="2")])

    def list_page(resource, **kw):
        p = next(pages)
        stop.set()
        return p

    sink = Recorder()
    run_watch(resource=RES, namespace=None, list_page=list_page, watch=lambda r, **kw: iter(()), sink=sink,
              clock=Clock(), sleep=lambda s: None, stop=stop, rng=random.Random(0))
    assert sink.calls == [("begin", 1000.0), ("page", ["a"], 1000.0)]


def test_watch_is_given_namespace_timeout_and_stop():
    seen = {}
    stop = threading.Event()

    def watch(resource, **kw):
        seen.update(kw)
        stop.set()
        return iter(())

    run_watch(resource=RES, namespace="team-a", list_page=lambda r, **kw: page([], rv="4"), watch=watch, sink=Recorder(),
              clock=Clock(), sleep=lambda s: None, stop=stop, rng=random.Random(0), timeout_seconds=120)
    assert seen == {"namespace": "team-a", "resource_version": "4", "timeout_seconds": 120, "stop": stop}


def test_a_single_transient_failure_is_info_and_repeated_ones_warn_before_the_first_list(caplog):
    import logging
    caplog.set_level(logging.INFO, logger="kubectl_sktrace.record.watching")
    fail = TransientError("no data in time")
    run([fail, fail, page([], rv="1")], [[ev("ADDED", "b", "3")]], cycles=4)
    levels = [(r.levelname, r.getMessage().split(";")[0]) for r in caplog.records]
    assert levels == [("INFO", "apps/v1.Deployment: no data in time"), ("WARNING", "apps/v1.Deployment: no data in time")]


def test_retries_during_an_outage_stay_info_the_sink_reports_the_outage_once(caplog):
    import logging
    caplog.set_level(logging.INFO, logger="kubectl_sktrace.record.watching")
    fail = TransientError("no data in time")
    run([page([], rv="1")], [[ev("ADDED", "a", "2"), fail], fail, fail, [ev("ADDED", "b", "3")]], cycles=5)
    assert {r.levelname for r in caplog.records} == {"INFO"}


def test_a_resumed_watch_answered_at_once_with_410_is_no_recovery_the_outage_goes_on_until_the_relist():
    sink, script, slept = run([page(["a"], rv="100"), page(["a"], rv="300")],
                              [[ev("MODIFIED", "a", "101"), TransientError("reset")], [expired_event()]], cycles=4)
    assert [c for c in sink.calls if c[0] in ("interrupted", "resumed")] == [
        ("interrupted", 1006.0, "API unreachable"), ("resumed", pytest.approx(1012.0 + slept[0]), None)]


def test_a_quiet_resumed_watch_that_ends_cleanly_ends_the_outage_at_its_connection():
    sink, script, slept = run([page([], rv="100")], [[ev("ADDED", "a", "101"), TransientError("reset")], []], cycles=3)
    assert [c for c in sink.calls if c[0] in ("interrupted", "resumed")] == [
        ("interrupted", 1006.0, "API unreachable"), ("resumed", pytest.approx(1008.0 + slept[0]), "999")]


def outage_calls(sink: Recorder) -> list[tuple[Any, ...]]:
    return [c for c in sink.calls if c[0] in ("interrupted", "resumed")]


def test_a_quiet_resumed_watch_ends_the_outage_at_its_connection_once_it_settles():
    # the resumed stream sends nothing (a kind with no objects, its next bookmark a minute away) and breaks later
    timers = Timers()
    sink, script, slept = run([page([], rv="100")], [[ev("ADDED", "a", "101"), TransientError("reset")],
                                                     [timers.fire, TransientError("reset")]], cycles=3, later=timers)
    assert [seconds for seconds, _ in timers.asked] == [SETTLE_SECONDS]  # armed for the resumed watch only
    connected = pytest.approx(1008.0 + slept[0])  # after the back-off and the horizon's probe
    assert outage_calls(sink) == [("interrupted", 1006.0, "API unreachable"), ("resumed", connected, "999"),
                                  ("interrupted", pytest.approx(1010.0 + slept[0]), "API unreachable")]  # from its break


def test_a_410_after_a_resumed_watch_settled_is_a_gap_of_its_own_from_the_connection():
    timers = Timers()
    sink, script, slept = run([page([], rv="100"), page([], rv="300")],
                              [[ev("ADDED", "a", "101"), TransientError("reset")], [timers.fire, expired_event()]],
                              cycles=4, later=timers)
    connected = pytest.approx(1008.0 + slept[0])
    assert outage_calls(sink) == [("interrupted", 1006.0, "API unreachable"), ("resumed", connected, "999"),
                                  ("interrupted", connected, "watch expired"), ("resumed", pytest.approx(1012.0 + slept[0]), None)]  # at the relist


def test_a_settle_timer_that_fires_after_the_stream_failed_at_once_says_nothing():
    timers = Timers()
    sink, _, _ = run([page(["a"], rv="100")], [[ev("MODIFIED", "a", "101"), TransientError("reset")], [expired_event()]],
                     cycles=3, later=timers)
    assert timers.cancelled == [True]
    (_, fn), = timers.asked
    fn()  # a timer thread that was already running when the stream failed
    assert outage_calls(sink) == [("interrupted", 1006.0, "API unreachable")]  # the outage goes on, until the relist


@pytest.mark.slow
def test_the_default_settle_timer_ends_the_outage_while_the_resumed_stream_stays_quiet():
    heard, waited = threading.Event(), []

    class Hearing(Recorder):
        def resumed(self, gvk: GVK, ts: float, horizon: str | None) -> None:
            super().resumed(gvk, ts, horizon)
            heard.set()

    sink, _, slept = run([page([], rv="100")], [[ev("ADDED", "a", "101"), TransientError("reset")],
                                                [lambda: waited.append(heard.wait(8)), ev("ADDED", "b", "102")]],
                         cycles=3, later=None, sink=Hearing())
    assert waited == [True]  # told while the stream sent nothing
    assert [c[:2] for c in sink.calls[2:]] == [("ADDED", "a"), ("interrupted", 1006.0), ("resumed", pytest.approx(1008.0 + slept[0])),
                                               ("ADDED", "b")]


def test_an_event_waits_for_the_timer_that_is_announcing_the_recovery():
    entered, waited = threading.Event(), []

    class Slow(Recorder):
        def resumed(self, gvk: GVK, ts: float, horizon: str | None) -> None:
            entered.set()
            threading.Event().wait(0.3)  # the event read meanwhile must not reach the sink before this call ends
            super().resumed(gvk, ts, horizon)

    def on_a_thread(seconds: float, fn: Callable[[], None]) -> Callable[[], None]:
        threading.Thread(target=fn).start()
        return lambda: None

    sink, _, _ = run([page([], rv="100")], [[ev("ADDED", "a", "101"), TransientError("reset")],
                                            [lambda: waited.append(entered.wait(8)), ev("ADDED", "b", "102")]],
                     cycles=3, later=on_a_thread, sink=Slow())
    assert waited == [True]
    assert [c[0] for c in sink.calls[2:]] == ["ADDED", "interrupted", "resumed", "ADDED"]


def test_the_vigil_notices_a_stall_whichever_thread_checks_first():
    mono, wall = [0.0], [1000.0]
    vigil = Vigil(clock=lambda: wall[0], monotonic=lambda: mono[0], threshold=5.0)
    assert vigil.check() == 0
    mono[0] += 0.5
    wall[0] += 0.5
    assert vigil.check() == 0
    mono[0] += 7.0
    wall[0] += 7.0
    assert vigil.check() == 1 and vigil.stalled_at == 1000.5  # the stall began at the last check before it
    assert vigil.check() == 1


def test_an_event_read_after_the_process_stood_still_is_dropped_and_the_watch_resumes_from_its_version():
    # the stream delivers "a", then the process stands still 30 s, then "b" (sent meanwhile, read late): "b" is not
    # passed on as live; the outage opens at the last proof of liveness, and the resumed watch replays "b" caught up
    sink, script, slept = run([page([], rv="100")],
                              [[ev("ADDED", "a", "101"), 30.0, ev("ADDED", "b", "102")], [ev("ADDED", "b", "102")]],
                              cycles=3, stall=5.0)
    assert script.watch_calls == ["100", "101"]
    assert [c for c in sink.calls if c[0] != "begin" and c[0] != "end"] == [
        ("ADDED", "a", 1004.0), ("interrupted", 1004.0, "recorder suspended"), ("resumed", 1038.0, "999"), ("ADDED", "b", 1040.0)]


def test_the_next_page_is_requested_before_the_current_one_is_ingested():
    """One page ahead: the server encodes page n+1 while the sink ingests page n; never two pages ahead."""
    order: list[str] = []
    requested = {token: threading.Event() for token in ("c1", "c2")}
    pages = {None: page(["a"], cont="c1"), "c1": page(["b"], cont="c2"), "c2": page(["c"], rv="9")}

    def list_page(resource, *, namespace, limit, continue_token):
        order.append(f"request {continue_token}")
        if continue_token in requested:
            requested[continue_token].set()
        return pages[continue_token]

    class Ingesting(Recorder):
        def relist_page(self, gvk: GVK, items: list[dict[str, Any]], ts: float) -> None:
            name = items[0]["metadata"]["name"]
            following = {"a": "c1", "b": "c2"}.get(name)
            if following is not None:
                requested[following].wait(2)  # the request ahead runs on its own thread: give it time to be made
            order.append(f"ingest {name}")
            super().relist_page(gvk, items, ts)

    sink = Ingesting()
    run_watch(resource=RES, namespace=None, list_page=list_page, watch=lambda r, **kw: iter(()), sink=sink,
              clock=Clock(), sleep=lambda s: None, stop=threading.Event(), rng=random.Random(0), max_cycles=1)
    assert order == ["request None", "request c1", "ingest a", "request c2", "ingest b", "ingest c"]
    assert sink.calls[-1] == ("end", "9", 1000.0)


# -- a restart that resumes where the last run left the kind (``resuming``) -------------------------------------------


def test_a_resumed_watch_catches_up_to_the_server_version_read_first_then_watches_on():
    sink, script, _ = run([], [[ev("ADDED", "a", "121"), ev("MODIFIED", "b", "125"), ev("DELETED", "c", "130")],
                               [ev("MODIFIED", "a", "131")]], cycles=2, horizon="130", resume_from="110")
    assert script.list_calls == [] and script.horizon_calls == 1  # no list: one probe of the server's version
    assert script.watch_calls == ["110", "130"]
    assert sink.calls == [("resume", 1002.0), ("ADDED", "a", 1004.0), ("MODIFIED", "b", 1006.0), ("DELETED", "c", 1008.0),
                          ("end", "130", 1002.0), ("MODIFIED", "a", 1010.0)]


def test_a_catch_up_stream_with_nothing_in_it_ends_the_catch_up():
    sink, script, _ = run([], [[ev("ADDED", "a", "121")], [], [bookmark("140")]], cycles=2, horizon="200", resume_from="110")
    assert script.watch_calls == ["110", "121", "121"]
    assert [c[0] for c in sink.calls] == ["resume", "ADDED", "end"] and sink.calls[-1][1] == "121"


def test_a_catch_up_stream_that_ends_quiet_after_its_events_ends_the_catch_up():
    """The server's watch cache sends what it holds at once: a stream that then stayed silent until its end proves
    that nothing more was held (one stream, not a second with nothing in it); a stream that ended as it sent does not."""
    sink, script, _ = run([], [[ev("ADDED", "a", "121"), ev("MODIFIED", "a", "124"), resuming.QUIET_SECONDS]], cycles=1,
                          horizon="200", resume_from="110")
    assert script.watch_calls == ["110"]
    assert [c[0] for c in sink.calls] == ["resume", "ADDED", "MODIFIED", "end"] and sink.calls[-1][1] == "124"
    sink, script, _ = run([], [[ev("ADDED", "a", "121"), resuming.QUIET_SECONDS / 2], [ev("ADDED", "b", "126")], []], cycles=1,
                          horizon="200", resume_from="110")
    assert script.watch_calls == ["110", "121", "126"]
    assert [c[0] for c in sink.calls] == ["resume", "ADDED", "ADDED", "end"] and sink.calls[-1][1] == "126"


def test_an_event_made_since_the_catch_up_began_follows_its_end_live():
    sink, script, _ = run([], [[ev("ADDED", "a", "121"), ev("ADDED", "b", "140")]], cycles=1, horizon="130", resume_from="110")
    assert [c[:2] for c in sink.calls] == [("resume", 1002.0), ("ADDED", "a"), ("end", "121"), ("ADDED", "b")]


def test_a_catch_up_the_server_forgot_lists():
    sink, script, _ = run([page(["a"], rv="300")], [[expired_event()], []], cycles=3, horizon="200", resume_from="110")
    assert script.watch_calls[:1] == ["110"] and script.list_calls == [(None, 500, None)]
    assert [c[0] for c in sink.calls] == ["resume", "begin", "page", "end"]  # no outage: the kind was not yet observed


def test_a_catch_up_broken_by_the_network_goes_on_from_where_it_was():
    sink, script, slept = run([], [[ev("ADDED", "a", "121"), TransientError("reset")], [ev("ADDED", "b", "130")]],
                              cycles=2, horizon="130", resume_from="110")
    assert script.watch_calls == ["110", "121"] and len(slept) == 1
    assert [c[0] for c in sink.calls] == ["resume", "ADDED", "resume", "ADDED", "end"]
