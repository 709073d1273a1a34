"""The state at T and the changes after it, as the server reads them from the cache (to be the history layer's)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterator

from kubectl_sktrace.model import ObjKey
from kubectl_sktrace.store import history
from kubectl_sktrace.store.engine import Cache


@dataclass(frozen=True)
class Change:
    """One recorded change after T: the object as it became (``None`` for a deletion)."""

    ts: float
    key: ObjKey
    obj: dict[str, Any] | None


def _object(key: ObjKey, uid: str, body: dict[str, Any] | None) -> dict[str, Any]:
    obj = dict(body or {})
    meta = dict(obj.get("metadata") or {})
    meta.setdefault("name", key.name)
    if key.namespace:
        meta.setdefault("namespace", key.namespace)
    if uid:
        meta.setdefault("uid", uid)
    obj["metadata"] = meta
    return {"apiVersion": key.gvk.api_version, "kind": key.gvk.kind, **{k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}}


def state_at(cache: Cache, *, at: float) -> Iterator[tuple[ObjKey, dict[str, Any]]]:
    for event in history.state_at(cache, ts=math.floor(at) + 1, known=math.inf, revisions=True):
        yield event.key, _object(event.key, event.uid, event.body)


def changes(cache: Cache, *, after: float, until: float) -> Iterator[Change]:
    for event in history.window_events(cache, start_ts=math.floor(after) + 1, end_ts=math.floor(until) + 1, known=math.inf, revisions=True):
        yield Change(float(event.ts), event.key, None if event.deleted else _object(event.key, event.uid, event.body))
