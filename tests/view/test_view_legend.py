"""The legend and the marks, read from the page in a real browser (Debian's chromium through Playwright): every mark
drawn is named in the legend in its own colour, no colour stands for two things, marks that sit side by side differ in
shape as well as hue, and time an audit log filled is told from time nobody saw.

The history: viewsupport's (two runs, the time between them, outages, a refusal, reconstructed changes, pods), plus a
metadata change and a data change, and an audit log that filled part of the time between the runs."""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path
from typing import Any, Iterator

import pytest
from conftest import CacheBuilder, obj
from test_view_browser import browser  # noqa: F401  (fixture)
from viewsupport import T0, build_history, drawn_ticks, opened_page, serving

from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.store.recording import Recording
from kubectl_sktrace.view.server import ViewServer

pytestmark = pytest.mark.slow
FILLED = (T0 + 4000, T0 + 6000)  # the part of the time between the runs (T0+3600 – T0+7200) the log covered


def _pod_status(restarts: int = 0, state: str = "running", last: str | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"ready": state == "running", "restarts": restarts, "state": state}
    if last:
        container["last"] = last
    return {"phase": "Running", "node": "n1", "containers": {"web": container}}


STATUSES = [  # (ts, kind, name, uid, inferred, reduced): a workload's band, its pods' restarts, crash loop, OOM kill, failed pull
    (T0 + 10, "apps/v1.Deployment", "frontend", "", 0, {"replicas": 2, "readyReplicas": 2}),
    (T0 + 1000, "apps/v1.Deployment", "frontend", "", 0, {"replicas": 2, "readyReplicas": 1}),
    (T0 + 1230, "apps/v1.Deployment", "frontend", "", 1, {"replicas": 4, "readyReplicas": 4}),
    (T0 + 15, "v1.Pod", "frontend-abc-1", "uid-frontend-abc-1", 0, _pod_status()),
    (T0 + 400, "v1.Pod", "frontend-abc-1", "uid-frontend-abc-1", 0, _pod_status(1, last="terminated OOMKilled 137")),
    (T0 + 600, "v1.Pod", "frontend-abc-1", "uid-frontend-abc-1", 0, _pod_status(2, "waiting CrashLoopBackOff", "terminated Error 1")),
    (T0 + 500, "v1.Pod", "frontend-abc-2", "uid-frontend-abc-2", 0, _pod_status(0, "waiting ImagePullBackOff")),
]


def build(path: Path) -> None:
    build_history(path)
    b = CacheBuilder(path)
    try:
        rec = Recording(b.cache)
        with b.cache.transaction():
            for ts, kind, name, uid, inferred, reduced in STATUSES:
                rec.append_status(1, ts=ts, recv=ts, key=ObjKey(GVK.parse(kind), "shop", name), uid=uid, inferred=bool(inferred),
                                  reduced=reduced)
        labelled = b.apply(T0 + 2200, obj("ConfigMap", "settings", "shop", labels={"tier": "config"}))
        data = b.apply(T0 + 2400, obj("ConfigMap", "settings", "shop"))
        with b.cache.transaction() as conn:
            conn.execute("UPDATE events SET op = 3 WHERE id = ?", (labelled,))
            conn.execute("UPDATE events SET op = 4 WHERE id = ?", (data,))
            conn.execute("INSERT INTO audit_fills (run_id, since, until, covered_since, covered_until, levels, events, replaced, kept, partial,"
                         " filled_at, gvk) VALUES (2, ?, ?, ?, ?, 'RequestResponse', 3, 0, 0, 0, ?, '')",
                         (T0 + 3600, T0 + 7200, *FILLED, T0 + 9000))
    finally:
        b.close()


