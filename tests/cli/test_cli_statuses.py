"""An incident as a person on call lives it, recorded (docs/spec.md "What a status change is"): a rollout to an image
that cannot be pulled (its pods waiting ImagePullBackOff, readiness stuck at 2 of 3) rolled back, a container
OOM-killed and restarted, a Job that fails once then succeeds, a scale-up whose pods become ready over 10 s.

End to end: the emulator in this process with its controllers and kubelet (``Workload``) and its audit log, real
``kubectl`` making the changes, the real CLI in a subprocess recording into a sqlite cache. The audit log says when the
server wrote each status: every transition a person reads is in the cache, in order, at the second it was written; a
controller rewriting a condition's timestamp adds nothing; ``status`` says each workload's state at the end; and an
export writes the same bytes whether the cache holds status changes or not."""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from test_cli_changes import kubectl
from test_cli_start import query, sktrace, start_background, stop, wait_synced

from kubectl_sktrace.store import open_cache_readonly
from kubectl_sktrace.store import statuses as stored
from kubectl_sktrace.trace import statuses
from sktrace_emulator import Emulator
from sktrace_emulator.workload import Workload

pytestmark = [pytest.mark.timeout(180), pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")]

NS = "shop"
CONFIG = """\
trackedObjects:
  apps/v1.Deployment:
    podSpecTemplatePaths: [/spec/template]
    trackLifecycle: true
  batch/v1.Job:
    podSpecTemplatePaths: [/spec/template]
    trackLifecycle: true
"""
WORKLOADS = f"""\
apiVersion: v1
kind: Namespace
metadata: {{name: {NS}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {NS}}}
spec:
  replicas: 3
  strategy: {{type: RollingUpdate, rollingUpdate: {{maxSurge: 1, maxUnavailable: 1}}}}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec: {{containers: [{{name: web, image: "nginx:1.25"}}]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: api, namespace: {NS}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: api}}}}
  template:
    metadata: {{labels: {{app: api}}, annotations: {{sktrace.io/ready-after-seconds: "10"}}}}
    spec: {{containers: [{{name: api, image: "shop/api:3"}}]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: cache, namespace: {NS}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: cache}}}}
  template:
    metadata: {{labels: {{app: cache}}, annotations: {{sktrace.io/oom-after-seconds: "2"}}}}
    spec: {{containers: [{{name: cache, image: "redis:7"}}]}}
"""
JOB = f"""\
apiVersion: batch/v1
kind: Job
metadata: {{name: migrate, namespace: {NS}}}
spec:
  template:
    metadata: {{annotations: {{sktrace.io/fail-first: "1", sktrace.io/run-seconds: "1"}}}}
    spec: {{restartPolicy: Never, containers: [{{name: migrate, image: "shop/migrate:1"}}]}}
"""
WATCHED = {"pods": "v1.Pod", "deployments": "apps/v1.Deployment", "jobs": "batch/v1.Job"}


@pytest.fixture
def cluster(emulator: Emulator, emulator_kubeconfig: str, tmp_path: Path) -> Iterator[tuple[Emulator, str, Path]]:
    audit = tmp_path / "audit.log"
    emulator.enable_audit(audit)
    with Workload(emulator, start_delay=0.5, job_seconds=(1.0, 1.0)):
        yield emulator, emulator_kubeconfig, audit
    emulator.disable_audit()


def wait_until(what: str, check: Callable[[], bool], timeout: float = 40) -> None:
    deadline = time.time() + timeout
    while not check():
        assert time.time() < deadline, f"never: {what}"
        time.sleep(0.1)


def reduced(emu: Emulator, kind: str, name: str) -> dict[str, Any]:
    group = "v1" if kind == "Pod" else "batch/v1" if kind == "Job" else "apps/v1"
    found = emu.get(group, kind, NS, name)
    return statuses.reduce(found or {}, pod=kind == "Pod")


def pods_of(emu: Emulator, prefix: str) -> list[dict[str, Any]]:
    return [statuses.reduce(p, pod=True) for p in emu.list("v1", "Pod", NS) if p["metadata"]["name"].startswith(prefix)
            and not p["metadata"].get("deletionTimestamp")]


def incident(emu: Emulator, kubeconfig: str, manifests: Path, *, stuck: Callable[[], None] = lambda: None) -> None:
    """The incident, step by step, each step awaited as a person watching ``kubectl get -w`` would; ``stuck`` is called
    while the rollout is stuck at 2 of 3 ready."""
    (manifests / "workloads.yaml").write_text(WORKLOADS)
    kubectl(kubeconfig, "apply", "-f", str(manifests / "workloads.yaml"))
    wait_until("web 3 of 3 ready", lambda: statuses.summary(reduced(emu, "Deployment", "web")) == "3 of 3 ready")
    kubectl(kubeconfig, "-n", NS, "set", "image", "deploy/web", "web=registry.invalid/shop/web:2")
    wait_until("web stuck at 2 of 3 ready", lambda: reduced(emu, "Deployment", "web").get("updatedReplicas") == 2 and sum(
        1 for p in pods_of(emu, "web-") if p.get("containers", {}).get("web", {}).get("state") == "waiting ImagePullBackOff") == 2)
    stuck()
    kubectl(kubeconfig, "-n", NS, "set", "image", "deploy/web", "web=nginx:1.25")  # rolled back
    wait_until("web back at 3 of 3", lambda: (lambda r: statuses.summary(r) == "3 of 3 ready" and r.get("updatedReplicas") == 3
                                             and r.get("replicas") == 3)(reduced(emu, "Deployment", "web")))
    wait_until("cache restarted after its OOM kill", lambda: any(p["containers"]["cache"].get("restarts") == 1 and p["containers"]["cache"]["ready"]
                                                                for p in pods_of(emu, "cache-") if "containers" in p))
    (manifests / "job.yaml").write_text(JOB)
    kubectl(kubeconfig, "apply", "-f", str(manifests / "job.yaml"))
    wait_until("the Job complete", lambda: "Complete" in reduced(emu, "Job", "migrate").get("conditions", {}))
    wait_until("api ready before its scale-up", lambda: statuses.summary(reduced(emu, "Deployment", "api")) == "1 of 1 ready")
    kubectl(kubeconfig, "-n", NS, "scale", "deploy/api", "--replicas=3")
    wait_until("api 3 of 3 ready", lambda: statuses.summary(reduced(emu, "Deployment", "api")) == "3 of 3 ready", timeout=60)


def audited(audit: Path) -> dict[tuple[str, str, str], list[tuple[float, dict[str, Any]]]]:
    """Per object (kind, name, uid) in the namespace, the server's writes of it in order: when, and what a person reads."""
    writes: dict[tuple[str, str, str], list[tuple[float, dict[str, Any]]]] = defaultdict(list)
    uids: dict[tuple[str, str], str] = {}
    for line in audit.read_text().splitlines():
        event = json.loads(line)
        ref, body = event.get("objectRef") or {}, event.get("responseObject")
        if (ref.get("namespace") != NS or ref.get("resource") not in WATCHED or event["verb"] not in ("create", "update", "patch")
                or not isinstance(body, dict) or body.get("kind") not in ("Pod", "Deployment", "Job", "Scale")):
            continue
        at = datetime.strptime(event["stageTimestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp() - time.timezone
        name, gvk = body["metadata"]["name"], WATCHED[ref["resource"]]
        if body["kind"] == "Scale":  # kubectl scale writes the scale subresource: the replicas wanted, the rest as it was
            key = (gvk, name, uids[(gvk, name)])
            writes[key].append((at, {**writes[key][-1][1], "desired": body["spec"]["replicas"]}))
            continue
        uids[(gvk, name)] = body["metadata"]["uid"]
        writes[(gvk, name, body["metadata"]["uid"])].append((at, statuses.reduce(body, pod=body["kind"] == "Pod")))
    return writes


def bound_not_started(state: dict[str, Any]) -> bool:
    return state.get("phase") == "Pending" and bool(state.get("node")) and not state.get("containers")


def recorded(cache: str) -> dict[tuple[str, str, str], list[tuple[int, dict[str, Any]]]]:
    rows: dict[tuple[str, str, str], list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    with open_cache_readonly(cache) as c:
        for row in stored.every_row(c, namespace=NS):
            assert not row.inferred, row.key  # everything happened while recording: seen live
            rows[(str(row.key.gvk), row.key.name, row.uid)].append((row.ts, row.reduced))
    return rows


def test_an_incident_is_recorded_transition_by_transition_at_its_second(cluster: tuple[Emulator, str, Path], tmp_path: Path) -> None:
    emu, kubeconfig, audit = cluster
    cache, config = str(tmp_path / "cache.db"), tmp_path / "tracer.yaml"
    config.write_text(CONFIG)
    proc = start_background(kubeconfig, cache, "--config", str(config), duration="150")
    try:
        wait_synced(cache, 1, proc)
        incident(emu, kubeconfig, tmp_path)
        time.sleep(1.5)  # the last writes reach the recorder and are committed (at least every second)
        # a controller rewriting a condition's timestamp every 2 s (here every 50 ms) adds nothing
        before = query(cache, "SELECT count(*) FROM status_changes")[0][0]
        for i in range(30):
            deploy = emu.get("apps/v1", "Deployment", NS, "cache")
            assert deploy is not None
            conditions = [{**c, "lastUpdateTime": f"2030-01-01T00:00:{i:02d}Z"} for c in deploy["status"]["conditions"]]
            emu.store.patch(emu.store.type_of("apps/v1", "Deployment"), NS, "cache", {"status": {"conditions": conditions}}, subresource="status")
            time.sleep(0.05)
        time.sleep(1.5)
        assert query(cache, "SELECT count(*) FROM status_changes")[0][0] == before
    finally:
        stop(proc)
    writes, rows = audited(audit), recorded(cache)
    for key, seen in writes.items():  # each transition the server wrote is a row, in order, at its second
        transitions, last = [], None
        for at, state in seen:
            if state != last and (state or last is not None):
                transitions.append((at, state))
            last = state
        # a binding is logged as a Status, not the pod: the log cannot show a pod bound and not yet started, which the
        # recorder sees when the kubelet starts it in a later pass than the one that bound it (a busy machine's timing)
        got = [(ts, state) for ts, state in rows.get(key, []) if not bound_not_started(state)]
        transitions = [(at, state) for at, state in transitions if not bound_not_started(state)]
        assert [state for _, state in got] == [state for _, state in transitions], key
        for (ts, _), (at, _) in zip(got, transitions):
            assert math.floor(at) <= ts <= math.floor(at) + 1, (key, ts, at)
    assert set(rows) <= set(writes)
    story = _story(rows)
    assert "2 of 3 ready" in story["apps/v1.Deployment/web"] and story["apps/v1.Deployment/web"][-1] == "3 of 3 ready"
    assert {"pullfailed"} <= story["marks"]["web"] and {"oomkilled", "restart"} <= story["marks"]["cache"]
    job = [state for _, state in next(v for k, v in rows.items() if k[1] == "migrate")]
    assert any(s.get("failed") == 1 and not s.get("succeeded") for s in job) and job[-1]["conditions"] == {"Complete": "True"}
    api = next(v for k, v in rows.items() if k[1] == "api")
    scaled = next(ts for ts, s in api if s.get("desired") == 3)
    ready = next(ts for ts, s in api if s.get("desired") == 3 and s.get("readyReplicas") == 3)
    assert ready - scaled >= 9  # its new pods ready over 10 s, the band's steps at their seconds
    said = sktrace("status", "--cache", cache).stdout
    assert "Deployment shop/web: 3 of 3 ready" in said and "Deployment shop/api: 3 of 3 ready" in said, said
    _exports_ignore_status(cache, tmp_path)


def _story(rows: dict[tuple[str, str, str], list[tuple[int, dict[str, Any]]]]) -> dict[str, Any]:
    """Per workload its states in words; per workload's pods (by name prefix) the marks their changes show."""
    story: dict[str, Any] = {"marks": defaultdict(set)}
    for (gvk, name, _), seen in rows.items():
        if gvk == "v1.Pod":
            before = None
            for _, state in seen:
                story["marks"][name.split("-")[0]].update(statuses.marks(before, state))
                before = state
        else:
            story[f"{gvk}/{name}"] = [statuses.summary(state) for _, state in seen]
    return story


def _exports_ignore_status(cache: str, tmp_path: Path) -> None:
    """An export, --all-changes too, is the same bytes from the cache and from a copy without its status changes."""
    bare = tmp_path / "bare.db"
    shutil.copy(cache, bare)
    conn = sqlite3.connect(bare)
    assert conn.execute("DELETE FROM status_changes").rowcount > 0 and conn.execute("DELETE FROM status_objects").rowcount > 0
    conn.commit()
    conn.close()
    for extra in ((), ("--all-changes",)):
        out = {}
        for name, source in (("with", cache), ("without", str(bare))):
            out[name] = tmp_path / f"{name}{len(extra)}.sktrace"
            sktrace("export", "--cache", source, "-s", "-10m", *extra, "-O", str(out[name]))
        assert out["with"].read_bytes() == out["without"].read_bytes()
