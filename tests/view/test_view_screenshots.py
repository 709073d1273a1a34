"""The README's pictures of the view, made from the demo's cache: the whole span, a window picked, an object's change.

Each run records the demo (``kubectl sktrace demo --cache``), serves its cache and draws the three views in Debian's
chromium, checking what each shows; the PNGs go to a temporary directory, or to ``$SKTRACE_SCREENSHOTS`` when set:
``SKTRACE_SCREENSHOTS=docs/images pytest tests/view/test_view_screenshots.py`` refreshes the README's (they are
committed, so the README renders anywhere; the test checks that they are there and of the size it makes)."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any, Iterator

import pytest
from reliability_support import run_cli
from test_view_browser import CHROMIUM, launch
from viewsupport import drawn_ticks, failures, open_tick, serving, settled

from kubectl_sktrace.view.app import cache_api, rate_index
from kubectl_sktrace.view.server import ViewServer

pytestmark = pytest.mark.slow
DOCS = Path(__file__).resolve().parents[2] / "docs" / "images"
NAMES = ("view-span.png", "view-window.png", "view-objects.png")
VIEWPORT = {"width": 1280, "height": 800}


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def demo_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("demo")
    cache = home / "demo.db"
    run = run_cli(["demo", "--cache", str(cache), "--record-seconds", "6", "-O", str(home / "demo.sktrace")], home=home, timeout=240)
    assert run.code == 0, run.describe()
    return cache


@pytest.fixture(scope="module")
def demo_view(demo_cache: Path) -> Iterator[ViewServer]:
    index = rate_index(str(demo_cache))  # None: the demo's cache keeps its rates per minute (0010)
    if index is not None:
        index.fill()
    with serving(ViewServer(api=cache_api(str(demo_cache), title="~/.local/state/kubectl-sktrace/demo.db", command_base=(), index=index))) as server:
        yield server


def test_the_three_views_of_the_demo(demo_view: ViewServer, tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium; .ci/run does)")
    out = Path(os.environ.get("SKTRACE_SCREENSHOTS") or tmp_path)
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        page = browser.new_page(viewport=VIEWPORT)
        errors = failures(page)
        page.goto(demo_view.url)
        page.wait_for_selector("body[data-ready][data-histogram][data-objects]")
        settled(page)
        assert page.locator("rect.span-run").count() == 2 and page.locator("rect.span-offline").count() == 1
        assert page.locator("rect.bar").count() > 5
        page.screenshot(path=str(out / NAMES[0]))
        shoot_window(page, out / NAMES[1])
        shoot_objects(page, out / NAMES[2])
        browser.close()
    assert errors == []
    for name in NAMES:
        assert png_size((out / name).read_bytes()) == png_size((DOCS / name).read_bytes()), name


def shoot_window(page: Any, path: Path) -> None:
    box = page.locator("#timeline").bounding_box()
    left, width = box["x"] + 90, box["width"] - 102
    page.keyboard.down("Shift")
    page.mouse.move(left + width * 0.08, box["y"] + 120)
    page.mouse.down()
    page.mouse.move(left + width * 0.93, box["y"] + 120, steps=8)
    page.mouse.up()
    page.keyboard.up("Shift")
    page.wait_for_selector("#count-report:not([hidden])")
    settled(page)
    page.click("#count-report")
    page.wait_for_selector("#report-summary")
    settled(page)
    assert "kubectl sktrace export -s " in page.text_content("#command")
    page.locator("#window").scroll_into_view_if_needed()
    page.screenshot(path=str(path))


def shoot_objects(page: Any, path: Path) -> None:
    page.select_option("#namespace", "shop")
    page.fill("#search", "frontend")
    page.wait_for_function("() => document.body.dataset.objects === 'frontend:' + document.body.dataset.objects.split(':')[1] && "
                           "document.querySelectorAll('path.ticks').length > 0")
    settled(page)
    open_tick(page, drawn_ticks(page)[1])
    page.locator("#objects-view").scroll_into_view_if_needed()
    page.evaluate("() => document.querySelector('#objects-view').scrollIntoView({block: 'start'})")
    page.screenshot(path=str(path))
