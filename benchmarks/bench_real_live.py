"""Live recording on a real API server beside client-go's informer: CPU per watch event on a load the recorder writes.

    .venv/bin/python benchmarks/bench_real_live.py [--namespaces 4] [--deployments 10] [--rate 4] [--warmup 15]
        [--window 60] [--runs 3]

A real kube-apiserver v1.28 with its controller manager and fake kubelet (``../shared/realk8s``: the real tier's
``tests/realk8s.ControlPlane``, its audit log off), ``--namespaces`` × ``--deployments`` Deployments of one replica,
and a load that makes the recorder write, not only read and drop: ``--rate`` operations a second, round robin over
the Deployments, each a merge patch over one kept-alive connection of this process:

- a scale, 1 → 3 or back (the controller creates pods, the kubelet binds and starts them; a scale down deletes
  them, the graceful delete then the kubelet's final one), two operations in five;
- a re-image (a rollout: a new ReplicaSet, its pods, the old ones deleted), one in five;
- a label changed on the Deployment (a revision the recorder writes), two in five.

Readers of the same streams at once:

- ``kubectl-sktrace start`` (this tree, ``python -m kubectl_sktrace``), the default config, a cache of its own;
- ``skperf watch`` (client-go v1.28, JSON, pods into an informer's store: the reference of issue 50);
- a counter in this process: raw watches of pods, ReplicaSets and Deployments counting their events.

Idle first: each reader's CPU a second over 20 s with nothing changing. Then per window of ``--window`` seconds
after ``--warmup`` seconds of load: each reader's CPU (``/proc/<pid>/stat``, user plus system, all threads) per event
its watches received: the recorder's over the pod, ReplicaSet and Deployment events (the kinds that change here; its
other kinds are quiet), skperf's over the pod events; their ratio (the target: at most 0.3), and the same above idle
CPU; RSS. After each window the load stops and each reader's CPU in the next 3 s is printed: a reader that fell
behind works on after the load stopped, and its figure is not a steady state.

Conditions to report with the figures: the machine's load (printed) and what else ran.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.realk8s import ControlPlane, deployment, unavailable  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
KINDS = {"pods": "/api/v1/pods", "replicasets": "/apis/apps/v1/replicasets", "deployments": "/apis/apps/v1/deployments"}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Server:
    """An HTTPS connection to the API server as its admin, kept alive."""

    def __init__(self, plane: ControlPlane) -> None:
        self.port = plane.ports["APISERVER_PORT"]
        self.context = ssl.create_default_context(cafile=str(plane.ca))
        self.headers = {"Authorization": f"Bearer {plane.admin_token}", "Accept": "application/json"}
        self.conn = self.connect()

    def connect(self, timeout: float | None = 30) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=timeout)

    def request(self, method: str, path: str, body: Any = None) -> Any:
        headers = dict(self.headers)
        if body is not None:
            headers["Content-Type"] = "application/merge-patch+json" if method == "PATCH" else "application/json"
        self.conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        response = self.conn.getresponse()
        data = response.read()
        if response.status >= 300:
            raise RuntimeError(f"{method} {path}: {response.status} {data[:300]!r}")
        return json.loads(data)


class Counter:
    """Raw watches of ``KINDS`` from their current version: the events the server sends a watcher, per kind."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.counts = dict.fromkeys(KINDS, 0)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        for kind, path in KINDS.items():
            version = server.request("GET", f"{path}?limit=1")["metadata"]["resourceVersion"]
            threading.Thread(target=self._watch, args=(kind, path, version), daemon=True).start()

    def _watch(self, kind: str, path: str, version: str) -> None:
        while not self.stop.is_set():
            conn = self.server.connect(timeout=None)
            conn.request("GET", f"{path}?watch=1&allowWatchBookmarks=true&timeoutSeconds=600&resourceVersion={version}",
                         headers=self.server.headers)
            response = conn.getresponse()
            for line in response:
                event = json.loads(line)
                version = event["object"]["metadata"].get("resourceVersion", version)
                if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                    with self.lock:
                        self.counts[kind] += 1
            conn.close()

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return dict(self.counts)


