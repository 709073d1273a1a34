"""``backfill`` end to end, as a user runs it: the emulator writes its audit log while a workload runs with the recorder
stopped; after ``kubectl sktrace backfill`` an export of the offline time holds what a recorder that stayed up holds."""

from __future__ import annotations

import calendar
import json
import shutil
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.cli.test_cli_start import sktrace, start, start_background, stop, wait_synced
from tests.emulator.test_emulator_server import call

from kubectl_sktrace.trace.files.format import decode_trace
from sktrace_emulator import Emulator, Workload

pytestmark = pytest.mark.timeout(180)

PATCH = {"Content-Type": "application/merge-patch+json"}


def deployment(name: str, namespace: str, *, replicas: int = 1, image: str = "nginx:1.25") -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": image}]}}}}


def job(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": namespace},
            "spec": {"completions": 1, "parallelism": 1, "template": {"metadata": {"labels": {"job": name}},
                     "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}


def settle(wl: Workload, seconds: float = 1.05) -> None:
    """Controllers act, then the clock moves past the second (a trace's resolution) before the next change."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        wl.step()
        time.sleep(0.05)


def offline_workload(emu: Emulator, wl: Workload) -> None:
    """What happens while one recorder is stopped: scaled by the subresource and by a patch, re-imaged, relabelled,
    deleted, created and deleted, a namespace deleted, a Job whose pod starts and finishes."""
    base = "/apis/apps/v1/namespaces/web/deployments"
    assert call(emu, "PATCH", f"{base}/a/scale", {"spec": {"replicas": 3}}, headers=PATCH)[0] == 200
    settle(wl)
    assert call(emu, "PATCH", f"{base}/b", {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.26"}]}}}},
                headers=PATCH)[0] == 200
    settle(wl)
    assert call(emu, "PATCH", f"{base}/b", {"spec": {"replicas": 2}}, headers=PATCH)[0] == 200
    settle(wl)
    assert call(emu, "PATCH", f"{base}/a", {"metadata": {"labels": {"tier": "front"}}}, headers=PATCH)[0] == 200
    settle(wl)
    assert call(emu, "DELETE", f"{base}/c")[0] == 200
    settle(wl)
    assert call(emu, "POST", base, deployment("e", "web"))[0] == 201
    settle(wl)
    assert call(emu, "DELETE", f"{base}/e")[0] == 200
    settle(wl)
    assert call(emu, "DELETE", "/api/v1/namespaces/gone")[0] == 200
    settle(wl)
    assert call(emu, "POST", "/apis/batch/v1/namespaces/web/jobs", job("j", "web"))[0] == 201
    settle(wl, 2.5)


def export(cache: str, start_ts: float, end_ts: float, out: Path) -> list[tuple[int, str, str, Any]]:
    done = sktrace("export", "--cache", cache, "-s", f"@{int(start_ts)}", "-t", f"@{int(end_ts)}", "-O", str(out), check=False)
    assert done.returncode == 0, done.stderr
    trace = decode_trace(out.read_bytes())
    rows = []
    for event in trace.events:
        for obj in event["applied_objs"]:
            meta = obj["metadata"]
            rows.append((event["ts"], "applied", f"{obj['kind']}/{meta.get('namespace', '')}/{meta['name']}", json.dumps(obj.get("spec"), sort_keys=True)))
        for obj in event["deleted_objs"]:
            meta = obj["metadata"]
            rows.append((event["ts"], "deleted", f"{obj['kind']}/{meta.get('namespace', '')}/{meta['name']}", None))
    return rows


def _query(cache: str, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(cache)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def lifecycles(path: Path) -> dict[tuple[str, str], list[tuple[str, list[int]]]]:
    """Each owner's pod lifecycles (a lifecycle per pod: its state and times), sorted."""
    trace = decode_trace(path.read_bytes())
    return {owner: sorted((state, times if isinstance(times, list) else [times]) for lives in by_hash.values() for life in lives
                          for state, times in life.items())
            for owner, by_hash in trace.pod_lifecycles.items()}


def logged_second(line: dict[str, Any]) -> int:
    return calendar.timegm(time.strptime(line["stageTimestamp"][:19], "%Y-%m-%dT%H:%M:%S"))


def _answered(lines: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The writes the API server answered with success (the lines the log ends a request with)."""
    for line in lines:
        if line.get("stage") == "ResponseComplete" and 200 <= (line.get("responseStatus") or {}).get("code", 0) < 300 \
                and line.get("verb") in ("create", "update", "patch", "delete", "deletecollection"):
            yield line


def _named(line: dict[str, Any]) -> list[str]:
    """The objects a write names: its object, its answer's, or the items of a collection's answer."""
    answer = line.get("responseObject") or {}
    names = [line["objectRef"].get("name"), (answer.get("metadata") or {}).get("name")]
    names += [(item.get("metadata") or {}).get("name") for item in answer.get("items") or []]
    return [n for n in dict.fromkeys(names) if n]


def logged_writes(lines: Iterable[dict[str, Any]]) -> dict[tuple[str, str, str], set[tuple[str, int]]]:
    """(resource, namespace, name) → the (applied|deleted, second) of each write the server logged of it; a collection's
    delete that names nothing (below RequestResponse) under the name "*" of its kind and namespace."""
    out: dict[tuple[str, str, str], set[tuple[str, int]]] = {}
    for line in _answered(lines):
        ref, what = line["objectRef"], "deleted" if line["verb"] in ("delete", "deletecollection") else "applied"
        if ref.get("subresource") not in (None, "scale"):
            continue
        for name in _named(line) or ["*"]:
            out.setdefault((ref["resource"], ref.get("namespace", ""), name), set()).add((what, logged_second(line)))
    return out


def pod_removals(lines: Iterable[dict[str, Any]]) -> dict[tuple[str, str], set[int]]:
    """(owner kind, "ns/name") → the seconds the server logged a removal of one of its pods: a delete answered with the
    Pod at grace 0 (the kubelet's final one, or a pod's only one), or a namespace controller's ``deletecollection``
    listing it. The owner chain is the log's own: pod → ReplicaSet → Deployment, or pod → Job. A log that holds no
    answers (below RequestResponse) names no owner: its pod deletes are under ("*", namespace)."""
    answered = list(_answered(lines))
    owner_of: dict[tuple[str, str, str], tuple[str, str]] = {}  # (kind, ns, name) → its owner's (kind, name)
    for line in answered:
        answer = line.get("responseObject") or {}
        meta = answer.get("metadata") or {}
        for ref in meta.get("ownerReferences") or []:
            if ref.get("controller"):
                owner_of[(answer.get("kind", ""), meta.get("namespace", ""), meta.get("name", ""))] = (ref["kind"], ref["name"])
    top = {"Deployment": "apps/v1.Deployment", "Job": "batch/v1.Job"}

    def owner(ns: str, pod: str) -> tuple[str, str] | None:
        kind, name = owner_of.get(("Pod", ns, pod), ("", ""))
        if kind == "ReplicaSet":
            kind, name = owner_of.get(("ReplicaSet", ns, name), ("", ""))
        return (top[kind], f"{ns}/{name}") if kind in top else None

    out: dict[tuple[str, str], set[int]] = {}
    for line in answered:
        ref, answer = line["objectRef"], line.get("responseObject") or {}
        if ref["resource"] != "pods" or ref.get("subresource"):
            continue
        if "responseObject" not in line and line["verb"] in ("delete", "deletecollection"):
            out.setdefault(("*", ref.get("namespace", "")), set()).add(logged_second(line))
            continue
        final = line["verb"] == "deletecollection" or (
            line["verb"] == "delete" and (answer.get("kind") == "Status" or (answer.get("metadata") or {}).get("deletionGracePeriodSeconds") == 0))
        for name in _named(line) if final else []:
            key = owner(ref.get("namespace", ""), name)
            if key is not None:
                out.setdefault(key, set()).add(logged_second(line))
    return out


def rows_at_logged_seconds(after: list[tuple[int, str, str, Any]], log: Iterable[dict[str, Any]], *, offline_from: int) -> list[Any]:
    """The rows of the offline time (from ``offline_from``) not at a second the server logged a write of that object, of
    that sort (applied: create, update, patch; deleted: delete, deletecollection): none when backfill was exact."""
    logged = logged_writes(log)
    wrong = []
    for ts, what, ref, _ in after:
        kind, ns, name = ref.split("/")
        writes = logged.get((kind.lower() + "s", ns, name), set()) | logged.get((kind.lower() + "s", ns, "*"), set())
        if ts >= offline_from and (what, ts) not in writes:
            wrong.append((ts, what, ref))
    return wrong


def lifecycles_as_logged(a: dict[tuple[str, str], list[tuple[str, list[int]]]], live: dict[tuple[str, str], list[tuple[str, list[int]]]],
                         removals: dict[tuple[str, str], set[int]]) -> list[Any]:
    """Where ``a`` (a backfilled export's lifecycles) differs from what the server's own times give, compared with
    ``live`` (a recorder that stayed up): the same owners, pods and states; each start the same (both read the
    containers' ``startedAt``), each end the same (a container's ``finishedAt``) or a second the log removed one of
    that owner's pods at (a live recorder ends a deleted pod when it receives the deletion, a backfill when the
    server logged it: their difference is the live recorder's delay, which nothing bounds). None when all hold."""
    if a.keys() != live.keys():
        return [("owners", sorted(a), sorted(live))]
    wrong: list[Any] = []
    for owner in a:
        groups: dict[tuple[str, int], list[list[int]]] = {}
        for which, lives in enumerate((a[owner], live[owner])):
            for state, times in lives:
                groups.setdefault((state, times[0]), [[], []])[which].append(times[1] if len(times) > 1 else -1)
        for (state, start), (ends, live_ends) in sorted(groups.items()):
            if len(ends) != len(live_ends):
                wrong.append((owner, state, start, ends, live_ends))
                continue
            wrong += [(owner, state, start, end, live_end) for end, live_end in zip(sorted(ends), sorted(live_ends))
                      if end != live_end and end not in removals.get(owner, set()) | removals.get(("*", owner[1].split("/")[0]), set())]
    return wrong


@dataclass(frozen=True)
class Scenario:
    log: Path
    up: str  # a cache whose recorder stayed up
    down: str  # a cache whose recorder was stopped while the workload ran
    since: float  # the window's start: a second before the offline writes
    until: float  # after the restart's reconciliation: both caches recorded up to here
    offline_from: int  # the second the offline writes begin: before it, both recorders observed live

    def log_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]


def run_scenario(emu: Emulator, kubeconfig: str, tmp_path: Path, policy: dict[str, Any] | None = None) -> Scenario:
    log = tmp_path / "audit.log"
    emu.enable_audit(log, policy)
    wl = Workload(emu, start_delay=0.2, job_seconds=(0.5, 0.5))
    for name in ("a", "b", "c"):
        emu.create(deployment(name, "web"))
    emu.create(deployment("d", "gone"))
    settle(wl, 0.3)
    up_cache, down_cache = str(tmp_path / "up.db"), str(tmp_path / "down.db")
    up = start_background(kubeconfig, up_cache, duration="120")
    wait_synced(up_cache, 1, up)
    assert start(kubeconfig, down_cache).returncode == 0  # run 1, then stopped
    settle(wl)
    offline_since = time.time()
    offline_workload(emu, wl)
    settle(wl)
    second = start(kubeconfig, down_cache)
    assert second.returncode == 0, second.stderr
    window_end = time.time()
    settle(wl)
    stop(up)
    emu.disable_audit()
    return Scenario(log, up_cache, down_cache, offline_since - 1, window_end, int(offline_since))


def partial_log_keeps_what_it_shows(sc: Scenario, tmp_path: Path) -> None:
    """The log cut just before e's deletion (as a log rotated away, or shipped late, would be): e is kept, created at its
    logged time, its end reconstructed at the restart (inferred) and named."""
    lines = sc.log.read_text().splitlines()
    cut = next(i for i, line in enumerate(lines) if '"verb":"delete"' in line and '"resource":"deployments","namespace":"web","name":"e"' in line)
    partial, cache = tmp_path / "partial.log", str(tmp_path / "partial.db")
    partial.write_text("\n".join(lines[:cut]) + "\n")
    shutil.copy(sc.down, cache)
    done = sktrace("backfill", "--cache", cache, "--audit-log", str(partial), check=False)
    assert done.returncode == 0, done.stderr
    assert "with its end reconstructed at the restart (the log ends before it): apps/v1.Deployment web/e" in done.stdout, done.stdout
    rows = _query(cache, "SELECT ts, op, inferred FROM events WHERE name = 'e' ORDER BY ts, id")
    live = _query(sc.up, "SELECT ts, op FROM events WHERE name = 'e' ORDER BY ts, id")
    assert [(op, inferred) for _, op, inferred in rows] == [(0, 0), (1, 1)]  # created as logged; its end at the restart
    assert abs(rows[0][0] - live[0][0]) <= 1 and rows[1][0] >= live[1][0]


def test_a_backfilled_gap_exports_what_a_recorder_that_stayed_up_recorded(emulator: Emulator, emulator_kubeconfig: str, tmp_path: Path) -> None:
    sc = run_scenario(emulator, emulator_kubeconfig, tmp_path)
    partial_log_keeps_what_it_shows(sc, tmp_path)
    before = export(sc.down, sc.since, sc.until, tmp_path / "before.sktrace")
    filled = sktrace("backfill", "--cache", sc.down, "--audit-log", str(sc.log), check=False)
    assert filled.returncode == 0, filled.stderr
    assert "filled from the audit log (RequestResponse, " in filled.stdout, filled.stdout
    assert "bad line" not in filled.stderr, filled.stderr  # every line the server writes is read (bindings: a Status)

    after = export(sc.down, sc.since, sc.until, tmp_path / "after.sktrace")
    live = export(sc.up, sc.since, sc.until, tmp_path / "live.sktrace")
    assert before != live and rows_at_logged_seconds(before, sc.log_lines(), offline_from=sc.offline_from)  # a restart's reconstruction is blurred
    assert lifecycles_as_logged(lifecycles(tmp_path / "before.sktrace"), lifecycles(tmp_path / "live.sktrace"), pod_removals(sc.log_lines()))
    # the same changes as the recorder that stayed up; their times are the server's own (a live recorder stamps what it
    # receives when it receives it, which a busy machine delays without bound): each at a second the log wrote that
    # object's write, and what was observed live before the offline time as it was
    assert sorted(r[1:] for r in after) == sorted(r[1:] for r in live), (after, live)
    assert rows_at_logged_seconds(after, sc.log_lines(), offline_from=sc.offline_from) == [], (after, live)
    assert [r for r in after if r[0] < sc.offline_from] == [r for r in before if r[0] < sc.offline_from], (after, before)
    pods_after, pods_live = lifecycles(tmp_path / "after.sktrace"), lifecycles(tmp_path / "live.sktrace")
    # every pod ends at its logged time (the kubelet's final delete), those of e (born and gone offline, its ReplicaSet
    # never seen by the cache) and of the namespace deleted offline among them
    assert {("apps/v1.Deployment", "web/e"), ("apps/v1.Deployment", "gone/d"), ("batch/v1.Job", "web/j")} <= pods_after.keys(), pods_after
    assert lifecycles_as_logged(pods_after, pods_live, pod_removals(sc.log_lines())) == [], (pods_after, pods_live)
    assert sktrace("validate", str(tmp_path / "after.sktrace"), check=False).returncode == 0
    told = sktrace("export", "--cache", sc.down, "-s", f"@{int(sc.since)}", "-t", f"@{int(sc.until)}", "-O", str(tmp_path / "x.sktrace"))
    assert "filled from the audit log (RequestResponse, 9 events)" in told.stderr, told.stderr
    assert "% exact from the audit log" in told.stderr.splitlines()[0], told.stderr  # the coverage line counts it apart
    assert "Filled from the audit log" in sktrace("status", "--cache", sc.down).stdout
    drawn = sktrace("status", "--cache", sc.down, "--timeline", "-s", f"@{int(sc.since)}", "-t", f"@{int(sc.until)}", "--width", "100").stdout
    assert "═ no recorder, but exact from the audit log" in drawn or "= no recorder, but exact from the audit log" in drawn, drawn
    inspected = sktrace("inspect", str(tmp_path / "x.sktrace")).stdout  # a trace holds SimKube's five keys: none says it
    assert "Observed         not told in a trace file (kubectl sktrace status --timeline on its cache tells it)" in inspected, inspected

    # a window that ends inside the gap: what the log wrote before its end, as the recorder that stayed up recorded it
    logged = sorted({ts for (ts,) in _query(sc.down, "SELECT e.ts FROM events e JOIN audit_rows a ON a.event_id = e.id")})
    end = logged[len(logged) // 2] + 1
    inside = export(sc.down, sc.since, end, tmp_path / "inside.sktrace")
    assert any(r[0] > int(sc.since) for r in inside) and inside == [r for r in after if r[0] < end], (inside, after)

    again = sktrace("backfill", "--cache", sc.down, "--audit-log", str(sc.log), check=False)
    assert again.returncode == 0, again.stderr
    export(sc.down, sc.since, sc.until, tmp_path / "again.sktrace")
    assert (tmp_path / "again.sktrace").read_bytes() == (tmp_path / "after.sktrace").read_bytes()


def test_a_metadata_log_moves_deletions_to_their_logged_times_and_invents_no_body(emulator: Emulator, emulator_kubeconfig: str,
                                                                                  tmp_path: Path) -> None:
    sc = run_scenario(emulator, emulator_kubeconfig, tmp_path, {"rules": [{"level": "Metadata"}], "omitStages": ["RequestReceived"]})
    before = export(sc.down, sc.since, sc.until, tmp_path / "before.sktrace")
    filled = sktrace("backfill", "--cache", sc.down, "--audit-log", str(sc.log), check=False)
    assert filled.returncode == 0, filled.stderr
    assert "filled from the audit log (Metadata, " in filled.stdout, filled.stdout
    after = export(sc.down, sc.since, sc.until, tmp_path / "after.sktrace")
    live = export(sc.up, sc.since, sc.until, tmp_path / "live.sktrace")
    deleted = {r[2]: r[0] for r in after if r[1] == "deleted"}
    assert set(deleted) == {"Deployment/web/c", "Deployment/gone/d"}  # e was created and deleted offline: no body, not invented
    live_deleted = {r[2]: r[0] for r in live if r[1] == "deleted"}
    before_deleted = {r[2]: r[0] for r in before if r[1] == "deleted"}
    # c's own delete is logged; d went with its namespace, by the namespace controller's deletecollection, which names
    # nothing below RequestResponse but had no selector: every Deployment of the namespace went then
    assert rows_at_logged_seconds([r for r in after if r[1] == "deleted"], sc.log_lines(), offline_from=sc.offline_from) == [], after
    assert set(live_deleted) == set(deleted) | {"Deployment/web/e"}
    assert all(before_deleted[k] > deleted[k] for k in deleted)  # the restart's time, moved back
    assert [r for r in after if r[1] == "applied"] == [r for r in before if r[1] == "applied"]  # bodies: the reconstruction stands
    # pods' deletes name no uid at Metadata: the one pod of each name whose end the restart inferred ends at its name's
    # last logged delete (the kubelet's final one); e's pods were never seen and nothing shows their bodies: not invented
    pods_after, pods_live = lifecycles(tmp_path / "after.sktrace"), lifecycles(tmp_path / "live.sktrace")
    live_seen = {k: v for k, v in pods_live.items() if k != ("apps/v1.Deployment", "web/e")}
    assert lifecycles_as_logged(pods_after, live_seen, pod_removals(sc.log_lines())) == [], (pods_after, pods_live)
    told = sktrace("export", "--cache", sc.down, "-s", f"@{int(sc.since)}", "-t", f"@{int(sc.until)}", "-O", str(tmp_path / "x.sktrace"))
    assert "filled from the audit log (Metadata, 2 events)" in told.stderr and "the log does not account for: reconstructed" in told.stderr


def test_check_finds_nothing_in_time_observed_live_until_an_event_is_removed(emulator: Emulator, emulator_kubeconfig: str,
                                                                              tmp_path: Path) -> None:
    import sqlite3

    log = tmp_path / "audit.log"
    emulator.enable_audit(log)
    wl = Workload(emulator, start_delay=0.2, job_seconds=(0.5, 0.5))
    emulator.create(deployment("a", "web"))
    cache = str(tmp_path / "live.db")
    recorder = start_background(emulator_kubeconfig, cache, duration="60")
    wait_synced(cache, 1, recorder)
    settle(wl, 2.5)  # the sync's own second, and the check's slack, behind
    assert call(emulator, "PATCH", "/apis/apps/v1/namespaces/web/deployments/a/scale", {"spec": {"replicas": 2}}, headers=PATCH)[0] == 200
    settle(wl)
    assert call(emulator, "POST", "/apis/apps/v1/namespaces/web/deployments", deployment("b", "web"))[0] == 201
    settle(wl)
    assert call(emulator, "DELETE", "/apis/apps/v1/namespaces/web/deployments/a")[0] == 200
    settle(wl, 3.0)
    stop(recorder)
    emulator.disable_audit()
    agreed = sktrace("backfill", "--check", "--cache", cache, "--audit-log", str(log))
    assert agreed.stdout.startswith("checked ") and "the recording agrees with the log" in agreed.stdout, agreed.stdout
    assert int(agreed.stdout.split()[1]) >= 3  # the scale, the create, the delete, and the controllers' status writes
    conn = sqlite3.connect(cache)
    with conn:
        conn.execute("DELETE FROM events WHERE name = 'a' AND op = 0 AND id = (SELECT MAX(id) FROM events WHERE name = 'a' AND op = 0)")
    conn.close()
    found = sktrace("backfill", "--check", "--cache", cache, "--audit-log", str(log))
    assert "1 disagreement" in found.stdout, found.stdout
    assert "apps/v1.Deployment web/a: a spec change was logged (line" in found.stdout and "the recorder missed it" in found.stdout


@pytest.mark.slow
def test_an_outage_is_filled_too(tmp_path: Path) -> None:
    """An API outage within a run: the deletion the resumed watch caught up moves to its logged time."""
    from tests.record.test_outages import NS, finish, record
    from reliability_support import query, wait_rows

    emu = Emulator(token="outage-token", bookmark_interval=0.2, seed=3).start()
    try:
        emu.enable_audit(tmp_path / "audit.log")
        proc, _, cache = record(tmp_path, emu)
        emu.stop()
        time.sleep(0.5)
        gone = time.time()
        emu.delete("apps/v1", "Deployment", NS, "doomed")
        deleted = time.time()
        time.sleep(2.0)
        emu.start()
        wait_rows(cache, "SELECT 1 FROM events WHERE name = 'doomed' AND op = 1")
        wait_rows(cache, "SELECT 1 FROM coverage_gaps GROUP BY run_id HAVING sum(until IS NULL) = 0")
        finish(proc)
        emu.disable_audit()
    finally:
        emu.stop()
    (caught,) = query(cache, "SELECT ts, inferred FROM events WHERE name = 'doomed' AND op = 1")
    assert caught[1] == 1 and caught[0] >= int(gone) + 2
    done = sktrace("backfill", "--cache", str(cache), "--audit-log", str(tmp_path / "audit.log"), check=False)
    assert done.returncode == 0, done.stderr
    assert "outage of apps/v1.Deployment " in done.stdout and "filled from the audit log (RequestResponse, 1 event written" in done.stdout, done.stdout
    ((ts, inferred),) = query(cache, "SELECT ts, inferred FROM events WHERE name = 'doomed' AND op = 1")
    assert int(gone) <= ts <= int(deleted) and inferred == 0
