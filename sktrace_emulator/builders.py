"""Objects as their controllers and the kubelet would make them: pod templates, Deployments, pods, nodes, and
the statuses of a pod that starts running or finishes. Pure: each takes its random source and its times.

Annotations the workload obeys: ``sktrace.io/run-seconds`` on a pod (it finishes after that),
``sktrace.io/every-seconds`` on a CronJob (overrides its schedule).
"""

from __future__ import annotations

import hashlib
import json
import random

from sktrace_emulator.records import Obj, rfc3339

RUN_SECONDS = "sktrace.io/run-seconds"


EVERY_SECONDS = "sktrace.io/every-seconds"


def template_hash(template: Obj) -> str:
    """A stable pod-template-hash-like name suffix for a pod template."""
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).digest()
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    return "".join(alphabet[b % len(alphabet)] for b in digest[:10])


def owner_reference(obj: Obj) -> Obj:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def sample_containers(rng: random.Random, *, app: str, count: int = 2) -> list[Obj]:
    """Containers that make a realistic ~5 KB pod: env, resources, ports, probes, mounts."""
    containers = []
    for i in range(count):
        name = app if i == 0 else f"sidecar-{i}"
        containers.append(
            {
                "name": name,
                "image": f"registry.example.com/team/{name}:1.{rng.randint(0, 30)}.{rng.randint(0, 9)}",
                "args": ["--port=8080", f"--log-level={rng.choice(['info', 'debug', 'warn'])}", "--metrics"],
                "ports": [{"name": "http", "containerPort": 8080 + i, "protocol": "TCP"}],
                "env": [{"name": f"{app.upper().replace('-', '_')}_SETTING_{j}", "value": f"value-{rng.randint(0, 10**6)}"} for j in range(8)]
                + [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                "resources": {"requests": {"cpu": f"{rng.choice([50, 100, 250])}m", "memory": f"{rng.choice([64, 128, 256])}Mi"}, "limits": {"memory": "512Mi"}},
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080 + i, "scheme": "HTTP"}, "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
                "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}],
            }
        )
    return containers


def sample_pod_template(rng: random.Random, *, app: str, run_seconds: float | None = None) -> Obj:
    annotations = {RUN_SECONDS: str(run_seconds)} if run_seconds is not None else {}
    return {
        "metadata": {"labels": {"app": app, "tier": rng.choice(["web", "backend", "batch"])}, "annotations": annotations},
        "spec": {
            "containers": sample_containers(rng, app=app),
            "volumes": [{"name": "config", "configMap": {"name": f"{app}-config", "defaultMode": 420}}],
            "nodeSelector": {"kubernetes.io/os": "linux"},
        },
    }


def node_object(name: str, *, index: int) -> Obj:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": "m5.xlarge"}},
        "spec": {"podCIDR": f"10.244.{index}.0/24", "providerID": f"emulator://{name}"},
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "3900m", "memory": "15Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}],
            "addresses": [{"type": "InternalIP", "address": f"192.168.0.{10 + index}"}, {"type": "Hostname", "address": name}],
            "nodeInfo": {"kubeletVersion": "v1.30.0", "containerRuntimeVersion": "containerd://1.7.13", "operatingSystem": "linux", "architecture": "amd64"},
        },
    }


def deployment_object(namespace: str, name: str, *, replicas: int, rng: random.Random) -> Obj:
    template = sample_pod_template(rng, app=name)
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(template["metadata"]["labels"])},
            "template": template,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
        },
    }


def pod_from_template(owner: Obj, rng: random.Random, *, job_name: str | None = None, run_seconds: float | None = None) -> Obj:
    """A new pod for a ReplicaSet or Job, from its template, owned by it."""
    template = json.loads(json.dumps((owner.get("spec") or {}).get("template") or {}))
    meta = template.get("metadata") or {}
    labels = dict(meta.get("labels") or {})
    annotations = dict(meta.get("annotations") or {})
    if job_name is not None:
        labels.update({"batch.kubernetes.io/job-name": job_name, "job-name": job_name, "batch.kubernetes.io/controller-uid": owner["metadata"]["uid"], "controller-uid": owner["metadata"]["uid"]})
        if run_seconds is not None and RUN_SECONDS not in annotations:
            annotations[RUN_SECONDS] = str(run_seconds)
    spec = template.get("spec") or {"containers": [{"name": "main", "image": "busybox:1.36"}]}
    if job_name is not None:
        spec.setdefault("restartPolicy", "Never")
    return {
        "metadata": {
            "generateName": f"{owner['metadata']['name']}-",
            "namespace": owner["metadata"]["namespace"],
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner_reference(owner)],
        },
        "spec": spec,
    }


