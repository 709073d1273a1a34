"""A complete list of one kind, page by page, for the watch loop (``watching``): what a (re)list reads and passes on.

- A list reads every page (``limit``, ``continue``) with the resource version unset, so the server serves a
  consistent, current snapshot; all pages share one relist timestamp. A 410 on a continue token (the token
  expired, ~5 minutes) restarts the list from the first page; a 410 on a first page is the server's trouble, retried
  like a broken connection. The next page is requested while the sink ingests the current one (one page ahead, on
  a thread of its own), never further: a list's memory stays two pages, whatever its length.
- Items of list pages get ``apiVersion``/``kind`` of the listed kind (built-in lists omit them); empty pages are not
  passed on.
- ``horizon`` reads the server's current resourceVersion with the cheapest consistent list (one item).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Callable, Protocol

from kubectl_sktrace.errors import ExpiredError, TransientError
from kubectl_sktrace.model import GVK

if TYPE_CHECKING:
    from kubectl_sktrace.kube.cluster import ListPage
    from kubectl_sktrace.kube.discovery import Resource

log = logging.getLogger(__name__)

PAGE_LIMIT = 500


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
           clock: Callable[[], float], stop: threading.Event) -> tuple[str, float]:
    """List every page at one timestamp; restart on an expired continue token. Returns the list's version
    and its timestamp. The next page is requested before the current one goes to the sink (one page ahead),
    so the server's encoding of a page overlaps the sink's ingest of the one before."""
    gvk = resource.gvk
    ahead = _Prefetch(resource=resource, namespace=namespace, list_page=list_page)
    while True:
        ts = clock()
        sink.relist_begin(gvk, ts)
        token: str | None = None
        try:
            if stop.is_set():
                raise Stopped
            page = list_page(resource, namespace=namespace, limit=PAGE_LIMIT, continue_token=None)
            while True:
                meta = page.get("metadata") or {}
                following = meta.get("continue") or None
                if following is not None and not stop.is_set():
                    ahead.request(following)
                _pass_on(gvk, page, sink, ts)
                if following is None:
                    version = meta.get("resourceVersion")
                    if not version:
                        raise TransientError(f"list of {gvk} returned no resourceVersion")
                    sink.relist_end(gvk, str(version), ts)
                    return str(version), ts
                if stop.is_set():
                    raise Stopped
                token = following
                page = {}  # the ingested page is freed before the next one is waited for: two pages at most
                page = ahead.result()
        except ExpiredError as exc:
            if token is None:  # a 410 on a first page is the server's trouble, not an old token: back off
                raise TransientError(str(exc)) from exc
            log.info("%s: list continue token expired; restarting the list", gvk)


def _pass_on(gvk: GVK, page: dict[str, Any], sink: ListSink, ts: float) -> None:
    """A page's items, with the listed kind's apiVersion/kind, to the sink (empty pages are not passed on)."""
    items = page.get("items") or []
    for item in items:
        item["apiVersion"] = gvk.api_version
        item["kind"] = gvk.kind
    if items:
        sink.relist_page(gvk, items, ts)


class _Prefetch:
    """One list page requested ahead, on a daemon thread of its own (a request in flight never holds up the
    process's exit): at most one in flight and one being ingested, so a list's memory stays two pages whatever
    its length. A page abandoned (stop, a failure) is dropped when it arrives."""

    def __init__(self, *, resource: Resource, namespace: str | None, list_page: ListPage) -> None:
        self._resource, self._namespace, self._list_page = resource, namespace, list_page
        self._done = threading.Event()
        self._outcome: dict[str, Any] | BaseException | None = None

    def request(self, token: str) -> None:
        self._done.clear()
        self._outcome = None
        threading.Thread(target=self._fetch, args=(token,), name=f"list {self._resource.gvk}", daemon=True).start()

    def _fetch(self, token: str) -> None:
        try:
            self._outcome = self._list_page(self._resource, namespace=self._namespace, limit=PAGE_LIMIT, continue_token=token)
        except BaseException as exc:  # noqa: BLE001 - raised on the list's own thread by ``result``
            self._outcome = exc
        finally:
            self._done.set()

    def result(self) -> dict[str, Any]:
        self._done.wait()
        outcome, self._outcome = self._outcome, None
        if isinstance(outcome, BaseException):
            raise outcome
        assert outcome is not None
        return outcome
