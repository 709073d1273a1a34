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
  completes the deletion. Deleting a pod that is bound to a node is graceful: a MODIFIED with
  ``deletionTimestamp`` precedes the DELETED. Deleting an owner deletes its dependents (the garbage
  collector's background propagation) unless the caller asks to orphan them.

Where it guesses: namespaces are created on first use (a real server answers 404); a graceful deletion
completes at once, without waiting for the grace period; strategic merge patches are applied as JSON merge
patches (enough for labels, annotations, replicas, images).
"""

from __future__ import annotations

import base64
import bisect
import json
import random
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterable

Obj = dict[str, Any]


class ApiError(Exception):
    """A request the store refuses; the server turns it into a ``Status`` with this code and reason."""

    def __init__(self, code: int, reason: str, message: str, *, retry_after: int | None = None,
                 details: Obj | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.retry_after = retry_after
        self.details = details

    def status(self) -> Obj:
        return status_body(code=self.code, reason=self.reason, message=self.message, details=self.details)


def status_body(*, code: int, reason: str, message: str, details: Obj | None = None) -> Obj:
    """A ``meta/v1 Status`` as a real server sends for errors (and inside ERROR watch events)."""
    body: Obj = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details:
        body["details"] = details
    body["code"] = code
    return body


def rfc3339(ts: float) -> str:
    """Seconds since the epoch as the API server writes times: ``2024-05-01T10:00:00Z``."""
    return datetime.fromtimestamp(int(ts), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def random_suffix(rng: random.Random, length: int = 5) -> str:
    """The alphabet the API server uses for ``generateName`` and the pod-template-hash-like suffixes."""
    return "".join(rng.choice(_NAME_CHARS) for _ in range(length))


@dataclass(frozen=True)
class ResourceType:
    """One served kind: what discovery advertises and what paths route to."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def has_spec(self) -> bool:
        return self.kind not in ("ConfigMap", "Secret", "ServiceAccount")


BUILTIN_TYPES: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "Namespace", "namespaces", namespaced=False, short_names=("ns",)),
    ResourceType("", "v1", "Node", "nodes", namespaced=False, short_names=("no",)),
    ResourceType("", "v1", "Pod", "pods", short_names=("po",)),
    ResourceType("", "v1", "ConfigMap", "configmaps", short_names=("cm",)),
    ResourceType("", "v1", "Secret", "secrets"),
    ResourceType("", "v1", "ServiceAccount", "serviceaccounts", short_names=("sa",)),
    ResourceType("apps", "v1", "Deployment", "deployments", short_names=("deploy",)),
    ResourceType("apps", "v1", "ReplicaSet", "replicasets", short_names=("rs",)),
    ResourceType("apps", "v1", "StatefulSet", "statefulsets", short_names=("sts",)),
    ResourceType("apps", "v1", "DaemonSet", "daemonsets", short_names=("ds",)),
    ResourceType("batch", "v1", "Job", "jobs"),
    ResourceType("batch", "v1", "CronJob", "cronjobs", short_names=("cj",)),
)


class Stored:
    """One version of one object: its JSON bytes plus the few fields indexes and selectors need."""

    __slots__ = ("rtype", "namespace", "name", "uid", "rv", "raw", "labels", "fields", "owner_uids", "finalizers", "deleting")

    def __init__(self, rtype: ResourceType, obj: Obj, raw: bytes) -> None:
        meta = obj["metadata"]
        self.rtype = rtype
        self.namespace: str = meta.get("namespace", "")
        self.name: str = meta["name"]
        self.uid: str = meta["uid"]
        self.rv = int(meta["resourceVersion"])
        self.raw = raw
        self.labels: dict[str, str] = meta.get("labels") or {}
        self.owner_uids: tuple[str, ...] = tuple(r.get("uid", "") for r in meta.get("ownerReferences") or ())
        self.finalizers = bool(meta.get("finalizers"))
        self.deleting = "deletionTimestamp" in meta
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        self.fields = {
            "metadata.name": self.name,
            "metadata.namespace": self.namespace,
            "spec.nodeName": spec.get("nodeName", "") if rtype.kind == "Pod" else "",
            "status.phase": status.get("phase", "") if rtype.kind == "Pod" else "",
        }

    @classmethod
    def from_parts(
        cls,
        rtype: ResourceType,
        *,
        namespace: str,
        name: str,
        uid: str,
        rv: int,
        raw: bytes,
        labels: dict[str, str],
        owner_uids: tuple[str, ...],
        node_name: str = "",
        phase: str = "",
    ) -> Stored:
        """Build a record from parts already known (the bulk builder), skipping a parse of ``raw``."""
        self = cls.__new__(cls)
        self.rtype, self.namespace, self.name, self.uid, self.rv, self.raw = rtype, namespace, name, uid, rv, raw
        self.labels, self.owner_uids, self.finalizers, self.deleting = labels, owner_uids, False, False
        self.fields = {"metadata.name": name, "metadata.namespace": namespace, "spec.nodeName": node_name, "status.phase": phase}
        return self

    def obj(self) -> Obj:
        """A fresh dict of this version (callers may mutate it freely)."""
        result: Obj = json.loads(self.raw)
        return result

    def item_raw(self) -> bytes:
        """The JSON of this object as a list item: without ``apiVersion`` and ``kind``."""
        prefix = len(_type_prefix(self.rtype))
        return b"{" + self.raw[prefix:]


