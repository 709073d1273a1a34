from __future__ import annotations

import math
from typing import Any

import pytest

from kubectl_sktrace.trace import hashing
from kubectl_sktrace.trace.files.format import read_trace

SPEC_VECTORS = [
    pytest.param({"replicas": 42}, 3664028200602729212, id="replicas"),
    pytest.param({"containers": [], "volumes": []}, 17506812802394981455, id="empty-lists"),
    pytest.param({"updateStrategy": {"type": "onDelete"}}, 16161139027557399432, id="nested"),
    pytest.param({"containers": [], "nodeSelector": {"boo": "far"}, "volumes": []}, 18161541283955474812, id="selector"),
    pytest.param(None, 13646096770106105413, id="null"),
    pytest.param({}, 15130871412783076140, id="empty-object"),
    pytest.param([], 15130871412783076140, id="empty-array"),
]

IMPLEMENTATIONS = [pytest.param(hashing.siphash13_pure, id="pure")]
if hashing.siphash13_compiled is not None:
    IMPLEMENTATIONS.append(pytest.param(hashing.siphash13_compiled, id="compiled"))


def _fixture_vectors() -> list[object]:
    """(spec, expected) for every index value of dsb-scaling and cronjob: the hash of the last applied spec."""
    from conftest import DATA

    vectors = []
    for name in ("dsb-scaling", "cronjob"):
        trace = read_trace(DATA / f"{name}.sktrace")
        last: dict[tuple[str, str], object] = {}
        for event in trace.events:
            for obj in event["applied_objs"]:
                gvk = f"{obj['apiVersion']}.{obj['kind']}"
                meta = obj["metadata"]
                last[(gvk, f"{meta['namespace']}/{meta['name']}")] = obj.get("spec")
        for gvk, entries in trace.index.items():
            for ns_name, expected in entries.items():
                vectors.append(pytest.param(last[(gvk, ns_name)], expected, id=f"{name}:{ns_name}"))
    return vectors


FIXTURE_VECTORS = _fixture_vectors()


def test_fixture_vector_count() -> None:
    assert len(FIXTURE_VECTORS) == 28  # 27 Deployments of dsb-scaling and the CronJob


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize(("value", "expected"), SPEC_VECTORS + FIXTURE_VECTORS)
def test_spec_hash_vectors_on_each_path(impl, value, expected) -> None:
    assert impl(hashing.hash_stream(value)) == expected


@pytest.mark.parametrize(("value", "expected"), SPEC_VECTORS)
def test_spec_hash_uses_the_fastest_path(value, expected) -> None:
    assert hashing.spec_hash(value) == expected


def test_compiled_siphash_is_available() -> None:
    assert hashing.siphash13_compiled is not None
    assert hashing.siphash13 is hashing.siphash13_compiled


@pytest.mark.parametrize("length", list(range(0, 25)) + [63, 64, 65, 1000])
def test_pure_and_compiled_agree_on_every_tail_length(length) -> None:
    if hashing.siphash13_compiled is None:
        pytest.skip("siphash24 not installed")
    data = bytes((i * 37 + 11) % 256 for i in range(length))
    assert hashing.siphash13_pure(data) == hashing.siphash13_compiled(data)


@pytest.mark.parametrize(
    ("value", "stream"),
    [
        pytest.param(None, b"\0" * 8, id="null"),
        pytest.param(True, b"\x01", id="true"),
        pytest.param(False, b"\x00", id="false"),
        pytest.param(1, b"\x01" + b"\0" * 7, id="int"),
        pytest.param(-1, b"\xff" * 8, id="negative-int"),
        pytest.param((1 << 64) - 1, b"\xff" * 8, id="u64-max"),
        pytest.param(1.5, bytes.fromhex("000000000000f83f"), id="float"),
        pytest.param(-0.0, b"\0" * 8, id="negative-zero"),
        pytest.param("é", "é".encode() + b"\xff", id="utf8-string"),
        pytest.param(["a", ("b",)], b"a\xffb\xff", id="arrays-and-tuples"),
        pytest.param({"b": 1, "a": None}, b"a\xff" + b"\0" * 8 + b"b\xff" + b"\x01" + b"\0" * 7, id="sorted-keys"),
        pytest.param({"é": 0, "z": 0}, b"z\xff" + b"\0" * 8 + "é".encode() + b"\xff" + b"\0" * 8, id="byte-order-keys"),
    ],
)
def test_hash_stream_bytes(value, stream) -> None:
    assert hashing.hash_stream(value) == stream


