"""The past asked on the CLI, end to end (process start included), beside ``kubectl get`` against the emulator in the
same run.

    python benchmarks/bench_past.py --dir /var/tmp/sktrace-bench                    # 10M events (bench_cache's fixture)
    python benchmarks/bench_past.py --dir /tmp/sktrace-bench --events 1000000       # a reduced scale

The cache is ``bench_cache.py``'s fixture (8 weeks, 5,000 Deployments in 50 namespaces rolled and scaled, ~500k Jobs,
built once into ``--dir`` and reused). Measured, each the median of ``--repeat`` runs of a fresh process:

- ``kubectl sktrace get deploy NAME -n NS --at T -o json`` (T in the middle of the history), beside the reference
  ``kubectl get deploy NAME -n NS -o json`` against the emulator serving 5,000 Deployments (``build_large_state``);
- ``kubectl sktrace get deploy -A --at T`` (every Deployment at T) beside ``kubectl get deploy -A`` on the emulator;
- ``kubectl sktrace history deploy/NAME`` of the Deployment with the most versions;
- ``kubectl sktrace diff --from T --to T+1d -o name`` (a day of the history);
with the peak RSS of the processes measured (``ru_maxrss`` of the children).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SKTRACE = [sys.executable, "-m", "kubectl_sktrace"]


INSTALLED = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
"""The processes run as an installed plugin runs: its bytecode compiled once and kept (pip compiles it at install)."""


def timed(cmd: list[str], *, repeat: int, ok: tuple[int, ...] = (0,)) -> tuple[float, str]:
    """The median wall time of ``cmd`` (a fresh process each run, after one untimed: the bytecode written) and its last
    output."""
    times, out = [], ""
    subprocess.run(cmd, capture_output=True, cwd=ROOT, env=INSTALLED)
    for _ in range(repeat):
        t = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=INSTALLED)
        times.append(time.perf_counter() - t)
        assert done.returncode in ok, (cmd, done.returncode, done.stderr[-2000:])
        out = done.stdout
    return statistics.median(times), out


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def fixture(directory: Path, events: int) -> Path:
    cache = directory / f"cache-{events}.db"
    if not cache.exists():
        t = time.perf_counter()
        subprocess.run([sys.executable, str(HERE / "bench_cache.py"), "--child-build", str(cache), str(events), "8"], check=True, cwd=ROOT)
        print(f"built {events} events in {time.perf_counter() - t:.0f} s")
    return cache


def busiest(cache: Path) -> tuple[str, str, int, int, int]:
    """The Deployment with the most rows, and the history's first and last second."""
    import sqlite3

    conn = sqlite3.connect(f"file:{cache}?mode=ro", uri=True)
    ns, name, n = conn.execute("SELECT namespace, name, count(*) AS n FROM events WHERE gvk = 'apps/v1.Deployment' AND name LIKE 'app-1%' "
                               "GROUP BY namespace, name ORDER BY n DESC LIMIT 1").fetchone()
    first, last = conn.execute("SELECT min(ts), max(ts) FROM events").fetchone()
    conn.close()
    return ns, name, n, first, last


