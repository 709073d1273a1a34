"""What the emulator's store holds: kinds, objects as the bytes they serialize to once, events and snapshots,
and the API server's error Status. Plain records, no locking: ``state.Store`` owns them behind its lock.
"""

from __future__ import annotations

import bisect
import json
import random
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from sktrace_apiserver.status import ApiError as ApiError
from sktrace_apiserver.status import not_found as not_found
from sktrace_apiserver.status import status_body as status_body

Obj = dict[str, Any]


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
    ResourceType("", "v1", "Service", "services", short_names=("svc",)),
    ResourceType("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", namespaced=False, short_names=("pc",)),
    ResourceType("apps", "v1", "Deployment", "deployments", short_names=("deploy",)),
    ResourceType("apps", "v1", "ReplicaSet", "replicasets", short_names=("rs",)),
    ResourceType("apps", "v1", "StatefulSet", "statefulsets", short_names=("sts",)),
    ResourceType("apps", "v1", "DaemonSet", "daemonsets", short_names=("ds",)),
    ResourceType("batch", "v1", "Job", "jobs"),
    ResourceType("batch", "v1", "CronJob", "cronjobs", short_names=("cj",)),
    # creating one serves its kind, deleting one takes the kind and its objects away (``crds``)
    ResourceType("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", namespaced=False,
                 short_names=("crd", "crds")),
    # stored only (the emulator's own authorization is grant_view/grant_rules): so that kubectl applies RBAC manifests
    ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", namespaced=False),
    ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False),
    ResourceType("rbac.authorization.k8s.io", "v1", "Role", "roles"),
    ResourceType("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"),
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
        self.last_rv = 0  # the kind's version: its last event's, trimmed or not

    def append(self, event: Event) -> None:
        self.events.append(event)
        self.last_rv = event.rv
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


class Failure:
    """A failure a test armed (``Emulator.fail``): the status the next ``count`` requests for ``kind`` get."""

    def __init__(self, kind: str | None, status: int, count: int, retry_after: int | None) -> None:
        self.kind = kind
        self.status = status
        self.remaining = count
        self.retry_after = retry_after


def forbidden(*, user: str, verb: str, rtype: ResourceType, namespace: str | None, name: str = "", subresource: str = "") -> ApiError:
    """The API server's 403 for a request RBAC does not allow, word for word (``apierrors.NewForbidden`` around
    the authorizer's ``forbiddenMessage``): ``pods is forbidden: User "x" cannot list resource "pods" in API
    group "" at the cluster scope``."""
    resource = f"{rtype.plural}/{subresource}" if subresource else rtype.plural
    qualified = f"{rtype.plural}.{rtype.group}" if rtype.group else rtype.plural
    subject = f"{qualified} {json.dumps(name)}" if name else qualified
    scope = f"in the namespace {json.dumps(namespace)}" if namespace else "at the cluster scope"
    message = (f"{subject} is forbidden: User {json.dumps(user)} cannot {verb} resource {json.dumps(resource)} "
               f"in API group {json.dumps(rtype.group)} {scope}")
    details = {k: v for k, v in (("name", name), ("group", rtype.group), ("kind", rtype.plural)) if v}
    return ApiError(403, "Forbidden", message, details=details)