def test_integer_beyond_u64_hashes_as_float() -> None:
    assert hashing.hash_stream(1 << 70) == hashing.hash_stream(float(1 << 70))


def test_hash_rejects_non_json_values() -> None:
    with pytest.raises(TypeError, match="not a JSON value"):
        hashing.spec_hash({"a": object()})
    with pytest.raises(TypeError, match="JSON keys are strings"):
        hashing.spec_hash({1: "a"})


def test_nan_is_hashed_by_its_bits() -> None:
    assert hashing.spec_hash(math.inf) != hashing.spec_hash(-math.inf)


def test_stable_pod_spec_of_bare_pods_fixture(bare_pods_path) -> None:
    trace = read_trace(bare_pods_path)
    pods = [obj for event in trace.events for obj in event["applied_objs"]]
    assert len(pods) == 4
    for pod in pods:
        assert hashing.pod_spec_hash(pod["spec"]) == 2151974655102796215
    (hashes,) = {frozenset(h) for h in trace.pod_lifecycles.values()}
    assert hashes == {2151974655102796215}


def test_stable_pod_spec_rules() -> None:
    spec = {
        "nodeName": "node-1",
        "serviceAccount": "sa",
        "serviceAccountName": "sa",
        "priorityClassName": None,
        "initContainers": [{"name": "init", "ports": [{"containerPort": 1}], "volumeMounts": [{"name": "kube-api-access-x"}]}],
        "containers": [
            {"name": "c", "ports": [{"containerPort": 80}], "volumeMounts": [{"name": "data"}, {"name": "kube-api-access-abc"}], "env": None}
        ],
        "volumes": [{"name": "kube-api-access-abc", "projected": {}}, {"name": "data", "emptyDir": {}}],
    }
    assert hashing.stable_pod_spec(spec) == {
        "initContainers": [{"name": "init", "ports": [{"containerPort": 1}], "volumeMounts": []}],
        "containers": [{"name": "c", "volumeMounts": [{"name": "data"}]}],
        "volumes": [{"name": "data", "emptyDir": {}}],
    }
    assert spec["nodeName"] == "node-1", "the input is not modified"


def test_stable_pod_spec_always_has_volumes_and_mounts() -> None:
    assert hashing.stable_pod_spec({"containers": [{"name": "c"}]}) == {
        "containers": [{"name": "c", "volumeMounts": []}],
        "volumes": [],
    }


def _pod_spec(node: str, privileged: Any) -> dict[str, Any]:
    return {"nodeName": node, "serviceAccountName": "default", "restartPolicy": "Always", "priority": None,
            "volumes": [{"name": f"kube-api-access-{node}", "projected": {}}, {"name": "data", "emptyDir": {}}],
            "containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}], "resources": {"limits": None},
                            "securityContext": {"privileged": privileged},
                            "volumeMounts": [{"name": f"kube-api-access-{node}", "mountPath": "/var/run"},
                                             {"name": "data", "mountPath": "/data"}]}]}


def test_pods_of_one_template_share_a_hash_remembered_and_equal_to_the_hash_of_their_stable_spec() -> None:
    first, second = _pod_spec("node-1", True), _pod_spec("node-2", True)
    assert hashing.pod_spec_hash(first) == hashing.pod_spec_hash(second) == hashing.spec_hash(hashing.stable_pod_spec(first))
    assert hashing.pod_spec_hash(second) == hashing.spec_hash(hashing.stable_pod_spec(second))  # from the memo now


@pytest.mark.parametrize("value", [1, 1.0, "true", None, float("nan")], ids=["int", "float", "string", "null", "nan"])
def test_the_remembered_hash_never_stands_for_a_spec_that_only_compares_equal(value: Any) -> None:
    """``True == 1 == 1.0`` in Python, not in the hash: the memo keeps them apart (NaN bypasses it)."""
    hashing.pod_spec_hash(_pod_spec("node-1", True))
    other = _pod_spec("node-3", value)
    assert hashing.pod_spec_hash(other) == hashing.spec_hash(hashing.stable_pod_spec(other))
    assert hashing.pod_spec_hash(other) != hashing.pod_spec_hash(_pod_spec("node-1", True))


