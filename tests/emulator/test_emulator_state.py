"""The emulator's store: versions, identity, pagination snapshots, selectors, deletion rules, history."""

from __future__ import annotations

import json

import pytest

from sktrace_emulator.patches import merge_patch
from sktrace_emulator.records import ApiError
from sktrace_emulator.selectors import (
    Filter,
    parse_field_selector,
    parse_label_selector,
)
from sktrace_emulator.state import Store


def pod(name: str, namespace: str = "default", **labels: str) -> dict:
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}


@pytest.fixture
def store() -> Store:
    return Store(seed=3, clock=lambda: 1_700_000_000.0)


def test_create_assigns_identity_version_and_server_defaults(store: Store) -> None:
    pods = store.type_of("v1", "Pod")
    first = store.create(pods, pod("a", "x")).obj()
    second = store.create(pods, pod("b", "x")).obj()
    assert first["apiVersion"] == "v1" and first["kind"] == "Pod"
    assert first["metadata"]["creationTimestamp"] == "2023-11-14T22:13:20Z"
    assert int(second["metadata"]["resourceVersion"]) == int(first["metadata"]["resourceVersion"]) + 1
    assert first["metadata"]["uid"] != second["metadata"]["uid"] and len(first["metadata"]["uid"]) == 36
    volume = first["spec"]["volumes"][0]["name"]
    assert volume.startswith("kube-api-access-") and first["spec"]["containers"][0]["volumeMounts"][0]["name"] == volume
    assert first["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert store.get(store.type_of("v1", "Namespace"), "", "x") is not None  # created on first use


def test_generate_name_duplicate_and_stale_update(store: Store) -> None:
    pods = store.type_of("v1", "Pod")
    made = store.create(pods, {"metadata": {"generateName": "web-"}, "spec": {"containers": []}})
    assert made.name.startswith("web-") and len(made.name) == 9
    with pytest.raises(ApiError) as exc:
        store.create(pods, pod(made.name))
    assert (exc.value.code, exc.value.message) == (409, f'pods "{made.name}" already exists')
    stale = made.obj()
    store.patch(pods, "default", made.name, {"metadata": {"labels": {"x": "1"}}})
    with pytest.raises(ApiError) as exc:
        store.update(pods, stale)
    assert exc.value.code == 409 and exc.value.reason == "Conflict"


def test_a_generated_name_that_clashes_is_drawn_again_as_the_api_server_does(store: Store) -> None:
    """Five random characters clash now and then (a few per cent over two thousand pods of one owner): the real API
    server draws again (RetryGenerateName), so a client never sees a 409 for a name it did not choose."""
    import random

    from sktrace_emulator.records import random_suffix

    pods = store.type_of("v1", "Pod")
    saved = store.rng.getstate()
    replay = random.Random()
    replay.setstate(saved)
    taken = "web-" + random_suffix(replay)  # the name the next draw makes
    store.create(pods, pod(taken))
    store.rng.setstate(saved)  # so the generated name's first draw is that name
    made = store.create(pods, {"metadata": {"generateName": "web-"}, "spec": {"containers": []}})
    assert made.name.startswith("web-") and made.name != taken


def test_list_items_lack_kind_and_pages_come_from_one_snapshot(store: Store) -> None:
    pods = store.type_of("v1", "Pod")
    for i in range(5):
        store.create(pods, pod(f"p{i}"))
    rv, page, token, remaining = store.list_page(pods, Filter(), limit=2, token="")
    assert [s.name for s in page] == ["p0", "p1"] and remaining == 3
    assert "kind" not in json.loads(page[0].item_raw()) and "apiVersion" not in json.loads(page[0].item_raw())
    store.delete(pods, "default", "p3")
    store.create(pods, pod("p2a"))
    rv2, page2, token2, _ = store.list_page(pods, Filter(), limit=2, token=token)
    rv3, page3, token3, _ = store.list_page(pods, Filter(), limit=2, token=token2)
    assert rv == rv2 == rv3
    assert [s.name for s in page2 + page3] == ["p2", "p3", "p4"] and token3 == ""


def test_expired_continue_token_is_410() -> None:
    store = Store(continue_ttl=0.0)
    pods = store.type_of("v1", "Pod")
    for i in range(3):
        store.create(pods, pod(f"p{i}"))
    _, _, token, _ = store.list_page(pods, Filter(), limit=1, token="")
    with pytest.raises(ApiError) as exc:
        store.list_page(pods, Filter(), limit=1, token=token)
    assert exc.value.code == 410 and exc.value.reason == "Expired"


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["a", "b"]),
        ("app==web,tier!=db", ["a"]),
        ("tier in (db, cache)", ["b", "c"]),
        ("tier notin (db)", ["a", "c", "d"]),
        ("tier", ["a", "b", "c"]),
        ("!tier", ["d"]),
    ],
    ids=["equals", "double-equals-and-not", "in", "notin", "exists", "not-exists"],
)
def test_label_selectors(store: Store, selector: str, expected: list[str]) -> None:
    pods = store.type_of("v1", "Pod")
    store.create(pods, pod("a", app="web", tier="front"))
    store.create(pods, pod("b", app="web", tier="db"))
    store.create(pods, pod("c", app="api", tier="cache"))
    store.create(pods, pod("d", app="api"))
    _, items = store.current(pods, Filter(labels=parse_label_selector(selector)))
    assert [s.name for s in items] == expected


