"""Sanitizing objects for events, deleted stubs, and reading identity and times (docs/spec.md §4)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubectl_sktrace.errors import KubeError
from kubectl_sktrace.model import GVK, POD, ObjectHead, ObjKey, OwnerRef
from kubectl_sktrace.timeparse import parse_api_time
from kubectl_sktrace.trace.sanitize import (
    deleted_stub,
    is_daemonset_owned,
    object_key,
    owner_refs,
    read_head,
    sanitize,
)
from tests.record.test_owners import CUSTOM, JOB, RS, obj, ref

DEPLOYMENT = GVK("apps", "v1", "Deployment")
SECRET = GVK("", "v1", "Secret")
NAMESPACE = GVK("", "v1", "Namespace")
OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f", "uid": "rs-uid", "controller": True, "blockOwnerDeletion": True}


def full_metadata(**extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": "web",
        "namespace": "shop",
        "generateName": "web-",
        "uid": "3f2c",
        "resourceVersion": "12345",
        "generation": 4,
        "creationTimestamp": "2026-11-22T10:00:00Z",
        "deletionTimestamp": "2026-11-22T11:00:00Z",
        "deletionGracePeriodSeconds": 30,
        "managedFields": [{"manager": "kubectl", "operation": "Update"}],
        "labels": {"app": "web"},
        "finalizers": ["example.com/keep"],
        "ownerReferences": [OWNER],
        "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": "{...}",
            "deployment.kubernetes.io/revision": "7",
            "team": "checkout",
        },
    }
    meta.update(extra)
    return meta


def test_deployment_is_sanitized_exactly() -> None:
    obj = {"metadata": full_metadata(), "spec": {"replicas": 3, "template": {"spec": {"nodeName": "kept-in-templates"}}}, "status": {"replicas": 3}}
    assert sanitize(obj, gvk=DEPLOYMENT) == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "shop",
            "generateName": "web-",
            "labels": {"app": "web"},
            "finalizers": ["example.com/keep"],
            "ownerReferences": [OWNER],
            "annotations": {"team": "checkout"},
        },
        "spec": {"replicas": 3, "template": {"spec": {"nodeName": "kept-in-templates"}}},
        "status": {"replicas": 3},
    }


def test_pod_loses_node_name_only() -> None:
    obj: dict[str, Any] = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "node-1", "containers": [{"name": "a"}], "schedulerName": "default"}}
    out = sanitize(obj, gvk=POD)
    assert out["spec"] == {"containers": [{"name": "a"}], "schedulerName": "default"}
    assert obj["spec"]["nodeName"] == "node-1"


@pytest.mark.parametrize(
    "obj, gvk, expected",
    [
        pytest.param({"metadata": {"name": "a"}}, NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "annotations": {}}}, id="no-annotations-gets-empty"),
        pytest.param({"metadata": {"name": "a", "annotations": None}}, NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "annotations": {}}}, id="null-annotations"),
        pytest.param(
            {"metadata": {"name": "a", "annotations": {"deployment.kubernetes.io/revision": "1"}}},
            DEPLOYMENT,
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a", "annotations": {}}},
            id="only-dropped-annotations-leaves-empty",
        ),
        pytest.param({}, DEPLOYMENT, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"annotations": {}}}, id="no-metadata"),
        pytest.param(
            {"apiVersion": "extensions/v1beta1", "kind": "Wrong", "metadata": {"name": "a"}},
            DEPLOYMENT,
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a", "annotations": {}}},
            id="apiVersion-kind-from-watched-kind",
        ),
        pytest.param(
            {"metadata": {"name": "p"}, "spec": None},
            POD,
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": {}}, "spec": None},
            id="pod-null-spec",
        ),
        pytest.param(
            {"metadata": {"name": "d"}, "spec": {"nodeName": "n"}},
            DEPLOYMENT,
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "annotations": {}}, "spec": {"nodeName": "n"}},
            id="nodeName-kept-outside-pods",
        ),
    ],
)
def test_sanitize_edges(obj: dict[str, Any], gvk: GVK, expected: dict[str, Any]) -> None:
    assert sanitize(obj, gvk=gvk) == expected


SECRET_OBJ = {"metadata": {"name": "s", "namespace": "ns"}, "type": "Opaque", "data": {"password": "aHVudGVyMg==", "user": "YWRtaW4="}, "stringData": {"token": "abc"}}


@pytest.mark.parametrize(
    "gvk, keep, data, string_data",
    [
        pytest.param(SECRET, False, {"password": "", "user": ""}, {"token": ""}, id="secret-redacted"),
        pytest.param(SECRET, True, {"password": "aHVudGVyMg==", "user": "YWRtaW4="}, {"token": "abc"}, id="secret-kept-when-opted-in"),
        pytest.param(GVK("", "v1", "ConfigMap"), False, {"password": "aHVudGVyMg==", "user": "YWRtaW4="}, {"token": "abc"}, id="configmap-untouched"),
        pytest.param(GVK("example.com", "v1", "Secret"), False, {"password": "aHVudGVyMg==", "user": "YWRtaW4="}, {"token": "abc"}, id="custom-kind-named-secret-untouched"),
    ],
)
def test_secret_values(gvk: GVK, keep: bool, data: dict[str, str], string_data: dict[str, str]) -> None:
    before = copy.deepcopy(SECRET_OBJ)
    out = sanitize(SECRET_OBJ, gvk=gvk, keep_secret_data=keep)
    assert out["data"] == data
    assert out["stringData"] == string_data
    assert out["type"] == "Opaque"
    assert SECRET_OBJ == before


@pytest.mark.parametrize(
    "obj, expected",
    [
        pytest.param({"metadata": {"name": "s"}}, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "annotations": {}}}, id="no-data"),
        pytest.param({"metadata": {"name": "s"}, "data": None}, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "annotations": {}}, "data": None}, id="null-data"),
        pytest.param({"metadata": {"name": "s"}, "data": {}}, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "annotations": {}}, "data": {}}, id="empty-data"),
    ],
)
def test_secret_edges(obj: dict[str, Any], expected: dict[str, Any]) -> None:
    assert sanitize(obj, gvk=SECRET) == expected


@pytest.mark.parametrize("gvk", [POD, DEPLOYMENT, SECRET], ids=str)
def test_sanitize_never_mutates_input(gvk: GVK) -> None:
    obj = {"metadata": full_metadata(), "spec": {"nodeName": "n", "containers": []}, "status": {"phase": "Running"}, "data": {"k": "v"}}
    before = copy.deepcopy(obj)
    out = sanitize(obj, gvk=gvk)
    assert obj == before
    out["metadata"]["labels"] = {}
    out["metadata"]["annotations"]["new"] = "x"
    out["metadata"]["name"] = "changed"
    out["spec"]["added"] = 1 if gvk == POD else None
    assert obj["metadata"] == before["metadata"]
    if gvk == POD:
        assert obj["spec"] == before["spec"]


@pytest.mark.parametrize(
    "key, stub",
    [
        pytest.param(ObjKey(DEPLOYMENT, "shop", "web"), {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}}, id="namespaced"),
        pytest.param(ObjKey(NAMESPACE, "", "shop"), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "namespace": ""}}, id="cluster-scoped-core"),
        pytest.param(
            ObjKey(GVK("rbac.authorization.k8s.io", "v1", "ClusterRole"), "", "view"),
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "view", "namespace": ""}},
            id="cluster-scoped-grouped",
        ),
        pytest.param(ObjKey(POD, "ns", "p"), {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}, id="pod"),
    ],
)
def test_deleted_stub(key: ObjKey, stub: dict[str, Any]) -> None:
    assert deleted_stub(key) == stub


@pytest.mark.parametrize(
    "obj, gvk, key",
    [
        pytest.param({"metadata": {"name": "web", "namespace": "shop"}}, DEPLOYMENT, ObjKey(DEPLOYMENT, "shop", "web"), id="namespaced"),
        pytest.param({"metadata": {"name": "shop"}}, NAMESPACE, ObjKey(NAMESPACE, "", "shop"), id="cluster-scoped"),
        pytest.param({"metadata": {"name": "shop", "namespace": None}}, NAMESPACE, ObjKey(NAMESPACE, "", "shop"), id="null-namespace"),
        pytest.param({"kind": "Other", "metadata": {"name": "p", "namespace": "ns"}}, POD, ObjKey(POD, "ns", "p"), id="gvk-from-watched-kind"),
        pytest.param({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a", "namespace": "n"}}, None, ObjKey(DEPLOYMENT, "n", "a"), id="trace-namespaced"),
        pytest.param({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}, None, ObjKey(NAMESPACE, "", "n"), id="trace-cluster-scoped"),
        pytest.param({"kind": "Pod", "metadata": {"name": "a"}}, None, None, id="trace-no-api-version"),
        pytest.param({"apiVersion": "v1", "kind": "Pod", "metadata": {}}, None, None, id="trace-no-name"),
        pytest.param({"metadata": {"name": ""}}, DEPLOYMENT, None, id="empty-name"),
    ],
)
def test_object_key(obj: dict[str, Any], gvk: GVK | None, key: ObjKey | None) -> None:
    assert object_key(obj, gvk) == key


@pytest.mark.parametrize("obj", [{}, {"metadata": {}}, {"metadata": {"name": ""}}, {"metadata": None}], ids=["no-metadata", "no-name", "empty-name", "null-metadata"])
def test_read_head_without_name(obj: dict[str, Any]) -> None:
    with pytest.raises(KubeError) as err:
        read_head(obj, DEPLOYMENT)
    assert str(err.value) == "the server sent a apps/v1.Deployment object without metadata.name: check the API server or the kind's definition"


def test_read_head_reads_every_fact_once() -> None:
    obj = {"metadata": {"name": "web-1", "namespace": "shop", "uid": "u1", "resourceVersion": "42",
                        "creationTimestamp": "2026-11-22T10:00:00Z", "ownerReferences": [OWNER, "junk"]}}
    assert read_head(obj, POD) == ObjectHead(
        key=ObjKey(POD, "shop", "web-1"), uid="u1", resource_version="42", created=1795341600.0,
        owners=(OwnerRef(GVK("apps", "v1", "ReplicaSet"), "web-5d8f", "rs-uid"),),
    )


@pytest.mark.parametrize(
    "obj, uid",
    [
        pytest.param({"metadata": {"uid": "abc"}}, "abc", id="present"),
        pytest.param({"metadata": {}}, "", id="missing"),
        pytest.param({}, "", id="no-metadata"),
        pytest.param({"metadata": {"uid": 5}}, "", id="not-a-string"),
    ],
)
def test_head_uid(obj: dict[str, Any], uid: str) -> None:
    assert read_head({**obj, "metadata": {**obj.get("metadata", {}), "name": "x"}}, POD).uid == uid


@pytest.mark.parametrize(
    "value, expected",
    [
        pytest.param("2026-11-22T10:00:00Z", 1795341600.0, id="utc-z"),
        pytest.param("2026-11-22T10:00:00z", 1795341600.0, id="lowercase-z"),
        pytest.param("2026-11-22T12:00:00+02:00", 1795341600.0, id="offset"),
        pytest.param("2026-11-22T10:00:00.5Z", 1795341600.5, id="one-digit-fraction"),
        pytest.param("2026-11-22T10:00:00.250000Z", 1795341600.25, id="micro-fraction"),
        pytest.param("2026-11-22T10:00:00.123456789Z", 1795341600.123456, id="nano-fraction-truncated"),
        pytest.param(None, None, id="missing"),
        pytest.param("", None, id="empty"),
        pytest.param("now", None, id="cli-words-not-api-times"),
        pytest.param("-30m", None, id="relative-not-api-time"),
        pytest.param("@1795341600", None, id="unix-form-not-api-time"),
        pytest.param("2026-13-40T10:00:00Z", None, id="invalid-date"),
        pytest.param(1795341600, None, id="number"),
        pytest.param({"time": "2026-11-22T10:00:00Z"}, None, id="unhashable-object"),
        pytest.param(["2026-11-22T10:00:00Z"], None, id="unhashable-list"),
    ],
)
def test_parse_api_time(value: object, expected: float | None) -> None:
    result = parse_api_time(value)
    if expected is None:
        assert result is None
    else:
        assert result == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    "obj, expected",
    [
        pytest.param({"metadata": {"creationTimestamp": "2026-11-22T10:00:00Z"}}, 1795341600.0, id="present"),
        pytest.param({"metadata": {}}, None, id="missing"),
        pytest.param({}, None, id="no-metadata"),
        pytest.param({"metadata": {"creationTimestamp": "yesterday"}}, None, id="malformed"),
    ],
)
def test_head_creation_time(obj: dict[str, Any], expected: float | None) -> None:
    assert read_head({**obj, "metadata": {**obj.get("metadata", {}), "name": "x"}}, POD).created == expected


@pytest.mark.parametrize(
    "version, expected",
    [
        pytest.param("42", "42", id="string"),
        pytest.param(None, "", id="missing"),
        pytest.param("", "", id="empty"),
        pytest.param(42, "42", id="number"),
    ],
)
def test_head_resource_version(version: object, expected: str) -> None:
    assert read_head({"metadata": {"name": "x", "resourceVersion": version}}, POD).resource_version == expected


# marshal: only its in-memory ``dumps`` (record.changes fingerprints a spec with it)
ALLOWED_IMPORTS = {"__future__", "collections", "copy", "dataclasses", "marshal", "math", "re", "typing", "kubectl_sktrace.errors", "kubectl_sktrace.model", "kubectl_sktrace.timeparse", "kubectl_sktrace.trace.sanitize", "kubectl_sktrace.trace.hashing", "kubectl_sktrace.trace.revisions"}


@pytest.mark.parametrize("module", ["trace.sanitize", "trace.lifecycle", "record.owners", "record.changes"])
def test_rule_modules_stay_pure(module: str) -> None:
    """The rules import only the standard library's pure parts and the modules below them (no I/O, no clock)."""
    import ast
    import importlib

    source = importlib.import_module(f"kubectl_sktrace.{module}").__file__
    assert source is not None
    tree = ast.parse(open(source, encoding="utf-8").read())
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    assert {name for name in imported if name not in ALLOWED_IMPORTS and name.split(".")[0] not in {"collections", "typing"}} == set()


