"""The keyed anonymizer (``trace.anonymize``, ``trace.pseudonyms``): the trace replays the same, nothing names the
source cluster any more.

On SimKube's three fixtures and on generated traces: what ``inspect`` reports is unchanged but for the renaming,
owner relations hold as before, the index and lifecycle hashes are those of the new specs, ``validate`` finds the
same, no original name, namespace or image is left in the bytes, and one key gives one output.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.trace.files import format as traceformat
from kubectl_sktrace.trace import hashing
from kubectl_sktrace.trace.reports import inspection
from kubectl_sktrace.trace.anonymizing.anonymize import Anonymizer, new_key
from kubectl_sktrace.trace.anonymizing.pseudonyms import KEPT_NAMESPACES, KEPT_VALUES, Pseudonyms
from kubectl_sktrace.trace.sanitize import object_key, owner_refs
from kubectl_sktrace.trace.reports.validation import check_trace

KEY = b"a fixed key for tests, 32 bytes."
OTHER_KEY = b"another key for tests, 32 bytes!"
DATA = Path(__file__).resolve().parent.parent / "data"
FIXTURES = ("dsb-scaling", "cronjob", "bare-pods")
DIGEST = "[a-z2-7]{16}"
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
IMAGE = re.compile(r"img-[a-z2-7]{16}(:(latest|t-[a-z2-7]{16}))?(@sha256:[0-9a-f]{64})?")
ADMITTED = {  # what the API server's admission adds to a template's pod spec (written out here, not imported)
    "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
    "tolerations": [{"effect": "NoExecute", "key": f"node.kubernetes.io/{t}", "operator": "Exists", "tolerationSeconds": 300}
                    for t in ("not-ready", "unreachable")],
}


def anonymize(trace: traceformat.Trace, key: bytes = KEY) -> tuple[traceformat.Trace, Anonymizer]:
    """The trace through an anonymizer the way a streaming caller feeds it: config, each event, index, lifecycles."""
    anonymizer = Anonymizer(key)
    config = anonymizer.config(trace.config)
    events = [anonymizer.event(event) for event in trace.events]
    out = traceformat.Trace(version=trace.version, config=config, events=events, index=anonymizer.index(trace.index),
                            pod_lifecycles=anonymizer.pod_lifecycles(trace.pod_lifecycles))
    return out, anonymizer


def fixture(name: str) -> traceformat.Trace:
    return traceformat.read_trace(DATA / f"{name}.sktrace")


def rename_key(names: Pseudonyms, key: ObjKey) -> ObjKey:
    return ObjKey(gvk=key.gvk, namespace=names.namespace(key.namespace), name=names.name(key.name))


def rename_ns_name(names: Pseudonyms, text: str) -> str:
    namespace, slash, name = text.partition("/")
    return f"{names.namespace(namespace)}/{names.name(name)}" if slash else names.name(text)


def summary(trace: traceformat.Trace) -> dict[str, Any]:
    result = inspection.summarize(trace, path="trace", with_events=True)
    result["objects"] = sorted(result["objects"], key=lambda row: (row["kind"], row["namespace"]))
    return result


def renamed_summary(trace: traceformat.Trace, names: Pseudonyms) -> dict[str, Any]:
    """What ``inspect`` should report of the anonymized trace: the original's report, renamed."""
    result = summary(trace)
    result["objects"] = sorted(({**row, "namespace": names.namespace(row["namespace"])} for row in result["objects"]),
                               key=lambda row: (row["kind"], row["namespace"]))
    result["podLifecycles"] = [{**row, "object": rename_ns_name(names, row["object"])} for row in result["podLifecycles"]]
    for event in result["eventList"]:
        event["changes"] = [" ".join([*change.split(" ")[:2], rename_ns_name(names, change.split(" ")[2])]) for change in event["changes"]]
    return result


