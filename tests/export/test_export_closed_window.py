"""Exports of a closed window are stable: recording more history after the window end changes no byte.

A simulated cluster (Deployments with their ReplicaSets and pods, ConfigMaps, bare pods) changes at random;
a recorder made of the real ``ingest.Ingest`` over a real cache watches it, commits its batches, stops
cleanly, crashes (losing its open batch) and restarts (the restart's lists run one kind at a time, so an
export can fall in the middle of an initial sync). At a random moment the window ``[start_ts, end_ts)``
with ``end_ts`` at or before that moment is exported; then more history is recorded — pods start, finish
and vanish, the recorder crashes and restarts — and the same window is exported again: the two traces must
be byte-identical, and so must what the export reports.

What the model assumes of the recorder (the guarantees export builds on): while a kind is watched, every
change reaches the recorder at the moment it happens (no outage), except that a new pod may first be seen
a little after its container started; a commit moves the run's heartbeat to the moment it runs. Container and creation times are those of the cluster, truncated
to seconds, as the API server gives them.
"""

from __future__ import annotations

import copy
import io
import itertools
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_sktrace.export.options import ExportFilters
from kubectl_sktrace.export.window import ExportReport, export_trace
from kubectl_sktrace.model import GVK, POD, REPLICASET, ObjKey
from kubectl_sktrace.record.ingest import Ingest
from kubectl_sktrace.store import Cache, open_cache
from kubectl_sktrace.store.recording import Recording
from kubectl_sktrace.tracerconfig import config_to_yaml, parse_config

