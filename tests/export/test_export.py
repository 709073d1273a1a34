import io
import json
import tempfile
from pathlib import Path

import msgpack
import pytest
import yaml
from conftest import DEFAULT_CONFIG_YAML, assert_valid_trace, key_of, obj

from kubectl_sktrace.errors import CacheError, UsageError
from kubectl_sktrace.export.options import ExportFilters, resolve_window
from kubectl_sktrace.trace.selection.selectors import parse_selector
from kubectl_sktrace.export.window import export_trace
from kubectl_sktrace.trace.hashing import spec_hash

DEP = "apps/v1.Deployment"


def decode(data: bytes):
    """docs/spec.md §8.1: how any reader loads a v2 trace."""
    return msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=False)


def run_export(builder, start_ts, end_ts, *, filters=ExportFilters(), keep_status=False, fmt="sktrace", allow_empty=False):
    out = io.BytesIO()
    report = export_trace(builder.cache, start_ts=start_ts, end_ts=end_ts, filters=filters, keep_status=keep_status, fmt=fmt, stream=out,
                          allow_empty=allow_empty)
    if fmt == "sktrace":
        with tempfile.TemporaryDirectory() as scratch:
            assert_valid_trace(out.getvalue(), Path(scratch))
    return report, out.getvalue()


def names(objs):
    return [(o["kind"], o["metadata"]["name"]) for o in objs]


def dep(name, replicas=1, **kw):
    return obj("Deployment", name, spec={"replicas": replicas}, **kw)


@pytest.fixture
def simkube_cache(cache_builder):
    """SimKube's own export test: objects at 0, 1, 5, 10, 15; deletes at 4 and 25."""
    b = cache_builder
    b.run(started=0, stopped=30)
    b.apply(0, dep("d0"))
    b.apply(1, dep("d1"))
    b.delete(4, dep("d1"))
    b.apply(5, dep("d5"))
    b.apply(10, dep("d10"))
    b.apply(15, dep("d15"))
    b.delete(25, dep("d0"))
    return b


