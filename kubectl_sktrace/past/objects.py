"""An object as ``kubectl get -o json`` shows it, from a stored version; which objects a question selects. Pure.

A stored version is the object as the recorder keeps it (docs/spec.md §4): no ``status``, ``managedFields``,
``resourceVersion``, ``generation``, ``uid``, timestamps, nor the two annotations that change without a change; a
pod without ``spec.nodeName``; a Secret's values blanked. Here it gets back the identity the cluster gave it (its
kind, name, namespace, ``uid``) and loses what a sanitized body adds (empty ``annotations``); what the recorder never
kept stays absent: never invented. Its ``creationTimestamp`` is the cluster's, when the cache recorded it (0015).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.model import ObjKey
from kubectl_sktrace.timeparse import format_time
from kubectl_sktrace.trace.selection.selectors import Selector, quoted

MAX_SELECTOR = 4_096
"""Characters of a label or field selector at most (kubectl's are a few dozen)."""


def kubectl_form(body: Mapping[str, Any], *, key: ObjKey, uid: str, created: int | None = None) -> dict[str, Any]:
    """The object as ``kubectl get -o json`` prints it, as far as the cache kept it (see the module docstring);
    ``created`` the second of its creation, when recorded."""
    obj = {k: v for k, v in body.items() if k != "status"}
    meta = dict(obj.get("metadata") or {})
    meta["name"] = key.name
    if key.namespace:
        meta["namespace"] = key.namespace
    if uid:
        meta["uid"] = uid
    if created is not None:
        meta["creationTimestamp"] = format_time(created)
    for empty in ("annotations", "labels"):
        if not meta.get(empty):
            meta.pop(empty, None)
    out: dict[str, Any] = {"apiVersion": key.gvk.api_version, "kind": key.gvk.kind, "metadata": meta}
    out.update((k, v) for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata"))
    return out


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


@dataclass(frozen=True)
class FieldTerm:
    """One term of a field selector: ``metadata.name`` or ``metadata.namespace``, ``=`` (``==``) or ``!=``."""

    field: str
    value: str
    equal: bool

    def matches(self, key: ObjKey) -> bool:
        found = key.name if self.field == "metadata.name" else key.namespace
        return (found == self.value) == self.equal


FIELDS = ("metadata.name", "metadata.namespace")


def parse_field_selector(text: str) -> tuple[FieldTerm, ...]:
    """kubectl's ``--field-selector`` over the fields the cache knows of every kind; a UsageError otherwise."""
    if len(text) > MAX_SELECTOR:
        raise UsageError(f"the field selector is {len(text)} characters long; at most {MAX_SELECTOR} are read")
    terms = []
    for term in (t.strip() for t in text.split(",")):
        for op in ("!=", "==", "="):
            name, found, value = term.partition(op)
            if found:
                break
        else:
            raise UsageError(f"invalid field selector {quoted(text)}: {quoted(term)} is not FIELD=VALUE or FIELD!=VALUE")
        if name.strip() not in FIELDS:
            raise UsageError(f"field selector {quoted(text)}: the history can select on {' and '.join(FIELDS)} only, not {quoted(name.strip())}")
        terms.append(FieldTerm(name.strip(), value.strip(), op != "!="))
    return tuple(terms)


@dataclass(frozen=True)
class Scope:
    """Which objects of a kind a question selects: a namespace (None: all), names (empty: all), a label selector,
    field terms."""

    namespace: str | None = None
    names: tuple[str, ...] = ()
    labels: Selector | None = None
    fields: tuple[FieldTerm, ...] = field(default=())

    def name_filter(self) -> tuple[str, ...]:
        """The names the database may narrow to: ``names``, or a ``metadata.name=`` term's."""
        equal = tuple(t.value for t in self.fields if t.field == "metadata.name" and t.equal)
        return self.names or equal[:1]

    def namespace_filter(self) -> str | None:
        equal = [t.value for t in self.fields if t.field == "metadata.namespace" and t.equal]
        return self.namespace if self.namespace is not None else (equal[0] if equal else None)

    def selects(self, key: ObjKey, obj: Mapping[str, Any] | None) -> bool:
        if self.namespace is not None and key.namespace != self.namespace:
            return False
        if self.names and key.name not in self.names:
            return False
        if not all(t.matches(key) for t in self.fields):
            return False
        return self.labels is None or (obj is not None and self.labels.matches(labels_of(obj)))


def changed_paths(old: Any, new: Any, path: str) -> list[str]:
    """The leaves that differ between two values, as ``spec.replicas`` or ``spec.template.spec.containers[0].image``;
    a leaf's old and new value when short (``spec.replicas 2→3``). Pure."""
    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict):  # only the members that differ are walked (and named)
        return [p for k in sorted(set(old) | set(new), key=str) if old.get(k) != new.get(k)
                for p in changed_paths(old.get(k), new.get(k), f"{path}.{k}")]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [p for i, (a, b) in enumerate(zip(old, new)) if a != b for p in changed_paths(a, b, f"{path}[{i}]")]
    if isinstance(old, (dict, list)) or isinstance(new, (dict, list)):
        return [path]
    shown = f"{path} {_short(old)}→{_short(new)}"
    return [shown if len(shown) < 120 else path]


def _short(value: Any) -> str:
    return "(none)" if value is None else str(value)
