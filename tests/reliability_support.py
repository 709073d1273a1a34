"""Shared helpers of the reliability suites (hostile inputs, security, crash, faults, concurrency).

Every suite runs the real console script ``kubectl-sktrace`` in a subprocess, the way a user does, with a
private HOME and XDG_STATE_HOME so that nothing reads or writes the real user's files. The helpers here
judge what a user sees: the exit code, exactly one ``Error:`` line, and no traceback.
"""

from __future__ import annotations

import calendar
import math
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from warmcli import WarmCli

EXE = str(Path(sys.executable).with_name("kubectl-sktrace"))
DATA = Path(__file__).parent / "data"


@dataclass(frozen=True)
class Run:
    """What a user saw: exit code, stdout and stderr as text."""

    args: tuple[str, ...]
    code: int
    stdout: str
    stderr: str

    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("Error:")]

    def describe(self) -> str:
        return f"kubectl-sktrace {' '.join(self.args)} -> exit {self.code}\nstdout: {self.stdout[-2000:]!r}\nstderr: {self.stderr[-2000:]!r}"


def private_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a user with an empty home: no kubeconfig, no state, no proxies."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "XDG_", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"))}
    env.update({"HOME": str(home), "XDG_STATE_HOME": str(home / "state"), "NO_PROXY": "127.0.0.1,localhost"})
    if extra:
        env.update(extra)
    return env


WARM = WarmCli()