DEPLOY = GVK("apps", "v1", "Deployment")
CONFIGMAP = GVK("", "v1", "ConfigMap")
CONFIG = parse_config({"trackedObjects": {
    "apps/v1.Deployment": {"trackLifecycle": True},
    "v1.ConfigMap": {},
    "v1.Pod": {"trackLifecycle": True, "skipOwned": True},  # bare pods: their own lifecycle owners
}}, source="the test config")
LIST_ORDER = (DEPLOY, CONFIGMAP, REPLICASET, POD)  # the recorder lists pods last, after their owners
T0 = 1_800_000_000.0
NS = "app"


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Cluster:
    """The truth: objects by kind and key, each with a fresh uid per creation and a resourceVersion."""

    now: float = T0
    objects: dict[GVK, dict[ObjKey, dict[str, Any]]] = field(default_factory=lambda: {g: {} for g in LIST_ORDER})
    uids: "itertools.count[int]" = field(default_factory=itertools.count)
    rv: int = 0

    def _meta(self, gvk: GVK, name: str) -> dict[str, Any]:
        self.rv += 1
        return {"name": name, "namespace": NS, "uid": f"{gvk.kind.lower()}-{name}-{next(self.uids)}",
                "resourceVersion": str(self.rv), "creationTimestamp": iso(self.now)}

    def touch(self, body: dict[str, Any]) -> None:
        self.rv += 1
        body["metadata"]["resourceVersion"] = str(self.rv)

    def deployment(self, name: str, replicas: int) -> dict[str, Any]:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": self._meta(DEPLOY, name),
                "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}

    def replicaset(self, name: str, owner: dict[str, Any]) -> dict[str, Any]:
        meta = self._meta(REPLICASET, name)
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": owner["metadata"]["name"],
                                    "uid": owner["metadata"]["uid"], "controller": True}]
        return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta, "spec": {"replicas": 1}}

    def pod(self, name: str, owner: dict[str, Any] | None) -> dict[str, Any]:
        meta = self._meta(POD, name)
        if owner is not None:
            meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner["metadata"]["name"],
                                        "uid": owner["metadata"]["uid"], "controller": True}]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]},
                "status": {"containerStatuses": [{"name": "c", "state": {"waiting": {"reason": "ContainerCreating"}}}]}}

    def configmap(self, name: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": self._meta(CONFIGMAP, name), "data": {"k": name}}


class Recorder:
    """The real ``Ingest`` over a real cache, driven the way ``recorder.Session`` and ``Writer`` drive it."""

    def __init__(self, path: Path, cluster: Cluster) -> None:
        self.cache = open_cache(path, create=True)
        self.rec = Recording(self.cache)
        self.cluster = cluster
        self.ingest: Ingest | None = None
        self.to_list: list[GVK] = []
        self.last_commit = 0.0

    @property
    def running(self) -> bool:
        return self.ingest is not None

    def start(self, kinds_now: int) -> None:
        if self.ingest is not None:
            return
        now = self.cluster.now
        previous = self.rec.previous_run()
        run_id = self.rec.begin_run(started=now, pid=1, config_yaml=config_to_yaml(CONFIG))
        self.rec.begin()
        self.last_commit = now
        self.ingest = Ingest(
            recording=self.rec, run_id=run_id, config=CONFIG, owner_kinds={REPLICASET}, fetch_owner=self._fetch,
            gap_start=None if previous is None else previous.stopped, restart=now,
        )
        self.to_list = list(LIST_ORDER)
        for _ in range(kinds_now):
            self.list_next()

    def _fetch(self, key: ObjKey) -> dict[str, Any] | None:
        found = self.cluster.objects.get(key.gvk, {}).get(key)
        return copy.deepcopy(found) if found is not None else None

    def list_next(self) -> None:
        """The next kind's initial list (at the current time); after the last one, the run is synced."""
        if self.ingest is None or not self.to_list:
            return
        gvk, now = self.to_list.pop(0), self.cluster.now
        self.ingest.relist_begin(gvk, now)
        self.ingest.relist_page(gvk, [copy.deepcopy(o) for o in self.cluster.objects[gvk].values()], now)
        self.ingest.relist_end(gvk, str(self.cluster.rv), now)
        if not self.to_list:
            self.rec.mark_synced(self.ingest.run_id, now)
            self.commit()

    def event(self, gvk: GVK, event_type: str, body: dict[str, Any]) -> None:
        """A watch event, received when it happens, by a kind whose initial list is done."""
        if self.ingest is not None and gvk not in self.to_list:
            self.ingest.event(gvk, event_type, copy.deepcopy(body), self.cluster.now)

    def commit(self) -> None:
        if self.ingest is None:
            return
        self.ingest.before_commit(self.cluster.now)
        self.rec.commit()
        self.rec.begin()
        self.last_commit = self.cluster.now

    def stop(self) -> None:
        if self.ingest is None:
            return
        self.ingest.before_commit(self.cluster.now)
        self.rec.commit()
        self.rec.stop_run(self.ingest.run_id, self.cluster.now, clean=True)
        self.ingest = None

    def crash(self) -> None:
        """``kill -9``: the open batch is lost; the run ends at its last heartbeat."""
        if self.ingest is None:
            return
        self.rec.rollback()
        self.ingest = None


class World:
    """The cluster and the recorder watching it; ``step`` applies one drawn action."""

    def __init__(self, path: Path) -> None:
        self.cluster = Cluster()
        self.recorder = Recorder(path, self.cluster)
        self.generation = 0

    def _put(self, gvk: GVK, body: dict[str, Any], event_type: str) -> None:
        key = ObjKey(gvk, NS, body["metadata"]["name"])
        self.cluster.objects[gvk][key] = body
        self.recorder.event(gvk, event_type, body)

    def _remove(self, gvk: GVK, name: str) -> None:
        body = self.cluster.objects[gvk].pop(ObjKey(gvk, NS, name), None)
        if body is not None:
            self.cluster.touch(body)
            self.recorder.event(gvk, "DELETED", body)

    def _pods(self, phase: str) -> list[dict[str, Any]]:
        def state(p: dict[str, Any]) -> str:
            return next(iter(p["status"]["containerStatuses"][0]["state"]))

        return [p for p in self.cluster.objects[POD].values() if phase == "any" or state(p) == phase]

    def _pod_state(self, body: dict[str, Any], state: dict[str, Any]) -> None:
        self.cluster.touch(body)
        body["status"]["containerStatuses"][0]["state"] = state
        self.recorder.event(POD, "MODIFIED", body)

    def step(self, op: str, n: int, dt: float) -> None:
        self.cluster.now += dt
        c, rec = self.cluster, self.recorder
        if op == "deploy":
            name = f"d{n % 4}"
            known = c.objects[DEPLOY].get(ObjKey(DEPLOY, NS, name))
            if known is None:
                known = c.deployment(name, 1 + n % 2)
                self._put(DEPLOY, known, "ADDED")
            else:  # scaled: a new spec, one more pod
                c.touch(known)
                known["spec"]["replicas"] += 1
                self._put(DEPLOY, known, "MODIFIED")
            self.generation += 1
            rs = c.replicaset(f"{name}-{self.generation}", known)
            self._put(REPLICASET, rs, "ADDED")
            self._put(POD, c.pod(f"{rs['metadata']['name']}-p", rs), "ADDED")
        elif op == "undeploy":
            name = f"d{n % 4}"
            for key in [k for k, rs in c.objects[REPLICASET].items() if rs["metadata"]["ownerReferences"][0]["name"] == name]:
                for pod in [p for p in self._pods("any") if p["metadata"].get("ownerReferences", [{}])[0].get("name") == key.name]:
                    self._remove(POD, pod["metadata"]["name"])
                self._remove(REPLICASET, key.name)
            self._remove(DEPLOY, name)
        elif op == "configmap":
            name = f"c{n % 3}"
            if ObjKey(CONFIGMAP, NS, name) in c.objects[CONFIGMAP]:
                self._remove(CONFIGMAP, name)
            else:
                self._put(CONFIGMAP, c.configmap(name), "ADDED")
        elif op == "bare":
            name = f"b{n % 4}"
            if ObjKey(POD, NS, name) not in c.objects[POD]:
                self._put(POD, c.pod(name, None), "ADDED")
        elif op == "late_pod":  # first seen a little after its container started (a slow watch, the node's clock)
            owners = list(c.objects[REPLICASET].values())
            owner = owners[n % len(owners)] if owners and n % 3 else None
            self.generation += 1
            pod = c.pod(f"late-{self.generation}", owner)
            pod["status"]["containerStatuses"][0]["state"] = {"running": {"startedAt": iso(c.now - 0.7 * (1 + n % 4))}}
            self._put(POD, pod, "ADDED")
        elif op in ("start_pod", "finish_pod", "vanish_pod"):
            phase = {"start_pod": "waiting", "finish_pod": "running", "vanish_pod": "any"}[op]
            pods = self._pods(phase)
            if pods:
                pod = pods[n % len(pods)]
                if op == "start_pod":
                    self._pod_state(pod, {"running": {"startedAt": iso(c.now)}})
                elif op == "finish_pod":
                    started = pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
                    self._pod_state(pod, {"terminated": {"startedAt": started, "finishedAt": iso(c.now), "exitCode": 0}})
                else:
                    self._remove(POD, pod["metadata"]["name"])
        elif op == "restart":
            rec.start(kinds_now=len(LIST_ORDER) if n >= 5 else n)  # mostly a whole initial sync at once
        elif op == "list":
            rec.list_next()
        elif op == "stop":
            rec.stop()
        elif op == "crash":
            rec.crash()
        if rec.running and (op == "commit" or c.now - rec.last_commit >= 0.25):
            rec.commit()  # the writer commits at least every quarter second

    def settle(self) -> None:
        """What a recorder has committed by now: the writer commits at least every quarter second, so a
        moment later every batch received before now is durable, with the heartbeat moved to now."""
        self.recorder.commit()

    def epilogue(self, draw_n: int) -> None:
        """More history after the window: every pod finishes, some vanish, a crash and a full restart."""
        for i, pod in enumerate(self._pods("waiting")):
            self.step("start_pod", i, 0.4)
        while self._pods("running"):
            self.step("finish_pod", draw_n, 0.7)
        self.step("crash", 0, 0.3)
        self.step("vanish_pod", draw_n, 1.1)
        self.step("undeploy", draw_n, 0.6)
        self.step("restart", len(LIST_ORDER), 2.0)
        self.step("vanish_pod", draw_n + 1, 0.5)
        self.step("stop", 0, 0.5)


def export(cache: Cache, start_ts: int, end_ts: int) -> tuple[bytes, ExportReport]:
    out = io.BytesIO()
    report = export_trace(cache, start_ts=start_ts, end_ts=end_ts, filters=ExportFilters(include_namespaces=frozenset({NS})),
                          keep_status=False, fmt="sktrace", stream=out, allow_empty=True)
    return out.getvalue(), report


OPS = (
    *["deploy"] * 3, "undeploy", *["configmap"] * 2, *["bare"] * 2, *["start_pod"] * 5, *["finish_pod"] * 4, *["vanish_pod"] * 2,
    "late_pod", *["restart"] * 2, *["list"] * 2, "stop", "crash", "commit", "wait",
)
STEP = st.tuples(st.sampled_from(OPS), st.integers(0, 11), st.sampled_from([0.0, 0.1, 0.3, 0.6, 1.0, 2.4, 7.0]))


@settings(max_examples=150, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_closed_window_exports_the_same_bytes_after_more_history(data: st.DataObject) -> None:
    before = data.draw(st.lists(STEP, min_size=10, max_size=50), label="steps before the first export")
    after = data.draw(st.lists(STEP, max_size=30), label="steps after it")
    with tempfile.TemporaryDirectory() as scratch:
        world = World(Path(scratch) / "cache.db")
        world.recorder.start(kinds_now=len(LIST_ORDER))
        for op, n, dt in before:
            world.step(op, n, dt)
        world.settle()
        moment = world.cluster.now
        end_ts = max(int(T0), int(moment) - data.draw(st.integers(0, 15), label="seconds from the window end to the export"))
        start_ts = end_ts - data.draw(st.integers(1, 30), label="window length")
        with open_cache(Path(scratch) / "cache.db", create=False) as reader:
            first = export(reader, start_ts, end_ts)
            world.step("late_pod", data.draw(st.integers(0, 11), label="late pod"), 0.1)  # seen after the window, started before
            for op, n, dt in after:
                world.step(op, n, dt)
            world.epilogue(data.draw(st.integers(0, 11), label="epilogue"))
            world.settle()
            second = export(reader, start_ts, end_ts)
        world.recorder.cache.close()
    assert second[0] == first[0], "the trace of a closed window changed after more history was recorded"
    assert second[1] == first[1]
