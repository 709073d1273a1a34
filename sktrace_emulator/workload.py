"""The workload driver: controllers and a kubelet acting on the emulator's store, and a load generator.

It plays kube-controller-manager and kubelet well enough to produce the traffic a recorder sees:

- Deployment → ReplicaSet named ``<deployment>-<pod-template-hash>``; a changed pod template is a rollout
  (a new ReplicaSet scaled up, the old ones scaled to zero and kept as history, revision annotations).
- ReplicaSet → Pods named ``<replicaset>-<5 chars>``, with ownerReferences (``controller: true``, uid).
- Job → Pods that run and finish (``completions``/``parallelism``), then a Complete condition.
- CronJob → a Job per schedule period (``*/N * * * *``, ``* * * * *``, ``@hourly``...; the annotation
  ``sktrace.io/every-seconds`` overrides it, for tests), keeping the three newest Jobs.
- kubelet: a new pod is bound to a node on the next pass, goes Running (``startedAt``) after
  ``start_delay`` seconds and, when it should finish (annotation ``sktrace.io/run-seconds``, set on Job
  pods from ``job_seconds``), terminates with ``finishedAt`` and phase Succeeded.
- Deleting an owner deletes its dependents: the store's garbage collector does that, as on a real cluster.

It follows the store's history like a watch (its own position per kind), so it reacts to objects made
by anyone (kubectl over HTTP, tests calling ``Emulator.create``). ``step()`` is one synchronous pass;
``start()`` runs passes in a thread. The clock is injected so tests can move time by hand.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import json
import random
import threading
import time
from dataclasses import dataclass
from typing import Callable

from sktrace_emulator.server import Emulator
from sktrace_emulator.state import ApiError, Filter, Obj, ResourceType, Store, Stored, default_pod, random_suffix, rfc3339, serialize

RUN_SECONDS = "sktrace.io/run-seconds"
EVERY_SECONDS = "sktrace.io/every-seconds"


@dataclass
class _PodTrack:
    uid: str
    bind_at: float
    start_at: float
    run_seconds: float | None
    stage: str = "pending"  # pending -> bound -> running -> finished
    started: float = 0.0


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


def cron_period(schedule: str) -> float:
    """Seconds between runs for the schedules the driver understands (others run hourly)."""
    text = schedule.strip()
    named = {"@yearly": 31536000, "@annually": 31536000, "@monthly": 2592000, "@weekly": 604800, "@daily": 86400, "@midnight": 86400, "@hourly": 3600}
    if text in named:
        return float(named[text])
    fields = text.split()
    if len(fields) == 5 and all(f == "*" for f in fields[1:]):
        minute = fields[0]
        if minute == "*":
            return 60.0
        if minute.startswith("*/") and minute[2:].isdigit() and int(minute[2:]) > 0:
            return 60.0 * int(minute[2:])
    return 3600.0


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


class Workload:
    """Controllers + kubelet over one emulator. Not thread-safe itself: one ``step()`` at a time."""

    def __init__(
        self,
        emu: Emulator,
        *,
        seed: int = 1,
        clock: Callable[[], float] = time.time,
        start_delay: float = 0.5,
        job_seconds: tuple[float, float] = (1.0, 3.0),
        nodes: int = 3,
        interval: float = 0.1,
    ) -> None:
        self.emu = emu
        self.store: Store = emu.store
        self.rng = random.Random(seed)
        self.clock = clock
        self.start_delay = start_delay
        self.job_seconds = job_seconds
        self.interval = interval
        t = self.store.type_of
        self.T_POD, self.T_NODE = t("v1", "Pod"), t("v1", "Node")
        self.T_DEPLOY, self.T_RS = t("apps/v1", "Deployment"), t("apps/v1", "ReplicaSet")
        self.T_JOB, self.T_CRON = t("batch/v1", "Job"), t("batch/v1", "CronJob")
        self.T_CM = t("v1", "ConfigMap")
        self._watched = (self.T_DEPLOY, self.T_RS, self.T_JOB, self.T_CRON, self.T_POD)
        with self.store.lock:
            self._positions = {rt: self.store.histories[rt].offset for rt in self._watched}
        self._dirty: dict[ResourceType, set[tuple[str, str]]] = {rt: set() for rt in self._watched}
        self._owners: dict[str, tuple[ResourceType, str, str]] = {}
        self._resync()
        self._pods: dict[tuple[str, str], _PodTrack] = {}
        self._crons: dict[tuple[str, str], float] = {}  # next run time
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._node_names = self._ensure_nodes(nodes)

    # plumbing

    def _resync(self) -> None:
        with self.store.lock:
            for rt in self._watched:
                self._dirty[rt].update(self.store.objects[rt].keys())
                if rt != self.T_POD:
                    self._owners.update({s.uid: (rt, s.namespace, s.name) for s in self.store.objects[rt].values()})
                self._positions[rt] = self.store.histories[rt].end()

    def _ensure_nodes(self, count: int) -> list[str]:
        existing = [s.name for s in self.store.current(self.T_NODE, _ALL)[1]]
        for i in range(len(existing), count):
            name = f"node-{i + 1}"
            self.store.create(self.T_NODE, node_object(name, index=i))
            existing.append(name)
        return existing

    def _drain(self) -> None:
        """Read new history events: mark what they touch for reconcile, track pods for the kubelet."""
        resync = False
        with self.store.lock:
            batches = {}
            for rt in self._watched:
                events = self.store.histories[rt].since(self._positions[rt])
                if events is None:
                    resync = True
                    break
                batches[rt] = events
                self._positions[rt] += len(events)
        if resync:
            self._resync()
            return
        now = self.clock()
        for rt, events in batches.items():
            for event in events:
                stored = event.stored
                key = (stored.namespace, stored.name)
                for owner in stored.owner_uids:
                    target = self._owners.get(owner)
                    if target is not None:
                        self._dirty[target[0]].add((target[1], target[2]))
                if rt is not self.T_POD:
                    if event.type == "DELETED":
                        self._dirty[rt].discard(key)
                        self._owners.pop(stored.uid, None)
                        self._crons.pop(key, None)
                    else:
                        self._dirty[rt].add(key)
                        self._owners[stored.uid] = (rt, stored.namespace, stored.name)
                    continue
                if event.type == "DELETED":
                    self._pods.pop(key, None)
                elif key not in self._pods or self._pods[key].uid != stored.uid:
                    self._track_pod(stored, now)

    def _track_pod(self, stored: Stored, now: float) -> None:
        pod = stored.obj()
        status = pod.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed"):
            return
        annotations = pod["metadata"].get("annotations") or {}
        run = annotations.get(RUN_SECONDS)
        track = _PodTrack(uid=stored.uid, bind_at=now, start_at=now + self.start_delay, run_seconds=float(run) if run else None)
        if status.get("phase") == "Running":
            track.stage, track.started = "running", now
        elif (pod.get("spec") or {}).get("nodeName"):
            track.stage = "bound"
        self._pods[(stored.namespace, stored.name)] = track

    # one pass

    def step(self) -> None:
        """Reconcile everything due now: CronJob schedules, then owners down to pods, then the kubelet."""
        self._drain()
        self._cron_schedules()
        self._drain()
        for _ in range(4):  # a few rounds, so a Deployment reaches its Pods within one step
            for rt, reconcile in ((self.T_CRON, self._reconcile_cronjob), (self.T_DEPLOY, self._reconcile_deployment), (self.T_RS, self._reconcile_replicaset), (self.T_JOB, self._reconcile_job)):
                keys, self._dirty[rt] = sorted(self._dirty[rt]), set()
                for key in keys:
                    self._guard(functools.partial(reconcile, key))
            self._drain()
            if not any(self._dirty[rt] for rt in (self.T_DEPLOY, self.T_RS, self.T_JOB)):
                break
        self._kubelet()
        self._drain()

    @staticmethod
    def _guard(fn: Callable[[], object]) -> None:
        """Conflicts and objects deleted under our feet are normal for controllers: retry next pass."""
        try:
            fn()
        except ApiError as err:
            if err.code not in (404, 409):
                raise

    def start(self) -> Workload:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="emulator-workload", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.step()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> Workload:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # controllers

    def _get(self, rt: ResourceType, key: tuple[str, str]) -> Obj | None:
        stored = self.store.get(rt, key[0], key[1])
        return stored.obj() if stored is not None and not stored.deleting else None

    def _reconcile_deployment(self, key: tuple[str, str]) -> None:
        deploy = self._get(self.T_DEPLOY, key)
        if deploy is None:
            return
        spec = deploy.get("spec") or {}
        template = spec.get("template") or {}
        desired = int(spec.get("replicas", 1))
        pod_hash = template_hash(template)
        owned = [s.obj() for s in self.store.dependents_of(deploy["metadata"]["uid"], self.T_RS)]
        revisions = [int((rs["metadata"].get("annotations") or {}).get("deployment.kubernetes.io/revision", "0")) for rs in owned]
        current = next((rs for rs in owned if rs["metadata"].get("labels", {}).get("pod-template-hash") == pod_hash), None)
        if current is None:
            labels = {**(template.get("metadata") or {}).get("labels", {}), "pod-template-hash": pod_hash}
            selector = json.loads(json.dumps(spec.get("selector") or {"matchLabels": dict((template.get("metadata") or {}).get("labels", {}))}))
            selector.setdefault("matchLabels", {})["pod-template-hash"] = pod_hash
            rs_template = json.loads(json.dumps(template))
            rs_template.setdefault("metadata", {})["labels"] = labels
            current = self.store.create(
                self.T_RS,
                {
                    "metadata": {
                        "name": f"{key[1]}-{pod_hash}",
                        "namespace": key[0],
                        "labels": labels,
                        "annotations": {"deployment.kubernetes.io/desired-replicas": str(desired), "deployment.kubernetes.io/max-replicas": str(desired + 1), "deployment.kubernetes.io/revision": str(max(revisions, default=0) + 1)},
                        "ownerReferences": [owner_reference(deploy)],
                    },
                    "spec": {"replicas": desired, "selector": selector, "template": rs_template},
                },
            ).obj()
        elif int(current["spec"].get("replicas", 0)) != desired:
            self.store.patch(self.T_RS, key[0], current["metadata"]["name"], {"spec": {"replicas": desired}})
        for rs in owned:
            if rs["metadata"]["name"] != current["metadata"]["name"] and int(rs["spec"].get("replicas", 0)) != 0:
                self.store.patch(self.T_RS, key[0], rs["metadata"]["name"], {"spec": {"replicas": 0}})
        ready = sum(int((rs.get("status") or {}).get("readyReplicas", 0)) for rs in owned)
        status = {
            "observedGeneration": deploy["metadata"].get("generation", 1),
            "replicas": desired,
            "updatedReplicas": desired,
            "readyReplicas": ready,
            "availableReplicas": ready,
        }
        if (deploy.get("status") or {}) != status:
            self.store.patch(self.T_DEPLOY, key[0], key[1], {"status": status}, subresource="status")

    def _reconcile_replicaset(self, key: tuple[str, str]) -> None:
        rs = self._get(self.T_RS, key)
        if rs is None:
            return
        desired = int((rs.get("spec") or {}).get("replicas", 1))
        pods = [s for s in self.store.dependents_of(rs["metadata"]["uid"], self.T_POD) if not s.deleting]
        if len(pods) < desired:
            for _ in range(desired - len(pods)):
                self.store.create(self.T_POD, pod_from_template(rs, self.rng))
        elif len(pods) > desired:
            for stored in sorted(pods, key=lambda s: s.rv, reverse=True)[: len(pods) - desired]:
                self.store.delete(self.T_POD, stored.namespace, stored.name)
        running = sum(1 for s in pods if s.fields["status.phase"] == "Running")
        # counted before this pass's creations and deletions: the next pass (their events) corrects it
        status = {"replicas": len(pods), "fullyLabeledReplicas": len(pods), "readyReplicas": running, "availableReplicas": running, "observedGeneration": rs["metadata"].get("generation", 1)}
        if (rs.get("status") or {}) != status:
            self.store.patch(self.T_RS, key[0], key[1], {"status": status}, subresource="status")

    def _reconcile_job(self, key: tuple[str, str]) -> None:
        job = self._get(self.T_JOB, key)
        if job is None:
            return
        spec, status = job.get("spec") or {}, job.get("status") or {}
        if any(c.get("type") == "Complete" for c in status.get("conditions") or []):
            return
        completions, parallelism = int(spec.get("completions", 1)), int(spec.get("parallelism", 1))
        pods = self.store.dependents_of(job["metadata"]["uid"], self.T_POD)
        succeeded = sum(1 for s in pods if s.fields["status.phase"] == "Succeeded")
        active = sum(1 for s in pods if s.fields["status.phase"] in ("Pending", "Running", "") and not s.deleting)
        now = rfc3339(self.clock())
        new_status: Obj = {"startTime": status.get("startTime", now), "active": active, "succeeded": succeeded, "ready": 0}
        if succeeded >= completions:
            new_status["active"] = 0
            new_status["completionTime"] = now
            new_status["conditions"] = [{"type": "Complete", "status": "True", "lastProbeTime": now, "lastTransitionTime": now}]
        else:
            for _ in range(max(0, min(parallelism, completions - succeeded) - active)):
                low, high = self.job_seconds
                self.store.create(self.T_POD, pod_from_template(job, self.rng, job_name=key[1], run_seconds=round(self.rng.uniform(low, high), 2)))
                new_status["active"] += 1
        if {k: v for k, v in status.items()} != new_status:
            self.store.patch(self.T_JOB, key[0], key[1], {"status": new_status}, subresource="status")

    def _reconcile_cronjob(self, key: tuple[str, str]) -> None:
        cron = self._get(self.T_CRON, key)
        if cron is None or key in self._crons:
            return
        self._crons[key] = self.clock() + self._cron_period(cron)

    def _cron_period(self, cron: Obj) -> float:
        every = (cron["metadata"].get("annotations") or {}).get(EVERY_SECONDS)
        return float(every) if every else cron_period((cron.get("spec") or {}).get("schedule", "@hourly"))

    def _cron_schedules(self) -> None:
        now = self.clock()
        for key, due in sorted(self._crons.items()):
            if now < due:
                continue
            cron = self._get(self.T_CRON, key)
            if cron is None:
                self._crons.pop(key, None)
                continue
            self._crons[key] = now + self._cron_period(cron)
            if (cron.get("spec") or {}).get("suspend"):
                continue
            job_template = json.loads(json.dumps((cron.get("spec") or {}).get("jobTemplate") or {}))
            meta = job_template.setdefault("metadata", {})
            meta.update({"name": f"{key[1]}-{int(now)}", "namespace": key[0], "ownerReferences": [owner_reference(cron)]})
            self._guard(functools.partial(self.store.create, self.T_JOB, job_template))
            jobs = sorted(self.store.dependents_of(cron["metadata"]["uid"], self.T_JOB), key=lambda s: s.rv)
            keep = int((cron.get("spec") or {}).get("successfulJobsHistoryLimit", 3))
            for old in jobs[: max(0, len(jobs) - keep)]:
                self._guard(functools.partial(self.store.delete, self.T_JOB, old.namespace, old.name))
            self.store.patch(self.T_CRON, key[0], key[1], {"status": {"lastScheduleTime": rfc3339(now)}}, subresource="status")

    # kubelet

    def _kubelet(self) -> None:
        now = self.clock()
        for key, track in sorted(self._pods.items()):
            if track.stage == "finished":
                continue
            self._guard(functools.partial(self._advance_pod, key, track, now))

    def _advance_pod(self, key: tuple[str, str], track: _PodTrack, now: float) -> None:
        stored = self.store.get(self.T_POD, key[0], key[1])
        if stored is None or stored.uid != track.uid or stored.deleting:
            return
        if track.stage == "pending" and now >= track.bind_at:
            pod = stored.obj()
            node = self._node_names[int(hashlib.md5(key[1].encode()).hexdigest(), 16) % len(self._node_names)]
            pod["spec"]["nodeName"] = node
            pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": rfc3339(now)}]
            self.store.update(self.T_POD, pod)
            track.stage = "bound"
            return
        if track.stage == "bound" and now >= track.start_at:
            pod = stored.obj()
            pod["status"] = running_status(pod, started=now, rng=self.rng)
            self.store.update(self.T_POD, pod, subresource="status")
            track.stage, track.started = "running", now
            return
        if track.stage == "running" and track.run_seconds is not None and now >= track.started + track.run_seconds:
            pod = stored.obj()
            pod["status"] = finished_status(pod, finished=now)
            self.store.update(self.T_POD, pod, subresource="status")
            track.stage = "finished"

    # load

    def generate(self, rate: float, duration: float, *, namespace: str = "load") -> int:
        """Make changes at about ``rate`` events per second for ``duration`` seconds; returns the events made.

        Actions mix what a busy cluster does: bare pods that run and finish, scaling, rollouts, Jobs,
        pod deletions (controllers replace them), ConfigMap updates. The controllers and kubelet run
        in between, so their reactions count toward the rate.
        """
        deployments = [s.name for s in self.store.current(self.T_DEPLOY, _in(namespace))[1]]
        for i in range(len(deployments), 5):
            name = f"app-{i}"
            self.store.create(self.T_DEPLOY, deployment_object(namespace, name, replicas=2, rng=self.rng))
            deployments.append(name)
        start_rv, start = self.store.rv, time.monotonic()
        self.step()
        while (elapsed := time.monotonic() - start) < duration:
            made = self.store.rv - start_rv
            if made >= rate * elapsed:
                time.sleep(min(0.01, max(0.0, duration - elapsed)))
                self.step()
                continue
            self._guard(functools.partial(self._random_action, namespace, deployments))
            self.step()
        return self.store.rv - start_rv

    def _random_action(self, namespace: str, deployments: list[str]) -> None:
        rng, roll = self.rng, self.rng.random()
        if roll < 0.3:
            pod = {"metadata": {"generateName": "task-", "namespace": namespace, "annotations": {RUN_SECONDS: str(round(rng.uniform(0.5, 3), 2))}, "labels": {"app": "task"}}, "spec": {"containers": sample_containers(rng, app="task", count=1), "restartPolicy": "Never"}}
            self.store.create(self.T_POD, pod)
        elif roll < 0.5:
            self.store.patch(self.T_DEPLOY, namespace, rng.choice(deployments), {"spec": {"replicas": rng.randint(1, 4)}})
        elif roll < 0.6:
            name = rng.choice(deployments)
            deploy = self.store.get(self.T_DEPLOY, namespace, name)
            if deploy is not None:
                obj = deploy.obj()
                obj["spec"]["template"]["spec"]["containers"][0]["image"] = f"registry.example.com/team/app:2.{rng.randint(0, 99)}"
                self.store.update(self.T_DEPLOY, obj)
        elif roll < 0.7:
            job = {"metadata": {"generateName": "batch-", "namespace": namespace}, "spec": {"completions": rng.randint(1, 2), "parallelism": 1, "template": {**sample_pod_template(rng, app="batch"), "spec": {**sample_pod_template(rng, app="batch")["spec"], "restartPolicy": "Never"}}}}
            self.store.create(self.T_JOB, job)
        elif roll < 0.85:
            pods = [s for s in self.store.current(self.T_POD, _in(namespace))[1] if not s.deleting]
            if pods:
                victim = rng.choice(pods)
                self.store.delete(self.T_POD, victim.namespace, victim.name)
        else:
            name = f"settings-{rng.randint(0, 4)}"
            data = {"version": str(rng.randint(0, 10**6))}
            if self.store.get(self.T_CM, namespace, name) is None:
                self.store.create(self.T_CM, {"metadata": {"name": name, "namespace": namespace}, "data": data})
            else:
                self.store.patch(self.T_CM, namespace, name, {"data": data})


_ALL = Filter()


def _in(namespace: str) -> Filter:
    return Filter(namespace=namespace)


# --- object builders -------------------------------------------------------------------------------------


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


def _pod_ip(name: str) -> str:
    digest = hashlib.md5(name.encode()).digest()
    return f"10.244.{digest[0] % 16}.{2 + digest[1] % 250}"


def running_status(pod: Obj, *, started: float, rng: random.Random) -> Obj:
    now = rfc3339(started)
    ip = _pod_ip(pod["metadata"]["name"])
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


# --- fast bulk build -------------------------------------------------------------------------------------


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
                    .replace(b"@@IP@@", _pod_ip(pod_name).encode())
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
