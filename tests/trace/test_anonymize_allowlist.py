"""``--anonymize`` by allow-list: an owner's string survives nowhere, Kubernetes' vocabulary everywhere.

Objects of every kind the tracer follows by default (Deployment, StatefulSet, Job, CronJob), plus a Service, a
Secret, a ConfigMap, a ServiceAccount and a custom resource, carry a marker in every place an owner chooses a string
(map keys included). After anonymization: the marker is nowhere in the trace's bytes, every other string and every
field name is unchanged at its place, selectors still select, references resolve, ``validate`` finds the same and
``inspect`` counts the same; the pseudonyms have the syntax Kubernetes validates in their places.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_sktrace.trace.files import format as traceformat
from kubectl_sktrace.trace.reports import inspection
from kubectl_sktrace.trace.anonymizing.anonymize import Anonymizer
from kubectl_sktrace.trace.reports.validation import check_trace

KEY = b"a fixed key for tests, 32 bytes."
MARKER = "zqacmez"
ROOT = Path(__file__).resolve().parents[2]
QUALIFIED = re.compile(r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
IANA_SVC_NAME = re.compile(r"(?=.{1,15}\Z)(?=.*[a-z])[a-z0-9]+(-[a-z0-9]+)*")
CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")
UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
FRAGMENT = st.from_regex(r"[a-z]{0,3}", fullmatch=True)


@st.composite
def marked(draw: st.DrawFn) -> str:
    """A lowercase name with the marker inside (valid as a DNS label)."""
    return f"m{draw(FRAGMENT)}-{MARKER}-{draw(FRAGMENT)}x"


def pod_template(m: Any, labels: dict[str, str]) -> dict[str, Any]:
    """A pod template with a marker in every place an owner chooses a string; vocabulary elsewhere."""
    container = {
        "name": m("container"), "image": f"registry.{m('registry')}.io/{m('repo')}:{m('tag')}", "imagePullPolicy": "IfNotPresent",
        "command": [f"/usr/bin/{m('binary')}"], "args": [f"--flag={m('arg')}"], "workingDir": f"/srv/{m('dir')}",
        "env": [{"name": m("ENV").upper().replace("-", "_"), "value": m("env-value")},
                {"name": m("CM_ENV").upper().replace("-", "_"), "valueFrom": {"configMapKeyRef": {"name": m("config"), "key": m("data-key")}}},
                {"name": m("SECRET_ENV").upper().replace("-", "_"), "valueFrom": {"secretKeyRef": {"name": m("secret"), "key": m("secret-key")}}},
                {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}}},
                {"name": m("TEAM").upper().replace("-", "_"), "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{m('label-key')}']"}}}],
        "envFrom": [{"prefix": m("PREFIX").upper().replace("-", "_"), "configMapRef": {"name": m("config")}}],
        "ports": [{"name": m("port"), "containerPort": 8080, "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "250m", "memory": "64Mi", f"{m('vendor')}.io/{m('device')}": "1"},
                      "limits": {"cpu": "1", "memory": "128Mi"}},
        "readinessProbe": {"httpGet": {"path": f"/{m('ready')}", "port": m("port"), "scheme": "HTTP", "host": m("host"),
                                       "httpHeaders": [{"name": m("header"), "value": m("header-value")}]}, "periodSeconds": 10},
        "volumeMounts": [{"name": m("volume"), "mountPath": f"/etc/{m('mount')}", "mountPropagation": "None"}],
        "terminationMessagePolicy": "File",
    }
    spec = {
        "containers": [container], "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "serviceAccountName": m("account"),
        "priorityClassName": m("priority"), "schedulerName": m("scheduler"), "hostname": m("hostname"), "subdomain": m("subdomain"),
        "nodeSelector": {f"{m('pool-domain')}.io/{m('pool')}": m("pool-value"), "kubernetes.io/os": "linux"},
        "tolerations": [{"key": f"{m('taint-domain')}.io/{m('taint')}", "operator": "Equal", "value": m("taint-value"), "effect": "NoSchedule"},
                        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": f"{m('affinity-domain')}.io/{m('affinity')}", "operator": "In", "values": [m("affinity-value")]},
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]}},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "podAffinityTerm": {
                "labelSelector": {"matchLabels": labels}, "topologyKey": f"{m('topology-domain')}.io/{m('rack')}"}}]}},
        "imagePullSecrets": [{"name": m("pull-secret")}],
        "volumes": [{"name": m("volume"), "configMap": {"name": m("config"), "items": [{"key": m("data-key"), "path": m("file")}]}},
                    {"name": m("secret-volume"), "secret": {"secretName": m("secret")}}],
    }
    return {"metadata": {"labels": labels, "annotations": {f"{m('annotation-domain')}.io/{m('annotation')}": m("annotation-value")}},
            "spec": spec}


@st.composite
def objects(draw: st.DrawFn) -> list[dict[str, Any]]:
    cache: dict[str, str] = {}

    def m(place: str) -> str:  # one marked string per place; the same place, the same string (references resolve)
        if place not in cache and place.endswith("port"):  # a port's name: at most 15 characters
            cache[place] = f"p{draw(FRAGMENT)}-{MARKER}"
        if place not in cache:
            cache[place] = draw(marked()) if draw(st.booleans()) else f"{place.lower()}-{MARKER}"
        return cache[place]

    namespace = m("namespace")
    labels = {m("label-key"): m("label-value"), f"{m('label-domain')}.io/{m('team')}": m("team-value"), "app.kubernetes.io/name": m("app")}

    def meta(name: str, **more: Any) -> dict[str, Any]:
        return {"name": m(name), "namespace": namespace, "labels": dict(labels), **more}

    template = pod_template(m, labels)
    selector = {"matchLabels": {m("label-key"): m("label-value")},
                "matchExpressions": [{"key": f"{m('label-domain')}.io/{m('team')}", "operator": "In", "values": [m("team-value")]}]}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta("account")},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("config"), "data": {m("data-key"): f"{m('data')} = 1"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": meta("secret"), "type": "Opaque",
         "data": {m("secret-key"): "c2VjcmV0"}, "stringData": {m("string-key"): "s"}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("deployment", finalizers=[f"{m('finalizer-domain')}.io/{m('cleanup')}"]),
         "spec": {"replicas": draw(st.integers(0, 9)), "selector": selector, "template": template,
                  "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}}}},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta("statefulset"),
         "spec": {"serviceName": m("service"), "selector": selector, "template": template, "podManagementPolicy": "Parallel",
                  "volumeClaimTemplates": [{"metadata": {"name": m("claim")}, "spec": {
                      "accessModes": ["ReadWriteOnce"], "storageClassName": m("storage-class"), "resources": {"requests": {"storage": "1Gi"}}}}]}},
        {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta("cronjob"),
         "spec": {"schedule": "*/5 * * * *", "concurrencyPolicy": "Forbid", "jobTemplate": {"spec": {"template": template}}}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta("job", ownerReferences=[
            {"apiVersion": "batch/v1", "kind": "CronJob", "name": m("cronjob"), "uid": "0b7e9a52-54c4-4d2e-9d2a-1d1f3c1e0a11", "controller": True}]),
         "spec": {"completions": 1, "backoffLimit": 2, "template": template}},
        {"apiVersion": "v1", "kind": "Service", "metadata": meta("service"),
         "spec": {"type": "ClusterIP", "selector": dict(labels), "ports": [
             {"name": m("service-port"), "port": 80, "targetPort": m("port"), "protocol": "TCP"}]}},
        # a custom resource's apiVersion and kind are kept (the config names them) and reported for review
        {"apiVersion": "widgets.example.com/v1", "kind": "Widget", "metadata": meta("widget"),
         "spec": {"replicas": 2, "suspend": False, "image": m("widget-image"), "data": {m("setting"): m("setting-value")},
                  m("customField"): [m("tag")], "selector": selector, "labels": dict(labels)}},
    ]


def trace_of(objs: list[dict[str, Any]]) -> traceformat.Trace:
    config = {"trackedObjects": {kind: {"podSpecTemplatePaths": [path]} for kind, path in (
        ("apps/v1.Deployment", "/spec/template"), ("apps/v1.StatefulSet", "/spec/template"), ("batch/v1.Job", "/spec/template"),
        ("batch/v1.CronJob", "/spec/jobTemplate/spec/template"))}}
    index: dict[str, dict[str, int]] = {}
    for obj in objs:
        api = obj["apiVersion"]
        index.setdefault(f"{api}.{obj['kind']}" if "/" in api else f"{api}.{obj['kind']}", {})[f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"] = 1
    return traceformat.Trace(version=2, config=config, events=[{"ts": 10, "applied_objs": objs, "deleted_objs": []}], index=index,
                             pod_lifecycles={})


def anonymized(trace: traceformat.Trace) -> tuple[traceformat.Trace, Anonymizer]:
    anonymizer = Anonymizer(KEY)
    events = [anonymizer.event(event) for event in trace.events]
    return traceformat.Trace(version=trace.version, config=anonymizer.config(trace.config), events=events,
                             index=anonymizer.index(trace.index), pod_lifecycles=anonymizer.pod_lifecycles(trace.pod_lifecycles)), anonymizer


def assert_vocabulary_kept(before: Any, after: Any, where: str = "") -> None:
    """Walked side by side: a string or map key with the marker is replaced; every other one is kept at its place."""
    if isinstance(before, dict):
        assert isinstance(after, dict) and len(before) == len(after), where
        for (key, value), (new_key, new_value) in zip(before.items(), after.items()):
            assert (new_key != key) == (MARKER in key.lower()), f"{where}.{key} -> {new_key}"
            assert_vocabulary_kept(value, new_value, f"{where}.{key}")
    elif isinstance(before, list):
        assert isinstance(after, list) and len(before) == len(after), where
        for i, (value, new_value) in enumerate(zip(before, after)):
            assert_vocabulary_kept(value, new_value, f"{where}[{i}]")
    elif isinstance(before, str) and MARKER in before.lower():
        assert isinstance(after, str) and MARKER not in after.lower() and after != before, f"{where}: {before} -> {after}"
    elif where.endswith("].name") and before in ("POD_IP", "CPU"):  # env names: owner-chosen, replaced though they carry no marker
        assert after != before, where
    elif isinstance(before, str) and UID.fullmatch(before):  # uids are replaced, keeping their shape
        assert isinstance(after, str) and UID.fullmatch(after) and after != before, where
    elif before != "c2VjcmV0" and before != "s":  # a Secret's values become "" (docs/anonymize.md)
        assert after == before, f"{where}: {before!r} -> {after!r}"


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    if not all(labels.get(k) == v for k, v in selector.get("matchLabels", selector).items() if k != "matchExpressions"):
        return False
    return all(labels.get(e["key"]) in e["values"] for e in selector.get("matchExpressions", ()))


def check_links(objs: list[dict[str, Any]]) -> None:
    """Selectors select, references resolve (by the names and keys they hold)."""
    by_kind = {obj["kind"]: obj for obj in objs}
    config_map, secret, service = by_kind["ConfigMap"], by_kind["Secret"], by_kind["Service"]
    for kind in ("Deployment", "StatefulSet"):
        spec = by_kind[kind]["spec"]
        assert selects(spec["selector"], spec["template"]["metadata"]["labels"])
        assert selects(service["spec"]["selector"], spec["template"]["metadata"]["labels"])
    pod = by_kind["Deployment"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    port_names = {p["name"] for p in container["ports"]}
    assert service["spec"]["ports"][0]["targetPort"] in port_names and container["readinessProbe"]["httpGet"]["port"] in port_names
    assert container["env"][1]["valueFrom"]["configMapKeyRef"] == {"name": config_map["metadata"]["name"], "key": next(iter(config_map["data"]))}
    assert container["env"][2]["valueFrom"]["secretKeyRef"] == {"name": secret["metadata"]["name"], "key": next(iter(secret["data"]))}
    assert pod["volumes"][0]["configMap"]["items"][0]["key"] in config_map["data"]
    assert container["volumeMounts"][0]["name"] == pod["volumes"][0]["name"]
    assert pod["serviceAccountName"] == by_kind["ServiceAccount"]["metadata"]["name"]
    assert by_kind["StatefulSet"]["spec"]["serviceName"] == service["metadata"]["name"]
    assert by_kind["Job"]["metadata"]["ownerReferences"][0]["name"] == by_kind["CronJob"]["metadata"]["name"]
    widget = by_kind["Widget"]["spec"]
    assert selects(widget["selector"], by_kind["Deployment"]["spec"]["template"]["metadata"]["labels"])
    assert widget["labels"] == by_kind["Deployment"]["spec"]["template"]["metadata"]["labels"]
    anti = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
    assert selects(anti["labelSelector"], by_kind["Deployment"]["spec"]["template"]["metadata"]["labels"])


def pod_labels(objs: list[dict[str, Any]]) -> dict[str, str]:
    labels: dict[str, str] = next(o for o in objs if o["kind"] == "Deployment")["spec"]["template"]["metadata"]["labels"]
    return labels


def check_shapes(objs: list[dict[str, Any]]) -> None:
    """The pseudonyms have the syntax Kubernetes validates in their places."""
    for obj in objs:
        meta = obj["metadata"]
        assert DNS_SUBDOMAIN.fullmatch(meta["name"]) and DNS_SUBDOMAIN.fullmatch(meta["namespace"])
        assert all(QUALIFIED.fullmatch(k) and LABEL_VALUE.fullmatch(v) for k, v in meta["labels"].items())
        assert all(QUALIFIED.fullmatch(k) for k in meta.get("annotations", {}))
        assert all(CONFIG_KEY.fullmatch(k) for field in ("data", "stringData") for k in obj.get(field, {}))
    pod = next(o for o in objs if o["kind"] == "Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    team = container["env"][5]["valueFrom"]["fieldRef"]["fieldPath"]
    assert team == f"metadata.labels['{next(iter(pod_labels(objs)))}']"
    assert all(C_IDENTIFIER.fullmatch(e["name"]) for e in container["env"]) and C_IDENTIFIER.fullmatch(container["envFrom"][0]["prefix"])
    assert all(IANA_SVC_NAME.fullmatch(p["name"]) for p in container["ports"])
    assert all(QUALIFIED.fullmatch(k) for k in [*pod["nodeSelector"], *container["resources"]["requests"], pod["tolerations"][0]["key"]])


@pytest.mark.slow  # anonymizes whole fixtures: seconds of CPU
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objects())
def test_no_owner_string_survives_and_the_vocabulary_does(objs: list[dict[str, Any]]) -> None:
    before = trace_of(objs)
    after, anonymizer = anonymized(before)
    data = traceformat.encode_trace(after)
    assert MARKER.encode() not in data.lower()
    for old, new in zip(before.events[0]["applied_objs"], after.events[0]["applied_objs"]):
        assert_vocabulary_kept(old, new, old["kind"])
    check_links(after.events[0]["applied_objs"])
    check_shapes(after.events[0]["applied_objs"])
    assert [(f.code, f.ts) for f in check_trace(after)] == [(f.code, f.ts) for f in check_trace(before)] == []
    counts = [inspection.summarize(trace, path="t", with_events=False) for trace in (before, after)]
    assert [sorted((r["kind"], r["objects"]) for r in c["objects"]) for c in counts] == [sorted((r["kind"], r["objects"]) for r in counts[0]["objects"])] * 2
    assert [(c["events"], c["applied"], c["deleted"], c["index"]) for c in counts] == [(counts[0]["events"], counts[0]["applied"], counts[0]["deleted"], counts[0]["index"])] * 2
    # the values of kubernetes.io/os and kubernetes.io/arch are kept (Go's names), and listed for review as every kept value is
    assert set(anonymizer.report()["keptForReview"]) == {"apiVersion and kind of the custom resources widgets.example.com/v1.Widget kept",
                                                         "values of the label kubernetes.io/os kept", "values of the label kubernetes.io/arch kept"}


@pytest.mark.slow
def test_the_shipped_field_names_are_those_of_the_installed_kubernetes_package() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_apifields.py"), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


_KEYS = st.sampled_from(["spec", "template", "containers", "metadata", "labels", "annotations", "name", "env", "value", "ports", "selector",
                         "matchLabels", "matchExpressions", "key", "values", "data", "kind", "tolerations", "resources", "limits",
                         "nodeSelector", "other"]) | st.integers(-2**63, 2**64 - 1)
_ANY = st.recursive(st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.text(max_size=5) | st.binary(max_size=3),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4), max_leaves=25)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([("apps/v1", "Deployment"), ("v1", "Pod"), ("v1", "Namespace"), ("widgets.example.com/v1", "Widget"),
                        ("v1", "ConfigMap"), ("v1", "Secret"), ("v1", "Service")]), _ANY, _ANY)
@pytest.mark.slow  # hundreds of generated objects: seconds of CPU
def test_an_object_of_any_shape_is_anonymized_without_an_error(kind: tuple[str, str], spec: Any, metadata: Any) -> None:
    """A trace may hold what a built-in type does not declare (a newer API, a damaged object): never an exception. (Its
    integers are msgpack's: 64 bits.)"""
    out = Anonymizer(KEY).applied({"apiVersion": kind[0], "kind": kind[1], "metadata": metadata, "spec": spec, "data": spec})
    assert out["kind"] == kind[1]