@pytest.fixture(scope="module")
def page(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:  # noqa: F811
    from kubectl_sktrace.view.app import cache_api

    path = tmp_path_factory.mktemp("legend") / "cache.db"
    build(path)
    with serving(ViewServer(api=cache_api(str(path), title=str(path), command_base=("--cache", str(path))))) as server:
        with opened_page(browser, server.url) as opened:
            yield opened


# each legend entry: the marks it names, its words, its swatch's colour and border; each mark drawn: its classes and
# what paints it, and the entries whose marks it is
_READ = """() => {
  const legend = [...document.querySelectorAll('#legend > *')].map((item) => {
    const swatch = getComputedStyle(item.querySelector('.swatch'));
    return {marks: item.dataset.marks || null, words: item.textContent, colour: swatch.backgroundColor, border: swatch.borderStyle};
  });
  const marks = [...document.querySelectorAll('rect.span, rect.bar, path.ticks, rect.life, rect.pod, rect.band, rect.smark')].map((mark) => {
    const style = getComputedStyle(mark);
    return {what: mark.tagName + '.' + mark.getAttribute('class').replace(/ /g, '.'), fill: style.fill, dashed: style.strokeDasharray !== 'none',
      entries: legend.filter((entry) => entry.marks && mark.matches(entry.marks)).map((entry) => entry.words)};
  });
  return {legend, marks};
}"""


def test_every_mark_is_in_the_legend_in_its_own_colour_and_no_colour_says_two_things(page: Any) -> None:
    read = page.evaluate(_READ)
    legend, marks = read["legend"], read["marks"]
    assert all(entry["marks"] for entry in legend), [e["words"] for e in legend if not e["marks"]]
    colours = [entry["colour"] for entry in legend]
    assert len(set(colours)) == len(colours), sorted(colours)  # no colour stands for two things
    near = [(round(_distance(a["colour"], b["colour"]), 1), a["words"], b["words"]) for a, b in itertools.combinations(legend, 2)
            if a["border"] == b["border"] and _distance(a["colour"], b["colour"]) < DISTINCT]
    assert near == [], near  # nor two colours a reader could take for one (the kinds' bars' included)
    kinds = {m["what"] for m in marks}
    for expected in ("rect.span.span-run", "rect.span.span-offline", "rect.span.span-filled", "rect.span.span-outage",
                     "path.ticks.applied", "path.ticks.deleted.inferred", "path.ticks.applied.inferred", "path.ticks.metadata",
                     "path.ticks.data", "rect.life", "rect.life.deleted", "rect.pod.running", "rect.pod.finished", "rect.bar",
                     "rect.band.desired", "rect.band.ready", "rect.smark.restart", "rect.smark.crashloop", "rect.smark.oomkilled",
                     "rect.smark.pullfailed"):
        assert expected in kinds, (expected, sorted(kinds))
    by_words = {entry["words"]: entry for entry in legend}
    for mark in marks:
        assert len(mark["entries"]) == 1, mark  # every mark named, once
        entry = by_words[mark["entries"][0]]
        assert mark["fill"] == entry["colour"], (mark, entry)  # in the colour its entry shows
        assert mark["dashed"] == (entry["border"] == "dashed"), (mark, entry)  # hollow marks, a dashed swatch
    words = set(by_words)
    assert {"mark: deleted", "mark: reconstructed after a gap (hollow)", "pod running", "pod finished (outlined)",
            "exact from the audit log (filled by backfill)"} <= words, sorted(words)


DISTINCT = 10.0
"""The least CIEDE2000 difference between two colours of the legend: about 2 is the least a trained eye tells apart
side by side; 10 is told apart at a glance, across the page. Colours whose swatches differ in outline as well (a
hollow mark's dashed one) are told apart by their shape."""


def _lab(css: str) -> tuple[float, float, float]:
    """``rgb(r, g, b)`` as computed styles give it, in CIE Lab (sRGB, D65)."""
    r, g, b = (int(v) / 255 for v in re.findall(r"\d+", css)[:3])
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    x = (0.4124 * lin[0] + 0.3576 * lin[1] + 0.1805 * lin[2]) / 0.95047
    y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    z = (0.0193 * lin[0] + 0.1192 * lin[1] + 0.9505 * lin[2]) / 1.08883
    fx, fy, fz = (t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in (x, y, z))
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def _ciede2000(lab1: tuple[float, float, float], lab2: tuple[float, float, float]) -> float:
    """Sharma, Wu and Dalal's formulation (2005), checked against their test data below."""
    (l1, a1, b1), (l2, a2, b2) = lab1, lab2
    c_mean = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_mean ** 7 / (c_mean ** 7 + 25 ** 7)))
    a1, a2 = (1 + g) * a1, (1 + g) * a2
    c1, c2 = math.hypot(a1, b1), math.hypot(a2, b2)
    h1, h2 = (math.degrees(math.atan2(b, a)) % 360 if a or b else 0.0 for a, b in ((a1, b1), (a2, b2)))
    dh = 0.0 if c1 * c2 == 0 else (h2 - h1 + 180) % 360 - 180
    big_dh = 2 * math.sqrt(c1 * c2) * math.sin(math.radians(dh / 2))
    l_mean, c_mean = (l1 + l2) / 2, (c1 + c2) / 2
    if c1 * c2 == 0:
        h_mean = h1 + h2
    elif abs(h1 - h2) <= 180:
        h_mean = (h1 + h2) / 2
    else:
        h_mean = (h1 + h2 + (360 if h1 + h2 < 360 else -360)) / 2
    t = (1 - 0.17 * math.cos(math.radians(h_mean - 30)) + 0.24 * math.cos(math.radians(2 * h_mean))
         + 0.32 * math.cos(math.radians(3 * h_mean + 6)) - 0.20 * math.cos(math.radians(4 * h_mean - 63)))
    rotation = -math.sin(math.radians(60 * math.exp(-(((h_mean - 275) / 25) ** 2)))) * 2 * math.sqrt(c_mean ** 7 / (c_mean ** 7 + 25 ** 7))
    sl = 1 + 0.015 * (l_mean - 50) ** 2 / math.sqrt(20 + (l_mean - 50) ** 2)
    sc, sh = 1 + 0.045 * c_mean, 1 + 0.015 * c_mean * t
    dl, dc, dh_ = (l2 - l1) / sl, (c2 - c1) / sc, big_dh / sh
    return math.sqrt(dl ** 2 + dc ** 2 + dh_ ** 2 + rotation * dc * dh_)


