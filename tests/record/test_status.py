"""status: what a cache holds, rendered exactly as a person reads it (store.status + status)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.record.status import render_status, status_to_dict
from kubectl_sktrace.store import WriterLock, open_cache
from kubectl_sktrace.store.recording import (
    OP_APPLIED,
    OP_DELETED,
    EventRow,
    Identity,
    Recording,
)
from kubectl_sktrace.store.status import cache_status
from kubectl_sktrace.timeparse import format_time

DEPLOY = GVK("apps", "v1", "Deployment")
T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z


@pytest.fixture
def rec(tmp_path: Path) -> Iterator[Recording]:
    cache = open_cache(tmp_path / "c.db", create=True)
    yield Recording(cache)
    cache.close()


def record_two_runs(rec: Recording) -> None:
    rec.check_identity(Identity(server="https://k:6443", cluster_uid="ks-uid", context="prod", namespace=""))
    run1 = rec.begin_run(started=T0, pid=11, config_yaml="")
    with rec.batch():
        rec.mark_synced(run1, T0 + 2)
        for name in ("a", "b"):
            rec.append_event(run1, EventRow(ts=int(T0) + 2, recv=T0 + 2, key=ObjKey(DEPLOY, "ns", name), uid=name, op=OP_APPLIED,
                                            spec_hash=1, body={}))
            rec.upsert_object(ObjKey(DEPLOY, "ns", name), uid=name, spec_hash=1)
        rec.insert_pod(uid="p1", namespace="ns", name="a-1", owner=ObjKey(DEPLOY, "ns", "a"), stable_hash=5, start_ts=int(T0),
                       end_ts=None, first_seen=T0)
        rec.insert_pod(uid="p2", namespace="ns", name="b-1", owner=None, stable_hash=None, start_ts=None, end_ts=None, first_seen=T0)
        rec.heartbeat(run1, T0 + 60)
    run2 = rec.begin_run(started=T0 + 3600, pid=12, config_yaml="")
    with rec.batch():
        rec.append_event(run2, EventRow(ts=int(T0) + 3600, recv=T0 + 3600, key=ObjKey(DEPLOY, "ns", "b"), uid="b", op=OP_DELETED,
                                        inferred=True))
        rec.delete_object(ObjKey(DEPLOY, "ns", "b"))
        rec.update_pod("p1", start_ts=int(T0), end_ts=int(T0) + 3600, end_inferred=True, live=False)
        rec.mark_synced(run2, T0 + 3601)
    rec.stop_run(run2, T0 + 3720, clean=True)


def test_table_shows_identity_runs_gaps_and_counts(rec: Recording) -> None:
    record_two_runs(rec)
    status = cache_status(rec.cache)
    text = render_status(status, "table")
    size = text.splitlines()[1].split(None, 1)[1]
    assert text == f"""cache            {rec.cache.path}
size             {size}
cluster          https://k:6443
kube-system uid  ks-uid
context          prod
scope            all namespaces
events           3 (2027-01-15T08:00:02Z .. 2027-01-15T09:00:00Z)
pods             2 seen, 1 live, 0 running, 1 finished, 1 with a lifecycle owner

Runs:
RUN    STARTED               SYNCED                STOPPED               DURATION    STATE
-----  --------------------  --------------------  --------------------  ----------  -------
1      2027-01-15T08:00:00Z  2027-01-15T08:00:02Z  2027-01-15T08:01:00Z  1m00s       crashed
2      2027-01-15T09:00:00Z  2027-01-15T09:00:01Z  2027-01-15T09:02:00Z  2m00s       clean

