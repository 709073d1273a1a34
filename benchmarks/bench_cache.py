"""A cache of millions of events: status, export windows across the history, and prune, on the CLI.

    python benchmarks/bench_cache.py --dir /var/tmp/sktrace-bench                       # 10M events, kept for reuse
    python benchmarks/bench_cache.py --dir /var/tmp/sktrace-bench --before /tmp/base    # and the code at /tmp/base beside
    python benchmarks/bench_cache.py --dir DIR --events 3000000 --weeks 24              # 3x the history of 1M over 8 weeks, same rate

The fixture (built once into ``--dir``, reused while its size matches; a few minutes for 10M events):

- 8 weeks of history (``--weeks``) in runs of about 3.5 days separated by gaps of 1-8 hours; each restart records a few
  deletions ``inferred`` at its start, as a relist does.
- Tracked kinds only (pods are no events): 5,000 Deployments in 50 namespaces (the emulator's builders,
  ~2.8 KB of JSON each, four versions per Deployment in turn: rollouts and scaling), rolled or scaled ~2 times
  a second in all; 60 CronJobs (applied once); a Job created every 20th event, owned by one of the CronJobs,
  deleted 360 Job-creations later (~1 h): ~500k distinct Jobs, as CronJobs leave behind.
- ``pods`` rows: one per Job and one per 4th Deployment event, each with a lifecycle (a pod that outlived the
  history is live and running).
- Bodies are encoded once per (object, version) with ``store.bodies.encode_body`` (with the code under test's
  schema 0006, the references and DaemonSet owner that the recorder stores beside them) and the same blob is
  stored in every row of that version (Jobs share their CronJob's template body): the bytes and their shape
  are real, only their variety is smaller. Rows go in with direct SQL in large transactions, the secondary
  indexes dropped during the load and created again with the schema's own statements afterwards.

Each figure comes from a child process (``kubectl sktrace`` on the CLI for status and prune, ``export_trace``
in a fresh interpreter for exports), with the CPU seconds of that process beside its wall time. The
reference, measured in the same run: ``kubectl sktrace version`` (the CLI's start-up) beside status, and
beside each export the floor of reading that window's rows with one plain SQL query; and the part of the export
that reads the state at the window's start (``history.state_at``, measured alone after it).
With ``--before DIR`` (a source tree of another version, e.g. ``git archive main | tar -x -C DIR``) the same
figures are taken with that code first; the cache is then migrated by the current code (timed) and measured
again. Prune runs last, on a copy of the cache (one per code version).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
T0 = 1_788_220_800  # 2026-09-01T00:00:00Z
WEEKS = 8
DEPLOYMENTS, NAMESPACES, CRONJOBS, VERSIONS = 5000, 50, 60, 4
JOB_EVERY, JOB_LIFETIME = 20, 360
CONFIG_YAML = """trackedObjects:
  apps/v1.Deployment:
    podSpecTemplatePaths:
    - /spec/template
    trackLifecycle: true
  apps/v1.StatefulSet:
    podSpecTemplatePaths:
    - /spec/template
    trackLifecycle: true
  batch/v1.Job:
    podSpecTemplatePaths:
    - /spec/template
    trackLifecycle: true
  batch/v1.CronJob:
    podSpecTemplatePaths:
    - /spec/jobTemplate/spec/template
    trackLifecycle: true
