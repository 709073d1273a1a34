"""The two cache engines side by side: live ingest, export, recorder memory.

    .venv/bin/python benchmarks/bench_store.py [--pods 20000] [--events 200000] [--repeat 2]

A PostgreSQL server of Debian's binaries is started for the run (``tests/pgserver.py``: a temporary cluster on a
free loopback port, ``fsync`` left on here), beside a sqlite file on the same disk. Each figure comes from a child
process of its own, engine after engine, on the same input, so they compare within one run:

- **ingest**: the recorder's writer and rules (``writer.Writer`` over ``ingest.Ingest``, the real commit
  cadence) fed one stream of pod watch events as fast as they go: ``--pods`` pods added (pending), then each
  one started, then each one finished: 3 events per pod, each one an insert or an update of its lifecycle row.
  Reported: events per second (wall clock, commits included), the client's CPU per event, and the child's peak RSS.
- **write**: the recorder's event rows (``Recording.append_event`` in batches of 500, three kinds, one row in seven a
  deletion) into a cache made without migration 0010 and one made with it, in turn: what keeping the per-minute
  counts (``event_rates``, one upsert per row on sqlite, one per statement on PostgreSQL) costs each write.
- **export**: a history of ``--events`` Deployment changes (5,000 objects, ~1 KB bodies) recorded into sqlite,
  copied into PostgreSQL with ``cache copy``'s ``copy_history``, then the whole window exported from each:
  wall time, the client's CPU and peak RSS (a PostgreSQL reader streams its rows from a server-side cursor).

PostgreSQL's own CPU is in the server processes, not in these figures: compare wall clock rates for throughput.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

T0 = 1_800_000_000.0


def _open(where: str) -> object:
    from kubectl_sktrace.model import CacheUrl
    from kubectl_sktrace.store import open_cache

    return open_cache(CacheUrl(where, "bench") if where.startswith("postgresql://") else where, create=True)


def child_ingest(where: str, pods: int) -> dict[str, float]:
    from test_ingest import CONFIG, deployment, pod, replicaset

    from kubectl_sktrace.model import DEPLOYMENT, POD, REPLICASET
    from kubectl_sktrace.record.ingest import Ingest
    from kubectl_sktrace.record.writer import Writer
    from kubectl_sktrace.store.recording import Recording

    cache = _open(where)
    rec = Recording(cache)  # type: ignore[arg-type]
    run = rec.begin_run(started=T0, pid=1, config_yaml="")
    ingest = Ingest(recording=rec, run_id=run, config=CONFIG, owner_kinds={REPLICASET}, fetch_owner=lambda key: None, gap_start=None)
    writer = Writer(ingest, rec, clock=time.time)
    for gvk, items in [(REPLICASET, [replicaset("rs", "r1", "web", "d1")]), (DEPLOYMENT, [deployment("web", "d1")]), (POD, [])]:
        writer.relist_begin(gvk, T0)
        writer.relist_page(gvk, items, T0)
        writer.relist_end(gvk, "1", T0)
    stream = []
    for phase in ("added", "started", "finished"):
        for i in range(pods):
            obj = pod(f"p-{i}", f"u-{i}", rs="rs", rs_uid="r1", started=T0 + 1 if phase != "added" else None,
                      finished=T0 + 2 if phase == "finished" else None)
            obj["metadata"]["resourceVersion"] = str(len(stream) + 2)
            stream.append(("ADDED" if phase == "added" else "MODIFIED", obj))
    cpu, wall = time.process_time(), time.perf_counter()
    for event_type, obj in stream:
        writer.event(POD, event_type, obj, T0 + 3)
    writer.close(clean=True)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finished = cache.conn.execute("SELECT count(*) FROM pods WHERE end_ts IS NOT NULL").fetchone()[0]  # type: ignore[attr-defined]
    assert finished == pods, (finished, pods)
    cache.close()  # type: ignore[attr-defined]
    return {"events": len(stream), "rate": len(stream) / wall, "cpu_us": cpu / len(stream) * 1e6, "rss_mb": _peak_mb()}


def child_build(where: str, events: int) -> dict[str, float]:
    from conftest import DEFAULT_CONFIG_YAML

    from kubectl_sktrace.model import DEPLOYMENT, ObjKey
    from kubectl_sktrace.store.recording import EventRow, Recording

    cache = _open(where)
    rec = Recording(cache)  # type: ignore[arg-type]
    run = rec.begin_run(started=T0, pid=1, config_yaml=DEFAULT_CONFIG_YAML)
    with rec.batch():
        rec.mark_synced(run, T0)
        for i in range(events):
            name = f"d-{i % 5000}"
            body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "ns"},
                    "spec": {"replicas": i, "template": {"spec": {"containers": [{"name": "c", "image": f"nginx:{i}", "args": ["x" * 800]}]}}}}
            rec.append_event(run, EventRow(ts=int(T0) + i // 100, recv=T0 + i / 100, key=ObjKey(DEPLOYMENT, "ns", name), uid=f"u-{name}",
                                           op=0, spec_hash=i, body=body))
        rec.heartbeat(run, T0 + events / 100 + 10)
    cache.close()  # type: ignore[attr-defined]
    return {}


def child_write(where: str, events: int, migrations: int) -> dict[str, float]:
    """The recorder's event rows (``Recording.append_event``, batches of ``WRITE_BATCH`` as the writer commits them) into
    a cache made by the first ``migrations`` migrations: with and without 0010's per-minute counts, the same rows."""
    from kubectl_sktrace.model import GVK, ObjKey
    from kubectl_sktrace.store import connection, pgschema, postgres, schema
    from kubectl_sktrace.store.recording import EventRow, Recording

    connection.MIGRATIONS, connection.SCHEMA_VERSION = schema.MIGRATIONS[:migrations], migrations  # type: ignore[misc]
    postgres.PG_MIGRATIONS = pgschema.PG_MIGRATIONS[:migrations]  # type: ignore[misc]
    cache = _open(where)
    rec = Recording(cache)  # type: ignore[arg-type]
    run = rec.begin_run(started=T0, pid=1, config_yaml="")
    kinds = [GVK("apps", "v1", "Deployment"), GVK("batch", "v1", "Job"), GVK("", "v1", "ConfigMap")]
    rows = [EventRow(ts=int(T0) + i // 50, recv=T0 + i / 50, key=ObjKey(kinds[i % 3], "ns", f"o-{i % 3000}"), uid=f"u-{i % 3000}",
                     op=int(i % 7 == 6), spec_hash=i, body=None if i % 7 == 6 else {"metadata": {"name": f"o-{i % 3000}"}, "spec": {"n": i}})
            for i in range(events)]
    cpu, wall = time.process_time(), time.perf_counter()
    for first in range(0, events, WRITE_BATCH):
        with rec.batch():
            for row in rows[first:first + WRITE_BATCH]:
                rec.append_event(run, row)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert cache.conn.execute("SELECT count(*) FROM events").fetchone()[0] == events  # type: ignore[attr-defined]
    cache.close()  # type: ignore[attr-defined]
    return {"rate": events / wall, "cpu_us": cpu / events * 1e6}