def run_cli(args: Sequence[str], *, home: Path, env: Mapping[str, str] | None = None, timeout: float = 60,
            preexec_fn: object = None) -> Run:
    """Run ``kubectl-sktrace ARGS`` as a user would, in a process of its own that gets no stdin: forked from a warm
    interpreter (``warmcli``), or started cold when it needs a ``preexec_fn``."""
    if preexec_fn is None:
        done = WARM.run(args, env=private_env(home, env), timeout=timeout)
        return Run(tuple(args), done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"))
    proc = subprocess.run(
        [EXE, *args], env=private_env(home, env), stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
        preexec_fn=preexec_fn,  # type: ignore[arg-type]
    )
    return Run(tuple(args), proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"))


def assert_one_error(run: Run, *needles: str) -> str:
    """Exit 1, exactly one ``Error:`` line containing every needle, no traceback anywhere; returns the line."""
    assert run.code == 1, run.describe()
    assert "Traceback" not in run.stderr and "Traceback" not in run.stdout, run.describe()
    lines = run.error_lines()
    assert len(lines) == 1, run.describe()
    assert "unexpected" not in lines[0], f"a bug surfaced as an unexpected exception:\n{run.describe()}"
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in the error line:\n{run.describe()}"
    return lines[0]


def snapshot(paths: Sequence[Path]) -> dict[Path, bytes | None]:
    """The bytes of each file (None when absent), to prove a refused command left them untouched."""
    return {p: (p.read_bytes() if p.is_file() else None) for p in paths}


# --- ground truth: what the emulated cluster really did ---------------------------------------------------

TRACKED = ("apps/v1.Deployment", "apps/v1.StatefulSet", "batch/v1.Job", "batch/v1.CronJob")  # the default config


@dataclass(frozen=True)
class Change:
    """One committed change the emulator made to a tracked object, with the wall time it happened."""

    t: float
    type: str  # ADDED, MODIFIED, DELETED
    gvk: str
    namespace: str
    name: str
    uid: str
    spec_hash: int | None
    created: float | None = None  # the object's creationTimestamp (whole seconds, set before the commit)


class GroundTruth:
    """Every change to tracked kinds, taken at the emulator's store commit (the one place every write passes).

    Wrapping ``Store._commit`` is a test-only hook: the store is the source of truth a real API server's
    etcd would be, so what it commits is exactly what a perfect recorder would have seen. The time is taken
    after the commit but still under the store's lock, before any list or watch can read the change: no
    recorder can receive a change before its ``t``.
    """

    def __init__(self, emu: Any) -> None:
        from kubectl_sktrace.trace.hashing import spec_hash

        self.changes: list[Change] = []
        self.rs_owner: dict[str, tuple[str, str]] = {}  # ReplicaSet uid -> (owner gvk, "ns/name")
        self.started_pods: dict[str, tuple[str, str, str, str]] = {}  # pod uid -> (owner kind, uid, name, namespace)
        self._lock = threading.Lock()
        store = emu.store
        original = store._commit

        def commit(rtype: Any, event_type: str, obj: dict[str, Any]) -> Any:
            stored = original(rtype, event_type, obj)
            gvk = f"{rtype.api_version}.{rtype.kind}"
            if gvk in TRACKED:
                body = stored.obj()
                meta = body["metadata"]
                with self._lock:
                    self.changes.append(Change(time.time(), event_type, gvk, meta.get("namespace", ""), meta["name"],
                                               meta["uid"], spec_hash(body.get("spec")), _epoch(meta.get("creationTimestamp"))))
            elif gvk in ("apps/v1.ReplicaSet", "v1.Pod") and event_type != "DELETED":
                self._owned(gvk, stored.obj())
            return stored

        store._commit = commit

    def _owned(self, gvk: str, body: dict[str, Any]) -> None:
        """Remember which ReplicaSet belongs to which Deployment, and which pods started under which owner."""
        meta = body["metadata"]
        refs = [r for r in meta.get("ownerReferences") or [] if r.get("controller")]
        if not refs:
            return
        ref = refs[0]
        if gvk == "apps/v1.ReplicaSet":
            if ref["kind"] == "Deployment":
                with self._lock:
                    self.rs_owner[meta["uid"]] = ("apps/v1.Deployment", f"{meta['namespace']}/{ref['name']}")
            return
        status = body.get("status") or {}
        states = [c.get("state") or {} for c in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or [])]
        if any((st.get("running") or st.get("terminated") or {}).get("startedAt") for st in states):
            with self._lock:
                self.started_pods[meta["uid"]] = (ref["kind"], ref["uid"], ref["name"], meta["namespace"])

    def started_per_owner(self) -> dict[tuple[str, str], int]:
        """How many distinct pods started under each Deployment or Job: at most that many lifecycles each."""
        counts: dict[tuple[str, str], int] = {}
        with self._lock:
            for kind, owner_uid, owner_name, namespace in self.started_pods.values():
                if kind == "ReplicaSet":
                    owner = self.rs_owner.get(owner_uid)
                elif kind == "Job":
                    owner = ("batch/v1.Job", f"{namespace}/{owner_name}")
                else:
                    owner = None
                if owner is not None:
                    counts[owner] = counts.get(owner, 0) + 1
        return counts

    def save(self, path: Path) -> None:
        """Keep the truth next to the cache, for reading a failure afterwards."""
        import dataclasses
        import json

        path.write_text("\n".join(json.dumps(dataclasses.asdict(c)) for c in self.snapshot()))

    def snapshot(self) -> list[Change]:
        with self._lock:
            return list(self.changes)

    def live_at_end(self) -> dict[tuple[str, str, str], Change]:
        """The last version of every object that exists now: key (gvk, namespace, name) -> its last change."""
        live: dict[tuple[str, str, str], Change] = {}
        for change in self.snapshot():
            key = (change.gvk, change.namespace, change.name)
            if change.type == "DELETED":
                live.pop(key, None)
            else:
                live[key] = change
        return live




def _epoch(stamp: str | None) -> float | None:
    """``2026-11-22T10:00:00Z`` as Unix seconds."""
    return None if not stamp else float(calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")))


class Traffic:
    """The workload's mix plus churn of tracked objects, in one thread (the workload is single-threaded)."""

    def __init__(self, emu: Any, *, seed: int, rate: float, namespace: str) -> None:
        from sktrace_emulator.workload import Workload

        self.emu, self.rate, self.namespace = emu, rate, namespace
        self.workload = Workload(emu, seed=seed, job_seconds=(0.5, 2.0), start_delay=0.2)
        self.rng = random.Random(seed)
        self.errors: list[BaseException] = []
        self.made = 0
        self.created = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="traffic", daemon=True)

    def start(self) -> Traffic:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        assert not self.errors, self.errors

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self.made += self.workload.generate(self.rate, 0.3, namespace=self.namespace)
                self._churn()
        except BaseException as exc:  # surfaced by stop()
            self.errors.append(exc)

    def _churn(self) -> None:
        """Create, delete and re-create (same name, new uid) Deployments and delete finished Jobs."""
        from sktrace_emulator.builders import deployment_object
        from sktrace_emulator.records import ApiError
        from sktrace_emulator.selectors import Filter

        store, rng = self.emu.store, self.rng
        t_deploy, t_job = store.type_of("apps/v1", "Deployment"), store.type_of("batch/v1", "Job")
        roll = rng.random()
        try:
            if roll < 0.35:
                live = [s.name for s in store.current(t_deploy, Filter(namespace=self.namespace))[1] if s.name.startswith("extra-")]
                if len(live) < 4 or rng.random() < 0.5:
                    self.created += 1
                    name = f"extra-{rng.randint(0, 7)}"  # same names come back: deletion and re-creation
                    if store.get(t_deploy, self.namespace, name) is None:
                        store.create(t_deploy, deployment_object(self.namespace, name, replicas=rng.randint(1, 2), rng=rng))
                    else:
                        store.delete(t_deploy, self.namespace, name)
                else:
                    store.delete(t_deploy, self.namespace, rng.choice(live))
            elif roll < 0.5:
                jobs = store.current(t_job, Filter(namespace=self.namespace))[1]
                if jobs:
                    victim = rng.choice(jobs)
                    store.delete(t_job, victim.namespace, victim.name)
        except ApiError:
            pass  # raced with a controller: the next round tries again


# --- the recorder as a user runs it ------------------------------------------------------------------------


class Recorder:
    """``kubectl-sktrace start`` in a subprocess, its stderr in a file the test can watch."""

    def __init__(self, *, kubeconfig: Path, cache: Cache | str, home: Path, log: Path, args: Sequence[str] = (),
                 env: Mapping[str, str] | None = None) -> None:
        self.log = log
        self.args = ["start", "--kubeconfig", str(kubeconfig), "--cache", str(cache), *args]
        self._offset = log.stat().st_size if log.exists() else 0
        with open(log, "ab") as handle:
            handle.write(f"--- {' '.join(self.args)}\n".encode())
            self.proc = subprocess.Popen([EXE, *self.args], env=private_env(home, env), stdin=subprocess.DEVNULL,
                                         stdout=handle, stderr=subprocess.STDOUT)

    def output(self) -> str:
        with open(self.log, "rb") as handle:
            handle.seek(self._offset)
            return handle.read().decode(errors="replace")

    def wait_for(self, text: str, *, timeout: float) -> bool:
        """Poll the output for ``text``; False when the process ended or the time ran out first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output():
                return True
            if self.proc.poll() is not None:
                return text in self.output()
            time.sleep(0.01)
        return False

    def signal(self, signum: int) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signum)

    def kill(self) -> int:
        self.signal(signal.SIGKILL)
        return self.proc.wait(timeout=30)

    def stop(self, *, timeout: float = 60) -> int:
        """SIGTERM, the clean stop a user's Ctrl-C asks for; SIGKILL only when it hangs."""
        self.signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"the recorder did not stop within {timeout}s after SIGTERM:\n{self.output()[-3000:]}")


