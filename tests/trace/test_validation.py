from __future__ import annotations

from pathlib import Path
from typing import Any

from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.trace.files.format import Trace, encode_trace
from kubectl_sktrace.trace.reports.validation import Finding, validate_trace

DEPLOY = GVK("apps", "v1", "Deployment")
CONFIG = {"trackedObjects": {"apps/v1.Deployment": {"podSpecTemplatePaths": ["/spec/template"]}}}


def _obj(api_version: str, kind: str, name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": "ns", "annotations": {}}, **extra}


def _deployment(pod_spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return _obj("apps/v1", "Deployment", "web", spec={"template": {"metadata": {}, "spec": pod_spec}}, **extra)


def _write(tmp_path: Path, events: list[dict[str, Any]], config: dict[str, Any] = CONFIG) -> str:
    path = tmp_path / "t.sktrace"
    path.write_bytes(encode_trace(Trace(version=2, config=config, events=events, index={}, pod_lifecycles={})))
    return str(path)


def _event(ts: int, applied: list[dict[str, Any]], deleted: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"ts": ts, "applied_objs": applied, "deleted_objs": deleted or []}


def test_clean_fixtures_have_no_findings(fixture_path) -> None:
    report = validate_trace(str(fixture_path))
    assert report.findings == ()
    assert not report.has_errors


WEB = ObjKey(DEPLOY, "ns", "web")

POD_SPEC = {
    "serviceAccountName": "runner",
    "initContainers": [{"name": "i", "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "init-secret", "key": "k"}}}]}],
    "containers": [
        {
            "name": "c",
            "env": [
                {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm-env", "key": "k"}}},
                {"name": "C", "valueFrom": {"secretKeyRef": {"name": "opt", "key": "k", "optional": True}}},
                {"name": "D", "value": "plain"},
            ],
            "envFrom": [{"secretRef": {"name": "all-secret"}}, {"configMapRef": {"name": "all-cm"}}],
        }
    ],
    "volumes": [
        {"name": "s", "secret": {"secretName": "vol-secret"}},
        {"name": "m", "configMap": {"name": "vol-cm"}},
        {"name": "p", "projected": {"sources": [{"configMap": {"name": "kube-root-ca.crt"}}]}},
    ],
}


def test_every_missing_reference_is_an_error(tmp_path) -> None:
    report = validate_trace(_write(tmp_path, [_event(5, [_deployment(POD_SPEC)])]))
    assert report.findings == (
        Finding("E0001", "ServiceAccount ns/runner is not in the trace before this event", 5, WEB),
        Finding("E0002", "env Secret ns/init-secret is not in the trace before this event", 5, WEB),
        Finding("E0003", "env ConfigMap ns/cm-env is not in the trace before this event", 5, WEB),
        Finding("E0002", "envFrom Secret ns/all-secret is not in the trace before this event", 5, WEB),
        Finding("E0003", "envFrom ConfigMap ns/all-cm is not in the trace before this event", 5, WEB),
        Finding("E0004", "volume Secret ns/vol-secret is not in the trace before this event", 5, WEB),
        Finding("E0005", "volume ConfigMap ns/vol-cm is not in the trace before this event", 5, WEB),
    )
    assert report.has_errors and report.errors == 7 and report.warnings == 0


def test_references_applied_earlier_count(tmp_path) -> None:
    deps = [
        _obj("v1", "ServiceAccount", "runner"),
        _obj("v1", "Secret", "init-secret"),
        _obj("v1", "ConfigMap", "cm-env"),
        _obj("v1", "Secret", "all-secret"),
        _obj("v1", "ConfigMap", "all-cm"),
        _obj("v1", "Secret", "vol-secret"),
    ]
    events = [_event(1, deps), _event(2, [_deployment(POD_SPEC)])]
    report = validate_trace(_write(tmp_path, events))
    assert [f.code for f in report.findings] == ["E0005"]


def test_a_deleted_reference_no_longer_counts(tmp_path) -> None:
    spec = {"containers": [{"name": "c"}], "volumes": [{"name": "m", "configMap": {"name": "cfg"}}]}
    cfg = _obj("v1", "ConfigMap", "cfg")
    events = [_event(1, [cfg]), _event(2, [], [cfg]), _event(3, [_deployment(spec)])]
    assert [(f.code, f.ts) for f in validate_trace(_write(tmp_path, events)).findings] == [("E0005", 3)]


def test_a_reference_applied_later_does_not_count(tmp_path) -> None:
    spec = {"containers": [{"name": "c"}], "serviceAccountName": "late"}
    events = [_event(1, [_deployment(spec)]), _event(2, [_obj("v1", "ServiceAccount", "late")])]
    assert [f.code for f in validate_trace(_write(tmp_path, events)).findings] == ["E0001"]


def test_status_is_a_warning(tmp_path) -> None:
    events = [_event(1, [_deployment({"containers": []}, status={"replicas": 1}), _obj("v1", "ConfigMap", "c", status={})])]
    report = validate_trace(_write(tmp_path, events))
    assert report.findings == (Finding("W0000", "status is present (SimKube drops it; export without --keep-status)", 1, WEB),)
    assert not report.has_errors and report.warnings == 1


def test_load_checks_are_error_findings(tmp_path) -> None:
    obj = _deployment({"containers": []})
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "X", "name": "o"}]
    obj["metadata"]["labels"] = {"a": "b", "n": 1}
    config = {"trackedObjects": {"example.com/v1.Thing": {}}}
    report = validate_trace(_write(tmp_path, [_event(1, [obj])], config=config))
    assert report.findings == (
        Finding(
            "L0001",
            "SimKube cannot load this config: the trace's config: trackedObjects.example.com/v1.Thing: example.com/v1.Thing is not a kind SimKube knows, so it needs podSpecTemplatePaths",
        ),
        Finding("L0002", "ownerReferences[0] has no uid; SimKube cannot load it", 1, WEB),
        Finding("L0003", "labels n: the value is not a string; SimKube cannot load it", 1, WEB),
    )


def test_kinds_without_templates_in_config_are_not_checked(tmp_path) -> None:
    pod = _obj("v1", "Pod", "p", spec={"serviceAccountName": "x", "containers": []})
    assert validate_trace(_write(tmp_path, [_event(1, [pod])])).findings == ()
    config = {"trackedObjects": {"v1.Pod": {"podSpecTemplatePaths": [""]}}}
    assert [f.code for f in validate_trace(_write(tmp_path, [_event(1, [pod])], config=config)).findings] == ["E0001"]
