"""The history a person reads is the cluster's: label, annotation, owner-reference and ConfigMap data changes recorded,
reconciled at a restart, counted, shown and decided by, while an export keeps SimKube's events unless asked.

End to end, as a user works: the emulator in this process, real ``kubectl`` changing the cluster, the real CLI in a
subprocess recording into a sqlite cache (docs/spec.md "What a change is")."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import msgpack
import pytest
from conftest import assert_valid_trace
from test_cli_start import query, sktrace, start, start_background, stop, wait_synced

from kubectl_sktrace.store import open_cache_readonly
from kubectl_sktrace.view import api
from sktrace_emulator import Emulator

pytestmark = [pytest.mark.timeout(120), pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")]

NS = "shop"
CONFIG = """\
trackedObjects:
  apps/v1.Deployment:
    podSpecTemplatePaths: [/spec/template]
    trackLifecycle: true
  v1.ConfigMap: {}
"""
DEPLOY, CONFIGMAP = "apps/v1.Deployment", "v1.ConfigMap"


@pytest.fixture
def kubeconfig(emulator_kubeconfig: str) -> str:
    return emulator_kubeconfig


@pytest.fixture
def cache(tmp_path: Path) -> str:
    return str(tmp_path / "state" / "cache.db")


@pytest.fixture
def config(tmp_path: Path) -> str:
    path = tmp_path / "tracer.yaml"
    path.write_text(CONFIG)
    return str(path)


def kubectl(kubeconfig: str, *args: str) -> None:
    cached = str(Path(kubeconfig).parent / "kube-cache")
    result = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "--cache-dir", cached, *args], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr


def workload(emu: Emulator) -> None:
    """quokka-api (a Deployment) and quokka-config (a ConfigMap) in ``shop``."""
    labels = {"app": "quokka-api"}
    emu.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    emu.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "quokka-api", "namespace": NS, "labels": labels},
                "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                         "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "api", "image": "nginx:1.25"}]}}}})
    emu.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "quokka-config", "namespace": NS}, "data": {"mode": "a"}})


def rows(cache: str, name: str) -> list[tuple[int, int, int]]:
    """``(ts, op, inferred)`` of an object's rows, in recorded order."""
    return [(ts, op, inferred) for ts, op, inferred in query(cache, "SELECT ts, op, inferred FROM events WHERE name = ? ORDER BY id", name)]


def wait_rows(cache: str, name: str, count: int) -> None:
    deadline = time.time() + 15
    while len(rows(cache, name)) < count:
        assert time.time() < deadline, rows(cache, name)
        time.sleep(0.05)


def next_second() -> None:
    """Sleep into the next whole second: what follows is recorded at a later event second than what came before."""
    time.sleep(1.05 - time.time() % 1)