"""


def plan_runs(rng: random.Random) -> list[tuple[float, float]]:
    """``(started, stopped)`` of each run: ~3.5 days each, gaps of 1-8 h, over ``WEEKS`` weeks."""
    runs, t, end = [], float(T0), T0 + WEEKS * 7 * 86400
    while t < end:
        stop = min(end, t + rng.uniform(3.0, 4.0) * 86400)
        runs.append((t, stop))
        t = stop + rng.uniform(1, 8) * 3600
    return runs


def _bodies(rng: random.Random) -> tuple[dict, dict]:
    """Encoded blobs and spec hashes: per (Deployment, version), and per CronJob (its Job's body too)."""
    from kubectl_sktrace.store import to_db_hash
    from kubectl_sktrace.store.bodies import encode_body
    from kubectl_sktrace.trace.hashing import spec_hash
    from sktrace_emulator.builders import deployment_object, sample_pod_template

    deployments = {}
    for i in range(DEPLOYMENTS):
        base = deployment_object(f"ns-{i % NAMESPACES}", f"app-{i}", replicas=2, rng=rng)
        base.update(apiVersion="apps/v1", kind="Deployment")
        base["metadata"]["annotations"] = {"team": f"team-{i % 17}"}
        for v in range(VERSIONS):
            body = json.loads(json.dumps(base))
            body["spec"]["replicas"] = 2 + v % 3
            body["spec"]["template"]["spec"]["containers"][0]["image"] = f"registry.example.com/team/app-{i}:2.{v}"
            body["status"] = {"replicas": 2, "readyReplicas": 2, "observedGeneration": v + 1}
            deployments[i, v] = (to_db_hash(spec_hash(body["spec"])), *encode_body(body), *_facts(body, "/spec/template"))
    jobs = {}
    for c in range(CRONJOBS):
        ns, name = f"ns-{c % NAMESPACES}", f"cron-{c}"
        template = sample_pod_template(rng, app=name)
        template["spec"]["restartPolicy"] = "Never"
        cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name, "namespace": ns, "annotations": {}},
                "spec": {"schedule": "*/10 * * * *", "jobTemplate": {"spec": {"template": template}}}}
        job = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": f"{name}-0", "namespace": ns, "annotations": {},
                            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": name, "uid": f"uid-cron-{c}",
                                                 "controller": True, "blockOwnerDeletion": True}]},
               "spec": {"completions": 1, "parallelism": 1, "backoffLimit": 6, "template": template},
               "status": {"succeeded": 1}}
        jobs[c] = ((to_db_hash(spec_hash(cron["spec"])), *encode_body(cron), *_facts(cron, "/spec/jobTemplate/spec/template")),
                   (to_db_hash(spec_hash(job["spec"])), *encode_body(job), *_facts(job, "/spec/template")))
    return deployments, jobs


def _facts(body: dict, path: str) -> tuple:
    """``events.refs`` and ``events.daemonset`` as the recorder stores them (schema 0006); none for older code."""
    try:
        from kubectl_sktrace.store.bodies import refs_to_json
        from kubectl_sktrace.trace.references import distinct_references
        from kubectl_sktrace.trace.sanitize import is_daemonset_owned
    except ImportError:
        return ()
    return refs_to_json(distinct_references(body, [path])), int(is_daemonset_owned(body))


