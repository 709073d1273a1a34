"""The ``scale`` subresource of Deployments, ReplicaSets and StatefulSets (``autoscaling/v1`` Scale), as a real API
server serves it: what ``kubectl scale`` and a HorizontalPodAutoscaler read and write.

A Scale is a view of its object: ``spec.replicas`` from the object's spec, ``status.replicas`` and the label
selector (as a string) from its status and spec; writing it patches the object's ``spec.replicas`` (a new
resourceVersion of the object, whose controllers then act). A PUT with a stale resourceVersion is a 409, as a
real server's.
"""

from __future__ import annotations

from typing import Any

from sktrace_emulator.patches import json_patch, merge_patch
from sktrace_emulator.records import ApiError, Obj, ResourceType
from sktrace_emulator.state import Store

SCALABLE = frozenset({("apps", "deployments"), ("apps", "replicasets"), ("apps", "statefulsets")})


def scalable(rtype: ResourceType) -> bool:
    return (rtype.group, rtype.plural) in SCALABLE


def discovery_entry(rtype: ResourceType) -> Obj:
    """The subresource as ``/apis/apps/v1`` lists it."""
    return {"name": f"{rtype.plural}/scale", "singularName": "", "namespaced": rtype.namespaced, "group": "autoscaling",
            "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}


def _selector(obj: Obj) -> str:
    match = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(match.items()))


def scale_of(obj: Obj) -> Obj:
    meta = obj.get("metadata") or {}
    return {
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta},
        "spec": {"replicas": int((obj.get("spec") or {}).get("replicas", 1))},
        "status": {"replicas": int((obj.get("status") or {}).get("replicas", 0)), "selector": _selector(obj)},
    }


def serve(store: Store, rtype: ResourceType, namespace: str, name: str, *, method: str, body: Any, patch_type: str = "merge") -> Obj:
    """GET, PUT or PATCH of ``NAME/scale``: the Scale, after the write when there is one."""
    stored = store.get(rtype, namespace, name)
    if stored is None:
        raise store._not_found(rtype, name)
    current = scale_of(stored.obj())
    if method == "GET":
        return current
    if method == "PUT":
        wanted = body if isinstance(body, dict) else {}
        stale = (wanted.get("metadata") or {}).get("resourceVersion")
        if stale and stale != str(stored.rv):
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {rtype.plural}.{rtype.group} "{name}": the object has '
                                            "been modified; please apply your changes to the latest version and try again")
    elif method == "PATCH":
        wanted = json_patch(current, body) if patch_type == "json" else merge_patch(current, body)
    else:
        raise ApiError(405, "MethodNotAllowed", f"the server does not allow this method on the requested resource ({method})")
    replicas = (wanted.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise ApiError(422, "Invalid", f'Scale.autoscaling "{name}" is invalid: spec.replicas: Invalid value: {replicas!r}: '
                                       "must be greater than or equal to 0")
    updated = store.patch(rtype, namespace, name, {"spec": {"replicas": replicas}})
    return scale_of(updated.obj())
