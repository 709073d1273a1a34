"""Shared helpers of the reliability suites (hostile inputs, security, crash, faults, concurrency).

Every suite runs the real console script ``kubectl-sktrace`` in a subprocess, the way a user does, with a
private HOME and XDG_STATE_HOME so that nothing reads or writes the real user's files. The helpers here
judge what a user sees: the exit code, exactly one ``Error:`` line, and no traceback.
"""

from __future__ import annotations

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


def run_cli(args: Sequence[str], *, home: Path, env: Mapping[str, str] | None = None, timeout: float = 60,
            preexec_fn: object = None) -> Run:
    """Run ``kubectl-sktrace ARGS`` as a user would; the process gets no stdin."""
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


class GroundTruth:
    """Every change to tracked kinds, taken at the emulator's store commit (the one place every write passes).

    Wrapping ``Store._commit`` is a test-only hook: the store is the source of truth a real API server's
    etcd would be, so what it commits is exactly what a perfect recorder would have seen.
    """

    def __init__(self, emu: Any) -> None:
        from kubectl_sktrace.hashing import spec_hash

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
                                               meta["uid"], spec_hash(body.get("spec"))))
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




class Traffic:
    """The workload's mix plus churn of tracked objects, in one thread (the workload is single-threaded)."""

    def __init__(self, emu: Any, *, seed: int, rate: float, namespace: str) -> None:
        from kubectl_sktrace.emulator.workload import Workload

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
        from kubectl_sktrace.emulator.state import ApiError, Filter
        from kubectl_sktrace.emulator.workload import deployment_object

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

    def __init__(self, *, kubeconfig: Path, cache: Path, home: Path, log: Path, args: Sequence[str] = (),
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


def integrity_check(cache: Path) -> str:
    conn = sqlite3.connect(cache, timeout=10)
    try:
        return " ".join(str(row[0]) for row in conn.execute("PRAGMA integrity_check").fetchall())
    finally:
        conn.close()


def committed_events(cache: Path) -> dict[int, tuple[Any, ...]]:
    """Every event row committed so far: id -> (ts, gvk, namespace, name, op, spec_hash)."""
    conn = sqlite3.connect(cache, timeout=10)
    try:
        rows = conn.execute("SELECT id, ts, gvk, namespace, name, op, spec_hash FROM events").fetchall()
    finally:
        conn.close()
    return {row[0]: tuple(row[1:]) for row in rows}


@dataclass(frozen=True)
class RunRow:
    started: float
    synced: float | None
    stopped: float
    clean: bool


def runs(cache: Path) -> list[RunRow]:
    conn = sqlite3.connect(cache, timeout=10)
    try:
        rows = conn.execute("SELECT started, synced, stopped, clean FROM runs ORDER BY id").fetchall()
    finally:
        conn.close()
    return [RunRow(r[0], r[1], r[2], bool(r[3])) for r in rows]


# --- comparing an export with the ground truth --------------------------------------------------------------

Key = tuple[str, str, str]


@dataclass
class _Life:
    """One lifetime of an object (one uid, or one stretch between exported deletions)."""

    first: float
    deleted: float | None = None
    hashes: list[tuple[float, int | None]] = field(default_factory=list)
    matched: bool = False


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
        life = by_uid.setdefault(c.uid, _Life(first=c.t))
        if c.type == "DELETED":
            life.deleted = c.t
        else:
            life.hashes.append((c.t, c.spec_hash))
    return {k: sorted(v.values(), key=lambda life: life.first) for k, v in lives.items()}


def _exported_lives(trace: Any, namespaces: frozenset[str]) -> tuple[dict[Key, list[_Life]], int, list[str]]:
    from kubectl_sktrace.hashing import spec_hash
    from kubectl_sktrace.inspection import object_key

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


def _observed(t: float, run_rows: Sequence[RunRow], *, margin: float, blind: Sequence[tuple[float, float]] = ()) -> bool:
    """Whether a change at ``t`` happened while a synced recorder was surely running and committing.

    ``stopped`` is the run's last commit (a heartbeat moved at every commit, at least every half second), so a
    change delivered ``margin`` before it was in a committed batch. ``blind`` periods are faults during which
    the recorder may legitimately see only the state after them (a relist after 410).
    """
    if any(a - margin <= t <= b for a, b in blind):
        return False
    return any(r.synced is not None and r.synced <= t <= r.stopped - margin for r in run_rows)


def _versions(hashes: Sequence[tuple[float, int | None]], end: float | None) -> list[tuple[float, float, int | None]]:
    """Spec versions as (from, until, hash): status-only changes keep the version."""
    out: list[tuple[float, float, int | None]] = []
    for t, h in hashes:
        if not out or out[-1][2] != h:
            if out:
                out[-1] = (out[-1][0], t, out[-1][2])
            out.append((t, float("inf"), h))
    if out and end is not None:
        out[-1] = (out[-1][0], end, out[-1][2])
    return out


def _next_sync_after(t: float, run_rows: Sequence[RunRow]) -> float | None:
    later = [r.synced for r in run_rows if r.synced is not None and r.started > t]
    return min(later) if later else None


def compare(changes: Sequence[Change], trace: Any, run_rows: Sequence[RunRow], *, namespaces: frozenset[str],
            slack: float = 2.0, blind: Sequence[tuple[float, float]] = ()) -> Comparison:
    """Judge an export against what the cluster did: nothing lost, duplicated, invented or missed.

    - every exported object lifetime matches a true one (no invented object, no invented deletion);
    - every true deletion of an object the recorder knew is exported once, at a time between the deletion and
      the next recorder's sync (tight when a recorder was watching);
    - every spec version that lived a second or more while a synced recorder ran is exported;
    - an object that lived across a sync, or was made while a recorder watched, is exported;
    - the final state and index equal the cluster's final state.
    """
    report = Comparison()
    changes = [c for c in changes if c.namespace in namespaces]
    report.truth_changes = len(changes)
    report.exported_events = len(trace.events)
    truth = _truth_lives(changes)
    exported, report.exported_changes, duplicates = _exported_lives(trace, namespaces)
    report.problems.extend(duplicates)
    for key in sorted(set(truth) | set(exported)):
        t_lives, e_lives = truth.get(key, []), exported.get(key, [])
        for e in e_lives:
            match = next((t for t in t_lives if not t.matched and t.first <= e.first + slack
                          and (t.deleted is None or t.deleted >= e.first - slack)), None)
            if match is None:
                report.problems.append(f"{key}: exported as applied at {e.first} but no such object existed then")
                continue
            match.matched = True
            exported_hashes = {eh for _, eh in e.hashes}
            for t, lived_until, h in _versions(match.hashes, match.deleted):
                if lived_until - t >= 1.0 and _observed(t, run_rows, margin=0.5, blind=blind):
                    report.versions_checked += 1
                    if h not in exported_hashes:
                        report.problems.append(f"{key}: the spec version of {t:.2f} (hash {h}) was lost")
            if match.deleted is None:
                if e.deleted is not None:
                    report.problems.append(f"{key}: deletion at {e.deleted} invented (the object still exists)")
                continue
            report.deletions_checked += 1
            if e.deleted is None:
                report.problems.append(f"{key}: deletion at {match.deleted:.2f} missed")
                continue
            in_blind = [b for a, b in blind if a - slack <= match.deleted <= b]
            if in_blind:
                upper = max(in_blind) + slack
            elif _observed(match.deleted, run_rows, margin=0.5):
                upper = match.deleted + slack
            else:
                upper = (_next_sync_after(match.deleted, run_rows) or match.deleted) + slack
            if not (match.deleted - slack <= e.deleted <= upper):
                report.problems.append(f"{key}: deleted at {match.deleted:.2f} but exported at {e.deleted} (bounds up to {upper:.2f})")
        for t in t_lives:
            if t.matched:
                continue
            across_sync = any(r.synced is not None and t.first + slack <= r.started and (t.deleted is None or t.deleted >= r.synced + slack)
                              for r in run_rows)
            if across_sync or _observed(t.first, run_rows, margin=1.5, blind=blind) and (t.deleted is None or t.deleted - t.first > slack):
                report.problems.append(f"{key}: the object made at {t.first:.2f} (deleted {t.deleted}) is missing from the export")
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
