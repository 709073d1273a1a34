"""How fast a cache grows: a real recording of a busy emulated cluster, measured on disk.

    python benchmarks/bench_growth.py                              # 50,000 pods, 300 changes/s, 180 s
    python benchmarks/bench_growth.py --pods 5000 --rate 50 --seconds 60

The emulator serves ``--workload large`` (``--pods`` running pods, 10 per Deployment) with its load generator
at ``--rate`` changes per second (bare pods that run and finish, scaling, rollouts, Jobs, pod deletions,
ConfigMaps; the controllers' and kubelet's reactions count toward the rate). ``kubectl sktrace start`` records
it for ``--seconds``. Once the recorder has synced, the cache's rows and bytes on disk (the pages in use as of the
last commit, the log's counted once) are sampled: the growth is the difference between the end and the first sample
after the sync, per hour. Pod updates are no events: what grows is ``pods`` rows and the tracked kinds' events.
The emulator's own count of changes (its resourceVersion) over the same span is printed beside, as the rate
actually reached.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _rows(cache: Path) -> tuple[int, int, int]:
    """(events, pods, bytes), read-only while the recorder writes. The bytes are the database's pages as of the
    last commit (the log's included, counted once): what the file holds after a checkpoint."""
    conn = sqlite3.connect(f"file:{cache}?mode=ro", uri=True, timeout=10)
    try:
        events = conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0]
        pods = conn.execute("SELECT coalesce(max(id), 0) FROM pods").fetchone()[0]
        pages, free = conn.execute("PRAGMA page_count").fetchone()[0], conn.execute("PRAGMA freelist_count").fetchone()[0]
        size = (pages - free) * conn.execute("PRAGMA page_size").fetchone()[0]
    finally:
        conn.close()
    return events, pods, size


def _synced(cache: Path) -> bool:
    if not cache.exists():
        return False
    try:
        conn = sqlite3.connect(f"file:{cache}?mode=ro", uri=True, timeout=10)
        try:
            row = conn.execute("SELECT synced FROM runs ORDER BY id DESC LIMIT 1").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return bool(row and row[0])


def _server_rv(kubeconfig: Path) -> int:
    out = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "get", "--raw", "/api/v1/namespaces?limit=1"],
                         capture_output=True, text=True, check=True).stdout
    import json

    return int(json.loads(out)["metadata"]["resourceVersion"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--rate", type=float, default=300)
    parser.add_argument("--seconds", type=float, default=180)
    args = parser.parse_args()
    os.environ["PATH"] = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"  # kubectl finds this kubectl-sktrace
    with tempfile.TemporaryDirectory() as scratch:
        kubeconfig, cache = Path(scratch) / "kc.yaml", Path(scratch) / "cache.db"
        emulator = subprocess.Popen([sys.executable, "-m", "sktrace_emulator", "serve", "--kubeconfig-out", str(kubeconfig), "--workload", "large",
                                     "--pods", str(args.pods), "--rate", str(args.rate)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while not kubeconfig.exists():
                time.sleep(0.5)
            recorder = subprocess.Popen(["kubectl", "sktrace", "start", "--kubeconfig", str(kubeconfig), "--cache", str(cache), "--duration",
                                         str(args.seconds), "--quiet"], stdout=subprocess.DEVNULL)
            started = time.monotonic()
            while not _synced(cache):
                if recorder.poll() is not None:
                    raise SystemExit(f"the recorder exited ({recorder.returncode}) before it synced")
                time.sleep(0.5)
            synced_after = time.monotonic() - started
            first, t0, rv0 = _rows(cache), time.monotonic(), _server_rv(kubeconfig)
            recorder.wait()
            t1, rv1 = time.monotonic(), _server_rv(kubeconfig)
            last = _rows(cache)
        finally:
            emulator.terminate()  # SIGTERM: a background job ignores SIGINT
            emulator.wait(timeout=30)
        span = t1 - t0
        per_hour = 3600 / span
        print(f"cluster: {args.pods} pods, load at {args.rate}/s asked, {(rv1 - rv0) / span:.0f} changes/s reached (emulator resourceVersions)")
        print(f"synced after {synced_after:.0f} s; at sync: {first[0]} events, {first[1]} pods rows, {first[2] / 2**20:.1f} MiB")
        print(f"over {span:.0f} s after sync: +{last[0] - first[0]} events, +{last[1] - first[1]} pods rows, +{(last[2] - first[2]) / 2**20:.1f} MiB")
        print(f"per hour: {(last[0] - first[0]) * per_hour:,.0f} events, {(last[1] - first[1]) * per_hour:,.0f} pods rows, "
              f"{(last[2] - first[2]) * per_hour / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
