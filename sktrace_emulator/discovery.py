"""The emulator's discovery documents: ``/version``, ``/apis``, the group-version resource lists (OpenAPI: ``openapi``).

They are made from the store's registered kinds at each request, so a kind registered or removed (a CRD created or
deleted: ``crds``) appears in or leaves discovery at once, as on a real server.
"""

from __future__ import annotations

from sktrace_apiserver.discovery import CATEGORY_ALL as CATEGORY_ALL
from sktrace_apiserver.discovery import group_list as shared_group_list
from sktrace_apiserver.discovery import version_info
from sktrace_emulator import scale
from sktrace_emulator.records import Obj, not_found
from sktrace_emulator.state import Store

SERVER_VERSION = version_info("v1.30.0-sktrace-emulator")

_VERBS_NAMESPACED = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def group_list(store: Store) -> Obj:
    """``/apis``: every group with a registered kind, its versions in the order they were registered."""
    return shared_group_list((t.group, t.version) for t in store.types.values())


def resource_list(store: Store, group: str, version: str) -> Obj:
    """``/api/v1`` or ``/apis/GROUP/VERSION``: the kinds registered there, with their status subresources."""
    types = [t for t in store.types.values() if t.group == group and t.version == version]
    if not types:
        raise not_found()
    resources: list[Obj] = []
    for t in types:
        entry: Obj = {"name": t.plural, "singularName": t.singular, "namespaced": t.namespaced, "kind": t.kind, "verbs": _VERBS_NAMESPACED}
        if t.short_names:
            entry["shortNames"] = list(t.short_names)
        if (t.group, t.plural) in CATEGORY_ALL:
            entry["categories"] = ["all"]
        resources.append(entry)
        resources.append({"name": f"{t.plural}/status", "singularName": "", "namespaced": t.namespaced, "kind": t.kind, "verbs": ["get", "patch", "update"]})
        if scale.scalable(t):
            resources.append(scale.discovery_entry(t))
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}" if group else version, "resources": resources}
