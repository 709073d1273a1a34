"""``kubectl get pods -A`` through ``kubectl sktrace serve --at T``, and ``kubectl sktrace get pods -A --at T`` (the
cache read by the CLI, process start included), beside ``kubectl get pods -A`` against the emulator serving the same
pods, in one run.

    python benchmarks/bench_serve.py                   # 5,000 pods (a reduced scale; the target's is 50,000)
    python benchmarks/bench_serve.py --pods 50000

The emulator is filled with ``--pods`` pods (``build_large_state``: Deployments of 10 pods in 20 namespaces) and
recorded by the real recorder (``kubectl sktrace start``, tracking pods as a kind) until it has listed them all; then
``serve --at`` the second after that list, and the same ``kubectl get pods -A`` (chunks of 500, kubectl's default) is
timed against each server, alternately, ``--repeat`` times: the median of each, and their ratio (the target: at most
1.5x the emulator). The emulator's list pages cost what a real server's encoding would (23 ms per MB, its default);
``serve`` answers from the state at T it read once at its start (its start, the state's read, is reported apart);
``get --at`` reads the state at T from the cache in each process (the target: no slower than the emulator).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from sktrace_emulator import Emulator, build_large_state  # noqa: E402

SCRIPT = str(Path(sys.executable).parent / "kubectl-sktrace")
CONFIG = """trackedObjects:
  v1.Pod: {}
  apps/v1.Deployment:
    trackLifecycle: true
"""


def kubectl_get(kubeconfig: Path, cache_dir: Path) -> float:
    """Seconds of one ``kubectl get pods -A`` (its rows counted, so that an empty answer cannot pass for a fast one)."""
    started = time.perf_counter()
    out = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "--cache-dir", str(cache_dir), "get", "pods", "-A", "--no-headers"],
                         capture_output=True, text=True, check=True).stdout
    elapsed = time.perf_counter() - started
    return elapsed if out.count("\n") > 0 else float("nan")


def sktrace_get(cache: Path, at: float) -> float:
    """Seconds of one ``kubectl sktrace get pods -A --at T`` (its rows counted, as ``kubectl_get``)."""
    started = time.perf_counter()
    installed = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # its bytecode kept, as an install's
    out = subprocess.run([SCRIPT, "get", "pods", "-A", "--at", f"@{at:.0f}", "--cache", str(cache), "--no-headers", "--quiet"],
                         capture_output=True, text=True, check=True, env=installed).stdout
    elapsed = time.perf_counter() - started
    return elapsed if out.count("\n") > 0 else float("nan")


def record(emu_kubeconfig: Path, cache: Path, config: Path, pods: int) -> float:
    """Record until every pod is in the cache; the time T after which the state holds them all."""
    proc = subprocess.Popen([SCRIPT, "start", "--kubeconfig", str(emu_kubeconfig), "--cache", str(cache), "--config", str(config),
                             "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import sqlite3

        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            time.sleep(1)
            try:
                with sqlite3.connect(f"file:{cache}?mode=ro", uri=True) as conn:
                    n = conn.execute("SELECT count(*) FROM events WHERE gvk = 'v1.Pod'").fetchone()[0]
            except sqlite3.Error:
                continue
            if n >= pods:
                break
        time.sleep(2)
        return time.time()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if shutil.which("kubectl") is None:
        print("kubectl is not on PATH")
        return 1
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp, Emulator() as emu:
        work = Path(tmp)
        build_large_state(emu, deployments=args.pods // 10, pods_per_deployment=10, namespaces=20, seed=7)
        emu_kubeconfig = Path(emu.write_kubeconfig(str(work / "emu.kubeconfig")))
        (work / "config.yaml").write_text(CONFIG)
        at = record(emu_kubeconfig, work / "cache.db", work / "config.yaml", args.pods)
        started = time.perf_counter()
        serve = subprocess.Popen([SCRIPT, "serve", "--cache", str(work / "cache.db"), "--at", f"@{at:.0f}", "--kubeconfig-out",
                                  str(work / "past.kubeconfig")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = serve.stdout.readline() if serve.stdout else ""
            start_seconds = time.perf_counter() - started
            assert line.startswith("Serving"), (line, serve.stderr.read() if serve.stderr else "")
            emulator_times, serve_times, get_times = [], [], []
            sktrace_get(work / "cache.db", at)  # once before: the bytecode of a fresh checkout compiled, as an install has it
            for _ in range(args.repeat):
                emulator_times.append(kubectl_get(emu_kubeconfig, work / "kc-emu"))
                serve_times.append(kubectl_get(work / "past.kubeconfig", work / "kc-serve"))
                get_times.append(sktrace_get(work / "cache.db", at))
        finally:
            serve.send_signal(signal.SIGINT)
            serve.wait(timeout=60)
    emulator_median, serve_median = statistics.median(emulator_times), statistics.median(serve_times)
    print(f"pods: {args.pods}; serve's start (the state at T read): {start_seconds:.2f} s; {line.strip()}")
    print(f"kubectl get pods -A against the emulator:       median {emulator_median:.3f} s  {[round(t, 3) for t in emulator_times]}")
    print(f"kubectl get pods -A through serve --at T:       median {serve_median:.3f} s  {[round(t, 3) for t in serve_times]}")
    print(f"ratio: {serve_median / emulator_median:.2f}x (target: at most 1.5x)")
    get_median = statistics.median(get_times)
    print(f"kubectl sktrace get pods -A --at T (the CLI):   median {get_median:.3f} s  {[round(t, 3) for t in get_times]}")
    print(f"ratio: {get_median / emulator_median:.2f}x (target: at most 1x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
