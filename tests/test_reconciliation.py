"""The reconciliation report: what a restart found changed while offline (reconciliation, store.reconciliation,
render), on caches recorded from the emulator by the real CLI, and its exact text."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.cli.test_cli_start import (
    NS,
    finish_pod,
    make_deployment,
    make_pod,
    query,
    sktrace,
    start,
)

from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.reconciliation import (
    CHANGED,
    CREATED,
    DELETED,
    OfflineChange,
    OfflinePod,
    Reconciliation,
    Sample,
    reconciliation_brief,
    reconciliation_lines,
    summarize,
)
from kubectl_sktrace.store import open_cache, open_cache_readonly
from kubectl_sktrace.store.reconciliation import reconciliation
from sktrace_emulator import Emulator

DEPLOY = GVK("apps", "v1", "Deployment")
STS = GVK("apps", "v1", "StatefulSet")
T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def dep(name: str, namespace: str = "web") -> ObjKey:
    return ObjKey(DEPLOY, namespace, name)


# -- the pure grouping ----------------------------------------------------------------------------------------


def test_summarize_groups_per_kind_and_keeps_the_first_of_each_group() -> None:
    changes = [(DELETED, OfflineChange(dep(f"d{i:02}"), found=T0)) for i in range(12)]
    changes += [(CREATED, OfflineChange(ObjKey(STS, "db", "pg"), found=T0, created=int(T0) - 60))]
    changes += [(CHANGED, OfflineChange(dep("c"), found=T0, before=T0 - 600))]
    pods = [OfflinePod("web", f"p{i}", None, None, int(T0), True) for i in range(3)]
    report = summarize(run_id=2, offline_since=T0 - 100, offline_until=T0, synced=T0 + 1, changes=changes, pods=pods, limit=10)
    assert [k.gvk for k in report.kinds] == [DEPLOY, STS]
    deploys = report.kinds[0]
    assert deploys.deleted.count == 12 and deploys.deleted.more == 2
    assert [c.key.name for c in deploys.deleted.items] == [f"d{i:02}" for i in range(10)]
    assert deploys.created == Sample((), 0) and deploys.changed.items == (OfflineChange(dep("c"), found=T0, before=T0 - 600),)
    assert report.kinds[1].created.count == 1 and report.pods.count == 3 and report.pods.more == 0
    assert not report.empty


def test_summarize_of_nothing_is_empty() -> None:
    report = summarize(run_id=2, offline_since=T0 - 100, offline_until=T0, synced=T0, changes=[], pods=[])
    assert report.empty and report.kinds == () and report.pods == Sample((), 0)


# -- the text a person reads ------------------------------------------------------------------------------------


def test_the_report_as_lines_names_objects_with_their_times() -> None:
    since, until = T0 + 131, T0 + 5405  # 08:02:11 -> 09:30:05
    changes = [(DELETED, OfflineChange(dep(f"gone-{i:02}"), found=until + 0.4, before=since)) for i in range(11)]
    changes += [
        (CREATED, OfflineChange(dep("new"), found=until + 0.4, created=int(T0) + 2700)),
        (CREATED, OfflineChange(dep("unknown-birth"), found=until + 0.4)),
        (CHANGED, OfflineChange(dep("scaled"), found=until + 0.4, before=T0 - 86400)),
    ]
    pods = [
        OfflinePod("web", "batch-0", dep("batch"), int(T0), int(T0) + 5000, False),
        OfflinePod("web", "gone-00-rs-0", dep("gone-00"), int(T0), int(until), True),
        OfflinePod("web", "bare", None, int(T0), int(T0) + 4000, False),
    ]
    report = summarize(run_id=2, offline_since=since, offline_until=until, synced=until + 2, changes=changes, pods=pods)
    assert "\n".join(reconciliation_lines(report)) == """\
