"""The cache code as an older kubectl-sktrace had it, for the tests of a migration: its migrations cut at a version."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_sktrace.store import pgschema, schema


def at_schema(monkeypatch: pytest.MonkeyPatch, version: int) -> Any:
    """A patch context (``__exit__`` it to come back) in which both engines' migrations end at ``version``."""
    patch = monkeypatch.context()
    context = patch.__enter__()
    context.setattr("kubectl_sktrace.store.connection.MIGRATIONS", schema.MIGRATIONS[:version])
    context.setattr("kubectl_sktrace.store.connection.SCHEMA_VERSION", version)
    context.setattr("kubectl_sktrace.store.postgres.PG_MIGRATIONS", pgschema.PG_MIGRATIONS[:version])
    return patch


def assert_refused_at(where: Any, monkeypatch: pytest.MonkeyPatch, version: int) -> None:
    """A kubectl-sktrace whose migrations end at ``version`` refuses the cache at ``where``, to write and to read."""
    from kubectl_sktrace.errors import CacheError
    from kubectl_sktrace.store import open_cache, open_cache_readonly

    patch = at_schema(monkeypatch, version)
    try:
        with pytest.raises(CacheError, match="newer than this kubectl-sktrace knows"):
            open_cache(where, create=False).close()
        with pytest.raises(CacheError, match="newer than this kubectl-sktrace knows"):
            open_cache_readonly(where).close()
    finally:
        patch.__exit__(None, None, None)
