"""The patch formats kubectl sends: RFC 7386 JSON merge patch and RFC 6902 JSON patch.
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