def owner_edges(trace: traceformat.Trace) -> list[tuple[ObjKey, ObjKey, bool]]:
    """Each applied object's ownerReferences: (object, owner, whether the owner is an object of the trace)."""
    known = {object_key(obj) for event in trace.events for obj in event["applied_objs"]}
    known |= {ObjKey(GVK.parse(gvk), *(k.split("/", 1) if "/" in k else ("", k))) for gvk, keys in trace.index.items() for k in keys}
    edges = []
    for event in trace.events:
        for obj in event["applied_objs"]:
            key = object_key(obj)
            assert key is not None
            edges += [(key, ref.key(key.namespace), ref.key(key.namespace) in known) for ref in owner_refs(obj)]
    return edges


def findings(trace: traceformat.Trace) -> list[tuple[str, int | None, ObjKey | None]]:
    return [(f.code, f.ts, f.object) for f in check_trace(trace) if f.code != "W0000"]


def strings(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set().union(*map(strings, value.values())) if value else set()
    if isinstance(value, (list, tuple)):
        return set().union(*map(strings, value)) if value else set()
    return {value} if isinstance(value, str) else set()


def last_specs(trace: traceformat.Trace) -> dict[tuple[str, str], Any]:
    return {(str(key.gvk), key.ns_name): obj.get("spec") for event in trace.events for obj in event["applied_objs"]
            if (key := object_key(obj)) is not None}


def index_keys(data: bytes) -> set[str]:
    return {key for keys in traceformat.decode_trace(data).index.values() for key in keys}


def check_replays_the_same(before: traceformat.Trace, after: traceformat.Trace) -> None:
    names = Pseudonyms(KEY)
    assert summary(after) == renamed_summary(before, names)
    assert owner_edges(after) == [(rename_key(names, a), rename_key(names, b), exists) for a, b, exists in owner_edges(before)]
    assert findings(after) == [(code, ts, key and rename_key(names, key)) for code, ts, key in findings(before)]
    assert traceformat.decode_trace(traceformat.encode_trace(after)) == after


# --- SimKube's fixtures ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURES)
def test_a_fixture_replays_the_same(name: str) -> None:
    before = fixture(name)
    check_replays_the_same(before, anonymize(before)[0])


@pytest.mark.parametrize("name, recomputed", [("dsb-scaling", 27), ("cronjob", 1), ("bare-pods", 0)])
def test_index_values_are_the_hashes_of_the_new_specs_where_they_were_of_the_old(name: str, recomputed: int) -> None:
    before = fixture(name)
    after, anonymizer = anonymize(before)
    names = Pseudonyms(KEY)
    old_specs, new_specs = last_specs(before), last_specs(after)
    matched = 0
    for gvk, entries in before.index.items():
        for ns_name, value in entries.items():
            new_value = after.index[gvk][rename_ns_name(names, ns_name)]
            if (gvk, ns_name) in old_specs and value == hashing.spec_hash(old_specs[(gvk, ns_name)]):
                matched += 1
                assert new_value == hashing.spec_hash(new_specs[(gvk, rename_ns_name(names, ns_name))])
            else:
                assert new_value != value  # replaced: the original hash could confirm a guessed spec
    assert matched == recomputed == anonymizer.rehashed.index_recomputed
    assert anonymizer.rehashed.index_replaced == sum(map(len, before.index.values())) - recomputed


def test_bare_pods_lifecycles_are_keyed_by_the_new_pod_specs() -> None:
    before = fixture("bare-pods")
    after, anonymizer = anonymize(before)
    pods = {f"{o['metadata']['namespace']}/{o['metadata']['name']}": o for e in after.events for o in e["applied_objs"]}
    assert len(after.pod_lifecycles) == 4
    for (owner, ns_name), by_hash in after.pod_lifecycles.items():
        assert owner == "v1.Pod"
        assert list(by_hash) == [hashing.pod_spec_hash(pods[ns_name]["spec"])] != [2151974655102796215]
    assert (anonymizer.rehashed.pod_specs_recomputed, anonymizer.rehashed.pod_specs_replaced) == (4, 0)


def test_cronjob_lifecycles_are_keyed_by_the_new_template_as_admitted() -> None:
    before = fixture("cronjob")
    after, _ = anonymize(before)
    def template(trace: traceformat.Trace) -> dict[str, Any]:
        spec: dict[str, Any] = trace.events[1]["applied_objs"][0]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        return spec

    assert [list(v) for v in before.pod_lifecycles.values()] == [[hashing.pod_spec_hash({**template(before), **ADMITTED})]]
    assert [list(v) for v in after.pod_lifecycles.values()] == [[hashing.pod_spec_hash({**template(after), **ADMITTED})]]
    assert list(after.pod_lifecycles.values())[0] != list(before.pod_lifecycles.values())[0]


@pytest.mark.parametrize("name", FIXTURES)
def test_no_original_name_namespace_or_image_is_left(name: str) -> None:
    before = fixture(name)
    data = traceformat.encode_trace(anonymize(before)[0])
    originals: set[str] = set()
    for event in before.events:
        for obj in (*event["applied_objs"], *event["deleted_objs"]):
            originals |= {obj["metadata"]["name"], obj["metadata"].get("namespace", "")}
            originals |= strings(obj["metadata"].get("labels", {})) | strings(obj["metadata"].get("annotations", {}))
            originals |= {c["image"] for c in _containers(obj)} | {c["name"] for c in _containers(obj)}
            originals |= {e.get("value", "") for c in _containers(obj) for e in c.get("env", ())}
    originals |= {k.split("/")[-1] for keys in before.index.values() for k in keys}
    originals |= {k.split("/")[0] for keys in before.index.values() for k in keys}
    originals -= KEPT_NAMESPACES | KEPT_VALUES
    originals = {s for s in originals if not s.isdigit()}  # a short number is found anywhere in the bytes (a count, a digest)
    assert originals
    assert sorted(s for s in originals if traceformat.dumps_object(s) in data) == []
    assert sorted(s for s in originals if s.encode() in data) == []  # not even inside a path or a longer string


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj.get("spec") or {}
    if obj["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]["template"]["spec"]
    elif "template" in spec:
        spec = spec["template"]["spec"]
    return [*spec.get("initContainers", ()), *spec.get("containers", ())]


@pytest.mark.parametrize("name", FIXTURES)
def test_names_stay_valid_kubernetes_names(name: str) -> None:
    after, _ = anonymize(fixture(name))
    for event in after.events:
        for obj in (*event["applied_objs"], *event["deleted_objs"]):
            meta = obj["metadata"]
            assert DNS_SUBDOMAIN.fullmatch(meta["name"]) and DNS_LABEL.fullmatch(meta["namespace"])
            assert all(LABEL_VALUE.fullmatch(v) and len(v) <= 63 for v in meta.get("labels", {}).values())
            for container in _containers(obj):
                assert DNS_LABEL.fullmatch(container["name"]) and IMAGE.fullmatch(container["image"]), container


@pytest.mark.parametrize("name", FIXTURES)
def test_one_key_one_output_and_another_key_other_names(name: str) -> None:
    before = fixture(name)
    first, second, other = (traceformat.encode_trace(anonymize(before, key)[0]) for key in (KEY, KEY, OTHER_KEY))
    assert first == second != other
    assert index_keys(first).isdisjoint(index_keys(other))


@pytest.mark.parametrize("name", FIXTURES)
def test_the_input_is_left_unchanged(name: str) -> None:
    before = fixture(name)
    kept = copy.deepcopy(before)
    anonymize(before)
    assert before == kept


# --- the rules, on hand-written objects -----------------------------------------------------------------------

UID = "0b7e9a52-54c4-4d2e-9d2a-1d1f3c1e0a11"


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "payments", "namespace": "acme", "uid": UID, "labels": {"app": "payments", "tier": ""},
                     "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"kind\": \"Deployment\"}",
                                     "team": "payments-team"},
                     "managedFields": [{"manager": "kubectl"}]},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "payments"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["", "web"]}]},
            "template": {
                "metadata": {"labels": {"app": "payments", "tier": "web"}},
                "spec": {
                    "serviceAccountName": "payments-sa",
                    "nodeSelector": {"kubernetes.io/hostname": "node-7.acme.internal", "kubernetes.io/os": "linux"},
                    "containers": [{
                        "name": "api", "image": "registry.acme.io:5000/pay/api:v2.3@sha256:" + "ab" * 32,
                        "command": ["/bin/api"], "args": ["--db=db.acme.internal"],
                        "env": [{"name": "DB_HOST", "value": "db.acme.internal"},
                                {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "payments-secret", "key": "token"}}}],
                        "envFrom": [{"configMapRef": {"name": "payments-config"}}],
                        "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "1"}},
                        "volumeMounts": [{"name": "config", "mountPath": "/etc/payments"}],
                    }],
                    "volumes": [{"name": "config", "configMap": {"name": "payments-config"}},
                                {"name": "creds", "secret": {"secretName": "payments-secret"}}],
                    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "payments", "effect": "NoSchedule"}],
                },
            },
        },
        "status": {"replicas": 3},
    }


