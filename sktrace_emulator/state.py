"""The emulator's object store: the part of an API server that etcd and the apiserver's storage layer play.

Guarantees, matching what clients of a real server rely on:

- One global resourceVersion counter (a string of an integer in every object and list); every write
  (create, update, patch, delete, each step of a graceful deletion) takes the next value.
- uids (uuid4), ``creationTimestamp`` (RFC 3339, ``Z``), ``generation`` for kinds with a spec, assigned on
  create; ``generateName`` gets five random characters like the real server.
- Every object is serialized to JSON **once per change** and kept only as those bytes (``Stored.raw``),
  with ``apiVersion`` and ``kind`` as the first two keys so a list item (which carries neither) is a slice.
  Readers get fresh dicts from ``json.loads``, so nobody can mutate the store by accident.
- A per-kind history of events (ADDED/MODIFIED/DELETED) for watch replay, bounded in length; replay from a
  version older than the oldest kept event, or older than an explicit ``compact()``, is "expired" (410).
- Lists are served from snapshots (a sorted tuple of immutable ``Stored`` records) kept for
  ``continue_ttl`` seconds, so pages of one list never see changes made between pages.
- Deleting an object with finalizers only marks it (``deletionTimestamp``); removing the last finalizer
  completes the deletion. Pods and namespaces go as ``deletes`` tells (a pod in two deletes, answered with the
  Pod; a namespace's contents by collection). Deleting an owner deletes its dependents (the garbage
  collector's background propagation) unless the caller asks to orphan them.

Where it guesses: namespaces are created on first use (a real server answers 404); a strategic merge patch merges by key only the lists
``patches.MERGE_KEYS`` names (containers, env, volumes, …) and replaces every other list.
"""

from __future__ import annotations

import base64
import json
import random
import threading
import time
import uuid
from typing import Any, Callable, Iterable

from sktrace_emulator import crds, deletes
from sktrace_emulator.admission import SYSTEM_PRIORITIES, default_pod, default_service
from sktrace_emulator.audit import GARBAGE_COLLECTOR, AuditLog
from sktrace_emulator.patches import json_patch, merge_patch, strategic_merge_patch
from sktrace_emulator.records import (
    BUILTIN_TYPES,
    ApiError,
    Event,
    History,
    Obj,
    ResourceType,
    Snapshot,
    Stored,
    not_found,
    random_suffix,
    rfc3339,
    serialize,
)
from sktrace_emulator.selectors import Filter


def _without_rv(obj: Obj) -> Obj:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}
    return {**obj, "metadata": meta}


# --- the store -------------------------------------------------------------------------------------------