def test_field_selectors_and_unknown_field(store: Store) -> None:
    pods = store.type_of("v1", "Pod")
    store.create(pods, pod("a", "x"))
    bound = pod("b", "y")
    bound["spec"]["nodeName"] = "node-1"
    store.create(pods, bound)
    _, items = store.current(pods, Filter(fields=parse_field_selector("spec.nodeName=node-1", pods)))
    assert [s.name for s in items] == ["b"]
    _, items = store.current(pods, Filter(fields=parse_field_selector("metadata.namespace!=y,metadata.name=a", pods)))
    assert [s.name for s in items] == ["a"]
    with pytest.raises(ApiError) as exc:
        parse_field_selector("spec.nodeName=n", store.type_of("apps/v1", "Deployment"))
    assert exc.value.code == 400 and '"spec.nodeName" is not a known field selector' in exc.value.message


def test_graceful_pod_deletion_is_modified_then_deleted(store: Store) -> None:
    pods = store.type_of("v1", "Pod")
    bound = pod("b")
    bound["spec"]["nodeName"] = "node-1"
    created = store.create(pods, bound)
    position = store.watch_start(pods, created.rv)
    store.delete(pods, "default", "b")
    events = store.histories[pods].since(position)
    assert [e.type for e in events] == ["MODIFIED", "MODIFIED", "DELETED"]  # graceful, then the kubelet's final delete
    assert [e.stored.obj()["metadata"]["deletionGracePeriodSeconds"] for e in events] == [30, 0, 0]
    unbound = store.create(pods, pod("u"))
    position = store.watch_start(pods, unbound.rv)
    store.delete(pods, "default", "u")
    assert [e.type for e in store.histories[pods].since(position)] == ["MODIFIED", "DELETED"]  # grace 0 at once


def test_finalizers_hold_deletion_until_removed(store: Store) -> None:
    cms = store.type_of("v1", "ConfigMap")
    store.create(cms, {"metadata": {"name": "c", "finalizers": ["example.com/keep"]}, "data": {}})
    marked = store.delete(cms, "default", "c")
    assert marked.deleting and store.get(cms, "default", "c") is not None
    store.patch(cms, "default", "c", {"metadata": {"finalizers": None}})
    assert store.get(cms, "default", "c") is None


def test_deleting_an_owner_collects_dependents_unless_orphaned(store: Store) -> None:
    rs_type, pods = store.type_of("apps/v1", "ReplicaSet"), store.type_of("v1", "Pod")
    rs = store.create(rs_type, {"metadata": {"name": "rs"}, "spec": {}})
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": rs.uid, "controller": True}
    for name in ("p1", "p2"):
        store.create(pods, {**pod(name), "metadata": {**pod(name)["metadata"], "ownerReferences": [ref]}})
    store.create(pods, pod("other"))
    store.delete(rs_type, "default", "rs")
    assert [s.name for s in store.current(pods, Filter())[1]] == ["other"]
    rs2 = store.create(rs_type, {"metadata": {"name": "rs2"}, "spec": {}})
    store.create(pods, {**pod("kept"), "metadata": {**pod("kept")["metadata"], "ownerReferences": [{**ref, "uid": rs2.uid}]}})
    store.delete(rs_type, "default", "rs2", propagate=False)
    assert store.get(pods, "default", "kept") is not None


def test_noop_update_takes_no_version_and_generation_follows_spec(store: Store) -> None:
    deploys = store.type_of("apps/v1", "Deployment")
    made = store.create(deploys, {"metadata": {"name": "d"}, "spec": {"replicas": 1}})
    assert store.update(deploys, made.obj()).rv == made.rv
    changed = store.patch(deploys, "default", "d", {"spec": {"replicas": 3}}).obj()
    assert changed["metadata"]["generation"] == 2
    relabeled = store.patch(deploys, "default", "d", {"metadata": {"labels": {"a": "b"}}}).obj()
    assert relabeled["metadata"]["generation"] == 2


def test_history_trimming_and_compaction_expire_old_versions() -> None:
    store = Store(history_limit=4)
    pods = store.type_of("v1", "Pod")
    first = store.create(pods, pod("p0"))
    for i in range(1, 8):
        store.create(pods, pod(f"p{i}"))
    with pytest.raises(ApiError) as exc:
        store.watch_start(pods, first.rv)
    assert exc.value.code == 410 and exc.value.message.startswith(f"too old resource version: {first.rv} (")
    latest = store.rv
    assert store.histories[pods].since(store.watch_start(pods, latest - 1))[0].stored.name == "p7"
    store.compact()
    with pytest.raises(ApiError):
        store.watch_start(pods, latest - 1)
    assert store.histories[pods].since(store.watch_start(pods, store.rv)) == []


def test_vanish_leaves_no_trace_in_history(store: Store) -> None:
    pods = store.type_of("v1", "Pod")
    made = store.create(pods, pod("v"))
    rv = store.rv
    store.vanish(pods, "default", "v")
    assert store.get(pods, "default", "v") is None and store.rv == rv
    assert store.histories[pods].since(store.watch_start(pods, made.rv)) == []


def test_merge_patch_rfc7386() -> None:
    assert merge_patch({"a": 1, "b": {"c": 2, "d": 3}}, {"b": {"c": None, "e": 4}, "f": [1]}) == {"a": 1, "b": {"d": 3, "e": 4}, "f": [1]}
