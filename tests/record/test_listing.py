"""The pages a run's lists hold together (``listing.PageBudget``): every kind lists at once, within one budget."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from kubectl_sktrace.errors import TransientError
from kubectl_sktrace.kube.discovery import Resource
from kubectl_sktrace.model import GVK
from kubectl_sktrace.record.listing import PageBudget, Stopped, relist

KINDS = [GVK("", "v1", kind) for kind in ("Pod", "ConfigMap", "Service", "Secret")]


def _resource(gvk: GVK) -> Resource:
    return Resource(gvk=gvk, plural=gvk.kind.lower() + "s", namespaced=True, verbs=frozenset({"list", "watch"}))


def _page(gvk: GVK, number: int, pages: int) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": "100"}
    if number + 1 < pages:
        meta["continue"] = f"{gvk.kind}-{number + 1}"
    return {"metadata": meta, "items": [{"metadata": {"name": f"{gvk.kind}-{number}"}}]}


class _Cluster:
    """Lists of ``pages`` pages per kind; counts the pages received and not yet ingested, all lists together."""

    def __init__(self, pages: int) -> None:
        self.pages = pages
        self.lock = threading.Lock()
        self.held = 0
        self.most = 0
        self.full = threading.Event()  # ``held`` reached ``fill``
        self.fill = 0

    def list_page(self, resource: Resource, *, namespace: str | None, limit: int, continue_token: str | None) -> dict[str, Any]:
        number = int(continue_token.rsplit("-", 1)[1]) if continue_token else 0
        with self.lock:
            self.held += 1
            self.most = max(self.most, self.held)
            if self.held >= self.fill:
                self.full.set()
        return _page(resource.gvk, number, self.pages)


class _Sink:
    """Ingests one page at a time (as the writer does, under one lock); the first page waits until ``fill`` pages
    are held, so the lists pile up as far as their budget lets them."""

    def __init__(self, cluster: _Cluster) -> None:
        self.cluster = cluster
        self.lock = threading.Lock()
        self.ingested: dict[GVK, list[str]] = {gvk: [] for gvk in KINDS}
        self.ended: list[GVK] = []

    def relist_begin(self, gvk: GVK, ts: float) -> None:
        pass

    def relist_page(self, gvk: GVK, items: list[dict[str, Any]], ts: float) -> None:
        with self.lock:
            if not any(self.ingested.values()):
                assert self.cluster.full.wait(5), f"only {self.cluster.held} pages were ever held at once"
            self.ingested[gvk].append(items[0]["metadata"]["name"])
            with self.cluster.lock:
                self.cluster.held -= 1

    def relist_end(self, gvk: GVK, resource_version: str, ts: float) -> None:
        self.ended.append(gvk)


def _list_every_kind(*, pages: int, budget: int) -> tuple[_Cluster, _Sink, PageBudget]:
    """Every kind of ``KINDS`` listed at once, ``pages`` pages each, within one ``PageBudget(budget)``; the first
    ingest waits until the lists hold the whole budget."""
    cluster = _Cluster(pages=pages)
    cluster.fill = budget
    sink = _Sink(cluster)
    shared = PageBudget(budget)
    errors: list[BaseException] = []

    def one(gvk: GVK) -> None:
        try:
            relist(resource=_resource(gvk), namespace=None, list_page=cluster.list_page, sink=sink,
                   clock=lambda: 1000.0, stop=threading.Event(), pages=shared)
        except BaseException as exc:  # noqa: BLE001 - raised below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(gvk,)) for gvk in KINDS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors and not any(thread.is_alive() for thread in threads), errors
    return cluster, sink, shared


def _free_places(budget: PageBudget) -> int:
    taken = 0
    while budget.try_take():
        taken += 1
    for _ in range(taken):
        budget.give()
    return taken


def test_the_lists_of_a_run_hold_at_most_the_budget_of_pages_together() -> None:
    """Four kinds list at once, ten pages each: the pages they hold (received, not yet ingested) never pass the
    budget of three, and reach it (the lists do overlap); every page is ingested once, in order."""
    cluster, sink, budget = _list_every_kind(pages=10, budget=3)
    assert cluster.most == 3
    assert sink.ingested == {gvk: [f"{gvk.kind}-{n}" for n in range(10)] for gvk in KINDS}
    assert sorted(sink.ended, key=str) == sorted(KINDS, key=str)
    assert _free_places(budget) == 3


def test_a_budget_of_one_page_still_lists_every_kind() -> None:
    """No room to read ahead: each list fetches its next page once it gave back the last one, never waiting
    for a place while it holds one, so no list blocks another for good."""
    cluster, sink, budget = _list_every_kind(pages=4, budget=1)
    assert cluster.most == 1
    assert all(len(names) == 4 for names in sink.ingested.values())
    assert _free_places(budget) == 1


def test_a_page_requested_ahead_that_fails_gives_its_place_back() -> None:
    gvk = KINDS[0]

    def list_page(resource: Resource, *, namespace: str | None, limit: int, continue_token: str | None) -> dict[str, Any]:
        if continue_token:
            raise TransientError("connection reset")
        return _page(gvk, 0, 5)

    budget = PageBudget(2)
    sink = _Sink(_Cluster(pages=5))
    sink.cluster.full.set()
    with pytest.raises(TransientError):
        relist(resource=_resource(gvk), namespace=None, list_page=list_page, sink=sink, clock=lambda: 1000.0,
               stop=threading.Event(), pages=budget)
    assert _free_places(budget) == 2


def test_a_list_stopped_while_a_page_is_on_its_way_gives_its_place_back_when_it_arrives() -> None:
    gvk = KINDS[0]
    stop = threading.Event()
    release = threading.Event()
    arrived = threading.Event()

    def list_page(resource: Resource, *, namespace: str | None, limit: int, continue_token: str | None) -> dict[str, Any]:
        if continue_token:
            release.wait(5)  # the page ahead is still on its way when the list stops
            arrived.set()
        return _page(gvk, 1 if continue_token else 0, 5)

    class Stopping(_Sink):
        def relist_page(self, gvk: GVK, items: list[dict[str, Any]], ts: float) -> None:
            stop.set()

    budget = PageBudget(2)
    with pytest.raises(Stopped):
        relist(resource=_resource(gvk), namespace=None, list_page=list_page, sink=Stopping(_Cluster(pages=5)),
               clock=lambda: 1000.0, stop=stop, pages=budget)
    assert _free_places(budget) == 1  # the page on its way still holds its place
    release.set()
    for thread in threading.enumerate():
        if thread.name == f"list {gvk}":
            thread.join(5)
    assert arrived.is_set()
    assert _free_places(budget) == 2