Gaps (not observed live; reconstructed by the next run's relist):
FROM                  TO                    DURATION
--------------------  --------------------  ----------
2027-01-15T08:01:00Z  2027-01-15T09:00:00Z  59m00s

Kinds:
KIND                LIVE    APPLIED    METADATA    DATA    DELETED    DELETED WHILE OFFLINE
------------------  ------  ---------  ----------  ------  ---------  -----------------------
apps/v1.Deployment  1       2          0           0       1          1

Reconciliation of the latest run (-o json names the objects):
Offline 2027-01-15T08:01:00Z → 09:00:00 (59m00s), reconciled by run 2:
  apps/v1.Deployment: 1 deleted while offline
  pods: 1 finished while offline"""


def test_json_and_yaml_carry_the_same_data(rec: Recording) -> None:
    record_two_runs(rec)
    status = cache_status(rec.cache)
    data = json.loads(render_status(status, "json"))
    assert data == status_to_dict(status) == yaml.safe_load(render_status(status, "yaml"))
    assert data["runs"][1] == {"run": 2, "started": "2027-01-15T09:00:00Z", "synced": "2027-01-15T09:00:01Z",
                               "stopped": "2027-01-15T09:02:00Z", "duration": "2m00s", "state": "clean", "pid": 12}
    assert data["gaps"] == [{"from": "2027-01-15T08:01:00Z", "to": "2027-01-15T09:00:00Z", "duration": "59m00s"}]
    assert data["pods"] == {"seen": 2, "live": 1, "withLifecycleOwner": 1, "running": 0, "finished": 1}
    assert data["reconciliation"]["offline"] == {"from": "2027-01-15T08:01:00Z", "to": "2027-01-15T09:00:00Z", "duration": "59m00s"}
    assert data["reconciliation"]["kinds"][0]["deletedWhileOffline"] == {
        "count": 1, "more": 0,
        "objects": [{"namespace": "ns", "name": "b", "lastSeen": "2027-01-15T08:01:00Z", "foundGone": "2027-01-15T09:00:00Z"}]}
    assert data["reconciliation"]["podsFinishedWhileOffline"]["pods"] == [
        {"namespace": "ns", "name": "a-1", "owner": "apps/v1.Deployment ns/a", "started": "2027-01-15T08:00:00Z",
         "ended": "2027-01-15T09:00:00Z", "endInferred": True}]


def test_a_run_holding_the_lock_is_running(rec: Recording) -> None:
    rec.begin_run(started=T0, pid=11, config_yaml="")
    with WriterLock(rec.cache.path):
        assert cache_status(rec.cache).runs[0].state == "running"
    assert cache_status(rec.cache).runs[0].state == "crashed"


@pytest.mark.parametrize(("age", "state", "cell"), [
    pytest.param(1.4, "running", "running (heartbeat 1s ago)", id="committing"),
    pytest.param(300.0, "unresponsive", "not responding since 2027-01-15T08:01:00Z (no heartbeat for 5m00s; pid 11 still holds the cache)",
                 id="stuck"),
])
def test_a_running_recorder_shows_its_heartbeat_and_its_age(rec: Recording, age: float, state: str, cell: str) -> None:
    """A process that holds the cache but has not committed for ``STALE_AFTER`` seconds records nothing: not running."""
    run = rec.begin_run(started=T0, pid=11, config_yaml="")
    with rec.batch():
        rec.heartbeat(run, T0 + 60)
    with WriterLock(rec.cache.path):
        status = cache_status(rec.cache)
        data = status_to_dict(status, now=T0 + 60 + age)
        text = render_status(status, "table", now=T0 + 60 + age)
    assert data["runs"] == [{"run": 1, "started": "2027-01-15T08:00:00Z", "synced": None, "stopped": None, "duration": "1m00s",
                             "state": state, "pid": 11, "heartbeat": "2027-01-15T08:01:00Z", "heartbeatAgeSeconds": age}]
    assert f"1      2027-01-15T08:00:00Z  -         -          1m00s       {cell}\n" in text


def test_an_empty_cache(rec: Recording) -> None:
    text = render_status(cache_status(rec.cache), "table")
    assert "cluster          - (nothing recorded yet)" in text
    assert text.endswith("Runs: none\n\nKinds: none recorded")


def test_outages_within_a_run_are_merged_per_cause_and_the_run_is_interrupted(rec: Recording) -> None:
    rec.check_identity(Identity(server="https://k:6443", cluster_uid="ks-uid", context="prod", namespace=""))
    run = rec.begin_run(started=T0, pid=11, config_yaml="")
    with rec.batch():
        rec.mark_synced(run, T0 + 2)
        gap = rec.open_gap(run, DEPLOY, since=T0 + 391, cause="API unreachable", detail="connection refused")
        rec.close_gap(gap, until=T0 + 409)
        gap = rec.open_gap(run, GVK("", "v1", "Pod"), since=T0 + 390.5, cause="API unreachable", detail="connection refused")
        rec.close_gap(gap, until=T0 + 411.2)
        rec.open_gap(run, DEPLOY, since=T0 + 500, cause="watch expired", detail="410")  # still open when the run stopped
    rec.stop_run(run, T0 + 520, clean=True)
    status = cache_status(rec.cache)
    assert status.runs[0].state == "interrupted"
    text = render_status(status, "table")
    assert """Outages during runs (kinds not watched; changes then were caught up afterwards, not seen live, unless the run ended first):
RUN    OUTAGE                                                                             DURATION    KINDS
-----  ---------------------------------------------------------------------------------  ----------  --------------------------
1      API unreachable 2027-01-15T08:06:30Z–08:06:51Z                                     21s         apps/v1.Deployment, v1.Pod
1      watch expired 2027-01-15T08:08:20Z–08:08:40Z (the run ended first: not caught up)  20s         apps/v1.Deployment""" in text
    assert status_to_dict(status)["outages"][0] == {
        "run": 1, "cause": "API unreachable", "from": "2027-01-15T08:06:30Z", "to": "2027-01-15T08:06:51Z", "duration": "21s",
        "kinds": ["apps/v1.Deployment", "v1.Pod"]}


def test_each_kind_carries_its_watch_position(rec: Recording) -> None:
    record_two_runs(rec)
    with rec.batch():
        rec.set_watch_state(DEPLOY, "4711", T0 + 3700)
        rec.set_watch_state(GVK("batch", "v1", "Job"), "4712", T0 + 3700)  # no objects: not a row of the counts
    for namespace in (None, "ns"):  # the position is the recording's, whatever namespace is counted
        kinds = cache_status(rec.cache, namespace=namespace).kinds
        assert [(k.gvk, k.watch_resource_version, k.watch_updated) for k in kinds] == [("apps/v1.Deployment", "4711", T0 + 3700)]
    (kind,) = status_to_dict(cache_status(rec.cache))["kinds"]  # what -o json and -o yaml print
    assert (kind["watchResourceVersion"], kind["watchUpdated"]) == ("4711", format_time(T0 + 3700))


def test_a_kind_never_watched_has_no_position(rec: Recording) -> None:
    record_two_runs(rec)
    assert [(k.watch_resource_version, k.watch_updated) for k in cache_status(rec.cache).kinds] == [(None, None)]


def test_the_retention_of_the_last_run_running_or_not(rec: Recording) -> None:
    """``start --retain``: shown while its run records, and once it stopped; a run without it shows none."""
    run = rec.begin_run(started=T0, pid=11, config_yaml="", retain=30 * 86400)
    with WriterLock(rec.cache.path):
        status = cache_status(rec.cache)
        assert "\nretention        30d (run 1 prunes what is older while it records)\n" in render_status(status, "table")
    rec.stop_run(run, T0 + 60, clean=True)
    status = cache_status(rec.cache)
    assert status_to_dict(status)["retention"] == {"run": 1, "retain": "30d", "retainSeconds": 2592000.0}
    assert "\nretention        30d (the last run, 1, pruned what was older while it recorded)\n" in render_status(status, "table")
    rec.begin_run(started=T0 + 120, pid=12, config_yaml="")
    assert status_to_dict(cache_status(rec.cache))["retention"] is None and "\nretention " not in render_status(cache_status(rec.cache), "table")


def _third_run(rec: Recording) -> None:
    """A run 3 after another gap, which found Deployment a gone: the latest report is now run 3's."""
    run3 = rec.begin_run(started=T0 + 7200, pid=13, config_yaml="")
    with rec.batch():
        rec.append_event(run3, EventRow(ts=int(T0) + 7200, recv=T0 + 7200, key=ObjKey(DEPLOY, "ns", "a"), uid="a", op=OP_DELETED,
                                        inferred=True))
        rec.delete_object(ObjKey(DEPLOY, "ns", "a"))
        rec.mark_synced(run3, T0 + 7201)
    rec.stop_run(run3, T0 + 7260, clean=True)


def test_any_run_s_report_and_blind_time_can_be_read_again(rec: Recording) -> None:
    from click.testing import CliRunner

    from kubectl_sktrace.cli import cli

    record_two_runs(rec)
    _third_run(rec)
    path = str(rec.cache.path)
    shown = CliRunner().invoke(cli, ["status", "--cache", path, "--run", "2"])
    assert (shown.exit_code, shown.stderr) == (0, "")
    assert shown.stdout == """Run 2 of 3: 2027-01-15T09:00:00Z – 2027-01-15T09:02:00Z (2m00s), clean; synced 2027-01-15T09:00:01Z
Offline before it: 2027-01-15T08:01:00Z – 2027-01-15T09:00:00Z (59m00s)
Blind time during it: none (every kind watched throughout)

Reconciliation of run 2 (-o json names the objects):
Offline 2027-01-15T08:01:00Z → 09:00:00 (59m00s), reconciled by run 2:
  apps/v1.Deployment: 1 deleted while offline
  pods: 1 finished while offline
"""
    data = json.loads(CliRunner().invoke(cli, ["status", "--cache", path, "--run", "2", "-o", "json"]).stdout)
    assert data["run"]["run"] == 2 and data["offlineBefore"] == {"from": "2027-01-15T08:01:00Z", "to": "2027-01-15T09:00:00Z",
                                                                "duration": "59m00s"}
    assert data["reconciliation"]["kinds"][0]["deletedWhileOffline"]["objects"][0]["name"] == "b"
    latest = json.loads(CliRunner().invoke(cli, ["status", "--cache", path, "--run", "3", "-o", "json"]).stdout)
    assert latest["reconciliation"] == json.loads(render_status(cache_status(rec.cache), "json"))["reconciliation"]
    first = CliRunner().invoke(cli, ["status", "--cache", path, "--run", "1"])
    assert first.exit_code == 0 and "Offline before it: nothing" in first.stdout
    missing = CliRunner().invoke(cli, ["status", "--cache", path, "--run", "4"])
    assert (missing.exit_code, missing.stdout) == (1, "")
    assert missing.stderr == f"Error: cache {path} has no run 4; its runs are 1–3 (kubectl sktrace status --runs all lists them)\n"
    both = CliRunner().invoke(cli, ["status", "--cache", path, "--run", "2", "--timeline"])
    assert both.exit_code == 2 and both.stderr.endswith("Error: --timeline draws a window (-s, -t) and --run N reports one run; pass one of them\n")