def _type_prefix(rtype: ResourceType) -> bytes:
    return b'{"apiVersion":%s,"kind":%s,' % (json.dumps(rtype.api_version).encode(), json.dumps(rtype.kind).encode())


def serialize(rtype: ResourceType, obj: Obj) -> tuple[Obj, bytes]:
    """Reorder so apiVersion and kind come first, and serialize compactly."""
    ordered: Obj = {"apiVersion": rtype.api_version, "kind": rtype.kind}
    for key, value in obj.items():
        if key not in ("apiVersion", "kind"):
            ordered[key] = value
    return ordered, json.dumps(ordered, separators=(",", ":")).encode()


@dataclass(frozen=True)
class Event:
    """One entry of a kind's history: what a watch from an older version replays."""

    rv: int
    type: str
    stored: Stored


class History:
    """Events of one kind, oldest first, trimmed from the front past ``limit``.

    Positions are absolute (``offset`` counts trimmed events) so a watcher can keep its place across trims
    and notice when it fell behind the window.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.events: list[Event] = []
        self.offset = 0
        self.floor = 0  # events with rv <= floor are gone

    def append(self, event: Event) -> None:
        self.events.append(event)
        if len(self.events) > self.limit + self.limit // 4:
            drop = len(self.events) - self.limit
            self.floor = max(self.floor, self.events[drop - 1].rv)
            del self.events[:drop]
            self.offset += drop

    def end(self) -> int:
        return self.offset + len(self.events)

    def position_after(self, rv: int) -> int:
        """Absolute position of the first event newer than ``rv``."""
        return self.offset + bisect.bisect_right(self.events, rv, key=lambda e: e.rv)

    def since(self, position: int) -> list[Event] | None:
        """Events from ``position`` on, or None when they were trimmed already."""
        if position < self.offset:
            return None
        return self.events[position - self.offset :]


@dataclass
class Snapshot:
    rv: int
    items: tuple[Stored, ...]
    created: float = field(default_factory=time.monotonic)


# --- selectors -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!exists"
    values: frozenset[str]

    def matches(self, mapping: dict[str, str]) -> bool:
        present = self.key in mapping
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        if self.op in ("=", "in"):
            return present and mapping[self.key] in self.values
        return not present or mapping[self.key] not in self.values


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def parse_label_selector(text: str) -> tuple[Requirement, ...]:
    """kubectl's selector syntax: ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``, ``a notin (x)``, ``a``, ``!a``."""
    reqs = []
    for part in _split_top(text or ""):
        words = part.split()
        if len(words) >= 2 and words[1] in ("in", "notin"):
            inner = part.split(None, 2)[2].strip()
            if not (inner.startswith("(") and inner.endswith(")")):
                raise ApiError(400, "BadRequest", f"unable to parse requirement: {part!r}")
            values = frozenset(v.strip() for v in inner[1:-1].split(",") if v.strip())
            reqs.append(Requirement(words[0], words[1], values))
        elif "!=" in part:
            key, value = part.split("!=", 1)
            reqs.append(Requirement(key.strip(), "!=", frozenset([value.strip()])))
        elif "=" in part:
            key, value = part.replace("==", "=").split("=", 1)
            reqs.append(Requirement(key.strip(), "=", frozenset([value.strip()])))
        elif part.startswith("!"):
            reqs.append(Requirement(part[1:].strip(), "!exists", frozenset()))
        else:
            reqs.append(Requirement(part, "exists", frozenset()))
    return tuple(reqs)


FIELD_SELECTABLE = ("metadata.name", "metadata.namespace", "spec.nodeName", "status.phase")


def parse_field_selector(text: str, rtype: ResourceType) -> tuple[Requirement, ...]:
    """Field selectors the real server supports for these kinds: ``=``, ``==``, ``!=`` on a few fields."""
    reqs = []
    for part in _split_top(text or ""):
        op = "!=" if "!=" in part else "="
        key, _, value = part.replace("==", "=").partition(op)
        key = key.strip()
        allowed = FIELD_SELECTABLE if rtype.kind == "Pod" else FIELD_SELECTABLE[:2]
        if key not in allowed:
            raise ApiError(
                400,
                "BadRequest",
                f'Unable to find "{rtype.group}/{rtype.version}, Resource={rtype.plural}" that match label selector "", field selector "{text}": "{key}" is not a known field selector: only "{", ".join(allowed)}"',
            )
        reqs.append(Requirement(key, op, frozenset([value.strip()])))
    return tuple(reqs)


