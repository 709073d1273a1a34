"""What admission and defaulting add to a new object on a real API server (the emulator's part of it): pods and
services. What admission refuses (a missing ServiceAccount or PriorityClass) is ``Store._admit_pod``'s."""

from __future__ import annotations

from sktrace_emulator.records import Obj


def default_pod(pod: Obj, *, suffix: str, created: str) -> None:
    """What admission and defaulting add to a new pod on a real server (the service-account token
    volume and its mounts, pull policies, scheduler and DNS defaults, tolerations, a Pending status)."""
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)
    spec.setdefault(
        "tolerations",
        [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        ],
    )
    volumes = spec.setdefault("volumes", [])
    token_volume = next((v["name"] for v in volumes if v.get("name", "").startswith("kube-api-access-")), None)
    if token_volume is None:
        token_volume = f"kube-api-access-{suffix}"
        volumes.append(
            {
                "name": token_volume,
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
                    ],
                },
            }
        )
    for container in list(spec.get("initContainers") or []) + list(spec.setdefault("containers", [])):
        container.setdefault("resources", {})
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        image = str(container.get("image", ""))
        container.setdefault("imagePullPolicy", "Always" if image.endswith(":latest") or ":" not in image else "IfNotPresent")
        mounts = container.setdefault("volumeMounts", [])
        if not any(m.get("name") == token_volume for m in mounts):
            mounts.append({"name": token_volume, "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"})
    pod["status"] = {"phase": "Pending", "qosClass": pod_qos(spec)}


SYSTEM_PRIORITIES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
"""The PriorityClasses every real server has, by name, with their values."""


def default_service(service: Obj, *, cluster_ip: str) -> None:
    """A new Service's defaults on a real server: ClusterIP with an address, TCP ports targeting themselves."""
    spec = service.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec.get("clusterIP") != "None":
        spec.setdefault("clusterIP", cluster_ip)
    spec.setdefault("clusterIPs", [spec["clusterIP"]])
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        port.setdefault("protocol", "TCP")
        port.setdefault("targetPort", port.get("port"))
    service["status"] = {"loadBalancer": {}}


def pod_qos(spec: Obj) -> str:
    requests = [c.get("resources", {}).get("requests") for c in spec.get("containers", [])]
    limits = [c.get("resources", {}).get("limits") for c in spec.get("containers", [])]
    if not any(requests) and not any(limits):
        return "BestEffort"
    if all(limits) and all(r == lim or not r for r, lim in zip(requests, limits)):
        return "Guaranteed"
    return "Burstable"
