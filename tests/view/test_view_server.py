"""The view's server as a browser and a hostile page meet it: the token header, one-time codes, the Host header, GET
only, the cache never written; and its answers against what ``status`` and ``export`` say of the same history."""

from __future__ import annotations

import http.client
import json
import shlex
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner
from viewsupport import T0, build_history, history_path, served, serving  # noqa: F401  (fixtures)

from kubectl_sktrace.cli import cli
from kubectl_sktrace.store import open_cache_readonly
from kubectl_sktrace.view import api
from kubectl_sktrace.view.app import rate_index
from kubectl_sktrace.view.rates import bucket_rows
from kubectl_sktrace.view.server import TOKEN_HEADER, ViewServer, host_allowed


def request(server: ViewServer, path: str, *, method: str = "GET", host: str | None = None, token: str | None = "",
            ) -> tuple[int, dict[str, str], bytes]:
    """``path`` asked with the server's token in its header (``token``: another one; None: none)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    headers = {"Host": host or f"127.0.0.1:{server.port}"}
    if token is not None:
        headers[TOKEN_HEADER] = token or server.token
    conn.request(method, path, headers=headers)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, body


def answer(server: ViewServer, path: str) -> Any:
    status, _, body = request(server, path)
    assert status == 200, body
    return json.loads(body)


def test_the_printed_address_carries_the_token_in_its_fragment_and_the_page_sets_no_cookie(served: ViewServer) -> None:
    assert served.url == f"http://127.0.0.1:{served.port}/#token={served.token}"
    assert len(served.token) >= 43  # 256 bits
    status, headers, body = request(served, "/", token=None)  # the page's files hold no data: the page asks with the token
    assert status == 200 and b"<svg id=\"timeline\"" in body and "set-cookie" not in headers
    assert "script-src 'self'" in headers["content-security-policy"] and "access-control-allow-origin" not in headers
    assert request(served, "/api/overview")[0] == 200


@pytest.mark.parametrize("path", ["/api/overview", "/api/session", "/api/code", "/api/export?start=1&end=2", "/api/nothing"])
def test_an_api_request_without_the_token_is_refused(served: ViewServer, path: str) -> None:
    status, _, body = request(served, path, token=None)
    assert (status, body) == (403, b"refused: open the address kubectl sktrace view printed (it carries the token)\n")


@pytest.mark.parametrize("token", ["guess", "x", "\u00e9t\u00e9"], ids=["guess", "short", "latin-1"])
def test_a_wrong_token_is_refused(served: ViewServer, token: str) -> None:
    assert request(served, "/api/overview", token=token)[0] == 403
    assert request(served, "/api/overview", token=served.token[:-1] + "x")[0] == 403
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)  # a cookie is no credential
    conn.request("GET", "/api/overview", headers={"Host": "localhost", "Cookie": f"sktrace-view-{served.port}={served.token}"})
    assert conn.getresponse().status == 403
    conn.close()


def test_a_one_time_code_authorizes_one_request_within_its_time() -> None:
    server = ViewServer(api={"/api/answer": lambda params: dict(params)})
    with serving(server):
        code = server.browser_url().rsplit("#code=", 1)[1]
        status, _, body = request(server, f"/api/session?code={code}", token=None)
        assert (status, json.loads(body)) == (200, {"token": server.token})
        assert request(server, f"/api/session?code={code}", token=None)[0] == 403  # spent
        _, _, body = request(server, "/api/code")
        code = json.loads(body)["code"]
        status, _, body = request(server, f"/api/answer?code={code}&x=1", token=None)
        assert (status, json.loads(body)) == (200, {"x": "1"})  # the code is no parameter of the answer
        assert request(server, f"/api/answer?code={code}", token=None)[0] == 403
        code = server.new_code()
        server._codes[code] = 0.0  # as if CODE_SECONDS had passed
        assert request(server, f"/api/session?code={code}", token=None)[0] == 403


@pytest.mark.slow  # waits for a deadline
def test_a_request_trickled_a_byte_at_a_time_is_closed_at_its_deadline_and_others_are_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client sending its headers a byte a second would hold a connection's slot for good (each byte comes well
    inside ``IDLE_SECONDS``): it is closed ``REQUEST_HEAD_SECONDS`` after its first byte (made 2 s here), while a request
    whose parts come a little apart, inside that time, is answered."""
    import socket
    import time

    from kubectl_sktrace.view import server as view_server

    assert 5 <= getattr(view_server, "REQUEST_HEAD_SECONDS", 30) <= 20  # a browser's headers, with room; far less than held for good
    monkeypatch.setattr(view_server, "REQUEST_HEAD_SECONDS", 2, raising=False)
    server = ViewServer(api={"/api/answer": lambda params: dict(params)})
    with serving(server):
        trickle = socket.create_connection(("127.0.0.1", server.port), timeout=1)
        head = f"GET /api/answer HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nX-Padding: {'x' * 30}\r\n".encode()
        started, closed_after = time.monotonic(), None
        try:
            for byte in head:
                try:
                    trickle.sendall(bytes([byte]))
                    if trickle.recv(1) == b"":
                        closed_after = time.monotonic() - started
                        break
                except TimeoutError:
                    pass  # still open: a second went by
                except ConnectionError:
                    closed_after = time.monotonic() - started
                    break
                if time.monotonic() - started > 6:
                    break
        finally:
            trickle.close()
        assert closed_after is not None and 1.5 < closed_after < 4, closed_after
        slow = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        try:
            for part in (b"GET /api/answer?x=1 HTTP/1.1\r\n", f"Host: 127.0.0.1:{server.port}\r\n".encode(),
                         f"{TOKEN_HEADER}: {server.token}\r\nConnection: close\r\n\r\n".encode()):
                slow.sendall(part)
                time.sleep(0.4)
            assert slow.makefile("rb").readline().startswith(b"HTTP/1.1 200 ")
        finally:
            slow.close()
        assert request(server, "/api/answer")[0] == 200


