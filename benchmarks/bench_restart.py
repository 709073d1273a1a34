"""The recorder's restart and first sync on a real kube-apiserver v1.28, beside client-go listing the same objects.

    .venv/bin/python benchmarks/bench_restart.py [--plane DIR] [--deployments 2500] [--pods-per 10] [--repeat 3]
        [--stop 60]

Against the real control plane of ``../shared/realk8s`` (quiet: no controller manager, no kubelet) populated by its
reference client ``skperf`` (``--deployments`` Deployments over 10 namespaces, a ReplicaSet each, ``--pods-per`` pods
each), or the running one ``--plane`` names. Skipped with one line where ``../shared/realk8s`` or etcd is absent.
Each figure is taken ``--repeat`` times, ours and the reference's in turn (interleaved, so that the load of a shared
machine falls on both alike), and printed as medians beside the reference, with the machine's load (``uptime``):

1. First sync: ``kubectl-sktrace start`` into a fresh cache, from its launch to the run's ``synced`` mark (wall, its CPU
   from ``/proc`` at that mark, peak RSS), beside ``skperf list`` (client-go, typed objects from JSON, of pods,
   ReplicaSets and Deployments): target wall and CPU at most 1.0x.
2. Restart after a stop of ``--stop`` seconds (a minute) while 1 % of the objects changed (pods' and ReplicaSets'
   labels, Deployments' specs, patched by ``kubectl``): the restart's wall to its ``synced`` mark, its watches resumed
   where the last run left them; beside ``skperf list`` of the same objects: target at most 0.2x.
3. Restart after the server forgot (the API server killed and started again: its watch cache begins anew, so the last
   run's resourceVersions are too old for it, a 410), 1 % changed meanwhile: the restart resumes, is refused, and
   lists; target at most 0.7x.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
KIT = ROOT.parent / "shared" / "realk8s"
RECORDER = Path(sys.executable).parent / "kubectl-sktrace"


def unavailable() -> str | None:
    if not (KIT / "new.sh").exists():
        return f"bench_restart: skipped, it needs the real control plane of {KIT}"
    if shutil.which("etcd") is None:
        return "bench_restart: skipped, it needs etcd (apt-get install etcd-server)"
    return None


class Plane:
    def __init__(self, root: Path, *, made: bool) -> None:
        self.root, self.made = root, made
        self.kubeconfig = root / "kubeconfig"
        self.env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}

    def up(self) -> None:
        subprocess.run([str(self.root / "up.sh")], env={**os.environ, "KCM": "0", "FAKE_KUBELET": "0"}, check=True,
                       capture_output=True, timeout=180)

    def kubectl(self, *args: str) -> str:
        return subprocess.run(["kubectl", *args], env=self.env, check=True, capture_output=True, text=True, timeout=300).stdout

    def skperf(self, *args: str) -> dict[str, Any]:
        out = subprocess.run([str(self.root / "bin" / "skperf"), *args, "-kubeconfig", str(self.kubeconfig)], check=True,
                             capture_output=True, text=True, timeout=1800).stdout
        return dict(json.loads(out.strip().splitlines()[-1]))

    def restart_apiserver(self) -> None:
        """The API server killed and started again on the same etcd: its watch cache begins anew."""
        pid = int((self.root / "run" / "kube-apiserver.pid").read_text())
        os.kill(pid, signal.SIGKILL)
        time.sleep(1.0)
        self.up()


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _synced(cache: Path, runs: int) -> bool:
    if not cache.exists():
        return False
    try:
        conn = sqlite3.connect(f"file:{cache}?mode=ro", uri=True, timeout=0.2)
        try:
            rows = conn.execute("SELECT count(*) FROM runs WHERE synced IS NOT NULL").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return bool(rows and rows[0] >= runs)


def record_until_synced(plane: Plane, cache: Path, home: Path) -> dict[str, float]:
    """``kubectl-sktrace start`` from its launch to its run's ``synced`` mark; then stopped cleanly (SIGTERM)."""
    runs = 0
    if cache.exists():
        conn = sqlite3.connect(cache)
        runs = conn.execute("SELECT count(*) FROM runs WHERE synced IS NOT NULL").fetchone()[0]
        conn.close()
    env = {**os.environ, "HOME": str(home), "XDG_STATE_HOME": str(home / "state")}
    started = time.monotonic()
    proc = subprocess.Popen([str(RECORDER), "start", "--kubeconfig", str(plane.kubeconfig), "--cache", str(cache), "--quiet"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while not _synced(cache, runs + 1):
            if proc.poll() is not None:
                raise RuntimeError(f"the recorder exited {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.02)
        figures = {"wall_s": time.monotonic() - started, "cpu_s": _cpu_seconds(proc.pid), "maxrss_mb": _peak_rss_mb(proc.pid)}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    return figures


def change_one_percent(plane: Plane, objects: int, round_: int) -> int:
    """1 % of the objects changed, in the namespaces in turn: pods' and ReplicaSets' labels, Deployments' specs."""
    wanted = max(1, objects // 100)
    namespaces = [n.split("/", 1)[1] for n in plane.kubectl("get", "namespaces", "-o", "name").split()
                  if n.split("/", 1)[1].startswith("perf")]
    share = {"pods": wanted * 10 // 12, "replicasets": wanted // 12, "deployments": wanted - wanted * 10 // 12 - wanted // 12}
    patches = {"pods": {"metadata": {"labels": {"bench-round": str(round_)}}},
               "replicasets": {"metadata": {"labels": {"bench-round": str(round_)}}},
               "deployments": {"spec": {"minReadySeconds": round_ % 50 + 1}}}
    ns = namespaces[round_ % len(namespaces)]
    changed = 0
    for kind, count in share.items():
        names = [n.split("/", 1)[1] for n in plane.kubectl("-n", ns, "get", kind, "-o", "name").split()][:count]
        for start in range(0, len(names), 100):
            batch = names[start:start + 100]
            plane.kubectl("-n", ns, "patch", kind, *batch, "--type=merge", "-p", json.dumps(patches[kind]))
            changed += len(batch)
    return changed


def _median(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def _line(name: str, ours: list[dict[str, float]], theirs: list[dict[str, float]], target: str) -> str:
    w, rw = _median(ours, "wall_s"), _median(theirs, "wall_s")
    c, rc = _median(ours, "cpu_s"), _median(theirs, "cpu_s")
    return (f"{name:<34} wall {w:6.2f}s vs {rw:6.2f}s ({w / rw:4.2f}x)  CPU {c:6.2f}s vs {rc:6.2f}s ({c / rc:4.2f}x)  "
            f"RSS {_median(ours, 'maxrss_mb'):5.0f} MB vs {_median(theirs, 'maxrss_mb'):4.0f} MB  target {target}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plane", type=Path, help="a running control plane directory (already populated)")
    parser.add_argument("--deployments", type=int, default=2500)
    parser.add_argument("--pods-per", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--stop", type=float, default=60.0, help="seconds the recorder is stopped before a restart")
    args = parser.parse_args()
    why = unavailable()
    if why is not None:
        print(why)
        return 0
    made = args.plane is None
    root = Path(subprocess.run([str(KIT / "new.sh")], check=True, capture_output=True, text=True).stdout.strip()) if made else args.plane
    plane = Plane(root, made=made)
    work = Path(tempfile.mkdtemp(prefix="bench-restart-"))
    try:
        if made:
            plane.up()
            plane.skperf("populate", "-namespaces", "10", "-deployments", str(args.deployments), "-pods-per", str(args.pods_per))
        listed = plane.skperf("list")
        objects = int(listed.get("pods", 0)) + int(listed.get("replicasets", 0)) + int(listed.get("deployments", 0))
        print(f"cluster: {objects} objects ({json.dumps({k: v for k, v in listed.items() if k in ('pods', 'replicasets', 'deployments')})}); "
              f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
        first, ref_first, restart, ref_restart, forgot, ref_forgot = [], [], [], [], [], []
        for r in range(args.repeat):
            cache, home = work / f"cache-{r}.db", work / f"home-{r}"
            home.mkdir()
            first.append(record_until_synced(plane, cache, home))
            ref_first.append(plane.skperf("list"))
            stopped = time.monotonic()
            change_one_percent(plane, objects, 2 * r)
            time.sleep(max(0.0, args.stop - (time.monotonic() - stopped)))
            restart.append(record_until_synced(plane, cache, home))
            ref_restart.append(plane.skperf("list"))
            plane.restart_apiserver()
            change_one_percent(plane, objects, 2 * r + 1)
            forgot.append(record_until_synced(plane, cache, home))
            ref_forgot.append(plane.skperf("list"))
        print(f"medians of {args.repeat}, ours vs skperf list (client-go, JSON, typed); load after: "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(_line("first sync (fresh cache)", first, ref_first, "<= 1.0x wall and CPU"))
        print(_line(f"restart, {args.stop:.0f}s stop, 1% changed", restart, ref_restart, "<= 0.2x wall"))
        print(_line("restart after a 410, 1% changed", forgot, ref_forgot, "<= 0.7x wall"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if made:
            subprocess.run([str(root / "down.sh")], capture_output=True, timeout=180)
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
