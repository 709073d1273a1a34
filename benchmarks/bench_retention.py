"""``start --retain``: the cache's size over a long recording, and how long each prune holds the writer's lock.

    .venv/bin/python benchmarks/bench_retention.py [--days 10] [--retain-days 2] [--cache postgresql://…]
    .venv/bin/python benchmarks/bench_retention.py --large-dir /var/tmp/sktrace-bench [--large-events 2000000]

**Size over time** (always). A cluster recorded for ``--days`` simulated days through the recorder's own writer and
rules (``writer.Writer`` over ``ingest.Ingest``, the clock scripted: a day takes a few seconds): 200 Deployments
(the emulator's builders, ~2.8 KB of JSON each) scaled or rolled ``--rate`` times an hour in all, and a CronJob's Job
created every minute and deleted an hour later (each a new object, as CronJobs leave behind). Every simulated hour
the run's ``Retention`` (the class ``start --retain`` runs, with the real ``Writer.exclusive``) makes its pass with
``--retain-days``. Printed every 12 simulated hours: the rows in the history, the cache's size, what the passes
removed, and the longest a link held the lock. The size stops growing once the retained window is full, but for
what every prune keeps of each object ever seen (its last version, and its deletion): the Jobs' few hundred bytes
each, which the last column counts.

**The lock on a large cache** (with ``--large-dir``): ``bench_cache.py``'s fixture (``--large-events`` events over 8
weeks, built once into that directory and kept), copied, then one recorder's first pass with a 4-week retention
(a backlog of 4 weeks, as when ``--retain`` is first given to an old cache) and three hourly passes after it:
links, the lock's hold per link (median, 99th percentile, maximum), and the wall time of the backlog.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

T = TypeVar("T")
T0 = 1_800_000_000.0
HOUR, DAY = 3600, 86400
DEPLOYMENTS = 200


def _open(where: str) -> Any:
    from kubectl_sktrace.model import CacheUrl
    from kubectl_sktrace.store import open_cache

    return open_cache(CacheUrl(where, "bench") if where.startswith("postgresql://") else where, create=True)


def _job(n: int, cron: dict[str, Any]) -> dict[str, Any]:
    template = cron["spec"]["jobTemplate"]["spec"]["template"]
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"nightly-{n}", "namespace": "batch", "uid": f"uid-job-{n}", "resourceVersion": str(n),
                         "creationTimestamp": "2027-01-15T08:00:00Z",
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": "uid-cron",
                                              "controller": True}]},
            "spec": {"completions": 1, "backoffLimit": 6, "template": template}, "status": {"succeeded": 1}}


class Simulation:
    """The recorder's writer and rules on a scripted clock, and its retention."""

    def __init__(self, where: str, *, retain: float, rate: int) -> None:
        from sktrace_emulator.builders import deployment_object, sample_pod_template

        from kubectl_sktrace.model import CRONJOB, DEPLOYMENT, JOB
        from kubectl_sktrace.record.ingest import Ingest
        from kubectl_sktrace.record.retention import Retention, RetentionPolicy
        from kubectl_sktrace.record.writer import Writer
        from kubectl_sktrace.store.recording import Recording
        from kubectl_sktrace.tracerconfig import default_config

        self.now = T0
        self.rng = random.Random(7)
        self.rate = rate
        self.cache = _open(where)
        rec = Recording(self.cache)
        run = rec.begin_run(started=T0, pid=1, config_yaml="", retain=retain)
        ingest = Ingest(recording=rec, run_id=run, config=default_config(), owner_kinds=set(), fetch_owner=lambda key: None, gap_start=None)
        self.writer = Writer(ingest, rec, clock=lambda: self.now)
        self.kinds = (DEPLOYMENT, JOB, CRONJOB)
        self.deployments = [deployment_object(f"ns-{i % 20}", f"app-{i}", replicas=2, rng=self.rng) for i in range(DEPLOYMENTS)]
        for i, d in enumerate(self.deployments):
            d.update(apiVersion="apps/v1", kind="Deployment")
            d["metadata"].update(uid=f"uid-app-{i}", resourceVersion="1")
        self.cron = {"apiVersion": "batch/v1", "kind": "CronJob",
                     "metadata": {"name": "nightly", "namespace": "batch", "uid": "uid-cron", "resourceVersion": "1"},
                     "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": sample_pod_template(self.rng, app="nightly")}}}}
        for gvk, items in ((DEPLOYMENT, self.deployments), (JOB, []), (CRONJOB, [self.cron])):
            self.writer.relist_begin(gvk, T0)
            self.writer.relist_page(gvk, items, T0)
            self.writer.relist_end(gvk, "1", T0)
        self.writer.mark_synced(run, T0)
        self.jobs = 0
        self.retention = Retention(policy=RetentionPolicy(retain=retain), cache=self.cache, writer=self.writer, wait=lambda s: False,
                                   tell=lambda line: None, retain_text=f"{retain / DAY:g}d", clock=lambda: self.now)

    def hour(self) -> float:
        """One simulated hour of changes, committed minute by minute; then the hour's pass: the longest link."""
        deployment, job = self.kinds[0], self.kinds[1]
        for minute in range(60):
            self.now += 60
            for _ in range(self.rate // 60):
                d = self.deployments[self.rng.randrange(DEPLOYMENTS)]
                d["spec"]["replicas"] = self.rng.randint(1, 6)
                d["metadata"]["resourceVersion"] = str(int(d["metadata"]["resourceVersion"]) + 1)
                self.writer.event(deployment, "MODIFIED", d, self.now)
            self.jobs += 1
            self.writer.event(job, "ADDED", _job(self.jobs, self.cron), self.now)
            if self.jobs > 60:
                self.writer.event(job, "DELETED", _job(self.jobs - 60, self.cron), self.now)
            self.writer.tick()
        self.writer.exclusive(lambda: None)  # commits the hour
        report = self.retention.prune_pass()
        return 0.0 if report is None else report.longest

    def rows(self) -> tuple[int, int]:
        return (int(self.cache.conn.execute("SELECT count(*) FROM events").fetchone()[0]),
                int(self.cache.conn.execute("SELECT count(DISTINCT name) FROM events WHERE op = 1").fetchone()[0]))


def size_over_time(where: str, *, days: int, retain_days: float, rate: int) -> None:
    sim = Simulation(where, retain=retain_days * DAY, rate=rate)
    print(f"{days} simulated days, --retain {retain_days:g}d, a pass every hour; {DEPLOYMENTS} Deployments changed {rate} times an hour, "
          f"a Job a minute (deleted an hour later); cache {where}")
    print(f"{'hour':>5} {'recorded':>9} {'rows':>8} {'size MiB':>9} {'pruned':>9} {'longest link s':>15} {'gone Jobs kept':>15}")
    longest, started = 0.0, time.perf_counter()
    for hour in range(1, days * 24 + 1):
        longest = max(longest, sim.hour())
        if hour % 12 == 0:
            rows, gone = sim.rows()
            size = sim.cache.size_bytes()
            print(f"{hour:>5} {sim.writer.ingest.events_recorded:>9} {rows:>8} {size / 2**20:>9.1f} {sim.retention.events_removed:>9} "
                  f"{longest:>15.3f} {gone:>15}", flush=True)
            longest = 0.0
    sim.writer.close(clean=True)
    sim.cache.close()
    print(f"({time.perf_counter() - started:.0f} s of wall time)")


class Locked:
    def __init__(self) -> None:
        self.lock = threading.Lock()

    def exclusive(self, work: Callable[[], T]) -> T | None:
        with self.lock:
            return work()


def large_cache(directory: Path, events: int) -> None:
    import bench_cache

    from kubectl_sktrace.record.retention import Retention, RetentionPolicy
    from kubectl_sktrace.store import open_cache

    directory.mkdir(parents=True, exist_ok=True)
    fixture = directory / f"cache-{events}.db"
    if not fixture.exists():
        bench_cache.build(fixture, events)
    copy = directory / "retention-copy.db"
    shutil.copyfile(fixture, copy)
    os.sync()  # else the first commit's fsync writes the copy's gigabytes back, and the first link pays for them
    holds: list[float] = []
    with open_cache(copy, create=False) as cache:
        end = int(cache.conn.execute("SELECT max(stopped) FROM runs").fetchone()[0])
        objects = cache.conn.execute("SELECT count(*) FROM event_objects").fetchone()[0]
        print(f"large cache: {events} events, {objects} objects, {cache.size_bytes() / 2**30:.2f} GiB; retention 4 weeks of the fixture's 8")
        now = [float(end)]

        def wait(seconds: float) -> bool:
            holds.append(seconds)  # between two links the retention waits as long as the last link held the lock
            if seconds > 1.0:
                print(f"  link {len(holds)} held the lock {seconds:.2f} s (after it: {retention.rows} rows a link)", flush=True)
            return False

        retention = Retention(policy=RetentionPolicy(retain=28 * DAY), cache=cache, writer=Locked(), wait=wait, tell=print,
                              retain_text="28d", clock=lambda: now[0])
        started = time.perf_counter()
        first = retention.prune_pass()
        wall = time.perf_counter() - started
        assert first is not None
        holds.append(first.longest)
        holds.sort()
        print(f"backlog pass: {first.links} links, {first.events_removed} events and {first.pods_removed} pods removed in {wall:.1f} s; "
              f"lock held per link: median {statistics.median(holds):.3f} s, p99 {holds[int(len(holds) * 0.99)]:.3f} s, "
              f"max {holds[-1]:.3f} s")
        for hour in range(1, 4):
            now[0] += HOUR
            report = retention.prune_pass()
            assert report is not None
            print(f"hourly pass {hour}: {report.links} link(s), {report.events_removed} events removed, longest link {report.longest:.3f} s")
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(f"{copy}{suffix}").unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=10)
    parser.add_argument("--retain-days", type=float, default=2.0)
    parser.add_argument("--rate", type=int, default=3000, help="Deployment changes per simulated hour")
    parser.add_argument("--cache", help="a cache to record into (a new file by default; a postgresql:// URL for the database)")
    parser.add_argument("--large-dir", type=Path, help="also measure the lock on bench_cache.py's fixture, built into this directory")
    parser.add_argument("--large-events", type=int, default=2_000_000)
    parser.add_argument("--no-size", action="store_true", help="leave out the size over time (with --large-dir: the lock only)")
    args = parser.parse_args()
    if not args.no_size:
        with tempfile.TemporaryDirectory(prefix="sktrace-retention-") as tmp:
            size_over_time(args.cache or str(Path(tmp) / "cache.db"), days=args.days, retain_days=args.retain_days, rate=args.rate)
    if args.large_dir is not None:
        large_cache(args.large_dir, args.large_events)


if __name__ == "__main__":
    main()