@pytest.mark.parametrize("host, allowed", [
    ("127.0.0.1:8750", True), ("localhost:9000", True), ("LOCALHOST", True), ("[::1]:8750", True), ("10.1.2.3", True),
    ("attacker.example:8750", False), ("127.0.0.1.nip.io", False), ("localhost.attacker.example", False), ("", False), (None, False),
], ids=str)
def test_the_host_header_must_name_an_address_or_localhost(host: str | None, allowed: bool) -> None:
    assert host_allowed(host) is allowed


def test_a_rebound_name_is_refused_even_with_the_cookie(served: ViewServer) -> None:
    status, _, body = request(served, "/api/overview", host=f"rebind.attacker.example:{served.port}")
    assert (status, body) == (421, b"refused: the Host header must be localhost or an IP address\n")


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_nothing_but_get_is_served(served: ViewServer, method: str) -> None:
    status, headers, _ = request(served, "/api/overview", method=method)
    assert status == 405 and headers["allow"] == "GET, HEAD"


def test_serving_never_writes_the_cache(history_path: Path, served: ViewServer) -> None:
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in history_path.parent.iterdir()}
    answer(served, "/api/overview")
    answer(served, f"/api/histogram?start={T0}&end={T0 + 9000}&buckets=100")
    answer(served, f"/api/objects?start={T0}&end={T0 + 9000}")
    request(served, f"/api/export?start={T0}&end={T0 + 9000}")
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in history_path.parent.iterdir()}
    assert after == before