class Store:
    """Objects, the resourceVersion counter, history and snapshots, behind one lock.

    ``changed`` is notified after every batch of writes; watchers wait on it.
    """

    def __init__(
        self,
        *,
        history_limit: int = 200_000,
        continue_ttl: float = 300.0,
        clock: Callable[[], float] = time.time,
        seed: int | None = None,
    ) -> None:
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.clock = clock
        self.rng = random.Random(seed)
        self.rv = 0
        self.compacted_rv = 0
        self.namespace_controller = False  # True: a deleted namespace stays Terminating until ``finish_namespaces``
        self.kubelet = False  # True: a graceful pod deletion waits for the kubelet's final delete (``deletes``)
        self.history_limit = history_limit
        self.continue_ttl = continue_ttl
        self.types: dict[tuple[str, str], ResourceType] = {}  # (api_version, kind)
        self.by_plural: dict[tuple[str, str, str], ResourceType] = {}  # (group, version, plural)
        self.objects: dict[ResourceType, dict[tuple[str, str], Stored]] = {}
        self.histories: dict[ResourceType, History] = {}
        self.dependents: dict[str, set[tuple[ResourceType, str, str]]] = {}
        self.snapshots: dict[str, Snapshot] = {}
        self.audit: AuditLog | None = None  # the audit log, off unless ``Emulator.enable_audit``
        for rtype in BUILTIN_TYPES:
            self.register(rtype)

    # registry

    def register(self, rtype: ResourceType) -> ResourceType:
        with self.lock:
            self.types[(rtype.api_version, rtype.kind)] = rtype
            self.by_plural[(rtype.group, rtype.version, rtype.plural)] = rtype
            self.objects.setdefault(rtype, {})
            self.histories.setdefault(rtype, History(self.history_limit))
        return rtype

    def unregister(self, rtype: ResourceType) -> None:
        """Stop serving a kind (its CRD was deleted): its objects and history go, its open watches end (``crds``)."""
        with self.lock:
            self.types.pop((rtype.api_version, rtype.kind), None)
            self.by_plural.pop((rtype.group, rtype.version, rtype.plural), None)
            self.objects.pop(rtype, None)
            self.histories.pop(rtype, None)
            self.changed.notify_all()

    def type_of(self, api_version: str, kind: str) -> ResourceType:
        rtype = self.types.get((api_version, kind))
        if rtype is None:
            raise ApiError(404, "NotFound", f'no matches for kind "{kind}" in version "{api_version}"')
        return rtype

    # reads

    def get(self, rtype: ResourceType, namespace: str, name: str) -> Stored | None:
        with self.lock:
            return self.objects[rtype].get((namespace if rtype.namespaced else "", name))

    def current(self, rtype: ResourceType, flt: Filter) -> tuple[int, list[Stored]]:
        """The resourceVersion and the matching objects right now, sorted by namespace and name."""
        with self.lock:
            rv = self.rv
            items = [s for s in self.objects[rtype].values() if flt.matches(s)]
        items.sort(key=lambda s: (s.namespace, s.name))
        return rv, items

    def list_page(self, rtype: ResourceType, flt: Filter, *, limit: int, token: str) -> tuple[int, list[Stored], str, int]:
        """One page of a list: (list rv, items, continue token or "", remaining item count)."""
        if token:
            snap_id, offset = self._decode_continue(token)
            with self.lock:
                snap = self.snapshots.get(snap_id)
            if snap is None or time.monotonic() - snap.created > self.continue_ttl:
                raise ApiError(
                    410,
                    "Expired",
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                )
        else:
            rv, items = self.current(rtype, flt)
            if limit <= 0 or len(items) <= limit:
                return rv, items, "", 0
            snap_id, offset = uuid.uuid4().hex, 0
            snap = Snapshot(rv=rv, items=tuple(items))
            with self.lock:
                self._expire_snapshots()
                self.snapshots[snap_id] = snap
        end = len(snap.items) if limit <= 0 else offset + limit
        page = list(snap.items[offset:end])
        if end >= len(snap.items):
            with self.lock:
                self.snapshots.pop(snap_id, None)
            return snap.rv, page, "", 0
        return snap.rv, page, self._encode_continue(snap_id, end, snap.rv), len(snap.items) - end

    def _expire_snapshots(self) -> None:
        now = time.monotonic()
        for key in [k for k, s in self.snapshots.items() if now - s.created > self.continue_ttl]:
            del self.snapshots[key]
        while len(self.snapshots) >= 256:
            del self.snapshots[next(iter(self.snapshots))]

    @staticmethod
    def _encode_continue(snap_id: str, offset: int, rv: int) -> str:
        text = json.dumps({"v": "emulator", "rv": rv, "id": snap_id, "start": offset}, separators=(",", ":"))
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    @staticmethod
    def _decode_continue(token: str) -> tuple[str, int]:
        try:
            data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
            return str(data["id"]), int(data["start"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ApiError(400, "BadRequest", f"continue key is not valid: {exc}") from None

    def watch_start(self, rtype: ResourceType, rv: int) -> int:
        """History position for a watch from ``rv``; ApiError 410 when that version was compacted away."""
        with self.lock:
            history = self.histories.get(rtype)
            if history is None:
                raise not_found()  # its CRD was deleted since the request was routed
            floor = max(self.compacted_rv, history.floor)
            if rv < floor:
                raise ApiError(410, "Expired", f"too old resource version: {rv} ({floor + 1})")
            return history.position_after(rv)

    # writes

    def _next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def _commit(self, rtype: ResourceType, event_type: str, obj: Obj) -> Stored:
        """Give obj the next resourceVersion, store it (or drop it on DELETED), record and announce it."""
        if rtype.kind == crds.CRD_KIND:
            crds.changing(self, event_type, obj)  # a CRD serves its kinds, or takes them away with their objects
        obj["metadata"]["resourceVersion"] = str(self._next_rv())
        obj, raw = serialize(rtype, obj)
        stored = Stored(rtype, obj, raw)
        key = (stored.namespace, stored.name)
        old = self.objects[rtype].get(key)
        if old is not None:
            for owner in old.owner_uids:
                self.dependents.get(owner, set()).discard((rtype, old.namespace, old.name))
        if event_type == "DELETED":
            self.objects[rtype].pop(key, None)
        else:
            self.objects[rtype][key] = stored
            for owner in stored.owner_uids:
                self.dependents.setdefault(owner, set()).add((rtype, stored.namespace, stored.name))
        self.histories[rtype].append(Event(stored.rv, event_type, stored))
        if self.audit is not None:
            self.audit.committed(rtype, event_type, None if old is None else old.obj(), obj)
        self.changed.notify_all()
        return stored

    def _generated_name(self, rtype: ResourceType, meta: Obj) -> str:
        """``generateName`` plus five random characters, drawn again on a clash (up to 8 tries, as the API server
        does since RetryGenerateName); the last draw is returned, clash or not, so the caller reports it."""
        name = ""
        for _ in range(8):
            name = meta["generateName"] + random_suffix(self.rng)
            if (meta.get("namespace", ""), name) not in self.objects[rtype]:
                break
        return name

    def _ensure_namespace(self, namespace: str) -> None:
        ns_type = self.types[("v1", "Namespace")]
        if namespace and ("", namespace) not in self.objects[ns_type]:
            self.create(ns_type, {"metadata": {"name": namespace}})

    def create(self, rtype: ResourceType, obj: Obj, *, namespace: str | None = None) -> Stored:
        with self.lock:
            meta = obj.setdefault("metadata", {})
            if not isinstance(meta, dict):
                raise ApiError(400, "BadRequest", "metadata must be an object")
            if rtype.namespaced:
                ns = namespace or meta.get("namespace") or "default"
                if meta.get("namespace") and namespace and meta["namespace"] != namespace:
                    raise ApiError(400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request")
                meta["namespace"] = ns
                self._ensure_namespace(ns)
                if self.objects[self.types[("v1", "Namespace")]][("", ns)].deleting:
                    raise ApiError(403, "Forbidden", f'{rtype.plural} "{meta.get("name") or meta.get("generateName", "")}" is forbidden: '
                                                     f"unable to create new content in namespace {ns} because it is being terminated")
            else:
                meta.pop("namespace", None)
            if not meta.get("name"):
                if not meta.get("generateName"):
                    raise ApiError(422, "Invalid", f"{rtype.kind} \"\" is invalid: metadata.name: Required value: name or generateName is required")
                meta["name"] = self._generated_name(rtype, meta)
            key = (meta.get("namespace", ""), meta["name"])
            if key in self.objects[rtype]:
                group = f".{rtype.group}" if rtype.group else ""
                raise ApiError(409, "AlreadyExists", f'{rtype.plural}{group} "{meta["name"]}" already exists')
            for dropped in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
                meta.pop(dropped, None)
            meta["uid"] = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
            meta["creationTimestamp"] = rfc3339(self.clock())
            if rtype.has_spec and rtype.kind not in ("Pod", "Namespace", "Node"):
                meta["generation"] = 1
            if rtype.kind == "Namespace":
                obj.setdefault("spec", {"finalizers": ["kubernetes"]})
                obj["status"] = {"phase": "Active"}
                meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
            if rtype.kind == "Pod":
                self._admit_pod(obj)
                default_pod(obj, suffix=random_suffix(self.rng), created=meta["creationTimestamp"])
            if rtype.kind == "Service":
                default_service(obj, cluster_ip=f"10.96.{self.rng.randrange(256)}.{self.rng.randrange(1, 255)}")
            stored = self._commit(rtype, "ADDED", obj)
            if rtype.kind == "Namespace":  # the service account controller's part, at once
                self.create(self.types[("v1", "ServiceAccount")], {"metadata": {"name": "default", "namespace": meta["name"]}})
            return stored

    def _admit_pod(self, pod: Obj) -> None:
        """What a real server's admission refuses of a new pod (403, its words): a ServiceAccount or a PriorityClass
        that does not exist. A PriorityClass found gives the pod its priority."""
        meta, spec = pod["metadata"], pod.get("spec") or {}
        account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
        if (meta["namespace"], account) not in self.objects[self.types[("v1", "ServiceAccount")]]:
            raise ApiError(403, "Forbidden", f'pods "{meta["name"]}" is forbidden: error looking up service account '
                                             f'{meta["namespace"]}/{account}: serviceaccount "{account}" not found')
        wanted = spec.get("priorityClassName")
        if wanted:
            found = self.objects[self.types[("scheduling.k8s.io/v1", "PriorityClass")]].get(("", wanted))
            value = SYSTEM_PRIORITIES.get(wanted) if found is None else found.obj().get("value", 0)
            if value is None:
                raise ApiError(403, "Forbidden", f'pods "{meta["name"]}" is forbidden: no PriorityClass with name {wanted} was found')
            spec["priority"] = value

    def update(self, rtype: ResourceType, obj: Obj, *, namespace: str | None = None, subresource: str = "") -> Stored:
        """Replace (PUT). A stale ``metadata.resourceVersion`` is a 409 Conflict, as on a real server."""
        with self.lock:
            meta = obj.setdefault("metadata", {})
            ns = (namespace or meta.get("namespace") or "default") if rtype.namespaced else ""
            old = self.objects[rtype].get((ns, meta.get("name", "")))
            if old is None:
                raise self._not_found(rtype, meta.get("name", ""))
            if meta.get("resourceVersion") and meta["resourceVersion"] != str(old.rv):
                group = f".{rtype.group}" if rtype.group else ""
                raise ApiError(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on {rtype.plural}{group} "{old.name}": the object has been modified; please apply your changes to the latest version and try again',
                )
            return self._replace(old, obj, subresource=subresource)

    def _replace(self, old: Stored, obj: Obj, *, subresource: str = "") -> Stored:
        rtype = old.rtype
        previous = old.obj()
        if subresource == "status":
            new = old.obj()
            new["status"] = obj.get("status", {})
        else:
            new = obj
            meta = new.setdefault("metadata", {})
            prev_meta = previous["metadata"]
            for kept in ("uid", "creationTimestamp", "namespace", "name", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
                if kept in prev_meta:
                    meta[kept] = prev_meta[kept]
                else:
                    meta.pop(kept, None)
            if "status" not in new and "status" in previous:
                new["status"] = previous["status"]
            if "generation" in prev_meta and new.get("spec") != previous.get("spec"):
                meta["generation"] = prev_meta["generation"] + 1
        if _without_rv(new) == _without_rv(previous):
            return old  # a no-op write takes no resourceVersion, as on a real server
        stored = self._commit(rtype, "MODIFIED", new)
        if stored.deleting and not stored.finalizers:
            deletes.settle(self, stored)
        return stored

    def patch(self, rtype: ResourceType, namespace: str, name: str, patch: Any, *, patch_type: str = "merge", subresource: str = "") -> Stored:
        with self.lock:
            old = self.objects[rtype].get((namespace if rtype.namespaced else "", name))
            if old is None:
                raise self._not_found(rtype, name)
            current = old.obj()
            new = (json_patch(current, patch) if patch_type == "json" else strategic_merge_patch(current, patch)
                   if patch_type == "strategic" else merge_patch(current, patch))
            if subresource == "status":
                return self._replace(old, {"status": new.get("status", {})}, subresource="status")
            new.setdefault("metadata", {})["resourceVersion"] = str(old.rv)
            return self._replace(old, new)

    def delete(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        *,
        graceful: bool = True,
        grace_seconds: int | None = None,
        propagate: bool = True,
    ) -> Stored:
        """Delete one object; returns its last version (marked, or as it was when it went)."""
        with self.lock:
            old = self.objects[rtype].get((namespace if rtype.namespaced else "", name))
            if old is None:
                raise self._not_found(rtype, name)
            obj = old.obj()
            if old.deleting and rtype.kind != "Pod":
                return old
            if rtype.kind == "Namespace":  # Terminating first; its contents go, then it does (``finish_namespaces``)
                obj["metadata"]["deletionTimestamp"] = rfc3339(self.clock())
                obj["status"] = {"phase": "Terminating"}
                marked = self._commit(rtype, "MODIFIED", obj)
                if self.namespace_controller:
                    return marked
                with deletes.acting(self, deletes.NAMESPACE_CONTROLLER):
                    deletes.empty_namespace(self, name)
                return self._finish_delete(marked, propagate=propagate)
            if rtype.kind == "Pod":
                return deletes.delete_pod(self, old, deletes.pod_grace(obj, grace_seconds, graceful=graceful), propagate=propagate)
            if old.finalizers:
                obj["metadata"]["deletionTimestamp"] = rfc3339(self.clock())
                obj["metadata"]["deletionGracePeriodSeconds"] = 0
                return self._commit(rtype, "MODIFIED", obj)
            return self._finish_delete(old, propagate=propagate)

    def _finish_delete(self, old: Stored, *, propagate: bool) -> Stored:
        gone = self._commit(old.rtype, "DELETED", old.obj())
        if propagate:
            self._collect_garbage(old.uid)
        return gone

    def finish_namespaces(self) -> int:
        """The namespace controller's pass (the ``Workload`` runs it): each Terminating namespace emptied, then gone."""
        with self.lock:
            terminating = [s for s in self.objects[self.types[("v1", "Namespace")]].values() if s.deleting]
            for stored in terminating:
                with deletes.acting(self, deletes.NAMESPACE_CONTROLLER):
                    if deletes.empty_namespace(self, stored.name):
                        self._finish_delete(stored, propagate=True)
            return len(terminating)

    def _collect_garbage(self, owner_uid: str) -> None:
        for rtype, ns, name in sorted(self.dependents.pop(owner_uid, set()), key=lambda d: (d[0].kind, d[1], d[2])):
            stored = self.objects[rtype].get((ns, name))
            if stored is not None and owner_uid in stored.owner_uids:
                with deletes.acting(self, GARBAGE_COLLECTOR):
                    self.delete(rtype, ns, name)

    def vanish(self, rtype: ResourceType, namespace: str, name: str) -> None:
        """Remove without an event and without taking a resourceVersion (a fault knob)."""
        with self.lock:
            old = self.objects[rtype].pop((namespace if rtype.namespaced else "", name), None)
            if old is None:
                raise self._not_found(rtype, name)
            for owner in old.owner_uids:
                self.dependents.get(owner, set()).discard((rtype, old.namespace, old.name))

    def compact(self) -> int:
        """Forget history up to now: watches from any older version get 410."""
        with self.lock:
            self.compacted_rv = self.rv
            for history in self.histories.values():
                history.floor = self.rv
                history.offset += len(history.events)
                history.events = []
            self.changed.notify_all()
            return self.rv

    def next_rv(self) -> int:
        """Take the next resourceVersion for ``insert_stored`` (hold ``lock`` across both)."""
        return self._next_rv()

    def insert_stored(self, stored: Stored, *, event_type: str = "ADDED") -> None:
        """Store a version built by ``Stored.from_parts`` (new: ADDED; same owners: MODIFIED) and record its
        event; hold ``lock`` and take its version with ``next_rv``, notify ``changed`` after a batch."""
        self.objects[stored.rtype][(stored.namespace, stored.name)] = stored
        for owner in stored.owner_uids:
            self.dependents.setdefault(owner, set()).add((stored.rtype, stored.namespace, stored.name))
        self.histories[stored.rtype].append(Event(stored.rv, event_type, stored))

    def remove_stored(self, stored: Stored) -> None:
        """Record ``stored`` (the object's last version, with its own new resourceVersion from ``next_rv``) as
        DELETED and drop the object; hold ``lock``, notify ``changed`` after a batch (the fast path of
        ``insert_stored``, for deletions)."""
        self.objects[stored.rtype].pop((stored.namespace, stored.name), None)
        for owner in stored.owner_uids:
            self.dependents.get(owner, set()).discard((stored.rtype, stored.namespace, stored.name))
        self.histories[stored.rtype].append(Event(stored.rv, "DELETED", stored))

    def dependents_of(self, owner_uid: str, rtype: ResourceType) -> list[Stored]:
        """Current objects of ``rtype`` that list ``owner_uid`` among their owners, by name."""
        with self.lock:
            keys = [k for k in self.dependents.get(owner_uid, ()) if k[0] == rtype]
            found = [self.objects[rtype].get((ns, name)) for _, ns, name in keys]
        return sorted((s for s in found if s is not None), key=lambda s: s.name)

    def bulk_insert(self, rtype: ResourceType, objs: Iterable[Obj]) -> int:
        """Insert many new objects as ADDED events under one lock hold, one notification (fast builds).

        The objects must be complete (uid, creationTimestamp, namespace set); names must be new.
        """
        count = 0
        with self.lock:
            table, history, deps = self.objects[rtype], self.histories[rtype], self.dependents
            for obj in objs:
                obj["metadata"]["resourceVersion"] = str(self._next_rv())
                obj, raw = serialize(rtype, obj)
                stored = Stored(rtype, obj, raw)
                table[(stored.namespace, stored.name)] = stored
                for owner in stored.owner_uids:
                    deps.setdefault(owner, set()).add((rtype, stored.namespace, stored.name))
                history.append(Event(stored.rv, "ADDED", stored))
                count += 1
            self.changed.notify_all()
        return count

    def new_uid(self) -> str:
        with self.lock:
            return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    @staticmethod
    def _not_found(rtype: ResourceType, name: str) -> ApiError:
        group = f".{rtype.group}" if rtype.group else ""
        details = {"name": name, **({"group": rtype.group} if rtype.group else {}), "kind": rtype.plural}  # as kube-apiserver names it
        return ApiError(404, "NotFound", f'{rtype.plural}{group} "{name}" not found', details=details)