def test_selectors_still_select_their_pods_and_nothing_else_is_lost() -> None:
    names = Pseudonyms(KEY)
    out = Anonymizer(KEY).applied(deployment())
    spec, template = out["spec"], out["spec"]["template"]
    app, tier = names.label_key("app"), names.label_key("tier")
    assert spec["selector"]["matchLabels"] == {app: names.name("payments")} == {app: template["metadata"]["labels"][app]}
    assert spec["selector"]["matchExpressions"] == [{"key": tier, "operator": "In", "values": ["", template["metadata"]["labels"][tier]]}]
    assert out["metadata"]["labels"] == {app: names.name("payments"), tier: ""}
    assert out["metadata"]["uid"] == names.uid(UID) != UID
    assert "status" not in out and "managedFields" not in out["metadata"]
    assert out["metadata"]["annotations"] == {names.label_key("team"): names.name("payments-team")}
    assert spec["replicas"] == 3
    container = template["spec"]["containers"][0]
    assert container["resources"] == {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "1"}}
    assert container["env"][0] == {"name": names.env_name("DB_HOST"), "value": names.text("db.acme.internal")}
    assert container["args"] == [names.text("--db=db.acme.internal")]
    assert container["volumeMounts"] == [{"name": names.name("config"), "mountPath": "/" + names.text("etc/payments")}]
    assert template["spec"]["nodeSelector"] == {"kubernetes.io/hostname": names.name("node-7.acme.internal"), "kubernetes.io/os": "linux"}
    assert template["spec"]["tolerations"] == [{"key": names.label_key("dedicated"), "operator": "Equal", "value": names.name("payments"),
                                                "effect": "NoSchedule"}]