_EVENT_SQL = ("INSERT INTO events (ts, recv, run_id, gvk, namespace, name, uid, op, inferred, spec_hash, owner_chain, body, status) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
_EVENT_SQL_0006 = _EVENT_SQL.replace("body, status)", "body, status, refs, daemonset)").replace("?, ?)", "?, ?, ?, ?)")
_POD_SQL = ("INSERT INTO pods (uid, namespace, name, owner_gvk, owner_namespace, owner_name, stable_hash, start_ts, end_ts, live, first_seen) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
DEPLOY, JOB, CRON = "apps/v1.Deployment", "batch/v1.Job", "batch/v1.CronJob"


def _secondary_indexes(conn) -> list[tuple[str, str]]:
    return conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN ('events', 'pods')").fetchall()


def build(path: Path, events: int) -> None:
    """The fixture (see the module docstring), with the cache's own schema; direct SQL for the rows."""
    import sqlite3

    from kubectl_sktrace.store import open_cache

    rng = random.Random(7)
    runs = plan_runs(rng)
    deployments, jobs = _bodies(rng)
    none = (None, None)[:len(deployments[0, 0]) - 3]  # deletions: no facts
    with open_cache(path, create=True) as cache:
        with cache.transaction() as conn:
            for key, value in (("cluster.server", "https://bench.example:6443"), ("cluster.uid", "bench"), ("cluster.context", "bench"),
                               ("scope.namespace", "")):
                cache.set_meta(key, value)
            for n, (started, stopped) in enumerate(runs, start=1):
                conn.execute("INSERT INTO runs (id, started, synced, stopped, clean, pid, config) VALUES (?, ?, ?, ?, 1, 1, ?)",
                             (n, started, started + 20, stopped, CONFIG_YAML))
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("PRAGMA cache_size = -200000")
    indexes = _secondary_indexes(conn)
    for name, _ in indexes:
        conn.execute(f"DROP INDEX {name}")
    recording = sum(b - a for a, b in runs)
    step = recording / events
    versions = [0] * DEPLOYMENTS
    ev_rows: list[tuple] = []
    pod_rows: list[tuple] = []
    run_index, offset = 0, 0.0  # recording seconds before the current run
    last_ts = int(runs[-1][1])
    job_count = 0

    def flush() -> None:
        conn.execute("BEGIN")
        conn.executemany(_EVENT_SQL if len(ev_rows[0]) == 13 else _EVENT_SQL_0006, ev_rows)
        conn.executemany(_POD_SQL, pod_rows)
        conn.execute("COMMIT")
        ev_rows.clear()
        pod_rows.clear()

    for n in range(events):
        at = n * step
        while at >= offset + runs[run_index][1] - runs[run_index][0]:
            offset += runs[run_index][1] - runs[run_index][0]
            run_index += 1
        started = runs[run_index][0]
        recv = started + (at - offset)
        ts, run_id = int(recv), run_index + 1
        if n == 0:
            for c in range(CRONJOBS):
                h, body, status, *facts = jobs[c][0]
                ev_rows.append((ts, recv, run_id, CRON, f"ns-{c % NAMESPACES}", f"cron-{c}", f"uid-cron-{c}", 0, 0, h, None, body, status, *facts))
        if recv - started < 1 and run_index > 0:  # a restart's relist: what went while offline, inferred
            for i in rng.sample(range(DEPLOYMENTS), 3):
                ev_rows.append((ts, recv, run_id, DEPLOY, f"ns-{i % NAMESPACES}", f"app-{i}", f"uid-app-{i}", 1, 1, None, None, None, None, *none))
        if n % JOB_EVERY == 0:
            c = job_count % CRONJOBS
            ns, name = f"ns-{c % NAMESPACES}", f"cron-{c}-{job_count}"
            h, body, status, *facts = jobs[c][1]
            chain = json.dumps([[CRON, ns, f"cron-{c}"]], separators=(",", ":"))
            ev_rows.append((ts, recv, run_id, JOB, ns, name, f"uid-job-{job_count}", 0, 0, h, chain, body, status, *facts))
            pod_rows.append((f"uid-pod-job-{job_count}", ns, f"{name}-x", JOB, ns, name, h, ts + 2, ts + 62, 0, recv))
            job_count += 1
        elif n % JOB_EVERY == JOB_EVERY // 2 and job_count > JOB_LIFETIME:
            gone = job_count - JOB_LIFETIME
            c = gone % CRONJOBS
            ev_rows.append((ts, recv, run_id, JOB, f"ns-{c % NAMESPACES}", f"cron-{c}-{gone}", f"uid-job-{gone}", 1, 0, None, None, None, None, *none))
        else:
            i = rng.randrange(DEPLOYMENTS)
            versions[i] = v = (versions[i] + 1) % VERSIONS
            h, body, status, *facts = deployments[i, v]
            ns, name = f"ns-{i % NAMESPACES}", f"app-{i}"
            ev_rows.append((ts, recv, run_id, DEPLOY, ns, name, f"uid-app-{i}", 0, 0, h, None, body, status, *facts))
            if n % 4 == 1:
                end = ts + rng.randrange(600, 2 * 86400)
                live = end > last_ts
                pod_rows.append((f"uid-pod-{n}", ns, f"{name}-{n}", DEPLOY, ns, name, h, ts + 3, None if live else end, int(live), recv))
        if len(ev_rows) >= 50_000:
            flush()
    flush()
    conn.execute("INSERT INTO objects (gvk, namespace, name, uid, spec_hash) "
                 "SELECT gvk, namespace, name, uid, spec_hash FROM events WHERE id IN (SELECT max(id) FROM events WHERE gvk = ? GROUP BY name) AND op = 0",
                 (DEPLOY,))
    for _, sql in indexes:
        conn.execute(sql)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.close()


def _env(code: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(code))
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    return env


def _timed(cmd: list[str], env: dict[str, str], *, timeout: float) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + system, of the child and its children) of a command, and its stdout."""
    before = os.times()
    started = time.perf_counter()
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=True).stdout
    except subprocess.TimeoutExpired:
        return float("inf"), float("inf"), ""
    wall = time.perf_counter() - started
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system), out


def child_export(cache_path: str, start: int, end: int) -> None:
    import resource
    import sqlite3

    from kubectl_sktrace.export.options import ExportFilters
    from kubectl_sktrace.export.window import export_trace
    from kubectl_sktrace.store import history, open_cache_readonly

    conn = sqlite3.connect(f"file:{cache_path}?mode=ro", uri=True)
    t = time.process_time()
    rows = 0
    for _ in conn.execute("SELECT id, ts, gvk, namespace, name, op, body FROM events WHERE ts >= ? AND ts < ? ORDER BY ts, id", (start, end)):
        rows += 1
    floor = time.process_time() - t
    conn.close()
    with open_cache_readonly(cache_path) as cache, open(os.devnull, "wb") as stream:
        t = time.process_time()
        w = time.perf_counter()
        report = export_trace(cache, start_ts=start, end_ts=end, filters=ExportFilters(), keep_status=False, fmt="sktrace", stream=stream)
        cpu, wall = time.process_time() - t, time.perf_counter() - w
        t = time.process_time()  # the part of it that reads the state at the window's start, alone
        with history.read_snapshot(cache):
            state = sum(1 for _ in history.state_at(cache, ts=start, known=history.known_until(history.runs(cache), end=end)))
        state_cpu = time.process_time() - t
    print(json.dumps({"cpu": cpu, "wall": wall, "floor": floor, "rows": rows, "events": report.events, "index": report.index_objects,
                      "state": state, "state_cpu": state_cpu, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def child_migrate(cache_path: str) -> None:
    from kubectl_sktrace.store import open_cache

    t = time.perf_counter()
    with open_cache(cache_path, create=False) as cache:
        version = cache.conn.execute("PRAGMA user_version").fetchone()[0]
        cache.checkpoint()
    print(json.dumps({"seconds": time.perf_counter() - t, "schema": version}))


def _disk(path: Path) -> int:
    return sum(os.path.getsize(f"{path}{s}") for s in ("", "-wal") if os.path.exists(f"{path}{s}"))


def measure(label: str, code: Path, cache: Path, runs: list[tuple[float, float]], *, repeat: int, timeout: float) -> None:
    env = _env(code)
    kubectl = ["kubectl", "sktrace"]
    statuses = [_timed([*kubectl, "status", "--cache", str(cache)], env, timeout=timeout) for _ in range(repeat)]
    starts = [_timed([*kubectl, "version"], env, timeout=timeout) for _ in range(repeat)]
    print(f"[{label}] status wall s: median {statistics.median(s[0] for s in statuses):.2f} "
          f"(min {min(s[0] for s in statuses):.2f}, max {max(s[0] for s in statuses):.2f}), CPU s median {statistics.median(s[1] for s in statuses):.2f}"
          f"   | reference 'kubectl sktrace version' wall s median {statistics.median(s[0] for s in starts):.2f}")
    first, last = int(runs[0][0]), int(runs[-1][1])
    middle = (first + last) // 2
    windows = [("start", first + 3600, 1), ("middle", middle, 1), ("end", last - 3600, 1), ("middle", middle, 2), ("middle", middle, 4)]
    print(f"[{label}] {'where':>7} {'hours':>5} {'rows':>7} {'events':>7} {'index':>7} {'export CPU s':>13} {'spread':>13} {'wall s':>7} {'RSS MB':>7} "
          f"{'ref: read rows CPU s':>21} {'state':>6} {'state CPU s':>12}")
    for where, start, hours in windows:
        results = []
        for _ in range(repeat):
            wall, _cpu, out = _timed([sys.executable, __file__, "--child-export", str(cache), str(start), str(start + hours * 3600)], env,
                                     timeout=timeout)
            results.append(json.loads(out) if out else None)
        done = [r for r in results if r]
        if not done:
            print(f"[{label}] {where:>7} {hours:>5} {'(over ' + str(timeout) + ' s)':>40}")
            continue
        cpus = [r["cpu"] for r in done]
        r = done[0]
        print(f"[{label}] {where:>7} {hours:>5} {r['rows']:>7} {r['events']:>7} {r['index']:>7} {statistics.median(cpus):>13.2f} "
              f"{min(cpus):>6.2f}-{max(cpus):<6.2f} {statistics.median(x['wall'] for x in done):>7.2f} {max(x['rss_mb'] for x in done):>7.0f} "
              f"{statistics.median(x['floor'] for x in done):>21.3f} {r['state']:>6} {statistics.median(x['state_cpu'] for x in done):>12.3f}")


def prune_half(label: str, code: Path, cache: Path, runs: list[tuple[float, float]], *, timeout: float) -> None:
    copy = cache.with_name(cache.stem + "-prune.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{cache}{suffix}"):
            shutil.copyfile(f"{cache}{suffix}", f"{copy}{suffix}")
    before = _disk(copy)
    cut = int((runs[0][0] + runs[-1][1]) / 2)
    wall, cpu, out = _timed(["kubectl", "sktrace", "prune", "--before", f"@{cut}", "--cache", str(copy), "-o", "json"], _env(code), timeout=timeout)
    after = _disk(copy)
    print(f"[{label}] prune of half: wall {wall:.1f} s, CPU {cpu:.1f} s; on disk {before / 2**30:.2f} GiB -> {after / 2**30:.2f} GiB; {json.dumps(json.loads(out)) if out else 'timed out'}")
    for suffix in ("", "-wal", "-shm", ".lock"):
        with_suffix = Path(f"{copy}{suffix}")
        if with_suffix.exists():
            with_suffix.unlink()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child-export":
        child_export(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--child-migrate":
        child_migrate(sys.argv[2])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--child-build":
        global WEEKS
        WEEKS = int(sys.argv[4])
        build(Path(sys.argv[2]), int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True, help="where the fixture cache is built and kept")
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--weeks", type=int, default=WEEKS, help="how long the history is: the same events over more weeks are sparser")
    parser.add_argument("--before", type=Path, help="a source tree of another version, measured first on the same cache")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before-repeat", type=int, default=1, help="repeats with the --before code (slow on a large cache)")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--no-prune", action="store_true")
    parser.add_argument("--prune-before", action="store_true", help="prune with the --before code too (slow on a large cache)")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    cache = args.dir / (f"cache-{args.events}.db" if args.weeks == WEEKS else f"cache-{args.events}-{args.weeks}w.db")
    build_code = args.before or ROOT
    if not cache.exists():
        t = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--child-build", str(cache), str(args.events), str(args.weeks)], env=_env(build_code), check=True)
        print(f"built {args.events} events in {time.perf_counter() - t:.0f} s")
    import sqlite3

    conn = sqlite3.connect(f"file:{cache}?mode=ro", uri=True)
    runs = conn.execute("SELECT started, stopped FROM runs ORDER BY id").fetchall()
    events, pods = conn.execute("SELECT (SELECT max(id) FROM events), (SELECT max(id) FROM pods)").fetchone()
    conn.close()
    size = _disk(cache)
    print(f"cache {cache}: {size / 2**30:.2f} GiB, ~{events} events, ~{pods} pods rows, {len(runs)} runs; "
          f"{size / events:.0f} bytes per event (pods rows and indexes included)")
    codes = ([("before", args.before)] if args.before else []) + [("after", ROOT)]
    for label, code in codes:
        if label == "after":
            wall, _cpu, out = _timed([sys.executable, __file__, "--child-migrate", str(cache)], _env(ROOT), timeout=3600)
            print(f"[after] migration to the current schema: {out.strip()} (wall {wall:.1f} s); on disk now {_disk(cache) / 2**30:.2f} GiB")
        measure(label, code, cache, runs, repeat=args.repeat if label == "after" else args.before_repeat, timeout=args.timeout)
        if not args.no_prune and (label == "after" or args.prune_before):
            prune_half(label, code, cache, runs, timeout=args.timeout * 3)


if __name__ == "__main__":
    main()
