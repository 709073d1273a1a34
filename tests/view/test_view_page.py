"""What a person reads on the page, in a real browser (Debian's chromium through Playwright): one time axis for every
panel, rows that say which object, diffs of what changed, a zoom that keeps the history in view.

The history: one run; an app of one name in two namespaces; its first version as a list sends it (``apiVersion`` and
``kind`` after ``spec``) and the next as a watch does (them first), with one field and the status changed; a
ConfigMap changed more often than a row draws."""

from __future__ import annotations

import datetime
import re
from pathlib import Path
from typing import Any, Iterator

import pytest
from conftest import CacheBuilder, obj
from test_view_browser import browser  # noqa: F401  (fixture)
from viewsupport import drawn_ticks, failures, open_tick, opened_page, point_at, serving, settled

from kubectl_sktrace.store.viewing import MAX_TICKS
from kubectl_sktrace.view.server import ViewServer

pytestmark = pytest.mark.slow
T0 = 1_795_600_800  # 2026-11-25T10:00:00Z
CHURN = MAX_TICKS + 50
LEFT, RIGHT = 90, 12  # the plot's margins (view-base.js)


def _app(namespace: str, replicas: int, *, watched: bool, ready: int) -> dict[str, Any]:
    body = obj("Deployment", "quokka-api", namespace, spec={"replicas": replicas, "template": {"spec": {"containers": [
        {"name": "api", "image": "quokka/api:2"}]}}}, status={"readyReplicas": ready, "observedGeneration": ready})
    if watched:
        return body
    return {"metadata": body["metadata"], "spec": body["spec"], "status": body["status"], "apiVersion": body["apiVersion"],
            "kind": body["kind"]}  # as a list's items come: no apiVersion and kind, which the recorder puts after


def build(path: Path) -> dict[str, int]:
    b = CacheBuilder(path)
    ids: dict[str, int] = {}
    try:
        b.run(started=T0, stopped=T0 + 3600)
        ids["north-listed"] = b.apply(T0 + 100, _app("north", 2, watched=False, ready=1))
        ids["north-watched"] = b.apply(T0 + 700, _app("north", 3, watched=True, ready=2))
        ids["south-listed"] = b.apply(T0 + 300, _app("south", 1, watched=False, ready=1))
        ids["south-watched"] = b.apply(T0 + 2500, _app("south", 1, watched=True, ready=5))  # only its status moved
        for i in range(CHURN):
            settings = obj("ConfigMap", "settings", "north")
            settings["data"] = {"round": str(i)}
            b.apply(T0 + 200 + 12 * i, settings)
    finally:
        b.close()
    return ids


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    path = tmp_path_factory.mktemp("page") / "cache.db"
    return path, build(path)


@pytest.fixture(scope="module")
def server(history: tuple[Path, dict[str, int]]) -> Iterator[ViewServer]:
    from kubectl_sktrace.view.app import cache_api

    path = str(history[0])
    with serving(ViewServer(api=cache_api(path, title=path, command_base=("--cache", path)))) as served:
        yield served


@pytest.fixture()
def page(browser: Any, server: ViewServer) -> Iterator[Any]:  # noqa: F811
    with opened_page(browser, server.url) as opened:
        yield opened


