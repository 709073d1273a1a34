"""The view's answers are the same from a sqlite file and from a PostgreSQL history holding the same rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import location
from viewsupport import T0, build_history

from kubectl_sktrace.store import open_cache_readonly
from kubectl_sktrace.view import api
from kubectl_sktrace.view.app import _download, rate_index


def _read(download: Any) -> bytes:
    with download.stream as stream:
        data = stream.read()
    assert len(data) == download.size
    return bytes(data)


def answers(cache_location: Any) -> dict[str, Any]:
    assert rate_index(cache_location) is None  # the cache keeps its rates per minute (0010): nothing to count
    index = None
    window = {"start": str(T0 + 900), "end": str(T0 + 7800), "include_namespaces": "shop"}
    with open_cache_readonly(cache_location) as cache:
        overview = api.overview(cache, title="t", command_base=())
        return {
            "overview": {k: v for k, v in overview.items() if k != "cache"},
            "histogram": api.histogram(cache, {"start": str(T0 - 600), "end": str(T0 + 9600), "buckets": "50"}, index=index),
            "direct": api.histogram(cache, {"start": str(T0), "end": str(T0 + 3600), "buckets": "200"}),
            "window": api.window(cache, window, command_base=()),
            "report": api.report(cache, window),
            "objects": api.objects(cache, {"start": str(T0), "end": str(T0 + 9000), "q": "a"}),
            "any case": api.objects(cache, {"start": str(T0), "end": str(T0 + 9000), "q": "A"}),
            "version": api.version(cache, {"id": "6"}),
            "download": _read(_download(cache, window)),
        }


def test_both_engines_answer_alike(tmp_path: Path, pg_url: str) -> None:
    build_history(tmp_path / "cache.db")
    build_history(location(pg_url))  # type: ignore[arg-type]
    sqlite, postgres = answers(tmp_path / "cache.db"), answers(location(pg_url))
    assert sqlite["objects"]["total"] == 7 and sqlite["version"]["diff"]
    assert sqlite["any case"] == sqlite["objects"]  # a search ignores case on either engine
    assert postgres == sqlite