def test_references_follow_the_objects_they_name() -> None:
    names = Pseudonyms(KEY)
    objects = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "payments-sa", "namespace": "acme"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "payments-config", "namespace": "acme"},
         "data": {"app.yaml": "db: db.acme.internal"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "payments-secret", "namespace": "acme"}, "data": {"token": "c2VjcmV0"}},
        deployment(),
    ]
    trace = traceformat.Trace(version=2, config={"trackedObjects": {"apps/v1.Deployment": {"podSpecTemplatePaths": ["/spec/template"]}}},
                              events=[{"ts": 1, "applied_objs": objects, "deleted_objs": []}], index={}, pod_lifecycles={})
    broken = copy.deepcopy(trace)
    broken.events[0]["applied_objs"][1]["metadata"]["name"] = "elsewhere"
    assert [f.code for f in check_trace(broken)] == ["W0000", "E0003", "E0005"]  # the check below can fail
    after, _ = anonymize(trace)
    sa, config_map, secret, dep = after.events[0]["applied_objs"]
    assert findings(after) == []
    assert (config_map["metadata"]["name"], secret["metadata"]["name"], sa["metadata"]["name"]) == (
        names.name("payments-config"), names.name("payments-secret"), names.name("payments-sa"))
    assert config_map["data"] == {names.name("app.yaml"): names.text("db: db.acme.internal")} and secret["data"] == {names.name("token"): ""}
    pod = dep["spec"]["template"]["spec"]
    assert pod["volumes"][1]["secret"] == {"secretName": secret["metadata"]["name"]}
    assert pod["containers"][0]["env"][1]["valueFrom"]["secretKeyRef"] == {"name": secret["metadata"]["name"], "key": names.name("token")}


