"""A restart that lists skips what the last clean stop left unchanged (``record/unchanged``), and the cache gets the same
rows as without the skip.

Over a real sqlite cache, with no cluster and no threads (``Ingest`` fed as the watch loop feeds it, times given): a
random cluster (Deployments and ConfigMaps tracked, ReplicaSets as owners, pods with lifecycles) is recorded by a
first run (its lists, then live events) that stops cleanly; while stopped it changes at random (specs, labels, data,
statuses, deletions, re-creations under the same name with a new uid, new objects, pods started, finished, deleted and
new); then the same cache, copied, is restarted twice against that cluster: once trusting what the clean stop kept (it
skips the unchanged objects), once with nothing kept (it walks every object). Each restart lists every kind, then
sees live changes of objects it skipped and of others, and stops cleanly. Every table of the two caches is then equal,
row for row (the versions kept for the next start included), and so are the indexes the live path reads.
"""

from __future__ import annotations

import copy
import random
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

import pytest

from kubectl_sktrace import __version__
from kubectl_sktrace.model import GVK, POD, REPLICASET
from kubectl_sktrace.record import unchanged
from kubectl_sktrace.record.ingest import Ingest
from kubectl_sktrace.store import open_cache, stopped
from kubectl_sktrace.store.recording import Identity, PreviousRun, Recording
from kubectl_sktrace.tracerconfig import TracerConfig, TrackedObject

DEPLOY = GVK("apps", "v1", "Deployment")
CM = GVK("", "v1", "ConfigMap")
T0 = 1_800_000_000.0
IDENTITY = Identity(server="https://cluster", cluster_uid="kube-system-uid", context="ctx", namespace="")
KINDS = (DEPLOY, CM, REPLICASET, POD)