def _seconds(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def iso_second(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def in_sight(page: Any, ticks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Those of ``ticks`` on the plot, where a person sees them whole (the rest are clipped, drawn for a pan to bring in;
    one astride an edge is half hidden, and a pointer just outside the plot points at nothing)."""
    box = page.locator("#objects").bounding_box()
    return [t for t in ticks if box["x"] + LEFT + 1 <= t["x"] <= box["x"] + box["width"] - RIGHT - 1]


def _misplaced_ticks(page: Any) -> list[tuple[float, float, float]]:
    """Each drawn change whose tick is more than 2 px from where the timeline's own axis puts its instant: (its time,
    where it is, where the axis says)."""
    axis = page.eval_on_selector_all("#timeline .axis line", "ls => ls.map(l => [Number(l.dataset.t), l.getBoundingClientRect().x])")
    assert len(axis) >= 2 and all(t == t for t, _ in axis), f"the timeline's axis names no instant: {axis}"
    (t1, x1), (t2, x2) = axis[0], axis[-1]
    ticks = drawn_ticks(page)
    assert len(ticks) > 10
    misplaced = []
    for tick in ticks:
        t, x = tick["ts"], tick["x"]
        expected = x1 + (t - t1) * (x2 - x1) / (t2 - t1)
        if abs(x - expected) > 2:
            misplaced.append((t, round(x, 1), round(expected, 1)))
    # and a tick pointed at is the change of that instant: its words say it
    middle = min(ticks, key=lambda tick: abs(tick["x"] - (x1 + x2) / 2))
    assert iso_second(middle["ts"]) in point_at(page, middle)["what"]
    return misplaced


def test_a_change_is_drawn_at_its_instant_on_the_timeline_s_axis_at_two_widths_and_after_a_zoom(page: Any) -> None:
    assert _misplaced_ticks(page) == []
    page.set_viewport_size({"width": 900, "height": 900})
    page.wait_for_function("() => document.querySelector('#timeline').getBoundingClientRect().width < 900")
    settled(page)
    assert _misplaced_ticks(page) == []
    box = page.locator("#timeline").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + 100)
    for _ in range(3):
        page.mouse.wheel(0, -100)
    settled(page)
    assert _misplaced_ticks(page) == []
    open_tick(page, in_sight(page, drawn_ticks(page))[0])  # a version opened below the rows: a page to scroll
    page.set_viewport_size({"width": 900, "height": 300})  # the page scrolled down the rows: their axis stays in sight above them
    page.evaluate("() => window.scrollTo(0, document.querySelector('#objects').getBoundingClientRect().top + window.scrollY + 40)")
    axis = page.locator("#objects-axis").bounding_box()
    assert axis is not None and 0 <= axis["y"] <= 2 and page.locator("#objects-axis line").count() >= 2


def test_a_pan_inside_the_range_the_rows_were_asked_for_is_drawn_from_what_the_page_has(page: Any) -> None:
    box = page.locator("#timeline").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 100)
    page.mouse.wheel(0, -100)
    settled(page)
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url) if "/api/objects" in request.url else None)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2 - 150, box["y"] + 100, steps=4)
    page.mouse.up()
    settled(page)
    assert asked == [] and _misplaced_ticks(page) == []


def test_a_zoom_that_would_ask_what_the_page_has_asks_nothing_and_is_drawn_at_its_instant(page: Any) -> None:
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url) if "/api/objects" in request.url else None)
    box = page.locator("#timeline").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 100)
    page.mouse.wheel(0, -100)  # the rows were asked for the whole history, and would be again, in as many columns
    settled(page)
    assert asked == [] and _misplaced_ticks(page) == []


def _labels(page: Any) -> list[str]:
    return list(page.eval_on_selector_all("#objects .row-label", "ts => ts.map(t => t.firstChild.textContent)"))


def test_two_namesakes_in_two_namespaces_are_told_apart_and_found_by_namespace_and_name(page: Any) -> None:
    assert {"Deployment north/quokka-api", "Deployment south/quokka-api"} <= set(_labels(page))
    page.fill("#search", "south/quokka")
    page.wait_for_selector("body[data-objects='south/quokka:1']", state="attached")
    settled(page)
    assert _labels(page) == ["Deployment south/quokka-api"]
    page.fill("#search", "h/quokka-a")  # any part of namespace/name, across the slash
    page.wait_for_selector("body[data-objects='h/quokka-a:2']", state="attached")


def test_a_row_says_how_many_of_its_changes_it_draws_when_not_all(page: Any) -> None:
    label = next(text for text in _labels(page) if text.startswith("ConfigMap north/settings"))
    drawn = len(drawn_ticks(page, "v1.ConfigMap/north/settings"))
    assert drawn < CHURN and label.endswith(f"({drawn} of {CHURN} changes drawn)")


def test_a_row_draws_its_changes_as_a_few_marks_not_an_element_each(page: Any) -> None:
    """What a search costs the browser grows with the rows and the kinds of mark, not with their changes."""
    assert len(drawn_ticks(page, "v1.ConfigMap/north/settings")) > 100
    marks = page.eval_on_selector_all("#objects-plot [data-object='v1.ConfigMap/north/settings']", "ms => ms.map(m => m.tagName)")
    assert marks == ["path"]


def test_a_tick_drawn_for_several_changes_says_how_many_and_every_change_is_accounted_for(page: Any) -> None:
    ticks = drawn_ticks(page, "v1.ConfigMap/north/settings")
    assert in_sight(page, ticks) == ticks  # the whole history is in view: each of them is pointed at
    words = [point_at(page, tick)["what"] for tick in ticks]
    assert len(set(words)) == len(ticks)
    stands_for = [int(m.group(1)) if (m := re.search(r"\(drawn for (\d+) changes of its \S+ column\)", w)) else 1 for w in words]
    assert max(stands_for) > 1 and sum(stands_for) == CHURN


def _open(page: Any, event_id: int, namespace: str, at: int) -> None:
    """The change ``event_id``, opened by a click on its tick: its app's row in ``namespace``, at the instant ``at``."""
    tick = next(t for t in drawn_ticks(page, f"apps/v1.Deployment/{namespace}/quokka-api") if t["ts"] == at)
    assert open_tick(page, tick) == event_id


def test_the_diff_of_a_list_then_watch_pair_shows_only_the_changed_field_and_the_status_apart(page: Any, history: Any) -> None:
    ids = history[1]
    _open(page, ids["north-watched"], "north", T0 + 700)
    assert page.eval_on_selector_all("#diff .add", "ss => ss.map(s => s.textContent)") == ["+  replicas: 3\n"]
    assert page.eval_on_selector_all("#diff .del", "ss => ss.map(s => s.textContent)") == ["-  replicas: 2\n"]
    assert page.locator("#status-changes").is_visible() and not page.locator("#status-diff").is_visible()
    page.click("#status-changes summary")
    assert "+  readyReplicas: 2\n" in page.eval_on_selector_all("#status-diff .add", "ss => ss.map(s => s.textContent)")
    _open(page, ids["south-watched"], "south", T0 + 2500)  # the same object but its status: no change of the object
    assert page.locator("#diff .add, #diff .del").count() == 0
    assert page.text_content("#diff").startswith("(the object is the same: only its status changed")


def _focused(page: Any) -> str | None:
    return page.evaluate("() => document.activeElement && document.activeElement.dataset.object || null")


def test_without_a_mouse_a_person_steps_through_a_row_s_changes_and_opens_one(page: Any, history: Any) -> None:
    ids, app = history[1], "apps/v1.Deployment/north/quokka-api"
    rows = page.eval_on_selector_all("#objects text.row-label[data-object]", "ts => ts.map(t => t.dataset.object)")
    page.focus("#search")
    for _ in range(5):  # past the search box and what follows it, to the first row's name
        page.keyboard.press("Tab")
        if _focused(page):
            break
    assert _focused(page) == rows[0]
    for _ in range(rows.index(app)):
        page.keyboard.press("ArrowDown")
    assert _focused(page) == app
    page.keyboard.press("Tab")  # the rows are one stop of the tab order, which comes back to the row it left
    assert _focused(page) is None
    page.keyboard.press("Shift+Tab")
    assert _focused(page) == app
    said = []
    for key in ["ArrowRight", "ArrowRight", "ArrowRight", "Home", "End"]:
        page.keyboard.press(key)
        said.append((page.get_attribute("#tick-hover", "data-id"), page.text_content("#tick-said")))
    listed, watched = (str(ids["north-listed"]), f"spec applied {iso_second(T0 + 100)}"), (str(ids["north-watched"]), f"spec applied {iso_second(T0 + 700)}")
    assert said == [listed, watched, watched, listed, watched]
    assert page.get_attribute("#tick-hover", "visibility") == "visible"
    page.keyboard.press("Enter")
    page.wait_for_selector(f"body[data-version='{ids['north-watched']}']", state="attached")
    settled(page)
    assert page.eval_on_selector_all("#diff .add", "ss => ss.map(s => s.textContent)") == ["+  replicas: 3\n"]
    assert _focused(page) == app and page.get_attribute("#tick-hover", "data-id") == str(ids["north-watched"])  # drawn anew, kept
    page.keyboard.press("Escape")
    assert page.get_attribute("#tick-hover", "visibility") == "hidden" and page.text_content("#tick-said") == ""


def test_without_a_mouse_a_person_moves_the_range_and_picks_it_as_the_window(page: Any) -> None:
    page.focus("#zoom-all")
    for _ in range(8):  # the toolbar's buttons and the checkbox, then the chart
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.id") == "timeline":
            break
    assert page.evaluate("() => document.activeElement.id") == "timeline"
    whole = _range(page)
    for key in ["+", "+"]:
        page.keyboard.press(key)
    settled(page)
    zoomed = _range(page)
    assert zoomed[1] - zoomed[0] < (whole[1] - whole[0]) / 3
    page.keyboard.press("ArrowLeft")
    settled(page)
    earlier = _range(page)
    assert earlier[0] < zoomed[0] and abs((earlier[1] - earlier[0]) - (zoomed[1] - zoomed[0])) <= 1
    page.keyboard.press("Enter")
    page.wait_for_selector("body[data-window]", state="attached")
    settled(page)
    start, end = (int(x) for x in page.get_attribute("body", "data-window").split(":"))
    assert abs(start - earlier[0]) <= 1 and abs(end - earlier[1]) <= 1 and page.locator("#window").is_visible()
    assert page.locator("#download").is_visible()  # the export's command and its download, reached from here by Tab


def _range(page: Any) -> tuple[float, float]:
    match = re.match(r"(\S+) – (\S+) ", page.text_content("#range"))
    assert match is not None
    return _seconds(match.group(1)), _seconds(match.group(2))


def test_zooming_out_ten_notches_past_the_history_keeps_the_whole_history_in_view(page: Any) -> None:
    box = page.locator("#timeline").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.85, box["y"] + 100)
    for _ in range(6):
        page.mouse.wheel(0, -100)
    settled(page)
    start, end = _range(page)
    assert end - start < 1800
    for _ in range(10):
        page.mouse.wheel(0, 100)
    settled(page)
    start, end = _range(page)
    assert start <= T0 and end >= T0 + 3600, (start, end)


@pytest.fixture()
def live(tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    """A cache a recorder is writing: its writer lock held, its run not stopped cleanly, stamped up to now."""
    import time

    from kubectl_sktrace.store.connection import WriterLock

    path = tmp_path / "live.db"
    now = int(time.time())
    b = CacheBuilder(path)
    b.run(started=now - 1800, stopped=now, clean=False)
    for i in range(30):
        b.apply(now - 1800 + 60 * i, _app("north", 1 + i % 3, watched=True, ready=1))
    with WriterLock(path):
        yield path, b
    b.close()


def test_a_view_that_ends_now_follows_the_recorder(browser: Any, live: tuple[Path, Any]) -> None:  # noqa: F811
    from kubectl_sktrace.view.app import cache_api

    path, builder = live
    with serving(ViewServer(api=cache_api(str(path), title=str(path), command_base=()))) as server:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        try:
            page = context.new_page()
            errors = failures(page)
            page.goto(server.url)
            page.wait_for_selector("body[data-ready][data-histogram][data-objects]", state="attached")
            settled(page)
            box = page.locator("#timeline").bounding_box()
            page.mouse.move(box["x"] + box["width"] - 14, box["y"] + 100)  # the right edge: now
            for _ in range(4):
                page.mouse.wheel(0, -100)
            settled(page)
            start, end = _range(page)
            with builder.cache.transaction() as conn:  # the recorder's heartbeat: its run reaches 60 s further
                conn.execute("UPDATE runs SET stopped = stopped + 60")
            page.wait_for_function(f"() => Number(document.querySelector('#timeline').dataset.end) > {end + 30}", timeout=30_000)
            settled(page)
            later_start, later_end = _range(page)
            assert later_end - end == pytest.approx(60, abs=1) and later_start - start == pytest.approx(60, abs=1)
            assert errors == []
        finally:
            context.close()
