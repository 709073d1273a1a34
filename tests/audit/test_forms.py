"""The managed clusters' forms of an audit event (audit/forms), one line of each, read as the API server's own line."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from tests.audit.test_lines import KEY, UID, WANTED, dep, line

from kubectl_sktrace.audit.forms import unwrap
from kubectl_sktrace.audit.lines import read_line

NATIVE = line("update", response=dep(3))
EVENT = json.loads(NATIVE)


def gives(raw: bytes) -> list[Any]:
    out = []
    for event in unwrap(raw):
        got = read_line(event, wanted=WANTED, line=1)
        out += list(got) if isinstance(got, tuple) else [got]
    return out


def test_the_api_servers_own_line_is_passed_as_it_is() -> None:
    assert unwrap(NATIVE) == (NATIVE,)


@pytest.mark.parametrize("wrapped", [
    {"messageType": "DATA_MESSAGE", "owner": "123456789012", "logGroup": "/aws/eks/prod/cluster",
     "logStream": "kube-apiserver-audit-0123", "subscriptionFilters": ["to-s3"],
     "logEvents": [{"id": "1", "timestamp": 1795860005250, "message": NATIVE.decode()}]},
    {"events": [{"logStreamName": "kube-apiserver-audit-0123", "timestamp": 1795860005250, "message": NATIVE.decode(),
                 "ingestionTime": 1795860006000, "eventId": "1"}]},
    {"time": "2026-11-28T10:00:05.0000000Z", "category": "kube-audit", "operationName": "Microsoft.ContainerService/managedClusters/diagnosticLogs/Read",
     "properties": {"log": NATIVE.decode() + "\n", "stream": "stdout", "pod": "kube-apiserver-68df4876bd-74k6n"}},
    {"records": [{"category": "kube-audit-admin", "properties": {"log": NATIVE.decode() + "\n", "stream": "stdout", "pod": "kube-apiserver-0"}}]},
    {"TimeGenerated": "2026-11-28T10:00:05.26Z", "Level": "RequestResponse", "AuditId": "a1", "Stage": "ResponseComplete", "RequestUri": "/x",
     "Verb": "update", "User": json.dumps({"username": "u"}), "ObjectRef": json.dumps(EVENT["objectRef"]),
     "ResponseStatus": json.dumps({"code": 200}), "ResponseObject": json.dumps(dep(3)), "RequestReceivedTime": EVENT["stageTimestamp"],
     "StageReceivedTime": EVENT["stageTimestamp"], "PodName": "kube-apiserver-0", "Type": "AKSAuditAdmin"},
    {"insertId": "a1", "logName": "projects/p/logs/cloudaudit.googleapis.com%2Factivity", "timestamp": "2026-11-28T10:00:05.250000123Z",
     "resource": {"type": "k8s_cluster", "labels": {"cluster_name": "prod"}},
     "protoPayload": {"@type": "type.googleapis.com/google.cloud.audit.AuditLog", "serviceName": "k8s.io",
                      "methodName": "io.k8s.apps.v1.deployments.update", "resourceName": "apps/v1/namespaces/ns/deployments/web",
                      "authenticationInfo": {"principalEmail": "alice@example.com"}, "status": {},
                      "response": {"@type": "apps.k8s.io/v1.Deployment", **dep(3)}}},
], ids=["eks-cloudwatch-subscription", "eks-filter-log-events", "aks-diagnostic-record", "aks-event-hub-batch", "aks-log-analytics-row",
        "gke-cloud-logging-entry"])
def test_a_managed_clusters_line_gives_what_the_api_servers_own_line_gives(wrapped: dict[str, Any]) -> None:
    (record,) = gives(json.dumps(wrapped).encode())
    assert (record.key, record.uid, record.verb, record.level, record.body) == (KEY, UID, "update", "RequestResponse", dep(3))
    assert record.at == pytest.approx(1795860005.25)


def test_a_gke_delete_and_a_failed_request() -> None:
    status = {"@type": "core.k8s.io/v1.Status", "status": "Success", "details": {"name": "web", "group": "apps", "kind": "deployments", "uid": UID}}
    entry = {"insertId": "d1", "timestamp": "2026-11-28T10:00:06Z", "protoPayload": {
        "methodName": "io.k8s.apps.v1.deployments.delete", "resourceName": "apps/v1/namespaces/ns/deployments/web", "response": status}}
    (record,) = gives(json.dumps(entry).encode())
    assert record.verb == "delete" and record.removed is True and record.uid == UID
    entry["protoPayload"]["status"] = {"code": 5, "message": "not found"}  # type: ignore[index]
    assert gives(json.dumps(entry).encode()) == ["failed requests"]


def test_a_gzip_delivery_of_cloudwatch_documents_reads_as_lines() -> None:
    import io

    from kubectl_sktrace.audit.collect import collect
    from kubectl_sktrace.audit.sources import Source, read_lines

    doc = {"messageType": "DATA_MESSAGE", "logEvents": [{"id": str(i), "timestamp": 0, "message": line("update", response=dep(i)).decode()
                                                         .replace('"a1"', f'"a{i}"')} for i in range(1, 4)]}
    blob = gzip.compress((json.dumps(doc) + "\n").encode())
    got = collect([Source("s3://bucket/eks/audit.gz", lambda: io.BytesIO(blob))], wanted=WANTED, lines_of=read_lines)
    assert [r.body["spec"]["replicas"] for r in got.writes[KEY]] == [1, 2, 3]  # type: ignore[index]
