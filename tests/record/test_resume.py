"""A restart that resumes each kind's watch where the last run stopped reconciles the cluster as a restart that lists.

Against the emulator, through the CLI: a cluster with a list page of each kind (``resuming.RESUME_AT_LEAST``) is
recorded, then changed at random while no recorder runs (specs, labels, data, deletions, re-creations under the same
name, pods started, finished, created and gone), and the same cache is restarted twice against the same cluster: once
as it is (its watches resume: no list), once with its positions unmarked, as an older recorder leaves them (it lists).
The two caches must then hold the same history, column by column, where the list could know it:

- ``objects`` (the live index: key, uid, spec, metadata and data hashes): equal.
- ``events`` of the restart, per object identity (key and uid) the list saw: the last row equal in ``inferred``,
  ``spec_hash``, whether a deletion, and its object (a revision made whole on its base, as export reads it: a spec and
  a label changed meanwhile are one spec version to a list, two versions to a watch), and in ``ts`` once the restart's
  own second is read as "the restart" (each run stamps
  what it found then at its own start; creations and re-creations carry their ``creationTimestamp``, equal). The
  resumed run also has the versions in between, and the objects created and deleted while stopped (their last row a
  deletion): what a list cannot see.
- ``pods``: owner, stable hash and liveness equal; the lifecycle equal, or, where the list inferred its end at the
  restart (``end_inferred``) or never saw it start (a pod that ran and went while stopped), the resumed run's real one,
  read from the pod's last state. Pods that came and went while stopped are only the resumed
  run's, never live. (``recv``, ``first_seen`` and ``status_changes`` differ by design: receipt times, and the list's
  restart writes every status it finds as reconstructed.)
"""

from __future__ import annotations

import random
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from reliability_support import run_cli

from kubectl_sktrace.record.resuming import RESUME_AT_LEAST
from kubectl_sktrace.store.bodies import decode_body
from kubectl_sktrace.store.recording import OP_APPLIED, OP_DELETED
from kubectl_sktrace.trace.revisions import with_spec

pytestmark = pytest.mark.timeout(300)

NS = "resume"
SIZE = RESUME_AT_LEAST
CONFIG = "trackedObjects:\n  apps/v1.Deployment: {}\n  v1.ConfigMap: {}\n"


def _configmap(name: str, rng: random.Random) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS, "labels": {"app": name}},
            "data": {"mode": rng.choice(["a", "b", "c"])}}


def _pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS, "labels": {"app": name}},
            "spec": {"containers": [{"name": "main", "image": f"busy:{name}"}]}}


def _deployment(name: str, rng: random.Random) -> dict[str, Any]:
    from sktrace_emulator.builders import deployment_object

    return {"apiVersion": "apps/v1", "kind": "Deployment", **deployment_object(NS, name, replicas=0, rng=rng)}


def _cluster(emu: Any, rng: random.Random) -> None:
    for i in range(SIZE):
        emu.create(_deployment(f"d{i}", rng))
        emu.create(_configmap(f"c{i}", rng))
        emu.create(_pod(f"p{i}"))


def _start_pod(emu: Any, name: str, rng: random.Random, *, finish: bool) -> None:
    from sktrace_emulator.builders import finished_status, running_status

    pod = emu.get("v1", "Pod", NS, name)
    pod["status"] = running_status(pod, started=time.time() - 1, rng=rng)
    pod = emu.update_status(pod)
    if finish:
        pod["status"] = finished_status(pod, finished=time.time())
        emu.update_status(pod)


