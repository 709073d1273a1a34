"""The emulator's OpenAPI answers, its strict field checks and its strategic merge patch, as pure functions."""

from __future__ import annotations

import pytest

from sktrace_emulator import openapi
from sktrace_emulator.patches import strategic_merge_patch
from sktrace_emulator.records import ApiError, ResourceType

CONFIGMAP = ResourceType("", "v1", "ConfigMap", "configmaps")
DEPLOYMENT = ResourceType("apps", "v1", "Deployment", "deployments")
WIDGET = ResourceType("example.com", "v1", "Widget", "widgets")


def _fields(data: bytes) -> dict[int, bytes]:
    """Decode one level of length-delimited protobuf fields."""
    out: dict[int, bytes] = {}
    at = 0
    while at < len(data):
        tag, length = data[at], data[at + 1]
        assert tag & 7 == 2
        out[tag >> 3] = data[at + 2 : at + 2 + length]
        at += 2 + length
    return out


def test_v2_is_a_swagger_document_without_definitions() -> None:
    doc = _fields(openapi.v2_protobuf())
    assert doc[1] == b"2.0" and set(doc) == {1, 2}
    assert _fields(doc[2]) == {1: b"Kubernetes", 2: b"v1.30.0-sktrace-emulator"}


def test_unknown_and_duplicate_fields_as_a_real_server_words_them() -> None:
    raw = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labelz":{}},"datta":{},"data":{"x":"1","x":"2"}}'
    assert openapi.field_errors(raw, CONFIGMAP) == ['duplicate field "data.x"', 'unknown field "datta"', 'unknown field "metadata.labelz"']
    nested = b'{"spec":{"template":{"spec":{"containers":[{"name":"a","name":"b"}]}}}}'
    assert openapi.field_errors(nested, DEPLOYMENT) == ['duplicate field "spec.template.spec.containers[0].name"']


def test_what_is_not_checked() -> None:
    # inside spec, a CRD's top level, a JSON patch, a strategic merge patch's directives
    assert openapi.field_errors(b'{"spec":{"replicaz":1}}', DEPLOYMENT) == []
    assert openapi.field_errors(b'{"apiVersion":"example.com/v1","kind":"Widget","size":1}', WIDGET) == []
    assert openapi.field_errors(b'[{"op":"add","path":"/x","value":1}]', DEPLOYMENT) == []
    assert openapi.field_errors(b'{"$retainKeys":["spec"],"spec":{}}', DEPLOYMENT, strategic=True) == []
    assert openapi.field_errors(b'{"$retainKeys":["spec"]}', DEPLOYMENT) == ['unknown field "$retainKeys"']


def test_directives() -> None:
    raw = b'{"metadata":{"name":"a","nam":"b"}}'
    with pytest.raises(ApiError) as refused:
        openapi.check_fields(raw, CONFIGMAP, "Strict")
    assert (refused.value.code, refused.value.message) == (400, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
                                                                'strict decoding error: unknown field "metadata.nam"')
    assert openapi.check_fields(raw, CONFIGMAP, "Warn") == ['unknown field "metadata.nam"']
    assert openapi.check_fields(raw, CONFIGMAP, "Ignore") == openapi.check_fields(raw, CONFIGMAP, "") == []


def test_strategic_merge_patch_merges_containers_by_name_in_the_order_given() -> None:
    current = {"spec": {"replicas": 1, "containers": [{"name": "a", "image": "1", "ports": [{"containerPort": 80}]}, {"name": "b", "image": "1"}]}}
    patch = {"spec": {"replicas": 2, "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}, {"name": "c"}],
                      "containers": [{"name": "a", "image": "2"}, {"name": "c", "image": "3"}]}}
    assert strategic_merge_patch(current, patch) == {"spec": {"replicas": 2, "containers": [
        {"name": "b", "image": "1"}, {"name": "a", "image": "2", "ports": [{"containerPort": 80}]}, {"name": "c", "image": "3"}]}}


def test_strategic_merge_patch_directives() -> None:
    current = {"spec": {"containers": [{"name": "a"}, {"name": "b"}], "args": ["x", "y"], "strategy": {"type": "A", "rollingUpdate": {}},
                        "nodeSelector": {"k": "v"}}}
    patch = {"spec": {"containers": [{"name": "a", "$patch": "delete"}], "$deleteFromPrimitiveList/args": ["x"],
                      "strategy": {"$retainKeys": ["type"], "type": "B"}, "nodeSelector": {"$patch": "replace", "n": "m"}}}
    assert strategic_merge_patch(current, patch) == {"spec": {"containers": [{"name": "b"}], "args": ["y"], "strategy": {"type": "B"},
                                                              "nodeSelector": {"n": "m"}}}
    # a list without a merge key is replaced whole; null deletes
    assert strategic_merge_patch({"a": [1, 2], "b": 1}, {"a": [3], "b": None}) == {"a": [3]}
