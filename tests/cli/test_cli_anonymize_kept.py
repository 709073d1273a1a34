"""``kubectl sktrace transform TRACE --anonymize``: what an owner wrote never survives because of what it looks like.

A number, a quantity or a timestamp is kept only in a field typed to hold one (a resource quantity, ``maxSurge``, a
port); in a free-text field (env values, arguments, hostnames, label values) it is replaced as any other string. The
values of ``kubernetes.io/os`` and ``kubernetes.io/arch`` are kept only when they are Go's names, and listed for
review. Only Kubernetes' well-known keys are kept whole: any other key under ``kubernetes.io/`` keeps that prefix and
loses its name, under a prefix Kubernetes does not use (``team.kubernetes.io``) it is replaced whole.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kubectl_sktrace.cli import cli
from kubectl_sktrace.trace.files import format as traceformat

KEY = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
LOOK_LIKE_NUMBERS = ("123456789012", "4111111111111111", "1234.5678", "2024-01-01T00:00:00Z", "31337", "12345")
OWNERS_KEYS = ("kubernetes.io/acme-payments-prod-eu", "team.kubernetes.io/acme-payments", "node-role.kubernetes.io/acme-gpu")


def deployment(name: str, template_labels: dict[str, str], pod_spec: dict[str, Any], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "shop", "labels": dict(template_labels), "annotations": annotations or {}},
            "spec": {"replicas": 2, "selector": {"matchLabels": template_labels},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                     "template": {"metadata": {"labels": template_labels}, "spec": pod_spec}}}


def container(**more: Any) -> dict[str, Any]:
    return {"name": "app", "image": "shop/app:1", "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
            "resources": {"requests": {"cpu": "500m", "memory": "64Mi"}, "limits": {"cpu": "1"}},
            "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}}, **more}


def anonymized(tmp_path: Path, objects: list[dict[str, Any]]) -> tuple[bytes, list[dict[str, Any]], str]:
    """The objects in a one-event trace through ``transform --anonymize``: the output's bytes, its objects, stderr."""
    trace = traceformat.Trace(version=2, config={"trackedObjects": {"apps/v1.Deployment": {"podSpecTemplatePaths": ["/spec/template"]}}},
                              events=[{"ts": 100, "applied_objs": objects, "deleted_objs": []}], index={}, pod_lifecycles={})
    source, out = tmp_path / "in.sktrace", tmp_path / "out.sktrace"
    source.write_bytes(traceformat.encode_trace(trace))
    result = CliRunner().invoke(cli, ["transform", str(source), "--anonymize", "--anonymize-key", KEY, "-O", str(out)],
                                prog_name="kubectl sktrace")
    assert result.exit_code == 0, result.output
    data = out.read_bytes()
    return data, traceformat.read_trace(out).events[0]["applied_objs"], result.stderr


def test_free_text_that_looks_like_a_number_a_quantity_or_a_timestamp_is_replaced(tmp_path: Path) -> None:
    env = [{"name": f"V{i}", "value": value} for i, value in enumerate(LOOK_LIKE_NUMBERS[:4])]
    spec = {"hostname": "12345", "containers": [container(env=env, args=["31337"])]}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
               "spec": {"selector": {"build": "12345"}, "ports": [{"port": 80, "targetPort": 8080}, {"port": 81, "targetPort": "8081"}]}}
    data, (deploy, svc), _ = anonymized(tmp_path, [deployment("web", {"build": "12345"}, spec), service])
    assert [value for value in LOOK_LIKE_NUMBERS if value.encode() in data] == []
    pod = deploy["spec"]["template"]["spec"]
    (app,) = pod["containers"]
    # the same string, the same pseudonym: a hostname and a label value equal before are equal after, selectors still select
    (build,) = deploy["spec"]["template"]["metadata"]["labels"].values()
    assert pod["hostname"] == build != "12345" and svc["spec"]["selector"] == deploy["spec"]["template"]["metadata"]["labels"]
    assert all(e["value"].startswith("val-") for e in app["env"]) and app["args"][0].startswith("val-")
    # what the replay needs is kept: quantities, ports, maxSurge
    assert app["resources"] == {"requests": {"cpu": "500m", "memory": "64Mi"}, "limits": {"cpu": "1"}}
    assert app["ports"][0]["containerPort"] == 8080 and app["readinessProbe"]["httpGet"]["port"] == 8080
    assert [p["targetPort"] for p in svc["spec"]["ports"]] == [8080, "8081"]
    assert deploy["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": "25%", "maxUnavailable": 1}


def test_os_and_arch_values_are_kept_only_when_they_are_gos_names_and_are_listed_for_review(tmp_path: Path) -> None:
    def spec(os_name: str, arch: str) -> dict[str, Any]:
        return {"containers": [container()], "nodeSelector": {"kubernetes.io/os": os_name}, "affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/arch", "operator": "In", "values": [arch]}]}]}}}}

    data, (kept, replaced), stderr = anonymized(tmp_path, [deployment("a", {"app": "a"}, spec("linux", "arm64")),
                                                           deployment("b", {"app": "b"}, spec("acme-secret-os-name", "acme-secret-arch"))])
    assert b"acme-secret" not in data
    assert kept["spec"]["template"]["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert kept["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["arm64"]
    assert replaced["spec"]["template"]["spec"]["nodeSelector"]["kubernetes.io/os"].startswith("obj-")
    review = next(line for line in stderr.splitlines() if line.startswith("Review before sharing: "))
    assert "values of the label kubernetes.io/os kept (1)" in review and "values of the label kubernetes.io/arch kept (1)" in review


def test_only_well_known_keys_are_kept_whole(tmp_path: Path) -> None:
    annotations = {key: "x" for key in OWNERS_KEYS}
    labels = {"app.kubernetes.io/name": "web", "team.kubernetes.io/acme-payments": "y"}
    spec = {"containers": [container()], "nodeSelector": {"kubernetes.io/hostname": "node-1", "kubernetes.io/acme-payments-prod-eu": "z"},
            "tolerations": [{"key": "node-role.kubernetes.io/acme-gpu", "operator": "Exists", "effect": "NoSchedule"},
                            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]}
    data, (deploy,), _ = anonymized(tmp_path, [deployment("web", labels, spec, annotations)])
    assert b"acme" not in data
    renamed = list(deploy["metadata"]["annotations"])
    assert [key.partition("/")[0] for key in renamed] == ["kubernetes.io", renamed[1].partition("/")[0], "node-role.kubernetes.io"]
    assert renamed[1].startswith("obj-") and all(key.partition("/")[2].startswith("obj-") for key in renamed)
    pod = deploy["spec"]["template"]["spec"]
    # the same key is renamed the same wherever it is: a node selector and a toleration still name the node's label and taint
    assert list(pod["nodeSelector"]) == ["kubernetes.io/hostname", renamed[0]]
    assert [t["key"] for t in pod["tolerations"]] == [renamed[2], "node.kubernetes.io/not-ready"]
    assert list(deploy["metadata"]["labels"])[0] == "app.kubernetes.io/name"
    assert json.dumps(deploy["spec"]["template"]["spec"]["containers"][0]["resources"]) == '{"requests": {"cpu": "500m", "memory": "64Mi"}, "limits": {"cpu": "1"}}'
