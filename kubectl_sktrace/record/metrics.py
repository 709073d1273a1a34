"""``start --health-port``'s ``/metrics``: what an SRE alerts on, in Prometheus's text format (``prometheus_client``).

The recorder's main loop posts a ``MetricsSample`` at each round, read under the writer's lock as ``/readyz``'s
sample is (``read_sample``); the scrape turns the last sample into metric families (``families``, pure). The
HTTP thread never touches the cache or the recorder's state: it reads the sample and the process's own
figures (``ProcessCollector``: CPU seconds, resident memory, open file descriptors, start time). A dedicated
``CollectorRegistry``, not the global one, so nothing else a process loads adds to it.

The names follow Prometheus's conventions: the ``sktrace_`` prefix, counters end in ``_total``, units in the
name (``_seconds``, ``_bytes``). Counters count since the process started (a restarted pod starts them again,
which ``rate()`` takes in its stride). Kinds are labelled as the config names them (``apps/v1.Deployment``).

- ``sktrace_events_recorded_total{kind,op}``: rows written to the history, ``op`` ``applied`` (new objects and spec
  changes), ``metadata`` or ``data`` (revisions: docs/spec.md "What a change is") or ``deleted``
  (deletions seen live and those a relist inferred at its start); ``sktrace_events_caught_up_total{kind}``: the
  changes found after an outage (applied or deleted), counted in neither.
- ``sktrace_kinds_watched``, ``sktrace_kinds_not_served``, ``sktrace_kinds_forbidden`` (gauges, always present,
  0 when none) and ``sktrace_kind_state{kind,state}`` (1 for each kind's state: watched, not_served, forbidden,
  failed, outage), for an alert that names the kind.
- ``sktrace_coverage_gaps_open{cause}``: open coverage gaps (kinds not watched now, by cause: an outage's, or
  ``forbidden``); ``sktrace_outages_total``: outages opened.
- ``sktrace_watch_restarts_total{kind}``: watches opened again after the first (the server ended one, an error,
  an outage); ``sktrace_relists_total{kind}``: lists after the first (a 410, an outage's end);
  ``sktrace_throttled_requests_total{kind}``: requests the API server throttled (a 429, or a 5xx with Retry-After),
  each retried as the same request (``throttle``).
- ``sktrace_last_commit_age_seconds``: since the last commit (the heartbeat commits every second): a stuck
  recorder's figure grows; ``sktrace_synced``: 1 once the initial sync is done; ``sktrace_pods_tracked``.
- ``sktrace_cache_size_bytes``: the cache on disk, or the database's tables, read every ``SIZE_EVERY`` seconds
  under the writer's lock (a stat, or one catalog query).
- ``sktrace_retention_pruned_events_total``, ``sktrace_retention_passes_total`` with ``--retain``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Container, Iterable, Iterator, Mapping

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from kubectl_sktrace.errors import ForbiddenError
from kubectl_sktrace.model import GVK
from kubectl_sktrace.record.availability import FORBIDDEN, NOT_SERVED
from kubectl_sktrace.record.ingest import Ingest
from kubectl_sktrace.record.retention import Retention

SIZE_EVERY = 30.0
"""Seconds between two readings of the cache's size."""

STATES = ("watched", "not_served", "forbidden", "failed", "outage")


@dataclass(frozen=True)
class MetricsSample:
    """What the main loop posts at each round; ``committed`` is monotonic time, the rest counts and states."""

    committed: float
    synced: bool = False
    events: Mapping[tuple[str, str], int] = field(default_factory=dict)  # (kind, op) -> rows
    caught_up: Mapping[str, int] = field(default_factory=dict)
    kinds: Mapping[str, str] = field(default_factory=dict)  # kind -> one of STATES
    gaps_open: Mapping[str, int] = field(default_factory=dict)  # cause -> kinds
    outages: int = 0
    restarts: Mapping[str, int] = field(default_factory=dict)
    relists: Mapping[str, int] = field(default_factory=dict)
    throttled: Mapping[str, int] = field(default_factory=dict)  # kind -> requests answered 429 (or 5xx with Retry-After)
    pods: int = 0
    cache_bytes: int | None = None
    pruned_events: int = 0
    prune_passes: int = 0


