"""The emulator's API Priority and Fairness: a level's seats, a list's width, and the 429 a real server writes."""

from __future__ import annotations

import http.client
import threading
from typing import Iterator

import pytest

from sktrace_emulator import Emulator
from sktrace_emulator.apf import MAX_RETRY_AFTER, MESSAGE, Dropped, PriorityLevel, Rejected, list_width

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(("stored", "limit", "selector", "width"), [
    (0, 500, False, 1),
    (40, 500, False, 1),
    (120, 500, False, 3),
    (1500, 500, False, 10),
    (1500, 0, False, 10),
    (30, 10, False, 1),
    (300, 100, True, 4),
], ids=["empty", "small", "grows", "page-of-big", "unpaged", "small-page", "selector"])
def test_a_lists_width_grows_with_its_objects(stored: int, limit: int, selector: bool, width: int) -> None:
    assert list_width(stored=stored, limit=limit, selector=selector) == width


def test_a_request_that_does_not_fit_is_rejected_and_a_wide_one_runs_alone() -> None:
    level = PriorityLevel(seats=4, clock=lambda: 100.0)
    first = level.admit(3)
    with pytest.raises(Rejected):
        level.admit(2)
    second = level.admit(1)
    with pytest.raises(Rejected):
        level.admit(10)  # wider than the level: only when nothing executes
    first.release()
    first.release()  # a second release gives nothing back twice
    second.release()
    assert level.in_use() == 0
    wide = level.admit(10)
    with pytest.raises(Rejected):
        level.admit(1)
    wide.release()


def test_retry_after_rises_from_1_to_32_while_rejections_go_on_then_falls() -> None:
    dropped = Dropped()
    seen = []
    for second in range(1000, 1200):
        for _ in range(40):  # a level that keeps rejecting many requests every second
            dropped.record(second)
        seen.append(dropped.retry_after)
    assert seen[0] == 1 and max(seen) == MAX_RETRY_AFTER
    assert sorted(set(seen)) == [1, 2, 4, 8, 16, 32]
    assert seen == sorted(seen)  # it only rises while the rejections go on
    dropped.record(1300)  # quiet since: fewer rejections than the window, lowered a second at a time
    assert dropped.retry_after == MAX_RETRY_AFTER - 1


@pytest.fixture
def emu() -> Iterator[Emulator]:
    emulator = Emulator(token="apf", tls=False).start()  # plain http: no openssl process in the fast tier
    try:
        yield emulator
    finally:
        emulator.stop()


def _get(emu: Emulator, path: str) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", emu.port)
    conn.request("GET", path, headers={"Authorization": f"Bearer {emu.token}", "User-Agent": "test"})
    return conn.getresponse()


def test_the_429_is_what_kube_apiserver_writes(emu: Emulator) -> None:
    level = emu.throttle(2)
    assert level is not None
    held = level.admit(2)  # another client of the same identity holds every seat
    resp = _get(emu, "/api/v1/namespaces/default/configmaps?limit=500")
    body = resp.read()
    assert resp.status == 429
    assert body == f"{MESSAGE}\n".encode()
    assert resp.getheader("Content-Type") == "text/plain; charset=utf-8"
    assert resp.getheader("Retry-After") == "1"
    assert [(r.verb, r.user_agent, r.retry_after) for r in level.rejections] == [("list", "test", 1)]
    held.release()
    ok = _get(emu, "/api/v1/namespaces/default/configmaps?limit=500")
    assert ok.status == 200 and ok.read()


@pytest.mark.slow  # waits for a watch's start
def test_a_watch_holds_its_seat_only_while_it_starts(emu: Emulator) -> None:
    level = emu.throttle(1)
    assert level is not None
    resp = _get(emu, "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=2")
    assert resp.status == 200
    assert level.in_use() == 0  # streaming, no seat held
    lister = _get(emu, "/api/v1/namespaces/default/configmaps?limit=500")
    assert lister.status == 200 and lister.read()
    resp.read()


def test_clients_of_one_identity_share_the_level(emu: Emulator) -> None:
    for i in range(300):
        emu.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}", "namespace": "default"},
                    "data": {"k": "x" * 3000}})
    level = emu.throttle(6)  # one list of 300 objects is 6 seats: two at once do not fit
    assert level is not None
    statuses: list[int] = []
    lock = threading.Lock()

    def lister() -> None:
        for _ in range(10):
            resp = _get(emu, "/api/v1/namespaces/default/configmaps")
            resp.read()
            with lock:
                statuses.append(resp.status)

    threads = [threading.Thread(target=lister) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(statuses) <= {200, 429} and 200 in statuses
    assert statuses.count(429) == len(level.rejections) and level.admitted == statuses.count(200)
