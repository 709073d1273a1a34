"""``view/figures``: a window's figures follow the filters chosen, and a window the page no longer wants stops counting."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_view_page import CHURN, T0, build

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.store import open_cache_readonly
from kubectl_sktrace.view import api, figures


@pytest.fixture(scope="module")
def cache_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("figures") / "cache.db"
    build(path)
    return path


def _window(path: Path, **params: str) -> dict:
    with open_cache_readonly(path) as cache:
        return api.window(cache, {"start": str(T0), "end": str(T0 + 3600), **params}, command_base=())


def test_what_the_filters_keep_follows_the_namespaces_chosen(cache_path: Path) -> None:
    every = _window(cache_path, all_namespaces="1")
    assert every["events"] == every["keptEvents"] == 4 + CHURN
    south = _window(cache_path, include_namespaces="south")
    assert south["events"] == 4 + CHURN  # the window holds them all; the filters keep south's two
    assert south["kept"] == {"apps/v1.Deployment": {"applied": 2, "deleted": 0}} and south["keptEvents"] == 2
    assert _window(cache_path, include_namespaces="west")["kept"] == {}


def test_label_rules_are_left_to_the_export_and_said_so(cache_path: Path) -> None:
    answer = _window(cache_path, exclude_labels="app=web")
    assert answer["kept"] is None and "names or labels" in answer["keptWhy"]


def test_a_big_window_is_counted_per_namespace_only_when_asked(cache_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(figures, "PASS_LIMIT", 10)
    assert _window(cache_path)["kept"] is None and _window(cache_path)["keptWhy"].endswith("ask for it")
    assert _window(cache_path, **{"pass": "1"})["keptEvents"] == 4 + CHURN


def test_a_window_the_page_no_longer_wants_stops_counting(cache_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(figures, "CHUNK_EVENTS", 20)
    windows = figures.Windows()
    slices: list[int] = []
    real = figures.viewing.scope_counts

    def counting(cache: object, *, start: int, end: int) -> list[tuple[str, str, int, int]]:
        slices.append(start)
        if len(slices) == 3:
            windows.ask("tab", 8)  # the person dragged again
        return real(cache, start=start, end=end)  # type: ignore[arg-type]

    monkeypatch.setattr(figures.viewing, "scope_counts", counting)
    with open_cache_readonly(cache_path) as cache:
        answer = api.window(cache, {"start": str(T0), "end": str(T0 + 3600), "tab": "tab", "seq": "7"}, command_base=(), windows=windows)
    assert answer == {"superseded": True} and len(slices) == 3
    assert windows.ask("tab", 7)()  # an older window asked late is superseded at once


def test_only_one_export_report_at_a_time(cache_path: Path) -> None:
    with api._REPORTING, open_cache_readonly(cache_path) as cache:
        with pytest.raises(UsageError, match="already counting"):
            api.report(cache, {"start": str(T0), "end": str(T0 + 600)})
