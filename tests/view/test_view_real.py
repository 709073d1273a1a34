"""`view` of a recording made on a real kube-apiserver v1.28 (the real tier), in a real browser (Debian's chromium
through Playwright): each recorded change of a Deployment is drawn at its instant on its row, and opening one shows
the version the server had.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from kubectl_sktrace.store.versions import APPLIED, DELETED
from realk8s import ControlPlane, DEPLOY, deployment, start_recorder, wait_for_op
from reliability_support import query, wait_rows
from viewsupport import drawn_ticks, open_tick, opened_page, serving

pytestmark = [pytest.mark.timeout(240)]
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
    if shutil.which(CHROMIUM) is None:
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium; .ci/run does)")
    with sync_api.sync_playwright() as playwright:
        opened = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield opened
        opened.close()


def test_the_page_draws_a_real_recording_s_changes_at_their_instants_and_opens_them(real_cluster: ControlPlane, tmp_path: Path,
                                                                                   browser: Any) -> None:
    plane, home, cache = real_cluster, tmp_path / "home", tmp_path / "cache.db"
    home.mkdir()
    ns = plane.namespace("view")
    recorder = start_recorder(plane, cache, home, tmp_path, "-n", ns)
    try:
        plane.apply(deployment(ns, "web"))
        wait_rows(cache, "SELECT 1 FROM pods WHERE namespace = ? AND start_ts IS NOT NULL", ns)
        time.sleep(1.1)  # each change at a second of its own: a tick is one second's changes of a row
        plane.kubectl("-n", ns, "set", "image", "deployment/web", "main=nginx:1.26")
        wait_for_op(cache, DEPLOY, ns, "web", APPLIED, count=2)
        time.sleep(1.1)
        plane.kubectl("-n", ns, "delete", "deployment", "web")
        wait_for_op(cache, DEPLOY, ns, "web", DELETED)
    finally:
        assert recorder.stop() == 0, recorder.output()
    recorded = query(cache, "SELECT id, ts, op FROM events WHERE gvk = ? AND namespace = ? AND name = 'web' ORDER BY id", DEPLOY, ns)

    from kubectl_sktrace.view.app import cache_api
    from kubectl_sktrace.view.server import ViewServer

    with serving(ViewServer(api=cache_api(str(cache), title=str(cache), command_base=("--cache", str(cache))))) as server, \
            opened_page(browser, server.url) as page:
        ticks = sorted(drawn_ticks(page, f"{DEPLOY}/{ns}/web"), key=lambda tick: tick["ts"])
        assert [tick["ts"] for tick in ticks] == [ts for _, ts, _ in recorded], recorded
        re_imaged = next(tick for tick in ticks if tick["ts"] == recorded[1][1])
        assert open_tick(page, re_imaged) == recorded[1][0]
        assert "nginx:1.26" in page.inner_text("#version")
        assert page.eval_on_selector_all(f"#objects-plot [data-object^='{DEPLOY}/{ns}/web']", "ms => ms.length") > 0