def test_statefulsets_services_jobs_and_autoscalers_keep_their_links() -> None:
    anonymizer = Anonymizer(KEY)
    sts = anonymizer.applied({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "acme"}, "spec": {
        "serviceName": "db-headless", "selector": {"matchLabels": {"app": "db"}},
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}}],
        "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"subdomain": "db-headless", "containers": [
            {"name": "db", "image": "postgres", "volumeMounts": [{"name": "data", "mountPath": "/var/lib/db"}]}]}}}})
    svc = anonymizer.applied({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db-headless", "namespace": "acme"},
                              "spec": {"selector": {"app": "db"}, "ports": [{"port": 5432}]}})
    hpa = anonymizer.applied({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "db", "namespace": "acme"},
                              "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"}, "maxReplicas": 5}})
    job = anonymizer.applied({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate", "namespace": "acme", "ownerReferences": [
        {"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": UID, "controller": True}]},
        "spec": {"selector": {"matchLabels": {"controller-uid": UID}}, "template": {"metadata": {"labels": {"controller-uid": UID}}, "spec": {
            "containers": [{"name": "m", "image": "migrate:latest"}]}}}})
    assert sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == sts["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][0]["name"]
    assert sts["spec"]["serviceName"] == sts["spec"]["template"]["spec"]["subdomain"] == svc["metadata"]["name"] != "db-headless"
    assert svc["spec"] == {"selector": sts["spec"]["selector"]["matchLabels"], "ports": [{"port": 5432}]}
    assert hpa["spec"]["scaleTargetRef"]["name"] == sts["metadata"]["name"] and hpa["spec"]["maxReplicas"] == 5
    owner = job["metadata"]["ownerReferences"][0]
    assert (owner["name"], owner["uid"], owner["controller"]) == (anonymizer.names.name("nightly"), anonymizer.names.uid(UID), True)
    controller_uid = anonymizer.names.label_key("controller-uid")
    assert job["spec"]["selector"]["matchLabels"] == {controller_uid: owner["uid"]} == job["spec"]["template"]["metadata"]["labels"]


def test_namespaces_are_renamed_as_namespaces_wherever_they_appear() -> None:
    anonymizer = Anonymizer(KEY)
    names = anonymizer.names
    namespace = anonymizer.applied({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "acme", "labels": {"kubernetes.io/metadata.name": "acme"}}})
    assert namespace["metadata"] == {"name": names.namespace("acme"), "labels": {"kubernetes.io/metadata.name": names.namespace("acme")}}
    stub = anonymizer.deleted({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "acme", "namespace": ""}})
    assert stub["metadata"] == {"name": names.namespace("acme"), "namespace": ""}
    index = anonymizer.index({"v1.Namespace": {"acme": 1}, "v1.ConfigMap": {"acme/settings": 2}})
    assert list(index["v1.Namespace"]) == [names.namespace("acme")]
    assert list(index["v1.ConfigMap"]) == [f"{names.namespace('acme')}/{names.name('settings')}"]


# --- the pseudonyms --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "image, shape",
    [
        ("busybox", rf"img-{DIGEST}"),
        ("busybox:latest", rf"img-{DIGEST}:latest"),
        ("registry.acme.io:5000/team/app", rf"img-{DIGEST}"),
        ("registry.acme.io:5000/team/app:1.2.3", rf"img-{DIGEST}:t-{DIGEST}"),
        ("app@sha256:" + "0" * 64, rf"img-{DIGEST}@sha256:[0-9a-f]{{64}}"),
        ("app:v1@sha256:" + "0" * 64, rf"img-{DIGEST}:t-{DIGEST}@sha256:[0-9a-f]{{64}}"),
        ("ledger:7.0", rf"img-{DIGEST}:t-{DIGEST}"),
        ("registry.acme.io:5000/ledger:3", rf"img-{DIGEST}:t-{DIGEST}"),
        ("pause:1.36", rf"img-{DIGEST}:t-{DIGEST}"),
        ("app:250m@sha256:" + "0" * 64, rf"img-{DIGEST}:t-{DIGEST}@sha256:[0-9a-f]{{64}}"),
    ],
    ids=["bare", "latest", "registry-port", "tag", "digest", "tag-digest", "numeric-tag", "integer-tag", "version-tag",
         "quantity-tag-digest"],
)
def test_an_image_keeps_its_shape(image: str, shape: str) -> None:
    assert re.fullmatch(shape, Pseudonyms(KEY).image(image))