def _distance(a: str, b: str) -> float:
    return _ciede2000(_lab(a), _lab(b))


@pytest.mark.parametrize(("lab1", "lab2", "expected"), [  # Sharma, Wu and Dalal's test data: pairs 1, 7, 17, 25 and 34
    ((50, 2.6772, -79.7751), (50, 0, -82.7485), 2.0425), ((50, 0, 0), (50, -1, 2), 2.3669),
    ((50, 2.5, 0), (73, 25, -18), 27.1492), ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
    ((2.0776, 0.0795, -1.1350), (0.9033, -0.0636, -0.5514), 0.9082)])
def test_colour_difference_is_ciede2000(lab1: tuple[float, float, float], lab2: tuple[float, float, float], expected: float) -> None:
    assert _ciede2000(lab1, lab2) == pytest.approx(expected, abs=1e-4)
    assert _ciede2000(lab2, lab1) == pytest.approx(expected, abs=1e-4)


def _boxes(page: Any, selector: str) -> list[dict[str, float]]:
    return list(page.eval_on_selector_all(selector, "ms => ms.map(m => { const b = m.getBBox(); return {y: b.y, height: b.height}; })"))


def test_marks_side_by_side_differ_in_shape_not_only_in_hue(page: Any) -> None:
    """For whoever tells hues apart poorly: a run's bar and the thin bar of no recorder; a deletion the row's whole
    height, a spec change less, a metadata change its upper half and a data change its lower half; a finished pod
    outlined beside a running one's solid bar."""
    run, offline = _boxes(page, "rect.span-run")[0], _boxes(page, "rect.span-offline")[0]
    assert offline["height"] <= run["height"] / 2
    shapes = {}
    for op in ("applied", "deleted", "metadata", "data"):
        ticks = drawn_ticks(page, kind=op)
        d = page.eval_on_selector(f"#objects path.ticks.{op}", "p => p.getAttribute('d')")
        first = re.match(r"M(-?[\d.]+) (-?[\d.]+)h2v(-?[\d.]+)h-2z", d)
        assert ticks and first, op
        shapes[op] = (ticks[0]["object"], float(first[2]), float(first[3]))  # its row, its top, its height
    assert shapes["deleted"][2] > shapes["applied"][2] > shapes["metadata"][2] == shapes["data"][2]
    assert shapes["metadata"][0] == shapes["data"][0] and shapes["metadata"][1] + shapes["metadata"][2] <= shapes["data"][1]
    finished = page.eval_on_selector("rect.pod.finished", "m => getComputedStyle(m).stroke")
    running = page.eval_on_selector("rect.pod.running", "m => getComputedStyle(m).stroke")
    assert (running, finished != "none") == ("none", True)


# each pod's status mark: its kind, its instant, and its place on the pod's bar it sits on (offset from the bar's top,
# height, width); each legend swatch of them: its box
_POD_MARKS = """() => {
  const pods = [...document.querySelectorAll('rect.pod')].map((p) => p.getBBox());
  const marks = [...document.querySelectorAll('rect.smark')].map((m) => {
    const b = m.getBBox(), on = pods.filter((p) => p.y <= b.y && b.y + b.height <= p.y + p.height && p.x <= b.x && b.x <= p.x + p.width);
    return {mark: m.dataset.mark, at: Number(m.dataset.at), bars: on.length, shape: on.length ? [b.y - on[0].y, b.height, b.width] : null};
  });
  const swatches = Object.fromEntries([...document.querySelectorAll('#legend .swatch[class*=smark-]')].map((s) => {
    const b = s.getBoundingClientRect(), words = s.parentElement.getBoundingClientRect();
    return [s.className.match(/smark-(\\w+)/)[1], [Math.round(b.top - words.top), Math.round(b.height), Math.round(b.width)]];
  }));
  return {marks, swatches};
}"""


