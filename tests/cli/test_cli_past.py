"""``get --at``, ``history`` and ``diff`` against a history scripted on the emulator, compared with what real ``kubectl``
showed at the time.

The script creates, scales, re-images and labels Deployments, writes a ConfigMap's data, deletes objects, re-creates a
name, lets pods live and finish, stops the recorder while changes go on (the emulator writing its audit log), starts it
again and backfills the gap from the log. At chosen seconds it takes ``kubectl get -o json`` snapshots; afterwards
``kubectl sktrace get -o json --at T`` must equal each snapshot object for object, the fields the recorder never keeps
aside (``never_kept``: status, managedFields, resourceVersion, generation, the two churned annotations, a pod's node),
on sqlite and on PostgreSQL (the history copied); ``history`` lists the re-created name as two lives with the script's
changes at their seconds, and ``diff`` names exactly the objects whose snapshots differ.
"""

from __future__ import annotations

import hashlib
import json
import math
import queue
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from tests.audit.test_backfill_end_to_end import PATCH, deployment, settle
from tests.cli.test_cli_start import sktrace, start_background, stop, wait_synced
from tests.emulator.test_emulator_server import call

from sktrace_emulator import Emulator, Workload

pytestmark = pytest.mark.timeout(300)

NS = "shop"
KINDS = ("deployments", "configmaps", "pods")
CONFIG = "trackedObjects:\n  apps/v1.Deployment: {}\n  v1.ConfigMap: {}\n  v1.Pod: {}\n"
DEPLOYS = f"/apis/apps/v1/namespaces/{NS}/deployments"
CMS = f"/api/v1/namespaces/{NS}/configmaps"


def never_kept(obj: dict[str, Any]) -> dict[str, Any]:
    """A live object without what the recorder never keeps (docs/spec.md §4)."""
    out = {k: v for k, v in obj.items() if k != "status"}
    meta = {k: v for k, v in obj["metadata"].items()
            if k not in ("managedFields", "resourceVersion", "generation", "deletionTimestamp", "deletionGracePeriodSeconds")}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items()
                   if k not in ("kubectl.kubernetes.io/last-applied-configuration", "deployment.kubernetes.io/revision")}
    meta.pop("annotations", None)
    if annotations:
        meta["annotations"] = annotations
    if meta.get("labels") == {}:  # the API server omits an empty map (omitempty); the emulator sends {} after a merge patch
        del meta["labels"]
    out["metadata"] = meta
    if obj.get("kind") == "Pod":
        out["spec"] = {k: v for k, v in obj["spec"].items() if k != "nodeName"}
    return out


def kubectl(kubeconfig: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args], capture_output=True, text=True, timeout=60, check=True)


OFFLINE = slice(12, 15)
"""The script's snapshots taken while no recorder ran: a log fills pods' lifecycles there, not their objects."""


def caught_up(emu: Emulator, cache: str | None) -> None:
    """Until the running recorder has committed every change the emulator made: each watched kind's resourceVersion in the
    cache at or past that kind's last change (a recorder slowed down by a busy machine receives late, and a change
    received after a snapshot would be stamped in the snapshot's second). No recorder running (``cache`` None): at once."""
    if cache is None:
        return
    wanted = {f"{'' if not rtype.group else rtype.group + '/'}{rtype.version}.{rtype.kind}": history.last_rv
              for rtype, history in list(emu.store.histories.items())}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        conn = sqlite3.connect(f"file:{cache}?mode=rw", uri=True, timeout=10)
        try:
            have = {gvk: int(rv) for gvk, rv in conn.execute("SELECT gvk, resource_version FROM watch_state")}
        finally:
            conn.close()
        if have and all(have[gvk] >= rv for gvk, rv in wanted.items() if gvk in have):
            return
        time.sleep(0.05)
    raise AssertionError(f"the recorder did not catch up with the emulator within 60 s: {have} < {wanted}")


