"""The preset dictionary of the cache's compressed bodies (``bodies.py``): Kubernetes' own words. Frozen.

zlib compresses each stored body on its own, so every row would spell out again the field names and the defaults
the API server fills in (``terminationMessagePath``, ``imagePullPolicy``, ``RollingUpdate``, ...): most of a
small body, and all of a revision's. A preset dictionary (zlib's ``zdict``) holds them once for all rows.

What it holds is only the API's vocabulary: the objects below are written from the Kubernetes API reference's
field names and the defaults a v1.28 API server sets, with placeholder names and values; no workload of ours or of
a benchmark's. It is packed as the bodies are (``trace/files/format.dumps_object``), the most common words last
(zlib finds the dictionary's end the cheapest to refer to).

A body compressed with it says so in its zlib header (``FDICT``, with the dictionary's Adler-32 id), so a reader
knows which dictionary it needs: ``ID`` is part of the cache's format (schema 0012). Never change these objects;
a new dictionary gets a new id beside this one, and readers keep every id they ever wrote.
"""

from __future__ import annotations

import zlib
from typing import Any

from kubectl_sktrace.trace.files.format import dumps_object

_CONTAINER: dict[str, Any] = {
    "name": "app",
    "image": "registry.example/app:1.0",
    "command": ["/bin/sh", "-c"],
    "args": ["--port=8080"],
    "workingDir": "/",
    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
    "envFrom": [{"configMapRef": {"name": "app-config"}}, {"secretRef": {"name": "app-secret"}}],
    "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
            {"name": "LOG_LEVEL", "value": "info"}],
    "resources": {"limits": {"cpu": "500m", "memory": "512Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
    "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": True}],
    "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"}, "initialDelaySeconds": 10,
                      "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
    "readinessProbe": {"tcpSocket": {"port": 8080}, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                       "failureThreshold": 3},
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
    "imagePullPolicy": "IfNotPresent",
    "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "allowPrivilegeEscalation": False,
                        "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}},
}

_POD_SPEC: dict[str, Any] = {
    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "config", "configMap": {"name": "app-config", "defaultMode": 420}},
                {"name": "secret", "secret": {"secretName": "app-secret", "defaultMode": 420}},
                {"name": "cache", "emptyDir": {}}],
    "initContainers": [],
    "containers": [_CONTAINER],
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 30,
    "dnsPolicy": "ClusterFirst",
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "serviceAccountName": "default",
    "serviceAccount": "default",
    "securityContext": {"fsGroup": 2000},
    "imagePullSecrets": [{"name": "registry"}],
    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchExpressions": [
            {"key": "app.kubernetes.io/name", "operator": "In", "values": ["app"]}]}, "topologyKey": "kubernetes.io/hostname"}}]}},
    "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
                                   "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "app"}}}],
    "priorityClassName": "default",
    "priority": 0,
    "schedulerName": "default-scheduler",
    "enableServiceLinks": True,
    "preemptionPolicy": "PreemptLowerPriority",
}

_LABELS = {"app": "app", "app.kubernetes.io/name": "app", "app.kubernetes.io/instance": "app",
           "app.kubernetes.io/component": "server", "app.kubernetes.io/part-of": "app",
           "app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/version": "1.0", "helm.sh/chart": "app-1.0.0"}

_METADATA: dict[str, Any] = {
    "name": "app",
    "namespace": "default",
    "labels": _LABELS,
    "annotations": {"meta.helm.sh/release-name": "app", "meta.helm.sh/release-namespace": "default"},
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "app", "uid": "", "controller": True,
                         "blockOwnerDeletion": True}],
}

_OBJECTS: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app-config", "namespace": "default"},
     "data": {"config.yaml": ""}, "binaryData": {}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "app", "namespace": "default", "labels": _LABELS},
     "spec": {"ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080, "nodePort": 30080}],
              "selector": {"app.kubernetes.io/name": "app"}, "clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
              "type": "ClusterIP", "sessionAffinity": "None", "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
              "internalTrafficPolicy": "Cluster", "externalTrafficPolicy": "Cluster"}},
    {"apiVersion": "batch/v1", "kind": "Job", "metadata": _METADATA,
     "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 6, "completionMode": "NonIndexed", "suspend": False,
              "ttlSecondsAfterFinished": 100, "activeDeadlineSeconds": 600,
              "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": ""}},
              "template": {"metadata": {"labels": {"batch.kubernetes.io/controller-uid": "", "batch.kubernetes.io/job-name": "app",
                                                   "controller-uid": "", "job-name": "app"}},
                           "spec": {"restartPolicy": "Never"}}}},
    {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": _METADATA,
     "spec": {"schedule": "*/5 * * * *", "concurrencyPolicy": "Forbid", "suspend": False, "successfulJobsHistoryLimit": 3,
              "failedJobsHistoryLimit": 1, "startingDeadlineSeconds": 60, "jobTemplate": {"metadata": {}, "spec": {}}}},
    {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": _METADATA,
     "spec": {"serviceName": "app", "podManagementPolicy": "OrderedReady", "persistentVolumeClaimRetentionPolicy":
              {"whenDeleted": "Retain", "whenScaled": "Retain"}, "updateStrategy": {"type": "RollingUpdate",
              "rollingUpdate": {"partition": 0}}, "volumeClaimTemplates": [{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
              "metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
              "resources": {"requests": {"storage": "10Gi"}}, "volumeMode": "Filesystem"}}]}},
    {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": _METADATA,
     "spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {**_METADATA, "generateName": "app-", "labels": {**_LABELS, "pod-template-hash": ""}},
     "spec": {"nodeName": "node-1", "hostname": "app", "subdomain": "app"}},
    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": _METADATA,
     "spec": {"replicas": 1, "minReadySeconds": 0, "selector": {"matchLabels": {**_LABELS, "pod-template-hash": ""}}}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _METADATA,
     "spec": {"replicas": 1, "selector": {"matchLabels": _LABELS},
              "template": {"metadata": {"labels": _LABELS, "annotations": {}, "creationTimestamp": None}, "spec": _POD_SPEC},
              "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
              "minReadySeconds": 0, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600, "paused": False}},
]

DICTIONARY: bytes = b"".join(dumps_object(obj) for obj in _OBJECTS)
ID: int = zlib.adler32(DICTIONARY)