@pytest.mark.parametrize(
    "role, value",
    [("namespace", "default"), ("namespace", "kube-system"), ("namespace", ""), ("name", "default"), ("name", "kube-root-ca.crt"),
     ("name", "kube-api-access-x7k2p"), ("text", ""), ("text", "true"), ("path", "/")],
)
def test_what_identifies_nothing_is_kept(role: str, value: str) -> None:
    assert getattr(Pseudonyms(KEY), role)(value) == value


def test_the_roles_share_one_digest_and_keep_their_shapes() -> None:
    names = Pseudonyms(KEY)
    digest = names.name("web")[len("obj-"):]
    assert (names.namespace("web"), names.text("web"), names.image("web")) == (f"ns-{digest}", f"val-{digest}", f"img-{digest}")
    assert names.generate_name("web-") == names.name("web") + "-"
    assert names.label_value("kubernetes.io/metadata.name", "web") == names.namespace("web")
    assert names.label_value("app", UID) == names.uid(UID) and re.fullmatch(r"[0-9a-f-]{36}", names.uid(UID))
    assert names.path("/etc/web") == "/" + names.text("etc/web") and names.path("etc/web") == names.text("etc/web")
    assert 0 <= names.opaque_hash(2**64 - 1) < 2**64 and names.opaque_hash(1) == Pseudonyms(KEY).opaque_hash(1) != names.opaque_hash(2)


def test_keys() -> None:
    with pytest.raises(UsageError, match="key is empty"):
        Anonymizer(b"")
    assert len(new_key()) == 32 and new_key() != new_key()


# --- generated traces ------------------------------------------------------------------------------------------

NAME = st.from_regex(r"[a-z][a-z0-9-]{0,6}[a-z0-9]", fullmatch=True)


def _pod_spec(image: str) -> dict[str, Any]:
    return {"containers": [{"name": "main", "image": image, "resources": {"requests": {"cpu": "100m"}}}]}


def _pod(namespace: str, name: str, image: str, owner: tuple[str, str] | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": {"app": image}}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner[0], "uid": owner[1], "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": _pod_spec(image)}


@st.composite
def workloads(draw: st.DrawFn) -> traceformat.Trace:
    """Deployments with their ReplicaSets and pods (some owners left out of the trace), bare pods, deletions and
    lifecycles keyed as the recorder keys them."""
    namespaces = draw(st.lists(st.sampled_from(["default", "acme", "team-a", "kube-system"]), min_size=1, max_size=3, unique=True))
    objects: list[dict[str, Any]] = []
    lifecycles: traceformat.Lifecycles = {}
    for _ in range(draw(st.integers(0, 3))):
        namespace, name, image = draw(st.sampled_from(namespaces)), draw(NAME), draw(NAME)
        owner_in_trace = draw(st.booleans())
        if owner_in_trace:
            objects.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
                            "spec": {"replicas": draw(st.integers(0, 9)), "selector": {"matchLabels": {"app": image}},
                                     "template": {"metadata": {"labels": {"app": image}}, "spec": _pod_spec(image)}}})
        rs = (f"{name}-{draw(NAME)}", str(draw(st.uuids())))
        if draw(st.booleans()):
            objects.append({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": rs[0], "namespace": namespace, "uid": rs[1],
                            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "uid": "u", "controller": True}]}})
        for _ in range(draw(st.integers(0, 3))):
            objects.append(_pod(namespace, f"{rs[0]}-{draw(NAME)}", image, rs))
            key = ("apps/v1.Deployment", f"{namespace}/{name}") if owner_in_trace else ("v1.Pod", f"{namespace}/{objects[-1]['metadata']['name']}")
            # the recorder hashes a pod as the API server admitted it: a template's spec with admission's defaults
            admitted = {**ADMITTED, **_pod_spec(image)} if owner_in_trace else _pod_spec(image)
            lifecycles.setdefault(key, {}).setdefault(hashing.pod_spec_hash(admitted), []).append(
                draw(st.sampled_from([{"Running": 10}, {"Finished": [10, 20]}])))
    for _ in range(draw(st.integers(0, 3))):
        objects.append(_pod(draw(st.sampled_from(namespaces)), draw(NAME), draw(NAME), None))
    return _as_trace(draw, objects, lifecycles)


