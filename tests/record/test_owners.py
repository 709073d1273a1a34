"""Owner references, owner chains and lifecycle attribution (docs/spec.md §4, §7 step 3)."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_sktrace.model import GVK, POD, ObjectHead, ObjKey, OwnerRef
from kubectl_sktrace.record.owners import lifecycle_owner, resolve_chain
from kubectl_sktrace.trace.sanitize import owner_refs, read_head

NS = "shop"
DEPLOY = GVK("apps", "v1", "Deployment")
RS = GVK("apps", "v1", "ReplicaSet")
JOB = GVK("batch", "v1", "Job")
CRON = GVK("batch", "v1", "CronJob")
STS = GVK("apps", "v1", "StatefulSet")
CUSTOM = GVK("example.com", "v1alpha1", "Workflow")


def ref(gvk: GVK, name: str, uid: str | None = None) -> dict[str, Any]:
    return {"apiVersion": gvk.api_version, "kind": gvk.kind, "name": name, "uid": uid if uid is not None else f"uid-{name}"}


def obj(*owners: Any, name: str = "x") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "ownerReferences": list(owners)}}


def k(gvk: GVK, name: str) -> ObjKey:
    return ObjKey(gvk, NS, name)


def head(pod: dict[str, Any]) -> ObjectHead:
    return read_head(pod, POD)


class FakeCluster:
    """Owners by key; a lookup resolves a reference only when the object exists with the referenced uid."""

    def __init__(self, objects: dict[ObjKey, dict[str, Any]]) -> None:
        self.objects = objects
        self.calls: list[tuple[ObjKey, str]] = []

    def lookup(self, owner: OwnerRef, namespace: str) -> tuple[OwnerRef, ...] | None:
        key = ObjKey(owner.gvk, namespace, owner.name)
        self.calls.append((key, owner.uid))
        found = self.objects.get(key)
        if found is None or found["metadata"].get("uid", f"uid-{owner.name}") != owner.uid:
            return None
        return owner_refs(found)


POD_OF_RS = obj(ref(RS, "web-5d8f"), name="web-5d8f-abc")
DEPLOYMENT_CLUSTER = {
    k(RS, "web-5d8f"): obj(ref(DEPLOY, "web"), name="web-5d8f"),
    k(DEPLOY, "web"): obj(name="web"),
}
POD_OF_JOB = obj(ref(JOB, "report-28930"), name="report-28930-xyz")
CRON_CLUSTER = {
    k(JOB, "report-28930"): obj(ref(CRON, "report"), name="report-28930"),
    k(CRON, "report"): obj(name="report"),
}
# A -> (B -> D), C ; B and C both owned by D (a diamond), D owned by E.
MULTI = obj(ref(CUSTOM, "a"), ref(JOB, "c"), name="p")
MULTI_CLUSTER = {
    k(CUSTOM, "a"): obj(ref(RS, "b"), name="a"),
    k(RS, "b"): obj(ref(DEPLOY, "d"), name="b"),
    k(JOB, "c"): obj(ref(DEPLOY, "d"), name="c"),
    k(DEPLOY, "d"): obj(ref(STS, "e"), name="d"),
    k(STS, "e"): obj(name="e"),
}
CYCLE_CLUSTER = {
    k(RS, "a"): obj(ref(DEPLOY, "b"), name="a"),
    k(DEPLOY, "b"): obj(ref(RS, "a"), name="b"),
}
SELF_CYCLE_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": NS, "ownerReferences": [ref(RS, "a")]}}
SELF_CYCLE_CLUSTER = {k(RS, "a"): obj({"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "uid-p"}, name="a")}
STALE_UID_CLUSTER = {k(RS, "web-5d8f"): {"metadata": {"name": "web-5d8f", "uid": "a-newer-uid", "ownerReferences": [ref(DEPLOY, "web")]}}}


@pytest.mark.parametrize(
    "pod, cluster, chain",
    [
        pytest.param(POD_OF_RS, DEPLOYMENT_CLUSTER, [k(RS, "web-5d8f"), k(DEPLOY, "web")], id="pod-rs-deployment"),
        pytest.param(POD_OF_JOB, CRON_CLUSTER, [k(JOB, "report-28930"), k(CRON, "report")], id="pod-job-cronjob"),
        pytest.param(obj(name="bare"), {}, [], id="bare-pod-no-owners"),
        pytest.param(POD_OF_RS, {}, [k(RS, "web-5d8f")], id="owner-gone-stays-in-chain"),
        pytest.param(POD_OF_RS, {k(RS, "web-5d8f"): DEPLOYMENT_CLUSTER[k(RS, "web-5d8f")]}, [k(RS, "web-5d8f"), k(DEPLOY, "web")], id="grandowner-gone-still-listed"),
        pytest.param(POD_OF_RS, STALE_UID_CLUSTER, [k(RS, "web-5d8f")], id="owner-recreated-with-other-uid-not-followed"),
        pytest.param(MULTI, MULTI_CLUSTER, [k(CUSTOM, "a"), k(RS, "b"), k(DEPLOY, "d"), k(STS, "e"), k(JOB, "c")], id="multi-owner-depth-first-diamond-once"),
        pytest.param(obj(ref(RS, "a"), name="p"), CYCLE_CLUSTER, [k(RS, "a"), k(DEPLOY, "b")], id="owner-cycle"),
        pytest.param(SELF_CYCLE_POD, SELF_CYCLE_CLUSTER, [k(RS, "a")], id="cycle-through-the-pod-itself"),
        pytest.param(obj(ref(RS, "a"), name="p"), SELF_CYCLE_CLUSTER, [k(RS, "a")], id="cycle-through-a-listed-pod-itself"),
        pytest.param(obj(ref(RS, "a"), ref(RS, "a"), name="p"), {}, [k(RS, "a")], id="duplicate-reference-once"),
    ],
)
def test_resolve_chain(pod: dict[str, Any], cluster: dict[ObjKey, dict[str, Any]], chain: list[ObjKey]) -> None:
    fake = FakeCluster(cluster)
    assert resolve_chain(head(pod), lookup=fake.lookup) == chain


def test_lookup_gets_namespace_and_uid() -> None:
    fake = FakeCluster(DEPLOYMENT_CLUSTER)
    resolve_chain(head(POD_OF_RS), lookup=fake.lookup)
    assert fake.calls == [(k(RS, "web-5d8f"), "uid-web-5d8f"), (k(DEPLOY, "web"), "uid-web")]


def test_cycle_asks_each_owner_once() -> None:
    fake = FakeCluster(CYCLE_CLUSTER)
    resolve_chain(head(obj(ref(RS, "a"), name="p")), lookup=fake.lookup)
    assert fake.calls == [(k(RS, "a"), "uid-a"), (k(DEPLOY, "b"), "uid-b")]


@pytest.mark.parametrize("max_depth, length", [(1, 1), (2, 2), (3, 3), (10, 10)])
def test_max_depth_bounds_a_long_chain(max_depth: int, length: int) -> None:
    cluster = {k(RS, f"o{i}"): obj(ref(RS, f"o{i + 1}"), name=f"o{i}") for i in range(50)}
    fake = FakeCluster(cluster)
    chain = resolve_chain(head(obj(ref(RS, "o0"), name="p")), lookup=fake.lookup, max_depth=max_depth)
    assert chain == [k(RS, f"o{i}") for i in range(length)]
    assert len(fake.calls) == length - 1


def test_default_depth_is_ten() -> None:
    cluster = {k(RS, f"o{i}"): obj(ref(RS, f"o{i + 1}"), name=f"o{i}") for i in range(50)}
    assert len(resolve_chain(head(obj(ref(RS, "o0"), name="p")), lookup=FakeCluster(cluster).lookup)) == 10


POD_KEY = ObjKey(POD, NS, "p")


@pytest.mark.parametrize(
    "chain, tracked, expected",
    [
        pytest.param([k(RS, "r"), k(DEPLOY, "d")], {k(DEPLOY, "d")}, k(DEPLOY, "d"), id="rs-untracked-deployment-gets-it"),
        pytest.param([k(RS, "r"), k(DEPLOY, "d")], {k(RS, "r"), k(DEPLOY, "d")}, k(RS, "r"), id="first-tracked-wins"),
        pytest.param([k(JOB, "j"), k(CRON, "c")], {k(JOB, "j"), k(CRON, "c")}, k(JOB, "j"), id="job-before-cronjob"),
        pytest.param([k(JOB, "j"), k(CRON, "c")], {k(CRON, "c")}, k(CRON, "c"), id="cronjob-when-job-not-tracked"),
        pytest.param([k(RS, "r"), k(DEPLOY, "d")], set(), None, id="no-tracked-owner"),
        pytest.param([k(RS, "r")], {POD_KEY}, None, id="owned-pod-is-not-its-own-owner"),
        pytest.param([], {POD_KEY}, POD_KEY, id="bare-pod-own-owner"),
        pytest.param([], set(), None, id="bare-pod-untracked"),
    ],
)
def test_lifecycle_owner(chain: list[ObjKey], tracked: set[ObjKey], expected: ObjKey | None) -> None:
    assert lifecycle_owner(pod_key=POD_KEY, chain=chain, is_tracked_lifecycle_owner=tracked.__contains__) == expected


def test_chain_then_owner_end_to_end() -> None:
    chain = resolve_chain(head(POD_OF_RS), lookup=FakeCluster(DEPLOYMENT_CLUSTER).lookup)
    tracked_kinds = {DEPLOY}
    existing = set(DEPLOYMENT_CLUSTER)
    owner = lifecycle_owner(pod_key=POD_KEY, chain=chain, is_tracked_lifecycle_owner=lambda key: key.gvk in tracked_kinds and key in existing)
    assert owner == k(DEPLOY, "web")
    assert owner.ns_name == "shop/web"


def test_resolving_a_chain_leaves_nothing_for_the_cyclic_collector() -> None:
    """The recorder resolves a chain for every pod it lists, with the cyclic collector paused during the initial sync:
    a walk that left a reference cycle (a closure calling itself) would hold every pod's walk until a collection."""
    import gc

    fake = FakeCluster(DEPLOYMENT_CLUSTER)
    pod = head(POD_OF_RS)
    gc.collect()
    gc.disable()
    try:
        chains = [resolve_chain(pod, lookup=fake.lookup) for _ in range(100)]
        unreachable = gc.collect()
    finally:
        gc.enable()
    assert chains[0] == [k(RS, "web-5d8f"), k(DEPLOY, "web")] and unreachable == 0