def _workload_spec(image: str = "registry.example/shop/cart:1.4.2", flag: Any = True) -> dict[str, Any]:
    """A Deployment's spec whose pod template is well past ``_PART_MIN`` when marshalled."""
    container = {"name": "cart", "image": image, "args": ["--port=8080", "--verbose"], "readOnly": flag,
                 "env": [{"name": f"SETTING_{i}", "value": f"value number {i}"} for i in range(12)],
                 "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}}}
    return {"replicas": 3, "selector": {"matchLabels": {"app": "cart"}}, "minReadySeconds": 5,
            "template": {"metadata": {"labels": {"app": "cart", "tier": "web"}}, "spec": {"containers": [container]}}}


def test_a_spec_hashed_by_its_members_has_simkubes_hash_on_every_vector() -> None:
    for param in SPEC_VECTORS + FIXTURE_VECTORS:
        value, expected = param.values
        assert hashing.spec_hash_by_parts(value) == expected
        assert hashing.spec_hash_by_parts(value) == expected  # again, with its members remembered


def test_a_spec_changed_outside_its_template_does_not_walk_the_template_again(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _workload_spec()
    assert hashing.spec_hash_by_parts(spec) == hashing.spec_hash(spec)
    walked: list[object] = []
    real = hashing._feed
    monkeypatch.setattr(hashing, "_feed", lambda value, out: walked.append(value) or real(value, out))
    scaled = {**spec, "replicas": 4}
    by_parts = hashing.spec_hash_by_parts(scaled)
    assert not any(value is spec["template"] or value is spec["template"]["spec"] for value in walked)
    assert len(walked) < 10, walked  # the replicas, the selector, minReadySeconds: not the template's values
    monkeypatch.setattr(hashing, "_feed", real)
    assert by_parts == hashing.spec_hash(scaled) != hashing.spec_hash(spec)


@pytest.mark.parametrize("change", ["image", "bool-as-int", "bool-as-float", "tuple", "key-order"])
def test_a_remembered_member_never_stands_for_one_that_only_compares_equal_or_differs(change: str) -> None:
    """The memo is keyed by marshal's exact bytes: ``True``, ``1`` and ``1.0`` hash apart, as the walk has them;
    a tuple for a list, or keys in another order, hash as the walk has them too (a miss, never a wrong hash)."""
    spec = _workload_spec()
    hashing.spec_hash_by_parts(spec)
    other = {"image": _workload_spec(image="registry.example/shop/cart:1.4.3"), "bool-as-int": _workload_spec(flag=1),
             "bool-as-float": _workload_spec(flag=1.0), "tuple": {**spec, "template": {**spec["template"], "spec": {
                 "containers": tuple(spec["template"]["spec"]["containers"])}}},
             "key-order": {**spec, "template": dict(reversed(list(spec["template"].items())))}}[change]
    assert hashing.spec_hash_by_parts(other) == hashing.spec_hash(other)
    assert (hashing.spec_hash(other) == hashing.spec_hash(spec)) == (change in ("tuple", "key-order"))


def test_the_members_remembered_stay_within_their_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hashing, "_PARTS", {})
    monkeypatch.setattr(hashing, "_PARTS_HELD", [0])
    monkeypatch.setattr(hashing, "_PARTS_LIMIT", 20_000)
    specs = [_workload_spec(image=f"registry.example/shop/cart:{i}") for i in range(40)]
    for spec in specs:
        assert hashing.spec_hash_by_parts(spec) == hashing.spec_hash(spec)
        assert 0 < hashing._PARTS_HELD[0] <= 20_000
    assert hashing._PARTS_HELD[0] == sum(len(k) + len(v) for k, v in hashing._PARTS.items())
    assert 1 < len(hashing._PARTS) < 40  # the oldest went first
    assert hashing.spec_hash_by_parts(specs[-1]) == hashing.spec_hash(specs[-1])