class WatchCounters:
    """Counts the watches and lists each kind opens, by wrapping the callables its watch loop is given."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watches: dict[str, int] = {}
        self._lists: dict[str, int] = {}

    def lists(self, list_page: Callable[..., Any]) -> Callable[..., Any]:
        def counted(resource: Any, **kw: Any) -> Any:
            if kw.get("continue_token") is None:  # a list begins; its next pages continue it
                self._add(self._lists, resource.gvk)
            return list_page(resource, **kw)
        return counted

    def watches(self, watch: Callable[..., Any]) -> Callable[..., Any]:
        def counted(resource: Any, **kw: Any) -> Any:
            self._add(self._watches, resource.gvk)
            return watch(resource, **kw)
        return counted

    def _add(self, counts: dict[str, int], gvk: GVK) -> None:
        with self._lock:
            counts[str(gvk)] = counts.get(str(gvk), 0) + 1

    def again(self) -> tuple[dict[str, int], dict[str, int]]:
        """Watches and lists opened after each kind's first: its restarts and relists."""
        with self._lock:
            return ({k: n - 1 for k, n in self._watches.items()}, {k: n - 1 for k, n in self._lists.items()})


def kind_state(gvk: GVK, *, served: Container[GVK], failed: Mapping[GVK, BaseException], outages: Container[GVK],
               refused: Mapping[GVK, str] | None = None) -> str:
    """``refused``: the kinds the run asks again at a slow cadence, by cause (``forbidden``, ``not served``)."""
    cause = (refused or {}).get(gvk)
    if gvk not in served or cause == NOT_SERVED:
        return "not_served"
    if cause == FORBIDDEN:
        return "forbidden"
    error = failed.get(gvk)
    if error is not None:
        return "forbidden" if isinstance(error, ForbiddenError) else "failed"
    return "outage" if gvk in outages else "watched"


def read_sample(*, ingest: Ingest, committed: float, synced: bool, kinds: Iterable[GVK], served: Container[GVK],
                failed: Mapping[GVK, BaseException], counters: WatchCounters, pruner: Retention | None,
                cache_bytes: int | None, throttled: Mapping[str, int] | None = None) -> MetricsSample:
    """The sample of one round, from the recorder's state; the caller holds the writer's lock."""
    events: dict[tuple[str, str], int] = {}
    for gvk, stats in ingest.stats.items():
        if gvk in ingest.tracked:
            events[str(gvk), "applied"] = stats.applied
            events[str(gvk), "metadata"] = stats.metadata
            events[str(gvk), "data"] = stats.data
            events[str(gvk), "deleted"] = stats.deleted_live + stats.deleted_offline
    gaps: dict[str, int] = {}
    for outage in [*ingest.coverage.outages.values(), *ingest.coverage.refused.values()]:
        gaps[outage.cause] = gaps.get(outage.cause, 0) + 1
    for gvk, error in failed.items():
        if gvk in ingest.coverage.refused:
            continue  # its gap is counted above
        cause = "forbidden" if isinstance(error, ForbiddenError) else "watch failed"
        gaps[cause] = gaps.get(cause, 0) + 1
    restarts, relists = counters.again()
    return MetricsSample(
        committed=committed, synced=synced, events=events,
        caught_up={str(g): s.caught_up for g, s in ingest.stats.items() if g in ingest.tracked},
        kinds={str(g): kind_state(g, served=served, failed=failed, outages=ingest.coverage.outages,
                                  refused={k: o.cause for k, o in ingest.coverage.refused.items()}) for g in kinds},
        gaps_open=gaps, outages=ingest.coverage.outages_opened, restarts=restarts, relists=relists, throttled=dict(throttled or {}),
        pods=len(ingest.pods), cache_bytes=cache_bytes,
        pruned_events=0 if pruner is None else pruner.events_removed, prune_passes=0 if pruner is None else pruner.passes,
    )