# --- reading a cache from outside, as a second process would ------------------------------------------------


class Database:
    """A cache in a PostgreSQL database, as the recorders of these tests write it: the history of the emulator's
    kubeconfig context. Passed where a cache path goes (``--cache`` takes ``str(cache)``)."""

    def __init__(self, url: str, history: str = "emulator") -> None:
        self.url = url
        self.history = history

    def __str__(self) -> str:
        return self.url

    def schema(self) -> str | None:
        import psycopg

        with psycopg.connect(self.url) as conn:
            if conn.execute("SELECT to_regclass('kubectl_sktrace.histories')").fetchone()[0] is None:
                return None
            row = conn.execute("SELECT schema_name FROM kubectl_sktrace.histories WHERE name = %s", (self.history,)).fetchone()
            if row is None or conn.execute("SELECT to_regclass(%s)", (f"{row[0]}.runs",)).fetchone()[0] is None:
                return None
            return str(row[0])

    def exists(self) -> bool:
        return self.schema() is not None


Cache = Path | Database


def _connect(cache: Cache) -> Any:
    """A connection of its own on either engine, whose ``execute(sql, params)`` takes ``?`` placeholders."""
    if isinstance(cache, Path):  # never creates the file (mode=rw): the recorder makes it, 0600, and refuses one of 0644
        return sqlite3.connect(f"file:{cache}?mode=rw", uri=True, timeout=10)
    import psycopg

    conn = psycopg.connect(cache.url, autocommit=True)
    conn.execute(f'SET search_path TO "{cache.schema()}"')
    plain_execute = conn.execute
    conn.execute = lambda sql, params=(): plain_execute(sql.replace("?", "%s"), params or None)  # type: ignore[method-assign]
    return conn


def cache_exists(cache: Cache) -> bool:
    return cache.exists()


