"""The kinds a cache recorded, as kubectl names them: ``deploy``, ``deployments``, ``deployments.apps``,
``Deployment``, ``apps/v1.Deployment``, read from the discovery documents the cache keeps (what the server said when
it was recorded); a kind no document names is known by its kind alone (lower-cased, and ``kind + s`` as its plural).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.model import GVK, POD
from kubectl_sktrace.plural import closest
from kubectl_sktrace.store import attime
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.trace.selection.selectors import quoted


SHORT_NAMES = {"Deployment": ("deploy",), "ConfigMap": ("cm",), "Pod": ("po",), "StatefulSet": ("sts",), "DaemonSet": ("ds",),
               "ReplicaSet": ("rs",), "Service": ("svc",), "CronJob": ("cj",), "Namespace": ("ns",), "Job": (), "Secret": ()}
"""kubectl's short names of the built-in kinds, for a kind no discovery document names (a trace, a cache without them)."""


ALL = ("Pod", "ReplicationController", "Service", "DaemonSet", "Deployment", "ReplicaSet", "StatefulSet", "HorizontalPodAutoscaler",
       "CronJob", "Job")
"""The built-in kinds of kubectl's category ``all`` (``kubectl get all``), in the order kubectl prints them."""


@dataclass(frozen=True)
class Kind:
    """A recorded kind: its GVK, its plural (the URL's resource), whether namespaced, its short names, as discovery said."""

    gvk: GVK
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    singular: str = ""
    lifecycles: bool = False  # pods known by their lifecycles only (v1.Pod not tracked): no version, no body (``LIFECYCLES``)

    @property
    def resource(self) -> str:
        """``deployments.apps``, ``pods``: how ``kubectl get`` names the resource."""
        return f"{self.plural}.{self.gvk.group}" if self.gvk.group else self.plural

    @property
    def name_prefix(self) -> str:
        """``deployment.apps``, ``pod``: what ``-o name`` prints before ``/NAME``."""
        lower = self.gvk.kind.lower()
        return f"{lower}.{self.gvk.group}" if self.gvk.group else lower

    def names(self) -> frozenset[str]:
        return frozenset({self.gvk.kind.lower(), self.plural.lower(), self.singular.lower(), *self.short_names} - {""})


def _entries(cache: Cache) -> dict[GVK, dict[str, Any]]:
    found: dict[GVK, dict[str, Any]] = {}
    for group_version, text in attime.discovery_documents(cache):
        try:
            doc = json.loads(text)
        except ValueError:
            continue
        for entry in doc.get("resources") or [] if isinstance(doc, dict) else []:
            name, kind = entry.get("name") or "", entry.get("kind")
            if isinstance(entry, dict) and name and "/" not in name and kind:
                found.setdefault(GVK.from_api_version(group_version, str(kind)), entry)
    return found


LIFECYCLES = ("pods are known here by their lifecycles only (v1.Pod is not in the tracer config's trackedObjects): when the "
              "pods of the tracked workloads ran and their status, not their versions, labels or spec; track v1.Pod to keep those")
"""Why a question about pods' versions has no answer in such a cache."""


def recorded(cache: Cache) -> list[Kind]:
    """Every kind the cache has rows of, with its names, by GVK; pods, when not tracked as a kind, as the cache knows
    them: the pods whose lifecycles it recorded (``Kind.lifecycles``)."""
    entries = _entries(cache)
    out = [_kind(GVK.parse(text), entries) for text in attime.recorded_kinds(cache)]
    if all(kind.gvk != POD for kind in out) and attime.has_pod_lifecycles(cache):
        out.append(replace(_kind(POD, entries), lifecycles=True))
        out.sort(key=lambda kind: str(kind.gvk))
    return out


def _kind(gvk: GVK, entries: dict[GVK, dict[str, Any]]) -> Kind:
    entry = entries.get(gvk) or {}
    return Kind(gvk=gvk, plural=str(entry.get("name") or gvk.kind.lower() + "s"), namespaced=bool(entry.get("namespaced", True)),
                short_names=tuple(str(s).lower() for s in (entry.get("shortNames") or () if entry else _built_in(gvk))),
                singular=str(entry.get("singularName") or ""))


def _built_in(gvk: GVK) -> tuple[str, ...]:
    return SHORT_NAMES.get(gvk.kind, ()) if gvk.group in ("", "apps", "batch") else ()


def resolve(kinds: list[Kind], term: str) -> Kind:
    """The recorded kind ``term`` names as kubectl takes it; a UsageError naming the kinds recorded when none."""
    text = term.strip()
    if "/" in text or (text.count(".") == 1 and text.split(".")[1][:1].isupper()):
        try:
            gvk = GVK.parse(text)
        except UsageError:
            gvk = None
        match = [k for k in kinds if k.gvk == gvk]
    else:
        name, _, group = text.lower().partition(".")
        match = [k for k in kinds if name in k.names()
                 and group in ("", k.gvk.group, f"{k.gvk.version}.{k.gvk.group}")]
    if match:
        return match[0]
    known = ", ".join(sorted(k.plural for k in kinds)) or "none"
    meant = closest(text.lower().partition(".")[0], [name for k in kinds for name in k.names()])
    hint = f"did you mean {meant!r}?" if meant else "give a kind as kubectl names it, like 'deploy'"
    raise UsageError(f"the cache recorded no kind {quoted(text)} (recorded: {known}); {hint}")


def resolve_many(kinds: list[Kind], terms: str) -> list[Kind]:
    """The recorded kinds ``deploy,cm`` names, in that order, each once; ``all`` the recorded kinds of kubectl's category
    ``all`` (``ALL``: the built-in workloads, pods and services)."""
    found: list[Kind] = []
    for term in terms.split(","):
        if term.strip() == "all":
            found += [k for name in ALL for k in kinds if k.gvk.kind == name and k.gvk.group in ("", "apps", "batch", "autoscaling")]
        elif term.strip():
            found.append(resolve(kinds, term))
        else:
            raise UsageError(f"{quoted(terms)}: kinds are separated by one comma, like 'deploy,cm'")
    return list(dict.fromkeys(found))
