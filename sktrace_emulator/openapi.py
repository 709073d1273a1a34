"""The emulator's OpenAPI answers and its strict field validation: what ``kubectl apply/create/replace -f`` need.

The documents are the distribution's (``sktrace_apiserver.openapi``): kubectl finds no schemas in them and sends
``fieldValidation=Strict``, leaving the checking to the server. With ``Strict`` the emulator checks, as a real server's
strict decoder does for every kind:

- duplicate fields, anywhere in the body;
- unknown fields in ``metadata`` (ObjectMeta's fields);
- unknown top-level fields of the built-in kinds it serves (``spec``, ``data``, … as their Go types have them).

It does not check fields inside ``spec``/``status``/``data``, nor value types, nor a CRD's schema. ``Warn`` sends the
same findings as ``Warning`` headers and accepts the object; ``Ignore`` (or none) checks nothing.
"""

from __future__ import annotations

import json
from typing import Any

from sktrace_apiserver import openapi as protocol
from sktrace_emulator.discovery import SERVER_VERSION
from sktrace_emulator.records import ApiError, Obj, ResourceType, not_found
from sktrace_emulator.state import Store

GIT_VERSION = str(SERVER_VERSION["gitVersion"])

OBJECT_META = frozenset({"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
                         "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
                         "ownerReferences", "finalizers", "managedFields"})
"""meta/v1 ObjectMeta's JSON fields."""

_SPEC_STATUS = frozenset({"spec", "status"})
TOP_LEVEL: dict[tuple[str, str], frozenset[str]] = {
    ("", "Namespace"): _SPEC_STATUS, ("", "Node"): _SPEC_STATUS, ("", "Pod"): _SPEC_STATUS,
    ("", "ConfigMap"): frozenset({"data", "binaryData", "immutable"}),
    ("", "Secret"): frozenset({"data", "stringData", "type", "immutable"}),
    ("", "ServiceAccount"): frozenset({"secrets", "imagePullSecrets", "automountServiceAccountToken"}),
    ("apps", "Deployment"): _SPEC_STATUS, ("apps", "ReplicaSet"): _SPEC_STATUS, ("apps", "StatefulSet"): _SPEC_STATUS,
    ("apps", "DaemonSet"): _SPEC_STATUS, ("batch", "Job"): _SPEC_STATUS, ("batch", "CronJob"): _SPEC_STATUS,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _SPEC_STATUS,
    ("rbac.authorization.k8s.io", "ClusterRole"): frozenset({"rules", "aggregationRule"}),
    ("rbac.authorization.k8s.io", "Role"): frozenset({"rules"}),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): frozenset({"subjects", "roleRef"}),
    ("rbac.authorization.k8s.io", "RoleBinding"): frozenset({"subjects", "roleRef"}),
}
"""The top-level JSON fields, besides apiVersion, kind and metadata, of the built-in kinds the emulator serves."""


def v3(store: Store, gv_parts: list[str]) -> Obj:
    """``/openapi/v3`` or one group-version's document (``sktrace_apiserver.openapi``) of the registered kinds."""
    found = protocol.v3(store.types.values(), gv_parts, git_version=GIT_VERSION, revision=str(store.rv))
    if found is None:
        raise not_found()
    return found


def v2_protobuf() -> bytes:
    """``/openapi/v2`` as kubectl asks for it, with no definitions (``sktrace_apiserver.openapi``)."""
    return protocol.v2_protobuf(GIT_VERSION)


_DUPS = object()
"""The key under which an object of the body keeps the keys it repeated (a key no JSON text can make)."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[Any, Any]:
    obj: dict[Any, Any] = {}
    for key, value in pairs:
        if key in obj:
            obj.setdefault(_DUPS, []).append(key)
        obj[key] = value
    return obj


def _duplicates(node: Any, path: str) -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        found += [f'duplicate field "{path}{key}"' for key in node.get(_DUPS, ())]
        for key, value in node.items():
            if key is not _DUPS:
                found += _duplicates(value, f"{path}{key}.")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            found += _duplicates(item, f"{path.rstrip('.')}[{index}].")
    return found


def field_errors(raw: bytes, rtype: ResourceType, *, strategic: bool = False) -> list[str]:
    """What a strict decoder finds in a body (see the module's docstring), as a real server words it: ``unknown
    field "metadata.labelz"``, ``duplicate field "spec.replicas"``. A strategic merge patch's ``$`` directives are
    not fields. A body that is not a JSON object (a JSON patch) gives none."""
    try:
        body = json.loads(raw, object_pairs_hook=_pairs)
    except ValueError:
        return []
    if not isinstance(body, dict):
        return []
    errors = _duplicates(body, "")
    known = TOP_LEVEL.get((rtype.group, rtype.kind))
    if known is not None:
        allowed = known | {"apiVersion", "kind", "metadata"}
        errors += [f'unknown field "{key}"' for key in body if isinstance(key, str) and key not in allowed
                   and not (strategic and key.startswith("$"))]
    meta = body.get("metadata")
    if isinstance(meta, dict):
        errors += [f'unknown field "metadata.{key}"' for key in meta if isinstance(key, str) and key not in OBJECT_META
                   and not (strategic and key.startswith("$"))]
    return errors


def check_fields(raw: bytes, rtype: ResourceType, directive: str, *, strategic: bool = False) -> list[str]:
    """Apply ``fieldValidation``: raise the 400 a real server sends for ``Strict``; give the warnings for ``Warn``
    (none for ``Ignore`` or no directive, whose bodies are not checked)."""
    if directive not in ("Strict", "Warn"):
        return []
    errors = field_errors(raw, rtype, strategic=strategic)
    if errors and directive == "Strict":
        raise ApiError(400, "BadRequest", f'{rtype.kind} in version "{rtype.version}" cannot be handled as a {rtype.kind}: '
                                          f"strict decoding error: {', '.join(errors)}")
    return errors
