"""`backfill` from a real kube-apiserver v1.28's own audit log (the real tier): what a restart could only
reconstruct (at the restart, inferred) is replaced by what the log shows, at the second the server logged it.

The shared control plane's log backend is on (tests/realk8s.py: writes at RequestResponse, reads left out).
"""

from __future__ import annotations

import calendar
import time
from pathlib import Path
from typing import Any

import pytest

from kubectl_sktrace.store.versions import APPLIED, DELETED, METADATA
from realk8s import ControlPlane, deployment, start_recorder
from reliability_support import query, run_cli, wait_rows

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
