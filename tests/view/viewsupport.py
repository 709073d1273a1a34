"""A recorded history for the view's tests: two runs, the time between them, an outage, a refusal, a kind not served,
Deployments with their ReplicaSets and pods, a Job, changes caught up after the outage, a deletion found at a restart.

Written with the store's own schema through ``CacheBuilder`` (``tests/conftest.py``), as the recorder writes rows."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from conftest import CacheBuilder, key_of, obj
from kubectl_sktrace.view.server import ViewServer

T0 = 1_795_600_800  # 2026-11-25T10:00:00Z
CAUSES = [  # (run, kind, since, until, cause)
    (1, "apps/v1.Deployment", T0 + 1200, T0 + 1260, "API unreachable"),
    (1, "v1.ConfigMap", T0 + 1210, T0 + 1260, "API unreachable"),
    (1, "batch/v1.Job", T0 + 600, T0 + 900, "forbidden"),
    (2, "batch/v1.Job", T0 + 7300, T0 + 7400, "not served"),
]


def _template(image: str) -> dict:
    return {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "web", "image": image}]}}}


def build_history(path: Path) -> None:
    b = CacheBuilder(path)
    try:
        b.cache.conn.execute("BEGIN")
        b.cache.set_meta("cluster.server", "https://view.example:6443")
        b.cache.set_meta("cluster.context", "view-test")
        b.cache.conn.execute("COMMIT")
        b.run(started=T0, stopped=T0 + 3600)
        frontend = obj("Deployment", "frontend", "shop", spec=_template("shop/frontend:1.0"), labels={"app": "web"})
        b.apply(T0 + 10, frontend)
        rs = obj("ReplicaSet", "frontend-abc", "shop", spec=_template("shop/frontend:1.0"), owners=[("Deployment", "frontend")])
        b.apply(T0 + 11, rs, owner_chain=[key_of(frontend)])
        cart = obj("Deployment", "cart", "shop", spec=_template("shop/cart:3.1"))
        b.apply(T0 + 20, cart)
        settings = obj("ConfigMap", "settings", "shop", spec=None)
        settings["data"] = {"mode": "fast"}
        b.apply(T0 + 5, settings)
        frontend2 = obj("Deployment", "frontend", "shop", spec=_template("shop/frontend:1.1"), labels={"app": "web"})
        b.apply(T0 + 1000, frontend2)
        frontend3 = obj("Deployment", "frontend", "shop", spec={**_template("shop/frontend:1.1"), "replicas": 4}, labels={"app": "web"})
        b.apply(T0 + 1230, frontend3, inferred=True, recv=T0 + 1262)  # caught up after the outage
        settings2 = obj("ConfigMap", "settings", "shop")
        settings2["data"] = {"mode": "safe"}
        b.apply(T0 + 2000, settings2)
        job = obj("Job", "report-1", "shop", spec={"template": {"spec": {"containers": [{"name": "r", "image": "shop/report:1"}],
                                                                       "restartPolicy": "Never"}}})
        b.apply(T0 + 3000, job)
        b.pod("frontend-abc-1", owner=key_of(frontend), stable_hash=11, start_ts=T0 + 15, namespace="shop", first_seen=T0 + 15)
        b.pod("frontend-abc-2", owner=key_of(frontend), stable_hash=11, start_ts=T0 + 15, end_ts=T0 + 1000, namespace="shop",
              first_seen=T0 + 15)
        b.pod("report-1-x", owner=key_of(job), stable_hash=12, start_ts=T0 + 3005, end_ts=T0 + 3065, namespace="shop", first_seen=T0 + 3005)
        b.run(started=T0 + 7200, stopped=T0 + 9000)
        b.delete(T0 + 7200, cart, inferred=True)  # found gone at the restart
        for i in range(5):
            b.apply(T0 + 7500 + 60 * i, obj("ConfigMap", f"batch-{i}", "shop"))
        with b.cache.transaction() as conn:
            for run_id, gvk, since, until, cause in CAUSES:
                conn.execute("INSERT INTO coverage_gaps (run_id, gvk, since, until, cause, detail) VALUES (?, ?, ?, ?, ?, ?)",
                             (run_id, gvk, since, until, cause, f"{cause} (test)"))
    finally:
        b.close()


@pytest.fixture(scope="session")
def history_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("view") / "cache.db"
    build_history(path)
    return path


@pytest.fixture(scope="module")
def served(history_path: Path) -> Iterator[ViewServer]:
    """The view of ``history_path`` served in this process, on a free port of 127.0.0.1."""
    from kubectl_sktrace.view.app import cache_api

    with serving(ViewServer(api=cache_api(str(history_path), title=str(history_path), command_base=("--cache", str(history_path))))) as server:
        yield server


@contextlib.contextmanager
def serving(server: ViewServer) -> Iterator[ViewServer]:
    """``server`` serving on a thread of this process until the block ends; then stopped and closed."""
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stop()
        thread.join(timeout=10)
        server.close()


def trace_with_findings(path: Path) -> None:
    """A trace whose Deployment mounts a ConfigMap the trace never applies (E0005) and keeps its status (W0000)."""
    import yaml

    from kubectl_sktrace.trace.files.format import Trace, encode_trace
    from kubectl_sktrace.tracerconfig import config_to_trace, parse_config

    config = config_to_trace(parse_config(yaml.safe_load("trackedObjects:\n  apps/v1.Deployment:\n    podSpecTemplatePaths: [/spec/template]\n"
                                                          "    trackLifecycle: true\n"), source="test"))
    template = {"spec": {"containers": [{"name": "web", "image": "shop/web:1"}],
                         "volumes": [{"name": "cfg", "configMap": {"name": "absent-config"}}]}}
    web = obj("Deployment", "web", "shop", spec={"replicas": 1, "template": template}, status={"replicas": 1})
    web2 = obj("Deployment", "web", "shop", spec={"replicas": 3, "template": template})
    api = obj("Deployment", "api", "shop", spec={"replicas": 1, "template": {"spec": {"containers": [{"name": "a", "image": "shop/api:1"}]}}})
    trace = Trace(version=2, config=config, events=[
        {"ts": T0, "applied_objs": [web, api], "deleted_objs": []},
        {"ts": T0 + 60, "applied_objs": [web2], "deleted_objs": []},
        {"ts": T0 + 120, "applied_objs": [], "deleted_objs": [api]},
    ], index={"apps/v1.Deployment": {"shop/web": 1, "shop/api": 2}},
        pod_lifecycles={("apps/v1.Deployment", "shop/web"): {7: [{"Running": T0 + 5}, {"Finished": [T0 + 5, T0 + 50]}]}})
    path.write_bytes(encode_trace(trace))


# nothing in flight, and each panel drawn for the timeline's width as laid out now (a resize not yet drawn is work to
# come: its observer redraws at the next frame, which may be after busy reads "0")
_SETTLED = """() => {
  const timeline = document.querySelector('#timeline'), width = timeline ? String(timeline.clientWidth) : '';
  return (document.body.dataset.busy || '0') === '0'
    && [...document.querySelectorAll('#timeline, #objects')].every(panel => !panel.dataset.drawnFor || panel.dataset.drawnFor === width);
}"""


def settled(page: Any) -> None:
    """The page has drawn what it will keep (body[data-busy] "0": no request in flight, no redraw waiting): the elements
    a test reads or clicks next are not about to be replaced (Playwright reads a selector's elements and evaluates on
    them in two steps, and a redraw between the two leaves detached elements, with no computed style)."""
    page.wait_for_function(_SETTLED)


def failures(page: Any) -> list[str]:
    """What goes wrong in ``page`` from now on, as a list a test asserts empty at its end: a script's error, and any
    answer of 400 or more to what the page asked (an endpoint the server does not serve, a request it refuses)."""
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("response", lambda r: errors.append(f"{r.status} {r.request.method} {r.url}") if r.status >= 400 else None)
    return errors


@contextlib.contextmanager
def opened_page(browser: Any, url: str, *, asked: list[str] | None = None) -> Iterator[Any]:
    """A fresh tab (1280×900) at ``url``, the whole history drawn; no script error in it by the end. ``asked``: the
    objects' requests it makes are noted there (the path after ``/api/``)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = failures(page)
    if asked is not None:
        page.on("request", lambda request: asked.append(request.url.split("/api/", 1)[1]) if "/api/objects" in request.url else None)
    page.goto(url)
    page.wait_for_selector("body[data-ready][data-histogram][data-objects]")
    settled(page)
    try:
        yield page
    finally:
        context.close()
    assert errors == []