def query(cache: Cache, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Rows of one query on a cache, from a connection of its own (as a second process would read it)."""
    conn = _connect(cache)
    try:
        return [tuple(row) for row in conn.execute(sql, params).fetchall()]
    finally:
        conn.close()


def wait_rows(cache: Cache, sql: str, *params: Any, timeout: float = 30) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` once there are some (a cache not yet created or migrated reads as none)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            rows = query(cache, sql, *params)
        except sqlite3.OperationalError:
            rows = []
        if rows:
            return rows
        time.sleep(0.05)
    raise AssertionError(f"nothing for {sql} within {timeout}s")


class Notes:
    """The recorder's progress, kept: warnings and notes as a person reads them, the rest ignored."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def kind_progress(self, gvk: Any, stats: Any) -> None: ...
    def synced(self, seconds: float) -> None: ...
    def live(self, **kw: Any) -> None: ...
    def reconciled(self, report: Any) -> None: ...
    def close(self) -> None: ...

    def warn(self, message: str) -> None:
        self.lines.append(f"Warning: {message}")

    def note(self, message: str) -> None:
        self.lines.append(message)


def integrity_check(cache: Cache) -> str:
    """sqlite's own check of every page; in PostgreSQL (whose server keeps its pages whole across a client's
    crash) that every table of the history reads to its end."""
    conn = _connect(cache)
    try:
        if isinstance(cache, Path):
            return " ".join(str(row[0]) for row in conn.execute("PRAGMA integrity_check").fetchall())
        for table in ("runs", "events", "objects", "pods", "owners", "watch_state", "coverage_gaps", "event_counts", "event_objects"):
            conn.execute(f"SELECT count(*) FROM {table}").fetchone()
        return "ok"
    finally:
        conn.close()


def committed_events(cache: Cache) -> dict[int, tuple[Any, ...]]:
    """Every event row committed so far: id -> (ts, gvk, namespace, name, op, spec_hash)."""
    conn = _connect(cache)
    try:
        rows = conn.execute("SELECT id, ts, gvk, namespace, name, op, spec_hash FROM events").fetchall()
    finally:
        conn.close()
    return {row[0]: tuple(row[1:]) for row in rows}


Key = tuple[str, str, str]  # (gvk, namespace, name)


@dataclass(frozen=True)
class RunRow:
    started: float
    synced: float | None
    stopped: float
    clean: bool
    id: int = 0


def runs(cache: Cache) -> list[RunRow]:
    conn = _connect(cache)
    try:
        rows = conn.execute("SELECT started, synced, stopped, clean, id FROM runs ORDER BY id").fetchall()
    finally:
        conn.close()
    return [RunRow(r[0], r[1], r[2], bool(r[3]), r[4]) for r in rows]


@dataclass(frozen=True)
class Recorded:
    """One event row a recorder committed: which run, when it received it, what it stamped it with."""

    run_id: int
    ts: int
    recv: float
    gvk: str
    namespace: str
    name: str
    uid: str
    deleted: bool
    inferred: bool
    spec_hash: int | None


def recorded(cache: Cache) -> list[Recorded]:
    """Every event row committed so far, in the order it was written."""
    conn = _connect(cache)
    try:
        rows = conn.execute(
            "SELECT run_id, ts, recv, gvk, namespace, name, uid, op, inferred, spec_hash FROM events ORDER BY id").fetchall()
    finally:
        conn.close()
    u64 = 1 << 64
    return [Recorded(r[0], r[1], r[2], r[3], r[4], r[5], r[6], bool(r[7]), bool(r[8]),
                     None if r[9] is None else r[9] + u64 if r[9] < 0 else r[9]) for r in rows]


def wait_recorded(cache: Cache, keys: Sequence[Key], *, timeout: float) -> None:
    """Wait until the cache holds a committed event of each key (gvk, namespace, name)."""
    deadline = time.monotonic() + timeout
    while True:
        have = {(row[1], row[2], row[3]) for row in committed_events(cache).values()} if cache_exists(cache) else set()
        missing = [k for k in keys if k not in have]
        if not missing:
            return
        assert time.monotonic() < deadline, f"the recorder did not record {missing} within {timeout}s"
        time.sleep(0.05)


def settle(emu: Any, cache: Cache, truth: GroundTruth, namespace: str, *, timeout: float = 60.0) -> float:
    """Make the end of the history observable, without waiting on luck: one last change of every tracked kind
    the cluster changed in ``namespace`` (a new object ``settle-probe``), made after everything else, waited
    for in the cache. A watch delivers a kind's changes in the order they were made, so once the recorder
    committed the last one it had every earlier one. Returns the time the recorder had them all."""
    from sktrace_emulator.builders import sample_pod_template

    keys: list[Key] = []
    for gvk in sorted({c.gvk for c in truth.snapshot() if c.namespace == namespace}):
        api_version, kind = gvk.rsplit(".", 1)
        template = sample_pod_template(random.Random(0), app="settle-probe")
        if kind == "CronJob":
            spec: dict[str, Any] = {"schedule": "@yearly", "jobTemplate": {"spec": {"template": template}}}
        else:
            spec = {"selector": {"matchLabels": dict(template["metadata"]["labels"])}, "template": template}
        emu.create({"apiVersion": api_version, "kind": kind, "metadata": {"name": "settle-probe", "namespace": namespace}, "spec": spec})
        keys.append((gvk, namespace, "settle-probe"))
    wait_recorded(cache, keys, timeout=timeout)
    return time.time()


# --- comparing an export with the ground truth --------------------------------------------------------------


@dataclass
class _Life:
    """One lifetime of an object: one uid in the truth, one stretch between exported deletions in the export."""

    first: float
    deleted: float | None = None
    hashes: list[tuple[float, int | None]] = field(default_factory=list)
    created: float | None = None


@dataclass(frozen=True)
class _Version:
    """One spec version of a true lifetime, with the stamps an export may give it."""

    start: float
    spec_hash: int | None
    required: bool  # some recorder surely recorded it
    lower: int
    upper: float  # inf: nothing bounds it


@dataclass
class _TrueLife:
    life: _Life
    observable: bool
    required: bool
    first_lower: int  # the earliest stamp of its first exported apply
    versions: list[_Version]
    deletion_bounds: tuple[int, float] | None  # (lower, upper) of its deletion's stamp; None: not deleted


@dataclass
class _Pairing:
    problems: list[str]
    shared: int
    versions_checked: int
    deletion_checked: bool


@dataclass
class Comparison:
    truth_changes: int = 0
    exported_events: int = 0
    exported_changes: int = 0
    deletions_checked: int = 0
    versions_checked: int = 0
    lifecycles_checked: int = 0
    problems: list[str] = field(default_factory=list)

    def figures(self) -> str:
        return (f"{self.truth_changes} true changes, {self.exported_events} exported events holding "
                f"{self.exported_changes} object changes, {self.deletions_checked} deletions and "
                f"{self.versions_checked} spec versions and {self.lifecycles_checked} pod lifecycles checked")


def _truth_lives(changes: Sequence[Change]) -> dict[Key, list[_Life]]:
    lives: dict[Key, dict[str, _Life]] = {}
    for c in changes:
        by_uid = lives.setdefault((c.gvk, c.namespace, c.name), {})
        life = by_uid.setdefault(c.uid, _Life(first=c.t, created=c.created))
        if c.type == "DELETED":
            life.deleted = c.t
        else:
            life.hashes.append((c.t, c.spec_hash))
    return {k: sorted(v.values(), key=lambda life: life.first) for k, v in lives.items()}


def _exported_lives(trace: Any, namespaces: frozenset[str]) -> tuple[dict[Key, list[_Life]], int, list[str]]:
    from kubectl_sktrace.trace.hashing import spec_hash
    from kubectl_sktrace.trace.sanitize import object_key

    lives: dict[Key, list[_Life]] = {}
    changes, duplicates = 0, []
    for event in trace.events:
        ts = event["ts"]
        # SimKube's driver applies an event's applied objects, then deletes its deleted ones
        for op, objs in (("applied", event["applied_objs"]), ("deleted", event["deleted_objs"])):
            for obj in objs:
                key_obj = object_key(obj)
                assert key_obj is not None
                key = (str(key_obj.gvk), key_obj.namespace, key_obj.name)
                if key_obj.namespace not in namespaces:
                    continue
                changes += 1
                stretch = lives.setdefault(key, [])
                if op == "deleted":
                    if not stretch or stretch[-1].deleted is not None:
                        duplicates.append(f"{key}: deleted at {ts} while not live in the export (duplicate or invented)")
                        continue
                    stretch[-1].deleted = ts
                else:
                    h = spec_hash(obj.get("spec"))
                    if not stretch or stretch[-1].deleted is not None:
                        stretch.append(_Life(first=ts))
                    elif stretch[-1].hashes and stretch[-1].hashes[-1][1] == h:
                        duplicates.append(f"{key}: applied twice with the same spec at {stretch[-1].hashes[-1][0]} and {ts}")
                    stretch[-1].hashes.append((ts, h))
    return lives, changes, duplicates


def _versions(hashes: Sequence[tuple[float, int | None]], end: float | None) -> list[tuple[float, float | None, int | None]]:
    """Spec versions as (from, until, hash); until is None for the spec at the end. Status-only changes keep
    the version."""
    out: list[tuple[float, float | None, int | None]] = []
    for t, h in hashes:
        if not out or out[-1][2] != h:
            if out:
                out[-1] = (out[-1][0], t, out[-1][2])
            out.append((t, None, h))
    if out and end is not None:
        out[-1] = (out[-1][0], end, out[-1][2])
    return out


class _Coverage:
    """What the recorders could see, what they surely recorded, and the stamps they could give: the rules of
    ``compare``, from the run rows, the committed event rows and the truth."""

    def __init__(self, *, changes: Sequence[Change], run_rows: Sequence[RunRow], rows: Sequence[Recorded],
                 blind: Sequence[tuple[float, float]]) -> None:
        self.runs = sorted(run_rows, key=lambda r: r.started)
        self.synced = [r for r in self.runs if r.synced is not None]
        self.blind = list(blind)
        # the earliest true time of each (uid, spec hash) and of each uid's deletion: a row that recorded one of
        # them proves its watch had delivered the stream at least that far
        applied_at: dict[tuple[str, int | None], float] = {}
        deleted_at: dict[str, float] = {}
        for c in changes:
            if c.type == "DELETED":
                deleted_at.setdefault(c.uid, c.t)
            else:
                applied_at.setdefault((c.uid, c.spec_hash), c.t)
        by_id = {r.id: r for r in self.runs}
        # per kind: (true time of the change, stamp, receive time, run) of every watched change
        self.watched: dict[str, list[tuple[float, int, float, RunRow]]] = {}
        for row in rows:
            run = by_id.get(row.run_id)
            if run is None or run.synced is None or row.recv < run.synced or row.inferred:
                continue  # not surely a watch event (a list's rows are stamped by the list's rules)
            t = deleted_at.get(row.uid) if row.deleted else applied_at.get((row.uid, row.spec_hash))
            if t is not None:  # a row that matches no true change proves nothing (it is reported as invented)
                self.watched.setdefault(row.gvk, []).append((t, row.ts, row.recv, run))

    def observable(self, start: float, end: float | None) -> bool:
        """Whether any recorder could have seen an object that lived from ``start`` to ``end``: a run committed
        only what it received before its ``stopped``, and listed or watched only what existed after its start."""
        return any(start <= r.stopped and (end is None or end >= r.started) for r in self.runs)

    def lower(self, t: float) -> int:
        """The earliest stamp of a change made at ``t``."""
        low = math.floor(t)
        for r in self.runs:
            if r.started <= t <= (r.synced if r.synced is not None else r.stopped):
                low = min(low, math.floor(r.started))
        for a, b in self.blind:
            if a <= t <= b:
                low = min(low, math.floor(a))
        return low

    def upper(self, gvk: str, t: float) -> float:
        """The latest stamp of a change made at ``t`` that a recorder recorded (inf: nothing bounds it)."""
        bounds = [float(math.floor(r.synced)) for r in self.synced if r.started >= t and r.synced is not None]
        bounds += [float(stamp) for t2, stamp, _, _ in self.watched.get(gvk, ()) if t2 >= t]
        return min(bounds, default=math.inf)

    def _delivered(self, run: RunRow, gvk: str, t: float) -> bool:
        """Whether ``run``'s watch of ``gvk`` surely delivered a change made at ``t`` (and so committed it)."""
        return any(r is run and t2 >= t and not any(a <= recv and b >= t for a, b in self.blind)
                   for t2, _, recv, r in self.watched.get(gvk, ()))

    def required(self, gvk: str, start: float, end: float | None) -> bool:
        """Whether a state (an object, or one spec version of it) held from ``start`` until ``end`` (None: to
        the end) was surely recorded by some run."""
        for r in self.synced:
            assert r.synced is not None
            if start <= r.started and (end is None or end >= r.synced):
                return True  # it held through the run's first list
            if (end is None or end >= r.synced or start >= r.synced) and self._delivered(r, gvk, start):
                return True  # after the list's snapshot, the watch delivered it
        return False


def _true_life(*, gvk: str, life: _Life, cov: _Coverage) -> _TrueLife:
    first_lower = cov.lower(life.first)
    if life.created is not None:
        first_lower = min(first_lower, math.floor(life.created))  # made while offline: stamped at its creationTimestamp
    versions = [
        _Version(start, h, cov.required(gvk, start, end), cov.lower(start), cov.upper(gvk, start))
        for start, end, h in _versions(life.hashes, life.deleted)
    ]
    deletion = None if life.deleted is None else (cov.lower(life.deleted), cov.upper(gvk, life.deleted))
    return _TrueLife(life, cov.observable(life.first, life.deleted), cov.required(gvk, life.first, life.deleted),
                     first_lower, versions, deletion)


def _bound(value: float) -> str:
    return "open" if value == math.inf else f"{value:.0f}"


def _pair(*, key: Key, e: _Life, t: _TrueLife) -> _Pairing | None:
    """The problems of taking the exported lifetime ``e`` for the true one ``t``; None when it cannot be it."""
    if e.first < t.first_lower or (t.deletion_bounds is not None and e.first > t.deletion_bounds[1]):
        return None
    problems: list[str] = []
    exported = {h for _, h in e.hashes}
    checked = 0
    for v in t.versions:
        if v.required:
            checked += 1
            if v.spec_hash not in exported:
                problems.append(f"{key}: the spec version of {v.start:.2f} (hash {v.spec_hash}) was lost")
    for i, (stamp, h) in enumerate(e.hashes):
        candidates = [v for v in t.versions if v.spec_hash == h]
        if not candidates:
            problems.append(f"{key}: spec hash {h} exported at {stamp}, a spec the object never had")
            continue
        lows = [min(v.lower, t.first_lower) if i == 0 else v.lower for v in candidates]
        if not any(low <= stamp <= v.upper for low, v in zip(lows, candidates)):
            v = candidates[0]
            problems.append(f"{key}: the spec version of {v.start:.2f} (hash {h}) exported at {stamp}, "
                            f"outside its bounds {lows[0]}..{_bound(v.upper)}")
    true_deleted = t.life.deleted
    if true_deleted is None:
        if e.deleted is not None:
            problems.append(f"{key}: deletion at {e.deleted} invented (the object still exists)")
        return _Pairing(problems, len(exported & {v.spec_hash for v in t.versions}), checked, False)
    assert t.deletion_bounds is not None
    low, high = t.deletion_bounds
    if e.deleted is None:
        if high < math.inf:  # a recorder surely saw it gone
            problems.append(f"{key}: deletion at {true_deleted:.2f} missed")
    elif not low <= e.deleted <= high:
        problems.append(f"{key}: deleted at {true_deleted:.2f} but exported at {e.deleted} (bounds {low}..{_bound(high)})")
    return _Pairing(problems, len(exported & {v.spec_hash for v in t.versions}), checked, True)


def _align(*, key: Key, exported: Sequence[_Life], truth: Sequence[_TrueLife]
           ) -> tuple[list[tuple[_Life, _TrueLife, _Pairing]], list[_Life], list[_TrueLife]]:
    """The best assignment of exported lifetimes to true ones: fewest problems, then most spec hashes shared.

    The lifetimes of one name follow each other in both histories, so an assignment keeps their order: a
    weighted alignment of the two sequences, by dynamic programming over (exported i, true j).
    """
    n, m = len(exported), len(truth)
    pairs = {(i, j): _pair(key=key, e=exported[i], t=truth[j]) for i in range(n) for j in range(m)}
    # best[i][j]: (problems, -shared) of the best alignment of exported[i:] with truth[j:]
    best = [[(0, 0)] * (m + 1) for _ in range(n + 1)]
    choice: list[list[str]] = [[""] * (m + 1) for _ in range(n + 1)]
    for i in range(n, -1, -1):
        for j in range(m, -1, -1):
            options: list[tuple[tuple[int, int], str]] = []  # on a tie the first wins: a pairing says more
            if i < n and j < m and (pairing := pairs[(i, j)]) is not None:
                p, s = best[i + 1][j + 1]
                options.append(((p + len(pairing.problems), s - pairing.shared), "p"))
            if j < m:
                p, s = best[i][j + 1]
                options.append(((p + int(truth[j].required), s), "t"))  # true lifetime missing (when required)
            if i < n:
                p, s = best[i + 1][j]
                options.append(((p + 1, s), "e"))  # exported lifetime invented
            if options:
                best[i][j], choice[i][j] = min(options, key=lambda o: o[0])
    matched, invented, missing = [], [], []
    i = j = 0
    while i < n or j < m:
        step = choice[i][j]
        if step == "p":
            pairing = pairs[(i, j)]
            assert pairing is not None
            matched.append((exported[i], truth[j], pairing))
            i, j = i + 1, j + 1
        elif step == "e":
            invented.append(exported[i])
            i += 1
        else:
            missing.append(truth[j])
            j += 1
    return matched, invented, missing


def compare(changes: Sequence[Change], trace: Any, run_rows: Sequence[RunRow], *, namespaces: frozenset[str],
            rows: Sequence[Recorded] = (), blind: Sequence[tuple[float, float]] = ()) -> Comparison:
    """Judge an export against what the cluster did: nothing lost, duplicated, invented or missed.

    ``changes`` is the truth (``GroundTruth``), ``run_rows`` and ``rows`` what the cache says of its runs and
    the event rows they committed (``runs``, ``recorded``), ``blind`` the periods of a fault during which a
    relist may legitimately skip what came and went (410 Gone). Per object name, the exported lifetimes are
    assigned to true lifetimes (uids) by the best assignment (``_align``): fewest problems, then most spec
    hashes shared; a lifetime no recorder could have observed is never offered. Then:

    - every exported lifetime is a true one (no invented object), with only spec hashes it really had;
    - a true deletion is exported once when some recorder surely saw it, and never invented;
    - every spec version and every object some recorder surely recorded is exported;
    - every stamp lies within the bounds below; the final state and index equal the cluster's.

    No slack is guessed: the bounds follow from what the recorder guarantees (docs/spec.md §4-§6).

    - A change's true time ``t`` is taken under the store's lock after its commit, before any list or watch
      can read it, and a stamp is the integer second of a receive time, so a watched change is stamped at or
      after ``floor(t)``. What a run's first lists find is stamped at the list's start (changed objects), or
      at the run's start (objects gone), so a change made while a run's first lists ran (between ``started``
      and ``synced``) may be stamped as early as ``floor(started)``. An object made while offline may be
      stamped at its ``creationTimestamp`` (whole seconds, taken before the commit). A relist in a blind
      period is stamped at its own start: no earlier than the period's start.
    - A run moves ``stopped`` at every commit (at least every half second, so a ``kill -9`` loses at most
      what it received in its last half second): a run's ``stopped`` is its last commit, everything it
      committed it received before then, and what it received after is lost. The checks use that last
      commit itself, not the kill's time less half a second, so they hold even when a loaded machine
      stretches the half second. A lifetime that ended before a run started or began after it stopped was
      not observable by that run; one observable by no run is never offered to the export.
    - A run that started after ``t`` and synced listed every kind after ``t``: whatever state the change left
      was recorded by its ``synced`` at the latest (or earlier, by a previous run).
    - A watch delivers a kind's changes in the order the store committed them, and a run commits what it
      received in that order. So a watched event row (received after its run synced, not inferred) that
      records a change made at ``t2`` proves that every change of that kind made at ``t <= t2`` was
      delivered before it and committed with it or earlier, stamped no later than that row: this bounds
      stamps from above, and makes a state that held from ``start`` (``<= t2``) until after the run's lists
      required in the export. A state that held through a synced run's first list is required too. No
      bound relies on how fast a change travels from the store to the recorder.
    """
    report = Comparison()
    changes = [c for c in changes if c.namespace in namespaces]
    rows = [r for r in rows if r.namespace in namespaces]
    report.truth_changes = len(changes)
    report.exported_events = len(trace.events)
    cov = _Coverage(changes=changes, run_rows=run_rows, rows=rows, blind=blind)
    truth = _truth_lives(changes)
    exported, report.exported_changes, duplicates = _exported_lives(trace, namespaces)
    report.problems.extend(duplicates)
    for key in sorted(set(truth) | set(exported)):
        lives = [_true_life(gvk=key[0], life=life, cov=cov) for life in truth.get(key, [])]
        matched, invented, missing = _align(key=key, exported=exported.get(key, []), truth=[t for t in lives if t.observable])
        for e in invented:
            report.problems.append(f"{key}: exported as applied at {e.first} but no such object existed then")
        for _, t, pairing in matched:
            report.problems.extend(pairing.problems)
            report.versions_checked += pairing.versions_checked
            report.deletions_checked += int(pairing.deletion_checked)
        for t in missing:
            if t.required:
                gone = "never deleted" if t.life.deleted is None else f"deleted at {t.life.deleted:.2f}"
                report.problems.append(f"{key}: the object made at {t.life.first:.2f} ({gone}) is missing from the export")
    _compare_final_state(changes, trace, exported, report)
    return report


def _compare_final_state(changes: Sequence[Change], trace: Any, exported: dict[Key, list[_Life]], report: Comparison) -> None:
    truth_live: dict[Key, int | None] = {}
    for c in changes:
        key = (c.gvk, c.namespace, c.name)
        if c.type == "DELETED":
            truth_live.pop(key, None)
        else:
            truth_live[key] = c.spec_hash
    export_live = {k: lives[-1].hashes[-1][1] for k, lives in exported.items() if lives and lives[-1].deleted is None and lives[-1].hashes}
    for key in sorted(set(truth_live) ^ set(export_live)):
        where = "exists in the cluster but not in the export" if key in truth_live else "is live in the export but gone from the cluster"
        report.problems.append(f"{key}: at the end it {where}")
    for key in sorted(set(truth_live) & set(export_live)):
        gvk, ns, name = key
        if truth_live[key] != export_live[key]:
            report.problems.append(f"{key}: final spec hash {export_live[key]} in the export, {truth_live[key]} in the cluster")
        if trace.index.get(gvk, {}).get(f"{ns}/{name}") != truth_live[key]:
            report.problems.append(f"{key}: the index holds {trace.index.get(gvk, {}).get(f'{ns}/{name}')}, the cluster {truth_live[key]}")


def check_lifecycles(trace: Any, started: dict[tuple[str, str], int], report: Comparison) -> None:
    """No lifecycle invented or duplicated: per owner at most one per pod that really started; Finished ends
    no earlier than it starts; every owner is in the index."""
    for owner, by_hash in trace.pod_lifecycles.items():
        entries = [entry for lifecycles in by_hash.values() for entry in lifecycles]
        report.lifecycles_checked += len(entries)
        if len(entries) > started.get(owner, 0):
            report.problems.append(f"{owner}: {len(entries)} pod lifecycles exported, but only {started.get(owner, 0)} pods started")
        for entry in entries:
            if "Finished" in entry and entry["Finished"][0] > entry["Finished"][1]:
                report.problems.append(f"{owner}: lifecycle {entry} ends before it starts")
        gvk, ns_name = owner
        if ns_name not in trace.index.get(gvk, {}):
            report.problems.append(f"{owner}: has pod lifecycles but is not in the index")
