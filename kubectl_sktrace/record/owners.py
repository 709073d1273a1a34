"""Owner chains and which owner a pod's lifecycle is attributed to. Pure: lookups are injected.

Guarantees (docs/spec.md §4, "Which owner gets a pod's lifecycle"):

- The owner references come read from the object's head (``sanitize.read_head``: listed order, malformed
  entries skipped); an owner's own references come from the injected ``lookup``.
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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kubectl_sktrace.model import ObjectHead, ObjKey, OwnerRef

DEFAULT_MAX_DEPTH = 10


def resolve_chain(
    head: ObjectHead,
    *,
    lookup: Callable[[OwnerRef, str], Sequence[OwnerRef] | None],
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> list[ObjKey]:
    """The object's owners, depth first (see the module docstring); ``lookup(ref, namespace)`` gives an owner's owners."""
    chain: list[ObjKey] = []
    seen: set[ObjKey] = {head.key}  # an owner cycle through the object itself must not list it as its own owner
    _walk(head.owners, 1, namespace=head.key.namespace, lookup=lookup, max_depth=max_depth, chain=chain, seen=seen)
    return chain


def _walk(refs: Sequence[OwnerRef], depth: int, *, namespace: str, lookup: Callable[[OwnerRef, str], Sequence[OwnerRef] | None],
          max_depth: int, chain: list[ObjKey], seen: set[ObjKey]) -> None:
    """``resolve_chain``'s walk: a function of the module, not a closure, which would refer to itself (a reference
    cycle per pod that only the cyclic collector frees)."""
    for ref in refs:
        key = ref.key(namespace)
        if key in seen:
            continue
        seen.add(key)
        chain.append(key)
        if depth < max_depth:
            parents = lookup(ref, namespace)
            if parents:
                _walk(parents, depth + 1, namespace=namespace, lookup=lookup, max_depth=max_depth, chain=chain, seen=seen)


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
