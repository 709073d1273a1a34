"""What a person calls a change besides the spec (trace/revisions, docs/spec.md "What a change is"): pure tables."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_sktrace.trace.revisions import CHURN_ANNOTATIONS, data_hash, describe, metadata_hash, revision_body, with_spec


def deploy(*, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None, owners: list[Any] | None = None,
           **meta: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "web", "namespace": "shop", "labels": labels or {"app": "web"}, "annotations": annotations or {}}
    if owners is not None:
        metadata["ownerReferences"] = owners
    metadata.update(meta)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata, "spec": {"replicas": 1}, "status": {"replicas": 1}}


BASE = deploy()


@pytest.mark.parametrize(
    "other, changed",
    [
        pytest.param(deploy(labels={"app": "web", "tier": "frontend"}), True, id="label-added"),
        pytest.param(deploy(labels={"app": "api"}), True, id="label-value"),
        pytest.param(deploy(annotations={"note": "hello"}), True, id="annotation"),
        pytest.param(deploy(owners=[{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "u"}]), True, id="owner-reference"),
        pytest.param(deploy(annotations={"control-plane.alpha.kubernetes.io/leader": '{"renewTime": "t"}'}), False, id="leader-record"),
        pytest.param(deploy(annotations={"endpoints.kubernetes.io/last-change-trigger-time": "t"}), False, id="endpoints-trigger-time"),
        pytest.param(deploy(annotations={"deployment.kubernetes.io/revision": "7"}), False, id="revision-follows-spec"),
        pytest.param(deploy(annotations={"kubectl.kubernetes.io/last-applied-configuration": "{}"}), False, id="last-applied"),
        pytest.param(deploy(resourceVersion="9", generation=3, managedFields=[{"manager": "m"}], finalizers=["f"]), False,
                     id="server-managed-metadata"),
        pytest.param({**deploy(), "status": {"replicas": 5}}, False, id="status"),
        pytest.param({**deploy(), "spec": {"replicas": 5}}, False, id="spec-is-not-metadata"),
    ],
)
def test_metadata_hash(other: dict[str, Any], changed: bool) -> None:
    assert (metadata_hash(other) != metadata_hash(BASE)) is changed


def test_every_churn_annotation_is_left_out_and_a_persons_annotation_under_its_prefix_is_not() -> None:
    for key in CHURN_ANNOTATIONS:
        assert metadata_hash(deploy(annotations={key: "x"})) == metadata_hash(BASE)
    assert metadata_hash(deploy(annotations={"control-plane.alpha.kubernetes.io/owner": "team"})) != metadata_hash(BASE)


def test_data_hash_of_spec_less_kinds_only() -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"mode": "a"}}
    assert data_hash(BASE) is None
    assert data_hash(config) != data_hash({**config, "data": {"mode": "b"}})
    assert data_hash(config) != data_hash({**config, "binaryData": {"blob": "AA=="}})
    assert data_hash(config) == data_hash({**config, "metadata": {"name": "c", "labels": {"a": "b"}}})


def test_a_revision_stores_what_it_may_change_and_is_made_whole_from_its_base() -> None:
    relabelled = deploy(labels={"app": "web", "tier": "frontend"})
    stored = revision_body(relabelled)
    assert stored == {"metadata": {"labels": {"app": "web", "tier": "frontend"}, "annotations": {}, "ownerReferences": None}}
    whole = with_spec(stored, BASE)
    assert whole == {k: v for k, v in relabelled.items() if k != "status"} and list(whole) == ["apiVersion", "kind", "metadata", "spec"]
    old = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"mode": "a"}, "binaryData": {"b": "AA=="}}
    new = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"mode": "b"}}
    assert revision_body(new) == {"metadata": {"labels": None, "annotations": None, "ownerReferences": None}, "data": {"mode": "b"},
                                  "binaryData": None}
    assert with_spec(revision_body(new), old) == new  # binaryData removed since the base: removed
    unowned = with_spec(revision_body(deploy()), deploy(owners=[{"kind": "X"}], finalizers=["f"]))
    assert "ownerReferences" not in unowned["metadata"] and unowned["metadata"]["finalizers"] == ["f"]  # not a change: the base's


@pytest.mark.parametrize(
    "before, after, words",
    [
        pytest.param(BASE, deploy(labels={"app": "web", "release": "2026-11"}), "labels changed: release=2026-11", id="label"),
        pytest.param(deploy(labels={"app": "web", "old": "x"}), BASE, "labels changed: -old", id="label-removed"),
        pytest.param(BASE, deploy(annotations={"note": "hi", "control-plane.alpha.kubernetes.io/leader": "r"}),
                     "annotations changed: note=hi", id="annotation-churn-unsaid"),
        pytest.param(BASE, deploy(labels={"a": "1", "b": "2", "c": "3", "d": "4"}),
                     "labels changed: a=1, b=2, c=3 +2 more", id="more-than-three"),
        pytest.param(BASE, deploy(owners=[{"kind": "X"}]), "owner references changed", id="owners"),
        pytest.param({"metadata": {}, "data": {"mode": "a"}}, {"metadata": {}, "data": {"mode": "b"}, "binaryData": {"k": "AA=="}},
                     "data changed: k, mode", id="data-keys-never-values"),
        pytest.param(BASE, {**BASE, "spec": {"replicas": 2}}, "", id="spec-only-unsaid"),
    ],
)
def test_describe(before: dict[str, Any], after: dict[str, Any], words: str) -> None:
    assert describe(before, after) == words
