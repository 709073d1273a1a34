"""``view TRACE``: a trace file answers the page as a cache does, with ``validate``'s findings beside their objects."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from viewsupport import T0, trace_with_findings

from kubectl_sktrace.cli import cli
from kubectl_sktrace.trace.files.format import read_trace
from kubectl_sktrace.view.tracefile import TraceIndex


@pytest.fixture
def index(tmp_path: Path) -> TraceIndex:
    path = tmp_path / "t.sktrace"
    trace_with_findings(path)
    return TraceIndex.of(read_trace(path), name=str(path))


def test_the_overview_lists_validate_s_findings(index: TraceIndex) -> None:
    overview = index.overview()
    assert (overview["source"], overview["begin"], overview["end"], overview["spans"]) == ("trace", T0, T0 + 121, [])
    assert overview["kinds"] == [{"gvk": "apps/v1.Deployment", "events": 4}]
    assert sorted((f["code"], f["object"]) for f in overview["findings"]) == [
        ("E0005", "apps/v1.Deployment/shop/web"), ("E0005", "apps/v1.Deployment/shop/web"), ("W0000", "apps/v1.Deployment/shop/web")]


def test_objects_carry_their_findings_ticks_and_pods(index: TraceIndex) -> None:
    page = index.objects_page({"start": str(T0), "end": str(T0 + 200)})
    api, web = page["objects"]
    assert (api["name"], api["deleted"], [t["op"] for t in api["ticks"]], api["findings"]) == ("api", True, [0, 1], [])
    assert [f["code"] for f in web["findings"]] == ["W0000", "E0005", "E0005"]
    assert [(p["start"], p["end"]) for p in web["pods"]] == [(T0 + 5, None), (T0 + 5, T0 + 50)]
    assert index.objects_page({"start": str(T0), "end": str(T0 + 200), "q": "WE"})["total"] == 1


def test_a_version_and_its_diff_and_the_histogram(index: TraceIndex) -> None:
    version = index.version({"id": "2"})
    assert (version["name"], version["at"]) == ("web", "2026-11-25T10:01:00Z")
    assert "-  replicas: 1\n+  replicas: 3\n" in version["diff"]
    histogram = index.histogram({"start": str(T0), "end": str(T0 + 180), "buckets": "3"})
    assert [(b["t"] - T0, b["kinds"]) for b in histogram["buckets"]] == [(0, {"apps/v1.Deployment": 2}), (60, {"apps/v1.Deployment": 1}),
                                                                         (120, {"apps/v1.Deployment": 1})]
    assert index.window({"start": str(T0 + 30), "end": str(T0 + 130)})["kinds"] == [
        {"gvk": "apps/v1.Deployment", "applied": 1, "deleted": 1, "inferred": 0}]


def test_a_trace_and_a_cache_together_are_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["view", "t.sktrace", "--cache", str(tmp_path / "c.db")])
    assert (result.exit_code, result.stderr) == (
        1, "Error: TRACE and --cache/--context/--kubeconfig each name what to view; pass one of them\n")


def test_every_endpoint_the_page_asks_of_a_trace_is_served(index: TraceIndex) -> None:
    """What the page's scripts ask whatever the source is (the export's own endpoints only where the page shows its
    window's export part, which a trace has not) is served for a trace: no 404 in the page's console."""
    import re
    from importlib import resources

    from kubectl_sktrace.view.tracefile import trace_api

    static = resources.files("kubectl_sktrace.view").joinpath("static")
    asked = {m for f in static.iterdir() if f.name.endswith(".js") for m in re.findall(r'api\("(/api/[a-z-]+)"', f.read_text())}
    exports = {"/api/report", "/api/decisions", "/api/code"}  # the window's export part, hidden for a trace
    assert asked - exports and not (asked - exports) - set(trace_api(index)), sorted(asked - exports - set(trace_api(index)))
    assert trace_api(index)["/api/objects-total"]({"gvk": "", "namespace": "", "q": "web"}) == {"total": 1}
