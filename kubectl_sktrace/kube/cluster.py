"""What a recording session asks of one cluster's API server: the surface callers are typed against, so that
tests can hand them a scripted stand-in. ``Kube`` (``kube/client.py``) is the real one."""

from __future__ import annotations

import threading
from typing import Any, Iterable, Iterator, Mapping, Protocol

from kubectl_sktrace.kube.discovery import Documents, Resource
from kubectl_sktrace.model import GVK

__all__ = ["ClusterClient", "ListPage", "OpenWatch"]


class ListPage(Protocol):
    """One page of a list as raw JSON (``Kube.list_page``)."""

    def __call__(self, resource: Resource, *, namespace: str | None, limit: int = ...,
                 continue_token: str | None = ...) -> dict[str, Any]: ...


class OpenWatch(Protocol):
    """A watch stream's events as raw dicts, until the server ends it or ``stop`` is set (``Kube.watch``)."""

    def __call__(self, resource: Resource, *, namespace: str | None, resource_version: str, timeout_seconds: int,
                 stop: threading.Event | None = ...) -> Iterable[dict[str, Any]]: ...


class ClusterClient(Protocol):
    """What a recording session asks of the cluster."""

    def discover(self, gvks: Iterable[GVK], *,
                 cached: Mapping[str, dict[str, Any]] = ...) -> tuple[dict[GVK, Resource], Documents]: ...

    def cluster_identity(self) -> tuple[str, str]: ...

    def list_page(self, resource: Resource, *, namespace: str | None, limit: int = ...,
                  continue_token: str | None = ...) -> dict[str, Any]: ...

    def watch(self, resource: Resource, *, namespace: str | None, resource_version: str, timeout_seconds: int,
              stop: threading.Event | None = ...) -> Iterator[dict[str, Any]]: ...

    def get(self, resource: Resource, *, namespace: str | None, name: str) -> dict[str, Any] | None: ...

    def close(self) -> None: ...