def test_a_pod_s_status_marks_side_by_side_differ_in_shape_not_only_in_hue(page: Any) -> None:
    """A restart and the OOM kill or crash loop that caused it are drawn side by side at one instant: each kind of
    mark has a shape of its own on the pod's bar (a restart its height, a crash loop its upper half, an OOM kill its
    lower half, a failed pull a thin line), and its legend swatch has that shape too."""
    read = page.evaluate(_POD_MARKS)
    marks, swatches = read["marks"], read["swatches"]
    assert all(m["bars"] >= 1 for m in marks), marks  # each on its pod's bar
    shapes: dict[str, set[tuple[float, ...]]] = {}
    for m in marks:
        shapes.setdefault(m["mark"], set()).add(tuple(m["shape"]))
    assert sorted(shapes) == ["crashloop", "oomkilled", "pullfailed", "restart"] and all(len(s) == 1 for s in shapes.values()), shapes
    drawn = {mark: next(iter(s)) for mark, s in shapes.items()}
    assert len(set(drawn.values())) == 4, drawn  # no two kinds of mark alike but for their hue
    together = {at: sorted(m["mark"] for m in marks if m["at"] == at) for at in {m["at"] for m in marks}}
    assert ["oomkilled", "restart"] in together.values() and ["crashloop", "restart"] in together.values(), together
    restart, crashloop, oomkilled, pullfailed = (drawn[k] for k in ("restart", "crashloop", "oomkilled", "pullfailed"))
    assert crashloop[0] == restart[0] and crashloop[0] + crashloop[1] <= oomkilled[0] and oomkilled[0] + oomkilled[1] == restart[1]
    assert pullfailed[1] == restart[1] and pullfailed[2] < restart[2]
    assert len(set(map(tuple, swatches.values()))) == 4, swatches  # the legend shows the shapes as well
    assert swatches["crashloop"][0] < swatches["oomkilled"][0] and swatches["pullfailed"][2] < swatches["restart"][2], swatches

def test_time_an_audit_log_filled_has_its_own_class_colour_and_words(page: Any) -> None:
    filled = page.eval_on_selector_all("rect.span-filled", "rs => rs.map(r => [r.getAttribute('class'), Number(r.dataset.since), "
                                                         "Number(r.dataset.until), r.querySelector('title').textContent])")
    assert [(c, s, u) for c, s, u, _ in filled] == [("span span-filled", *FILLED)]
    assert filled[0][3].startswith("exact from the audit log: 2026-11-25T11:06:40Z–11:40:00Z (33m20s); "
                                   "filled from the audit log (RequestResponse, 3 events)"), filled[0][3]
    offline = page.eval_on_selector("rect.span-offline", "r => [r.getAttribute('class'), getComputedStyle(r).fill]")
    colour = page.eval_on_selector("rect.span-filled", "r => getComputedStyle(r).fill")
    assert offline[0] == "span span-offline" and offline[1] != colour


def test_a_workload_band_says_ready_against_wanted_and_a_pods_mark_opens_its_status_change(page: Any) -> None:
    band = page.eval_on_selector_all("rect.band.desired", "rs => rs.map(r => [Number(r.dataset.from), Number(r.dataset.ready), "
                                                         "Number(r.dataset.desired)])")
    assert band == [[T0 + 10, 2, 2], [T0 + 1000, 1, 2], [T0 + 1230, 4, 4]], band
    marks = page.eval_on_selector_all("rect.smark", "ms => ms.map(m => [m.dataset.mark, Number(m.dataset.at)])")
    assert sorted(marks) == sorted([["restart", T0 + 400], ["oomkilled", T0 + 400], ["restart", T0 + 600], ["crashloop", T0 + 600],
                                    ["pullfailed", T0 + 500]]), marks
    page.dispatch_event("rect.smark.oomkilled", "click")
    page.wait_for_function("() => document.body.dataset.statusChange")
    title, diff = page.text_content("#version-title"), page.text_content("#diff")
    assert title.startswith("v1.Pod shop/frontend-abc-1: status Running at"), title
    assert "web: restarts 1, last terminated OOMKilled 137" in diff, diff
