"""The page in a real browser (Debian's chromium through Playwright), as a person uses it: the whole span with its
stretches named on hover, wheel zoom and drag pan, a window dragged out and downloaded, an object found and its
change opened. One browser and one page for the module; the view is served in this process."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner
from conftest import assert_valid_trace
from viewsupport import T0, drawn_ticks, failures, history_path, open_tick, point_at, served, settled  # noqa: F401  (fixtures)

from kubectl_sktrace.cli import cli
from kubectl_sktrace.view.server import ViewServer

pytestmark = pytest.mark.slow
CHROMIUM = "/usr/bin/chromium"


def launch(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
    if shutil.which(CHROMIUM) is None:
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium; .ci/run does)")
    with sync_api.sync_playwright() as playwright:
        opened = launch(playwright)
        yield opened
        opened.close()


@pytest.fixture(scope="module")
def page(browser: Any, served: ViewServer) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    opened = context.new_page()
    errors = failures(opened)
    opened.goto(served.url)
    opened.wait_for_selector("body[data-ready][data-histogram][data-objects]")
    settled(opened)
    yield opened
    context.close()
    assert errors == []


def whole_history(page: Any) -> None:
    page.click("#zoom-all")
    page.wait_for_function("() => document.querySelector('#range').textContent.includes('2026-11-25T09:57:00Z')")
    settled(page)


def status_json(path: Path) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["status", "--cache", str(path), "-o", "json"], catch_exceptions=False)
    return dict(json.loads(result.stdout))


def test_the_address_lost_its_token_and_a_browser_without_it_is_refused(browser: Any, page: Any, served: ViewServer) -> None:
    assert page.url == f"http://127.0.0.1:{served.port}/"
    assert page.evaluate("document.cookie") == "" and page.context.cookies() == []
    page.reload()  # the tab keeps its token
    page.wait_for_selector("body[data-ready]")
    stranger = browser.new_context()
    other = stranger.new_page()
    other.goto(f"http://127.0.0.1:{served.port}/")
    other.wait_for_function("() => document.querySelector('#error').textContent !== ''")
    assert other.text_content("#error") == "open the address kubectl sktrace view printed (it carries the token)"
    assert other.evaluate("fetch('/api/overview').then(r => r.status)") == 403
    stranger.close()


def test_each_stretch_has_its_colour_and_is_named_on_hover_as_status_lists_it(page: Any, history_path: Path) -> None:
    whole_history(page)
    spans = page.eval_on_selector_all(
        "rect.span", "rs => rs.map(r => [r.dataset.category, r.querySelector('title').textContent, getComputedStyle(r).fill])")
    status = status_json(history_path)
    expected = [("outage" if o["cause"] != "forbidden" else "forbidden", f"{o['cause']} {o['from']}–{o['to'][11:]}") for o in status["outages"]]
    expected += [("offline", f"no recorder ran: {g['from']}–{g['to'][11:]}") for g in status["gaps"]]
    expected += [("not-served", f"not served {n['from']}–{n['to'][11:]}") for n in status["notServed"]]
    expected += [("run", f"run {r['run']}, {r['state']}: {r['started']}–") for r in status["runs"]]
    for category, name in expected:
        assert any(c == category and title.startswith(name) for c, title, _ in spans), (category, name, spans)
    fills = {c: fill for c, _, fill in spans}
    assert set(fills) == {"run", "offline", "outage", "forbidden", "not-served"}
    assert len(set(fills.values())) == len(fills)  # each its own colour
    page.hover("rect.span-outage")  # its name is the hover text (the SVG title)
    assert page.text_content("rect.span-outage title").startswith("API unreachable 2026-11-25T10:20:00Z–10:21:00Z (1m00s)")


def test_the_wheel_zooms_to_seconds_and_a_drag_pans(page: Any) -> None:
    whole_history(page)
    box = page.locator("#timeline").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 60)
    for _ in range(30):
        page.mouse.wheel(0, -100)
    page.wait_for_function("() => /ticks every (\\d+s)\\)/.test(document.querySelector('#range').textContent)")
    settled(page)
    labels = page.eval_on_selector_all(".axis text:not(.context)", "ts => ts.map(t => t.textContent)")
    assert labels and all(len(label) == 8 and label.count(":") == 2 for label in labels)  # HH:MM:SS
    before = page.text_content("#range")
    page.mouse.move(box["x"] + 600, box["y"] + 60)
    page.mouse.down()
    page.mouse.move(box["x"] + 300, box["y"] + 60, steps=5)
    page.mouse.up()
    assert page.text_content("#range") != before
    whole_history(page)
    labels = page.eval_on_selector_all(".axis text:not(.context)", "ts => ts.map(t => t.textContent)")
    assert "11:00" in labels and "12:00" in labels


def drag_window(page: Any, start_fraction: float, end_fraction: float) -> None:
    box = page.locator("#timeline").bounding_box()
    left, width = box["x"] + 90, box["width"] - 102
    page.keyboard.down("Shift")
    page.mouse.move(left + width * start_fraction, box["y"] + 100)
    page.mouse.down()
    page.mouse.move(left + width * end_fraction, box["y"] + 100, steps=6)
    page.mouse.up()
    page.keyboard.up("Shift")


def download(page: Any) -> bytes:
    with page.expect_download() as event:
        page.click("#download")
    return Path(event.value.path()).read_bytes()


def export_bytes(command: str, tmp_path: Path, *, files: dict[str, str] | None = None) -> bytes:
    """What the command writes, run in ``tmp_path`` with ``files`` there (a rule file, the anonymization key's)."""
    args = shlex.split(command)
    env = {}
    if args[0].startswith("SKTRACE_ANONYMIZE_KEY="):  # read from the file the page named: never the key on the command line
        name = shlex.split(args.pop(0).split("=", 1)[1].removeprefix("$(cat ").removesuffix(")"))[0]
        env["SKTRACE_ANONYMIZE_KEY"] = (files or {})[name]
    assert args[:3] == ["kubectl", "sktrace", "export"] and args[-2] == "-O"
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(text)
    out = tmp_path / "cli-export"
    args = [str(tmp_path / a) if files and a in files else a for a in args]
    result = CliRunner(env=env).invoke(cli, [*args[2:-2], "-O", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return out.read_bytes()


def test_a_window_dragged_shows_its_export_command_and_downloads_those_bytes(page: Any, tmp_path: Path) -> None:
    whole_history(page)
    drag_window(page, 0.1, 0.8)
    page.wait_for_selector("#count-report:not([hidden])")
    settled(page)
    page.click("#count-report")
    page.wait_for_selector("#report-summary")
    command = page.text_content("#command")
    assert command.startswith("kubectl sktrace export --cache ") and " -s 2026-11-25T10:" in command and " -t 2026-11-25T12:" in command
    data = download(page)
    assert data == export_bytes(command, tmp_path)
    assert_valid_trace(data, tmp_path)
    assert page.text_content("#report-summary").startswith("The export holds ")
    assert "forbidden" in page.text_content("#window-gaps")
    page.check("input[name=ns-mode][value=include]")
    page.fill("#include-namespaces", "shop")
    page.select_option("#transform", "sanitize")
    page.check("#anonymize")
    page.wait_for_function("() => document.querySelector('#command').textContent.includes('--anonymize')")
    command = page.text_content("#command")
    key = page.input_value("#anonymize-key")
    assert command.startswith('SKTRACE_ANONYMIZE_KEY="$(cat anonymize.key)" kubectl sktrace export ')
    assert "--include-namespaces shop --transform sanitize --anonymize -O " in command and key not in command
    assert download(page) == export_bytes(command, tmp_path, files={"anonymize.key": key})
    page.uncheck("#anonymize")
    page.select_option("#transform", "")
    page.check("input[name=ns-mode][value=default]")


def test_a_rule_chosen_in_the_page_downloads_what_the_command_line_writes_with_it(page: Any, tmp_path: Path) -> None:
    whole_history(page)
    drag_window(page, 0.0, 1.0)
    page.wait_for_selector("#count-report:not([hidden])")
    page.fill("#rules", "deny kind:ConfigMap name:batch-*\nallow namespace:shop")
    page.select_option("#default", "deny")
    page.fill("#selector", "app!=canary")
    page.fill("#filters-text", "rules:\n  - deny: {kind: Job}\n")
    page.wait_for_function("() => document.querySelector('#command').textContent.includes('--default deny')")
    settled(page)
    command = page.text_content("#command")
    assert (" --filters rules.yaml -l 'app!=canary' --deny 'kind:ConfigMap name:batch-*' --allow namespace:shop --default deny -O "
            in command), command
    data = download(page)
    assert data == export_bytes(command, tmp_path, files={"rules.yaml": "rules:\n  - deny: {kind: Job}\n"})
    page.click("#count-decisions")
    page.wait_for_selector("#decisions:not([hidden])")
    rows = page.eval_on_selector_all("#decisions tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))")
    args = [str(tmp_path / a) if a == "rules.yaml" else a for a in shlex.split(command)[2:-2]]
    dry = CliRunner().invoke(cli, [*args, "--dry-run", "--summary", "json"], catch_exceptions=False)
    assert dry.exit_code == 0, dry.output
    expected = [[r["rule"], r["action"], r["from"].replace(str(tmp_path / "rules.yaml"), "rules.yaml"), str(r["objects"])]
                for r in json.loads(dry.stdout)["rules"]]
    assert expected == rows
    assert len(rows) >= 4 and any(r[0] == "kind:Job" and r[3] != "0" for r in rows)


def test_the_page_says_the_rules_decide_the_window_s_figures_and_not_the_timeline_s_counts(page: Any) -> None:
    whole_history(page)
    drag_window(page, 0.0, 1.0)
    page.wait_for_selector("#count-report:not([hidden])")
    page.fill("#selector", "")
    settled(page)
    bars = "g.histogram rect.bar"
    before = page.eval_on_selector_all(bars, "rs => rs.map(r => r.dataset.count)")
    page.fill("#selector", "app=no-such-app")  # keeps nothing: the window's figures say so, the timeline's do not change
    page.wait_for_function("() => document.querySelector('#command').textContent.includes('no-such-app')")
    settled(page)
    scope = page.locator("#filters-scope")
    assert scope.is_visible()
    assert "the window's figures and its command follow them" in scope.text_content()
    assert "The timeline above counts every recorded change, whatever they keep" in " ".join(scope.text_content().split())
    assert page.eval_on_selector_all(bars, "rs => rs.map(r => r.dataset.count)") == before != []
    page.fill("#selector", "")
    settled(page)


def test_an_object_found_by_name_and_its_change_against_the_one_before(page: Any) -> None:
    whole_history(page)
    page.fill("#search", "front")
    page.wait_for_function("() => document.body.dataset.objects === 'front:2'")
    settled(page)
    labels = page.eval_on_selector_all(".row-label", "ts => ts.map(t => t.firstChild.textContent)")
    assert labels[:2] == ["Deployment shop/frontend", "ReplicaSet shop/frontend-abc"]
    assert page.locator(".pod").count() == 2
    inferred = drawn_ticks(page, kind="inferred")
    assert len(inferred) == 1
    assert "reconstructed after a gap" in point_at(page, inferred[0])["title"]  # its words, as the hover text
    open_tick(page, inferred[0])
    assert page.text_content("#version-title") == "apps/v1.Deployment shop/frontend: applied 2026-11-25T10:20:30Z (reconstructed after a gap)"
    assert page.eval_on_selector_all("#diff .add", "ss => ss.map(s => s.textContent)") == ["+  replicas: 4\n"]
    assert page.eval_on_selector_all("#diff .del", "ss => ss.map(s => s.textContent)") == ["-  replicas: 2\n"]
    page.fill("#search", "")


def test_a_trace_file_shows_validate_s_findings_beside_its_objects(browser: Any, tmp_path: Path) -> None:
    import threading

    from viewsupport import trace_with_findings

    from kubectl_sktrace.trace.files.format import read_trace
    from kubectl_sktrace.view.tracefile import TraceIndex, trace_api

    path = tmp_path / "findings.sktrace"
    trace_with_findings(path)
    server = ViewServer(api=trace_api(TraceIndex.of(read_trace(path), name=str(path))))
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        errors = failures(page)
        page.goto(server.url)
        page.wait_for_selector("body[data-ready][data-histogram][data-objects]")
        settled(page)
        findings = page.eval_on_selector_all("#findings li", "ls => ls.map(l => l.textContent)")
        assert findings[0] == "validate: 2 errors, 1 warning"
        assert any(f.startswith("E0005 volume configmap missing: ") and "apps/v1.Deployment/shop/web" in f for f in findings)
        mark = page.locator(".finding-mark")
        assert mark.count() == 1 and mark.get_attribute("data-object") == "apps/v1.Deployment/shop/web"
        assert mark.locator("title").text_content().startswith("W0000 status is present")
        assert page.locator("#export-part").is_hidden() and page.locator("rect.span").count() == 0
        assert errors == []  # nothing asked that a trace's server does not serve
    finally:
        context.close()
        server.stop()
        thread.join(timeout=10)
        server.close()


def test_the_objects_rows_follow_the_page_s_width(page: Any) -> None:
    whole_history(page)
    page.wait_for_load_state("networkidle")  # the rows of the whole history drawn: no request to come before the resize
    page.wait_for_selector("#objects rect.life")

    def rows_right_edge() -> float:
        return float(page.eval_on_selector_all("#objects rect.life", "rs => Math.max(...rs.map(r => r.getBoundingClientRect().right))"))

    narrow = rows_right_edge()
    page.set_viewport_size({"width": 1800, "height": 900})
    try:
        page.wait_for_function(f"() => Math.max(...[...document.querySelectorAll('#objects rect.life')].map(r => r.getBoundingClientRect().right)) > {narrow + 300}")
        settled(page)  # drawn for the width laid out: no redraw to come between reading the rows and measuring them
        assert rows_right_edge() > narrow + 300
    finally:
        page.set_viewport_size({"width": 1280, "height": 900})


def _recording_server() -> tuple[Any, list[dict[str, str]]]:
    """Another local web server, on another port of 127.0.0.1, as any local user may run one: it keeps the headers of
    every request the browser sends it."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[dict[str, str]] = []

    class Recorder(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
            body = b"<!doctype html><title>a neighbour</title><p>hello</p>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Access-Control-Allow-Origin", self.headers.get("Origin") or "*")
            self.send_header("Access-Control-Allow-Credentials", "true")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return ThreadingHTTPServer(("127.0.0.1", 0), Recorder), seen


def test_a_server_on_another_port_gets_nothing_of_the_view_s_credential(page: Any, served: ViewServer) -> None:
    import threading

    neighbour, seen = _recording_server()
    threading.Thread(target=neighbour.serve_forever, daemon=True).start()
    other = f"http://127.0.0.1:{neighbour.server_address[1]}"
    try:
        second = page.context.new_page()  # the same browser profile, on the neighbour's page (same site: ports do not count)
        second.goto(f"{other}/visited")
        second.evaluate(f"fetch('{other}/fetched', {{credentials: 'include'}}).then(r => r.status)")
        stolen = second.evaluate("[document.cookie, JSON.stringify(sessionStorage), JSON.stringify(localStorage)]")
        second.close()
    finally:
        neighbour.shutdown()
        neighbour.server_close()
    assert [r["path"] for r in seen if r["path"] != "/favicon.ico"] == ["/visited", "/fetched"]
    assert not any(served.token in value for request in seen for value in request.values()), seen
    assert not any(served.token in value for value in stolen), stolen


def test_the_browser_view_starts_gets_a_one_time_code_not_the_token(browser: Any, tmp_path: Path) -> None:
    """``view`` as a process, with a "browser" (BROWSER=a script) that notes its command line, which every local user
    can read in /proc; that address opens the page once in a real Chromium, and is worth nothing after."""
    import os
    import subprocess
    import time
    import urllib.parse

    from reliability_support import DATA, EXE, private_env

    noted = tmp_path / "browser-command-line"
    fake_browser = tmp_path / "browser"
    fake_browser.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {noted}\n")
    fake_browser.chmod(0o755)
    proc = subprocess.Popen([EXE, "view", str(DATA / "cronjob.sktrace")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True,
                            env=private_env(tmp_path, {"DISPLAY": ":0", "BROWSER": str(fake_browser)}))
    try:
        assert proc.stdout is not None
        printed = urllib.parse.urlsplit(proc.stdout.readline().split(" at ", 1)[1].strip())
        token = urllib.parse.parse_qs(printed.fragment or printed.query)["token"][0]
        deadline = time.monotonic() + 60
        while not noted.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = noted.read_text().strip()
        assert token not in address and urllib.parse.urlsplit(address).netloc == printed.netloc
        first = browser.new_context()
        try:
            opened = first.new_page()
            errors = failures(opened)
            opened.goto(address)
            opened.wait_for_selector("body[data-ready][data-objects]")
            settled(opened)
            assert opened.url == f"http://{printed.netloc}/"
            assert errors == []
        finally:
            first.close()
        second = browser.new_context()  # whoever read the command line, once the browser used it
        try:
            late = second.new_page()
            late.goto(address)
            late.wait_for_function("() => document.querySelector('#error').textContent !== ''")
            assert late.text_content("#error").startswith("this address was good once and is spent: ")
            assert late.get_attribute("body", "data-ready") is None
        finally:
            second.close()
    finally:
        proc.send_signal(__import__("signal").SIGINT)
        out, err = proc.communicate(timeout=30)
    assert (proc.returncode, err) == (0, "")
    assert not os.path.exists(tmp_path / "state")