def _iso(ts: float) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Cluster:
    """Objects as an API server holds them: every write gives its object the next resourceVersion."""

    def __init__(self, rng: random.Random) -> None:
        self.rng, self.version, self.made = rng, 100, 0
        self.objects: dict[tuple[GVK, str], dict[str, Any]] = {}

    def write(self, gvk: GVK, obj: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        obj["metadata"]["resourceVersion"] = str(self.version)
        self.objects[(gvk, obj["metadata"]["name"])] = obj
        return obj

    def _meta(self, name: str, created: float, owner: tuple[str, str, str] | None = None) -> dict[str, Any]:
        self.made += 1
        meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{self.made}", "creationTimestamp": _iso(created),
                                "labels": {"app": name}}
        if owner is not None:
            kind, owner_name, uid = owner
            meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": kind, "name": owner_name, "uid": uid, "controller": True}]
        return meta

    def deployment(self, name: str, created: float) -> dict[str, Any]:
        obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": self._meta(name, created),
               "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": f"img:{name}"}]}}},
               "status": {"replicas": 1, "readyReplicas": 1}}
        self.write(DEPLOY, obj)
        rs = self.write(REPLICASET, {"apiVersion": "apps/v1", "kind": "ReplicaSet",  # a name of its own: one re-created is another
                                     "metadata": self._meta(f"{name}-{self.made}", created, ("Deployment", name, obj["metadata"]["uid"])),
                                     "spec": {"replicas": 1}})
        self.pod(f"{rs['metadata']['name']}-a", created, rs)
        return obj

    def pod(self, name: str, created: float, rs: dict[str, Any]) -> dict[str, Any]:
        return self.write(POD, {"apiVersion": "v1", "kind": "Pod",
                                "metadata": self._meta(name, created, ("ReplicaSet", rs["metadata"]["name"], rs["metadata"]["uid"])),
                                "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "img"}]},
                                "status": {"phase": "Pending"}})

    def configmap(self, name: str, created: float) -> dict[str, Any]:
        return self.write(CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": self._meta(name, created),
                               "data": {"mode": self.rng.choice("abc")}})

    def items(self, gvk: GVK) -> list[dict[str, Any]]:
        """A list's items, as a server sends them (no apiVersion nor kind)."""
        out = []
        for (kind, _), obj in sorted(self.objects.items(), key=lambda kv: kv[0][1]):
            if kind == gvk:
                item = copy.deepcopy(obj)
                del item["apiVersion"], item["kind"]
                out.append(item)
        return out

    def named(self, gvk: GVK) -> list[str]:
        return sorted(name for kind, name in self.objects if kind == gvk)

    def change(self, gvk: GVK, name: str, at: float) -> tuple[str, dict[str, Any]]:
        """One random change of an object: the watch event it makes (a deletion's names the last version)."""
        obj = self.objects[(gvk, name)]
        what = self.rng.choice({DEPLOY: ["spec", "labels", "status", "delete", "recreate"], CM: ["data", "labels", "delete", "recreate"],
                                POD: ["start", "finish", "delete", "status"], REPLICASET: ["labels"]}[gvk])
        if what == "delete":
            return "DELETED", self.objects.pop((gvk, name))
        if what == "recreate":
            return "ADDED", self.deployment(name, at) if gvk == DEPLOY else self.configmap(name, at)
        obj = copy.deepcopy(obj)
        if what == "spec":
            obj["spec"]["replicas"] += 1
        elif what == "labels":
            obj["metadata"]["labels"]["tier"] = self.rng.choice("xyz")
        elif what == "data":
            obj["data"]["mode"] = obj["data"]["mode"] + "!"
        elif what == "status" and gvk == DEPLOY:
            obj["status"]["readyReplicas"] = 0
        elif what == "status":
            obj["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
        else:
            state = {"running": {"startedAt": _iso(at - 30)}} if what == "start" else {
                "terminated": {"startedAt": _iso(at - 30), "finishedAt": _iso(at - 2), "exitCode": 0}}
            obj["status"] = {"phase": "Running" if what == "start" else "Succeeded",
                             "containerStatuses": [{"name": "c", "ready": what == "start", "state": state}]}
        return "MODIFIED", self.write(gvk, obj)

    def changes(self, at: float, share: float) -> list[tuple[GVK, str, dict[str, Any]]]:
        """Random changes to a share of the objects of every kind, and new objects: the watch events they make."""
        done = []
        for gvk in KINDS:
            names = self.named(gvk)
            for name in self.rng.sample(names, max(1, int(len(names) * share))):
                if (gvk, name) in self.objects:
                    done.append((gvk, *self.change(gvk, name, at)))
        for _ in range(self.rng.randint(1, 3)):
            done.append((DEPLOY, "ADDED", self.deployment(f"new-{self.made}", at)))
            done.append((CM, "ADDED", self.configmap(f"new-{self.made}", at)))
        return done


def _cluster(rng: random.Random) -> Cluster:
    cluster = Cluster(rng)
    for i in range(30):
        cluster.deployment(f"d{i:02}", T0 - 1000)
        cluster.configmap(f"c{i:02}", T0 - 1000)
    return cluster


def _config(pods_tracked: bool) -> TracerConfig:
    tracked = {DEPLOY: TrackedObject(pod_spec_template_paths=("/spec/template",), track_lifecycle=True), CM: TrackedObject()}
    if pods_tracked:
        tracked[POD] = TrackedObject()
    return TracerConfig(tracked=tracked)


def _run(path: Path, cluster: Cluster, config: TracerConfig, *, started: float, live: list[tuple[GVK, str, dict[str, Any]]],
         trust: bool = True, after_lists: Any = None) -> Ingest:
    """One run into the cache at ``path``: every kind listed, then ``live`` as watch events, then a clean stop."""
    with open_cache(path, create=True) as cache:
        rec = Recording(cache)
        rec.check_identity(IDENTITY)
        previous = rec.previous_run()
        run = rec.begin_run(started=started, pid=1, config_yaml="")
        versions = unchanged.last_stop(rec, previous, cluster_uid=IDENTITY.cluster_uid) if trust else unchanged.Versions()
        ing = Ingest(recording=rec, run_id=run, config=config, owner_kinds={REPLICASET}, fetch_owner=lambda key: None,
                     gap_start=None if previous is None else previous.stopped, restart=started, initial_kinds=frozenset(KINDS),
                     versions=versions)
        rec.begin()
        for n, gvk in enumerate(KINDS):
            ing.relist_begin(gvk, started + 1 + n)
            items = cluster.items(gvk)
            for page in range(0, len(items), 7):
                ing.relist_page(gvk, items[page:page + 7], started + 1 + n)
            ing.relist_end(gvk, str(cluster.version), started + 1 + n)
        if after_lists is not None:
            after_lists(ing)
        for n, (gvk, kind, obj) in enumerate(live):
            ing.event(gvk, kind, copy.deepcopy(obj), started + 10 + n)
        ing.before_commit(started + 90)
        rec.commit()
        unchanged.keep(rec, run, ing.versions, ing.status.known)
        rec.stop_run(run, started + 100, clean=True)
    return ing


def _tables(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    with open_cache(path, create=False) as cache:
        names = [row[0] for row in cache.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {name: cache.conn.execute(f"SELECT * FROM {name}").fetchall() for name in names}


def _indexes(ing: Ingest) -> dict[str, Any]:
    """What the live path reads next: the status index, the live index (its hashes), the pods' lifecycles, the owners."""
    live = {g: {k: replace(v, spec_fp=None, meta_fp=None) for k, v in objs.items()} for g, objs in ing.live.items()}  # in memory only
    return {"status": dict(ing.status.known), "live": live, "pods": {uid: (p.namespace, p.name, p.owner, p.life) for uid, p in ing.pods.items()},
            "owners": dict(ing.owners)}


@pytest.mark.parametrize("pods_tracked", [False, True], ids=["pods-for-lifecycles", "pods-tracked"])
@pytest.mark.parametrize("seed", range(6))
def test_a_restart_that_skips_the_unchanged_writes_what_one_that_walks_them_does(tmp_path: Path, seed: int, pods_tracked: bool) -> None:
    rng = random.Random(seed)
    cluster, config = _cluster(rng), _config(pods_tracked)
    first = tmp_path / "first.db"
    _run(first, cluster, config, started=T0, live=cluster.changes(T0 + 5, 0.2))
    cluster.changes(T0 + 300, rng.choice([0.05, 0.3]))  # while stopped
    listed = Cluster(rng)  # what the restart lists; then it sees changes live
    listed.objects, listed.version = copy.deepcopy(cluster.objects), cluster.version
    later = cluster.changes(T0 + 505, 0.2)
    skip, walk = tmp_path / "skip.db", tmp_path / "walk.db"
    shutil.copy(first, skip)
    shutil.copy(first, walk)
    seen: dict[str, dict[str, Any]] = {}
    skipping = _run(skip, listed, config, started=T0 + 500, live=later, after_lists=lambda ing: seen.update(skip=_indexes(ing)))
    walking = _run(walk, listed, config, started=T0 + 500, live=later, trust=False, after_lists=lambda ing: seen.update(walk=_indexes(ing)))
    assert skipping.versions.unchanged > 0 and walking.versions.unchanged == 0
    assert seen["skip"] == seen["walk"]
    assert _tables(skip) == _tables(walk)


CLEAN = PreviousRun(id=4, started=T0, stopped=T0 + 100, clean=True)


@pytest.mark.parametrize(("previous", "written_by", "cluster_uid", "stored_uid", "trusted"), [
    (CLEAN, __version__, "u1", "u1", True),
    (None, __version__, "u1", "u1", False),  # a new cache
    (PreviousRun(id=4, started=T0, stopped=T0 + 100, clean=False), __version__, "u1", "u1", False),  # it crashed
    (CLEAN, "0.1.0", "u1", "u1", False),  # another kubectl-sktrace wrote them
    (CLEAN, None, "u1", "u1", False),  # none written yet
    (CLEAN, __version__, "u1", "u2", False),  # another cluster
    (CLEAN, __version__, "", "", False),  # a cluster whose identity could not be read
], ids=["clean", "no-run", "crashed", "other-version", "none-written", "other-cluster", "no-identity"])
def test_the_versions_of_the_last_stop_are_trusted_only_after_a_clean_one_by_this_recorder_on_this_cluster(
        previous: PreviousRun | None, written_by: str | None, cluster_uid: str, stored_uid: str, trusted: bool) -> None:
    assert unchanged.trusted(previous=previous, written_by=written_by, cluster_uid=cluster_uid, stored_uid=stored_uid) is trusted


def test_a_run_that_crashed_leaves_no_versions_the_next_start_trusts(tmp_path: Path) -> None:
    """The versions kept by the clean stop before a crashed run describe the state at that stop, not what the crashed run
    applied: the next start walks every object, and its own clean stop keeps only its own versions."""
    rng = random.Random(7)
    cluster, config, path = _cluster(rng), _config(False), tmp_path / "cache.db"
    _run(path, cluster, config, started=T0, live=[])
    with open_cache(path, create=False) as cache:
        kept = stopped.load(cache, 1)
        assert len(kept) == 90 and cache.get_meta(stopped.RECORDER) == __version__  # 30 Deployments, ConfigMaps and pods (no owner)
        rec = Recording(cache)
        crashed = rec.begin_run(started=T0 + 200, pid=2, config_yaml="")  # then killed: no clean stop, its rows never kept
        assert unchanged.last_stop(rec, rec.previous_run(), cluster_uid=IDENTITY.cluster_uid).stopped == {}
    after = _run(path, cluster, config, started=T0 + 500, live=[])
    assert after.versions.unchanged == 0 and after.versions.carried_from is None
    with open_cache(path, create=False) as cache:
        assert stopped.load(cache, 1) == {} and stopped.load(cache, crashed) == {}
        assert stopped.load(cache, crashed + 1) == kept  # the same versions, now this run's
    again = _run(path, cluster, config, started=T0 + 900, live=[])
    assert again.versions.unchanged == 90
