"""How objects go, as a real v1.28 API server deletes them (measured against kube-apiserver v1.28; NOTES.md, "Audit log").

- A **pod** goes in two deletes and a DELETE answers with the Pod, never a Status. A bound pod still running is first
  marked (``deletionTimestamp`` = now + its grace period, ``deletionGracePeriodSeconds``: a MODIFIED); its kubelet,
  once the containers stopped, deletes it again with ``gracePeriodSeconds: 0``, which writes ``deletionGracePeriodSeconds:
  0`` and ``deletionTimestamp`` back to when the deletion began (a MODIFIED), then removes it (the DELETED). A pod not
  bound to a node, or already finished, takes grace 0 at once (one delete: MODIFIED, DELETED). While a ``Workload``
  runs (``Store.kubelet``), the final delete is its kubelet's, on its next pass; without one, the store makes it at once
  on the kubelet's behalf (no containers to stop), so that a pod never stays Terminating with nobody to end it.
- A **namespace**'s contents go by the namespace controller's ``deletecollection`` of each kind that holds objects in
  it, answered with the list as it was; running pods among them are marked and wait for the kubelet; the namespace
  goes once it is empty.

Every write here is logged as the request of whom a real cluster would have make it (``audit.AuditLog.acting``).
"""

from __future__ import annotations

import calendar
import contextlib
import json
import threading
import time
from typing import Callable, ContextManager, Protocol

from sktrace_emulator import audit
from sktrace_emulator.records import Obj, ResourceType, Stored, rfc3339
from sktrace_emulator.selectors import Filter


class Store(Protocol):
    """What of ``state.Store`` deletions use (it imports this module)."""

    audit: audit.AuditLog | None
    clock: Callable[[], float]
    kubelet: bool
    lock: threading.RLock
    objects: dict[ResourceType, dict[tuple[str, str], Stored]]

    def _commit(self, rtype: ResourceType, event_type: str, obj: Obj) -> Stored: ...

    def _finish_delete(self, old: Stored, *, propagate: bool) -> Stored: ...

    def delete(self, rtype: ResourceType, namespace: str, name: str) -> Stored: ...

    @property
    def rv(self) -> int: ...

    def get(self, rtype: ResourceType, namespace: str, name: str) -> Stored | None: ...

    def list_page(self, rtype: ResourceType, flt: Filter, *, limit: int, token: str) -> tuple[int, list[Stored], str, int]: ...

NAMESPACE_CONTROLLER = audit.controller("namespace-controller")


def acting(store: Store, user: str) -> ContextManager[None]:
    """Writes made meanwhile are ``user``'s requests in the audit log (nothing when the log is off)."""
    return store.audit.acting(user) if store.audit is not None else contextlib.nullcontext()


def kubelet_of(pod: Obj) -> str:
    """The user a pod's kubelet writes as."""
    return audit.KUBELET + str((pod.get("spec") or {}).get("nodeName") or "")


def pod_grace(pod: Obj, requested: int | None, *, graceful: bool) -> int:
    """The grace period a delete gives a pod: 0 unless it is bound and not finished."""
    spec, phase = pod.get("spec") or {}, (pod.get("status") or {}).get("phase")
    if not graceful or not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        return 0
    return int(requested if requested is not None else spec.get("terminationGracePeriodSeconds", 30))


def delete_pod(store: Store, old: Stored, grace: int, *, propagate: bool) -> Stored:
    """One DELETE of a pod with ``grace`` seconds; returns what it answers (the Pod, marked or as it went)."""
    obj = old.obj()
    meta = obj["metadata"]
    current = meta.get("deletionGracePeriodSeconds")
    if old.deleting:
        if old.finalizers or (current is not None and 0 < current <= grace):
            return old  # only a shorter grace period changes a deletion under way
        began = calendar.timegm(time.strptime(meta["deletionTimestamp"], "%Y-%m-%dT%H:%M:%SZ")) - int(current or 0)
        meta["deletionTimestamp"] = rfc3339(began + grace)
    else:
        meta["deletionTimestamp"] = rfc3339(store.clock() + grace)
    meta["deletionGracePeriodSeconds"] = grace
    marked = store._commit(old.rtype, "MODIFIED", obj)
    if marked.finalizers:
        return marked
    if grace > 0:
        if not store.kubelet:
            final_delete(store, marked)
        return marked
    store._finish_delete(marked, propagate=propagate)
    return marked


def final_delete(store: Store, pod: Stored) -> None:
    """The kubelet's delete of a pod whose containers stopped (grace 0): the pod's end."""
    with store.lock, acting(store, kubelet_of(pod.obj())):
        current = store.objects[pod.rtype].get((pod.namespace, pod.name))
        if current is not None and current.uid == pod.uid:
            delete_pod(store, current, 0, propagate=True)


def settle(store: Store, stored: Stored) -> None:
    """An object being deleted lost its last finalizer: it goes now (a pod with grace left waits for its kubelet)."""
    grace = (stored.obj()["metadata"].get("deletionGracePeriodSeconds") or 0) if stored.rtype.kind == "Pod" else 0
    if grace == 0:
        store._finish_delete(stored, propagate=True)
    elif not store.kubelet:
        final_delete(store, stored)


def empty_namespace(store: Store, namespace: str) -> bool:
    """The namespace controller's pass over a Terminating namespace: a deletecollection of each kind with objects not yet
    being deleted; whether it is empty now."""
    left = False
    for rtype, objects in list(store.objects.items()):
        if not rtype.namespaced:
            continue
        present = [s for k, s in objects.items() if k[0] == namespace]
        left = left or bool(present)
        doomed = [s for s in present if not s.deleting]
        if not doomed:
            continue
        items = [{k: v for k, v in s.obj().items() if k not in ("apiVersion", "kind")} for s in doomed]
        collection = store.audit.collecting(rtype, namespace, NAMESPACE_CONTROLLER, items) if store.audit is not None \
            else contextlib.nullcontext()
        with collection:
            for stored in doomed:
                if (namespace, stored.name) in objects:
                    store.delete(rtype, namespace, stored.name)
    return not left or not any(k[0] == namespace for objects in store.objects.values() for k in objects)


def collection(store: Store, rtype: ResourceType, namespace: str, flt: Filter) -> Obj:
    """A client's ``deletecollection``: each object the selectors choose deleted as its own DELETE would be (a pod marked,
    its kubelet's final delete to follow), answered with the list of them as they were, as kube-apiserver answers."""
    _, doomed, _, _ = store.list_page(rtype, flt, limit=0, token="")
    items = [json.loads(stored.item_raw()) for stored in doomed]
    with store.audit.serving_collection(rtype, namespace) if store.audit is not None else contextlib.nullcontext():
        for stored in doomed:
            if store.get(rtype, stored.namespace, stored.name) is not None:
                store.delete(rtype, stored.namespace, stored.name)
    return {"kind": rtype.list_kind, "apiVersion": rtype.api_version, "metadata": {"resourceVersion": str(store.rv)}, "items": items}