def snapshot(kubeconfig: str, emu: Emulator | None = None, cache: str | None = None) -> tuple[int, dict[str, dict[str, Any]]]:
    """Real kubectl's view, per kind then name, and a second it holds at: the controllers are quiet from before it (each
    steps only in ``settle``), the running recorder has received what they did (``caught_up``), and nothing is stamped
    from then until the second after kubectl answered."""
    if emu is not None:
        caught_up(emu, cache)
    time.sleep(0.5)
    taken = time.time()
    items = json.loads(kubectl(kubeconfig, "get", ",".join(KINDS), "-n", NS, "-o", "json").stdout)["items"]
    plural = {"Deployment": "deployments", "ConfigMap": "configmaps", "Pod": "pods"}
    found: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
    for obj in items:
        found[plural[obj["kind"]]][obj["metadata"]["name"]] = never_kept(obj)
    time.sleep(max(0.0, math.floor(time.time()) + 1.05 - time.time()))
    return math.floor(taken), found


def past(cache: str, kind: str, second: int, *extra: str) -> dict[str, dict[str, Any]]:
    """The objects at ``second``, status aside (the reduced status: ``test_cli_status_past``)."""
    done = sktrace("get", kind, "-n", NS, "--cache", cache, "--at", f"@{second}", "-o", "json", *extra)
    return {o["metadata"]["name"]: {k: v for k, v in o.items() if k != "status"} for o in json.loads(done.stdout)["items"]}


def patch(emu: Emulator, path: str, body: dict[str, Any]) -> int:
    status = call(emu, "PATCH", path, body, headers=PATCH)[0]
    assert status == 200, (path, status)
    return math.floor(time.time())


def configmap(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}, "data": data}