# The changes drawn in the objects' panel, read from what is drawn: each row's ticks are subpaths of a path a kind of
# mark (``M x y h2 v h h-2 z``, in the order of the instants its data-ts lists), placed where the page shows them.
_DRAWN_TICKS = """(selector) => [...document.querySelectorAll(selector)].flatMap((path) => {
  const ts = path.dataset.ts.split(' ').map(Number), ctm = path.getScreenCTM();
  return [...path.getAttribute('d').matchAll(/M(-?[\\d.]+) (-?[\\d.]+)h2v(-?[\\d.]+)h-2z/g)].map((m, i) => {
    const at = new DOMPoint(Number(m[1]) + 1, Number(m[2]) + Number(m[3]) / 2).matrixTransform(ctm);
    return {object: path.dataset.object, kind: path.getAttribute('class'), ts: ts[i], x: at.x, y: at.y};
  });
})"""


def drawn_ticks(page: Any, object_id: str | None = None, kind: str = "") -> list[dict[str, Any]]:
    """Each change drawn (of ``object_id``'s row, of a ``kind`` of mark such as ``inferred``): its object, its mark's
    classes, its instant and its centre on the page (x, y), the ones in sight and those clipped beyond alike."""
    selector = "#objects path.ticks" + (f".{kind}" if kind else "") + (f"[data-object='{object_id}']" if object_id else "")
    return list(page.evaluate(_DRAWN_TICKS, selector))


def point_at(page: Any, tick: dict[str, Any]) -> dict[str, str]:
    """The pointer put on a drawn tick, as a person aims at it (the page scrolled to it first when out of sight): what the
    page says of it (its words, the change it opens). The tick's y follows the scroll."""
    tick["y"] -= page.evaluate("""(y) => { const before = window.scrollY;
      if (y < 0 || y >= window.innerHeight) window.scrollBy(0, y - window.innerHeight / 2);
      return window.scrollY - before; }""", tick["y"])
    page.mouse.move(tick["x"], tick["y"])
    page.wait_for_selector("#tick-hover[data-id]", state="attached")
    return dict(page.eval_on_selector("#tick-hover", "m => ({id: m.dataset.id, what: m.dataset.what, title: m.textContent, "
                                                    "object: m.dataset.object})"))


def open_tick(page: Any, tick: dict[str, Any]) -> int:
    """A click on a drawn tick; the id of the change it opened, once its version is shown."""
    event_id = int(point_at(page, tick)["id"])
    page.mouse.click(tick["x"], tick["y"])
    page.wait_for_selector(f"body[data-version='{event_id}']", state="attached")
    return event_id
