"""Fast paths for benchmarks: a large cluster written straight into the store, a restart storm that
modifies every running pod once, and a churn of pods that come and go, without the controllers' pace.
"""

from __future__ import annotations

import gc
import random
from collections import deque

from sktrace_emulator.builders import (
    deployment_object,
    finished_status,
    node_object,
    owner_reference,
    pod_from_template,
    pod_ip,
    running_status,
    sample_pod_template,
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


_STAMP = rfc3339(0.0)  # the template's times: every pod's own are spliced in


def create_jobs(emu: Emulator, *, jobs: int, namespaces: int = 50, seed: int = 11) -> list[Obj]:
    """``jobs`` Jobs (no pods yet) written straight into the store, as ``PodChurn`` owners; returns them."""
    store, rng = emu.store, random.Random(seed)
    t_job, stamp = store.type_of("batch/v1", "Job"), rfc3339(store.clock())
    made: list[Obj] = []
    for j in range(jobs):
        name = f"batch-{j:05d}"
        made.append({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": f"tenant-{j % namespaces:03d}", "uid": store.new_uid(), "creationTimestamp": stamp,
                         "generation": 1, "labels": {"app": name}},
            "spec": {"completions": 1, "parallelism": 1, "backoffLimit": 6,
                     "template": sample_pod_template(rng, app=name, run_seconds=1.0)},
            "status": {},
        })
    for ns in sorted({job["metadata"]["namespace"] for job in made}):
        if store.get(store.type_of("v1", "Namespace"), "", ns) is None:
            store.create(store.type_of("v1", "Namespace"), {"metadata": {"name": ns}})
    store.bulk_insert(t_job, made)
    return made


class PodChurn:
    """Pods with names never used before come and go under the owners given (ReplicaSets and Jobs): each
    ``step`` creates pods Running (ADDED), round robin over the owners, and retires the oldest once ``live``
    pods exist: a ReplicaSet's pod is deleted (DELETED), a Job's pod first succeeds (MODIFIED) and is deleted
    in a later step (as a Job's TTL would). The fast path for the churn benchmark: each pod's bytes are its
    owner's template with its name, uid, resourceVersion, IP, container ids and times spliced in."""

    def __init__(self, emu: Emulator, *, owners: list[Obj], live: int, seed: int = 13) -> None:
        self.store, self.live, self.rng = emu.store, live, random.Random(seed)
        self.t_pod = self.store.type_of("v1", "Pod")
        self.templates = [self._template(owner) for owner in owners]
        self.alive: deque[tuple[Stored, bytes | None]] = deque()  # oldest first: the pod, and its Succeeded bytes (a Job's)
        self.finished: list[Stored] = []  # Jobs' pods that succeeded, deleted at the next step
        self.created = self.deleted = 0
        self._next = 0

    def _template(self, owner: Obj) -> tuple[Obj, bytes, bytes | None]:
        job = owner["kind"] == "Job"
        pod = pod_from_template(owner, self.rng, job_name=owner["metadata"]["name"] if job else None)
        pod["metadata"].update({"name": "@@NAME@@", "uid": "@@UID@@", "creationTimestamp": _STAMP, "resourceVersion": "@@RV@@"})
        pod["metadata"].pop("generateName", None)
        default_pod(pod, suffix="@@SFX@@", created=_STAMP)
        pod["spec"]["nodeName"] = "node-1"
        pod["status"] = running_status(pod, started=0.0, rng=self.rng)
        pod["status"]["podIP"] = pod["status"]["podIPs"][0]["ip"] = "@@IP@@"
        for cs in pod["status"]["containerStatuses"]:
            cs["containerID"] = "containerd://@@CID@@"
        running = serialize(self.t_pod, pod)[1]
        done = None
        if job:
            pod["status"] = finished_status(pod, finished=0.0)
            done = serialize(self.t_pod, pod)[1].replace(b'"finishedAt":"%s"' % _STAMP.encode(), b'"finishedAt":"@@END@@"')
        return owner, running, done

    def step(self, count: int) -> int:
        """Create ``count`` pods and retire as many of the oldest as exceed ``live``; returns the events made."""
        store, events = self.store, 0
        now = rfc3339(store.clock()).encode()
        with store.lock:
            for old in self.finished:
                store.remove_stored(self._version(old, old.raw, phase="Succeeded"))
                self.deleted += 1
                events += 1
            self.finished = []
            for _ in range(count):
                events += self._create(now)
            while len(self.alive) > self.live:
                old, done = self.alive.popleft()
                if done is None:
                    store.remove_stored(self._version(old, old.raw, phase="Running"))
                    self.deleted += 1
                else:
                    finished = self._version(old, done.replace(b"@@END@@", now).replace(b"@@RV@@", str(old.rv).encode()), phase="Succeeded")
                    store.insert_stored(finished, event_type="MODIFIED")
                    self.finished.append(finished)
                events += 1
            store.changed.notify_all()
        return events

    def _create(self, now: bytes) -> int:
        owner, running, done = self.templates[self._next % len(self.templates)]
        self._next += 1
        name = f"{owner['metadata']['name']}-{self._next:x}"
        uid, rv, cid = self.store.new_uid(), self.store.next_rv(), b"%064x" % self.rng.getrandbits(256)
        suffix = random_suffix(self.rng).encode()

        def spliced(raw: bytes) -> bytes:
            return (raw.replace(b"@@NAME@@", name.encode()).replace(b"@@UID@@", uid.encode()).replace(b"@@SFX@@", suffix)
                    .replace(b"@@IP@@", pod_ip(name).encode()).replace(b"@@CID@@", cid).replace(_STAMP.encode(), now))

        stored = Stored.from_parts(self.t_pod, namespace=owner["metadata"]["namespace"], name=name, uid=uid, rv=rv,
                                   raw=spliced(running).replace(b"@@RV@@", str(rv).encode()),
                                   labels=dict(owner["spec"]["template"]["metadata"]["labels"]),
                                   owner_uids=(owner["metadata"]["uid"],), node_name="node-1", phase="Running")
        self.store.insert_stored(stored)
        self.created += 1
        self.alive.append((stored, None if done is None else spliced(done)))
        return 1

    def _version(self, old: Stored, raw: bytes, *, phase: str) -> Stored:
        """``old``'s bytes ``raw`` at the next resourceVersion."""
        rv = self.store.next_rv()
        return Stored.from_parts(self.t_pod, namespace=old.namespace, name=old.name, uid=old.uid, rv=rv,
                                 raw=raw.replace(b'"resourceVersion":"%d"' % old.rv, b'"resourceVersion":"%d"' % rv, 1),
                                 labels=old.labels, owner_uids=old.owner_uids, node_name="node-1", phase=phase)

