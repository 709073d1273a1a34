"""Export speed and memory, beside msgpack.packb of the same objects measured in the same run.

    python benchmarks/bench_export.py                 # 100,000 and 200,000 events
    python benchmarks/bench_export.py --events 50000  # one size

For each size it builds a cache of realistic Deployments (about 2.5 KB of JSON each: containers with env,
resources, probes, volumes; labels and annotations) created, scaled and re-rolled over time, writing the
rows as the recorder does (``store.bodies.encode_body``). Then, each in a fresh process so that peak RSS is
its own:

- export: ``kubectl_sktrace.export.window.export_trace`` of the whole history to a file (sktrace format);
  wall and CPU seconds of the process (CPU is what to compare on a shared machine);
- reference: the same event objects decoded into memory first, then one ``msgpack.packb`` of the list of
  events (timed). Each runs ``--repeat`` times, in turn with the other; the run with the least CPU of each is
  shown (on a shared machine, the least disturbed). The ratio is what the targets speak of: within 2x, and peak RSS under 300 MB whatever
  the number of events. The decode column is the time to read the stored bodies back into objects
  in the reference process: a floor under any export of this cache, which packb alone does not pay.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFIG = "trackedObjects:\n  apps/v1.Deployment:\n    podSpecTemplatePaths: [/spec/template]\n    trackLifecycle: true\n"
OBJECTS = 5000


def deployment(i: int, version: int) -> dict:
    name = f"svc-{i:05d}"
    labels = {"app": name, "team": f"team-{i % 17}", "tier": ("web", "api", "worker")[i % 3]}
    container = {
        "name": "main", "image": f"registry.example.com/{name}:1.{version}.0", "imagePullPolicy": "IfNotPresent",
        "args": ["--port=8080", f"--shard={i % 8}", "--log-level=info"],
        "env": [{"name": f"VAR_{k}", "value": f"value-{i}-{k}"} for k in range(8)]
        + [{"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": f"{name}-db", "key": "password"}}}],
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 10},
        "livenessProbe": {"httpGet": {"path": "/live", "port": 8080}, "initialDelaySeconds": 15},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}],
    }
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": f"ns-{i % 40}", "labels": labels,
                     "annotations": {"owner": f"team-{i % 17}@example.com", "runbook": f"https://runbooks.example.com/{name}"}},
        "spec": {
            "replicas": 1 + version % 5, "revisionHistoryLimit": 10, "selector": {"matchLabels": {"app": name}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {"metadata": {"labels": labels}, "spec": {
                "containers": [container], "serviceAccountName": name, "terminationGracePeriodSeconds": 30,
                "volumes": [{"name": "config", "configMap": {"name": f"{name}-config"}}]}},
        },
        "status": {"replicas": 1, "readyReplicas": 1, "observedGeneration": version},
    }


def build(path: Path, events: int) -> None:
    from kubectl_sktrace.store import open_cache, to_db_hash
    from kubectl_sktrace.store.bodies import encode_body, refs_to_json
    from kubectl_sktrace.trace.hashing import spec_hash
    from kubectl_sktrace.trace.references import distinct_references

    with open_cache(path, create=True) as cache:
        with cache.transaction() as conn:
            conn.execute("INSERT INTO runs (started, synced, stopped, clean, pid, config) VALUES (0, 0, ?, 1, 1, ?)", (events, CONFIG))
        rows = []
        for n in range(events):
            i, version = n % OBJECTS, n // OBJECTS
            body = deployment(i, version)
            deleted = version % 7 == 6 and i % 3 == 0
            key = (body["apiVersion"] + "." + body["kind"], body["metadata"]["namespace"], body["metadata"]["name"])
            ts = n // 50  # 50 changes per second
            if deleted:
                rows.append((ts, ts, *key, f"uid-{i}", 1, None, None, None, None))
            else:  # the references as the recorder stores them (schema 0006)
                refs = refs_to_json(distinct_references(body, ["/spec/template"]))
                rows.append((ts, ts, *key, f"uid-{i}", 0, to_db_hash(spec_hash(body["spec"])), *encode_body(body), refs))
            if len(rows) == 5000 or n == events - 1:
                with cache.transaction() as conn:
                    conn.executemany(
                        "INSERT INTO events (ts, recv, run_id, gvk, namespace, name, uid, op, spec_hash, body, status, refs) "
                        "VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        rows,
                    )
                rows = []
        cache.checkpoint()


def child_export(path: str, out: str) -> None:
    from kubectl_sktrace.export.options import ExportFilters
    from kubectl_sktrace.export.window import export_trace
    from kubectl_sktrace.store import open_cache

    with open_cache(path, create=False) as cache, open(out, "wb") as stream:
        started, cpu = time.perf_counter(), time.process_time()
        report = export_trace(cache, start_ts=0, end_ts=10**9, filters=ExportFilters(), keep_status=False, fmt="sktrace", stream=stream)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(json.dumps({"seconds": elapsed, "cpu": cpu, "rss_mb": _peak_mb(), "events": report.events, "objects": report.applied + report.deleted}))


def child_packb(path: str) -> None:
    import gc
    import sqlite3

    import msgpack

    from kubectl_sktrace.store.bodies import decode_body

    gc.set_threshold(200_000, 50, 100)  # as export does, so both sides decode under the same collector
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT ts, gvk, namespace, name, op, body, status FROM events ORDER BY ts, id").fetchall()
    started = time.perf_counter()
    for row in rows:  # the floor any export of this cache pays: reading the stored form back into objects
        if row[5] is not None:
            decode_body(row[5], row[6])
    decode_floor = time.perf_counter() - started
    events: list[dict] = []
    current = None
    for ts, gvk, ns, name, op, body, _status in rows:
        if current is None or current["ts"] != ts:
            current = {"ts": ts, "applied_objs": [], "deleted_objs": []}
            events.append(current)
        if op == 0:
            obj = decode_body(body)
            current["applied_objs"].append(obj)
        else:
            group, _, rest = gvk.rpartition("/")
            version, kind = rest.split(".")
            current["deleted_objs"].append({"apiVersion": f"{group}/{version}", "kind": kind, "metadata": {"name": name, "namespace": ns}})
    started, cpu = time.perf_counter(), time.process_time()
    data = msgpack.packb({"version": 2, "config": {}, "events": events, "index": {}, "pod_lifecycles": {}})
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(json.dumps({"seconds": elapsed, "cpu": cpu, "decode": decode_floor, "rss_mb": _peak_mb(), "bytes": len(data)}))


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(*args: str) -> dict:
    result = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True, text=True)
    return json.loads(result.stdout)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child-export":
        child_export(sys.argv[2], sys.argv[3])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--child-packb":
        child_packb(sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, nargs="+", default=[100_000, 200_000])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each, taken in turn; the least disturbed (least CPU) of each is shown")
    args = parser.parse_args()
    print(f"{'events':>8} {'cache MB':>8} {'export s':>9} {'packb s':>8} {'ratio':>6} {'CPU: export s':>14} {'packb s':>8} {'ratio':>6} "
          f"{'decode s':>9} {'export RSS MB':>14} {'packb RSS MB':>13} {'trace MB':>9}")
    with tempfile.TemporaryDirectory() as scratch:
        for events in args.events:
            cache = Path(scratch) / f"cache-{events}.db"
            build(cache, events)
            out = Path(scratch) / f"out-{events}.sktrace"
            runs = [(_child("--child-export", str(cache), str(out)), _child("--child-packb", str(cache))) for _ in range(args.repeat)]
            exp = min((e for e, _ in runs), key=lambda r: r["cpu"])
            ref = min((r for _, r in runs), key=lambda r: r["cpu"])
            print(
                f"{events:>8} {cache.stat().st_size / 2**20:>8.1f} {exp['seconds']:>9.2f} {ref['seconds']:>8.2f} "
                f"{exp['seconds'] / ref['seconds']:>5.1f}x {exp['cpu']:>14.2f} {ref['cpu']:>8.2f} {exp['cpu'] / ref['cpu']:>5.2f}x {ref['decode']:>9.2f} {exp['rss_mb']:>14.0f} {ref['rss_mb']:>13.0f} {out.stat().st_size / 2**20:>9.1f}"
            )
            os.unlink(out)


if __name__ == "__main__":
    main()
