"""A person dragging windows over a big cache: the view stays small and keeps answering.

The cache is ``benchmarks/bench_cache.py``'s fixture at 600,000 events over a week (built with its own builder, in a
child process). ``kubectl sktrace view`` runs as a process of its own; a real Chromium drags five windows of 200,000
events or more in a row, each answered before the next, while another client asks for the overview every 50 ms.
The view's peak resident memory (``VmHWM``, the kernel's own figure) stays under 200 MB, and the overview keeps being
answered meanwhile: nine in ten within 300 ms, none past 2 s. What is checked is that no overview waits for a window's
figures (a page that computed them in one pass held every overview for 16 to 44 s); a single answer on a machine whose
other processes hold both cores may take longer than 300 ms, which says nothing of the view.
"""

from __future__ import annotations

import http.client
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any, Iterator

import pytest
from reliability_support import EXE, private_env
from test_view_browser import browser  # noqa: F401  (fixture)
from viewsupport import failures, settled

pytestmark = pytest.mark.slow
BENCH_CACHE = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_cache.py"
EVENTS = 600_000
WINDOW_EVENTS = 200_000
MAX_RSS = 200 << 20
MAX_OVERVIEW = 0.3  # nine overviews in ten
MAX_OVERVIEW_EVER = 2.0


@pytest.fixture(scope="module")
def big_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("big") / "cache.db"
    subprocess.run([sys.executable, str(BENCH_CACHE), "--child-build", str(path), str(EVENTS), "1"], check=True, timeout=600)
    return path


@pytest.fixture()
def view(big_cache: Path, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    proc = subprocess.Popen([EXE, "view", "--cache", str(big_cache), "--no-browser"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=private_env(tmp_path), text=True)
    try:
        assert proc.stdout is not None
        yield proc, proc.stdout.readline().split(" at ", 1)[1].strip()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)


def _peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


class OverviewAsker(threading.Thread):
    """Asks the view for its overview every 50 ms, as another tab would, noting the slowest answer."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        parts = urllib.parse.urlsplit(url)
        self.port, self.token = int(parts.port or 0), urllib.parse.parse_qs(parts.fragment)["token"][0]
        self.times: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            t = time.perf_counter()
            conn.request("GET", "/api/overview", headers={"X-Sktrace-Token": self.token})
            response = conn.getresponse()
            response.read()
            self.times.append(time.perf_counter() - t)
            conn.close()
            assert response.status == 200
            self.stop.wait(0.05)


def test_five_windows_of_200k_events_dragged_in_a_row_keep_the_view_small_and_answering(browser: Any, view: Any) -> None:  # noqa: F811
    proc, url = view
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    asker = OverviewAsker(url)
    try:
        page = context.new_page()
        errors = failures(page)
        page.goto(url)
        page.wait_for_selector("body[data-ready][data-histogram][data-objects]")
        settled(page)
        asker.start()
        box = page.locator("#timeline").bounding_box()
        left, width = box["x"] + 90, box["width"] - 102
        sizes = []
        for i in range(5):
            before = page.get_attribute("body", "data-window") or ""
            page.keyboard.down("Shift")
            page.mouse.move(left + width * (0.04 + 0.1 * i), box["y"] + 100)
            page.mouse.down()
            page.mouse.move(left + width * (0.5 + 0.1 * i), box["y"] + 100, steps=4)
            page.mouse.up()
            page.keyboard.up("Shift")
            page.wait_for_function(f"() => (document.body.dataset.window || '') !== '{before}'", timeout=120_000)
            sizes.append(int(page.text_content("#window-range").split(", ")[-1].split(" ")[0]))
        try:  # what the page still asks after the last window (the page's own bound: a minute)
            page.wait_for_function("() => (document.body.dataset.busy || '0') === '0'", timeout=60_000)
            still_busy = False
        except Exception:  # noqa: BLE001  (Playwright's TimeoutError)
            still_busy = True
    finally:
        asker.stop.set()
        asker.join(timeout=120)
        context.close()
    peak = _peak_rss(proc.pid)
    print(f"windows of {sizes} events: the view's peak RSS {peak / 2**20:.0f} MB; {len(asker.times)} overviews meanwhile, nine in ten "
          f"within {sorted(asker.times)[len(asker.times) * 9 // 10] * 1000:.0f} ms, the slowest {max(asker.times) * 1000:.0f} ms")
    assert errors == [], errors
    assert min(sizes) >= WINDOW_EVENTS, sizes
    assert peak < MAX_RSS, f"the view grew to {peak / 2**20:.0f} MB" + (" (and was still working a minute later)" if still_busy else "")
    slowest = sorted(asker.times)
    assert len(slowest) > 10 and slowest[len(slowest) * 9 // 10] < MAX_OVERVIEW and slowest[-1] < MAX_OVERVIEW_EVER, slowest[-5:]
    assert not still_busy
