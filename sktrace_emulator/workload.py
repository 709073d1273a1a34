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
  pods from ``job_seconds``), terminates with ``finishedAt`` and phase Succeeded; a pod deleted gracefully is
  deleted again with grace 0 (its end) on the next pass, as a kubelet does once the containers stopped.
- In the audit log each write is its writer's request: ``system:serviceaccount:kube-system:<name>-controller``
  for the controllers (``create pods`` by ``replicaset-controller`` or ``job-controller``), ``system:kube-scheduler``
  for the binding (``create pods/binding``), ``system:node:<node>`` for the kubelet (``patch pods/status``, the
  final delete).
- Deleting an owner deletes its dependents: the store's garbage collector does that, as on a real cluster.

It follows the store's history like a watch (its own position per kind), so it reacts to objects made
by anyone (kubectl over HTTP, tests calling ``Emulator.create``). ``step()`` is one synchronous pass;
``start()`` runs passes in a thread. The clock is injected so tests can move time by hand.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import threading
import time
from dataclasses import dataclass
from typing import Callable

from sktrace_emulator import audit, deletes, load, statusflows
from sktrace_emulator.builders import (
    replicaset_object,
    EVERY_SECONDS,
    RUN_SECONDS,
    deployment_object,
    finished_status,
    node_object,
    owner_reference,
    pod_from_template,
    running_status,
    template_hash,
)
from sktrace_emulator.records import ApiError, Obj, ResourceType, Stored, rfc3339
from sktrace_emulator.selectors import Filter
from sktrace_emulator.server import Emulator
from sktrace_emulator.state import Store


_CONTROLLERS = {kind: audit.controller(name) for kind, name in (
    ("CronJob", "cronjob-controller"), ("Deployment", "deployment-controller"), ("ReplicaSet", "replicaset-controller"), ("Job", "job-controller"))}