def _conditions(now: str, *, ready: bool) -> list[Obj]:
    flag = "True" if ready else "False"
    return [
        {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": None, "lastTransitionTime": now},
        {"type": "Initialized", "status": "True", "lastProbeTime": None, "lastTransitionTime": now},
        {"type": "Ready", "status": flag, "lastProbeTime": None, "lastTransitionTime": now},
        {"type": "ContainersReady", "status": flag, "lastProbeTime": None, "lastTransitionTime": now},
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now},
    ]


def pod_ip(name: str) -> str:
    digest = hashlib.md5(name.encode()).digest()
    return f"10.244.{digest[0] % 16}.{2 + digest[1] % 250}"


def running_status(pod: Obj, *, started: float, rng: random.Random) -> Obj:
    now = rfc3339(started)
    ip = pod_ip(pod["metadata"]["name"])
    return {
        "phase": "Running",
        "conditions": _conditions(now, ready=True),
        "hostIP": "192.168.0.10",
        "hostIPs": [{"ip": "192.168.0.10"}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": now,
        "containerStatuses": [
            {
                "name": c["name"],
                "state": {"running": {"startedAt": now}},
                "lastState": {},
                "ready": True,
                "restartCount": 0,
                "image": c.get("image", ""),
                "imageID": f"{c.get('image', '').split(':')[0]}@sha256:{hashlib.sha256(c.get('image', '').encode()).hexdigest()}",
                "containerID": f"containerd://{rng.getrandbits(256):064x}",
                "started": True,
            }
            for c in pod["spec"].get("containers", [])
        ],
        "qosClass": (pod.get("status") or {}).get("qosClass", "BestEffort"),
    }


def finished_status(pod: Obj, *, finished: float) -> Obj:
    status: Obj = json.loads(json.dumps(pod.get("status") or {}))
    now = rfc3339(finished)
    status["phase"] = "Succeeded"
    status["conditions"] = _conditions(now, ready=False)
    for cs in status.get("containerStatuses") or []:
        started = (cs.get("state") or {}).get("running", {}).get("startedAt", now)
        cs["state"] = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": now, "containerID": cs.get("containerID", "")}}
        cs["ready"] = False
        cs["started"] = False
    return status


def replicaset_object(deploy: Obj, pod_hash: str, replicas: int, owned: list[Obj]) -> Obj:
    """The ReplicaSet a Deployment's controller makes for its template (``owned``: its sets so far, for the revision)."""
    spec = deploy.get("spec") or {}
    template = spec.get("template") or {}
    desired = int(spec.get("replicas", 1))
    revisions = [int((rs["metadata"].get("annotations") or {}).get("deployment.kubernetes.io/revision", "0")) for rs in owned]
    labels = {**(template.get("metadata") or {}).get("labels", {}), "pod-template-hash": pod_hash}
    selector = json.loads(json.dumps(spec.get("selector") or {"matchLabels": dict((template.get("metadata") or {}).get("labels", {}))}))
    selector.setdefault("matchLabels", {})["pod-template-hash"] = pod_hash
    rs_template = json.loads(json.dumps(template))
    rs_template.setdefault("metadata", {})["labels"] = labels
    return {
        "metadata": {
            "name": f"{deploy['metadata']['name']}-{pod_hash}",
            "namespace": deploy["metadata"]["namespace"],
            "labels": labels,
            "annotations": {"deployment.kubernetes.io/desired-replicas": str(desired), "deployment.kubernetes.io/max-replicas": str(desired + 1),
                            "deployment.kubernetes.io/revision": str(max(revisions, default=0) + 1)},
            "ownerReferences": [owner_reference(deploy)],
        },
        "spec": {"replicas": replicas, "selector": selector, "template": rs_template},
    }
