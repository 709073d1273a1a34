"""``kubectl sktrace start``: the cluster, the cache, the config, signals and the health port wired around a ``Session``."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
import time
from dataclasses import dataclass
from typing import Any, Iterator

from kubectl_sktrace.model import CacheUrl, ClusterId
from kubectl_sktrace.record.health import HealthBoard, HealthServer
from kubectl_sktrace.record.metrics import MetricsBoard
from kubectl_sktrace.record.retention import RetentionPolicy
from kubectl_sktrace.record.session import ProgressView, Session
from kubectl_sktrace.record.signals import StopOnSignals
from kubectl_sktrace.record.summary import Summary
from kubectl_sktrace.record.throttle import Throttle, ThrottledCluster
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.store.recording import Identity, Recording


@dataclass(frozen=True)
class StartOptions:
    kubeconfig: str | None
    context: str | None
    namespace: str | None
    cache: str | None
    config_path: str | None
    duration: float | None
    quiet: bool
    health_port: int | None = None
    retention: RetentionPolicy | None = None  # --retain
    drop_kinds: bool = False  # --drop-kinds: a --config may stop tracking kinds the last run tracked


def start(options: StartOptions, *, progress: ProgressView) -> Summary:
    """``kubectl sktrace start``: resolve the cluster, open and lock the cache, record until stopped."""
    from kubectl_sktrace.kube import kubeconfig
    from kubectl_sktrace.kube.client import Kube
    from kubectl_sktrace.record import watching
    from kubectl_sktrace.store import open_cache
    from kubectl_sktrace.tracerconfig import choose_config, load_config

    given = load_config(options.config_path) if options.config_path else None
    target = kubeconfig.resolve_target(kubeconfig=options.kubeconfig, context=options.context)
    cache_path = kubeconfig.resolve_cache_path(cache=options.cache, kubeconfig=options.kubeconfig, context=options.context)
    namespace = options.namespace or None
    stop = threading.Event()
    throttle = Throttle(clock=time.time, stop=stop)  # a 429 is retried where it failed (client-go's way), told once per kind
    board, metrics = (None, None) if options.health_port is None else (HealthBoard(), MetricsBoard())
    health = None if board is None or metrics is None or options.health_port is None else HealthServer(
        options.health_port, board, pages={"/metrics": metrics.exposition})
    if health is not None:
        progress.note(f"Health, on every interface: http://127.0.0.1:{health.port}/healthz (committing), /readyz (synced and watching "
                      "every kind), /metrics.")

    def record(cache: Cache, kube: Any, server: str, cluster_uid: str) -> Summary:
        identity = Identity(server=server, cluster_uid=cluster_uid or "", context=target.context, namespace=namespace or "")
        recording = Recording(cache)
        recording.check_identity(identity)  # another cluster's cache is refused before its config is read (and again in the run)
        last = recording.previous_run()
        config, said = choose_config(given=given, given_path=options.config_path, stored=recording.previous_config(),
                                     run_id=None if last is None else last.id, drop_kinds=options.drop_kinds)
        if said is not None:
            progress.note(said)
        session = Session(
            kube=kube, recording=recording, config=config, identity=identity, namespace=namespace,
            duration=options.duration, stop=stop, progress=progress, run_watch=watching.run_watch,
            context_namespace=target.namespace, health=board, retention=options.retention, metrics=metrics, throttle=throttle,
        )
        return session.run()

    with StopOnSignals(stop), _closing(health):
        # leaving the cache's context turns sqlite errors met while recording (damage deep in the file, a full
        # disk) into one-line CacheErrors
        if isinstance(cache_path, CacheUrl):
            # a database finds its history by the cluster's identity: read from the cluster before the history
            kube = ThrottledCluster(Kube.connect(target), throttle)
            try:
                server, cluster_uid = kube.cluster_identity()
                with open_cache(cache_path, create=True, cluster=ClusterId(cluster_uid, server, namespace or "")) as cache, cache.writer_lock():
                    return record(cache, kube, server, cluster_uid)
            finally:
                kube.close()
        with _removed_unless_recorded(cache_path), open_cache(cache_path, create=True) as cache, cache.writer_lock():
            kube = ThrottledCluster(Kube.connect(target), throttle)
            try:
                server, cluster_uid = kube.cluster_identity()
                return record(cache, kube, server, cluster_uid)
            finally:
                kube.close()


@contextlib.contextmanager
def _removed_unless_recorded(cache_path: str | Path) -> Iterator[None]:
    """A first start that fails before recording leaves no cache behind: the file it made holds no run, and would
    read later as a cache where nothing was recorded yet, as if a recorder had run."""
    from kubectl_sktrace.store import remove_unused

    created = not os.path.exists(os.path.expanduser(cache_path))  # False for a name no file can have, too
    try:
        yield
    except BaseException:
        if created:
            remove_unused(cache_path)
        raise


@contextlib.contextmanager
def _closing(server: HealthServer | None) -> Iterator[None]:
    try:
        yield
    finally:
        if server is not None:
            server.close()
