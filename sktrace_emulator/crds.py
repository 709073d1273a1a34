"""CustomResourceDefinitions, as a real API server serves them: kinds that come and go.

- A CRD created (``kubectl apply -f crd.yaml``, or ``Emulator.create``) serves its kind at once: discovery lists it,
  its paths answer, a list works.
- A CRD deleted takes its objects with it: a DELETED event for each on the open watches, then those watches end
  (cleanly), and from then on the kind's paths answer 404 with the server's own Status ("the server could not find
  the requested resource") and discovery no longer lists it, until a CRD serves it again: then a fresh kind, with a
  history of its own (measured on Kubernetes v1.28: docs/architecture.md).

Where it guesses: the CRD is established at once (no ``Established`` condition to wait for), and deleted at once (a
real server marks it and lets its finalizer delete the objects first: the same events in the same order); each served
version is a kind of its own here, with objects of its own (a real server converts one set between versions).
"""

from __future__ import annotations

from typing import Any, Protocol

from sktrace_emulator.records import ApiError, Obj, ResourceType, Stored

CRD_KIND = "CustomResourceDefinition"


class Kinds(Protocol):
    """What a CRD changes in the store (``state.Store``)."""

    objects: dict[ResourceType, dict[tuple[str, str], Stored]]

    def register(self, rtype: ResourceType) -> ResourceType: ...

    def unregister(self, rtype: ResourceType) -> None: ...

    def delete(self, rtype: ResourceType, namespace: str, name: str, *, graceful: bool = ...) -> Any: ...


def served_types(crd: Obj) -> list[ResourceType]:
    """The kinds a CRD serves: one per served version."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group, kind, plural = spec.get("group"), names.get("kind"), names.get("plural")
    if not (group and kind and plural):
        raise ApiError(422, "Invalid", f'CustomResourceDefinition.apiextensions.k8s.io "{(crd.get("metadata") or {}).get("name", "")}" '
                                       "is invalid: spec.group, spec.names.kind and spec.names.plural are required")
    namespaced = spec.get("scope", "Namespaced") == "Namespaced"
    short = tuple(names.get("shortNames") or ())
    versions = [v.get("name") for v in spec.get("versions") or [] if v.get("served", True) and v.get("name")]
    return [ResourceType(group, version, kind, plural, namespaced=namespaced, short_names=short) for version in versions]


def changing(store: Kinds, event_type: str, crd: Obj) -> None:
    """Before a CRD's own event is committed (the store's lock held): ADDED serves its kinds; DELETED deletes their
    objects (an event each), then stops serving them (their open watches end)."""
    if event_type == "ADDED":
        for rtype in served_types(crd):
            store.register(rtype)
    elif event_type == "DELETED":
        for rtype in served_types(crd):
            for stored in sorted(store.objects.get(rtype, {}).values(), key=lambda s: (s.namespace, s.name)):
                store.delete(rtype, stored.namespace, stored.name, graceful=False)
            store.unregister(rtype)


def crd_object(group: str, kind: str, plural: str, *, versions: tuple[str, ...] = ("v1",), namespaced: bool = True) -> Obj:
    """A minimal CRD manifest for ``kind`` (what ``Emulator.create`` or ``kubectl apply`` takes)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": CRD_KIND, "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": "Namespaced" if namespaced else "Cluster",
                 "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
                 "versions": [{"name": v, "served": True, "storage": i == 0,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
                              for i, v in enumerate(versions)]},
    }
