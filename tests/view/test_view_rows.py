"""The objects' rows of a range: those changed in it first, the most changes first, then the others by kind and name
then those that lived through it unchanged, then those with nothing in it (a zoom shows what happened in it first, not
objects whose whole life lies elsewhere); pages of them list each object once.
For a cache and for a trace alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest
from conftest import CacheBuilder, obj

from kubectl_sktrace.store import open_cache_readonly, viewing

T0 = 1_795_600_800  # 2026-11-25T10:00:00Z
ZOOM = (T0 + 4000, T0 + 4200)


def build(path: Path) -> None:
    """13 Jobs created and deleted early; 24 ConfigMaps made later, of which the last four by name changed in ``ZOOM``
    (cm-23 four times, cm-22 three, ...); one changed just after it."""
    b = CacheBuilder(path)
    try:
        b.run(started=T0, stopped=T0 + 5000)
        for i in range(13):
            job = obj("Job", f"job-{i:02}", "shop", spec={"parallelism": 1})
            b.apply(T0 + 10 * i, job)
            b.delete(T0 + 10 * i + 300, job)
        for i in range(24):
            b.apply(T0 + 1000 + i, obj("ConfigMap", f"cm-{i:02}", "shop"))
        for i in range(20, 24):
            for n in range(i - 19):
                cm = obj("ConfigMap", f"cm-{i:02}", "shop")
                cm["data"] = {"n": str(n)}
                b.apply(ZOOM[0] + 10 * (i - 20) + n, cm)
        b.apply(ZOOM[1] + 5, obj("ConfigMap", "cm-00", "shop", labels={"late": "yes"}))
    finally:
        b.close()


def _cache_answer(path: Path) -> Callable[[dict[str, str]], dict[str, Any]]:
    from kubectl_sktrace.view.app import cache_api

    return cache_api(str(path), title=str(path), command_base=())["/api/objects"]  # type: ignore[no-any-return]


def _trace_answer(path: Path, tmp: Path) -> Callable[[dict[str, str]], dict[str, Any]]:
    from click.testing import CliRunner

    from kubectl_sktrace.cli import cli
    from kubectl_sktrace.trace.files.format import read_trace
    from kubectl_sktrace.view.tracefile import TraceIndex, trace_api

    out = tmp / "all.sktrace"
    done = CliRunner().invoke(cli, ["export", "--cache", str(path), "-s", f"@{T0}", "-t", f"@{T0 + 6000}", "-A", "-O", str(out)])
    assert done.exit_code == 0, done.output
    return trace_api(TraceIndex.of(read_trace(out), name=str(out)))["/api/objects"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("source", ["cache", "trace"])
def test_the_objects_changed_in_a_zoom_come_first_the_most_changes_first(tmp_path: Path, source: str) -> None:
    build(tmp_path / "cache.db")
    answer = _cache_answer(tmp_path / "cache.db") if source == "cache" else _trace_answer(tmp_path / "cache.db", tmp_path)
    ask = {"gvk": "", "namespace": "", "q": "", "start": str(ZOOM[0]), "end": str(ZOOM[1]), "limit": "20"}
    first = answer({**ask, "offset": "0"})
    names = [o["name"] for o in first["objects"]]
    assert names[:4] == ["cm-23", "cm-22", "cm-21", "cm-20"], names
    assert first["changed"] == 4 and first["total"] == 37
    rest = answer({**ask, "offset": "20"})
    every = [(o["gvk"], o["name"]) for o in first["objects"] + rest["objects"]]
    assert len(every) == len(set(every)) == 37  # each object once, across the pages
    assert every[4:24] == sorted(every[4:24]) and {n for _, n in every[4:24]} == {f"cm-{i:02}" for i in range(20)}  # alive, unchanged
    assert every[24:] == sorted(every[24:]) and {n for _, n in every[24:]} == {f"job-{i:02}" for i in range(13)}


def test_a_range_with_more_changes_than_can_be_ranked_lists_by_kind_and_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build(tmp_path / "cache.db")
    monkeypatch.setattr(viewing, "ACTIVE_BOUND", 5)
    with open_cache_readonly(tmp_path / "cache.db") as cache:
        page = viewing.active_page(cache, gvk=None, namespace=None, search="", start=ZOOM[0], end=ZOOM[1], offset=0, limit=20)
    assert page.changed is None and [r.key.name for r in page.rows][:2] == ["job-00", "job-01"]


def build_few(path: Path) -> None:
    """Eleven objects, every one on the page at once: five Jobs changed six times each early (the most changed of the
    whole history) and deleted; six ConfigMaps made later, of which the last four changed in ``ZOOM``."""
    b = CacheBuilder(path)
    try:
        b.run(started=T0, stopped=T0 + 5000)
        for i in range(5):
            for n in range(6):
                b.apply(T0 + 10 * i + n, obj("Job", f"job-{i:02}", "shop", spec={"parallelism": n + 1}))
            b.delete(T0 + 10 * i + 300, obj("Job", f"job-{i:02}", "shop"))
        for i in range(6):
            b.apply(T0 + 1000 + i, obj("ConfigMap", f"cm-{i:02}", "shop"))
        for i in range(2, 6):
            for n in range(i - 1):
                cm = obj("ConfigMap", f"cm-{i:02}", "shop")
                cm["data"] = {"n": str(n)}
                b.apply(ZOOM[0] + 10 * (i - 2) + n, cm)
    finally:
        b.close()


def _zoomed_page(tmp_path: Path, builder: Callable[[Path], None], check: Callable[[Any], None]) -> None:
    """The page over ``builder``'s cache in Debian's chromium, zoomed onto ``ZOOM`` as the wheel and the buttons do."""
    from test_view_browser import CHROMIUM, launch
    from viewsupport import opened_page, serving, settled

    from kubectl_sktrace.view.app import cache_api
    from kubectl_sktrace.view.server import ViewServer

    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium; .ci/run does)")
    builder(tmp_path / "cache.db")
    path = str(tmp_path / "cache.db")
    with serving(ViewServer(api=cache_api(path, title=path, command_base=()))) as server, sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            with opened_page(browser, server.url) as page:
                page.evaluate(f"() => setView({ZOOM[0] + 50}, {ZOOM[1] - 50})")  # what the wheel and the buttons call
                page.wait_for_function("() => document.querySelector('#objects-count').textContent.includes('changed')")
                settled(page)
                check(page)
        finally:
            browser.close()


def _labels(page: Any) -> list[str]:
    return list(page.eval_on_selector_all("#objects text.row-label[data-object]", "ts => ts.map(t => t.firstChild.nodeValue)"))


@pytest.mark.slow  # a browser
def test_zoomed_in_the_page_lists_what_changed_there_first_and_says_how_many(tmp_path: Path) -> None:
    def check(page: Any) -> None:
        labels = _labels(page)
        assert labels[:4] == [f"ConfigMap shop/cm-{i}" for i in (23, 22, 21, 20)], labels
        assert page.text_content("#objects-count") == "20 of 37 objects; 4 objects changed in the range drawn, listed first"

    _zoomed_page(tmp_path, build, check)


@pytest.mark.slow  # a browser
def test_zoomed_in_with_every_object_on_the_page_those_changed_there_come_first(tmp_path: Path) -> None:
    """Every object and all its changes on the page already: a zoom still lists what changed in the range first (not
    the Jobs that changed most over the whole history, with nothing in it), then those alive through it, and says so."""
    def check(page: Any) -> None:
        labels = _labels(page)
        assert labels == ([f"ConfigMap shop/cm-{i:02}" for i in (5, 4, 3, 2, 0, 1)] + [f"Job shop/job-{i:02}" for i in range(5)]), labels
        assert page.text_content("#objects-count") == "11 of 11 objects; 4 objects changed in the range drawn, listed first"

    _zoomed_page(tmp_path, build_few, check)
