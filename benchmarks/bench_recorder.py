"""Recorder benchmarks, each beside kubectl reading the same emulated API server in the same run.

    .venv/bin/python benchmarks/bench_recorder.py [--deployments 5000] [--pods-per-deployment 10] [--events 100000]
        [--baseline main --repeat 3] [--sync-only] [--no-kubectl]

1. Ingest: the real recorder (``kubectl-sktrace start`` in its own process) and ``kubectl get pods -A --watch
   -o json > file`` both watch the emulator. Both are paused (SIGSTOP) while this process makes ``--events``
   pod status changes (realistic pods, full objects on every event), then resumed at the same instant, so
   each drains the same backlog as fast as it can and the generator's speed does not enter the figures. A
   reader's rate is the events divided by the time from the resume to the moment it had consumed the last
   one: for the recorder, when the cache's ``watch_state`` for pods reaches the final resourceVersion (it
   is written at each commit, so this counts the writes too); for kubectl, when its output stops growing.
   Beside the rates: the CPU time each reader used meanwhile (from ``/proc``), the recorder's per event, to
   tell a slower recorder from a machine that gave it less of its two cores.
2. Initial sync: a fresh cache, ``--deployments`` Deployments with their ReplicaSets and pods, the default
   config; time from launching ``kubectl-sktrace start`` to the run's ``synced`` mark, the recorder's CPU time
   and peak RSS at that mark, beside ``kubectl get pods,replicasets,deployments -A -o json > /dev/null`` (its
   wall, CPU and peak RSS) and, with ``--baseline REF``, the recorder of that git ref on the same server; each
   ``--repeat`` times in turn, median and spread. The documented per-cluster limits (150,000 pods under 15,000
   Deployments): ``--sync-only --no-kubectl --deployments 15000`` (kubectl needs ~7 GB per 50,000 pods).
3. Ingest ceiling without HTTP: the recorder's parser (orjson when installed) on the same realistic pod watch
   lines plus its ``Ingest.event`` and batched commits, in one thread; beside the parser alone and
   ``json.loads`` alone (what any Python reader pays). The emulator, a Python server, serves watch streams slower than the recorder consumes them, so
   this shows the recorder's own limit.
4. Memory: the recorder's peak RSS (``VmHWM``) after the initial sync, and after the ingest phase's events.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from sktrace_emulator import Emulator
from sktrace_emulator.bulk import build_large_state

PY = sys.executable


def _status_mb(pid: int, key: str) -> float:
    """A memory figure of ``/proc/<pid>/status`` (``VmRSS``, ``VmHWM``) in MB."""
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb(pid: int) -> float:
    return _status_mb(pid, "VmHWM")


def rss_mb(pid: int) -> float:
    return _status_mb(pid, "VmRSS")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process used so far."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def query(cache: str, sql: str) -> list[tuple[object, ...]]:
    try:  # read-only: never create the file before the recorder does (it refuses a cache others may read)
        conn = sqlite3.connect(f"file:{cache}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return []
    try:
        return conn.execute(sql).fetchall()
    except sqlite3.Error:
        return []
    finally:
        conn.close()


def start_recorder(kubeconfig: str, cache: str, *, source: str | None = None) -> subprocess.Popen[bytes]:
    """The recorder in its own process; ``source``: a directory holding another version's ``kubectl_sktrace``."""
    env = {**os.environ, "KUBECONFIG": ""}
    if source is not None:
        env["PYTHONPATH"] = source + os.pathsep + env.get("PYTHONPATH", "")
    # run outside the source tree: ``-m`` puts the working directory first on the path, before PYTHONPATH
    return subprocess.Popen([PY, "-m", "kubectl_sktrace", "start", "--quiet", "--kubeconfig", kubeconfig, "--cache", cache],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=os.path.dirname(cache))


def wait_synced(cache: str, proc: subprocess.Popen[bytes], timeout: float = 600) -> float:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"recorder exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        rows = query(cache, "SELECT synced FROM runs WHERE synced IS NOT NULL ORDER BY id DESC LIMIT 1")
        if rows:
            return time.time()
        time.sleep(0.02)
    raise SystemExit("recorder never synced")


