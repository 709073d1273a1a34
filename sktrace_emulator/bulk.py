"""Fast paths for benchmarks: a large cluster written straight into the store, and a restart storm that
modifies every running pod once, without the controllers' pace.
"""

from __future__ import annotations

import gc
import random

from sktrace_emulator.builders import (
    deployment_object,
    node_object,
    owner_reference,
    pod_from_template,
    pod_ip,
    running_status,
    template_hash,
)
from sktrace_emulator.records import Obj, Stored, random_suffix, rfc3339, serialize
from sktrace_emulator.server import Emulator
from sktrace_emulator.admission import default_pod


def build_large_state(emu: Emulator, *, deployments: int = 5000, pods_per_deployment: int = 10, namespaces: int = 50, seed: int = 7) -> int:
    """Fill the store with running Deployments, their ReplicaSets and Pods, without HTTP; returns pod count.

    Each Deployment's pods share one serialized template; each pod's bytes are that template with its
    own name, uid, resourceVersion, IP and container ids spliced in, which is what makes 50,000 pods take
    seconds instead of minutes. The result is what the controllers would have built (same names, labels,
    owner references, Running statuses), and every object gets an ADDED event in the history.
    """
    # the cyclic GC would rescan the growing heap of small dicts many times over: pause it for the build
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _build(emu, deployments=deployments, pods_per_deployment=pods_per_deployment, namespaces=namespaces, seed=seed)
    finally:
        if was_enabled:
            gc.enable()


