"""``backfill`` fills status changes (docs/spec.md "What a status change is") in an offline gap from the audit log's
status writes: the emulator logs each write's answer (RequestResponse) as kube-apiserver does, the kubelet's
``pods/status`` patches and the controllers' status updates among them. One recorder stays up, another is stopped while
a Deployment rolls out and a container is OOM-killed and restarted; after ``kubectl sktrace backfill`` the stopped one
holds the status changes the one that stayed up recorded, each at its second (within the log's), the restart's
reconstructed rows gone; a second backfill adds nothing."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import pytest
from tests.audit.test_backfill_end_to_end import PATCH, deployment, settle
from tests.cli.test_cli_start import sktrace, start, start_background, stop, wait_synced
from tests.emulator.test_emulator_server import call

from kubectl_sktrace.store import open_cache_readonly
from kubectl_sktrace.store import statuses as stored
from kubectl_sktrace.trace import statuses
from sktrace_emulator import Emulator, Workload

pytestmark = pytest.mark.timeout(180)

Story = list[tuple[int, str, str, dict[str, Any]]]


def story(cache: str, since: float, until: float) -> Story:
    """The status changes of namespace ``web`` from ``since`` to ``until``: (second, object, uid, what a person reads), in
    order; a pod bound and not yet started left out (the log cannot show it: a binding is answered with a Status)."""
    with open_cache_readonly(cache) as c:
        rows = stored.every_row(c, namespace="web")
    out = [(r.ts, f"{r.key.gvk.kind}/{r.key.name}", r.uid, r.reduced) for r in rows if since <= r.ts <= until]
    return sorted((row for row in out if not (row[3].get("phase") == "Pending" and row[3].get("node") and not row[3].get("containers"))),
                  key=lambda row: (row[1], row[2], row[0]))


def same_story(a: Story, b: Story) -> bool:
    """The same changes of the same objects in the same order, each within a second of the other (the log's time is the
    write's, a live recorder's the moment it received the watch event)."""
    return len(a) == len(b) and all(x[1:] == y[1:] and abs(x[0] - y[0]) <= 1 for x, y in zip(a, b))


def settled(emu: Emulator, wl: Workload, what: str, done: Callable[[list[dict[str, Any]]], bool], timeout: float = 60) -> None:
    """The controllers and the kubelet act until ``done`` holds of namespace web's pods (their reductions), then for a
    second more (its writes behind): what the machine's speed decides is over before the test's clock reads."""
    deadline = time.time() + timeout
    while not done([statuses.reduce(p, pod=True) for p in emu.list("v1", "Pod", "web") if not p["metadata"].get("deletionTimestamp")]):
        assert time.time() < deadline, f"never: {what}"
        wl.step()
        time.sleep(0.05)
    settle(wl)


def ready(pods: list[dict[str, Any]], count: int) -> bool:
    return len(pods) == count and all(p.get("containers", {}).get("c", {}).get("ready") for p in pods)


def first_difference(a: Story, b: Story) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x[1:] != y[1:] or abs(x[0] - y[0]) > 1:
            return f"row {i}:\n  filled {x}\n  live   {y}\n  around: {a[max(0, i - 2):i + 3]}\n  live around: {b[max(0, i - 2):i + 3]}"
    return f"lengths {len(a)} and {len(b)}: {a[len(b):] or b[len(a):]}"


def test_status_changes_in_a_gap_are_filled_from_the_audit_log_as_a_recorder_that_stayed_up_recorded_them(
        emulator: Emulator, emulator_kubeconfig: str, tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    emulator.enable_audit(log)
    wl = Workload(emulator, start_delay=0.2, job_seconds=(0.5, 0.5))
    emulator.create(deployment("web", "web", replicas=2))
    emulator.create(deployment("cache", "web"))
    settled(emulator, wl, "three pods ready", lambda pods: ready(pods, 3))
    up_cache, down_cache = str(tmp_path / "up.db"), str(tmp_path / "down.db")
    up = start_background(emulator_kubeconfig, up_cache, duration="120")
    wait_synced(up_cache, 1, up)
    assert start(emulator_kubeconfig, down_cache).returncode == 0  # run 1, then stopped
    settle(wl)
    since = int(time.time())  # the second the offline writes begin: a row is at its write's second, or the next (received)
    base = "/apis/apps/v1/namespaces/web/deployments"
    # a rollout, and a container OOM-killed a second after it starts and restarted, while the recorder is stopped
    assert call(emulator, "PATCH", f"{base}/web", {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.26"}]}}}},
                headers=PATCH)[0] == 200
    assert call(emulator, "PATCH", f"{base}/cache", {"spec": {"template": {"metadata": {"annotations": {"sktrace.io/oom-after-seconds": "1"}}}}},
                headers=PATCH)[0] == 200
    def web_rolled_out() -> bool:
        found = statuses.reduce(emulator.get("apps/v1", "Deployment", "web", "web") or {})
        return (found.get("replicas"), found.get("updatedReplicas"), found.get("readyReplicas")) == (2, 2, 2)

    settled(emulator, wl, "web rolled out, cache restarted after its OOM kill", lambda pods: web_rolled_out() and ready(pods, 3) and sum(
        1 for p in pods if p["containers"]["c"].get("last") == "terminated OOMKilled 137" and p["containers"]["c"]["restarts"] == 1) == 1)
    until = time.time()
    second = start(emulator_kubeconfig, down_cache)
    assert second.returncode == 0, second.stderr
    settle(wl)
    stop(up)
    emulator.disable_audit()

    live, before = story(up_cache, since, until), story(down_cache, since, until + 2)
    assert any(s.get("containers", {}).get("c", {}).get("last") == "terminated OOMKilled 137" for _, name, _, s in live if name.startswith("Pod/cache-"))
    assert not same_story(before, live)  # the restart found the end states only, reconstructed
    filled = sktrace("backfill", "--cache", down_cache, "--audit-log", str(log))
    assert " status changes at their logged second, " in filled.stdout, filled.stdout
    after = story(down_cache, since, until + 2)
    expected = [row for row in live if row[0] <= until + 2]
    assert same_story(after, expected), first_difference(after, expected)
    with open_cache_readonly(down_cache) as c:
        rows = stored.every_row(c, namespace="web")
        assert not [r for r in rows if since <= r.ts <= until + 2 and r.inferred]  # the reconstructed rows accounted for went
        filled_ids = [r.id for r in rows if since < r.ts < until]
        assert filled_ids and all(stored.from_audit_log(c, i) for i in filled_ids)
        state = stored.state_at(c, at=float("inf"))
    with open_cache_readonly(up_cache) as c:
        assert {k: v.reduced for k, v in state.items() if k.namespace == "web"} == \
            {k: v.reduced for k, v in stored.state_at(c, at=float("inf")).items() if k.namespace == "web" and k in state}

    again = sktrace("backfill", "--cache", down_cache, "--audit-log", str(log))
    assert "status change" not in again.stdout, again.stdout
    assert story(down_cache, since, until + 2) == after
    agreed = sktrace("backfill", "--check", "--cache", down_cache, "--audit-log", str(log))
    assert agreed.returncode == 0 and "disagreement" not in agreed.stdout, agreed.stdout  # the fill is not time observed live