@dataclass
class _PodTrack:
    uid: str
    bind_at: float
    start_at: float
    run_seconds: float | None
    stage: str = "pending"  # pending -> bound -> running (or pulling, for ever) -> finished
    started: float = 0.0
    ready_at: float | None = None  # when a running pod's readiness probe first succeeds (None: ready)
    oom_at: float | None = None  # when its first container is OOM-killed, once
    restart_at: float | None = None  # when a killed container starts again
    retries: int = 0  # image pulls failed so far


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
        """Reconcile everything due now: Terminating namespaces, CronJob schedules, then owners down to pods, then the kubelet."""
        self.store.finish_namespaces()
        self._drain()
        self._cron_schedules()
        self._drain()
        for _ in range(4):  # a few rounds, so a Deployment reaches its Pods within one step
            for rt, reconcile in ((self.T_CRON, self._reconcile_cronjob), (self.T_DEPLOY, self._reconcile_deployment), (self.T_RS, self._reconcile_replicaset), (self.T_JOB, self._reconcile_job)):
                keys, self._dirty[rt] = sorted(self._dirty[rt]), set()
                with deletes.acting(self.store, _CONTROLLERS[rt.kind]):
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
        self.store.namespace_controller = True  # while it runs, a deleted namespace is Terminating until its next step
        self.store.kubelet = True  # and a pod deleted gracefully until its kubelet's final delete
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
        self.store.namespace_controller = self.store.kubelet = False

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
        current = next((rs for rs in owned if rs["metadata"].get("labels", {}).get("pod-template-hash") == pod_hash), None)
        created = current is None
        if current is None:
            running = any(int(rs["spec"].get("replicas", 0)) for rs in owned)  # a new template's set grows by the rollout
            current = self.store.create(self.T_RS, replicaset_object(deploy, pod_hash, 0 if running else desired, owned)).obj()
            owned.append(current)
        olds = [rs for rs in owned if rs["metadata"]["name"] != current["metadata"]["name"]]

        def counts(rs: Obj) -> tuple[str, int, int]:
            return rs["metadata"]["name"], int(rs["spec"].get("replicas", 0)), int((rs.get("status") or {}).get("availableReplicas", 0))

        targets = statusflows.rolling_targets(desired, spec.get("strategy") or {}, counts(current), [counts(rs) for rs in olds])
        for rs in owned:
            if int(rs["spec"].get("replicas", 0)) != targets[rs["metadata"]["name"]]:
                self.store.patch(self.T_RS, key[0], rs["metadata"]["name"], {"spec": {"replicas": targets[rs["metadata"]["name"]]}})
        status = statusflows.deployment_status(deploy, owned, current["metadata"]["name"], created=created, now=self.clock())
        if not statusflows.same_status(deploy.get("status") or {}, status):
            self.store.patch(self.T_DEPLOY, key[0], key[1], {"status": statusflows.status_patch(deploy.get("status") or {}, status)}, subresource="status")

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
        # counted before this pass's creations and deletions: the next pass (their events) corrects it
        status = statusflows.replicaset_status(rs, [s.obj() for s in pods])
        if (rs.get("status") or {}) != status:
            self.store.patch(self.T_RS, key[0], key[1], {"status": statusflows.status_patch(rs.get("status") or {}, status)}, subresource="status")

    def _reconcile_job(self, key: tuple[str, str]) -> None:
        job = self._get(self.T_JOB, key)
        if job is None:
            return
        status = job.get("status") or {}
        if any(c.get("type") in ("Complete", "Failed") for c in status.get("conditions") or []):
            return
        pods = [s.obj() for s in self.store.dependents_of(job["metadata"]["uid"], self.T_POD) if not s.deleting]
        new_status, wanted = statusflows.job_status(job, pods, now=self.clock())
        fail_first = int(((job.get("spec") or {}).get("template", {}).get("metadata", {}).get("annotations") or {}).get(statusflows.FAIL_FIRST, 0))
        for n in range(wanted):
            low, high = self.job_seconds
            pod = pod_from_template(job, self.rng, job_name=key[1], run_seconds=round(self.rng.uniform(low, high), 2))
            if len(pods) + n < fail_first:
                pod["metadata"]["annotations"][statusflows.EXIT_CODE] = "1"
            self.store.create(self.T_POD, pod)
        if not statusflows.same_status(status, new_status):
            self.store.patch(self.T_JOB, key[0], key[1], {"status": statusflows.status_patch(status, new_status)}, subresource="status")

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
        if stored is None or stored.uid != track.uid:
            return
        if stored.deleting:  # its containers stop at once: the final delete, grace 0
            if not stored.finalizers and stored.fields.get("spec.nodeName"):
                deletes.final_delete(self.store, stored)
            return
        with deletes.acting(self.store, audit.SCHEDULER if track.stage == "pending" else deletes.kubelet_of(stored.obj())):
            self._advance_live_pod(key, track, now, stored)

    def _advance_live_pod(self, key: tuple[str, str], track: _PodTrack, now: float, stored: Stored) -> None:
        if track.stage == "pending" and now >= track.bind_at:
            self._bind(key, track, stored.obj(), now)
        elif track.stage == "bound" and now >= track.start_at:
            self._start(track, stored.obj(), now)
        elif track.stage == "pulling" and now >= track.start_at:
            self._pull_again(track, stored.obj(), now)
        elif track.stage == "running":
            self._running(track, stored.obj(), now)

    def _bind(self, key: tuple[str, str], track: _PodTrack, pod: Obj, now: float) -> None:
        nodes = self._fitting_nodes(pod)
        if not nodes:  # the scheduler's verdict, once; the pod stays Pending, as on a real cluster
            pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "lastProbeTime": None, "lastTransitionTime": rfc3339(now),
                                            "reason": "Unschedulable", "message": f"0/{len(self._node_names)} nodes are available: "
                                            f"{len(self._node_names)} node(s) didn't match Pod's node affinity/selector."}]
            self.store.update(self.T_POD, pod, subresource="status")
            track.stage = "unschedulable"
            return
        pod["spec"]["nodeName"] = nodes[int(hashlib.md5(key[1].encode()).hexdigest(), 16) % len(nodes)]
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": rfc3339(now)}]
        self.store.update(self.T_POD, pod)
        track.stage = "bound"

    def _start(self, track: _PodTrack, pod: Obj, now: float) -> None:
        """The kubelet starts the pod's containers: pulled (running; ready once its probe passes) or not (waiting)."""
        status = running_status(pod, started=now, rng=self.rng)
        if statusflows.unpullable(pod):
            pod["status"] = statusflows.pull_failed(status, pod, retry=0, now=now)
            track.stage, track.start_at, track.retries = "pulling", now + statusflows.PULL_RETRY_SECONDS, 1
        else:
            ready_after, oom_after = (statusflows.annotation_seconds(pod, name) for name in (statusflows.READY_AFTER, statusflows.OOM_AFTER))
            track.ready_at = now + ready_after if ready_after else None
            track.oom_at = now + oom_after if oom_after is not None else None
            pod["status"] = statusflows.set_ready(status, False, now) if track.ready_at is not None else status
            track.stage, track.started = "running", now
        self.store.update(self.T_POD, pod, subresource="status")

    def _pull_again(self, track: _PodTrack, pod: Obj, now: float) -> None:
        pod["status"] = statusflows.pull_failed(pod.get("status") or {}, pod, retry=track.retries, now=now)
        track.retries += 1
        track.start_at = now + statusflows.PULL_RETRY_SECONDS
        self.store.update(self.T_POD, pod, subresource="status")

    def _running(self, track: _PodTrack, pod: Obj, now: float) -> None:
        """A running pod: ready once its probe passes, OOM-killed and restarted when asked, finished when its run ends."""
        status, ready_after = pod.get("status") or {}, statusflows.annotation_seconds(pod, statusflows.READY_AFTER)
        if track.run_seconds is not None and now >= track.started + track.run_seconds:
            code = int(statusflows.annotation_seconds(pod, statusflows.EXIT_CODE) or 0)
            pod["status"] = statusflows.failed(status, now, code) if code else finished_status(pod, finished=now)
            track.stage = "finished"
        elif track.oom_at is not None and now >= track.oom_at:
            pod["status"], track.oom_at, track.restart_at, track.ready_at = statusflows.oom_killed(status, now), None, now + 1, None
        elif track.restart_at is not None and now >= track.restart_at:
            track.restart_at, track.ready_at = None, now + ready_after if ready_after else None
            pod["status"] = statusflows.restarted(status, now, ready=track.ready_at is None)
        elif track.ready_at is not None and now >= track.ready_at:
            pod["status"], track.ready_at = statusflows.set_ready(status, True, now), None
        else:
            return
        self.store.update(self.T_POD, pod, subresource="status")

    def _fitting_nodes(self, pod: Obj) -> list[str]:
        """The nodes whose labels hold every pair of the pod's ``nodeSelector`` (all of them without one)."""
        wanted = (pod.get("spec") or {}).get("nodeSelector") or {}
        if not wanted:
            return self._node_names
        fitting = []
        for name in self._node_names:
            node = self.store.get(self.T_NODE, "", name)
            labels = (node.obj()["metadata"].get("labels") or {}) if node is not None else {}
            if all(labels.get(key) == value for key, value in wanted.items()):
                fitting.append(name)
        return fitting

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
            self._guard(functools.partial(load.random_action, self.store, self.rng, namespace, deployments))
            self.step()
        return self.store.rv - start_rv

_ALL = Filter()


def _in(namespace: str) -> Filter:
    return Filter(namespace=namespace)
