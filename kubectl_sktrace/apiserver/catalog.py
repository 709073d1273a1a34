"""Discovery of the past: the recorded kinds (``past.kinds``, named as the cluster named them in the discovery documents
the cache keeps), each advertised with the read verbs only. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubectl_sktrace.past.kinds import Kind
from sktrace_apiserver.discovery import CATEGORY_ALL

Obj = dict[str, Any]
READ_VERBS = ["get", "list", "watch"]


@dataclass(frozen=True)
class Named:
    """A kind as the protocol's documents and errors name it (``sktrace_apiserver``: selectors, openapi)."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True

    @classmethod
    def of(cls, kind: Kind) -> Named:
        return cls(kind.gvk.group, kind.gvk.version, kind.gvk.kind, kind.plural, kind.namespaced)


def resource_list(kinds: list[Kind], *, group: str, version: str) -> Obj | None:
    """``/api/v1`` or ``/apis/GROUP/VERSION``: the kinds served there with the read verbs; None when there are none."""
    entries: list[Obj] = []
    for k in kinds:
        if (k.gvk.group, k.gvk.version) != (group, version):
            continue
        entry: Obj = {"name": k.plural, "singularName": k.singular or k.gvk.kind.lower(), "namespaced": k.namespaced, "kind": k.gvk.kind,
                      "verbs": READ_VERBS}
        if k.short_names:
            entry["shortNames"] = list(k.short_names)
        if (k.gvk.group, k.plural) in CATEGORY_ALL:
            entry["categories"] = ["all"]
        entries.append(entry)
    if not entries:
        return None
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}" if group else version, "resources": entries}