def test_labels_annotations_and_data_are_recorded_reconciled_counted_shown_and_decided_by(
    emulator: Emulator, kubeconfig: str, cache: str, config: str,
) -> None:
    workload(emulator)
    proc = start_background(kubeconfig, cache, "--config", config, duration="60")
    wait_synced(cache, 1, proc)
    kubectl(kubeconfig, "-n", NS, "label", "deployment", "quokka-api", "tier=frontend")
    next_second()
    kubectl(kubeconfig, "-n", NS, "annotate", "deployment", "quokka-api", "note=hello")
    wait_rows(cache, "quokka-api", 3)
    next_second()
    kubectl(kubeconfig, "-n", NS, "set", "image", "deployment/quokka-api", "api=nginx:1.27")
    kubectl(kubeconfig, "-n", NS, "patch", "configmap", "quokka-config", "-p", '{"data":{"mode":"b"}}')
    kubectl(kubeconfig, "-n", NS, "patch", "configmap", "quokka-config", "-p", '{"data":{"mode":"c"}}')
    wait_rows(cache, "quokka-api", 4)
    wait_rows(cache, "quokka-config", 3)
    out, _ = stop(proc)
    assert "apps/v1.Deployment  1         2          2           0" in out, out  # the end-of-run table: applied, metadata, data
    assert "v1.ConfigMap        1         1          0           2" in out, out
    # the label added while recording: a metadata revision; the annotation: another, a second before the rollout
    label, note, rollout = rows(cache, "quokka-api")[1:]
    assert (label[1], note[1], rollout[1]) == (3, 3, 0) and label[0] < note[0] < rollout[0]
    assert [op for _, op, _ in rows(cache, "quokka-config")] == [0, 4, 4]  # created, then two data changes

    kubectl(kubeconfig, "-n", NS, "label", "deployment", "quokka-api", "release=2026-11", "--overwrite")  # while stopped
    restart = start(kubeconfig, cache, "--config", config, "-o", "json")
    assert restart.returncode == 0, restart.stderr
    assert "shop/quokka-api  last recorded " in restart.stderr and "labels changed: release=2026-11" in restart.stderr, restart.stderr
    report = json.loads(restart.stdout)["reconciliation"]
    (deploys,) = [k for k in report["kinds"] if k["kind"] == DEPLOY]
    assert [(o["name"], o["what"]) for o in deploys["changedWhileOffline"]["objects"]] == [("quokka-api", "labels changed: release=2026-11")]
    assert rows(cache, "quokka-api")[-1][1:] == (3, 1)  # a metadata revision, found by the restart's list

    status = json.loads(sktrace("status", "--cache", cache, "-o", "json").stdout)
    counts = {k["kind"]: (k["applied"], k["metadataChanges"], k["dataChanges"]) for k in status["kinds"]}
    assert counts == {DEPLOY: (2, 3, 0), CONFIGMAP: (1, 0, 2)}
    offline = [k for k in status["reconciliation"]["kinds"] if k["kind"] == DEPLOY][0]["changedWhileOffline"]["objects"]
    assert offline[0]["what"] == "labels changed: release=2026-11"
    assert "KIND                LIVE    APPLIED    METADATA    DATA" in sktrace("status", "--cache", cache).stdout

    dry = sktrace("export", "--cache", cache, "-s", "-10m", "-l", "tier=frontend", "--dry-run", "--summary", "json")
    assert json.loads(dry.stdout)["objectsExported"] == 1  # the Deployment, labelled tier=frontend since it was created
    trace = Path(cache).parent / "frontend.sktrace"
    sktrace("export", "--cache", cache, "-s", "-10m", "-l", "tier=frontend", "-O", str(trace))
    exported = msgpack.unpackb(trace.read_bytes(), raw=False, strict_map_key=False)
    assert exported["index"] == {DEPLOY: {"shop/quokka-api": exported["index"][DEPLOY]["shop/quokka-api"]}}

    with open_cache_readonly(cache) as opened:  # what the view's diff pane shows for each change
        ids = [i for (i,) in opened.conn.execute("SELECT id FROM events WHERE name = 'quokka-api' ORDER BY id")]
        annotated, rolled = api.version(opened, {"id": str(ids[2])}), api.version(opened, {"id": str(ids[3])})
        page = api.objects(opened, {"start": "0", "end": str(int(time.time()) + 60), "q": "quokka-api"})
    (drawn,) = page["objects"]  # the page's ticks: op 3 is drawn as a metadata change (view-timeline.js TICK_KINDS)
    assert [t["op"] for t in drawn["ticks"]] == [0, 3, 3, 0, 3]
    assert annotated["op"] == "metadata changed" and annotated["ts"] == note[0]
    assert "+    note: hello" in annotated["diff"] and "image" not in annotated["diff"]
    assert rolled["op"] == "applied" and "note" not in rolled["diff"] and "+      - image: nginx:1.27" in rolled["diff"]  # keys in one order


def test_a_leader_election_record_rewritten_constantly_adds_nothing(emulator: Emulator, kubeconfig: str, cache: str, config: str) -> None:
    """client-go's leader election on a ConfigMap renews its record every 2 s; here 60 renewals, 50 ms apart, cover
    what a minute at that pace would write 30 times, and a status-only update each time."""
    workload(emulator)
    proc = start_background(kubeconfig, cache, "--config", config, duration="60")
    wait_synced(cache, 1, proc)
    for renewal in range(60):
        record = json.dumps({"holderIdentity": "controller-0", "leaseDurationSeconds": 15, "renewTime": f"2026-11-28T10:00:{renewal:02}Z"})
        emulator.patch("v1", "ConfigMap", NS, "quokka-config", {"metadata": {"annotations": {"control-plane.alpha.kubernetes.io/leader": record}}})
        emulator.patch("apps/v1", "Deployment", NS, "quokka-api", {"status": {"observedGeneration": renewal}})
        time.sleep(0.05)
    emulator.patch("v1", "ConfigMap", NS, "quokka-config", {"metadata": {"labels": {"seen": "yes"}}})  # a change: recorded
    wait_rows(cache, "quokka-config", 2)
    stop(proc)
    assert [op for _, op, _ in rows(cache, "quokka-config")] == [0, 3]
    assert [op for _, op, _ in rows(cache, "quokka-api")] == [0]


