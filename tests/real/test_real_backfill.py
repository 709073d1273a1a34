"""`backfill` from a real kube-apiserver v1.28's own audit log (the real tier): what a restart could only
reconstruct (at the restart, inferred) is replaced by what the log shows, at the second the server logged it.

The shared control plane's log backend is on (tests/realk8s.py: writes at RequestResponse, reads left out).
"""

from __future__ import annotations

import calendar
import json
import time
from pathlib import Path
from typing import Any

import pytest

from kubectl_sktrace.store.versions import APPLIED, DELETED, METADATA
from realk8s import ControlPlane, deployment, start_recorder
from reliability_support import Recorder, query, run_cli, wait_rows

pytestmark = [pytest.mark.timeout(240)]


def logged_second(line: dict[str, Any]) -> int:
    return calendar.timegm(time.strptime(line["stageTimestamp"][:19], "%Y-%m-%dT%H:%M:%S"))


def the_line(plane: ControlPlane, ns: str, *, verb: str, resource: str, name: str, subresource: str | None = None) -> dict[str, Any]:
    """The script's own write in the log (the first 2xx of that verb on that object), once the log has it."""
    deadline = time.monotonic() + 15
    while True:
        for line in plane.audit_lines(namespace=ns):
            ref = line["objectRef"]
            if (line["verb"], ref.get("resource"), ref.get("name"), ref.get("subresource")) == (verb, resource, name, subresource) \
                    and 200 <= line["responseStatus"]["code"] < 300:
                return line
        assert time.monotonic() < deadline, f"no {verb} {resource}/{name} in the audit log"
        time.sleep(0.2)


def test_backfill_from_a_real_audit_log_puts_offline_changes_at_their_logged_second(real_cluster: ControlPlane, tmp_path: Path) -> None:
    plane, home, cache = real_cluster, tmp_path / "home", tmp_path / "cache.db"
    home.mkdir()
    ns = plane.namespace("backfill")
    plane.apply(deployment(ns, "web"))
    plane.apply(deployment(ns, "gone"))
    recorder = start_recorder(plane, cache, home, tmp_path)
    assert recorder.stop() == 0, recorder.output()

    time.sleep(1.1)  # each write at a second of its own, after the run, so that each lands at a second the restart cannot know
    plane.kubectl("-n", ns, "scale", "deployment", "web", "--replicas=2")
    time.sleep(1.1)
    plane.kubectl("-n", ns, "label", "deployment", "web", "tier=canary")
    time.sleep(1.1)
    plane.kubectl("-n", ns, "delete", "deployment", "gone", "--wait=true")
    plane.apply(deployment(ns, "born"))
    time.sleep(1.1)

    recorder = start_recorder(plane, cache, home, tmp_path)
    assert recorder.stop() == 0, recorder.output()
    assert query(cache, "SELECT count(*) FROM events WHERE namespace = ? AND run_id = 2 AND inferred = 1 AND name = 'gone'", ns) == [(1,)]

    scaled = the_line(plane, ns, verb="patch", resource="deployments", name="web", subresource="scale")
    labelled = the_line(plane, ns, verb="patch", resource="deployments", name="web")
    deleted = the_line(plane, ns, verb="delete", resource="deployments", name="gone")
    created = the_line(plane, ns, verb="create", resource="deployments", name="born")
    filled = run_cli(["backfill", "--cache", str(cache), "--kubeconfig", str(plane.kubeconfig), "--audit-log", str(plane.audit_log)],
                     home=home, timeout=120)
    assert filled.code == 0, filled.describe()

    def rows(name: str) -> list[tuple[int, int, int]]:
        return [(op, ts, inferred) for op, ts, inferred in query(
            cache, "SELECT op, ts, inferred FROM events WHERE namespace = ? AND name = ? AND run_id >= 2 ORDER BY ts, id", ns, name)]

    assert rows("web") == [(APPLIED, logged_second(scaled), 0), (METADATA, logged_second(labelled), 0)], filled.describe()
    assert rows("gone") == [(DELETED, logged_second(deleted), 0)], filled.describe()
    assert rows("born") == [(APPLIED, logged_second(created), 0)], filled.describe()
    check = run_cli(["backfill", "--check", "--cache", str(cache), "--kubeconfig", str(plane.kubeconfig), "--audit-log", str(plane.audit_log)],
                    home=home, timeout=120)
    assert check.code == 0, check.describe()
    again = run_cli(["backfill", "--cache", str(cache), "--kubeconfig", str(plane.kubeconfig), "--audit-log", str(plane.audit_log)],
                    home=home, timeout=120)
    assert again.code == 0 and rows("web") == [(APPLIED, logged_second(scaled), 0), (METADATA, logged_second(labelled), 0)], again.describe()