def _status(path: Path) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["status", "--cache", str(path), "-o", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


def test_the_spans_name_what_status_lists(served: ViewServer, history_path: Path) -> None:
    spans = answer(served, "/api/overview")["spans"]
    status = _status(history_path)
    named = [(s["category"], s["name"]) for s in spans if s["category"] != "run"]
    expected = [("forbidden", "forbidden 2026-11-25T10:10:00Z–10:15:00Z (5m00s): batch/v1.Job"),
                ("outage", "API unreachable 2026-11-25T10:20:00Z–10:21:00Z (1m00s): apps/v1.Deployment, v1.ConfigMap"),
                ("offline", "no recorder ran: 2026-11-25T11:00:00Z–12:00:00Z (1h00m00s)"),
                ("not-served", "not served 2026-11-25T12:01:40Z–12:03:20Z (1m40s): batch/v1.Job")]
    assert named == expected
    assert [(o["cause"], o["from"], o["to"]) for o in status["outages"]] == [
        ("forbidden", "2026-11-25T10:10:00Z", "2026-11-25T10:15:00Z"), ("API unreachable", "2026-11-25T10:20:00Z", "2026-11-25T10:21:00Z")]
    assert [(g["from"], g["to"]) for g in status["gaps"]] == [("2026-11-25T11:00:00Z", "2026-11-25T12:00:00Z")]
    assert [(n["kind"], n["from"], n["to"]) for n in status["notServed"]] == [("batch/v1.Job", "2026-11-25T12:01:40Z", "2026-11-25T12:03:20Z")]
    runs = [s["name"] for s in spans if s["category"] == "run"]
    assert runs == ["run 1, interrupted: 2026-11-25T10:00:00Z–11:00:00Z (1h00m00s)", "run 2, clean: 2026-11-25T12:00:00Z–12:30:00Z (30m00s)"]
    assert [r["state"] for r in status["runs"]] == ["interrupted", "clean"]


def test_the_histogram_counts_every_event_once(served: ViewServer, history_path: Path) -> None:
    histogram = answer(served, f"/api/histogram?start={T0 - 100}&end={T0 + 9100}&buckets=37")
    assert histogram["width"] == 300 and histogram["complete"] is True
    assert sum(sum(b["kinds"].values()) for b in histogram["buckets"]) == _status(history_path)["events"]["count"] == 14
    assert sum(b["inferred"] for b in histogram["buckets"]) == 2


@pytest.mark.parametrize("version", [8, None], ids=["schema-8-counted-in-memory", "kept-by-the-cache"])
def test_counted_minutes_answer_as_the_database_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int | None) -> None:
    """The rates of a cache older than 0010 (counted once per server, in memory) and of a cache that keeps them
    (``event_rates``) give every bucket and window as the database counts it from ``events``."""
    from kubectl_sktrace.store import schema

    path = tmp_path / "rates.db"
    with monkeypatch.context() as patch:
        if version is not None:
            patch.setattr("kubectl_sktrace.store.connection.MIGRATIONS", schema.MIGRATIONS[:version])
            patch.setattr("kubectl_sktrace.store.connection.SCHEMA_VERSION", version)
        build_history(path)
    index = rate_index(str(path))
    assert (index is None) == (version is None)
    if index is not None:
        index.fill()
        assert index.error is None and index.progress == 1
    with open_cache_readonly(path) as cache:
        for start, end, width in [(T0 - 600, T0 + 9000, 600), (T0, T0 + 3600, 60), (T0 + 1200, T0 + 1260, 60), (T0 - 86400, T0 + 86400, 3600)]:
            direct = api.viewing.per_bucket(api.viewing.minute_counts(cache, start=start, end=end, width=width))
            counted = api.viewing.per_bucket(bucket_rows(index, cache, start=start, end=end, width=width)[0])
            assert counted == direct, (start, end, width)
        window = api.window(cache, {"start": str(T0 + 7), "end": str(T0 + 1231)}, command_base=(), index=index)
    assert window["kinds"] == [{"gvk": "apps/v1.Deployment", "applied": 4, "deleted": 0, "inferred": 1},
                               {"gvk": "apps/v1.ReplicaSet", "applied": 1, "deleted": 0, "inferred": 0}]


