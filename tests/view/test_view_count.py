"""How many objects a search finds, as the page says it (Debian's chromium through Playwright): the rows come without
their total, which is counted beside them (while the server reads the rows), once for a search while no recorder
writes; a page short of its limit ended the walk and says its total itself.

The history: one run, 45 ConfigMaps named ``cm-00`` … ``cm-44`` in one namespace (the page asks 20 rows at a time)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
from conftest import CacheBuilder, obj
from test_view_browser import browser  # noqa: F401  (fixture)
from viewsupport import opened_page, serving, settled

from kubectl_sktrace.view.server import ViewServer

pytestmark = pytest.mark.slow
T0 = 1_795_600_800  # 2026-11-25T10:00:00Z
OBJECTS = 45


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ViewServer]:
    from kubectl_sktrace.view.app import cache_api

    path = tmp_path_factory.mktemp("count") / "cache.db"
    b = CacheBuilder(path)
    try:
        b.run(started=T0, stopped=T0 + 3600)
        for i in range(OBJECTS):
            b.apply(T0 + 10 + i, obj("ConfigMap", f"cm-{i:02d}", "shop"))
    finally:
        b.close()
    with serving(ViewServer(api=cache_api(str(path), title=str(path), command_base=("--cache", str(path))))) as served:
        yield served


@pytest.fixture()
def page(browser: Any, server: ViewServer) -> Iterator[Any]:  # noqa: F811
    asked: list[str] = []
    with opened_page(browser, server.url, asked=asked) as opened:
        opened.asked = asked
        yield opened


def _asked(page: Any) -> list[str]:
    return sorted(a.split("?")[0] for a in page.asked)


def test_a_search_s_total_is_counted_beside_its_rows_once(page: Any) -> None:
    assert page.text_content("#objects-count") == f"20 of {OBJECTS} objects"
    assert page.get_attribute("body", "data-objects") == f":{OBJECTS}"
    total, rows = sorted(page.asked, key=lambda a: a.startswith("objects?"))
    assert rows.startswith("objects?") and "total=0" in rows  # the rows without their total: counted beside them
    assert total.startswith("objects-total?")
    page.asked.clear()
    page.click("#more-objects")
    page.wait_for_function("() => document.querySelector('#objects-count').textContent.startsWith('40 of')")
    settled(page)
    assert page.text_content("#objects-count") == f"40 of {OBJECTS} objects" and page.is_visible("#more-objects")
    assert _asked(page) == ["objects"]  # the total of that search is known: no recorder writes
    page.click("#more-objects")  # the last five
    page.wait_for_function("() => document.querySelector('#objects-count').textContent.startsWith('45 of')")
    settled(page)
    assert page.text_content("#objects-count") == f"{OBJECTS} of {OBJECTS} objects" and not page.is_visible("#more-objects")
    assert _asked(page) == ["objects", "objects"]
    page.asked.clear()
    page.fill("#search", "cm-")  # another search: counted anew
    page.wait_for_selector(f"body[data-objects='cm-:{OBJECTS}']", state="attached")
    settled(page)
    assert _asked(page) == ["objects", "objects-total"]
    assert page.text_content("#objects-count") == f"20 of {OBJECTS} objects"
    page.asked.clear()
    box = page.locator("#timeline").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 100)
    for _ in range(3):  # zoomed in: the rows asked again, their total not
        page.mouse.wheel(0, -100)
        settled(page)
    assert "objects-total" not in _asked(page) and page.text_content("#objects-count") == f"20 of {OBJECTS} objects"


def test_a_search_that_finds_fewer_than_a_page_says_its_total_from_its_rows(page: Any) -> None:
    page.fill("#search", "cm-1")
    page.wait_for_selector("body[data-objects='cm-1:10']", state="attached")
    settled(page)
    assert page.text_content("#objects-count") == "10 of 10 objects"
    rows = next(a for a in page.asked if a.startswith("objects?") and "q=cm-1&" in a)
    assert "total=0" in rows