def _as_trace(draw: st.DrawFn, objects: list[dict[str, Any]], lifecycles: traceformat.Lifecycles) -> traceformat.Trace:
    events: list[dict[str, Any]] = []
    ts, at = 100, 0
    while at < len(objects) or not events:
        size = draw(st.integers(0, 3))
        applied = objects[at:at + size]
        deleted = [{"apiVersion": o["apiVersion"], "kind": o["kind"], "metadata": {"name": o["metadata"]["name"], "namespace": o["metadata"]["namespace"]}}
                   for o in objects[:at] if draw(st.integers(0, 5)) == 0]
        events.append({"ts": ts, "applied_objs": applied, "deleted_objs": deleted})
        at, ts = at + size, ts + draw(st.integers(0, 30))
    index: dict[str, dict[str, int]] = {}
    for obj in objects:
        key = object_key(obj)
        assert key is not None
        index.setdefault(str(key.gvk), {})[key.ns_name] = hashing.spec_hash(obj.get("spec"))
    index.setdefault("v1.Pod", {})[f"{objects[0]['metadata']['namespace'] if objects else 'acme'}/gone-before"] = draw(st.integers(0, 2**64 - 1))
    config = {"trackedObjects": {"apps/v1.Deployment": {"podSpecTemplatePaths": ["/spec/template"], "trackLifecycle": True},
                                 "v1.Pod": {"podSpecTemplatePaths": [""], "trackLifecycle": True}}}
    return traceformat.Trace(version=2, config=config, events=events, index=index, pod_lifecycles=lifecycles)


@pytest.mark.slow  # anonymizes whole fixtures: seconds of CPU
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_anonymization_keeps_every_count_and_owner_relation_inspect_reports(trace: traceformat.Trace) -> None:
    after, anonymizer = anonymize(trace)
    check_replays_the_same(trace, after)
    assert anonymizer.rehashed.pod_specs_replaced == 0  # every pod spec of a lifecycle is in the trace
    assert anonymizer.rehashed.index_recomputed == sum(map(len, trace.index.values())) - 1  # all but "gone-before"


@pytest.mark.slow  # anonymizes whole fixtures: seconds of CPU
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_one_key_gives_identical_bytes_and_another_key_other_names(trace: traceformat.Trace) -> None:
    first, second, other = (traceformat.encode_trace(anonymize(trace, key)[0]) for key in (KEY, KEY, OTHER_KEY))
    assert first == second
    assert index_keys(first).isdisjoint(index_keys(other))