def _export(path: Path, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> bytes:
    out = tmp_path / "cli.sktrace"
    result = CliRunner(env=env).invoke(cli, ["export", *args, "-O", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return out.read_bytes()


@pytest.mark.parametrize("query", [
    "", "&all_namespaces=1", "&include_namespaces=shop&transform=sanitize",
    "&exclude_labels=app%3Dweb&anonymize=1&anonymize_key=00112233445566778899aabbccddeeff", "&format=yaml",
], ids=["default", "all-namespaces", "include-and-transform", "labels-and-anonymize", "yaml"])
def test_the_download_is_what_the_shown_command_writes(served: ViewServer, history_path: Path, tmp_path: Path, query: str) -> None:
    window = f"start={T0 + 900}&end={T0 + 7800}{query}"
    shown = answer(served, f"/api/window?{window}")
    command = shlex.split(shown["command"])
    env = {}
    if "anonymize=1" in query:  # the key is read from the file the page names, never put in the command
        assert command.pop(0) == "SKTRACE_ANONYMIZE_KEY=$(cat anonymize.key)" and "00112233445566778899aabbccddeeff" not in shown["command"]
        env["SKTRACE_ANONYMIZE_KEY"] = "00112233445566778899aabbccddeeff"
    assert command[:5] == ["kubectl", "sktrace", "export", "--cache", str(history_path)]
    assert command[5:9] == ["-s", "2026-11-25T10:15:00Z", "-t", "2026-11-25T12:10:00Z"]
    assert command[-2:] == ["-O", shown["fileName"]]
    status, headers, body = request(served, f"/api/export?{window}")
    assert status == 200, body
    assert headers["content-disposition"].startswith(f"attachment; filename=\"{shown['fileName']}\"")
    assert body == _export(history_path, tmp_path, *command[3:-2], env=env)


def test_the_report_is_export_s_own(served: ViewServer) -> None:
    report = answer(served, f"/api/report?start={T0 + 900}&end={T0 + 7800}")
    assert (report["events"], report["applied"], report["deleted"], report["indexObjects"], report["lifecycles"]) == (11, 9, 1, 9, 3)
    assert report["objectsPerKind"] == {"apps/v1.Deployment": 2, "batch/v1.Job": 1, "v1.ConfigMap": 6}
    assert report["warnings"][0].startswith("coverage: ")


@pytest.mark.parametrize("query, message", [
    ("start=5&end=5", "the window is empty; drag across the axis to pick one"),
    ("start=x&end=5", "start='x' is not a number (decimal digits, at most ±2^53)"),
    ("start=1&end=5&transform=/etc/passwd", "--transform '/etc/passwd': the page offers the built-in transforms (sanitize)"),
    ("start=1&end=5&all_namespaces=1&include_namespaces=a", "-A/--all-namespaces and --include-namespaces contradict each other; pass one of them"),
    ("start=1&end=5&anonymize=1&anonymize_key=12", "the anonymization key (--anonymize-key or $SKTRACE_ANONYMIZE_KEY) must be at least 32 hex "
                                                    "digits, as a run of --anonymize printed it; got 2 hex digits"),
    ("start=1&end=5&rules=keep%20namespace:a", "'keep namespace:a': a rule line is 'allow RULE' or 'deny RULE', as --allow and --deny take it"),
    ("start=1&end=5&rules=deny%20color:red", "--deny 'color:red': cannot read 'color:red'; a rule is FIELD:VALUE terms separated by spaces, "
                                              "FIELD one of namespace, name, kind, labels (e.g. 'namespace:shop kind:Deployment labels:tier=canary')"),
    ("start=1&end=5&default=maybe", "--default 'maybe': use allow or deny"),
    ("start=1&end=5&filters_text=rules:%20[&filters_name=r.yaml", None),
    ("start=1&end=5&filters_text=a:%201&filters_name=r%3B%20rm%20-rf", "'r; rm -rf' is not a file name the page puts in a command "
                                                                       "(letters, digits, '._/~-' and spaces)"),
])
def test_bad_choices_get_export_s_one_line(served: ViewServer, query: str, message: str | None) -> None:
    status, _, body = request(served, f"/api/window?{query}")
    if message is None:  # a rule file that is no YAML: where, and what a rule file is
        error = json.loads(body)["error"]
        assert status == 400 and error.startswith("--filters r.yaml: not YAML (") and "\n" not in error
        return
    assert (status, json.loads(body)) == (400, {"error": message})


@pytest.mark.parametrize("path", ["/api/objects?start=1&end=5&q=", "/api/objects-total?q="])
def test_a_name_search_longer_than_any_namespace_and_name_is_one_line(served: ViewServer, path: str) -> None:
    """A pasted megabyte is refused before the database sees it (sqlite calls such a pattern too complex)."""
    status, _, body = request(served, path + "a" * 60_000)
    assert (status, json.loads(body)) == (400, {"error": "q is 60000 characters long; no namespace/name is longer than 317"})
    assert request(served, path + "a" * 317)[0] == 200


def test_objects_are_grouped_under_owners_with_their_ticks_and_pods(served: ViewServer) -> None:
    page = answer(served, f"/api/objects?namespace=shop&q=FRONT&start={T0}&end={T0 + 9000}")
    assert page["total"] == 2
    deployment, replicaset = page["objects"]
    assert (deployment["id"], deployment["deleted"], deployment["owner"]) == ("apps/v1.Deployment/shop/frontend", False, None)
    assert [(t["ts"] - T0, t["op"], t["inferred"]) for t in deployment["ticks"]] == [(10, 0, False), (1000, 0, False), (1230, 0, True)]
    assert [(p["name"], p["end"]) for p in deployment["pods"]] == [("frontend-abc-1", None), ("frontend-abc-2", T0 + 1000)]
    assert replicaset["owner"] == "apps/v1.Deployment/shop/frontend"
    cart = answer(served, f"/api/objects?gvk=apps/v1.Deployment&q=cart&start={T0}&end={T0 + 9000}")["objects"][0]
    assert (cart["deleted"], cart["last"], [t["op"] for t in cart["ticks"]]) == (True, T0 + 7200, [0, 1])


def test_a_full_page_comes_without_its_total_which_the_page_asks_beside_it(served: ViewServer) -> None:
    every = answer(served, f"/api/objects?start={T0}&end={T0 + 9000}&limit=200")
    assert every["total"] == len(every["objects"]) >= 5
    short = answer(served, f"/api/objects?start={T0}&end={T0 + 9000}&limit=200&total=0")  # the walk ended: its total known
    assert short["total"] == every["total"]
    for offset in (0, 2):
        full = answer(served, f"/api/objects?start={T0}&end={T0 + 9000}&limit=2&offset={offset}&total=0")
        assert full["total"] is None and [o["id"] for o in full["objects"]] == [o["id"] for o in every["objects"][offset:offset + 2]]
    assert answer(served, "/api/objects-total") == {"total": every["total"]}
    found = answer(served, f"/api/objects?q=FRONT&start={T0}&end={T0 + 9000}")["total"]
    assert answer(served, "/api/objects-total?q=FRONT") == {"total": found} and found >= 2


@pytest.mark.parametrize(("width", "stands_for"), [(2, [3]), (4, [1, 2]), (4000, [1, 1, 1])],
                         ids=["one column", "two columns", "wider than its changes"])
def test_a_row_s_changes_come_one_per_column_of_the_page_s_width_each_saying_how_many_it_stands_for(
        served: ViewServer, width: int, stands_for: list[int]) -> None:
    frontend = answer(served, f"/api/objects?q=frontend&gvk=apps/v1.Deployment&start={T0}&end={T0 + 2000}&width={width}")["objects"][0]
    # its changes at +10 s, +1000 s and +1230 s: in two columns of 1000 s, one in the first, two in the second
    assert [t["n"] for t in frontend["ticks"]] == stands_for and frontend["ticksTotal"] == 3


def test_a_version_and_its_diff(served: ViewServer) -> None:
    frontend = answer(served, f"/api/objects?q=frontend&gvk=apps/v1.Deployment&start={T0}&end={T0 + 9000}")["objects"][0]
    version = answer(served, f"/api/version?id={frontend['ticks'][2]['id']}")
    assert (version["op"], version["inferred"], version["at"]) == ("applied", True, "2026-11-25T10:20:30Z")
    assert "-  replicas: 2\n+  replicas: 4\n" in version["diff"]
    assert version["diff"].startswith("--- Deployment/frontend at 2026-11-25T10:16:40Z\n+++ Deployment/frontend at 2026-11-25T10:20:30Z\n")
    assert "image: shop/frontend:1.1" in version["yaml"]
    status, _, body = request(served, "/api/version?id=999999")
    assert (status, json.loads(body)) == (400, {"error": "no recorded change has the id 999999"})


@pytest.fixture
def empty_cache(tmp_path: Path) -> Iterator[Path]:
    from kubectl_sktrace.store import open_cache

    path = tmp_path / "empty.db"
    open_cache(path, create=True).close()
    yield path


def test_an_empty_cache_has_an_overview_without_a_span(empty_cache: Path) -> None:
    with open_cache_readonly(empty_cache) as cache:
        overview = api.overview(cache, title="t", command_base=())
    assert (overview["begin"], overview["end"], overview["spans"], overview["kinds"]) == (None, None, [], [])


@pytest.mark.parametrize("make, as_trace, problem", [
    (lambda p: None, False, "no cache at"),
    (lambda p: p.touch(), False, "is an empty file, not a recording"),
    (lambda p: p.mkdir(), False, "is a directory; pass a file path with --cache"),
    (lambda p: p.write_text("hello"), False, "is not a kubectl-sktrace cache (not an sqlite file)"),
    (lambda p: None, True, "no such file"),
    (lambda p: p.write_text("hello"), True, "not a SimKube trace"),
], ids=["absent", "empty", "directory", "text", "trace-absent", "trace-text"])
def test_view_refuses_a_bad_path_in_one_line_before_serving(tmp_path: Path, make: Any, as_trace: bool, problem: str) -> None:
    path = tmp_path / "work" / "thing"
    path.parent.mkdir()
    make(path)
    before = sorted(p.name for p in path.parent.iterdir())
    args = ["view", "--no-browser", str(path)] if as_trace else ["view", "--no-browser", "--cache", str(path)]
    result = CliRunner().invoke(cli, args)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1 and problem in result.stderr, result.stderr
    assert sorted(p.name for p in path.parent.iterdir()) == before


@pytest.mark.parametrize("version", [4, 5, 8], ids=["schema-4", "schema-5", "schema-8"])
def test_an_older_cache_is_viewed_as_it_is(tmp_path: Path, history_path: Path, monkeypatch: pytest.MonkeyPatch, version: int) -> None:
    """A cache recorded before ``event_objects`` kept each object's last row (0006), or before it existed (0005), is read
    as it is, never migrated, with the same answers."""
    from kubectl_sktrace.store import schema

    path = tmp_path / "old.db"
    with monkeypatch.context() as patch:
        patch.setattr("kubectl_sktrace.store.connection.MIGRATIONS", schema.MIGRATIONS[:version])
        patch.setattr("kubectl_sktrace.store.connection.SCHEMA_VERSION", version)
        build_history(path)
    before = path.read_bytes()

    def answers(location: Path) -> list[Any]:
        with open_cache_readonly(location) as cache:
            overview = api.overview(cache, title="t", command_base=())
            return [{k: v for k, v in overview.items() if k != "cache"},
                    api.histogram(cache, {"start": str(T0), "end": str(T0 + 9000), "buckets": "30"}),
                    api.objects(cache, {"start": str(T0), "end": str(T0 + 9000)}),
                    api.objects(cache, {"start": str(T0), "end": str(T0 + 9000), "q": "front"}),
                    api.version(cache, {"id": "6"})]

    assert answers(path) == answers(history_path)
    assert path.read_bytes() == before


def test_a_run_recording_now_is_said_so_and_the_page_reads_it_again(tmp_path: Path) -> None:
    from kubectl_sktrace.store import open_cache

    path = tmp_path / "live.db"
    build_history(path)
    with open_cache(path, create=False) as writer, writer.writer_lock():
        with writer.transaction() as conn:
            conn.execute("UPDATE runs SET clean = 0 WHERE id = 2")  # as a recorder's run is until it stops
        with open_cache_readonly(path) as cache:
            overview = api.overview(cache, title="t", command_base=())
    assert overview["recording"] is True
    assert [s["state"] for s in overview["spans"] if s["category"] == "run"] == ["interrupted", "running"]
    with open_cache_readonly(path) as cache:
        overview = api.overview(cache, title="t", command_base=())
    assert overview["recording"] is False
    assert [s["state"] for s in overview["spans"] if s["category"] == "run"] == ["interrupted", "crashed"]