def families(sample: MetricsSample, *, now: float) -> list[Metric]:
    """The metric families of ``sample`` at monotonic time ``now``. Pure."""
    recorded = CounterMetricFamily("sktrace_events_recorded", "Events written to the history, by kind and operation.", labels=["kind", "op"])
    for (kind, op), count in sorted(sample.events.items()):
        recorded.add_metric([kind, op], count)
    states = GaugeMetricFamily("sktrace_kind_state", "1 for the state each configured or watched kind is in.", labels=["kind", "state"])
    for kind, state in sorted(sample.kinds.items()):
        states.add_metric([kind, state], 1)
    counted = [sum(1 for s in sample.kinds.values() if s == state) for state in ("watched", "not_served", "forbidden")]
    return [
        recorded,
        _labelled(CounterMetricFamily, "sktrace_events_caught_up", "Changes found after an outage, not seen live.", "kind", sample.caught_up),
        GaugeMetricFamily("sktrace_kinds_watched", "Kinds being watched (an outage's kinds not included).", value=counted[0]),
        GaugeMetricFamily("sktrace_kinds_not_served", "Configured kinds the cluster does not serve.", value=counted[1]),
        GaugeMetricFamily("sktrace_kinds_forbidden", "Kinds the recorder may not list or watch (403).", value=counted[2]),
        states,
        _labelled(GaugeMetricFamily, "sktrace_coverage_gaps_open", "Kinds not watched now, by cause.", "cause", sample.gaps_open),
        CounterMetricFamily("sktrace_outages", "Outages opened (a kind's watch lost, then caught up).", value=sample.outages),
        _labelled(CounterMetricFamily, "sktrace_watch_restarts", "Watches opened again after a kind's first.", "kind", sample.restarts),
        _labelled(CounterMetricFamily, "sktrace_relists", "Lists after a kind's first (a 410, an outage's end).", "kind", sample.relists),
        _labelled(CounterMetricFamily, "sktrace_throttled_requests", "Requests the API server throttled (429), each retried.", "kind",
                  sample.throttled),
        GaugeMetricFamily("sktrace_last_commit_age_seconds", "Seconds since the last commit (the heartbeat commits every second).",
                          value=round(max(0.0, now - sample.committed), 3)),
        GaugeMetricFamily("sktrace_synced", "1 once the initial sync is done.", value=int(sample.synced)),
        GaugeMetricFamily("sktrace_pods_tracked", "Pods whose lifecycles are followed.", value=sample.pods),
        *([GaugeMetricFamily("sktrace_cache_size_bytes", "The cache's size on disk (a database: its tables).", value=sample.cache_bytes)]
          if sample.cache_bytes is not None else []),
        CounterMetricFamily("sktrace_retention_pruned_events", "Events pruned by --retain.", value=sample.pruned_events),
        CounterMetricFamily("sktrace_retention_passes", "Passes of --retain done.", value=sample.prune_passes),
    ]


def _labelled(family: type[CounterMetricFamily] | type[GaugeMetricFamily], name: str, documentation: str, label: str,
              values: Mapping[str, int]) -> Metric:
    metric = family(name, documentation, labels=[label])
    for key, value in sorted(values.items()):
        metric.add_metric([key], value)
    return metric


class MetricsBoard:
    """The last sample, shared between the main loop (``post``) and the HTTP threads (``exposition``)."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._sample = MetricsSample(committed=clock())
        self._size_read = -float("inf")
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_Collector(self))
        ProcessCollector(registry=self.registry)

    def size_due(self, now: float) -> bool:
        """Whether the main loop should read the cache's size this round (every ``SIZE_EVERY`` seconds)."""
        if now - self._size_read < SIZE_EVERY:
            return False
        self._size_read = now
        return True

    def post(self, sample: MetricsSample) -> None:
        with self._lock:
            if sample.cache_bytes is None and self._sample.cache_bytes is not None:
                sample = MetricsSample(**{**sample.__dict__, "cache_bytes": self._sample.cache_bytes})
            self._sample = sample

    def sample(self) -> MetricsSample:
        with self._lock:
            return self._sample

    def exposition(self) -> tuple[bytes, str]:
        """The body and content type of ``/metrics``."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class _Collector:
    def __init__(self, board: MetricsBoard) -> None:
        self.board = board

    def collect(self) -> Iterator[Metric]:
        yield from families(self.board.sample(), now=self.board.clock())