def test_the_default_export_of_label_changes_is_simkubes_and_all_changes_holds_them(
    emulator: Emulator, kubeconfig: str, cache: str, config: str, tmp_path: Path,
) -> None:
    workload(emulator)
    proc = start_background(kubeconfig, cache, "--config", config, duration="60")
    wait_synced(cache, 1, proc)
    next_second()
    for n in range(3):
        kubectl(kubeconfig, "-n", NS, "label", "deployment", "quokka-api", f"release=r{n}", "--overwrite")
        kubectl(kubeconfig, "-n", NS, "annotate", "configmap", "quokka-config", f"owner=team-{n}", "--overwrite")
        next_second()
    kubectl(kubeconfig, "-n", NS, "scale", "deployment", "quokka-api", "--replicas=2")  # one spec change among them
    next_second()
    kubectl(kubeconfig, "-n", NS, "label", "deployment", "quokka-api", "release=r3", "--overwrite")
    wait_rows(cache, "quokka-api", 6)
    wait_rows(cache, "quokka-config", 4)
    stop(proc)

    window = ["--cache", cache, "-s", "-10m", "-t", "+1m"]
    default = tmp_path / "default.sktrace"
    sktrace("export", *window, "-O", str(default))
    # the same cache as a recorder before revisions would have left it: the spec changes alone
    before = tmp_path / "before.db"
    source = sqlite3.connect(cache)
    source.backup(sqlite3.connect(before))
    source.close()
    conn = sqlite3.connect(before)
    conn.execute("DELETE FROM events WHERE op IN (3, 4)")
    conn.commit()
    conn.close()
    todays = tmp_path / "todays.sktrace"
    sktrace("export", "--cache", str(before), *window[2:], "-O", str(todays))
    assert default.read_bytes() == todays.read_bytes()

    every = tmp_path / "every.sktrace"
    sktrace("export", *window, "--all-changes", "-O", str(every))
    trace = msgpack.unpackb(every.read_bytes(), raw=False, strict_map_key=False)
    releases = [o["metadata"]["labels"].get("release") for e in trace["events"] for o in e["applied_objs"] if o["kind"] == "Deployment"]
    owners = [o["metadata"]["annotations"].get("owner") for e in trace["events"] for o in e["applied_objs"] if o["kind"] == "ConfigMap"]
    assert releases == [None, "r0", "r1", "r2", "r2", "r3"] and owners == [None, "team-0", "team-1", "team-2"]
    scaled = [o for e in trace["events"] for o in e["applied_objs"] if o["kind"] == "Deployment"]
    assert [o["spec"]["replicas"] for o in scaled] == [1, 1, 1, 1, 2, 2]  # each version whole, its spec its own
    assert trace["index"] == msgpack.unpackb(default.read_bytes(), raw=False, strict_map_key=False)["index"]
    assert_valid_trace(every.read_bytes(), tmp_path)
    assert "valid, 0 errors, 0 warnings" in sktrace("validate", str(every)).stdout

    # transform decides on each object's last version in the trace: release=r3 came after the last spec change, so only
    # the trace with every change holds it
    for source, kept in ((every, {"Deployment"}), (default, set())):
        out = tmp_path / f"r3-{source.stem}.sktrace"
        sktrace("transform", str(source), "-O", str(out), "-l", "release=r3", "--quiet")
        moved = msgpack.unpackb(out.read_bytes(), raw=False, strict_map_key=False)
        assert {o["kind"] for e in moved["events"] for o in e["applied_objs"]} == kept