def export_rows(cache: Path, home: Path, plane: ControlPlane, *, since: float, until: float, namespaces: str, out: Path) -> list[tuple[Any, ...]]:
    """An export of the window as (time, applied|deleted, kind/ns/name, spec) rows, the kinds the test made."""
    from kubectl_sktrace.trace.files.format import decode_trace

    done = run_cli(["export", "--cache", str(cache), "--kubeconfig", str(plane.kubeconfig), "-s", f"@{int(since)}", "-t", f"@{int(until)}",
                    "--include-namespaces", namespaces, "-O", str(out)], home=home, timeout=120)
    assert done.code == 0, done.describe()
    rows = []
    for event in decode_trace(out.read_bytes()).events:
        for verb, objs in (("applied", event["applied_objs"]), ("deleted", event["deleted_objs"])):
            for obj in objs:
                meta = obj["metadata"]
                rows.append((event["ts"], verb, f"{obj['kind']}/{meta.get('namespace', '')}/{meta['name']}",
                             json.dumps(obj.get("spec"), sort_keys=True) if verb == "applied" else None))
    return rows


def job(namespace: str, name: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": namespace},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}}


TRACKED = """\
trackedObjects:
  apps/v1.Deployment:
    podSpecTemplatePaths: [/spec/template]
    trackLifecycle: true
  batch/v1.Job:
    podSpecTemplatePaths: [/spec/template]
    trackLifecycle: true
"""


def test_after_backfill_a_stopped_recorder_s_export_matches_one_that_stayed_up_pods_included(real_cluster: ControlPlane,
                                                                                              tmp_path: Path) -> None:
    """The scenario of docs/coverage.md on a real server: one recorder stays up, another is stopped while Deployments
    are scaled (subresource and patch), re-imaged, relabelled and deleted, one is created and deleted, a Job runs and
    finishes and a namespace is deleted; after `backfill` from the server's own log the stopped one's export holds the
    other's changes and pods, each at the second the server logged it (a live recorder's time is its receipt, which a
    busy machine delays: tests/audit/test_backfill_end_to_end.lifecycles_as_logged)."""
    from tests.audit.test_backfill_end_to_end import lifecycles, lifecycles_as_logged, pod_removals, rows_at_logged_seconds

    plane, home = real_cluster, tmp_path / "home"
    home.mkdir()
    ns, gone = plane.namespace("bf-web"), plane.namespace("bf-gone")
    for name in ("a", "b", "c"):
        plane.apply(deployment(ns, name))
    plane.apply(deployment(gone, "d"))
    for namespace, name in ((ns, "a"), (ns, "b"), (ns, "c"), (gone, "d")):
        plane.kubectl("-n", namespace, "rollout", "status", f"deployment/{name}", "--timeout=60s")
    config = tmp_path / "tracked.yaml"
    config.write_text(TRACKED)
    up_cache, down_cache = tmp_path / "up.db", tmp_path / "down.db"
    up = Recorder(kubeconfig=plane.kubeconfig, cache=up_cache, home=home, log=tmp_path / "up.log", args=["--config", str(config), "--duration", "200"])
    down = Recorder(kubeconfig=plane.kubeconfig, cache=down_cache, home=home, log=tmp_path / "down.log", args=["--config", str(config), "--duration", "200"])
    try:
        assert up.wait_for("recording changes", timeout=90) and down.wait_for("recording changes", timeout=90), up.output() + down.output()
        assert down.stop() == 0, down.output()
        since = time.time()
        time.sleep(1.1)
        plane.kubectl("-n", ns, "scale", "deployment", "a", "--replicas=3")
        plane.kubectl("-n", ns, "rollout", "status", "deployment/a", "--timeout=60s")
        plane.kubectl("-n", ns, "set", "image", "deployment/b", "main=nginx:1.26")
        plane.kubectl("-n", ns, "rollout", "status", "deployment/b", "--timeout=60s")
        plane.kubectl("-n", ns, "patch", "deployment", "b", "--type=merge", "-p", '{"spec":{"replicas":2}}')
        plane.kubectl("-n", ns, "label", "deployment", "a", "tier=front")
        plane.kubectl("-n", ns, "delete", "deployment", "c", "--wait=true")
        plane.apply(deployment(ns, "e"))
        plane.kubectl("-n", ns, "rollout", "status", "deployment/e", "--timeout=60s")
        time.sleep(1.1)
        plane.kubectl("-n", ns, "delete", "deployment", "e", "--wait=true")
        plane.kubectl("delete", "namespace", gone, "--wait=true", timeout=120)
        plane.apply(job(ns, "j"))
        plane.kubectl("-n", ns, "wait", "--for=condition=Complete", "job/j", "--timeout=60s")
        plane.kubectl("-n", ns, "wait", "--for=delete", "pod", "-l", "app=c", "--timeout=60s")
        plane.kubectl("-n", ns, "wait", "--for=delete", "pod", "-l", "app=e", "--timeout=60s")
        time.sleep(2)
        restart = Recorder(kubeconfig=plane.kubeconfig, cache=down_cache, home=home, log=tmp_path / "down.log",
                           args=["--config", str(config), "--duration", "200"])
        assert restart.wait_for("recording changes", timeout=90), restart.output()
        assert restart.stop() == 0, restart.output()
        until = time.time() + 1
        time.sleep(2)
    finally:
        assert up.stop() == 0, up.output()

    namespaces = f"{ns},{gone}"
    before = export_rows(down_cache, home, plane, since=since, until=until, namespaces=namespaces, out=tmp_path / "before.sktrace")
    filled = run_cli(["backfill", "--cache", str(down_cache), "--kubeconfig", str(plane.kubeconfig), "--audit-log", str(plane.audit_log)],
                     home=home, timeout=120)
    assert filled.code == 0, filled.describe()
    after = export_rows(down_cache, home, plane, since=since, until=until, namespaces=namespaces, out=tmp_path / "after.sktrace")
    live = export_rows(up_cache, home, plane, since=since, until=until, namespaces=namespaces, out=tmp_path / "live.sktrace")
    log, offline_from = plane.audit_lines(namespace=ns) + plane.audit_lines(namespace=gone), int(since) + 1
    assert sorted(r[1:] for r in after) == sorted(r[1:] for r in live), (after, live)
    assert rows_at_logged_seconds(after, log, offline_from=offline_from) == [], (after, live)
    assert rows_at_logged_seconds(before, log, offline_from=offline_from), before  # the restart's reconstruction is not
    assert [r for r in after if r[0] < offline_from] == [r for r in before if r[0] < offline_from], (after, before)
    pods_after, pods_live = lifecycles(tmp_path / "after.sktrace"), lifecycles(tmp_path / "live.sktrace")
    assert {("apps/v1.Deployment", f"{ns}/e"), ("apps/v1.Deployment", f"{gone}/d"), ("batch/v1.Job", f"{ns}/j")} <= pods_after.keys(), pods_after
    assert lifecycles_as_logged(pods_after, pods_live, pod_removals(log)) == [], (pods_after, pods_live)


def test_backfill_from_a_real_audit_log_fills_the_status_changes_of_a_gap(real_cluster: ControlPlane, tmp_path: Path) -> None:
    """A scale-up while the recorder is stopped: the Deployment controller's status updates and the kubelet's pod status
    patches are in the log; backfill writes each change at its logged second, the restart's reconstructed row goes."""
    from kubectl_sktrace.store import open_cache_readonly
    from kubectl_sktrace.store import statuses as stored
    from kubectl_sktrace.trace import statuses

    plane, home, cache = real_cluster, tmp_path / "home", tmp_path / "cache.db"
    home.mkdir()
    ns = plane.namespace("backfill-status")
    plane.apply(deployment(ns, "web"))
    deadline = time.monotonic() + 60
    while (plane.get_json("-n", ns, "deployment", "web").get("status") or {}).get("readyReplicas") != 1:
        assert time.monotonic() < deadline, "web never ready"
        time.sleep(0.2)
    recorder = start_recorder(plane, cache, home, tmp_path)
    assert recorder.stop() == 0, recorder.output()
    time.sleep(1.1)
    plane.kubectl("-n", ns, "scale", "deployment", "web", "--replicas=3")
    while (plane.get_json("-n", ns, "deployment", "web").get("status") or {}).get("readyReplicas") != 3:
        assert time.monotonic() < deadline, "web never scaled"
        time.sleep(0.2)
    time.sleep(1.1)
    recorder = start_recorder(plane, cache, home, tmp_path)
    assert recorder.stop() == 0, recorder.output()
    stopped, restarted = (float(x) for x in query(cache, "SELECT (SELECT stopped FROM runs WHERE id = 1), (SELECT started FROM runs WHERE id = 2)")[0])

    def web_rows() -> list[stored.StatusRow]:
        with open_cache_readonly(cache) as c:
            return [r for r in stored.every_row(c, namespace=ns) if r.key.gvk.kind == "Deployment" and r.key.name == "web"]

    assert [(r.run_id, r.inferred, statuses.summary(r.reduced)) for r in web_rows()] == [(1, True, "1 of 1 ready"), (2, True, "3 of 3 ready")]
    filled = run_cli(["backfill", "--cache", str(cache), "--kubeconfig", str(plane.kubeconfig), "--audit-log", str(plane.audit_log)],
                     home=home, timeout=120)
    assert filled.code == 0, filled.describe()
    assert " status changes at their logged second, " in filled.stdout, filled.describe()
    writes = {logged_second(line) for line in plane.audit_lines(namespace=ns) if line["objectRef"].get("resource") == "deployments"
              and line["objectRef"].get("name") == "web" and line["verb"] in ("update", "patch") and 200 <= line["responseStatus"]["code"] < 300}
    rows = web_rows()
    with open_cache_readonly(cache) as c:
        offline = [r for r in rows if stored.from_audit_log(c, r.id)]
    assert offline and all(r.ts in writes and stopped < r.ts + 1 and r.ts < restarted and not r.inferred for r in offline), (rows, writes)
    assert statuses.summary(offline[0].reduced) == "1 of 3 ready" and statuses.summary(offline[-1].reduced) == "3 of 3 ready", rows
    assert [r for r in rows if r.run_id == 2 and r.inferred] == []  # the log accounts for what the restart found
    again = run_cli(["backfill", "--cache", str(cache), "--kubeconfig", str(plane.kubeconfig), "--audit-log", str(plane.audit_log)],
                    home=home, timeout=120)
    assert again.code == 0 and "status change" not in again.stdout and web_rows() == rows, again.describe()