def test_simkube_window(simkube_cache):
    report, data = run_export(simkube_cache, 1, 10)
    trace = decode(data)
    assert list(trace) == ["version", "config", "events", "index", "pod_lifecycles"]
    assert trace["version"] == 2
    assert trace["config"] == {"trackedObjects": {
        "apps/v1.Deployment": {"podSpecTemplatePaths": ("/spec/template",), "trackLifecycle": True},
        "apps/v1.ReplicaSet": {"podSpecTemplatePaths": ("/spec",)},
        "batch/v1.Job": {"podSpecTemplatePaths": ("/spec/template",), "trackLifecycle": True},
    }}
    events = trace["events"]
    assert [e["ts"] for e in events] == [1, 1, 4, 5]
    assert names(events[0]["applied_objs"]) == [("Deployment", "d0")]
    assert names(events[1]["applied_objs"]) == [("Deployment", "d1")]
    assert events[2]["deleted_objs"] == ({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d1", "namespace": "app"}},)
    assert names(events[3]["applied_objs"]) == [("Deployment", "d5")]
    assert set(trace["index"][DEP]) == {"app/d0", "app/d1", "app/d5"}
    assert trace["index"][DEP]["app/d1"] == spec_hash({"replicas": 1})
    assert (report.events, report.applied, report.deleted, report.index_objects) == (4, 2, 1, 3)
    assert report.warnings == ()


def test_window_start_after_a_delete_leaves_it_out_of_the_state_but_in_the_index(simkube_cache):
    trace = decode(run_export(simkube_cache, 6, 30)[1])
    assert names(trace["events"][0]["applied_objs"]) == [("Deployment", "d0"), ("Deployment", "d5")]
    assert [e["ts"] for e in trace["events"]] == [6, 10, 15, 25]
    assert set(trace["index"][DEP]) == {"app/d0", "app/d1", "app/d5", "app/d10", "app/d15"}


def test_everything_filtered_gives_one_empty_event_and_an_empty_index(simkube_cache):
    report, data = run_export(simkube_cache, 1, 10, filters=ExportFilters(include_namespaces=frozenset({"other"})), allow_empty=True)
    trace = decode(data)
    assert trace["events"] == ({"ts": 1, "applied_objs": (), "deleted_objs": ()},)
    assert trace["index"] == {}
    assert trace["pod_lifecycles"] == {}
    assert report.notes == (
        "no events in the window 1970-01-01T00:00:01Z to 1970-01-01T00:00:10Z: the trace holds only the state at its start (0 objects)",
    )


def test_index_holds_the_hash_of_each_objects_last_version_before_the_end(cache_builder):
    b = cache_builder
    b.run(started=0, stopped=100)
    b.apply(1, dep("web", 1))
    b.apply(5, dep("web", 3))
    b.apply(20, dep("web", 7))
    trace = decode(run_export(b, 0, 10)[1])
    last = trace["events"][-1]["applied_objs"][-1]
    assert last["spec"] == {"replicas": 3}
    assert trace["index"][DEP]["app/web"] == spec_hash(last["spec"]) == spec_hash({"replicas": 3})


def test_same_namespace_and_name_in_two_kinds_do_not_collide(cache_builder):
    b = cache_builder
    b.run(started=0, stopped=100)
    b.apply(1, dep("web"))
    b.apply(2, obj("ConfigMap", "web", spec={"x": 1}))
    b.apply(12, obj("ConfigMap", "other", spec={"x": 2}))
    trace = decode(run_export(b, 10, 20)[1])
    assert names(trace["events"][0]["applied_objs"]) == [("ConfigMap", "web"), ("Deployment", "web")]
    assert trace["index"] == {
        "apps/v1.Deployment": {"app/web": spec_hash({"replicas": 1})},
        "v1.ConfigMap": {"app/other": spec_hash({"x": 2}), "app/web": spec_hash({"x": 1})},
    }


def test_replicaset_owned_by_an_exported_deployment_is_dropped(cache_builder):
    b = cache_builder
    b.run(started=0, stopped=100)
    web = dep("web")
    b.apply(1, web)
    b.apply(2, obj("ReplicaSet", "web-1", spec={"replicas": 1}, owners=[("Deployment", "web")]), owner_chain=[key_of(web)])
    b.apply(3, obj("ReplicaSet", "orphan-1", spec={"replicas": 1}, owners=[("Deployment", "gone")]),
            owner_chain=[key_of(dep("gone"))])
    trace = decode(run_export(b, 0, 10)[1])
    exported = [n for e in trace["events"] for n in names(e["applied_objs"])]
    assert exported == [("Deployment", "web"), ("ReplicaSet", "orphan-1")]
    assert set(trace["index"]["apps/v1.ReplicaSet"]) == {"app/orphan-1"}


def test_replicaset_of_a_filtered_out_deployment_is_kept(cache_builder):
    b = cache_builder
    b.run(started=0, stopped=100)
    web = dep("web", labels={"team": "x"})
    b.apply(1, web)
    b.apply(2, obj("ReplicaSet", "web-1", spec={"replicas": 1}, owners=[("Deployment", "web")]), owner_chain=[key_of(web)])
    filters = ExportFilters(exclude_labels=(parse_selector("team=x"),))
    trace = decode(run_export(b, 0, 10, filters=filters)[1])
    assert [n for e in trace["events"] for n in names(e["applied_objs"])] == [("ReplicaSet", "web-1")]


def test_filters_namespaces_labels_daemonsets_and_cluster_scoped(cache_builder):
    b = cache_builder
    b.run(started=0, stopped=100)
    b.apply(1, dep("keep"))
    b.apply(1, dep("sys", namespace="kube-system"))
    b.apply(1, dep("canary", labels={"track": "canary"}))
    b.apply(1, dep("db", labels={"tier": "db"}))
    b.apply(1, obj("Pod", "ds-pod", spec={"containers": []}, owners=[("DaemonSet", "fluentd")]))
    b.apply(1, obj("Namespace", "app", namespace=""))
    b.apply(2, dep("canary", 2, labels={"track": "canary"}))
    b.delete(3, dep("canary"))
    filters = ExportFilters(exclude_labels=(parse_selector("track in (canary)"), parse_selector("tier=db")))
    report, data = run_export(b, 0, 10, filters=filters)
    trace = decode(data)
    assert [(e["ts"], names(e["applied_objs"]), names(e["deleted_objs"])) for e in trace["events"]] == [
        (0, [], []), (1, [("Deployment", "keep")], []),
    ]
    assert trace["index"] == {DEP: {"app/keep": spec_hash({"replicas": 1})}}
    assert report.notes == (
        "left out 1 cluster-scoped object: SimKube's driver needs namespaced objects (pass --include-cluster-scoped to keep them)",
    )
    with_cluster = decode(run_export(b, 0, 10, filters=ExportFilters(include_cluster_scoped=True, exclude_labels=filters.exclude_labels))[1])
    assert with_cluster["index"]["v1.Namespace"] == {"app": spec_hash(None)}


def test_include_namespaces_replaces_the_excluded_list(cache_builder):
    b = cache_builder
    b.run(started=0, stopped=100)
    b.apply(1, dep("a", namespace="default"))
    b.apply(1, dep("b", namespace="team"))
    b.apply(1, dep("c", namespace="kube-system"))
    trace = decode(run_export(b, 0, 10, filters=ExportFilters(include_namespaces=frozenset({"default", "team"})))[1])
    assert set(trace["index"][DEP]) == {"default/a", "team/b"}
    trace = decode(run_export(b, 0, 10)[1])
    assert set(trace["index"][DEP]) == {"team/b"}


def test_status_dropped_unless_kept(cache_builder):
    b = cache_builder
    b.run(started=0, stopped=100)
    b.apply(1, dep("web", status={"readyReplicas": 1}))
    assert "status" not in decode(run_export(b, 0, 10)[1])["events"][1]["applied_objs"][0]
    kept = decode(run_export(b, 0, 10, keep_status=True)[1])["events"][1]["applied_objs"][0]
    assert kept["status"] == {"readyReplicas": 1}


def test_rows_of_one_second_are_one_event_and_events_are_time_ordered(cache_builder):
    b = cache_builder
    b.run(started=0, stopped=100)
    b.apply(3, dep("a"))
    b.apply(3, dep("b"))
    b.delete(3, dep("c"))
    b.apply(2, dep("c"), inferred=True)  # stamped with an earlier creation time after later rows
    trace = decode(run_export(b, 0, 10)[1])
    assert [(e["ts"], names(e["applied_objs"]), names(e["deleted_objs"])) for e in trace["events"]] == [
        (0, [], []), (2, [("Deployment", "c")], []), (3, [("Deployment", "a"), ("Deployment", "b")], [("Deployment", "c")]),
    ]


def test_lifecycle_table(cache_builder):
    """Running and Finished pods before, inside, across and after the window [10, 20). A pod that finished
    at or after the window end was still running at the end: Running, as an export made then showed it."""
    b = cache_builder
    b.run(started=0, stopped=100)
    web = dep("web")
    b.apply(1, web)
    b.apply(1, dep("ignored", namespace="kube-system"))
    owner = key_of(web)
    cases = [
        ("finished-before", 2, 8, False),
        ("finished-at-start", 2, 10, True),
        ("finished-across-start", 5, 15, True),
        ("finished-inside", 12, 15, True),
        ("finished-across-end", 15, 25, True),
        ("spanning-window", 5, 25, True),
        ("running-since-before", 5, None, True),
        ("running-inside", 18, None, True),
        ("starts-at-end", 20, None, False),
        ("finished-after", 22, 30, False),
    ]
    for name, start, end, _ in cases:
        b.pod(name, owner=owner, stable_hash=7, start_ts=start, end_ts=end)
    b.pod("other-hash", owner=owner, stable_hash=2**64 - 1, start_ts=11, end_ts=None)
    b.pod("excluded-owner", owner=key_of(dep("ignored", namespace="kube-system")), stable_hash=7, start_ts=11)
    b.pod("no-owner", owner=None, stable_hash=7, start_ts=11)
    b.pod("never-started", owner=owner, stable_hash=7, start_ts=None)
    report, data = run_export(b, 10, 20)
    trace = decode(data)
    assert trace["pod_lifecycles"] == {
        ("apps/v1.Deployment", "app/web"): {
            7: (
                {"Finished": (10, 10)}, {"Finished": (10, 15)}, {"Finished": (12, 15)}, {"Running": 15},
                {"Running": 10}, {"Running": 10}, {"Running": 18},
            ),
            2**64 - 1: ({"Running": 11},),
        }
    }
    assert report.lifecycles == 8


def test_finished_bare_pod_is_not_part_of_the_state(cache_builder):
    b = cache_builder
    b.run(started=0, stopped=100)
    b.apply(1, obj("Pod", "done", spec={"containers": []}))
    b.apply(1, obj("Pod", "running", spec={"containers": []}))
    b.pod("done", owner=None, stable_hash=1, start_ts=1, end_ts=5)
    b.pod("running", owner=None, stable_hash=1, start_ts=1)
    trace = decode(run_export(b, 10, 20)[1])
    assert names(trace["events"][0]["applied_objs"]) == [("Pod", "running")]


def test_warns_about_gaps_and_reconstructed_events(cache_builder):
    b = cache_builder
    b.run(started=0, stopped=100)
    b.apply(1, dep("web"))
    b.run(started=160, stopped=300)
    b.delete(160, dep("web"), inferred=True)
    b.apply(160, dep("new"), inferred=True)
    report, _ = run_export(b, 50, 200)
    assert report.warnings == (
        "coverage: 60.0% of the window (2m30s) observed live; not observed:\n"
        "  1970-01-01T00:01:40Z–00:02:40Z (1m00s, no recorder ran)\n"
        "  2 events reconstructed after a gap (1 deletion, 1 creation or change): "
        "their times are when the recorder caught up, not when they happened",
    )


def test_coverage_is_one_block_with_outages_merged_across_kinds_and_the_kinds_a_run_did_not_record(cache_builder):
    b = cache_builder
    run = b.run(started=0, stopped=400)
    b.apply(1, dep("web"))
    gaps = [("apps/v1.Deployment", 100, 120, "API unreachable", "connection refused"),
            ("v1.Pod", 105, 130, "API unreachable", "connection refused"),
            ("batch/v1.Job", 125, 140, "watch expired", "410"),
            ("apps/v1.Deployment", 300, 302, "watch expired", "410"),
            ("batch/v1.Job", 200, None, "watch failed", "unauthorized (401) ..."),
            ("example.com/v1.Other", 200, None, "watch failed", "not tracked: left out")]
    with b.cache.transaction() as conn:
        conn.executemany("INSERT INTO coverage_gaps (run_id, gvk, since, until, cause, detail) VALUES (?, ?, ?, ?, ?, ?)",
                         [(run, *gap) for gap in gaps])
    report, _ = run_export(b, 0, 400)
    assert report.warnings == (
        "coverage: 89.5% of the window (6m40s) observed live; not observed:\n"
        "  1970-01-01T00:01:40Z–00:02:20Z (40s, API unreachable, watch expired)\n"
        "  and 1 gap shorter than 5s\n"
        "  batch/v1.Job was not recorded by run 1 (watch failed): its changes during that run are not in the trace",
    )
    full, _ = run_export(b, 150, 290)  # no outage, no gap: only the kind that was not recorded
    assert full.warnings == (
        "coverage: 100% of the window (2m20s) observed live\n"
        "  batch/v1.Job was not recorded by run 1 (watch failed): its changes during that run are not in the trace",
    )


def test_a_refusal_is_told_as_an_outage_and_a_kind_not_served_as_no_gap(cache_builder):
    b = cache_builder
    run = b.run(started=0, stopped=400)
    b.apply(1, dep("web"))
    with b.cache.transaction() as conn:
        conn.executemany("INSERT INTO coverage_gaps (run_id, gvk, since, until, cause, detail) VALUES (?, ?, ?, ?, ?, ?)", [
            (run, "batch/v1.Job", 100, 160, "forbidden", "forbidden: cannot list jobs.batch in all namespaces; grant ..."),
            (run, "v1.ConfigMap", 200, 230, "not served", "the server does not serve v1.ConfigMap"),
            (run, "example.com/v1.Other", 200, 230, "not served", "not tracked: left out")])
    report, _ = run_export(b, 0, 400)
    assert report.warnings == (
        "coverage: 85.0% of the window (6m40s) observed live; not observed:\n"
        "  1970-01-01T00:01:40Z–00:02:40Z (1m00s, forbidden)\n"
        "  v1.ConfigMap was not served 1970-01-01T00:03:20Z–00:03:50Z (30s): none of its objects existed then",
    )
    calm, _ = run_export(b, 170, 400)
    assert calm.warnings == (
        "coverage: 100% of the window (3m50s) observed live\n"
        "  v1.ConfigMap was not served 1970-01-01T00:03:20Z–00:03:50Z (30s): none of its objects existed then",
    )


def test_json_and_yaml_are_for_people(simkube_cache):
    simkube_cache.pod("p", owner=key_of(dep("d0")), stable_hash=9, start_ts=2, end_ts=3)
    _, data = run_export(simkube_cache, 1, 10, fmt="json")
    as_json = json.loads(data)
    assert [e["ts"] for e in as_json["events"]] == [1, 1, 4, 5]
    assert as_json["pod_lifecycles"] == {"apps/v1.Deployment app/d0": {"9": [{"Finished": [2, 3]}]}}
    _, data = run_export(simkube_cache, 1, 10, fmt="yaml")
    as_yaml = yaml.safe_load(data)
    assert [e["ts"] for e in as_yaml["events"]] == [1, 1, 4, 5]
    assert as_yaml["pod_lifecycles"] == {"apps/v1.Deployment app/d0": {9: [{"Finished": [2, 3]}]}}
    assert as_yaml["index"] == as_json["index"]


def test_json_and_yaml_state_the_trace_format_version(simkube_cache, monkeypatch):
    from kubectl_sktrace.trace.files.format import FORMAT_VERSION

    for fmt, load in (("json", json.loads), ("yaml", yaml.safe_load)):
        assert load(run_export(simkube_cache, 1, 10, fmt=fmt)[1])["version"] == FORMAT_VERSION
    monkeypatch.setattr("kubectl_sktrace.trace.files.format.FORMAT_VERSION", FORMAT_VERSION + 1)  # one constant says it
    for fmt, load in (("json", json.loads), ("yaml", yaml.safe_load)):
        assert load(run_export(simkube_cache, 1, 10, fmt=fmt)[1])["version"] == FORMAT_VERSION + 1


def test_a_cache_with_no_recording_is_an_error(cache_builder):
    with pytest.raises(CacheError, match=r"holds no recording yet; record first with 'kubectl sktrace start'"):
        run_export(cache_builder, 0, 10)


@pytest.mark.parametrize(
    "start, end, message",
    [
        ("@100", "@50", "the end time '@50' (1970-01-01T00:00:50Z) is before the start time '@100' (1970-01-01T00:01:40Z); swap them or pass a later --end-time"),
        ("@100", "@100", "the window from '@100' to '@100' is empty; pass an --end-time after the --start-time"),
    ],
)
def test_resolve_window_errors(start, end, message):
    with pytest.raises(UsageError) as info:
        resolve_window(start, end, now=1000)
    assert str(info.value) == message


def test_resolve_window_rounds_outwards():
    assert resolve_window("-30m", "now", now=10_000.5) == (8200, 10_001)
    assert resolve_window("@1.5", "@9", now=0) == (1, 9)


def test_a_deletion_and_re_creation_in_one_second_become_two_events_of_that_second(cache_builder):
    """SimKube's driver applies an event's applied objects before its deleted ones: a delete then re-create
    in one event would leave the object deleted, so the re-creation starts a new event at the same ts."""
    b = cache_builder
    b.run(started=0, stopped=30)
    b.apply(2, dep("web", 1), uid="uid-old")
    b.delete(7, dep("web"), uid="uid-old")
    b.apply(7, dep("web", 3), uid="uid-new")
    b.apply(7, dep("api", 1))
    report, data = run_export(b, 0, 10)
    events = decode(data)["events"]
    assert [(e["ts"], names(e["applied_objs"]), names(e["deleted_objs"])) for e in events] == [
        (0, [], []),
        (2, [("Deployment", "web")], []),
        (7, [], [("Deployment", "web")]),
        (7, [("Deployment", "web"), ("Deployment", "api")], []),
    ]
    assert events[3]["applied_objs"][0]["spec"] == {"replicas": 3}
    assert report.events == 4


def test_objects_pods_reference_come_first_within_an_event(cache_builder):
    """A Deployment listed in the same second as the ConfigMap it mounts must not come before it: SimKube's
    validation (E0005) counts only objects applied earlier in the trace."""
    b = cache_builder
    b.run(started=0, stopped=30)
    b.apply(3, dep("web"))
    b.apply(3, obj("ConfigMap", "web-config", api_version="v1"))
    b.apply(3, dep("api"))
    b.apply(3, obj("ServiceAccount", "web", api_version="v1"))
    events = decode(run_export(b, 0, 10)[1])["events"]
    assert names(events[1]["applied_objs"]) == [
        ("ConfigMap", "web-config"), ("ServiceAccount", "web"), ("Deployment", "web"), ("Deployment", "api"),
    ]


# --- a closed window exports the same bytes, whatever is recorded after it ---------------------------------


def test_a_pod_that_finishes_after_the_window_end_stays_running_in_it(cache_builder):
    b = cache_builder
    b.run(started=0, stopped=30, clean=False)  # still recording
    b.apply(1, dep("web"))
    b.pod("p", owner=key_of(dep("web")), stable_hash=7, start_ts=5, first_seen=5.2)
    before = run_export(b, 0, 10)[1]
    b.cache.conn.execute("UPDATE pods SET end_ts = 10, live = 0")  # finished at the window end
    assert run_export(b, 0, 10)[1] == before
    assert decode(run_export(b, 0, 11)[1])["pod_lifecycles"] == {("apps/v1.Deployment", "app/web"): {7: ({"Finished": (5, 10)},)}}
    b.cache.conn.execute("UPDATE pods SET end_ts = 25, end_inferred = 1")  # or found gone by a later restart
    assert run_export(b, 0, 10)[1] == before
    assert decode(before)["pod_lifecycles"] == {("apps/v1.Deployment", "app/web"): {7: ({"Running": 5},)}}


def test_a_pod_first_seen_after_the_window_end_is_left_out(cache_builder):
    """Its container started inside the window, but the recorder learned of it only after the end."""
    b = cache_builder
    b.run(started=0, stopped=30)
    b.apply(1, dep("web"))
    b.pod("slow", owner=key_of(dep("web")), stable_hash=7, start_ts=9, first_seen=10.3)
    assert decode(run_export(b, 0, 10)[1])["pod_lifecycles"] == {}
    assert decode(run_export(b, 0, 11)[1])["pod_lifecycles"] == {("apps/v1.Deployment", "app/web"): {7: ({"Running": 9},)}}


def test_a_window_ending_in_a_gap_is_what_was_recorded_before_the_gap(cache_builder):
    """A restart after the gap stamps what it finds back into the gap (a creation at its creation time) and
    closes what vanished: none of it was known when the window ended, so the trace stays as it was."""
    b = cache_builder
    b.run(started=0, stopped=20.5, clean=False)  # crashed at 20.5
    b.apply(1, dep("web"))
    b.apply(2, dep("api"))
    b.pod("p", owner=key_of(dep("web")), stable_hash=7, start_ts=3, first_seen=3.1)
    window = (0, 25)
    before = run_export(b, *window)
    b.run(started=40, stopped=60)
    b.apply(22, dep("offline"), inferred=True, recv=40.2)  # created at 22, while nothing recorded
    b.apply(23, dep("api", 3), inferred=True, recv=40.2)
    b.delete(40, dep("web"), inferred=True)
    b.cache.conn.execute("UPDATE pods SET end_ts = 21, live = 0")  # finished at 21 (its true end, read at the restart)
    after = run_export(b, *window)
    assert after[1] == before[1]
    assert after[0] == before[0]
    trace = decode(after[1])
    assert set(trace["index"][DEP]) == {"app/web", "app/api"}
    assert trace["pod_lifecycles"] == {("apps/v1.Deployment", "app/web"): {7: ({"Running": 3},)}}
    assert set(decode(run_export(b, 0, 41)[1])["index"][DEP]) == {"app/web", "app/api", "app/offline"}


def test_a_window_ending_while_a_restart_lists_the_cluster(cache_builder):
    """A restart records what vanished offline at its start time, and the true end of pods that finished
    offline, but only once its lists are done: a window ending before that holds what the previous run knew,
    and the run's config only once it is synced."""
    b = cache_builder
    b.run(started=0, stopped=10, config=DEFAULT_CONFIG_YAML)
    b.apply(1, dep("web"))
    b.pod("p", owner=key_of(dep("web")), stable_hash=7, start_ts=3, first_seen=3.1)
    restart = b.run(started=20, stopped=22.5, config=DEFAULT_CONFIG_YAML.replace("  v1.ConfigMap: {}\n", ""), synced=None, clean=False)
    window = (0, 22)
    before = run_export(b, *window)
    b.delete(20, dep("web"), inferred=True, recv=20)  # written at 23, stamped with the restart
    b.cache.conn.execute("UPDATE pods SET end_ts = 15, live = 0")
    b.cache.conn.execute("UPDATE runs SET synced = 24, stopped = 30 WHERE id = ?", (restart,))
    after = run_export(b, *window)
    assert (after[0], after[1]) == (before[0], before[1])
    trace = decode(after[1])
    assert [e["ts"] for e in trace["events"]] == [0, 1]
    assert trace["pod_lifecycles"] == {("apps/v1.Deployment", "app/web"): {7: ({"Running": 3},)}}
    synced = decode(run_export(b, 0, 25)[1])
    assert [e["ts"] for e in synced["events"]] == [0, 1, 20]
    assert synced["pod_lifecycles"] == {("apps/v1.Deployment", "app/web"): {7: ({"Finished": (3, 15)},)}}


def test_a_window_ending_before_any_run_synced_holds_nothing_yet(cache_builder):
    b = cache_builder
    b.run(started=0, stopped=30, synced=None, clean=False)
    b.apply(1, dep("web"))
    report, data = run_export(b, 0, 10, allow_empty=True)
    assert decode(data)["events"] == ({"ts": 0, "applied_objs": (), "deleted_objs": ()},)
    assert report.index_objects == 0


def test_a_window_clamped_to_a_run_that_began_mid_second_keeps_that_seconds_events_as_events(cache_builder):
    # the first run began at 100.6 and applied "web" in second 100: the clamped trace starts at 100, so web is an
    # event of second 100, not moved into a state event at 101
    cache_builder.run(started=100.6, stopped=200)
    cache_builder.apply(100, dep("web"))
    report, data = run_export(cache_builder, 50, 150)
    trace = decode(data)
    assert report.start_ts == 100 and report.notes[0].startswith("the cache starts at 1970-01-01T00:01:40Z")
    assert [(e["ts"], names(e["applied_objs"])) for e in trace["events"]] == [(100, []), (100, [("Deployment", "web")])]


def test_the_second_a_window_is_clamped_to_before_the_first_run_is_not_a_gap(cache_builder):
    b = cache_builder
    b.run(started=100.4, stopped=300)
    b.apply(101, dep("web"))
    report, _ = run_export(b, 50, 300)
    assert report.start_ts == 100 and report.warnings == ()