class Load(threading.Thread):
    """``rate`` operations a second over the Deployments, round robin: scale, re-image, label (``__doc__``)."""

    def __init__(self, server: Server, targets: list[tuple[str, str]], rate: float) -> None:
        super().__init__(daemon=True)
        self.server, self.targets, self.rate = server, targets, rate
        self.running = threading.Event()
        self.running.set()
        self.done = 0
        self.replicas = dict.fromkeys(targets, 1)
        self.images = dict.fromkeys(targets, 0)

    def operation(self, n: int) -> None:
        namespace, name = target = self.targets[n % len(self.targets)]
        path = f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
        kind = (n // len(self.targets)) % 5
        if kind in (0, 3):
            self.replicas[target] = 4 - self.replicas[target]
            self.server.request("PATCH", path, {"spec": {"replicas": self.replicas[target]}})
        elif kind == 1:
            self.images[target] += 1
            self.server.request("PATCH", path, {"spec": {"template": {"spec": {"containers": [
                {"name": "main", "image": f"nginx:1.25.{self.images[target]}"}]}}}})
        else:
            self.server.request("PATCH", path, {"metadata": {"labels": {"revision": str(n)}}})

    def run(self) -> None:
        n, due = 0, time.monotonic()
        while self.running.is_set():
            self.operation(n)
            n += 1
            self.done = n
            due += 1 / self.rate
            time.sleep(max(0.0, due - time.monotonic()))


def start_readers(plane: ControlPlane, work: Path) -> dict[str, subprocess.Popen[bytes]]:
    env = {**os.environ, "HOME": str(work), "PYTHONPATH": str(ROOT), "KUBECONFIG": str(plane.kubeconfig)}
    ours = subprocess.Popen([sys.executable, "-m", "kubectl_sktrace", "start", "--cache", str(work / "cache.db"), "--duration", "86400"],
                            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(work / "recorder.log", "wb"))
    skperf = subprocess.Popen([str(plane.root / "bin" / "skperf"), "watch", "-kubeconfig", str(plane.kubeconfig), "-status", str(work / "skperf.status")],
                              stdin=subprocess.DEVNULL, stdout=open(work / "skperf.out", "wb"), stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while "initial sync done" not in (work / "recorder.log").read_text(errors="replace") or not (work / "skperf.status").exists():
        if time.monotonic() > deadline or ours.poll() is not None or skperf.poll() is not None:
            raise SystemExit(f"the readers did not start:\n{(work / 'recorder.log').read_text(errors='replace')}")
        time.sleep(0.2)
    return {"kubectl-sktrace": ours, "client-go (skperf)": skperf}


def window(readers: dict[str, subprocess.Popen[bytes]], counter: Counter, seconds: float) -> dict[str, dict[str, float]]:
    cpu0 = {name: cpu_seconds(p.pid) for name, p in readers.items()}
    events0 = counter.snapshot()
    time.sleep(seconds)
    cpu1 = {name: cpu_seconds(p.pid) for name, p in readers.items()}
    events1 = counter.snapshot()
    events = {kind: events1[kind] - events0[kind] for kind in KINDS}
    received = {"kubectl-sktrace": sum(events.values()), "client-go (skperf)": events["pods"]}
    return {name: {"cpu": cpu1[name] - cpu0[name], "events": received[name], "per_event_us": (cpu1[name] - cpu0[name]) / max(1, received[name]) * 1e6,
                   "rss": rss_mb(readers[name].pid), **{f"events_{k}": v for k, v in events.items()}} for name in readers}


def tail(readers: dict[str, subprocess.Popen[bytes]], seconds: float = 3.0) -> dict[str, float]:
    before = {name: cpu_seconds(p.pid) for name, p in readers.items()}
    time.sleep(seconds)
    return {name: cpu_seconds(p.pid) - before[name] for name, p in readers.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespaces", type=int, default=4)
    parser.add_argument("--deployments", type=int, default=10, help="per namespace")
    parser.add_argument("--rate", type=float, default=4.0, help="load operations per second")
    parser.add_argument("--warmup", type=float, default=15.0)
    parser.add_argument("--window", type=float, default=60.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    why = unavailable()
    if why is not None:
        print(f"bench_real_live: {why}")
        return
    work = Path(tempfile.mkdtemp(prefix="sktrace-real-live-"))
    plane = ControlPlane.create(work / "plane")
    readers: dict[str, subprocess.Popen[bytes]] = {}
    try:
        plane.up(AUDIT_POLICY="")
        server = Server(plane)
        targets = [(f"live-{i}", f"app-{j}") for i in range(args.namespaces) for j in range(args.deployments)]
        for namespace in sorted({ns for ns, _ in targets}):
            plane.kubectl("create", "namespace", namespace)
        plane.apply({"apiVersion": "v1", "kind": "List", "items": [deployment(ns, name) for ns, name in targets]})
        readers = start_readers(plane, work)
        counter = Counter(server)
        print(f"{len(targets)} Deployments on a real kube-apiserver v1.28; load {args.rate:g} operations/s; "
              f"windows of {args.window:g} s after {args.warmup:g} s; load average {os.getloadavg()[0]:.1f}")
        time.sleep(5)
        idle = {name: cpu / 20.0 for name, cpu in tail(readers, 20.0).items()}  # CPU a second with nothing changing
        print("idle: " + ", ".join(f"{name} {cpu * 1000:.1f} ms CPU/s" for name, cpu in idle.items()))
        results = []
        for run in range(args.runs):
            load = Load(Server(plane), targets, args.rate)
            load.start()
            time.sleep(args.warmup)
            figures = window(readers, counter, args.window)
            load.running.clear()
            load.join()
            after = tail(readers)
            results.append(figures)
            line = "  ".join(f"{name}: {f['per_event_us']:.0f} µs/event ({f['events']} events, {f['cpu']:.2f} s CPU, {f['rss']:.0f} MB; "
                             f"{after[name]:.2f} s CPU after)" for name, f in figures.items())
            ours, ref = figures["kubectl-sktrace"]["per_event_us"], figures["client-go (skperf)"]["per_event_us"]
            above = {name: (f["cpu"] - idle[name] * args.window) / max(1, f["events"]) * 1e6 for name, f in figures.items()}
            print(f"run {run + 1}: {line}  ratio {ours / ref:.2f}; above idle: "
                  + ", ".join(f"{name} {us:.0f} µs/event" for name, us in above.items())
                  + f" (ratio {above['kubectl-sktrace'] / above['client-go (skperf)']:.2f}); pods {figures['kubectl-sktrace']['events_pods']}, "
                  f"ReplicaSets {figures['kubectl-sktrace']['events_replicasets']}, Deployments {figures['kubectl-sktrace']['events_deployments']}; "
                  f"load average {os.getloadavg()[0]:.1f}")
            time.sleep(5)  # the cluster settles between windows
        ratios = [r["kubectl-sktrace"]["per_event_us"] / r["client-go (skperf)"]["per_event_us"] for r in results]
        print(f"median: kubectl-sktrace {statistics.median(r['kubectl-sktrace']['per_event_us'] for r in results):.0f} µs/event, "
              f"client-go {statistics.median(r['client-go (skperf)']['per_event_us'] for r in results):.0f} µs/event, "
              f"ratio {statistics.median(ratios):.2f} (target at most 0.30)")
        counter.stop.set()
    finally:
        for proc in readers.values():
            proc.send_signal(signal.SIGINT)
        for proc in readers.values():
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        left = plane.down()
        if left:
            print("left behind:", "; ".join(left))
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
