"""Live recording cost: CPU per watch event at paced rates, in steady state, and idle CPU, beside kubectl.

    .venv/bin/python benchmarks/bench_live.py [--rates 300,3000] [--warmup 5] [--window 20] [--idle 20]
        [--pods 2000] [--baseline DIR] [--no-kubectl] [--workload pods|churn|incident|mixed]

What a user gets: the emulator (TLS, in this process) holds ``--pods`` realistic pods (~6 KB of JSON each,
Deployments and ReplicaSets around them) and a pacer thread changes one pod's status at a time, evenly
spaced, at each rate of ``--rates`` (events per second). Every reader watches the same stream at once:

- ``kubectl-sktrace start`` (this tree), in its own process, with the default config and its own cache;
- with ``--baseline DIR``, the same command from another source tree (``git archive <ref> | tar -x -C DIR``),
  so a before/after comparison is measured in the same run on the same stream;
- ``kubectl get pods -A -w -o json > /dev/null`` (unless ``--no-kubectl``).

Figures, per reader: idle CPU in ms per second (after the initial sync, nothing changing, ``--idle`` seconds),
and at each rate the CPU in microseconds per event over ``--window`` seconds after ``--warmup`` seconds of
the rate (process CPU from ``/proc/<pid>/task/*/schedstat``, nanosecond resolution, or ``/proc/<pid>/stat``
when a thread ended meanwhile). Whether each reader kept up: a recorder's committed watch position (its
``watch_state``) must reach the window's last event within a second of the window's end; kubectl's CPU in the
three seconds after the pacer stopped says how much it still had to read (a reader that fell behind reads
bigger batches, so its figure is not a steady state and is flagged). The framing is measured, not assumed:
a raw socket reader in this process counts the events per HTTP chunk of the same stream.

``--workload churn`` changes Deployments instead (each of the ``--pods / 10``, in turn): every other change is to
its spec (``spec.minReadySeconds``), the others to its labels or its annotations, so its objects change labels and
annotations as often as their spec. There the recorders' cache grows: beside their CPU per event, the cache's bytes
per hour at that rate (the pages the database uses, as a reader sees them through the log, from the window's start
to its end, scaled to an hour). With ``--baseline`` a tree from before revisions (issue 34) records only the spec
changes: the two rows compare what recording every change a person calls a change costs.

``--workload incident`` takes pods through an incident's status writes (unready, crash-looping, an image pull failing,
ready again, OOM-killed and restarted, with heartbeats between that change nothing a person reads) and every fifth
write a Deployment's ready replicas: with ``--baseline`` a tree from before status changes were recorded, the rows
compare what recording them costs in CPU per event and in the cache's bytes per hour.

``--workload mixed`` is a churning cluster as its controllers and kubelets write it (the emulator's ``Workload`` in this
process, ``MixedPacer``): rollouts, rollouts to an image that cannot be pulled and their rollbacks, scale-ups whose pods
become ready two seconds after they start and scale-downs, crash loops, OOM kills and restarts, Jobs whose first pod
fails, heartbeats that change nothing a person reads. A rate is the API server's writes per second (every controller's
and kubelet's: the events every reader sees). With ``--baseline`` a tree from before status changes were recorded
(``git archive 506ccd4``, main before the merge of status changes), the rows compare what recording them costs: CPU per
event, the cache's bytes per hour, and each reader's RSS at the end of each window.

Conditions to report with the figures: the machine's load (printed), and what else ran.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import sqlite3
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sktrace_emulator import Emulator  # noqa: E402
from sktrace_emulator.bulk import build_large_state  # noqa: E402
from sktrace_emulator.records import Stored  # noqa: E402

PY = sys.executable
CLK_TCK = os.sysconf("SC_CLK_TCK")


# --- CPU of another process ------------------------------------------------------------------------------


def _stat_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def _task_ns(pid: int) -> dict[str, int]:
    runtimes: dict[str, int] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as handle:
                runtimes[tid] = int(handle.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue
    return runtimes


@dataclass(frozen=True)
class CpuMark:
    tasks: dict[str, int]
    stat: float


def cpu_mark(pid: int) -> CpuMark:
    return CpuMark(_task_ns(pid), _stat_seconds(pid))


def rss_mb(pid: int) -> float:
    """A process's resident memory (``VmRSS``), in MB."""
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024 / 1e6
    return float("nan")