def _changes(emu: Any, rng: random.Random) -> None:
    """Random changes while no recorder runs: a tenth of the objects, some of them several times."""
    for i in rng.sample(range(SIZE), SIZE // 10):
        what = rng.choice(["spec", "labels", "both", "delete", "recreate", "created"])
        name = f"d{i}"
        if what in ("spec", "both"):
            emu.patch("apps/v1", "Deployment", NS, name, {"spec": {"minReadySeconds": rng.randint(1, 60)}})
        if what in ("labels", "both"):
            emu.patch("apps/v1", "Deployment", NS, name, {"metadata": {"labels": {"tier": rng.choice("xyz")}}})
        if what in ("delete", "recreate"):
            emu.delete("apps/v1", "Deployment", NS, name, graceful=False)
        if what == "recreate":
            emu.create(_deployment(name, rng))
        if what == "created":
            emu.create(_deployment(f"new-{i}", rng))
            if rng.random() < 0.5:
                emu.delete("apps/v1", "Deployment", NS, f"new-{i}", graceful=False)
    for i in rng.sample(range(SIZE), SIZE // 10):
        what, name = rng.choice(["data", "labels", "delete", "recreate"]), f"c{i}"
        if what == "data":
            emu.patch("v1", "ConfigMap", NS, name, {"data": {"mode": "changed", "extra": str(i)}})
        elif what == "labels":
            emu.patch("v1", "ConfigMap", NS, name, {"metadata": {"labels": {"tier": "x"}}})
        else:
            emu.delete("v1", "ConfigMap", NS, name, graceful=False)
            if what == "recreate":
                emu.create(_configmap(name, rng))
    for i in rng.sample(range(SIZE), SIZE // 10):
        what, name = rng.choice(["start", "finish", "delete", "finish-delete", "new", "new-gone"]), f"p{i}"
        if what in ("start", "finish", "finish-delete"):
            _start_pod(emu, name, rng, finish=what != "start")
        if what in ("delete", "finish-delete"):
            emu.delete("v1", "Pod", NS, name, graceful=False)
        if what in ("new", "new-gone"):
            emu.create(_pod(f"q{i}"))
            _start_pod(emu, f"q{i}", rng, finish=True)
            if what == "new-gone":
                emu.delete("v1", "Pod", NS, f"q{i}", graceful=False)


def _start(tmp_path: Path, kubeconfig: Path, cache: Path, config: Path) -> str:
    run = run_cli(["start", "--kubeconfig", str(kubeconfig), "--cache", str(cache), "--config", str(config), "-n", NS,
                   "--duration", "4s"], home=tmp_path, timeout=120)
    assert run.code == 0, run.describe()
    assert "initial sync done" in run.stderr, run.describe()
    return run.stderr


def _rows(cache: Path) -> dict[str, Any]:
    conn = sqlite3.connect(cache)
    try:
        (run, started), = conn.execute("SELECT id, started FROM runs ORDER BY id DESC LIMIT 1").fetchall()
        last: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        bases: dict[tuple[Any, ...], Any] = {}  # the object's last spec version before this run, or in it
        for gvk, ns, name, uid, op, body in conn.execute(
                "SELECT gvk, namespace, name, uid, op, body FROM events WHERE run_id < ? AND op = 0 ORDER BY id", (run,)):
            bases[(gvk, ns, name, uid)] = decode_body(body)
        for gvk, ns, name, uid, op, inferred, spec_hash, body, ts in conn.execute(
                "SELECT gvk, namespace, name, uid, op, inferred, spec_hash, body, ts FROM events WHERE run_id = ? ORDER BY id", (run,)):
            identity = (gvk, ns, name, uid)
            obj = None if body is None else decode_body(body)
            if op == OP_APPLIED:
                bases[identity] = obj
            elif op != OP_DELETED:  # a revision, made whole on its base as an export reads it
                obj = with_spec(obj or {}, bases.get(identity))
            last[identity] = ("deleted" if op == OP_DELETED else "version", inferred, spec_hash, obj,
                              "restart" if ts >= int(started) else ts)
        return {
            "objects": sorted(conn.execute("SELECT gvk, namespace, name, uid, spec_hash, meta_hash, data_hash FROM objects")),
            "events": last,
            "pods": {r[0]: r[1:] for r in conn.execute(
                "SELECT uid, namespace, name, owner_gvk, owner_name, stable_hash, start_ts, end_ts, end_inferred, live FROM pods")},
        }
    finally:
        conn.close()


def _knows_more(resumed: tuple[Any, ...], listed: tuple[Any, ...]) -> bool:
    """The resumed run saw how a pod ended while stopped, from its last state: a real end where the list inferred one at
    the restart (or saw none at all, for a pod that started and went while stopped)."""
    (start, end, inferred), (list_start, list_end, list_inferred) = resumed[5:8], listed[5:8]
    if list_start is None:
        return listed[8] == 0 and start is not None and end is not None and not inferred
    return start == list_start and list_inferred == 1 and end is not None and end <= list_end and not inferred


def _assert_same_history(resumed: dict[str, Any], listed: dict[str, Any]) -> None:
    assert resumed["objects"] == listed["objects"]
    for identity, row in listed["events"].items():
        assert resumed["events"].get(identity) == row, identity
    for identity, row in resumed["events"].items():
        if identity not in listed["events"]:
            assert row[0] == "deleted", f"{identity}: only the resumed run saw it, and it was not deleted"
    for uid, row in listed["pods"].items():
        mine = resumed["pods"][uid]
        assert mine[:5] == row[:5] and mine[8] == row[8], (uid, mine, row)
        assert mine[5:8] == row[5:8] or _knows_more(mine, row), (uid, mine, row)
    for uid in resumed["pods"].keys() - listed["pods"].keys():
        assert resumed["pods"][uid][8] == 0, uid


def _stopped_while_changing(emu: Any, rng: random.Random, tmp_path: Path) -> tuple[Path, Path, Path]:
    """A cluster recorded by a first run (its cache: the third path), then random changes while no recorder runs;
    returns the kubeconfig, the config and that cache."""
    kubeconfig, config, first = tmp_path / "kubeconfig", tmp_path / "config.yaml", tmp_path / "cache.db"
    emu.write_kubeconfig(kubeconfig)
    config.write_text(CONFIG)
    _cluster(emu, rng)
    _start(tmp_path, kubeconfig, first, config)
    time.sleep(1.0)  # offline from a whole second on: what happens now is after the run's last second
    _changes(emu, rng)
    time.sleep(1.0)  # the restarts begin in a later second than any change: "the restart" is not a creation's second
    return kubeconfig, config, first


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_resumed_restart_records_what_a_listed_one_does(tmp_path: Path, seed: int) -> None:
    from sktrace_emulator import Emulator

    rng = random.Random(seed)
    with Emulator(seed=seed) as emu:
        kubeconfig, config, first = _stopped_while_changing(emu, rng, tmp_path)
        resumed, listed = tmp_path / "resumed.db", tmp_path / "listed.db"
        shutil.copy(first, resumed)
        shutil.copy(first, listed)
        with sqlite3.connect(listed) as conn:  # as an older recorder leaves its positions: the restart lists
            conn.execute("UPDATE watch_state SET run = NULL")
        said = _start(tmp_path, kubeconfig, resumed, config)
        assert "resuming the watches of 3 kinds" in said, said
        assert "resuming" not in _start(tmp_path, kubeconfig, listed, config)
        _assert_same_history(_rows(resumed), _rows(listed))


def test_a_restart_the_server_forgot_lists(tmp_path: Path) -> None:
    """The server no longer holds the history since the last run (a 410): the resumed watch lists instead, and records
    exactly what a restart that listed from the start does."""
    from sktrace_emulator import Emulator

    rng = random.Random(7)
    with Emulator(seed=7) as emu:
        kubeconfig, config, first = _stopped_while_changing(emu, rng, tmp_path)
        emu.compact()  # the history before now is gone: a watch from an older version is answered 410
        resumed, listed = tmp_path / "resumed.db", tmp_path / "listed.db"
        shutil.copy(first, resumed)
        shutil.copy(first, listed)
        with sqlite3.connect(listed) as conn:
            conn.execute("UPDATE watch_state SET run = NULL")
        assert "resuming the watches of 3 kinds" in _start(tmp_path, kubeconfig, resumed, config)
        _start(tmp_path, kubeconfig, listed, config)
        mine, theirs = _rows(resumed), _rows(listed)
        assert mine["objects"] == theirs["objects"] and mine["pods"].keys() == theirs["pods"].keys()
        assert mine["events"] == theirs["events"]


def _everything(cache: Path) -> dict[str, Any]:
    """The rows of the last run (and what it left for the next), as two restarts of the same cluster at other seconds can
    share them: its own seconds read as "the restart", receipt times and the order kinds were written in left out."""
    conn = sqlite3.connect(cache)
    try:
        (run, started), = conn.execute("SELECT id, started FROM runs ORDER BY id DESC LIMIT 1").fetchall()

        def second(ts: int) -> int | str:
            return "restart" if ts >= int(started) else ts

        return {
            "objects": sorted(conn.execute("SELECT * FROM objects")),
            "events": sorted((*row[:-1], second(row[-1])) for row in conn.execute(
                "SELECT gvk, namespace, name, uid, op, inferred, spec_hash, owner_chain, body, status, refs, daemonset, ts FROM events "
                "WHERE run_id = ?", (run,))),
            "pods": sorted((*row[:-1], second(int(row[-1]))) for row in conn.execute(
                "SELECT uid, namespace, name, owner_gvk, owner_namespace, owner_name, stable_hash, start_ts, end_ts, end_inferred, live, "
                "first_seen FROM pods")),
            "statuses": sorted((*row[:-1], second(row[-1])) for row in conn.execute(
                "SELECT o.gvk, o.namespace, o.name, o.uid, s.inferred, s.form, s.body, s.ts FROM status_changes AS s "
                "JOIN status_objects AS o ON o.id = s.object WHERE s.run_id = ?", (run,))),
            "owners": sorted(conn.execute("SELECT gvk, namespace, name, uid, owner_refs FROM owners")),
            "created": sorted(conn.execute("SELECT * FROM created")),
            "positions": sorted(conn.execute("SELECT gvk, resource_version FROM watch_state")),
            "kept": sorted(conn.execute("SELECT * FROM stopped_versions")),
        }
    finally:
        conn.close()


SKIPPED = "as the last run's clean stop left them: not walked again"


@pytest.mark.parametrize("seed", [4, 5])
def test_a_listed_restart_that_skips_the_unchanged_records_what_one_that_walks_them_does(tmp_path: Path, seed: int) -> None:
    """The same cache restarted twice against the same cluster after random changes while stopped, both listing: once
    trusting what the last clean stop kept (the objects listed at the version it kept are not walked again), once with
    nothing kept (every object walked, as a recorder before schema 0020 does). Every row the restart writes is the same."""
    from sktrace_emulator import Emulator

    rng = random.Random(seed)
    with Emulator(seed=seed) as emu:
        kubeconfig, config, first = _stopped_while_changing(emu, rng, tmp_path)
        skipping, walking = tmp_path / "skipping.db", tmp_path / "walking.db"
        for path in (skipping, walking):
            shutil.copy(first, path)
            with sqlite3.connect(path) as conn:  # the restart lists, as after a 410
                conn.execute("UPDATE watch_state SET run = NULL")
                if path == walking:
                    conn.execute("DELETE FROM stopped_versions")
        assert SKIPPED in _start(tmp_path, kubeconfig, skipping, config)
        assert SKIPPED not in _start(tmp_path, kubeconfig, walking, config)
        mine, theirs = _everything(skipping), _everything(walking)
        assert mine == theirs
        assert len(mine["kept"]) >= len(mine["objects"])  # every live object and pod: the next restart skips them too


def test_a_run_that_crashed_leaves_nothing_the_next_start_skips(tmp_path: Path) -> None:
    """A recorder killed (no clean stop) may have applied versions it never kept: the next start trusts none of those
    the clean stop before it kept, and walks every object it lists; its own clean stop keeps them again."""
    import signal

    from reliability_support import Recorder

    from sktrace_emulator import Emulator

    rng = random.Random(9)
    with Emulator(seed=9) as emu:
        kubeconfig, config, cache = tmp_path / "kubeconfig", tmp_path / "config.yaml", tmp_path / "cache.db"
        emu.write_kubeconfig(kubeconfig)
        config.write_text(CONFIG)
        _cluster(emu, rng)
        _start(tmp_path, kubeconfig, cache, config)
        with sqlite3.connect(cache) as conn:
            conn.execute("UPDATE watch_state SET run = NULL")  # it lists
        killed = Recorder(kubeconfig=kubeconfig, cache=str(cache), home=tmp_path, log=tmp_path / "killed.log",
                          args=["--config", str(config), "-n", NS])
        assert killed.wait_for("initial sync done", timeout=60), killed.output()
        assert SKIPPED in killed.output()  # the clean stop before it is trusted
        _changes(emu, rng)  # seen live by the run that is then killed
        time.sleep(1.0)
        killed.signal(signal.SIGKILL)
        killed.proc.wait(timeout=30)
        with sqlite3.connect(cache) as conn:
            conn.execute("UPDATE watch_state SET run = NULL")  # it lists (a crashed run's positions are not resumed anyway)
        assert SKIPPED not in _start(tmp_path, kubeconfig, cache, config)
        assert SKIPPED in _start(tmp_path, kubeconfig, cache, config)