WRITE_BATCH = 500


def child_copy(source: str, destination: str) -> dict[str, float]:
    from kubectl_sktrace.store.copying import copy_cache

    started = time.perf_counter()
    copy_cache(source, destination, context="bench")
    return {"seconds": time.perf_counter() - started}


def child_export(where: str, events: int, out: str) -> dict[str, float]:
    from kubectl_sktrace.export.options import ExportFilters
    from kubectl_sktrace.export.window import export_to
    from kubectl_sktrace.model import CacheUrl

    location = CacheUrl(where, "bench") if where.startswith("postgresql://") else where
    cpu, wall = time.process_time(), time.perf_counter()
    report = export_to(location, out, start_ts=int(T0), end_ts=int(T0) + events // 100 + 1, filters=ExportFilters(), keep_status=False,
                       fmt="sktrace", allow_empty=False, stdout=sys.stdout.buffer)
    return {"seconds": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "rss_mb": _peak_mb(),
            "events": float(report.applied if hasattr(report, "applied") else 0)}


def _peak_mb() -> float:
    """This process's peak RSS (``VmHWM``: ``ru_maxrss`` would carry the parent's peak over the exec)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(*args: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"child {args} failed:\n{out.stderr[-3000:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _writes(server: object, tmp: Path, events: int, repeat: int) -> None:
    """The recorder's event rows written without 0010 (the schema before it) and with it, in turn, on each engine."""
    from kubectl_sktrace.store import schema

    before = [i for i, (name, _) in enumerate(schema.MIGRATIONS) if name == "0010_event_rates"][0]
    for attempt in range(repeat):
        for engine in ("sqlite", "postgresql"):
            for label, migrations in (("without 0010", before), ("with 0010", len(schema.MIGRATIONS))):
                where = str(tmp / f"write-{attempt}-{migrations}.db") if engine == "sqlite" else server.new_database()  # type: ignore[attr-defined]
                r = _child("write", where, str(events), str(migrations))
                print(f"write   {engine:10}  {label:13} {r['rate']:9,.0f} events/s  {r['cpu_us']:6.1f} us CPU/event (client)  "
                      f"{events} rows in batches of {WRITE_BATCH}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--events", type=int, default=200000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--writes", type=int, default=100000, help="event rows written with and without the per-minute counts (0010)")
    parser.add_argument("--writes-only", action="store_true", help="only the event rows' write cost")
    parser.add_argument("--child", nargs="+")
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        result = {"ingest": lambda: child_ingest(rest[0], int(rest[1])), "build": lambda: child_build(rest[0], int(rest[1])),
                  "write": lambda: child_write(rest[0], int(rest[1]), int(rest[2])),
                  "copy": lambda: child_copy(rest[0], rest[1]), "export": lambda: child_export(rest[0], int(rest[1]), rest[2])}[kind]()
        print(json.dumps(result))
        return
    from pgserver import PgServer, find_bindir

    bindir = find_bindir()
    if bindir is None:
        raise SystemExit("no PostgreSQL binaries (apt-get install postgresql)")
    server = PgServer(bindir, fsync=True).start()
    tmp = Path(tempfile.mkdtemp(prefix="bench-store-"))
    try:
        print(f"load average {open('/proc/loadavg').read().split()[:3]}; {args.pods} pods x 3 events; export of {args.events} events")
        _writes(server, tmp, args.writes, args.repeat)
        if args.writes_only:
            return
        for attempt in range(args.repeat):
            for engine in ("sqlite", "postgresql"):
                where = str(tmp / f"ingest-{attempt}.db") if engine == "sqlite" else server.new_database()
                r = _child("ingest", where, str(args.pods))
                print(f"ingest  {engine:10}  {r['rate']:9,.0f} events/s  {r['cpu_us']:6.1f} us CPU/event (client)  peak RSS {r['rss_mb']:.0f} MB")
        sqlite_path, pg = str(tmp / "export.db"), server.new_database()
        _child("build", sqlite_path, str(args.events))
        copied = _child("copy", sqlite_path, pg)
        print(f"copy    sqlite -> postgresql  {args.events} events in {copied['seconds']:.1f} s")
        outputs: dict[str, str] = {}
        for attempt in range(args.repeat):
            for engine, where in (("sqlite", sqlite_path), ("postgresql", pg)):
                out = str(tmp / f"{engine}-{attempt}.sktrace")  # a new file: replacing one reads it first
                r = _child("export", where, str(args.events), out)
                outputs[engine] = out
                print(f"export  {engine:10}  {r['seconds']:6.2f} s wall  {r['cpu']:6.2f} s CPU (client)  peak RSS {r['rss_mb']:.0f} MB")
        same = filecmp.cmp(outputs["sqlite"], outputs["postgresql"], shallow=False)
        print(f"exports byte-identical: {same} ({Path(outputs['sqlite']).stat().st_size:,} bytes)")
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