def test_affinities_rename_hostnames_pod_labels_and_namespaces_and_keep_node_labels() -> None:
    names = Pseudonyms(KEY)
    spec = {"containers": [], "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
                "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-7"]},
                                     {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-west-1a"]}],
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-8"]}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {
                "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["node-9"]}]}}]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": "payments"}}, "namespaces": ["acme"], "topologyKey": "kubernetes.io/hostname",
            "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["acme"]}]}}]},
    }}
    out = Anonymizer(KEY).applied({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "acme"}, "spec": spec})
    node = out["spec"]["affinity"]["nodeAffinity"]
    (term,) = node["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert [e["values"] for e in term["matchExpressions"]] == [[names.name("node-7")], ["eu-west-1a"]]
    assert term["matchFields"][0]["values"] == [names.name("node-8")]
    assert node["preferredDuringSchedulingIgnoredDuringExecution"][0]["preference"]["matchExpressions"][0]["values"] == [names.name("node-9")]
    (pod_term,) = out["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert pod_term == {"labelSelector": {"matchLabels": {names.label_key("app"): names.name("payments")}}, "namespaces": [names.namespace("acme")],
                        "topologyKey": "kubernetes.io/hostname", "namespaceSelector": {"matchExpressions": [
                            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": [names.namespace("acme")]}]}}


@pytest.mark.parametrize("name", FIXTURES)
def test_past_the_spools_memory_the_specs_kept_in_a_file_give_the_same_result(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from kubectl_sktrace.trace.anonymizing import anonymize as anonymize_module

    in_memory = traceformat.encode_trace(anonymize(fixture(name))[0])
    monkeypatch.setattr(anonymize_module, "_SPOOL_MEMORY", 1)
    assert traceformat.encode_trace(anonymize(fixture(name))[0]) == in_memory


def test_a_bytes_spool_gives_back_what_it_was_given_before_and_after_it_moves_to_a_file() -> None:
    spool = traceformat.BytesSpool(memory=100)
    blobs = [bytes([n]) * (n * 7 % 40) for n in range(60)]
    refs = []
    for blob in blobs:
        refs.append(spool.add(blob))
        assert spool.get(refs[len(refs) // 2]) == blobs[len(refs) // 2]  # reads between writes
    assert spool._file._rolled  # past 100 bytes, in a temporary file
    assert [spool.get(ref) for ref in reversed(refs)] == blobs[::-1]
    spool.close()


def test_a_spec_no_hash_is_defined_for_gets_a_keyed_hash_instead_of_an_error() -> None:
    """A hand-made or damaged trace (bytes in a spec, a null container): index and pod_lifecycles still rename, their
    hashes replaced by keyed u64s, as unknown ones are."""
    from kubectl_sktrace.trace.anonymizing.anonymize import Anonymizer

    anonymizer = Anonymizer(b"k" * 32)
    anonymizer.config({"trackedObjects": {"apps/v1.Deployment": {"podSpecTemplatePaths": ["/spec/template"], "trackLifecycle": True}}})
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w", "namespace": "s"},
                  "spec": {"template": {"spec": {"containers": [None]}}, "blob": b"\x00"}}
    anonymizer.event({"ts": 1, "applied_objs": [deployment], "deleted_objs": []})
    (index,) = anonymizer.index({"apps/v1.Deployment": {"s/w": 5}})["apps/v1.Deployment"].values()
    ((owner, by_hash),) = anonymizer.pod_lifecycles({("apps/v1.Deployment", "s/w"): {7: [{"start_ts": 1, "end_ts": 2}]}}).items()
    assert index != 5 and list(by_hash) != [7] and "s/w" not in owner[1]
    assert anonymizer.report()["hashesReplaced"] == 2


def test_the_pseudonym_map_gives_each_pseudonym_as_the_trace_has_it() -> None:
    """An env variable's name is upper-cased and a port's name cut to 15 characters in the trace: the map gives them so,
    so that the owner finds each one in the trace."""
    obj = deployment()
    container = obj["spec"]["template"]["spec"]["containers"][0]
    container["ports"] = [{"name": "metrics", "containerPort": 9090}]
    container["readinessProbe"] = {"httpGet": {"path": "/ready", "port": "metrics"}}
    anonymizer = Anonymizer(KEY, record=True)
    out = traceformat.dumps_object(anonymizer.applied(obj))
    rows = {row["original"]: row["pseudonym"] for row in anonymizer.pseudonym_map() if row["original"] in ("DB_HOST", "TOKEN", "metrics")}
    assert set(rows) == {"DB_HOST", "TOKEN", "metrics"}
    assert rows["DB_HOST"].startswith("E_") and rows["DB_HOST"].isupper() and len(rows["metrics"]) == 15
    for pseudonym in rows.values():
        assert traceformat.dumps_object(pseudonym) in out
