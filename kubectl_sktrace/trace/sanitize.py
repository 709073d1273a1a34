"""What an object looks like when it is stored in an event, and how its metadata is read. Pure functions.

``read_head`` is the one reader of a raw object's metadata on the recording path: key, uid, resourceVersion,
creation time and owner references, read once per watch event or listed item (an ``ObjectHead``), which the
recorder passes to every rule. ``object_key`` also reads the key of a trace's objects (they carry their kind).

Guarantees (docs/spec.md §4):

- ``sanitize`` returns a new dict and never mutates its input. It drops the server-managed metadata
  (``creationTimestamp``, ``deletionTimestamp``, ``deletionGracePeriodSeconds``, ``generation``,
  ``managedFields``, ``resourceVersion``, ``uid``) and the two annotations that change without a spec
  change (``kubectl.kubernetes.io/last-applied-configuration``, ``deployment.kubernetes.io/revision``);
  ``metadata.annotations`` is always present, possibly ``{}``. Pods also lose ``spec.nodeName`` (the
  simulator schedules them again). ``ownerReferences`` (with ``uid``), labels, finalizers,
  ``generateName``, ``spec`` and ``status`` are kept; export drops ``status`` later (docs/spec.md §7 step 7).
  ``apiVersion``/``kind`` are set from the watched kind, because list items carry neither.
- Secrets (core ``v1.Secret``) keep the keys of ``data`` and ``stringData`` with every value replaced
  by ``""``, unless the caller opts in to keeping them.
- ``deleted_stub`` is the object of a deleted event: ``{apiVersion, kind, metadata: {name, namespace}}``.

Performance choice: the result copies only the dicts it changes (the top level, ``metadata``, its
annotations, a Pod's ``spec``, a Secret's ``data``/``stringData``) and shares every other nested value
with the input, because a deep copy of a pod costs more than the whole ingest budget of one event.
Callers treat both the input and the result as read-only below those levels (the recorder serializes
the result at once).

API timestamps (RFC 3339, e.g. ``2026-11-22T10:00:00Z`` or with fractional seconds) are read by
``timeparse.parse_api_time``; a missing or malformed time is ``None``, never an
error, because one odd field must not stop a recording.
"""

from __future__ import annotations

from typing import Any

from kubectl_sktrace.errors import KubeError
from kubectl_sktrace.model import GVK, POD, SECRET, ObjectHead, ObjKey, OwnerRef
from kubectl_sktrace.timeparse import parse_api_time

DROPPED_METADATA = (
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "managedFields",
    "resourceVersion",
    "uid",
)
DROPPED_ANNOTATIONS = (
    "kubectl.kubernetes.io/last-applied-configuration",
    "deployment.kubernetes.io/revision",
)
SECRET_VALUE_FIELDS = ("data", "stringData")



def sanitize(obj: dict[str, Any], *, gvk: GVK, keep_secret_data: bool = False) -> dict[str, Any]:
    """The object as an applied event stores it (see the module docstring); ``obj`` is left unchanged."""
    out = dict(obj)
    out["apiVersion"] = gvk.api_version
    out["kind"] = gvk.kind

    raw_meta = obj.get("metadata")
    meta = dict(raw_meta) if isinstance(raw_meta, dict) else {}
    for field in DROPPED_METADATA:
        meta.pop(field, None)
    raw_annotations = meta.get("annotations")
    annotations = dict(raw_annotations) if isinstance(raw_annotations, dict) else {}
    for annotation in DROPPED_ANNOTATIONS:
        annotations.pop(annotation, None)
    meta["annotations"] = annotations
    out["metadata"] = meta

    if gvk == POD and isinstance(obj.get("spec"), dict):
        spec = dict(obj["spec"])
        spec.pop("nodeName", None)
        out["spec"] = spec

    if gvk == SECRET and not keep_secret_data:
        for field in SECRET_VALUE_FIELDS:
            values = obj.get(field)
            if isinstance(values, dict):
                out[field] = {key: "" for key in values}
    return out


def deleted_stub(key: ObjKey) -> dict[str, Any]:
    """The object of a deleted event: kind, name and namespace only (``""`` when cluster-scoped)."""
    return {
        "apiVersion": key.gvk.api_version,
        "kind": key.gvk.kind,
        "metadata": {"name": key.name, "namespace": key.namespace},
    }


MALFORMED = (KeyError, TypeError, ValueError, AttributeError, KubeError)
"""What reading an object that breaks the API's shape raises (``read_head`` says so with a KubeError): its readers skip
that object and log it; it is never fatal."""


def read_head(obj: dict[str, Any], gvk: GVK) -> ObjectHead:
    """The object's head (key, uid, resourceVersion, creation time, owner references), read once; ``gvk`` is the
    watched kind (list items carry no ``apiVersion``/``kind``). KubeError when it has no name."""
    key = object_key(obj, gvk)
    if key is None:
        raise KubeError(f"the server sent a {gvk} object without metadata.name: check the API server or the kind's definition")
    meta = obj["metadata"]
    uid, version = meta.get("uid"), meta.get("resourceVersion")
    return ObjectHead(
        key=key,
        uid=uid if isinstance(uid, str) else "",
        resource_version=str(version) if version else "",
        created=parse_api_time(meta.get("creationTimestamp")),
        owners=owner_refs(obj),
    )


def object_key(obj: dict[str, Any], gvk: GVK | None = None) -> ObjKey | None:
    """``(gvk, namespace, name)`` of an object, its kind read from ``apiVersion``/``kind`` unless ``gvk`` is given;
    a missing namespace means cluster-scoped (``""``). None when it has no name, or no kind to read."""
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        return None
    if gvk is None:
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not (isinstance(api_version, str) and api_version and isinstance(kind, str) and kind):
            return None
        gvk = GVK.from_api_version(api_version, kind)
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    return ObjKey(gvk=gvk, namespace=namespace if isinstance(namespace, str) else "", name=name)


def _raw_refs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    meta = obj.get("metadata")
    refs = meta.get("ownerReferences") if isinstance(meta, dict) else None
    return [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []


def owner_refs(obj: dict[str, Any]) -> tuple[OwnerRef, ...]:
    """The object's ownerReferences, in listed order; entries without ``apiVersion``, ``kind`` or ``name`` are
    skipped (a filter must not crash on bad input); a missing ``uid`` reads as ``""``."""
    out = []
    for ref in _raw_refs(obj):
        api_version, kind, name, uid = ref.get("apiVersion"), ref.get("kind"), ref.get("name"), ref.get("uid")
        if not (isinstance(api_version, str) and api_version and isinstance(kind, str) and kind and isinstance(name, str) and name):
            continue
        out.append(OwnerRef(gvk=GVK.from_api_version(api_version, kind), name=name, uid=uid if isinstance(uid, str) else ""))
    return tuple(out)


def is_daemonset_owned(obj: dict[str, Any]) -> bool:
    """Whether any ownerReference is a DaemonSet (any group, as SimKube checks the kind only): such pods are
    recreated per node by the simulated DaemonSet and are left out of exports."""
    return any(ref.get("kind") == "DaemonSet" for ref in _raw_refs(obj))
