"""A complete list of one kind, page by page, for the watch loop (``watching``): what a (re)list reads and passes on.

- A list reads every page (``limit``, ``continue``) with the resource version unset, so the server serves a
  consistent, current snapshot; all pages share one relist timestamp, when the first page answered (the snapshot's
  time, after any wait the server asked for). A 410 on a continue token (the token
  expired, ~5 minutes) restarts the list from the first page; a 410 on a first page is the server's trouble, retried
  like a broken connection. The next page is requested while the sink ingests the current one (one page ahead, on
  a thread of its own), never further: a list's memory stays two pages, whatever its length.
- The lists of a run share a ``PageBudget``: every kind lists at once, but the pages held by all of them together
  (received, being ingested, or requested ahead) stay ``PAGES_HELD``, whatever the number of kinds. A page of 500
  pods is ~13 MB once parsed; two per kind were most of the initial sync's peak memory. A page is requested ahead
  only when the budget has room, so a list never waits for a page while holding one (no list can block another).
- Items of list pages get ``apiVersion``/``kind`` of the listed kind (built-in lists omit them); empty pages are not
  passed on.
- ``horizon`` reads the server's current resourceVersion with the cheapest consistent list (one item).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Callable, Protocol

from kubectl_sktrace.errors import ExpiredError, KubeError, TransientError
from kubectl_sktrace.model import GVK

if TYPE_CHECKING:
    from kubectl_sktrace.kube.cluster import ListPage
    from kubectl_sktrace.kube.discovery import Resource

log = logging.getLogger(__name__)

PAGE_LIMIT = 500

PAGES_HELD = 3
"""List pages a run's lists hold at once, all kinds together: one being ingested (the writer ingests one page at a
time) and two on their way, enough to keep the ingest busy while the server encodes the next ones."""


class ListSink(Protocol):
    """What a list reports (a part of ``watching.Sink``)."""

    def relist_begin(self, gvk: GVK, ts: float) -> None: ...

    def relist_page(self, gvk: GVK, items: list[dict[str, Any]], ts: float) -> None: ...

    def relist_end(self, gvk: GVK, resource_version: str, ts: float) -> None: ...


class Stopped(Exception):
    """``stop`` was set in the middle of a list (or a watch): the kind's loop ends."""


def horizon(resource: Resource, *, namespace: str | None, list_page: ListPage) -> str | None:
    """The server's current resourceVersion, from the cheapest consistent list (one item)."""
    page = list_page(resource, namespace=namespace, limit=1, continue_token=None)
    version = (page.get("metadata") or {}).get("resourceVersion")
    return str(version) if version else None


def relist(*, resource: Resource, namespace: str | None, list_page: ListPage, sink: ListSink,
           clock: Callable[[], float], stop: threading.Event, pages: PageBudget | None = None) -> tuple[str, float]:
    """List every page at one timestamp; restart on an expired continue token. Returns the list's version
    and its timestamp. The next page is requested before the current one goes to the sink (one page ahead),
    so the server's encoding of a page overlaps the sink's ingest of the one before, when ``pages`` (the run's
    budget; a list of its own: two pages) has room for it."""
    gvk = resource.gvk
    budget = pages if pages is not None else PageBudget(2)
    ahead = _Prefetch(resource=resource, namespace=namespace, list_page=list_page, budget=budget)
    try:
        while True:
            token: str | None = None
            try:
                page = ahead.fetch(None, stop)
                ts = clock()  # the snapshot's time: its first page answered (a throttled page waited before it)
                sink.relist_begin(gvk, ts)
                while True:
                    try:
                        meta = page.get("metadata") or {}
                        following = meta.get("continue") or None
                        if following is not None and not stop.is_set():
                            ahead.request(following)
                        _pass_on(gvk, page, sink, ts)
                    finally:
                        page = {}  # the ingested page is freed (and its place given back) before the next one is waited for
                        budget.give()
                    if following is None:
                        version = meta.get("resourceVersion")
                        if not version:
                            raise TransientError(f"list of {gvk} returned no resourceVersion")
                        sink.relist_end(gvk, str(version), ts)
                        return str(version), ts
                    if stop.is_set():
                        raise Stopped
                    token = following
                    page = ahead.result(following, stop)
            except ExpiredError as exc:
                if token is None:  # a 410 on a first page is the server's trouble, not an old token: back off
                    raise TransientError(str(exc)) from exc
                log.info("%s: list continue token expired; restarting the list", gvk)
    finally:
        ahead.abandon()


