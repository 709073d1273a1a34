"""metrics: /metrics's families from a sample (pure), the counters and the board, and a scrape during a real run
against the emulator, read with prometheus_client's own parser."""

from __future__ import annotations

import re
import threading
import urllib.request
from typing import Any, Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector, CollectorRegistry
from reliability_support import Notes

from kubectl_sktrace.errors import ForbiddenError, KubeError
from kubectl_sktrace.model import JOB, POD
from kubectl_sktrace.record.health import HealthBoard, HealthServer
from kubectl_sktrace.record.metrics import (
    SIZE_EVERY,
    MetricsBoard,
    MetricsSample,
    WatchCounters,
    families,
    kind_state,
)

SAMPLE = MetricsSample(
    committed=100.0, synced=True, events={("apps/v1.Deployment", "applied"): 7, ("apps/v1.Deployment", "deleted"): 2},
    caught_up={"apps/v1.Deployment": 1}, kinds={"apps/v1.Deployment": "watched", "batch/v1.Job": "forbidden", "example.com/v1.Widget": "not_served",
                                                 "v1.Pod": "outage"},
    gaps_open={"API unreachable": 1, "forbidden": 1}, outages=3, restarts={"v1.Pod": 2}, relists={"v1.Pod": 1}, pods=40, cache_bytes=123456,
    throttled={"v1.ConfigMap": 5}, pruned_events=9, prune_passes=2,
)


def scrape_families(collected: list[Any]) -> dict[str, float]:
    """The samples of ``collected`` as Prometheus reads them: exposition text, then its parser."""
    from prometheus_client import generate_latest

    class Fixed(Collector):
        def collect(self) -> Iterator[Any]:
            yield from collected

    registry = CollectorRegistry()
    registry.register(Fixed())
    return samples(generate_latest(registry).decode())