Offline 2027-01-15T08:02:11Z → 09:30:05 (1h27m54s); found by this run's initial lists:
  apps/v1.Deployment deleted while offline (11):
    web/gone-00  last seen 08:02:11 → found gone 09:30:05
    web/gone-01  last seen 08:02:11 → found gone 09:30:05
    web/gone-02  last seen 08:02:11 → found gone 09:30:05
    web/gone-03  last seen 08:02:11 → found gone 09:30:05
    web/gone-04  last seen 08:02:11 → found gone 09:30:05
    web/gone-05  last seen 08:02:11 → found gone 09:30:05
    web/gone-06  last seen 08:02:11 → found gone 09:30:05
    web/gone-07  last seen 08:02:11 → found gone 09:30:05
    web/gone-08  last seen 08:02:11 → found gone 09:30:05
    web/gone-09  last seen 08:02:11 → found gone 09:30:05
    +1 more
  apps/v1.Deployment created while offline (2):
    web/new            created 08:45:00
    web/unknown-birth  found 09:30:05
  apps/v1.Deployment changed while offline (1):
    web/scaled  last recorded 2027-01-14T08:00:00Z → found changed 09:30:05
  pods finished while offline (3):
    web/batch-0       ended 09:23:20  owner apps/v1.Deployment web/batch
    web/gone-00-rs-0  ended 09:30:05 (vanished: ended earlier)  owner apps/v1.Deployment web/gone-00
    web/bare          ended 09:06:40"""
    assert reconciliation_brief(report) == [
        "Offline 2027-01-15T08:02:11Z → 09:30:05 (1h27m54s), reconciled by run 2:",
        "  apps/v1.Deployment: 11 deleted, 2 created, 1 changed while offline",
        "  pods: 3 finished while offline",
    ]


@pytest.mark.parametrize(("report", "line"), [
    (Reconciliation(run_id=1, offline_since=None, offline_until=T0, synced=T0 + 1),
     "First recording into this cache: no offline time to reconcile."),
    (Reconciliation(run_id=3, offline_since=T0 - 60, offline_until=T0, synced=None),
     "Run 3 has not finished its initial lists: nothing reconciled yet."),
    (Reconciliation(run_id=3, offline_since=T0 - 60, offline_until=T0, synced=T0 + 1),
     "Offline 2027-01-15T07:59:00Z → 08:00:00 (1m00s): nothing was deleted, created or changed, and no pod finished."),
], ids=["first-run", "not-synced", "nothing-changed"])
def test_one_line_when_there_is_nothing_to_list(report: Reconciliation, line: str) -> None:
    assert reconciliation_lines(report) == [line] == reconciliation_brief(report)


# -- on caches recorded from the emulator -----------------------------------------------------------------------


@pytest.fixture
def kubeconfig(emulator_kubeconfig: str) -> str:
    return emulator_kubeconfig


@pytest.fixture
def cache(tmp_path: Path) -> str:
    return str(tmp_path / "state" / "cache.db")


def report_of(cache: str, run_id: int | None = None) -> Reconciliation:
    with open_cache_readonly(cache) as opened:
        report = reconciliation(opened, run_id=run_id)
    assert report is not None
    return report


def names(sample: Sample[Any]) -> list[str]:
    return [getattr(item, "key", item).name for item in sample.items]


@pytest.mark.timeout(120)
def test_a_restart_reports_exactly_what_changed_offline(emulator: Emulator, kubeconfig: str, cache: str) -> None:
    emu = emulator
    now = time.time()
    for i in range(12):
        make_deployment(emu, f"gone-{i:02}", replicas=1, started=now - 60)
    make_deployment(emu, "scaled", replicas=1, started=now - 60)
    make_deployment(emu, "again", replicas=1, started=now - 60)
    make_deployment(emu, "stay", replicas=1, started=now - 60)
    make_deployment(emu, "batch", replicas=1, started=now - 60)
    first = start(kubeconfig, cache, "-o", "json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["reconciliation"]["offline"] is None
    assert "First recording into this cache: no offline time to reconcile." in first.stderr.splitlines()
    stopped = query(cache, "SELECT stopped FROM runs WHERE id = 1")[0][0]

    for i in range(12):
        emu.delete("apps/v1", "Deployment", NS, f"gone-{i:02}", graceful=False)  # their ReplicaSets and pods go too
    emu.patch("apps/v1", "Deployment", NS, "scaled", {"spec": {"replicas": 3}})
    emu.delete("apps/v1", "Deployment", NS, "again", graceful=False)
    make_deployment(emu, "again", replicas=1, started=time.time())
    make_deployment(emu, "new", replicas=1, started=time.time())
    finish_pod(emu, "batch-rs-0", started=now - 60, finished=time.time())
    second = start(kubeconfig, cache, "-o", "json")
    assert second.returncode == 0, second.stderr
    started, synced = query(cache, "SELECT started, synced FROM runs WHERE id = 2")[0]

    report = report_of(cache)
    assert (report.run_id, report.offline_since, report.offline_until, report.synced) == (2, stopped, started, synced)
    (kind,) = report.kinds
    assert kind.gvk == DEPLOY
    assert names(kind.deleted) == ["again", *[f"gone-{i:02}" for i in range(9)]] and kind.deleted.count == 13
    assert all(c.before == stopped and started <= c.found <= synced for c in kind.deleted.items)
    assert names(kind.created) == ["again", "new"] and kind.created.count == 2
    assert all(c.created is not None and stopped - 1 <= c.created < started for c in kind.created.items)
    assert names(kind.changed) == ["scaled"] and kind.changed.count == 1 and kind.changed.items[0].before is not None
    vanished = ["again-rs-0", *[f"gone-{i:02}-rs-0" for i in range(12)]]
    assert report.pods.count == 14
    assert [(p.name, p.end_inferred) for p in report.pods.items] == (
        [("again-rs-0", True), ("batch-rs-0", False)] + [(n, True) for n in vanished[1:9]])
    assert report.pods.items[1].owner == ObjKey(DEPLOY, NS, "batch")

    data = json.loads(second.stdout)["reconciliation"]
    assert data["run"] == 2 and data["synced"] is True
    deploys = data["kinds"][0]
    assert (deploys["deletedWhileOffline"]["count"], deploys["deletedWhileOffline"]["more"]) == (13, 3)
    assert [o["name"] for o in deploys["createdWhileOffline"]["objects"]] == ["again", "new"]
    assert [o["name"] for o in deploys["changedWhileOffline"]["objects"]] == ["scaled"]
    assert data["podsFinishedWhileOffline"]["more"] == 4
    # the same report on stderr, after the sync line, for the person watching
    lines = second.stderr.splitlines()
    block = lines[next(i for i, line in enumerate(lines) if line.startswith("initial sync done")) + 1:]
    assert block[0].startswith("Offline ") and block[0].endswith("; found by this run's initial lists:")
    assert block[1] == "  apps/v1.Deployment deleted while offline (13):" and block[12] == "    +3 more"
    assert block[13] == "  apps/v1.Deployment created while offline (2):"

    # the third start has nothing to report, and the second run's report stays what it was
    third = start(kubeconfig, cache, "-o", "yaml")
    assert third.returncode == 0, third.stderr
    assert yaml.safe_load(third.stdout)["reconciliation"]["kinds"] == []
    assert report_of(cache).empty and report_of(cache, 2) == report


@pytest.mark.timeout(60)
def test_kinds_tracked_from_this_run_on_are_not_created_offline(emulator: Emulator, kubeconfig: str, cache: str,
                                                                tmp_path: Path) -> None:
    emu = emulator
    make_deployment(emu, "web", replicas=1)
    emu.create({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": NS},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "db"}}, "serviceName": "db",
                         "template": {"metadata": {"labels": {"a": "db"}}, "spec": {"containers": [{"name": "c", "image": "pg"}]}}}})
    config = tmp_path / "tracer.yaml"
    config.write_text("trackedObjects:\n  apps/v1.Deployment:\n    trackLifecycle: true\n")
    assert start(kubeconfig, cache, "--config", str(config)).returncode == 0
    make_deployment(emu, "api", replicas=1)
    config.write_text("trackedObjects:\n  apps/v1.Deployment:\n    trackLifecycle: true\n  apps/v1.StatefulSet: {}\n")
    assert start(kubeconfig, cache, "--config", str(config)).returncode == 0
    assert query(cache, "SELECT inferred FROM events WHERE name = 'db'") == [(0,)]
    report = report_of(cache)
    assert [(str(k.gvk), names(k.created)) for k in report.kinds] == [("apps/v1.Deployment", ["api"])]


@pytest.mark.timeout(60)
def test_status_shows_the_latest_report_and_writes_nothing(emulator: Emulator, kubeconfig: str, cache: str) -> None:
    make_deployment(emulator, "old", replicas=0)
    assert start(kubeconfig, cache).returncode == 0
    emulator.delete("apps/v1", "Deployment", NS, "old", graceful=False)
    assert start(kubeconfig, cache).returncode == 0
    files = sorted(os.listdir(Path(cache).parent))
    before = {name: (Path(cache).parent / name).read_bytes() for name in files}
    mtimes = {name: os.stat(Path(cache).parent / name).st_mtime_ns for name in files}

    data = json.loads(sktrace("status", "--cache", cache, "-o", "json").stdout)["reconciliation"]
    assert data["run"] == 2
    assert [o["name"] for o in data["kinds"][0]["deletedWhileOffline"]["objects"]] == ["old"]
    table = sktrace("status", "--cache", cache).stdout.splitlines()
    at = table.index("Reconciliation of the latest run (-o json names the objects):")
    assert table[at + 1].startswith("Offline ") and table[at + 1].endswith(", reconciled by run 2:")
    assert table[at + 2:] == ["  apps/v1.Deployment: 1 deleted while offline"]

    assert sorted(os.listdir(Path(cache).parent)) == files
    assert {name: (Path(cache).parent / name).read_bytes() for name in files} == before
    assert {name: os.stat(Path(cache).parent / name).st_mtime_ns for name in files} == mtimes


def test_the_version_before_a_restart_s_change_is_the_last_in_the_history_not_the_last_written(tmp_path: Path) -> None:
    """An audit log fills the time before the first run after later runs were written: its rows are the newest written
    and the oldest in time. The restart after them compares with the version the run before it recorded."""
    from tests.conftest import CacheBuilder, obj

    path = tmp_path / "cache.db"
    b = CacheBuilder(path)
    spec = {"replicas": 1}
    try:
        b.run(started=T0, stopped=T0 + 10)
        b.apply(int(T0), obj("Deployment", "web", spec=spec))
        b.run(started=T0 + 100, stopped=T0 + 110, synced=T0 + 101)
        labelled = obj("Deployment", "web", spec=spec)
        labelled["metadata"]["labels"] = {"tier": "canary"}
        b.apply(int(T0 + 100), labelled, inferred=True)
        b.apply(int(T0 - 60), obj("Deployment", "web", spec=spec), recv=T0 - 60)  # the log's row before the first run, written now
        b.run(started=T0 + 200, stopped=T0 + 210, synced=T0 + 201)
        scaled = obj("Deployment", "web", spec={"replicas": 2})
        scaled["metadata"]["labels"] = {"tier": "canary"}
        b.apply(int(T0 + 200), scaled, inferred=True)
    finally:
        b.close()
    (kind,) = report_of(str(path), run_id=3).kinds
    (change,) = kind.changed.items
    assert (change.before, change.detail) == (T0 + 100, "spec changed"), change


# -- bounded work on a large history ------------------------------------------------------------------------------


def test_the_queries_use_the_indexes(tmp_path: Path) -> None:
    with open_cache(tmp_path / "c.db", create=True):
        pass
    conn = sqlite3.connect(tmp_path / "c.db")
    try:
        from kubectl_sktrace.store.reconciliation import _CHANGES, _PODS

        params = {"low": 0, "synced": 1.0, "until": 1.0, "run": 1}
        changes = " | ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + _CHANGES, params))
        pods = " | ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + _PODS, params))
    finally:
        conn.close()
    assert "SEARCH e USING INDEX events_ts (ts>? AND ts<?)" in changes, changes
    assert "SEARCH p USING INDEX events_object (gvk=? AND namespace=? AND name=? AND ts<?)" in changes, changes
    assert "SCAN" not in changes.replace("USE TEMP B-TREE", ""), changes
    assert "SEARCH pods USING INDEX pods_end (end_ts>? AND end_ts<?)" in pods, pods


def test_the_changes_are_counted_by_what_they_changed() -> None:
    from kubectl_sktrace.reconciliation import CHANGES_OF_A_VERSION, reconciliation_brief, reconciliation_to_dict
    from kubectl_sktrace.trace import revisions

    assert CHANGES_OF_A_VERSION == (revisions.SPEC, revisions.METADATA, revisions.DATA)
    deploy = GVK.parse("apps/v1.Deployment")
    changes = [(CHANGED, OfflineChange(ObjKey(deploy, "ns", f"d{i}"), found=T0 + 100, before=T0, change=change))
               for i, change in enumerate(["metadata", "spec", "metadata", "data"])]
    report = summarize(run_id=2, offline_since=T0, offline_until=T0 + 90, synced=T0 + 100, changes=changes, pods=[])
    assert report.kinds[0].changed_by == (("spec", 1), ("metadata", 2), ("data", 1))
    assert reconciliation_brief(report)[1] == "  apps/v1.Deployment: 4 changed (1 spec, 2 metadata, 1 data) while offline"
    assert reconciliation_to_dict(report)["kinds"][0]["changedWhileOfflineBy"] == {"spec": 1, "metadata": 2, "data": 1}