def _pass_on(gvk: GVK, page: dict[str, Any], sink: ListSink, ts: float) -> None:
    """A page's items, with the listed kind's apiVersion/kind, to the sink (empty pages are not passed on)."""
    items = page.get("items") or []
    for item in items:
        item["apiVersion"] = gvk.api_version
        item["kind"] = gvk.kind
    if items:
        sink.relist_page(gvk, items, ts)


class PageBudget:
    """The list pages a run's lists may hold at once (see the module docstring): a list takes a place before it
    requests a page and gives it back once the page is ingested (or the request failed)."""

    def __init__(self, pages: int) -> None:
        self._free = threading.BoundedSemaphore(pages)

    def take(self, stop: threading.Event) -> None:
        """Wait for a place; Stopped when ``stop`` is set meanwhile."""
        while not self._free.acquire(timeout=0.1):
            if stop.is_set():
                raise Stopped

    def try_take(self) -> bool:
        return self._free.acquire(blocking=False)

    def give(self) -> None:
        self._free.release()


class _Prefetch:
    """The pages of one list: fetched in turn (``fetch``), or one requested ahead on a daemon thread of its own
    (a request in flight never holds up the process's exit) when the budget has room. A page abandoned (stop, a
    failure) gives its place back when it arrives."""

    def __init__(self, *, resource: Resource, namespace: str | None, list_page: ListPage, budget: PageBudget) -> None:
        self._resource, self._namespace, self._list_page, self._budget = resource, namespace, list_page, budget
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._token: str | None = None  # the page requested ahead, if any
        self._outcome: dict[str, Any] | BaseException | None = None
        self._abandoned = False

    def fetch(self, token: str | None, stop: threading.Event) -> dict[str, Any]:
        """A page fetched now, holding a place of the budget (the caller gives it back)."""
        self._budget.take(stop)
        try:
            return self._list(token)
        except BaseException:
            self._budget.give()
            raise

    def request(self, token: str) -> None:
        """Request the page at ``token`` ahead, if the budget has room (else ``result`` fetches it then)."""
        if not self._budget.try_take():
            return
        self._done.clear()
        self._token, self._outcome = token, None
        threading.Thread(target=self._fetch_ahead, args=(token,), name=f"list {self._resource.gvk}", daemon=True).start()

    def result(self, token: str, stop: threading.Event) -> dict[str, Any]:
        """The page at ``token``, holding a place of the budget: the one requested ahead, or fetched now."""
        if self._token != token:
            return self.fetch(token, stop)
        self._done.wait()
        outcome, self._outcome, self._token = self._outcome, None, None
        if isinstance(outcome, BaseException):
            raise outcome  # its place was given back
        assert outcome is not None
        return outcome

    def abandon(self) -> None:
        """The list ended: a page still requested ahead gives its place back (now, or when it arrives)."""
        with self._lock:
            if self._token is None:
                return
            self._abandoned = True
            holding = self._done.is_set() and not isinstance(self._outcome, BaseException)  # a failure gave its place back
            self._token, self._outcome = None, None
        if holding:
            self._budget.give()

    def _list(self, token: str | None) -> dict[str, Any]:
        return self._list_page(self._resource, namespace=self._namespace, limit=PAGE_LIMIT, continue_token=token)

    def _fetch_ahead(self, token: str) -> None:
        outcome: dict[str, Any] | BaseException
        try:
            outcome = self._list(token)
        except BaseException as exc:  # noqa: BLE001 - raised on the list's own thread by ``result``
            outcome = exc
        failed = isinstance(outcome, BaseException)
        with self._lock:
            abandoned = self._abandoned
            if not abandoned:
                self._outcome = outcome
            self._done.set()
        if abandoned or failed:
            self._budget.give()


def watch_error(gvk: GVK, status: dict[str, Any]) -> KubeError:
    """A watch ERROR event's Status: 410/Expired/Gone relists, anything else is retried."""
    code = status.get("code")
    reason = status.get("reason") or ""
    message = status.get("message") or reason or "unknown error"
    if code == 410 or reason in ("Expired", "Gone"):
        return ExpiredError(f"watch of {gvk} expired: {message}")
    return TransientError(f"watch of {gvk} failed with code {code}: {message}")