def script(emu: Emulator, kubeconfig: str, cache: str, log: Path) -> tuple[list[tuple[int, dict[str, Any]]], dict[str, list[tuple[str, int]]]]:
    """The history: snapshots at chosen seconds, and what was done to ``web`` and ``settings``, each with its second."""
    emu.enable_audit(log)
    wl = Workload(emu, start_delay=0.2, job_seconds=(0.5, 0.5))
    recorder = start_background(kubeconfig, cache, "--config", str(Path(cache).parent / "tracer.yaml"), duration="240")
    wait_synced(cache, 1, recorder)
    settle(wl)
    shots, done = [], {"web": [], "settings": []}
    assert call(emu, "POST", DEPLOYS, deployment("web", NS))[0] == 201
    done["web"].append(("created", math.floor(time.time())))
    assert call(emu, "POST", DEPLOYS, deployment("api", NS, replicas=2))[0] == 201
    assert call(emu, "POST", CMS, configmap("settings", {"mode": "a"}))[0] == 201
    done["settings"].append(("created", math.floor(time.time())))
    settle(wl)
    shots.append(snapshot(kubeconfig, emu, cache))
    done["web"].append(("spec", patch(emu, f"{DEPLOYS}/web/scale", {"spec": {"replicas": 3}})))
    done["settings"].append(("data", patch(emu, f"{CMS}/settings", {"data": {"mode": "b", "extra": "1"}})))
    settle(wl)
    shots.append(snapshot(kubeconfig, emu, cache))
    done["web"].append(("spec", patch(emu, f"{DEPLOYS}/web", {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.26"}]}}}})))
    settle(wl)
    shots.append(snapshot(kubeconfig, emu, cache))
    done["web"].append(("labels", patch(emu, f"{DEPLOYS}/web", {"metadata": {"labels": {"tier": "front"}}})))
    assert call(emu, "DELETE", f"{DEPLOYS}/api")[0] == 200
    settle(wl)
    shots.append(snapshot(kubeconfig, emu, cache))
    assert call(emu, "DELETE", f"{DEPLOYS}/web")[0] == 200
    done["web"].append(("deleted", math.floor(time.time())))
    settle(wl)
    shots.append(snapshot(kubeconfig, emu, cache))
    assert call(emu, "POST", DEPLOYS, deployment("web", NS, replicas=2, image="nginx:1.27"))[0] == 201
    done["web"].append(("created", math.floor(time.time())))
    settle(wl)
    shots.append(snapshot(kubeconfig, emu, cache))
    later_changes(emu, wl, kubeconfig, shots, done, cache)
    stop(recorder)  # offline: what follows only the audit log sees as it happens
    settle(wl)
    done["settings"].append(("data", patch(emu, f"{CMS}/settings", {"data": {"mode": "c"}})))
    done["web"].append(("spec", patch(emu, f"{DEPLOYS}/web/scale", {"spec": {"replicas": 1}})))
    settle(wl)
    shots.append(snapshot(kubeconfig))
    assert call(emu, "POST", DEPLOYS, deployment("batch", NS))[0] == 201
    settle(wl)
    shots.append(snapshot(kubeconfig))
    patch(emu, f"{DEPLOYS}/batch", {"metadata": {"labels": {"tier": "jobs"}}})
    settle(wl)
    shots.append(snapshot(kubeconfig))
    again = start_background(kubeconfig, cache, duration="240")
    wait_synced(cache, 2, again)
    settle(wl)
    shots.append(snapshot(kubeconfig, emu, cache))
    patch(emu, f"{DEPLOYS}/batch/scale", {"spec": {"replicas": 3}})
    settle(wl)
    shots.append(snapshot(kubeconfig, emu, cache))
    done["settings"].append(("data", patch(emu, f"{CMS}/settings", {"data": {"mode": "y"}})))
    assert call(emu, "DELETE", f"{DEPLOYS}/batch")[0] == 200
    settle(wl)
    shots.append(snapshot(kubeconfig, emu, cache))
    done["web"].append(("spec", patch(emu, f"{DEPLOYS}/web", {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.28"}]}}}})))
    settle(wl)
    shots.append(snapshot(kubeconfig, emu, cache))
    done["web"].append(("labels", patch(emu, f"{DEPLOYS}/web", {"metadata": {"labels": {"tier": None}}})))  # a label removed
    settle(wl)
    shots.append(snapshot(kubeconfig, emu, cache))
    stop(again)
    emu.disable_audit()
    return shots, done


def later_changes(emu: Emulator, wl: Workload, kubeconfig: str, shots: list[tuple[int, dict[str, Any]]], done: dict[str, list[tuple[str, int]]],
                  cache: str) -> None:
    """More of a live history: an annotation, a label changed, pods' lives ended and begun again, a ConfigMap's name
    re-created."""
    done["settings"].append(("annotations", patch(emu, f"{CMS}/settings", {"metadata": {"annotations": {"owner": "team-a"}}})))
    settle(wl)
    shots.append(snapshot(kubeconfig, emu, cache))
    done["web"].append(("labels", patch(emu, f"{DEPLOYS}/web", {"metadata": {"labels": {"tier": "back"}}})))
    settle(wl)
    shots.append(snapshot(kubeconfig, emu, cache))
    done["web"].append(("spec", patch(emu, f"{DEPLOYS}/web/scale", {"spec": {"replicas": 0}})))
    settle(wl)
    shots.append(snapshot(kubeconfig, emu, cache))
    done["web"].append(("spec", patch(emu, f"{DEPLOYS}/web/scale", {"spec": {"replicas": 2}})))
    settle(wl)
    shots.append(snapshot(kubeconfig, emu, cache))
    assert call(emu, "DELETE", f"{CMS}/settings")[0] == 200
    done["settings"].append(("deleted", math.floor(time.time())))
    settle(wl)
    shots.append(snapshot(kubeconfig, emu, cache))
    assert call(emu, "POST", CMS, configmap("settings", {"mode": "z"}))[0] == 201
    done["settings"].append(("created", math.floor(time.time())))
    settle(wl)
    shots.append(snapshot(kubeconfig, emu, cache))


def test_the_past_equals_what_kubectl_showed_at_each_second_on_both_engines(emulator: Emulator, emulator_kubeconfig: str, tmp_path: Path,
                                                                          pg_url: str) -> None:
    cache = str(tmp_path / "cache.db")
    (tmp_path / "tracer.yaml").write_text(CONFIG)
    shots, done = script(emulator, emulator_kubeconfig, cache, tmp_path / "audit.log")
    filled = sktrace("backfill", "--cache", cache, "--audit-log", str(tmp_path / "audit.log"), check=False)
    assert filled.returncode == 0, filled.stderr
    sktrace("cache", "copy", cache, pg_url)
    assert len(shots) == 20
    offline = [second for second, _ in shots[OFFLINE]]
    for second, seen in shots:
        for kind in KINDS:
            if kind == "pods" and second in offline:  # a log fills pods' lifecycles, not their objects: unknown, said so
                told = sktrace("get", kind, "-n", NS, "--cache", cache, "--at", f"@{second}")
                assert "lies in a gap nobody observed (no recorder ran from " in told.stderr, told.stderr
                continue
            assert past(cache, kind, second) == seen[kind], (second, kind)
            assert past(pg_url, kind, second) == seen[kind], (second, kind, "postgresql")
        if second in offline:
            told = sktrace("get", "deploy", "-n", NS, "--cache", cache, "--at", f"@{second}")
            assert "known (" in told.stderr and "audit log" in told.stderr and "gap nobody observed" not in told.stderr, told.stderr

    trace = tmp_path / "window.sktrace"
    sktrace("export", "--cache", cache, "-s", f"@{shots[0][0]}", "-t", f"@{shots[5][0] + 1}", "-O", str(trace))
    for second, seen in shots[:6]:  # a trace keeps the specs (labels and data only with --revisions): the same specs
        kept = sktrace("get", "deploy", "-n", NS, "--trace", str(trace), "--at", f"@{second}", "-o", "json").stdout
        assert {o["metadata"]["name"]: o["spec"] for o in json.loads(kept)["items"]} == {n: o["spec"] for n, o in seen["deployments"].items()}

    for target, name in (("deploy/web", "web"), ("cm/settings", "settings")):
        lives = json.loads(sktrace("history", target, "-n", NS, "--cache", cache, "-o", "json").stdout)["lives"]
        assert len(lives) == 2 and lives[0]["uid"] != lives[1]["uid"], lives  # a re-created name: two lives
        recorded = [(c["change"].split(":")[0].split(" ")[0], _sec(c["time"])) for life in lives for c in life["changes"]]
        assert [w for w, _ in recorded] == [w for w, _ in done[name]], (name, recorded)
        assert all(abs(t - s) <= 1 for (_, t), (_, s) in zip(recorded, done[name])), (name, recorded, done[name])

    for (first, before), (last, after) in zip(shots, shots[1:]):
        known = [kind for kind in KINDS if kind != "pods" or not {first, last} & set(offline)]
        changed = {f"{_prefix(kind)}/{name}" for kind in known for name in set(before[kind]) | set(after[kind])
                   if before[kind].get(name) != after[kind].get(name)}
        found = sktrace("diff", *known, "--from", f"@{first}", "--to", f"@{last}", "-n", NS, "--cache", cache, "-o", "name", check=False)
        assert found.returncode == (1 if changed else 0), found.stderr
        assert set(found.stdout.split()) == changed, (first, last)


def _sec(text: str) -> int:
    from kubectl_sktrace.timeparse import parse_time

    return int(parse_time(text, now=0))


def _prefix(kind: str) -> str:
    return {"deployments": "deployment.apps", "configmaps": "configmap", "pods": "pod"}[kind]


def _digest(path: Path) -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in sorted(path.parent.glob(path.name + "*")))).hexdigest()


@pytest.mark.parametrize("args, said", [
    (("get", "deploy", "--at", "@1000"), "is before the history"),
    (("get", "deploy", "--at", "+1d"), "is in the future"),
    (("get", "deploy", "--at", "yesterday"), "invalid time"),
    (("get", "deplyoment", "--at", "now"), "recorded no kind"),
    (("get", "deploy", "-l", "a=" + "x" * 10_000), "at most 4096"),
    (("get", "deploy", "--field-selector", "status.phase=Running"), "metadata.name and metadata.namespace only"),
    (("get", "deploy", "-o", "jsonpath={..name}"), "not supported"),
    (("get", "deploy", "-o", "table2"), "is not an output"),
    (("history", "deploy/nothere", "-n", "default"), "has no deployments.apps"),
    (("diff", "--from", "@1000"), "is before the history"),
    (("diff", "--from", "-1m", "--to", "-2m"), "--to is before --from"),
])
def test_hostile_questions_get_one_line_exit_1_and_leave_the_cache_as_it_was(emulator: Emulator, emulator_kubeconfig: str, tmp_path: Path,
                                                                              args: tuple[str, ...], said: str) -> None:
    cache = tmp_path / "cache.db"
    emulator.create(deployment("web", "default"))
    recorded = sktrace("start", "--kubeconfig", emulator_kubeconfig, "--cache", str(cache), "--duration", "1", check=False)
    assert recorded.returncode == 0, recorded.stderr
    before = _digest(cache)
    done = sktrace(*args, "--cache", str(cache), check=False)
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and said in lines[0], done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert _digest(cache) == before


def _line_with(lines: "queue.Queue[str]", word: str, timeout: float = 20) -> str:
    """The next line of the watch's output holding ``word`` (the recorder commits within a second; the watch looks twice one)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            line = lines.get(timeout=0.2)
        except queue.Empty:
            continue
        if word in line:
            return line
    raise AssertionError(f"no line with {word!r} in {timeout} s")


def _reader(proc: subprocess.Popen[str]) -> "queue.Queue[str]":
    import threading

    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    return lines


def test_watch_replays_then_follows_a_running_recorder_read_only(emulator: Emulator, emulator_kubeconfig: str, engine: str) -> None:
    import os
    import sys

    emulator.create(deployment("early", NS))
    recorder = start_background(emulator_kubeconfig, engine, duration="120")
    watcher = None
    try:
        for name in ("early", "mid"):
            wait = time.time() + 20
            while time.time() < wait and name not in sktrace("get", "deploy", "-n", NS, "--cache", engine, check=False).stdout:
                time.sleep(0.2)
            if name == "early":
                time.sleep(1.1)  # "mid" in a second of its own, after the state the watch begins with
                assert call(emulator, "POST", DEPLOYS, deployment("mid", NS))[0] == 201
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        watcher = subprocess.Popen([sys.executable, "-m", "kubectl_sktrace", "get", "deploy", "-n", NS, "-w", "--since", "1h", "--cache", engine],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        lines = _reader(watcher)
        assert _line_with(lines, "NAME").split()[:2] == ["NAME", "READY"]  # the state at the history's beginning, headed
        assert _line_with(lines, "early").split()[0] == "early"
        assert _line_with(lines, "mid").split()[0] == "mid"  # then what happened since, replayed
        assert call(emulator, "POST", DEPLOYS, deployment("later", NS))[0] == 201
        assert _line_with(lines, "later").split()[0] == "later"  # and what the recorder commits now
        assert call(emulator, "DELETE", f"{DEPLOYS}/early")[0] == 200
        assert _line_with(lines, "early").split()[0] == "early"  # a deletion prints the object's last row, as kubectl's
    finally:
        if watcher is not None:
            watcher.kill()
            watcher.communicate()
        stop(recorder)