@pytest.mark.parametrize(
    "raw, expected",
    [
        pytest.param(obj(ref(RS, "web-1")), [OwnerRef(RS, "web-1", "uid-web-1")], id="one"),
        pytest.param(obj(ref(JOB, "j"), ref(CUSTOM, "w")), [OwnerRef(JOB, "j", "uid-j"), OwnerRef(CUSTOM, "w", "uid-w")], id="listed-order"),
        pytest.param(obj({"apiVersion": "v1", "kind": "Node", "name": "n1"}), [OwnerRef(GVK("", "v1", "Node"), "n1", "")], id="core-no-uid"),
        pytest.param(obj({"kind": "ReplicaSet", "name": "r"}, {"apiVersion": "apps/v1", "name": "r"}, {"apiVersion": "apps/v1", "kind": "ReplicaSet"}, "junk", None), [], id="malformed-skipped"),
        pytest.param({"metadata": {"name": "x"}}, [], id="none"),
        pytest.param({"metadata": {"name": "x", "ownerReferences": None}}, [], id="null"),
        pytest.param({}, [], id="no-metadata"),
    ],
)
def test_owner_refs(raw: dict[str, Any], expected: list[OwnerRef]) -> None:
    assert list(owner_refs(raw)) == expected


@pytest.mark.parametrize(
    "raw, owned",
    [
        pytest.param(obj(ref(GVK("apps", "v1", "DaemonSet"), "ds")), True, id="daemonset"),
        pytest.param(obj(ref(RS, "r"), ref(GVK("apps", "v1", "DaemonSet"), "ds")), True, id="daemonset-second"),
        pytest.param(obj(ref(GVK("apps.kruise.io", "v1alpha1", "DaemonSet"), "ds")), True, id="any-group"),
        pytest.param(obj(ref(RS, "r")), False, id="replicaset"),
        pytest.param(obj(), False, id="no-owners"),
        pytest.param({"metadata": {"ownerReferences": "junk"}}, False, id="malformed"),
        pytest.param({}, False, id="no-metadata"),
    ],
)
def test_is_daemonset_owned(raw: dict[str, Any], owned: bool) -> None:
    assert is_daemonset_owned(raw) is owned
