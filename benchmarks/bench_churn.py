"""Memory over weeks: a recorder following a cluster where pods never stop coming and going.

    .venv/bin/python benchmarks/bench_churn.py                    # 1,000,000 pods under 2,000 Deployments and 1,000 Jobs
    .venv/bin/python benchmarks/bench_churn.py --pods 100000      # a shorter run

The emulator (TLS, in this process) holds ``--deployments`` Deployments with their ReplicaSets and 10 running
pods each, and ``--jobs`` Jobs. ``kubectl sktrace start`` (this tree, its own process, the default config)
records it. Once it has synced, pods with names never used before are created Running under the
ReplicaSets and Jobs in turn, ``--batch`` at a time, and the oldest retired once ``--live`` of them run: a
ReplicaSet's pod is deleted, a Job's pod succeeds and is then deleted, so every pod gets a start and an end in
the cache. The next batch waits until the recorder has committed all but the last one (its ``watch_state`` for
pods), so the recorder runs as fast as it can without a backlog that is the emulator's, not its own.

Printed: every ``--pods``/``--samples`` pods, the pods created so far, the recorder's RSS and peak RSS
(``VmHWM``), its CPU per watch event over the interval, the pods it follows in memory (``sktrace_pods_tracked``
of its ``/metrics``) beside the pods alive in the cluster, and the cache's pod rows. The reference is the same
recorder after warm-up (the first ``--warmup`` pods): its peak RSS must grow by less than 10% by the end, and
the pods it follows must stay the pods alive (no state kept for finished pods).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from sktrace_emulator import Emulator
from sktrace_emulator.bulk import PodChurn, build_large_state, create_jobs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_recorder import cpu_seconds, peak_rss_mb, query, rss_mb, stop_recorder, wait_synced  # noqa: E402

PY = sys.executable


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tracked(port: int) -> int:
    """``sktrace_pods_tracked`` from the recorder's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith("sktrace_pods_tracked "):
                return int(float(line.split()[1]))
    return -1


def _committed_rv(cache: str) -> int:
    rows = query(cache, "SELECT resource_version FROM watch_state WHERE gvk = 'v1.Pod'")
    return int(str(rows[0][0])) if rows else 0


def _wait_committed(cache: str, rv: int, proc: subprocess.Popen[bytes], timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while _committed_rv(cache) < rv:
        if proc.poll() is not None:
            raise SystemExit(f"recorder exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        if time.monotonic() > deadline:
            raise SystemExit(f"recorder did not commit resourceVersion {rv} within {timeout:.0f}s")
        time.sleep(0.02)


def _pod_rows(cache: str) -> int:
    rows = query(cache, "SELECT count(*) FROM pods")
    return int(str(rows[0][0])) if rows else -1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pods", type=int, default=1_000_000, help="pods created (and retired) in all")
    parser.add_argument("--deployments", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--live", type=int, default=10_000, help="churned pods alive at once")
    parser.add_argument("--batch", type=int, default=2000, help="pods created per step")
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=0, help="pods created before the reference sample (default: a tenth)")
    args = parser.parse_args()
    warmup = args.warmup or args.pods // 10
    workdir = Path(tempfile.mkdtemp(prefix="bench-churn-"))
    emu = Emulator(history_limit=500_000).start()
    proc: subprocess.Popen[bytes] | None = None
    try:
        kubeconfig, cache, port = str(workdir / "kubeconfig"), str(workdir / "cache.db"), _free_port()
        emu.write_kubeconfig(kubeconfig)
        standing = build_large_state(emu, deployments=args.deployments, pods_per_deployment=10)
        jobs = create_jobs(emu, jobs=args.jobs)
        replicasets = [stored.obj() for stored in emu.store.objects[emu.store.type_of("apps/v1", "ReplicaSet")].values()]
        churn = PodChurn(emu, owners=replicasets + jobs, live=args.live)
        print(f"{args.deployments:,} Deployments with {standing:,} standing pods, {args.jobs:,} Jobs; {args.pods:,} pods to come and go, "
              f"{args.live:,} alive at once, {args.batch:,} per step; load average {os.getloadavg()[0]:.2f}")
        proc = subprocess.Popen([PY, "-m", "kubectl_sktrace", "start", "--quiet", "--kubeconfig", kubeconfig, "--cache", cache,
                                 "--health-port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                env={**os.environ, "KUBECONFIG": ""}, cwd=str(workdir))
        launched = time.time()
        wait_synced(cache, proc)
        print(f"synced in {time.time() - launched:.1f}s: RSS {rss_mb(proc.pid):.0f} MB, peak {peak_rss_mb(proc.pid):.0f} MB\n")
        print(f"  {'pods created':>12} {'elapsed':>8} {'RSS':>8} {'peak RSS':>9} {'CPU/event':>10} {'followed':>9} {'alive':>7} {'cache pod rows':>15}")
        every = max(args.batch, args.pods // args.samples)
        began, last_cpu, last_events, events, previous_rv = time.monotonic(), cpu_seconds(proc.pid), 0, 0, 0
        reference: float | None = None
        series: list[tuple[int, float]] = []
        while churn.created < args.pods:
            events += churn.step(args.batch)
            rv = emu.store.rv
            _wait_committed(cache, previous_rv, proc)  # one step in flight at most
            previous_rv = rv
            if churn.created % every < args.batch or churn.created >= args.pods:
                _wait_committed(cache, rv, proc)
                cpu = cpu_seconds(proc.pid)
                alive = len(emu.store.objects[churn.t_pod]) - standing
                peak = peak_rss_mb(proc.pid)
                per_event = (cpu - last_cpu) / max(1, events - last_events) * 1e6
                print(f"  {churn.created:>12,} {time.monotonic() - began:>7.0f}s {rss_mb(proc.pid):>6.0f} MB {peak:>6.0f} MB "
                      f"{per_event:>7.0f} µs {_tracked(port) - standing:>9,} {alive:>7,} {_pod_rows(cache):>15,}", flush=True)
                last_cpu, last_events = cpu, events
                series.append((churn.created, peak))
                if reference is None and churn.created >= warmup:
                    reference = peak
        assert reference is not None
        final = series[-1][1]
        growth = (final - reference) / reference * 100
        print(f"\n  {churn.created:,} pods created, {churn.deleted:,} deleted, {events:,} pod events in {time.monotonic() - began:.0f}s")
        print(f"  peak RSS after warm-up ({warmup:,} pods) {reference:.0f} MB; at the end {final:.0f} MB: {growth:+.1f}% (target < 10%)")
        print(f"  pods followed in memory at the end: {_tracked(port) - standing:,} beyond the {standing:,} standing pods "
              f"(alive in the cluster: {len(emu.store.objects[churn.t_pod]) - standing:,})")
    finally:
        if proc is not None:
            stop_recorder(proc)
        emu.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