def stop_recorder(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()


def checkout(ref: str, workdir: Path) -> tuple[str, str]:
    """``kubectl_sktrace`` as of git ``ref``, extracted under ``workdir``: (its directory, the commit)."""
    root = Path(__file__).resolve().parent.parent
    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", ref], check=True, capture_output=True, text=True).stdout.strip()
    target = workdir / f"src-{commit}"
    target.mkdir()
    archive = subprocess.run(["git", "-C", str(root), "archive", commit, "kubectl_sktrace"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return str(target), commit


def sync_once(kubeconfig: str, cache: str, *, source: str | None) -> tuple[subprocess.Popen[bytes], float, float, float]:
    """Launch a recorder on a fresh cache; at its sync mark: (the running process, wall s, CPU s, peak RSS MB)."""
    launched = time.time()
    proc = start_recorder(kubeconfig, cache, source=source)
    synced = wait_synced(cache, proc)
    return proc, synced - launched, cpu_seconds(proc.pid), peak_rss_mb(proc.pid)


def kubectl_once(kubeconfig: str) -> tuple[float, float, float]:
    """``kubectl get pods,replicasets,deployments -A -o json > /dev/null``: (wall s, CPU s, peak RSS MB)."""
    t = time.perf_counter()
    kubectl = subprocess.Popen(["kubectl", "--kubeconfig", kubeconfig, "get", "pods,replicasets,deployments", "-A", "-o", "json"],
                               stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(kubectl.pid, 0)
    kubectl.returncode = os.waitstatus_to_exitcode(status)
    if kubectl.returncode:
        raise SystemExit(f"kubectl failed with {kubectl.returncode}")
    return time.perf_counter() - t, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def spread(values: list[float], unit: str, digits: int = 2) -> str:
    """Median and the min-max spread of repeated measurements."""
    return f"{_median(values):8.{digits}f} {unit} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def bench_initial_sync(args: argparse.Namespace, workdir: Path) -> tuple[subprocess.Popen[bytes], str, str, Emulator]:
    """The recorders (this tree, and ``--baseline`` when given) and kubectl, each ``--repeat`` times in turn
    against the same emulator; the last run of this tree keeps recording for the sections that follow."""
    emu = Emulator(history_limit=2_000_000).start()  # TLS: kubectl sends tokens only over https
    kubeconfig = str(workdir / "kubeconfig")
    emu.write_kubeconfig(kubeconfig)
    t = time.perf_counter()
    pods = build_large_state(emu, deployments=args.deployments, pods_per_deployment=args.pods_per_deployment)
    print(f"built {args.deployments} Deployments, their ReplicaSets and {pods} pods in {time.perf_counter() - t:.1f}s")
    variants: list[tuple[str, str | None]] = []
    if args.baseline:
        source, commit = checkout(args.baseline, workdir)
        variants.append((f"recorder at {args.baseline} ({commit})", source))
    variants.append(("recorder, this tree", None))
    figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name, _ in [("kubectl", None), *variants]}
    loads = [os.getloadavg()[0]]
    proc: subprocess.Popen[bytes] | None = None
    cache = ""
    for attempt in range(args.repeat):
        if not args.no_kubectl:
            figures["kubectl"].append(kubectl_once(kubeconfig))
        for name, source in variants:
            cache = str(workdir / f"sync-{attempt}-{len(figures[name])}-{source is None}.db")
            proc, wall, cpu, rss = sync_once(kubeconfig, cache, source=source)
            figures[name].append((wall, cpu, rss))
            if not (source is None and attempt == args.repeat - 1):
                stop_recorder(proc)
        loads.append(os.getloadavg()[0])
    assert proc is not None
    print()
    print(f"Initial sync: {pods:,} pods under {args.deployments:,} Deployments and ReplicaSets, fresh cache, default config; "
          f"median (min-max) of {args.repeat} runs each, in turn; 1-minute load average {min(loads):.2f}-{max(loads):.2f}")
    print(f"  {'':44} {'wall (launch -> synced)':>28} {'CPU (user+sys)':>28} {'peak RSS':>30}")
    for name, rows in figures.items():
        if rows:
            label = "kubectl get pods,replicasets,deployments -A -o json" if name == "kubectl" else name
            print(f"  {label:44} {spread([r[0] for r in rows], 's'):>28} {spread([r[1] for r in rows], 's'):>28} "
                  f"{spread([r[2] for r in rows], 'MB', 0):>30}")
    ours = [r[0] for r in figures["recorder, this tree"]]
    if args.baseline:
        base = [r[0] for r in figures[variants[0][0]]]
        print(f"  wall, this tree / {args.baseline}: {_median(ours) / _median(base):.2f}x (target <= 0.6x)")
    if figures["kubectl"]:
        print(f"  wall, this tree / kubectl: {_median(ours) / _median([r[0] for r in figures['kubectl']]):.2f}x (target <= 0.15x)")
    print(f"  recorder peak RSS (this tree) {max(r[2] for r in figures['recorder, this tree']):.0f} MB at most (target <= 300 MB)")
    return proc, cache, kubeconfig, emu


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def bench_ingest(args: argparse.Namespace, workdir: Path, proc: subprocess.Popen[bytes], cache: str, kubeconfig: str,
                 emu: Emulator) -> None:
    store = emu.store
    t_pod = store.type_of("v1", "Pod")
    out_path = workdir / "kubectl-watch.json"
    with open(out_path, "wb") as out:
        kubectl = subprocess.Popen(["kubectl", "--kubeconfig", kubeconfig, "get", "pods", "-A", "--watch", "-o", "json"], stdout=out)
        # wait for kubectl's initial list to be written
        last, stable_since = -1, time.time()
        while time.time() - stable_since < 2.0:
            size = out_path.stat().st_size
            if size != last:
                last, stable_since = size, time.time()
            time.sleep(0.05)
        pods = [s for s in store.current(t_pod, _all())[1]][: args.pods_touched]
        objs = [s.obj() for s in pods]
        base_size = out_path.stat().st_size
        rss_before = rss_mb(proc.pid)
        sizes: list[tuple[float, int]] = []
        done = threading.Event()

        def watch_file() -> None:
            prev = base_size
            while not done.is_set():
                size = out_path.stat().st_size
                if size != prev:
                    sizes.append((time.time(), size))
                    prev = size
                time.sleep(0.005)

        poller = threading.Thread(target=watch_file, daemon=True)
        poller.start()
        start_rv = store.rv
        os.kill(proc.pid, signal.SIGSTOP)
        os.kill(kubectl.pid, signal.SIGSTOP)
        gen_start = time.time()
        made = make_backlog(emu, objs, args.events, start=0)
        gen_end = time.time()
        final_rv = store.rv
        resume = time.time()
        cpu_before = cpu_seconds(proc.pid), cpu_seconds(kubectl.pid)
        os.kill(proc.pid, signal.SIGCONT)
        os.kill(kubectl.pid, signal.SIGCONT)
        recorder_done = wait_committed(cache, final_rv)
        recorder_cpu = cpu_seconds(proc.pid) - cpu_before[0]
        kubectl_cpu_mid = cpu_seconds(kubectl.pid) - cpu_before[1]
        # kubectl: done when its output has not grown for 3 s (or it ended: a watch it could not resume)
        while kubectl.poll() is None and time.time() - (sizes[-1][0] if sizes else resume) < (3.0 if sizes else 60.0):
            time.sleep(0.1)
        done.set()
        kubectl_exit = kubectl.poll()
        kubectl_done = sizes[-1][0] if sizes else float("nan")
        kubectl_bytes = (sizes[-1][1] if sizes else base_size) - base_size
        kubectl_cpu = cpu_seconds(kubectl.pid) - cpu_before[1] if kubectl_exit is None else float("nan")
        if kubectl_exit is None:
            kubectl.terminate()
        kubectl.wait()
    gen_s = gen_end - gen_start
    rec_s = (recorder_done or float("nan")) - resume
    kub_s = kubectl_done - resume
    rss_after = rss_mb(proc.pid)
    peak = peak_rss_mb(proc.pid)
    raw = subprocess.run([PY, "-c", _RAW_READER, kubeconfig, str(start_rv), str(final_rv)], capture_output=True, text=True, timeout=600)
    raw_line = raw.stdout.strip() or raw.stderr.strip().splitlines()[-1]
    print()
    print(f"Ingest: a backlog of {made:,} pod status events (full realistic pods), drained by both readers at once")
    print(f"  (generated in {gen_s:.1f}s while both readers were paused)")
    ended = "" if kubectl_exit is None else f" (kubectl exited with {kubectl_exit}; it wrote {kubectl_bytes:,} bytes of events)"
    print(f"  kubectl get pods -A --watch -o json > file            {made / kub_s:10,.0f} events/s{ended}")
    print(f"  kubectl-sktrace start (events consumed and committed) {made / rec_s:10,.0f} events/s   "
          f"{(made / rec_s) / (made / kub_s):.2f}x kubectl (target >= 0.5x, >= 10,000/s)")
    print(f"  CPU while the recorder drained: recorder {recorder_cpu:.2f} s ({recorder_cpu / made * 1e6:.0f} us/event), "
          f"kubectl {kubectl_cpu_mid:.2f} s, of {rec_s:.2f} s x 2 cores; kubectl in all {kubectl_cpu:.1f} s "
          f"({kubectl_cpu / made * 1e6:.0f} us/event)")
    alone_s, alone_cpu = bench_ingest_alone(args, proc, cache, emu, objs)
    print(f"  kubectl-sktrace start alone, afterwards (same backlog, kubectl not running): {made / alone_s:,.0f} events/s, "
          f"recorder CPU {alone_cpu / made * 1e6:.0f} us/event")
    print(f"  raw Kube.watch reader alone, afterwards (no rules, no writes): {raw_line}")
    print(f"  watch lines parsed with {_parser()}")
    print(f"  recorder RSS before / after the events                {rss_before:7.1f} / {rss_after:7.1f} MB; peak {peak:.1f} MB")


def make_backlog(emu: Emulator, objs: list[dict], events: int, *, start: int) -> int:
    """``events`` pod status updates (a probe time changes), cycling through ``objs``; returns the count."""
    store, t_pod = emu.store, emu.store.type_of("v1", "Pod")
    made = 0
    while made < events:
        for obj in objs:
            n = start + made
            conditions = obj.setdefault("status", {}).setdefault("conditions", [])
            stamp = f"2026-11-22T{10 + n // 3600 % 10:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z"
            if conditions:
                conditions[0]["lastProbeTime"] = stamp
            else:
                conditions.append({"type": "Ready", "status": "True", "lastProbeTime": stamp})
            obj["metadata"].pop("resourceVersion", None)
            store.update(t_pod, obj, subresource="status")
            made += 1
            if made >= events:
                break
    return made


def wait_committed(cache: str, final_rv: int, timeout: float = 600) -> float | None:
    """When the recorder committed the pod watch position ``final_rv`` (its ``watch_state`` time), or None."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        rows = query(cache, "SELECT resource_version, updated FROM watch_state WHERE gvk = 'v1.Pod'")
        if rows and int(str(rows[0][0])) >= final_rv:
            return float(rows[0][1])  # type: ignore[arg-type]
        time.sleep(0.05)
    return None


def bench_ingest_alone(args: argparse.Namespace, proc: subprocess.Popen[bytes], cache: str, emu: Emulator, objs: list[dict]) -> tuple[float, float]:
    """The same backlog drained by the recorder with the machine to itself: seconds from resume to commit,
    and the recorder's CPU seconds meanwhile."""
    os.kill(proc.pid, signal.SIGSTOP)
    made = make_backlog(emu, objs, args.events, start=args.events)
    final_rv = emu.store.rv
    resume = time.time()
    cpu = cpu_seconds(proc.pid)
    os.kill(proc.pid, signal.SIGCONT)
    done = wait_committed(cache, final_rv)
    cpu = cpu_seconds(proc.pid) - cpu
    return ((done or float("nan")) - resume if made else float("nan")), cpu


def commit_if_due(ingest: Any, rec: Any, opened: float) -> float:
    """Commit the open batch when it is older than the recorder's interval (as its loop does); returns
    when the current batch was opened."""
    if time.perf_counter() - opened <= 0.25:
        return opened
    ingest.before_commit(time.time())
    rec.commit()
    rec.begin()
    return time.perf_counter()


def bench_core(emu: Emulator, workdir: Path, events: int) -> None:
    import gc
    import json

    from kubectl_sktrace.model import POD, REPLICASET
    from kubectl_sktrace.record.ingest import Ingest
    from kubectl_sktrace.record.session import GC_THRESHOLD
    from kubectl_sktrace.store import open_cache
    from kubectl_sktrace.store.recording import Recording
    from kubectl_sktrace.tracerconfig import default_config

    pods = [s.obj() for s in emu.store.current(emu.store.type_of("v1", "Pod"), _all())[1]][:5000]
    lines = [json.dumps({"type": "MODIFIED", "object": p}).encode() for p in pods]
    from kubectl_sktrace.kube.stream import loads as parse

    t = time.perf_counter()
    for i in range(events):
        json.loads(lines[i % len(lines)])
    loads_s = time.perf_counter() - t
    t = time.perf_counter()
    for i in range(events):
        parse(lines[i % len(lines)])
    parse_s = time.perf_counter() - t
    cache = open_cache(workdir / "core.db", create=True)
    rec = Recording(cache)
    run = rec.begin_run(started=time.time(), pid=os.getpid(), config_yaml="")
    ingest = Ingest(recording=rec, run_id=run, config=default_config(), owner_kinds={REPLICASET},
                    fetch_owner=lambda key: None, gap_start=None)
    rec.begin()
    ingest.relist_begin(POD, time.time())
    ingest.relist_page(POD, [json.loads(line)["object"] for line in lines], time.time())
    ingest.relist_end(POD, "1", time.time())
    rec.commit()
    saved = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, saved[1], saved[2])
    t = time.perf_counter()
    rec.begin()
    opened = t
    for i in range(events):
        event = parse(lines[i % len(lines)])
        ingest.event(POD, event["type"], event["object"], time.time())
        opened = commit_if_due(ingest, rec, opened)
    ingest.before_commit(time.time())
    rec.commit()
    core_s = time.perf_counter() - t
    gc.set_threshold(*saved)
    gc.unfreeze()
    cache.close()
    print()
    print(f"Ingest ceiling without HTTP ({events:,} realistic pod watch lines of ~{len(lines[0]) // 1000} KB, one thread)")
    print(f"  json.loads alone                                      {events / loads_s:10,.0f} events/s")
    print(f"  {_parser() + ' alone':<52}  {events / parse_s:10,.0f} events/s")
    print(f"  {_parser() + ' + recorder rules + batched commits':<52}  {events / core_s:10,.0f} events/s (target >= 10,000/s)")


def bench_long_run(emu: Emulator, workdir: Path, events: int) -> None:
    """The recorder's own memory across a long history: Ingest fed ``events`` events in this process (no HTTP),
    three pod status changes for each Deployment spec change, so a quarter of them become stored events."""
    import gc
    import json

    from kubectl_sktrace.model import GVK, POD, REPLICASET
    from kubectl_sktrace.record.ingest import Ingest
    from kubectl_sktrace.record.session import GC_THRESHOLD
    from kubectl_sktrace.store import open_cache
    from kubectl_sktrace.store.recording import Recording
    from kubectl_sktrace.tracerconfig import default_config

    deploy_gvk = GVK("apps", "v1", "Deployment")
    pods = [s.obj() for s in emu.store.current(emu.store.type_of("v1", "Pod"), _all())[1]][:5000]
    deployments = [s.obj() for s in emu.store.current(emu.store.type_of("apps/v1", "Deployment"), _all())[1]][:1000]
    pod_lines = [json.dumps({"type": "MODIFIED", "object": p}).encode() for p in pods]
    deploy_lines = []
    for i, d in enumerate(deployments * 7):
        d = json.loads(json.dumps(d))
        d["spec"]["replicas"] = i // len(deployments) + 1
        deploy_lines.append(json.dumps({"type": "MODIFIED", "object": d}).encode())
    cache = open_cache(workdir / "long.db", create=True)
    rec = Recording(cache)
    run = rec.begin_run(started=time.time(), pid=os.getpid(), config_yaml="")
    ingest = Ingest(recording=rec, run_id=run, config=default_config(), owner_kinds={REPLICASET},
                    fetch_owner=lambda key: None, gap_start=None)
    saved = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, saved[1], saved[2])
    marks: list[tuple[int, float, int]] = []
    t = time.perf_counter()
    opened = t
    rec.begin()
    for i in range(events):
        if i % 4 == 3:
            event = json.loads(deploy_lines[(i // 4) % len(deploy_lines)])
            ingest.event(deploy_gvk, event["type"], event["object"], time.time())
        else:
            event = json.loads(pod_lines[i % len(pod_lines)])
            ingest.event(POD, event["type"], event["object"], time.time())
        opened = commit_if_due(ingest, rec, opened)
        if (i + 1) % (events // 10) == 0:
            marks.append((i + 1, rss_mb(os.getpid()), ingest.events_recorded))
    ingest.before_commit(time.time())
    rec.commit()
    elapsed = time.perf_counter() - t
    gc.set_threshold(*saved)
    size = os.path.getsize(workdir / "long.db") + (os.path.getsize(str(workdir / "long.db") + "-wal") if os.path.exists(str(workdir / "long.db") + "-wal") else 0)
    cache.close()
    print()
    print(f"Long run without HTTP: {events:,} watch events into the recorder ({ingest.events_recorded:,} stored), "
          f"{events / elapsed:,.0f} events/s, cache {size / 1e6:.0f} MB")
    first, last = marks[0], marks[-1]
    print(f"  process RSS after {first[0]:,} events {first[1]:7.1f} MB; after {last[0]:,} events {last[1]:7.1f} MB "
          f"(growth {last[1] - first[1]:+.1f} MB; the emulator with its objects lives in this process too)")


_RAW_READER = '''
import sys, threading, time
from kubectl_sktrace.kube.kubeconfig import resolve_target
from kubectl_sktrace.kube.client import Kube
from kubectl_sktrace.model import POD
kube = Kube.connect(resolve_target(kubeconfig=sys.argv[1], context=None))
resource = kube.discover([POD])[0][POD]
final = int(sys.argv[3])
n, t = 0, time.perf_counter()
for event in kube.watch(resource, namespace=None, resource_version=sys.argv[2], timeout_seconds=600, stop=threading.Event()):
    if event.get("type") == "BOOKMARK":
        continue
    n += 1
    if int(event["object"]["metadata"]["resourceVersion"]) >= final:
        break
print(f"{n / (time.perf_counter() - t):,.0f} events/s over {n:,} events (the emulator's serving ceiling for one reader)")
'''


def _parser() -> str:
    from kubectl_sktrace.kube import stream

    return f"{stream.loads.__module__}.loads"


def _all():  # type: ignore[no-untyped-def]
    from sktrace_emulator.selectors import Filter

    return Filter()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--deployments", type=int, default=5000)
    parser.add_argument("--pods-per-deployment", type=int, default=10)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--pods-touched", type=int, default=5000, help="pods cycled through by the ingest generator")
    parser.add_argument("--long-events", type=int, default=1_000_000, help="events of the long in-process run (0: skip)")
    parser.add_argument("--baseline", metavar="REF", help="also time the initial sync of the recorder as of this git ref")
    parser.add_argument("--repeat", type=int, default=1, help="initial syncs of each recorder (and kubectl), in turn")
    parser.add_argument("--sync-only", action="store_true", help="only the initial-sync section")
    parser.add_argument("--no-kubectl", action="store_true", help="no kubectl beside the initial syncs (large clusters)")
    args = parser.parse_args()
    if shutil.which("kubectl") is None and not args.no_kubectl:
        raise SystemExit("kubectl is needed on PATH for the side-by-side figures")
    workdir = Path(tempfile.mkdtemp(prefix="bench-recorder-"))
    proc, cache, kubeconfig, emu = bench_initial_sync(args, workdir)
    try:
        if args.sync_only:
            return
        bench_ingest(args, workdir, proc, cache, kubeconfig, emu)
        bench_core(emu, workdir, min(args.events, 50_000))
        if args.long_events:
            bench_long_run(emu, workdir, args.long_events)
    finally:
        stop_recorder(proc)
        emu.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
