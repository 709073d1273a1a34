"""Per-event cost of the pure rules on a realistic pod, beside json.loads of the same pod in the same run.

The recorder parses every watch event with json.loads anyway, so that is the reference: the rules
(sanitize + derive_lifecycle + owner refs + change decision) should cost a fraction of it, well inside
the 10,000 events/s ingest target. Run: python benchmarks/bench_rules.py
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any, Callable

from kubectl_sktrace.model import POD
from kubectl_sktrace.record.changes import Known, decide_applied
from kubectl_sktrace.trace.lifecycle import derive_lifecycle
from kubectl_sktrace.trace.sanitize import read_head, sanitize


def realistic_pod() -> dict[str, Any]:
    container = {
        "name": "app",
        "image": "registry.example.com/shop/web:1.42.0",
        "args": ["--port=8080", "--log-level=info"],
        "env": [{"name": f"VAR_{i}", "value": f"value-{i}"} for i in range(12)],
        "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
        "ports": [{"containerPort": 8080, "protocol": "TCP"}],
        "volumeMounts": [{"name": "kube-api-access-abcde", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": True}],
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10},
    }
    return {
        "metadata": {
            "name": "web-5d8f7c9b4-x2k8q",
            "generateName": "web-5d8f7c9b4-",
            "namespace": "shop",
            "uid": "0b6f4a3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b",
            "resourceVersion": "123456789",
            "creationTimestamp": "2026-11-22T10:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "5d8f7c9b4"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-22T09:00:00Z"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f7c9b4", "uid": "9a8b7c6d", "controller": True, "blockOwnerDeletion": True}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "fieldsV1": {"f:metadata": {"f:labels": {}}}} for _ in range(3)],
        },
        "spec": {
            "containers": [container, {**copy.deepcopy(container), "name": "sidecar"}],
            "nodeName": "node-17",
            "serviceAccountName": "web",
            "volumes": [{"name": "kube-api-access-abcde", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}],
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": "2026-11-22T10:00:05Z"} for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "containerStatuses": [
                {"name": n, "ready": True, "restartCount": 0, "image": "x", "imageID": "sha256:abc", "containerID": "containerd://abc", "state": {"running": {"startedAt": "2026-11-22T10:00:03Z"}}}
                for n in ("app", "sidecar")
            ],
        },
    }


def per_second(fn: Callable[[], object], *, seconds: float = 1.0) -> float:
    count, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(200):
            fn()
        count += 200
    return count / elapsed


def main() -> None:
    pod = realistic_pod()
    raw = json.dumps(pod)
    known = Known("0b6f4a3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b", 1)

    def rules() -> None:
        head = read_head(pod, POD)
        sanitize(pod, gvk=POD)
        derive_lifecycle(pod)
        decide_applied(known=known, uid=head.uid, spec_hash=2)

    figures = {
        "json.loads (reference)": per_second(lambda: json.loads(raw)),
        "rules, structural copy": per_second(rules),
        "copy.deepcopy (avoided)": per_second(lambda: copy.deepcopy(pod)),
    }
    print(f"pod JSON: {len(raw)} bytes")
    for name, rate in figures.items():
        print(f"{name:<26} {rate:>10,.0f} /s   {rate / figures['json.loads (reference)']:.2f}x reference")


if __name__ == "__main__":
    main()
