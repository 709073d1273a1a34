"""Discovery: which kinds the API server serves, under which plural and scope, and where their URLs live.

Pure apart from ``discover``, which receives its GET as a callable. Only the group-versions of the wanted
kinds are fetched (one document each), and a document cached from an earlier run is reused unless it lacks a
wanted kind (a CRD installed since).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping
from urllib.parse import quote

from kubectl_sktrace.kube.rbac import rbac_hint
from kubectl_sktrace.model import GVK
from kubectl_sktrace.plural import closest

Documents = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Resource:
    """A served kind as discovery describes it: enough to build its URLs and explain a 403."""

    gvk: GVK
    plural: str
    namespaced: bool
    verbs: frozenset[str]

    def path(self, *, namespace: str | None, name: str | None = None) -> str:
        """``/api/v1/namespaces/ns/pods[/name]``; a cluster-scoped kind ignores ``namespace``."""
        parts = [discovery_path(self.gvk.group_version)]
        if self.namespaced and namespace:
            parts.append(f"/namespaces/{quote(namespace, safe='')}")
        parts.append(f"/{self.plural}")
        if name is not None:
            parts.append(f"/{quote(name, safe='')}")
        return "".join(parts)

    @property
    def rbac_name(self) -> str:
        """``deployments.apps``, ``pods``: how RBAC rules, ``kubectl create role --resource`` and ``kubectl auth
        can-i`` name the resource."""
        return f"{self.plural}.{self.gvk.group}" if self.gvk.group else self.plural

    def forbidden_message(self, verb: str, *, namespace: str | None, user: str = "") -> str:
        """The one-line 403 message: what was refused and the rule that would allow it (for ``user``, the 403's)."""
        if not self.namespaced:
            scope, namespace = "(cluster-scoped)", None
        elif namespace:
            scope = f"in namespace {namespace!r}"
        else:
            scope = "in all namespaces"
        return f"forbidden: cannot {verb} {self.rbac_name} {scope}; {rbac_hint([self.rbac_name], namespace=namespace, user=user)}"


def discovery_path(group_version: str) -> str:
    """``/api/v1`` for the core group, ``/apis/<group>/<version>`` for the others."""
    return "/api/v1" if group_version == "v1" else f"/apis/{group_version}"


def resources_from_discovery(group_version: str, doc: Mapping[str, Any]) -> dict[GVK, Resource]:
    """The kinds of one APIResourceList document (subresources such as ``pods/status`` left out)."""
    group, _, version = group_version.rpartition("/")
    out: dict[GVK, Resource] = {}
    for entry in doc.get("resources") or []:
        name = entry.get("name") or ""
        kind = entry.get("kind")
        if not name or "/" in name or not kind:
            continue
        gvk = GVK(group=group, version=version, kind=kind)
        out.setdefault(gvk, Resource(gvk=gvk, plural=name, namespaced=bool(entry.get("namespaced")),
                                     verbs=frozenset(entry.get("verbs") or ())))
    return out


def misspelt_kind(gvk: GVK, docs: Mapping[str, dict[str, Any]]) -> GVK | None:
    """The kind its group-version serves that ``gvk`` (which it does not serve) is most likely a typo of
    (``apps/v1.Statefulset``: ``apps/v1.StatefulSet``), or None."""
    doc = docs.get(gvk.group_version)
    served = {g.kind: g for g in resources_from_discovery(gvk.group_version, doc)} if doc else {}
    guess = closest(gvk.kind, served)
    return served[guess] if guess is not None else None


def discover(gvks: Iterable[GVK], *, cached: Mapping[str, dict[str, Any]],
             fetch: Callable[[str], dict[str, Any] | None]) -> tuple[dict[GVK, Resource], Documents]:
    """Resolve ``gvks``, fetching (``fetch(path)``, None when absent) only the group-versions that ``cached``
    does not answer. Returns the resources found and the documents fetched now."""
    wanted: dict[str, set[str]] = {}
    for gvk in gvks:
        wanted.setdefault(gvk.group_version, set()).add(gvk.kind)
    resources: dict[GVK, Resource] = {}
    fetched: Documents = {}
    for group_version in sorted(wanted):
        doc = cached.get(group_version)
        found = resources_from_discovery(group_version, doc) if doc else {}
        if not wanted[group_version] <= {g.kind for g in found}:
            doc = fetch(discovery_path(group_version))
            if doc is None:
                continue
            fetched[group_version] = doc
            found = resources_from_discovery(group_version, doc)
        for gvk, resource in found.items():
            if gvk.kind in wanted[group_version]:
                resources[gvk] = resource
    return resources, fetched