def _build(emu: Emulator, *, deployments: int, pods_per_deployment: int, namespaces: int, seed: int) -> int:
    store, rng = emu.store, random.Random(seed)
    t = store.type_of
    t_pod, t_rs, t_deploy, t_ns = t("v1", "Pod"), t("apps/v1", "ReplicaSet"), t("apps/v1", "Deployment"), t("v1", "Namespace")
    nodes = [f"node-{i + 1}" for i in range(max(3, deployments * pods_per_deployment // 100))]
    now = emu.store.clock()
    stamp = rfc3339(now)
    for i, node in enumerate(nodes):
        if store.get(store.type_of("v1", "Node"), "", node) is None:
            store.create(store.type_of("v1", "Node"), node_object(node, index=i))
    ns_names = [f"tenant-{i:03d}" for i in range(namespaces)]
    for ns in ns_names:
        if store.get(t_ns, "", ns) is None:
            store.create(t_ns, {"metadata": {"name": ns}})
    count = 0
    with store.lock:
        for d in range(deployments):
            ns = ns_names[d % len(ns_names)]
            name = f"svc-{d:05d}"
            deploy = {"apiVersion": "apps/v1", "kind": "Deployment", **deployment_object(ns, name, replicas=pods_per_deployment, rng=rng)}
            deploy["metadata"].update({"uid": store.new_uid(), "creationTimestamp": stamp, "generation": 1})
            deploy["status"] = {"observedGeneration": 1, "replicas": pods_per_deployment, "updatedReplicas": pods_per_deployment, "readyReplicas": pods_per_deployment, "availableReplicas": pods_per_deployment}
            store.bulk_insert(t_deploy, [deploy])
            pod_hash = template_hash(deploy["spec"]["template"])
            labels = {**deploy["spec"]["template"]["metadata"]["labels"], "pod-template-hash": pod_hash}
            rs: Obj = {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": f"{name}-{pod_hash}",
                    "namespace": ns,
                    "uid": store.new_uid(),
                    "creationTimestamp": stamp,
                    "generation": 1,
                    "labels": labels,
                    "annotations": {"deployment.kubernetes.io/desired-replicas": str(pods_per_deployment), "deployment.kubernetes.io/max-replicas": str(pods_per_deployment + 1), "deployment.kubernetes.io/revision": "1"},
                    "ownerReferences": [owner_reference(deploy)],
                },
                "spec": {"replicas": pods_per_deployment, "selector": {"matchLabels": labels}, "template": {**deploy["spec"]["template"], "metadata": {"labels": labels}}},
                "status": {"replicas": pods_per_deployment, "fullyLabeledReplicas": pods_per_deployment, "readyReplicas": pods_per_deployment, "availableReplicas": pods_per_deployment, "observedGeneration": 1},
            }
            store.bulk_insert(t_rs, [rs])
            node = nodes[d % len(nodes)]
            pod = pod_from_template(rs, rng)
            pod["metadata"].update({"name": "@@NAME@@", "uid": "@@UID@@", "creationTimestamp": stamp, "resourceVersion": "@@RV@@"})
            pod["metadata"].pop("generateName", None)
            default_pod(pod, suffix="@@SFX@@", created=stamp)
            pod["spec"]["nodeName"] = node
            pod["status"] = running_status(pod, started=now, rng=rng)
            pod["status"]["podIP"] = pod["status"]["podIPs"][0]["ip"] = "@@IP@@"
            for cs in pod["status"]["containerStatuses"]:
                cs["containerID"] = "containerd://@@CID@@"
            _, template_raw = serialize(t_pod, pod)
            rs_uid = rs["metadata"]["uid"]
            for _ in range(pods_per_deployment):
                pod_name = f"{rs['metadata']['name']}-{random_suffix(rng)}"
                uid = store.new_uid()
                rv = store.next_rv()
                raw = (
                    template_raw.replace(b"@@NAME@@", pod_name.encode())
                    .replace(b"@@UID@@", uid.encode())
                    .replace(b"@@RV@@", str(rv).encode())
                    .replace(b"@@SFX@@", random_suffix(rng).encode())
                    .replace(b"@@IP@@", pod_ip(pod_name).encode())
                    .replace(b"@@CID@@", b"%064x" % rng.getrandbits(256))
                )
                store.insert_stored(
                    Stored.from_parts(t_pod, namespace=ns, name=pod_name, uid=uid, rv=rv, raw=raw, labels=labels, owner_uids=(rs_uid,), node_name=node, phase="Running")
                )
                count += 1
        store.changed.notify_all()
    return count


class RestartStorm:
    """Every running pod whose containers restarted ``restarts`` times restarts once more: one MODIFIED
    per pod. The fast path for benchmarks of watch streaming.

    ``prepare`` (untimed) makes each pod's next bytes with the restart counter bumped; ``run`` then only
    splices in the resourceVersion (found near the start of the bytes) and records the events, in batches
    of ``batch`` under the lock, releasing it in between so streams keep flowing. A pod changed since
    ``prepare`` keeps its newer version (it is skipped).
    """

    def __init__(self, emu: Emulator, *, restarts: int = 0, batch: int = 1000) -> None:
        self.store, self.batch = emu.store, batch
        self.t_pod = self.store.type_of("v1", "Pod")
        before, after = b'"restartCount":%d,' % restarts, b'"restartCount":%d,' % (restarts + 1)
        with self.store.lock:
            self.prepared = [
                (old, old.raw.replace(before, after))
                for old in self.store.objects[self.t_pod].values()
                if old.fields["status.phase"] == "Running" and before in old.raw
            ]

    def run(self) -> int:
        store, t_pod, made = self.store, self.t_pod, 0
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            for start in range(0, len(self.prepared), self.batch):
                with store.lock:
                    objects = store.objects[t_pod]
                    for old, bumped in self.prepared[start : start + self.batch]:
                        if objects.get((old.namespace, old.name)) is not old:
                            continue
                        rv = store.next_rv()
                        raw = bumped.replace(b'"resourceVersion":"%d"' % old.rv, b'"resourceVersion":"%d"' % rv, 1)
                        store.insert_stored(
                            Stored.from_parts(t_pod, namespace=old.namespace, name=old.name, uid=old.uid, rv=rv, raw=raw, labels=old.labels, owner_uids=old.owner_uids, node_name=old.fields["spec.nodeName"], phase="Running"),
                            event_type="MODIFIED",
                        )
                        made += 1
                    store.changed.notify_all()
        finally:
            if was_enabled:
                gc.enable()
        return made