def cpu_seconds_between(a: CpuMark, b: CpuMark) -> float:
    """CPU seconds the process used between two marks: per-thread nanoseconds when no thread ended meanwhile
    (a thread born meanwhile counts whole), else the process's clock ticks (which keep ended threads)."""
    if set(a.tasks) <= set(b.tasks):
        return (sum(b.tasks.values()) - sum(a.tasks.get(tid, 0) for tid in b.tasks)) / 1e9
    return b.stat - a.stat


# --- the stream: paced pod status changes -----------------------------------------------------------------


class Pacer:
    """Makes one change at a time, evenly spaced at ``rate`` per second from ``start`` (``_change``: which); ``behind`` is
    how late the latest change came."""

    def __init__(self) -> None:
        self.made = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.rate = 0.0
        self.behind = 0.0

    def start(self, rate: float) -> None:
        self.rate = rate
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="pacer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        t0 = time.monotonic()
        i = 0
        while not self._stop.is_set():
            due = t0 + i / self.rate
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            else:
                self.behind = max(self.behind, now - due)
            self._change(self.made)
            self.made += 1
            i += 1

    def _change(self, n: int) -> None:
        raise NotImplementedError

    def count(self) -> int:
        """The events made so far."""
        return self.made


class PodPacer(Pacer):
    """Changes one pod's status at a time (its Ready condition's ``lastProbeTime``), announcing each change on its own,
    as a real API server sees kubelets' status updates.

    Each pod's bytes are spliced (its resourceVersion and the probe time) rather than serialized again: the
    emulator's full update path costs ~150 us, which at 3,000/s would take half of a core from the readers."""

    def __init__(self, emu: Emulator) -> None:
        super().__init__()
        self.store = emu.store
        self.t_pod = self.store.type_of("v1", "Pod")
        with self.store.lock:
            pods = [s for s in self.store.objects[self.t_pod].values() if b'"lastProbeTime":null' in s.raw]
        self.pods = [(s, *s.raw.split(b'"lastProbeTime":null', 1)) for s in pods]

    def _change(self, n: int) -> None:
        store, t_pod = self.store, self.t_pod
        base, head, tail = self.pods[n % len(self.pods)]
        stamp = b'"lastProbeTime":"2026-11-22T%02d:%02d:%02dZ"' % (n // 3600 % 24, n // 60 % 60, n % 60)
        with store.lock:
            rv = store.next_rv()
            raw = b"".join((head.replace(b'"resourceVersion":"%d"' % base.rv, b'"resourceVersion":"%d"' % rv, 1), stamp, tail))
            store.insert_stored(Stored.from_parts(t_pod, namespace=base.namespace, name=base.name, uid=base.uid, rv=rv,
                                                  raw=raw, labels=base.labels, owner_uids=base.owner_uids,
                                                  node_name=base.fields["spec.nodeName"], phase="Running"),
                                event_type="MODIFIED")
            store.changed.notify_all()


class FramingProbe:
    """A raw reader of the pod watch in this process: counts events and HTTP chunks (the server's framing)."""

    def __init__(self, emu: Emulator, token: str) -> None:
        self.events = 0
        self.chunks = 0
        parts = urlsplit(emu.url)
        context = ssl.create_default_context(cadata=emu.ca_pem.decode()) if parts.scheme == "https" else None
        raw = socket.create_connection((parts.hostname, parts.port))
        self.sock = context.wrap_socket(raw, server_hostname=parts.hostname) if context else raw
        request = (f"GET /api/v1/pods?watch=true&resourceVersion={emu.resource_version}&timeoutSeconds=3600 HTTP/1.1\r\n"
                   f"Host: {parts.netloc}\r\nAuthorization: Bearer {token}\r\nAccept: application/json\r\n\r\n")
        self.sock.sendall(request.encode())
        threading.Thread(target=self._run, name="framing-probe", daemon=True).start()

    def _run(self) -> None:
        pending = b""
        in_body = False
        want = -1  # bytes of chunk data (plus CRLF) still to skip; -1: a size line is next
        try:
            while True:
                data = self.sock.recv(1 << 16)
                if not data:
                    return
                pending += data
                if not in_body:
                    end = pending.find(b"\r\n\r\n")
                    if end < 0:
                        continue
                    pending, in_body = pending[end + 4:], True
                while True:
                    if want < 0:
                        eol = pending.find(b"\r\n")
                        if eol < 0:
                            break
                        size = int(pending[:eol].split(b";")[0], 16)
                        pending, want = pending[eol + 2:], size + 2
                        self.chunks += 1
                        if size == 0:
                            return
                    take = min(want, len(pending))
                    self.events += pending[:take].count(b"\n")
                    pending, want = pending[take:], want - take
                    if want:
                        break
                    self.events -= 1  # the chunk's closing CRLF
                    want = -1
        except OSError:
            return

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


# --- the readers ------------------------------------------------------------------------------------------


class ChurnPacer(Pacer):
    """Changes one Deployment at a time through the emulator's update path (a patch): in turn its spec
    (``minReadySeconds``), its labels (``release``), its spec again, its annotations (``note``)."""

    def __init__(self, emu: Emulator) -> None:
        super().__init__()
        self.emu = emu
        t_deploy = emu.store.type_of("apps/v1", "Deployment")
        with emu.store.lock:
            self.deployments = [(s.namespace, s.name) for s in emu.store.objects[t_deploy].values()]

    def _change(self, n: int) -> None:
        namespace, name = self.deployments[n % len(self.deployments)]
        turn = n // len(self.deployments) % 4  # every Deployment gets the same turn, then the next
        patch = ({"spec": {"minReadySeconds": n % 1000 + 1}} if turn % 2 == 0 else
                 {"metadata": {"labels": {"release": f"r{n}"}}} if turn == 1 else
                 {"metadata": {"annotations": {"note": f"change {n}"}}})
        self.emu.patch("apps/v1", "Deployment", namespace, name, patch)


class IncidentPacer(Pacer):
    """Takes pods through what a person reads in an incident, one status write at a time through the emulator's
    status path, each pod in turn: a heartbeat (its Ready condition's ``lastProbeTime``: nothing to record), unready,
    crash-looping (``CrashLoopBackOff``, a restart, its last state ``Error 1``), an image pull failing
    (``ImagePullBackOff``), running and ready again, another heartbeat, OOM-killed and restarted; every fifth write is
    a Deployment's replica counts instead (its ready replicas one fewer, then back), with its condition's timestamp."""

    TURNS = 7

    def __init__(self, emu: Emulator) -> None:
        super().__init__()
        self.emu, self.store = emu, emu.store
        self.t_pod, self.t_deploy = self.store.type_of("v1", "Pod"), self.store.type_of("apps/v1", "Deployment")
        with self.store.lock:
            self.pods = [(s.namespace, s.name, [c["name"] for c in s.obj()["spec"]["containers"]])
                         for s in self.store.objects[self.t_pod].values()]
            self.deployments = [(s.namespace, s.name) for s in self.store.objects[self.t_deploy].values()]
        self.restarts: dict[str, int] = {}

    def _change(self, n: int) -> None:
        if n % 5 == 4:
            namespace, name = self.deployments[n // 5 % len(self.deployments)]
            ready = 10 - (n // 5 // len(self.deployments)) % 2
            stamp = "2026-11-22T%02d:%02d:%02dZ" % (n // 3600 % 24, n // 60 % 60, n % 60)
            self.store.patch(self.t_deploy, namespace, name, {"status": {"replicas": 10, "readyReplicas": ready, "availableReplicas": ready,
                             "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                                             "lastUpdateTime": stamp, "lastTransitionTime": stamp}]}}, subresource="status")
            return
        k = n - n // 5 - 1
        namespace, name, containers = self.pods[k % len(self.pods)]
        turn = k // len(self.pods) % self.TURNS
        restarts = self.restarts.get(name, 0) + (1 if turn in (2, 6) else 0)
        self.restarts[name] = restarts
        ready = turn in (0, 4, 5, 6)
        state, last = ({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s"}}, {"terminated": {"reason": "Error", "exitCode": 1}}) \
            if turn == 2 else ({"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}}, {}) if turn == 3 else \
            ({"running": {"startedAt": "2026-11-22T00:00:00Z"}}, {"terminated": {"reason": "OOMKilled", "exitCode": 137}} if turn == 6 else {})
        probe = "2026-11-22T%02d:%02d:%02dZ" % (n // 3600 % 24, n // 60 % 60, n % 60)
        status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False", "lastProbeTime": probe}],
                  "containerStatuses": [{"name": c, "ready": ready, "restartCount": restarts, "state": state, "lastState": last}
                                        for c in containers]}
        self.store.patch(self.t_pod, namespace, name, {"status": status}, subresource="status")


class MixedPacer(Pacer):
    """A churning cluster as its controllers and kubelets write it (the emulator's ``Workload``, in this process), over
    ``DEPLOYMENTS`` Deployments of ``REPLICAS`` pods in namespace ``NS`` whose pods become ready ``READY_AFTER`` s after
    they start (a readiness probe); every ``OOM_EVERY``-th one's pods are OOM-killed once, ``OOM_AFTER`` s after they start,
    and restarted. Actions, in turn (each on the next Deployment): a rollout (a new image: a ReplicaSet scaled up, pods
    created, bound, started, unready then ready, the old ones deleted), a scale-up by ``REPLICAS`` (readiness lagging),
    a container crash-looping (``CrashLoopBackOff``, a restart, its last state ``Error 1``: a kubelet's write; it runs
    ready again at the next crash turn), a Job whose first pod fails (retried, then ``Complete``; the Jobs before the
    last ``JOBS_KEPT`` deleted), heartbeats (the Ready condition's ``lastProbeTime`` of a few running pods: nothing to
    record), a rollout to an image that cannot be pulled (``ImagePullBackOff``), the scale-down, the rollback.

    ``rate`` is the API server's writes per second, every controller's and kubelet's included (what every reader sees
    as watch events): an action is made whenever the writes fall behind it. ``made`` counts those writes."""

    NS, DEPLOYMENTS, REPLICAS, READY_AFTER, OOM_EVERY, OOM_AFTER, JOBS_KEPT, TURNS = "churn", 24, 4, "2", 4, "3", 6, 8

    def __init__(self, emu: Emulator) -> None:
        super().__init__()
        from sktrace_emulator.builders import deployment_object
        from sktrace_emulator.workload import Workload
        self.emu, self.store = emu, emu.store
        t = self.store.type_of
        self.t_pod, self.t_deploy, self.t_job = t("v1", "Pod"), t("apps/v1", "Deployment"), t("batch/v1", "Job")
        self.store.create(t("v1", "Namespace"), {"metadata": {"name": self.NS}})
        rng = __import__("random").Random(5)
        self.names = [f"app-{i:02d}" for i in range(self.DEPLOYMENTS)]
        for i, name in enumerate(self.names):
            deploy = deployment_object(self.NS, name, replicas=self.REPLICAS, rng=rng)
            notes = {"sktrace.io/ready-after-seconds": self.READY_AFTER}
            if i % self.OOM_EVERY == 0:
                notes["sktrace.io/oom-after-seconds"] = self.OOM_AFTER
            deploy["spec"]["template"]["metadata"]["annotations"] = notes
            self.store.create(self.t_deploy, deploy)
        self.workload = Workload(emu, start_delay=0.3, job_seconds=(1.0, 1.0), interval=0.1)
        for _ in range(40):  # settled before the recorders start: every pod ready
            self.workload.step()
            time.sleep(0.1)
        self.crashed: tuple[str, str] | None = None
        self.jobs: list[str] = []
        self.actions = 0

    def start(self, rate: float) -> None:
        self.workload.start()
        super().start(rate)

    def stop(self) -> None:
        super().stop()
        self.workload.stop()

    def _run(self) -> None:
        t0, rv0 = time.monotonic(), self.store.rv
        while not self._stop.is_set():
            if self.store.rv - rv0 >= self.rate * (time.monotonic() - t0):
                time.sleep(0.005)
                continue
            self._change(self.actions)
            self.actions += 1

    def count(self) -> int:
        return self.store.rv

    def _change(self, n: int) -> None:
        turn, name = n % self.TURNS, self.names[n // self.TURNS % len(self.names)]
        try:
            if turn in (0, 5, 7):  # a rollout; to an image that cannot be pulled; rolled back
                image = f"registry.invalid/shop/{name}:{n}" if turn == 5 else f"registry.example.com/shop/{name}:{n}"
                self._set_image(name, image)
            elif turn in (1, 6):
                self.store.patch(self.t_deploy, self.NS, name, {"spec": {"replicas": self.REPLICAS * (2 if turn == 1 else 1)}})
            elif turn == 2:
                self._crash_loop()
            elif turn == 3:
                self._job(n)
            else:
                self._heartbeats(n)
        except Exception:  # noqa: BLE001 - an object the controllers deleted meanwhile: the next action
            pass

    def _set_image(self, name: str, image: str) -> None:
        stored = self.store.get(self.t_deploy, self.NS, name)
        if stored is not None:
            obj = stored.obj()
            obj["spec"]["template"]["spec"]["containers"][0]["image"] = image
            self.store.update(self.t_deploy, obj)

    def _running_pods(self) -> list[Stored]:
        with self.store.lock:
            return [s for s in self.store.objects[self.t_pod].values()
                    if s.namespace == self.NS and not s.deleting and s.fields.get("status.phase") == "Running"]

    def _crash_loop(self) -> None:
        """The pod crashed at the last turn runs ready again; another one crash-loops."""
        if self.crashed is not None:
            self._kubelet_write(*self.crashed, crash=False)
        pods = self._running_pods()
        if pods:
            pod = pods[self.actions % len(pods)]
            self.crashed = (pod.namespace, pod.name)
            self._kubelet_write(pod.namespace, pod.name, crash=True)

    def _kubelet_write(self, namespace: str, name: str, *, crash: bool) -> None:
        stored = self.store.get(self.t_pod, namespace, name)
        if stored is None or stored.deleting:
            return
        status = stored.obj().get("status") or {}
        for cs in status.get("containerStatuses") or []:
            if crash:
                cs.update(ready=False, restartCount=int(cs.get("restartCount", 0)) + 1, lastState={"terminated": {"reason": "Error", "exitCode": 1}},
                          state={"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s restarting failed container"}})
            else:
                cs.update(ready=True, state={"running": {"startedAt": "2026-11-22T00:00:00Z"}})
        for cond in status.get("conditions") or []:
            if cond.get("type") in ("Ready", "ContainersReady"):
                cond["status"] = "False" if crash else "True"
        self.store.patch(self.t_pod, namespace, name, {"status": status}, subresource="status")

    def _job(self, n: int) -> None:
        name = f"batch-{n}"
        self.store.create(self.t_job, {"metadata": {"name": name, "namespace": self.NS}, "spec": {"template": {
            "metadata": {"annotations": {"sktrace.io/fail-first": "1", "sktrace.io/run-seconds": "1"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "batch", "image": "shop/batch:1"}]}}}})
        self.jobs.append(name)
        while len(self.jobs) > self.JOBS_KEPT:
            self.store.delete(self.t_job, self.NS, self.jobs.pop(0))

    def _heartbeats(self, n: int) -> None:
        stamp = "2026-11-22T%02d:%02d:%02dZ" % (n // 3600 % 24, n // 60 % 60, n % 60)
        for pod in self._running_pods()[n % 7::7][:4]:
            status = pod.obj().get("status") or {}
            for cond in status.get("conditions") or []:
                if cond.get("type") == "Ready":
                    cond["lastProbeTime"] = stamp
            self.store.patch(self.t_pod, pod.namespace, pod.name, {"status": {"conditions": status.get("conditions") or []}}, subresource="status")


@dataclass
class Reader:
    name: str
    proc: subprocess.Popen[bytes]
    cache: str | None = None  # a recorder's cache (its watch_state tells how far it read)
    idle_ms_per_s: float = float("nan")
    per_event_us: dict[float, float] = field(default_factory=dict)
    kept_up: dict[float, str] = field(default_factory=dict)
    bytes_per_hour: dict[float, float] = field(default_factory=dict)  # a recorder's cache growth at each rate
    rss_mb: dict[float, float] = field(default_factory=dict)  # resident memory at the end of each rate's window


def start_recorder(name: str, kubeconfig: str, cache: str, source: str | None) -> Reader:
    env = {**os.environ, "KUBECONFIG": ""}
    if source is not None:
        env["PYTHONPATH"] = source
    proc = subprocess.Popen([PY, "-m", "kubectl_sktrace", "start", "--quiet", "--kubeconfig", kubeconfig, "--cache", cache],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            cwd=source or str(Path(__file__).resolve().parent.parent))
    return Reader(name, proc, cache)


def query(cache: str, sql: str) -> list[tuple[object, ...]]:
    try:
        conn = sqlite3.connect(f"file:{cache}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return []
    try:
        return conn.execute(sql).fetchall()
    except sqlite3.Error:
        return []
    finally:
        conn.close()


def wait_synced(reader: Reader, timeout: float = 600) -> None:
    assert reader.cache is not None
    deadline = time.time() + timeout
    while time.time() < deadline:
        if reader.proc.poll() is not None:
            raise SystemExit(f"{reader.name} exited: {reader.proc.stderr.read().decode() if reader.proc.stderr else ''}")
        if query(reader.cache, "SELECT synced FROM runs WHERE synced IS NOT NULL ORDER BY id DESC LIMIT 1"):
            return
        time.sleep(0.1)
    raise SystemExit(f"{reader.name} never synced")


def committed_rv(reader: Reader, gvk: str | None = "v1.Pod") -> int:
    """The recorder's committed watch position of ``gvk`` (None: the furthest of any kind)."""
    assert reader.cache is not None
    rows = query(reader.cache, "SELECT resource_version FROM watch_state" + (f" WHERE gvk = '{gvk}'" if gvk else ""))
    return max((int(str(row[0])) for row in rows), default=0)


def used_bytes(reader: Reader) -> int:
    """The bytes of the pages a recorder's cache uses, as a reader sees it (the log's pages included)."""
    assert reader.cache is not None
    rows = query(reader.cache, "SELECT page_count, freelist_count, page_size FROM pragma_page_count, pragma_freelist_count, "
                               "pragma_page_size")
    return int(rows[0][0] - rows[0][1]) * int(rows[0][2]) if rows else 0


def wait_quiet(pid: int, *, quiet_for: float = 2.0, timeout: float = 300) -> None:
    """Until the process used less than 1% of a core for ``quiet_for`` seconds (kubectl's initial list is done)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        a = cpu_mark(pid)
        time.sleep(quiet_for)
        if cpu_seconds_between(a, cpu_mark(pid)) < 0.01 * quiet_for:
            return
    raise SystemExit("kubectl never went quiet after its initial list")


def stop_reader(reader: Reader) -> None:
    if reader.proc.poll() is None:
        reader.proc.send_signal(signal.SIGINT)
        try:
            reader.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            reader.proc.kill()
            reader.proc.wait()


# --- phases -----------------------------------------------------------------------------------------------


def measure_idle(readers: list[Reader], seconds: float) -> None:
    marks = [cpu_mark(r.proc.pid) for r in readers]
    time.sleep(seconds)
    for reader, mark in zip(readers, marks):
        reader.idle_ms_per_s = cpu_seconds_between(mark, cpu_mark(reader.proc.pid)) / seconds * 1000


def measure_rate(readers: list[Reader], pacer: Pacer, probe: FramingProbe | None, emu: Emulator, rate: float,
                 args: argparse.Namespace) -> tuple[float, float, float]:
    """Returns the achieved rate, the events per chunk of the window, and this process's CPU share."""
    pacer.behind = 0.0
    pacer.start(rate)
    time.sleep(args.warmup)
    made0, t0 = pacer.count(), time.monotonic()
    chunks0, events0 = (probe.chunks, probe.events) if probe else (0, 0)
    recorders = [r for r in readers if r.cache is not None]
    # an incident's last write is a pod's or before it; a mixed workload's, any watched kind's
    gvk = "apps/v1.Deployment" if args.workload == "churn" else None if args.workload == "mixed" else "v1.Pod"
    caught: dict[str, float] = {}
    sizes = [used_bytes(r) for r in recorders]
    marks = [cpu_mark(r.proc.pid) for r in readers]
    self0 = time.process_time()
    time.sleep(args.window)
    ends = [cpu_mark(r.proc.pid) for r in readers]
    for reader in readers:
        reader.rss_mb[rate] = rss_mb(reader.proc.pid)
    made1, t1 = pacer.count(), time.monotonic()
    self1 = time.process_time()
    chunks1, events1 = (probe.chunks, probe.events) if probe else (0, 0)
    final_rv = emu.store.rv
    events = made1 - made0
    while len(caught) < len(recorders) and time.monotonic() - t1 < 5.0:
        for r in recorders:
            if r.name not in caught and committed_rv(r, gvk) >= final_rv:
                caught[r.name] = time.monotonic() - t1
        time.sleep(0.05)
    for reader, size in zip(recorders, sizes):
        reader.bytes_per_hour[rate] = (used_bytes(reader) - size) / (t1 - t0) * 3600
    pacer.stop()
    tail_marks = [cpu_mark(r.proc.pid) for r in readers]
    time.sleep(3.0)
    tails = [cpu_seconds_between(m, cpu_mark(r.proc.pid)) for r, m in zip(readers, tail_marks)]
    for reader, mark, end, tail in zip(readers, marks, ends, tails):
        used = cpu_seconds_between(mark, end)
        reader.per_event_us[rate] = used / events * 1e6
        if reader.cache is not None:
            late = caught.get(reader.name)
            reader.kept_up[rate] = f"committed {late:.1f}s after" if late is not None and late <= 1.0 else (
                f"LATE: committed {late:.1f}s after" if late is not None else "BEHIND: not caught up in 5s")
        else:
            per_s = used / (t1 - t0)
            behind_s = tail / per_s if per_s > 0 else 0.0
            reader.kept_up[rate] = "kept up" if behind_s < 0.5 else f"BEHIND: ~{behind_s:.1f}s of work left"
    chunk_ratio = (events1 - events0) / (chunks1 - chunks0) if probe and chunks1 > chunks0 else float("nan")
    return events / (t1 - t0), chunk_ratio, (self1 - self0) / (t1 - t0)


# --- main -------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rates", default="300,3000", help="events per second, comma-separated")
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--idle", type=float, default=20.0)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--baseline", metavar="DIR", help="a source tree of another version, run beside this one")
    parser.add_argument("--no-kubectl", action="store_true")
    parser.add_argument("--workload", choices=("pods", "churn", "incident", "mixed"), default="pods",
                        help="pods: pod status changes; churn: Deployments' spec, labels and annotations in turn; "
                             "incident: pods unready, crash-looping, failing pulls, OOM-killed and restarted, heartbeats between, "
                             "and Deployments' ready replicas; mixed: a churning cluster's controllers and kubelets (rollouts, crash loops, "
                             "scale-ups with lagging readiness, Jobs, OOM kills, failed pulls, heartbeats)")
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    if not args.no_kubectl and shutil.which("kubectl") is None:
        raise SystemExit("kubectl is needed on PATH (or --no-kubectl)")
    workdir = Path(tempfile.mkdtemp(prefix="bench-live-"))
    emu = Emulator(history_limit=2_000_000).start()
    readers: list[Reader] = []
    probe: FramingProbe | None = None
    try:
        kubeconfig = emu.write_kubeconfig(workdir / "kubeconfig")
        pods = build_large_state(emu, deployments=max(1, args.pods // 10), pods_per_deployment=10)
        readers.append(start_recorder("kubectl-sktrace start", kubeconfig, str(workdir / "now.db"), None))
        if args.baseline:
            readers.append(start_recorder(f"kubectl-sktrace start ({Path(args.baseline).name})", kubeconfig,
                                          str(workdir / "baseline.db"), str(Path(args.baseline).resolve())))
        for reader in readers:
            wait_synced(reader)
        if not args.no_kubectl:
            kubectl = subprocess.Popen(["kubectl", "--kubeconfig", kubeconfig, "get", "pods", "-A", "-w", "-o", "json"],
                                       stdout=subprocess.DEVNULL)
            readers.append(Reader("kubectl get pods -A -w -o json", kubectl))
            wait_quiet(kubectl.pid)
        probe = FramingProbe(emu, emu.token)
        time.sleep(3.0)  # the recorders' post-sync work (the reconciliation report) is done
        load = os.getloadavg()
        measure_idle(readers, args.idle)
        pacers = {"churn": ChurnPacer, "incident": IncidentPacer, "mixed": MixedPacer, "pods": PodPacer}
        pacer = pacers[args.workload](emu)
        results = [(rate, *measure_rate(readers, pacer, probe, emu, rate, args)) for rate in rates]
        load_after = os.getloadavg()
    finally:
        if probe is not None:
            probe.close()
        for reader in readers:
            stop_reader(reader)
        emu.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    changes = ("Deployments' spec, labels and annotations in turn (half of the changes to the spec)" if args.workload == "churn"
               else "an incident's status writes (2 in 7 of pods' a heartbeat only)" if args.workload == "incident"
               else "a churning cluster's writes (rollouts, crash loops, scale-ups, Jobs; rates are the API server's writes)"
               if args.workload == "mixed" else "status changes")
    print(f"Live recording: {pods:,} realistic pods (~6 KB of JSON each), {changes} paced evenly, TLS, one stream per reader")
    print(f"  warm-up {args.warmup:.0f}s, window {args.window:.0f}s per rate; idle over {args.idle:.0f}s after the initial sync")
    print(f"  load average before {load[0]:.2f}, after {load_after[0]:.2f} ({os.cpu_count()} cores); "
          "the emulator and the pacer run in the benchmark's process")
    for rate, achieved, per_chunk, own in results:
        chunks = "" if per_chunk != per_chunk else f"{per_chunk:.2f} events per HTTP chunk, "  # NaN: no pod event to count
        print(f"  at {rate:,.0f}/s: achieved {achieved:,.0f} events/s, {chunks}"
              f"emulator process {own * 100:.0f}% of a core")
    print()
    header = f"  {'reader':<44}{'idle ms CPU/s':>14}" + "".join(f"{f'{r:,.0f}/s us CPU/event':>24}" for r in rates)
    print(header)
    for reader in readers:
        row = f"  {reader.name:<44}{reader.idle_ms_per_s:>14.2f}" + "".join(f"{reader.per_event_us[r]:>24.0f}" for r in rates)
        print(row)
    print()
    for reader in readers:
        print(f"  {reader.name}: " + "; ".join(f"{r:,.0f}/s {reader.kept_up[r]}" for r in rates))
    print()
    for reader in (r for r in readers if r.cache is not None):
        print(f"  {reader.name}: cache " + "; ".join(f"{reader.bytes_per_hour[r] / 1e6:,.1f} MB/hour at {r:,.0f}/s" for r in rates))
    print()
    for reader in readers:
        print(f"  {reader.name}: RSS " + "; ".join(f"{reader.rss_mb[r]:,.0f} MB after {r:,.0f}/s" for r in rates))


if __name__ == "__main__":
    main()
