"""The emulator's audit log over real HTTP: the policy's levels and rules, the stages, the fields a real v1.28 server
writes (NOTES.md, "Audit log"), Status answers for deletes, Scale answers for the subresource, failed requests, and the
writes its controllers make."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.emulator.test_emulator_server import call, make_pod

from sktrace_emulator import Emulator
from sktrace_emulator.audit import Policy, PolicyError, rfc3339_micro

pytestmark = pytest.mark.timeout(30)

DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
          "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                   "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}}


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_request_response_logs_every_write_with_its_object_after_the_write(emulator: Emulator, tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    emulator.enable_audit(log)
    assert call(emulator, "POST", "/apis/apps/v1/namespaces/default/deployments", DEPLOY)[0] == 201
    assert call(emulator, "PATCH", "/apis/apps/v1/namespaces/default/deployments/web", {"metadata": {"labels": {"a": "b"}}},
                headers={"Content-Type": "application/merge-patch+json"})[0] == 200
    assert call(emulator, "PATCH", "/apis/apps/v1/namespaces/default/deployments/web/scale", {"spec": {"replicas": 4}},
                headers={"Content-Type": "application/merge-patch+json"})[0] == 200
    uid = emulator.get("apps/v1", "Deployment", "default", "web")["metadata"]["uid"]  # type: ignore[index]
    assert call(emulator, "DELETE", "/apis/apps/v1/namespaces/default/deployments/web")[0] == 200
    assert call(emulator, "GET", "/apis/apps/v1/namespaces/default/deployments/web")[0] == 404
    emulator.disable_audit()
    events = lines(log)
    assert [(e["verb"], e["objectRef"].get("subresource"), e["responseStatus"]["code"]) for e in events] == [
        ("create", None, 201), ("patch", None, 200), ("patch", "scale", 200), ("delete", None, 200), ("get", None, 404)]
    assert {e["stage"] for e in events} == {"ResponseComplete"} and {e["level"] for e in events} == {"RequestResponse"}
    create, patch, scaled, deleted, missing = events
    # the name the body gives, as a real server logs a create (measured: kubectl create deployment)
    assert create["objectRef"] == {"resource": "deployments", "namespace": "default", "name": "web", "apiGroup": "apps", "apiVersion": "v1"}
    assert create["responseObject"]["metadata"]["uid"] == uid and create["requestURI"] == "/apis/apps/v1/namespaces/default/deployments"
    assert create["user"]["username"] == emulator.user and create["requestReceivedTimestamp"] <= create["stageTimestamp"]
    assert patch["requestObject"] == {"metadata": {"labels": {"a": "b"}}} and patch["responseObject"]["metadata"]["labels"] == {"a": "b"}
    assert scaled["responseObject"]["kind"] == "Scale" and scaled["responseObject"]["spec"] == {"replicas": 4}
    assert deleted["responseObject"]["kind"] == "Status"
    assert deleted["responseObject"]["details"] == {"name": "web", "group": "apps", "kind": "deployments", "uid": uid}
    assert "uid" not in deleted["objectRef"]  # measured on v1.28: a delete's objectRef names no uid (its answer does)
    assert missing["responseStatus"]["reason"] == "NotFound" and "responseObject" in missing


def test_the_policy_chooses_levels_by_verb_and_resource_and_omits_stages(emulator: Emulator, tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    emulator.enable_audit(log, {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [
        {"level": "None", "verbs": ["get", "list", "watch"]},
        {"level": "Metadata", "resources": [{"group": "", "resources": ["secrets", "pods/status"]}]},
        {"level": "Request", "resources": [{"group": "", "resources": ["configmaps"]}], "omitStages": ["RequestReceived"]},
        {"level": "RequestResponse", "resources": [{"group": "", "resources": ["pods"]}], "omitStages": ["RequestReceived"]},
    ]})
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"}, "data": {"k": "dg=="}}
    assert call(emulator, "POST", "/api/v1/namespaces/default/secrets", secret)[0] == 201
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}, "data": {"k": "v"}}
    assert call(emulator, "POST", "/api/v1/namespaces/default/configmaps", cm)[0] == 201
    assert call(emulator, "POST", "/api/v1/namespaces/default/pods", make_pod("p"))[0] == 201
    assert call(emulator, "GET", "/api/v1/namespaces/default/pods")[0] == 200
    assert call(emulator, "POST", "/api/v1/namespaces/default/services", {"apiVersion": "v1", "kind": "Service",
                                                                           "metadata": {"name": "x"}, "spec": {"ports": [{"port": 80}]}})[0] == 201
    emulator.disable_audit()
    got = [(e["objectRef"]["resource"], e["stage"], e["level"], "requestObject" in e, "responseObject" in e) for e in lines(log)]
    assert got == [("secrets", "RequestReceived", "Metadata", False, False), ("secrets", "ResponseComplete", "Metadata", False, False),
                   ("configmaps", "ResponseComplete", "Request", True, False), ("pods", "ResponseComplete", "RequestResponse", True, True)]


def test_a_bad_policy_is_refused() -> None:
    with pytest.raises(PolicyError, match="level"):
        Policy.of({"rules": [{"verbs": ["get"]}]})
    with pytest.raises(PolicyError, match="stage"):
        Policy.of({"rules": [{"level": "None"}], "omitStages": ["Nope"]})


def test_writes_of_the_controllers_are_logged_as_requests_of_their_own(emulator: Emulator, tmp_path: Path) -> None:
    """The garbage collector's cascade, a pod's graceful deletion answered with the object, then its removal; a kubelet's
    status write as ``pods/status``."""
    log = tmp_path / "audit.log"
    emulator.enable_audit(log)
    owner = emulator.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner", "namespace": "default"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    pod = make_pod("p")
    pod["metadata"]["ownerReferences"] = [ref]
    pod["spec"]["nodeName"] = "node-1"
    emulator.create(pod)
    created = emulator.get("v1", "Pod", "default", "p")
    assert created is not None
    emulator.update_status({**created, "status": {"phase": "Running"}})
    assert call(emulator, "DELETE", "/api/v1/namespaces/default/configmaps/owner")[0] == 200
    emulator.disable_audit()
    got = [(e["verb"], e["objectRef"]["resource"], e["objectRef"].get("subresource"), e["user"]["username"],
            (e.get("responseObject") or {}).get("kind")) for e in lines(log)]
    assert got == [
        ("create", "configmaps", None, "system:kube-controller-manager", "ConfigMap"),
        ("create", "pods", None, "system:kube-controller-manager", "Pod"),
        ("patch", "pods", "status", "system:kube-controller-manager", "Pod"),
        ("delete", "pods", None, "system:serviceaccount:kube-system:generic-garbage-collector", "Pod"),
        ("delete", "pods", None, "system:node:node-1", "Pod"),  # the kubelet's final delete, grace 0: the Pod again
        ("delete", "configmaps", None, emulator.user, "Status"),
    ]


def test_times_are_rfc3339_with_microseconds() -> None:
    assert rfc3339_micro(1_800_000_000.25) == "2027-01-15T08:00:00.250000Z"
    assert rfc3339_micro(1_800_000_000.9999996) == "2027-01-15T08:00:01.000000Z"


def test_off_the_emulator_keeps_no_log(emulator: Emulator) -> None:
    assert emulator.store.audit is None
