"""Owner chains and which owner a pod's lifecycle is attributed to. Pure: lookups are injected.

Guarantees (SPEC §4, "Which owner gets a pod's lifecycle"):

- ``owner_refs`` reads ``metadata.ownerReferences`` in their listed order; entries without
  ``apiVersion``, ``kind`` or ``name`` are skipped (a filter must not crash on bad input); a missing
  ``uid`` reads as ``""``.
- ``resolve_chain`` walks owners depth first, each owner before its own owners, direct owners in their
  listed order (pod → ReplicaSet → Deployment; pod → Job → CronJob). Owners are assumed to live in the
  pod's namespace (Kubernetes forbids cross-namespace owners; cluster-scoped owners of namespaced objects
  are not followed specially). The injected ``lookup`` returns an owner's own references, or ``None`` when
  it cannot be resolved (gone, forbidden, a uid that no longer matches): that owner stays in the chain,
  because its key is known from the reference, but the walk does not go above it. Every owner appears
  once (cycles and diamonds are safe) and the walk stops at ``max_depth`` levels.
- ``lifecycle_owner`` picks the first owner in the chain for which the injected predicate says "a
  tracked, currently existing object of a ``trackLifecycle`` kind"; a pod with no owners is its own
  owner (when the predicate accepts the pod itself, i.e. ``v1.Pod`` tracks lifecycles).
- ``is_daemonset_owned``: any ownerReference of kind ``DaemonSet`` (any group, as SimKube checks the kind
  only); such pods are recreated per node by the simulated DaemonSet and are left out of exports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubectl_sktrace.model import GVK, ObjKey

DEFAULT_MAX_DEPTH = 10


@dataclass(frozen=True)
class OwnerRef:
    """One ownerReference: the owner's kind, name and uid (``""`` when the reference has none)."""

    gvk: GVK
    name: str
    uid: str

    def key(self, namespace: str) -> ObjKey:
        return ObjKey(gvk=self.gvk, namespace=namespace, name=self.name)


def _raw_refs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    meta = obj.get("metadata")
    refs = meta.get("ownerReferences") if isinstance(meta, dict) else None
    return [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []


def owner_refs(obj: dict[str, Any]) -> list[OwnerRef]:
    """The object's ownerReferences as ``OwnerRef``s, in listed order, malformed entries skipped."""
    out = []
    for ref in _raw_refs(obj):
        api_version, kind, name, uid = ref.get("apiVersion"), ref.get("kind"), ref.get("name"), ref.get("uid")
        if not (isinstance(api_version, str) and api_version and isinstance(kind, str) and kind and isinstance(name, str) and name):
            continue
        out.append(OwnerRef(gvk=GVK.from_api_version(api_version, kind), name=name, uid=uid if isinstance(uid, str) else ""))
    return out


def _own_key(obj: dict[str, Any], namespace: str) -> ObjKey | None:
    api_version, kind, meta = obj.get("apiVersion"), obj.get("kind"), obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not (isinstance(api_version, str) and api_version and isinstance(kind, str) and kind and isinstance(name, str) and name):
        return None
    return ObjKey(gvk=GVK.from_api_version(api_version, kind), namespace=namespace, name=name)


def resolve_chain(
    obj: dict[str, Any],
    *,
    namespace: str,
    lookup: Callable[[OwnerRef, str], list[OwnerRef] | None],
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> list[ObjKey]:
    """The object's owners, depth first (see the module docstring); ``lookup(ref, namespace)`` gives an owner's owners."""
    chain: list[ObjKey] = []
    seen: set[ObjKey] = set()
    own = _own_key(obj, namespace)
    if own is not None:
        seen.add(own)  # an owner cycle through the object itself must not list it as its own owner

    def walk(refs: list[OwnerRef], depth: int) -> None:
        for ref in refs:
            key = ref.key(namespace)
            if key in seen:
                continue
            seen.add(key)
            chain.append(key)
            if depth < max_depth:
                parents = lookup(ref, namespace)
                if parents:
                    walk(parents, depth + 1)

    walk(owner_refs(obj), 1)
    return chain


def lifecycle_owner(
    *,
    pod_key: ObjKey,
    chain: list[ObjKey],
    is_tracked_lifecycle_owner: Callable[[ObjKey], bool],
) -> ObjKey | None:
    """The owner a pod's lifecycle is recorded under, or ``None`` when no owner qualifies."""
    if not chain:
        return pod_key if is_tracked_lifecycle_owner(pod_key) else None
    for key in chain:
        if is_tracked_lifecycle_owner(key):
            return key
    return None


def is_daemonset_owned(obj: dict[str, Any]) -> bool:
    """Whether any ownerReference is a DaemonSet."""
    return any(ref.get("kind") == "DaemonSet" for ref in _raw_refs(obj))
