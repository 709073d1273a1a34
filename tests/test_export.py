import io
import json

import msgpack
import pytest
import yaml

import tempfile
from pathlib import Path

from conftest import assert_valid_trace, key_of, obj
from kubectl_sktrace.errors import CacheError, UsageError
from kubectl_sktrace.export import ExportFilters, export_trace, resolve_window, write_atomically
from kubectl_sktrace.hashing import spec_hash
from kubectl_sktrace.selectors import parse_selector

DEP = "apps/v1.Deployment"


def decode(data: bytes):
    """SPEC §8.1: how any reader loads a v2 trace."""
    return msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=False)


def run_export(builder, start_ts, end_ts, *, filters=ExportFilters(), keep_status=False, fmt="sktrace"):
    out = io.BytesIO()
    report = export_trace(builder.cache, start_ts=start_ts, end_ts=end_ts, filters=filters, keep_status=keep_status, fmt=fmt, stream=out)
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
    report, data = run_export(simkube_cache, 1, 10, filters=ExportFilters(include_namespaces=frozenset({"other"})))
    trace = decode(data)
    assert trace["events"] == ({"ts": 1, "applied_objs": (), "deleted_objs": ()},)
    assert trace["index"] == {}
    assert trace["pod_lifecycles"] == {}
    assert report.notes == (
        "no events in the window 1970-01-01T00:00:01Z to 1970-01-01T00:00:10Z: the trace holds only the state at its start (0 object(s))",
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
        "left out 1 cluster-scoped object(s): SimKube's driver needs namespaced objects (pass --include-cluster-scoped to keep them)",
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
    """Running and Finished pods before, inside, across and after the window [10, 20)."""
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
                {"Finished": (10, 10)}, {"Finished": (10, 15)}, {"Finished": (12, 15)}, {"Finished": (15, 25)},
                {"Finished": (10, 25)}, {"Running": 10}, {"Running": 18},
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
        "no recorder ran from 1970-01-01T00:01:40Z to 1970-01-01T00:02:40Z (1m00s): changes made then appear at the next start's "
        "time, or not at all if the window ends first",
        "2 event(s) in the window were reconstructed after a gap or an outage (1 deletion(s), 1 creation(s) or change(s)): "
        "their times are when the recorder noticed, not when they happened",
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


def test_write_atomically_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.sktrace"
    target.write_bytes(b"old")

    def fail(stream):
        stream.write(b"partial")
        raise CacheError("boom")

    with pytest.raises(CacheError):
        write_atomically(str(target), fail)
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.sktrace"]


def test_write_atomically_refuses_a_missing_directory(tmp_path):
    with pytest.raises(UsageError) as info:
        write_atomically(str(tmp_path / "nope" / "out.sktrace"), lambda s: None)
    assert str(info.value) == (
        f"cannot write {tmp_path}/nope/out.sktrace: the directory {tmp_path}/nope does not exist; create it or pass another -O/--output-file"
    )


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