def samples(text: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
            found[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
    return found


def test_the_families_of_a_sample_as_prometheus_reads_them() -> None:
    assert scrape_families(families(SAMPLE, now=102.5)) == {
        'sktrace_events_recorded_total{kind="apps/v1.Deployment",op="applied"}': 7.0,
        'sktrace_events_recorded_total{kind="apps/v1.Deployment",op="deleted"}': 2.0,
        'sktrace_events_caught_up_total{kind="apps/v1.Deployment"}': 1.0,
        "sktrace_kinds_watched": 1.0, "sktrace_kinds_not_served": 1.0, "sktrace_kinds_forbidden": 1.0,
        'sktrace_kind_state{kind="apps/v1.Deployment",state="watched"}': 1.0,
        'sktrace_kind_state{kind="batch/v1.Job",state="forbidden"}': 1.0,
        'sktrace_kind_state{kind="example.com/v1.Widget",state="not_served"}': 1.0,
        'sktrace_kind_state{kind="v1.Pod",state="outage"}': 1.0,
        'sktrace_coverage_gaps_open{cause="API unreachable"}': 1.0, 'sktrace_coverage_gaps_open{cause="forbidden"}': 1.0,
        "sktrace_outages_total": 3.0,
        'sktrace_watch_restarts_total{kind="v1.Pod"}': 2.0, 'sktrace_relists_total{kind="v1.Pod"}': 1.0,
        'sktrace_throttled_requests_total{kind="v1.ConfigMap"}': 5.0,
        "sktrace_last_commit_age_seconds": 2.5, "sktrace_synced": 1.0, "sktrace_pods_tracked": 40.0, "sktrace_cache_size_bytes": 123456.0,
        "sktrace_retention_pruned_events_total": 9.0, "sktrace_retention_passes_total": 2.0,
    }


def test_metric_names_follow_prometheus_conventions() -> None:
    for family in families(SAMPLE, now=100.0):
        assert family.name.startswith("sktrace_") and re.fullmatch(r"[a-z_]+", family.name), family.name
        if family.type == "counter":
            assert not family.name.endswith("_total")  # the exposition adds it: sktrace_outages -> sktrace_outages_total
        assert not re.search(r"_(second|byte|ms|milliseconds|kb|mb)s?$", family.name) or family.name.endswith(("_seconds", "_bytes"))


@pytest.mark.parametrize(("failed", "outage", "served", "state"), [
    pytest.param(None, False, True, "watched", id="watched"),
    pytest.param(None, True, True, "outage", id="outage"),
    pytest.param(ForbiddenError("forbidden: cannot list jobs.batch", verb="list", resource="jobs.batch"), False, True, "forbidden", id="forbidden"),
    pytest.param(KubeError("gone"), False, True, "failed", id="failed"),
    pytest.param(None, False, False, "not_served", id="not-served"),
])
def test_kind_state(failed: Exception | None, outage: bool, served: bool, state: str) -> None:
    assert kind_state(JOB, served={JOB} if served else set(), failed={JOB: failed} if failed else {}, outages={JOB} if outage else set()) == state


class Resource:
    def __init__(self, gvk: Any) -> None:
        self.gvk = gvk


def test_watch_counters_count_what_opens_after_each_kinds_first() -> None:
    counters = WatchCounters()
    lists, watches = counters.lists(lambda r, **kw: kw), counters.watches(lambda r, **kw: "stream")
    pods, jobs = Resource(POD), Resource(JOB)
    for token in (None, "page-2", "page-3", None):  # one list of three pages, then a relist
        assert lists(pods, continue_token=token) == {"continue_token": token}
    lists(jobs, continue_token=None)
    for _ in range(3):
        assert watches(pods, resource_version="1") == "stream"
    assert counters.again() == ({"v1.Pod": 2}, {"v1.Pod": 1, "batch/v1.Job": 0})


def test_the_board_reads_the_size_every_so_often_and_keeps_the_last() -> None:
    board = MetricsBoard(clock=lambda: 0.0)
    assert board.size_due(1000.0) and not board.size_due(1000.0 + SIZE_EVERY - 1) and board.size_due(1000.0 + SIZE_EVERY)
    board.post(MetricsSample(committed=0.0, cache_bytes=10))
    board.post(MetricsSample(committed=1.0, pods=3))
    assert (board.sample().cache_bytes, board.sample().pods) == (10, 3)


def test_the_health_server_serves_metrics_beside_the_probes() -> None:
    board = MetricsBoard()
    board.post(SAMPLE)
    server = HealthServer(0, HealthBoard(), pages={"/metrics": board.exposition})
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=10) as resp:
            content_type, text = resp.headers["Content-Type"], resp.read().decode()
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz", timeout=10) as resp:
            assert resp.status == 200
    finally:
        server.close()
    assert content_type.startswith("text/plain; version=")
    found = samples(text)
    assert found['sktrace_events_recorded_total{kind="apps/v1.Deployment",op="applied"}'] == 7.0
    assert found["process_resident_memory_bytes"] > 0 and found["process_cpu_seconds_total"] >= 0  # the process collector


# -- a real run -----------------------------------------------------------------------------------------


class PortNotes(Notes):
    """The progress, kept; ``port`` is set once the health server says where it listens."""

    def __init__(self) -> None:
        super().__init__()
        self.port = threading.Event()

    def note(self, message: str) -> None:
        super().note(message)
        if message.startswith("Health, on every interface: "):
            self.port.set()


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_scrape_during_a_real_run(emulator: Any, emulator_kubeconfig: str, tmp_path: Any) -> None:
    """A recorder allowed everything but StatefulSets, scraped while it records a Deployment: its events, the
    forbidden kind (by name, and as an open gap), a fresh commit, the cache's size, the process's figures."""
    from kubectl_sktrace.kube.rbac import BUILTIN_RESOURCES, Subject, needed_kinds, rbac_documents
    from kubectl_sktrace.record.starting import StartOptions, start
    from kubectl_sktrace.tracerconfig import default_config, watched_owner_kinds

    cfg = default_config()
    needed = needed_kinds(tracked=cfg.tracked, owner_kinds=watched_owner_kinds(cfg))
    role, _ = rbac_documents(needed=needed, resources={g: BUILTIN_RESOURCES[g.group, g.kind] for g in needed}, namespace=None,
                             subject=Subject("User", "x"))
    emulator.grant_rules([{**rule, "resources": [r for r in rule["resources"] if r != "statefulsets"]} for rule in role["rules"]])
    emulator.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
                     "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                              "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    notes = PortNotes()
    options = StartOptions(kubeconfig=emulator_kubeconfig, context=None, namespace=None, cache=str(tmp_path / "cache.db"), config_path=None,
                           duration=4.0, quiet=False, health_port=0)
    recorder = threading.Thread(target=start, args=(options,), kwargs={"progress": notes}, daemon=True)
    recorder.start()
    assert notes.port.wait(20)
    port = int(re.search(r"http://127.0.0.1:(\d+)/", next(line for line in notes.lines if line.startswith("Health, on every interface: "))).group(1))  # type: ignore[union-attr]
    found: dict[str, float] = {}
    for _ in range(60):  # until the Deployment is recorded and the sync done
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            found = samples(resp.read().decode())
        if found.get('sktrace_events_recorded_total{kind="apps/v1.Deployment",op="applied"}') and found.get("sktrace_synced"):
            break
        threading.Event().wait(0.1)
    recorder.join(30)
    assert found['sktrace_events_recorded_total{kind="apps/v1.Deployment",op="applied"}'] >= 1
    assert found['sktrace_kind_state{kind="apps/v1.StatefulSet",state="forbidden"}'] == 1
    assert (found["sktrace_kinds_forbidden"], found['sktrace_coverage_gaps_open{cause="forbidden"}']) == (1, 1)
    assert found["sktrace_kinds_watched"] == 5  # Deployments, their ReplicaSets, Jobs, CronJobs, Pods
    assert found["sktrace_last_commit_age_seconds"] < 5 and found["sktrace_cache_size_bytes"] > 0
    assert found['sktrace_relists_total{kind="v1.Pod"}'] == 0 and found["process_resident_memory_bytes"] > 0