@dataclass(frozen=True)
class Filter:
    """What a list or watch asks for: a namespace (or all) and selectors."""

    namespace: str | None = None
    labels: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()

    def matches(self, stored: Stored) -> bool:
        if self.namespace is not None and stored.namespace != self.namespace:
            return False
        return all(r.matches(stored.labels) for r in self.labels) and all(r.matches(stored.fields) for r in self.fields)


# --- merge patch -----------------------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: Obj, ops: list[Obj]) -> Obj:
    """RFC 6902 JSON patch (add, replace, remove) as kubectl sends for ``--type=json``."""
    doc = json.loads(json.dumps(target))
    for op in ops:
        path = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent = doc
        for part in path[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent.setdefault(part, {})
        last = path[-1]
        if op["op"] in ("add", "replace"):
            if isinstance(parent, list):
                if last == "-":
                    parent.append(op["value"])
                elif op["op"] == "add":
                    parent.insert(int(last), op["value"])
                else:
                    parent[int(last)] = op["value"]
            else:
                parent[last] = op["value"]
        elif op["op"] == "remove":
            if isinstance(parent, list):
                del parent[int(last)]
            else:
                parent.pop(last, None)
        else:
            raise ApiError(400, "BadRequest", f"unsupported JSON patch operation {op['op']!r}")
    result: Obj = doc
    return result


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


def pod_qos(spec: Obj) -> str:
    requests = [c.get("resources", {}).get("requests") for c in spec.get("containers", [])]
    limits = [c.get("resources", {}).get("limits") for c in spec.get("containers", [])]
    if not any(requests) and not any(limits):
        return "BestEffort"
    if all(limits) and all(r == lim or not r for r, lim in zip(requests, limits)):
        return "Guaranteed"
    return "Burstable"


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
        self.history_limit = history_limit
        self.continue_ttl = continue_ttl
        self.types: dict[tuple[str, str], ResourceType] = {}  # (api_version, kind)
        self.by_plural: dict[tuple[str, str, str], ResourceType] = {}  # (group, version, plural)
        self.objects: dict[ResourceType, dict[tuple[str, str], Stored]] = {}
        self.histories: dict[ResourceType, History] = {}
        self.dependents: dict[str, set[tuple[ResourceType, str, str]]] = {}
        self.snapshots: dict[str, Snapshot] = {}
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
            history = self.histories[rtype]
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
        self.changed.notify_all()
        return stored

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
            else:
                meta.pop("namespace", None)
            if not meta.get("name"):
                if not meta.get("generateName"):
                    raise ApiError(422, "Invalid", f"{rtype.kind} \"\" is invalid: metadata.name: Required value: name or generateName is required")
                meta["name"] = meta["generateName"] + random_suffix(self.rng)
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
                default_pod(obj, suffix=random_suffix(self.rng), created=meta["creationTimestamp"])
            return self._commit(rtype, "ADDED", obj)

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
            self._finish_delete(stored, propagate=True)
        return stored

    def patch(self, rtype: ResourceType, namespace: str, name: str, patch: Any, *, patch_type: str = "merge", subresource: str = "") -> Stored:
        with self.lock:
            old = self.objects[rtype].get((namespace if rtype.namespaced else "", name))
            if old is None:
                raise self._not_found(rtype, name)
            current = old.obj()
            new = json_patch(current, patch) if patch_type == "json" else merge_patch(current, patch)
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
            if old.deleting:
                return old
            obj = old.obj()
            bound_pod = rtype.kind == "Pod" and bool((obj.get("spec") or {}).get("nodeName"))
            if grace_seconds is None:
                grace_seconds = int((obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30)) if rtype.kind == "Pod" else 0
            if old.finalizers or (bound_pod and graceful and grace_seconds > 0):
                meta = obj["metadata"]
                meta["deletionTimestamp"] = rfc3339(self.clock() + (grace_seconds if bound_pod else 0))
                meta["deletionGracePeriodSeconds"] = grace_seconds if bound_pod else 0
                marked = self._commit(rtype, "MODIFIED", obj)
                if old.finalizers:
                    return marked
                old = marked
            return self._finish_delete(old, propagate=propagate)

    def _finish_delete(self, old: Stored, *, propagate: bool) -> Stored:
        obj = old.obj()
        gone = self._commit(old.rtype, "DELETED", obj)
        if propagate:
            self._collect_garbage(old.uid)
        if old.rtype.kind == "Namespace":
            for rtype, objects in list(self.objects.items()):
                if rtype.namespaced:
                    for (ns, name) in [k for k in objects if k[0] == old.name]:
                        if (ns, name) in objects:
                            self.delete(rtype, ns, name, graceful=False)
        return gone

    def _collect_garbage(self, owner_uid: str) -> None:
        for rtype, ns, name in sorted(self.dependents.pop(owner_uid, set()), key=lambda d: (d[0].kind, d[1], d[2])):
            stored = self.objects[rtype].get((ns, name))
            if stored is not None and owner_uid in stored.owner_uids:
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
        return ApiError(404, "NotFound", f'{rtype.plural}{group} "{name}" not found')
