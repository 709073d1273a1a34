"""The objects a pod template refers to by name: SimKube's reference rules E0001-E0005 (docs/spec.md §9). Pure.

A pod template found at one of its kind's ``podSpecTemplatePaths`` may name a ServiceAccount, Secrets and
ConfigMaps of its namespace (env, envFrom, volumes); SimKube's validation wants each applied earlier in the
trace. ``references`` lists them as the rules meet them; ``distinct_references`` is the short form the recorder
stores beside each applied object (``events.refs``), so that an export checks the rules without decoding bodies.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from kubectl_sktrace.model import CONFIG_MAP, GVK, SECRET, SERVICE_ACCOUNT
from kubectl_sktrace.tracerconfig import resolve_pointer

Reference = tuple[str, GVK, str, str]
"""``(code, kind, name, what)``: a pod template's reference to an object of its namespace, and the rule it falls under."""

REFERENCED_KIND = {"E0001": SERVICE_ACCOUNT, "E0002": SECRET, "E0003": CONFIG_MAP, "E0004": SECRET, "E0005": CONFIG_MAP}
"""The kind each rule's references name."""


def references(obj: dict[str, Any], paths: Iterable[str]) -> list[Reference]:
    """The references of an object's pod templates, in the order SimKube's rules meet them; optional ones and
    names that are not strings are skipped."""
    found: list[Reference] = []
    for spec in _pod_specs(obj, paths):
        account = spec.get("serviceAccountName") or spec.get("serviceAccount")
        if isinstance(account, str) and account:
            found.append(("E0001", SERVICE_ACCOUNT, account, "ServiceAccount"))
        for container in (*_listed(spec.get("initContainers")), *_listed(spec.get("containers"))):
            if isinstance(container, dict):
                _container_refs(found, container)
        for volume in _listed(spec.get("volumes")):
            if isinstance(volume, dict):
                _ref(found, "E0004", SECRET, volume.get("secret"), "secretName", "volume Secret")
                _ref(found, "E0005", CONFIG_MAP, volume.get("configMap"), "name", "volume ConfigMap")
    return found


def distinct_references(obj: dict[str, Any], paths: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """``(code, name)`` of each reference, once, in first-met order: all that the rules' verdict on an object
    depends on (a finding is counted once per code and name)."""
    return tuple(dict.fromkeys((code, name) for code, _, name, _ in references(obj, paths)))


def _pod_specs(obj: dict[str, Any], paths: Iterable[str]) -> Iterator[dict[str, Any]]:
    for path in paths:
        for template in resolve_pointer(obj, path):
            spec = template.get("spec") if isinstance(template, dict) else None
            if isinstance(spec, dict):
                yield spec


def _container_refs(found: list[Reference], container: dict[str, Any]) -> None:
    """A container's env and envFrom references to Secrets and ConfigMaps."""
    for env in _listed(container.get("env")):
        source = env.get("valueFrom") if isinstance(env, dict) else None
        if isinstance(source, dict):
            _ref(found, "E0002", SECRET, source.get("secretKeyRef"), "name", "env Secret")
            _ref(found, "E0003", CONFIG_MAP, source.get("configMapKeyRef"), "name", "env ConfigMap")
    for env_from in _listed(container.get("envFrom")):
        if isinstance(env_from, dict):
            _ref(found, "E0002", SECRET, env_from.get("secretRef"), "name", "envFrom Secret")
            _ref(found, "E0003", CONFIG_MAP, env_from.get("configMapRef"), "name", "envFrom ConfigMap")


def _listed(value: object) -> list[Any]:
    """A list as the trace holds it; anything else (a hostile or damaged object's int, map or string) as no items."""
    return value if isinstance(value, list) else []


def _ref(found: list[Reference], code: str, gvk: GVK, ref: object, name_key: str, what: str) -> None:
    if isinstance(ref, dict) and ref.get("optional") is not True:
        name = ref.get(name_key)
        if isinstance(name, str) and name:
            found.append((code, gvk, name, what))
