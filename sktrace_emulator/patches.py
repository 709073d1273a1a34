"""The patch formats kubectl sends: RFC 7386 JSON merge patch, RFC 6902 JSON patch and strategic merge patch.
"""

from __future__ import annotations

import json
from typing import Any

from sktrace_emulator.records import ApiError, Obj


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: Obj, ops: list[Obj]) -> Obj:
    """RFC 6902 JSON patch (add, replace, remove) as kubectl sends for ``--type=json``."""
    doc = json.loads(json.dumps(target))
    for op in ops:
        path = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent = doc
        for part in path[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent.setdefault(part, {})
        last = path[-1]
        if op["op"] in ("add", "replace"):
            if isinstance(parent, list):
                if last == "-":
                    parent.append(op["value"])
                elif op["op"] == "add":
                    parent.insert(int(last), op["value"])
                else:
                    parent[int(last)] = op["value"]
            else:
                parent[last] = op["value"]
        elif op["op"] == "remove":
            if isinstance(parent, list):
                del parent[int(last)]
            else:
                parent.pop(last, None)
        else:
            raise ApiError(400, "BadRequest", f"unsupported JSON patch operation {op['op']!r}")
    result: Obj = doc
    return result


MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name", "env": "name", "volumes": "name",
    "volumeMounts": "mountPath", "volumeDevices": "devicePath", "ports": "containerPort", "imagePullSecrets": "name",
    "ownerReferences": "uid", "conditions": "type", "hostAliases": "ip", "resourceClaims": "name",
    "topologySpreadConstraints": "topologyKey",
}
"""The lists the built-in kinds the emulator serves merge by a key in a strategic merge patch (their Go types'
``patchStrategy:"merge"`` and ``patchMergeKey``); every other list is replaced whole."""

_ORDER = "$setElementOrder/"
_DELETE_PRIMITIVES = "$deleteFromPrimitiveList/"


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """A strategic merge patch as ``kubectl apply`` makes it for a built-in kind: a JSON merge patch whose lists of
    ``MERGE_KEYS`` merge element by element (``$patch: delete`` removes one), with the directives
    ``$setElementOrder/LIST``, ``$deleteFromPrimitiveList/LIST``, ``$retainKeys`` and ``$patch: replace|delete``.
    No directive is ever stored."""
    if not isinstance(patch, dict):
        return patch
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    if isinstance(patch.get("$retainKeys"), list):
        result = {k: v for k, v in result.items() if k in patch["$retainKeys"]}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and key in MERGE_KEYS:
            result[key] = _merge_list(result.get(key), value, MERGE_KEYS[key])
        else:
            merged = strategic_merge_patch(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
    for key, value in patch.items():
        if key.startswith(_DELETE_PRIMITIVES) and isinstance(result.get(key[len(_DELETE_PRIMITIVES):]), list):
            name = key[len(_DELETE_PRIMITIVES):]
            result[name] = [item for item in result[name] if item not in value]
        elif key.startswith(_ORDER) and isinstance(result.get(key[len(_ORDER):]), list):
            name = key[len(_ORDER):]
            result[name] = _ordered(result[name], value, MERGE_KEYS.get(name))
    return result


def _merge_list(current: Any, patch: list[Any], key: str) -> list[Any]:
    items = list(current) if isinstance(current, list) else []
    for element in patch:
        if not isinstance(element, dict) or key not in element:
            items.append(element)
            continue
        at = next((i for i, item in enumerate(items) if isinstance(item, dict) and item.get(key) == element[key]), None)
        merged = strategic_merge_patch(items[at] if at is not None else None, element)
        if at is None:
            if merged is not None:
                items.append(merged)
        elif merged is None:
            del items[at]
        else:
            items[at] = merged
    return items


def _ordered(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    """The list in the order ``$setElementOrder`` gives; elements it does not name keep their place after those."""
    def ident(item: Any) -> Any:
        return json.dumps(item.get(key) if key is not None and isinstance(item, dict) else item, sort_keys=True)

    rank = {ident(item): i for i, item in enumerate(order)}
    return sorted(items, key=lambda item: rank.get(ident(item), len(rank)))
