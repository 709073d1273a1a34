"""The kinds the server serves: every recorded kind, named as the cluster named it in the discovery documents the cache
keeps (plural, short names, scope), each with the read verbs only. Pure: the documents and the kinds come in.

A recorded kind that no document names (a cache whose documents were never kept) is served under the plural a
lower-cased kind with an ``s`` makes, as kubectl guesses it; a document's kind that was never recorded is left out, so
that ``kubectl get`` of it says the server does not have it rather than that there was nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from kubectl_sktrace.model import GVK
from sktrace_apiserver.discovery import CATEGORY_ALL

Obj = dict[str, Any]
READ_VERBS = ["get", "list", "watch"]


@dataclass(frozen=True)
class Resource:
    """One served kind: what discovery advertises and what paths route to."""

    gvk: GVK
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    singular: str = ""

    @property
    def group(self) -> str:
        return self.gvk.group

    @property
    def version(self) -> str:
        return self.gvk.version

    @property
    def kind(self) -> str:
        return self.gvk.kind

    @property
    def api_version(self) -> str:
        return self.gvk.api_version


_CLUSTER_SCOPED = {"Namespace", "Node", "PersistentVolume", "StorageClass", "PriorityClass", "ClusterRole", "ClusterRoleBinding",
                   "CustomResourceDefinition"}


def served(documents: dict[str, Obj], recorded: Iterable[GVK]) -> list[Resource]:
    """The recorded kinds as the documents name them, in the documents' order, the undocumented after them."""
    kinds = set(recorded)
    found: dict[GVK, Resource] = {}
    for group_version, doc in documents.items():
        for entry in doc.get("resources") or []:
            name, kind = str(entry.get("name") or ""), str(entry.get("kind") or "")
            gvk = GVK.from_api_version(group_version, kind) if kind else None
            if not name or "/" in name or gvk not in kinds or gvk in found or gvk is None:
                continue
            found[gvk] = Resource(gvk=gvk, plural=name, namespaced=bool(entry.get("namespaced", True)),
                                  short_names=tuple(str(s) for s in entry.get("shortNames") or ()),
                                  singular=str(entry.get("singularName") or ""))
    for gvk in sorted(kinds - set(found), key=str):
        found[gvk] = Resource(gvk=gvk, plural=gvk.kind.lower() + "s", namespaced=gvk.kind not in _CLUSTER_SCOPED)
    return list(found.values())


def resource_list(resources: list[Resource], *, group: str, version: str) -> Obj | None:
    """``/api/v1`` or ``/apis/GROUP/VERSION``: the served kinds there with the read verbs; None when there are none."""
    entries: list[Obj] = []
    for r in resources:
        if (r.group, r.version) != (group, version):
            continue
        entry: Obj = {"name": r.plural, "singularName": r.singular or r.kind.lower(), "namespaced": r.namespaced, "kind": r.kind,
                      "verbs": READ_VERBS}
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if (r.group, r.plural) in CATEGORY_ALL:
            entry["categories"] = ["all"]
        entries.append(entry)
    if not entries:
        return None
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}" if group else version, "resources": entries}
