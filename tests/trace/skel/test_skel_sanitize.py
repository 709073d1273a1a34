"""The built-in ``sanitize``: SimKube's example's effect, for every pod template, on hand-written objects."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.trace.skel import BUILTINS, Transformer, builtin


def pod_spec() -> dict[str, Any]:
    return {
        "serviceAccountName": "robot", "serviceAccount": "robot", "nodeSelector": {"disk": "ssd"},
        "initContainers": [{"name": "init", "image": "init:1", "env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "tok", "key": "t"}}}],
                            "volumeMounts": [{"name": "conf", "mountPath": "/conf"}]}],
        "containers": [{
            "name": "app", "image": "app:1",
            "env": [{"name": "PLAIN", "value": "1"}, {"name": "CM", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
                    {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "SEC", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "k"}}}],
            "envFrom": [{"configMapRef": {"name": "cm"}}, {"prefix": "X_", "secretRef": {"name": "sec"}}],
            "volumeMounts": [{"name": "conf", "mountPath": "/conf"}, {"name": "scratch", "mountPath": "/tmp"},
                             {"name": "creds", "mountPath": "/creds"}, {"name": "kube-api-access-x", "mountPath": "/var/run/secrets"}],
        }],
        "volumes": [{"name": "conf", "configMap": {"name": "cm"}}, {"name": "scratch", "emptyDir": {}},
                    {"name": "creds", "secret": {"secretName": "sec"}}, {"name": "kube-api-access-x", "projected": {"sources": []}}],
    }


def sanitized_pod_spec() -> dict[str, Any]:
    return {
        "nodeSelector": {"disk": "ssd"},
        "initContainers": [{"name": "init", "image": "init:1", "env": [], "volumeMounts": []}],
        "containers": [{
            "name": "app", "image": "app:1",
            "env": [{"name": "PLAIN", "value": "1"}, {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "envFrom": [],
            "volumeMounts": [{"name": "scratch", "mountPath": "/tmp"}, {"name": "kube-api-access-x", "mountPath": "/var/run/secrets"}],
        }],
        "volumes": [{"name": "scratch", "emptyDir": {}}, {"name": "kube-api-access-x", "projected": {"sources": []}}],
    }


def meta(kind: str, api: str = "apps/v1") -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind, "metadata": {"name": "x", "namespace": "ns", "labels": {"app": "x"}}}


def deployment() -> dict[str, Any]:
    return {**meta("Deployment"), "spec": {"replicas": 2, "template": {"metadata": {"labels": {"app": "x"}}, "spec": pod_spec()}},
            "status": {"replicas": 2}}


def cronjob() -> dict[str, Any]:
    return {**meta("CronJob", "batch/v1"), "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": pod_spec()}}}},
            "status": {"lastScheduleTime": "now"}}


def pod() -> dict[str, Any]:
    return {**meta("Pod", "v1"), "spec": pod_spec(), "status": {"phase": "Running"}}


def sanitize(*objs: Any) -> tuple[list[Any], Transformer]:
    transformer = Transformer(builtin("sanitize"), start_ts=0)
    event = transformer.apply({"ts": 0, "applied_objs": copy.deepcopy(list(objs)), "deleted_objs": []})
    assert event is not None
    return event["applied_objs"], transformer


def test_it_is_the_one_builtin_and_a_name_is_not_a_file() -> None:
    assert BUILTINS == ("sanitize",)
    assert builtin("sanitize").source == "sanitize"
    with pytest.raises(UsageError, match=r"^'sanitise' is not a built-in transform \(built in: sanitize\); give a SKEL file's path$"):
        builtin("sanitise")


@pytest.mark.parametrize(
    ("make", "where"),
    [(deployment, ("spec", "template", "spec")), (cronjob, ("spec", "jobTemplate", "spec", "template", "spec")), (pod, ("spec",))],
    ids=["deployment", "cronjob", "pod"],
)
def test_every_pod_template_loses_its_service_account_and_its_configmap_and_secret_references(make: Any, where: tuple[str, ...]) -> None:
    (out,), transformer = sanitize(make())
    spec = out
    for key in where:
        spec = spec[key]
    assert spec == sanitized_pod_spec()
    assert "status" not in out
    # status, 2 service-account fields, 3 env entries, 2 envFrom sources, 3 mounts, 2 volumes: a command each
    assert (transformer.events_matched, transformer.resources_modified) == (13, 13)


def test_other_objects_lose_only_their_status_and_a_clean_object_is_left_alone() -> None:
    service = {**meta("Service", "v1"), "spec": {"ports": [{"port": 80}], "template": "not a pod template"}, "status": {"loadBalancer": {}}}
    config_map = {**meta("ConfigMap", "v1"), "data": {"volumes": "x"}}
    out, transformer = sanitize(service, config_map)
    assert out == [{**meta("Service", "v1"), "spec": {"ports": [{"port": 80}], "template": "not a pod template"}}, config_map]
    assert (transformer.events_matched, transformer.resources_modified) == (1, 1)


def test_sanitizing_twice_changes_nothing_more() -> None:
    once, _ = sanitize(deployment(), cronjob(), pod())
    twice, transformer = sanitize(*once)
    assert twice == once
    assert (transformer.events_matched, transformer.resources_modified) == (0, 0)


def test_a_deleted_object_is_sanitized_too() -> None:
    transformer = Transformer(builtin("sanitize"), start_ts=0)
    event = transformer.apply({"ts": 0, "applied_objs": [], "deleted_objs": [deployment()]})
    assert event is not None and event["deleted_objs"][0]["spec"]["template"]["spec"] == sanitized_pod_spec()