def many_versions(directory: Path, versions: int, *, distinct: int = 50) -> Path:
    """A cache of one Deployment scaled ``versions`` times, a second apart (the recorder's own schema and bodies), to
    ``distinct`` replica counts in turn (50: scaled back and forth, as an autoscaler does; ``versions``: every body new)."""
    import random
    import sqlite3

    from kubectl_sktrace.store import open_cache
    from kubectl_sktrace.store.bodies import encode_body
    from kubectl_sktrace.trace.sanitize import sanitize
    from kubectl_sktrace.model import GVK
    from sktrace_emulator.builders import deployment_object

    path = directory / (f"versions-{versions}.db" if distinct == 50 else f"versions-{versions}-{distinct}.db")
    if path.exists():
        return path
    with open_cache(path, create=True) as cache, cache.transaction() as conn:
        conn.execute("INSERT INTO runs (id, started, synced, stopped, clean, pid, config) VALUES (1, ?, ?, ?, 1, 1, '')",
                     (T0 - 1, T0, T0 + versions + 1))
    base = deployment_object("shop", "web", replicas=1, rng=random.Random(1))
    rows = []
    for n in range(versions):
        body = sanitize({**base, "spec": {**base["spec"], "replicas": n % distinct + 1}}, gvk=GVK("apps", "v1", "Deployment"))
        blob, status = encode_body(body)
        rows.append((T0 + n, T0 + n + 0.1, 1, "apps/v1.Deployment", "shop", "web", "uid-web", 0, 0, n, None, blob, status))
    conn2 = sqlite3.connect(path)
    with conn2:
        conn2.executemany("INSERT INTO events (ts, recv, run_id, gvk, namespace, name, uid, op, inferred, spec_hash, owner_chain, body, status) "
                          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    conn2.close()
    return path


T0 = 1_788_220_800


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    cache = fixture(args.dir, args.events)
    ns, name, versions, first, last = busiest(cache)
    at = (first + last) // 2
    print(f"cache {cache}: {args.events} events; T = @{at}; {ns}/{name} has {versions} rows")

    from sktrace_emulator import Emulator
    from sktrace_emulator.bulk import build_large_state

    emu = Emulator(token="bench", seed=1)
    emu.start()
    try:
        build_large_state(emu, deployments=5000, pods_per_deployment=1)
        kubeconfig = str(emu.write_kubeconfig(args.dir / "bench-past-kubeconfig"))
        listed = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "get", "deploy", "-A", "--no-headers"], capture_output=True, text=True,
                                check=True).stdout.split("\n")[0].split()
        live_ns, live_name = listed[0], listed[1]
        ref_one, _ = timed(["kubectl", "--kubeconfig", kubeconfig, "get", "deploy", live_name, "-n", live_ns, "-o", "json"], repeat=args.repeat)
        ref_all, _ = timed(["kubectl", "--kubeconfig", kubeconfig, "get", "deploy", "-A"], repeat=args.repeat)
    finally:
        emu.stop()
    base = ["--cache", str(cache)]
    one, _ = timed(SKTRACE + ["get", "deploy", name, "-n", ns, "--at", f"@{at}", "-o", "json", *base], repeat=args.repeat)
    print(f"get deploy NAME --at T -o json:   {one:.3f} s   | kubectl get deploy NAME -o json (emulator): {ref_one:.3f} s")
    every, out = timed(SKTRACE + ["get", "deploy", "-A", "--at", f"@{at}", *base], repeat=args.repeat)
    print(f"get deploy -A --at T ({len(out.splitlines()) - 1} objects): {every:.3f} s   | kubectl get deploy -A (emulator, 5000): {ref_all:.3f} s")
    told, out = timed(SKTRACE + ["history", f"deploy/{name}", "-n", ns, *base], repeat=args.repeat)
    print(f"history deploy/NAME ({len(out.splitlines()) - 1} versions): {told:.3f} s")
    day, out = timed(SKTRACE + ["diff", "--from", f"@{at}", "--to", f"@{at + 86400}", "-o", "name", *base], repeat=max(1, args.repeat // 2), ok=(0, 1))
    print(f"diff over a day -o name ({len(out.splitlines())} objects changed): {day:.3f} s")
    for distinct in (50, 10_000):
        deep = many_versions(args.dir, 10_000, distinct=distinct)
        told, out = timed(SKTRACE + ["history", "deploy/web", "-n", "shop", "--cache", str(deep)], repeat=args.repeat)
        print(f"history deploy/NAME ({len(out.splitlines()) - 1} versions, {distinct} distinct bodies): {told:.3f} s")
    print(f"peak RSS of the processes measured: {peak_mb():.0f} MB")


if __name__ == "__main__":
    main()
