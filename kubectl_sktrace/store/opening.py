"""Which engine holds a cache: a path is a sqlite file (``connection.py``), a ``postgresql://`` URL a history in a
PostgreSQL database (``postgres.py``, loaded only then)."""

from __future__ import annotations

import os

from kubectl_sktrace.model import CacheUrl, ClusterId, is_database_url
from kubectl_sktrace.store import connection
from kubectl_sktrace.store.engine import Cache

Location = str | os.PathLike[str] | CacheUrl


def database_target(location: Location) -> CacheUrl | None:
    """The database a location names; None for a file."""
    if isinstance(location, CacheUrl):
        return location
    if isinstance(location, str) and is_database_url(location):
        return CacheUrl(location)
    return None


def open_cache(location: Location, *, create: bool, cluster: ClusterId | None = None, adopt: bool = True) -> Cache:
    """Open (and migrate) the cache for writing; ``create`` makes it when absent (start), else it must exist
    (prune). In a database, ``cluster`` (known: a recorder read it first) finds its history by the cluster's
    identity before the context's name (``adopt``: and gives it that name too); a file is the history its path names."""
    target = database_target(location)
    if target is not None:
        from kubectl_sktrace.store.postgres import open_pg

        return open_pg(target, create=create, cluster=cluster, adopt=adopt)
    assert not isinstance(location, CacheUrl)
    return connection.open_cache(location, create=create)


def open_cache_readonly(location: Location) -> Cache:
    """Open the cache for reading only: nothing is created, changed or migrated."""
    target = database_target(location)
    if target is not None:
        from kubectl_sktrace.store.postgres import open_pg_readonly

        return open_pg_readonly(target)
    assert not isinstance(location, CacheUrl)
    return connection.open_cache_readonly(location)
