"""The Table form (``Accept: ...;as=Table``), what ``kubectl get`` asks for to print its columns: Name, Age and, for
pods, Ready, Status and Restarts, for Deployments, Ready, Up-to-date and Available, for namespaces, Status, with each
row's object as ``PartialObjectMetadata``.

A column read from an object's status takes what the status says. Where the status says nothing, a live server's
object is a new one (``Pending``, ``0/1``: ``unknown=None``), while a history that never recorded the status must not
guess: ``unknown="<unknown>"`` is printed there instead, as kubectl prints a value it cannot know.
"""

from __future__ import annotations

import json
import time
from calendar import timegm
from typing import Any

Obj = dict[str, Any]


def _column(name: str, description: str, *, format: str = "") -> Obj:  # noqa: A002 - the Table's own word
    return {"name": name, "type": "string", "format": format, "description": description, "priority": 0}


_NAME = _column("Name", "Name must be unique within a namespace.", format="name")
_AGE = _column("Age", "CreationTimestamp is a timestamp representing the server time when this object was created.")
_COLUMNS = {
    "Namespace": [_column("Status", "The status of the namespace")],
    "Deployment": [
        _column("Ready", "Number of the pod with ready state"),
        _column("Up-to-date", "Total number of non-terminated pods targeted by this deployment that have the desired template spec."),
        _column("Available", "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment."),
    ],
    "Pod": [
        _column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
        _column("Status", "The aggregate status of the containers in this pod."),
        _column("Restarts", "The number of times the containers in this pod have been restarted."),
    ],
}


def table(kind: str, objects: list[Obj], *, rv: str, cont: str = "", remaining: int = 0, now: float | None = None,
          unknown: str | None = None) -> Obj:
    """A Table of ``objects`` (of ``kind``) as the list (or watch event) at ``rv`` would carry it; ages counted at
    ``now`` (the clock's time by default), missing status cells as ``unknown`` says (the module's docstring)."""
    columns = [_NAME, *_COLUMNS.get(kind, []), _AGE]
    at = time.time() if now is None else now
    rows = []
    for obj in objects:
        meta = obj["metadata"]
        cells: list[Any] = [meta["name"], *_status_cells(kind, obj, unknown), age(meta.get("creationTimestamp"), at)]
        rows.append({"cells": cells, "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}})
    table_meta: Obj = {"resourceVersion": rv}
    if cont:
        table_meta["continue"] = cont
        table_meta["remainingItemCount"] = remaining
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": table_meta, "columnDefinitions": columns, "rows": rows}


def table_event(kind: str, event_type: str, obj: Obj, *, rv: str, now: float | None = None, unknown: str | None = None) -> bytes:
    """One watch event line whose object is a one-row Table (``kubectl get -w``)."""
    single = table(kind, [obj], rv=rv, now=now, unknown=unknown)
    return json.dumps({"type": event_type, "object": single}, separators=(",", ":")).encode() + b"\n"


def age(created: str | None, now: float) -> str:
    """kubectl's AGE of an object created at ``created`` (RFC 3339), at ``now``."""
    if not created:
        return "<unknown>"
    seconds = max(0, int(now - timegm(time.strptime(created, "%Y-%m-%dT%H:%M:%SZ"))))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    if seconds < 172800:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


def _status_cells(kind: str, obj: Obj, unknown: str | None) -> list[Any]:
    if kind not in _COLUMNS:
        return []
    status = obj.get("status")
    if kind == "Pod":
        return _pod_cells(obj, unknown)
    if unknown is not None and not status:
        return [unknown] * len(_COLUMNS[kind])
    if kind == "Deployment":
        return _deployment_cells(obj)
    return [(status or {}).get("phase", "Active")]


def _deployment_cells(deployment: Obj) -> list[Any]:
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    return [f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}", status.get("updatedReplicas", 0), status.get("availableReplicas", 0)]


def _pod_cells(pod: Obj, unknown: str | None) -> list[Any]:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    statuses = status.get("containerStatuses")
    if unknown is not None and not status.get("phase"):
        return [unknown, "Terminating" if pod["metadata"].get("deletionTimestamp") else unknown, unknown]
    reason = _pod_reason(pod, statuses or [], status.get("phase", "Pending"))
    if unknown is not None and statuses is None:  # the phase is known, the containers' readiness and restarts are not
        return [unknown, reason, unknown]
    ready = sum(1 for c in statuses or [] if c.get("ready"))
    restarts = sum(int(c.get("restartCount", 0)) for c in statuses or [])
    return [f"{ready}/{len(spec.get('containers') or [])}", reason, str(restarts)]


def _pod_reason(pod: Obj, statuses: list[Obj], phase: str) -> str:
    """kubectl's STATUS of a pod: its phase, a container's waiting or terminated reason, or Terminating."""
    reason = phase
    for cs in statuses:
        state = cs.get("state") or {}
        if "waiting" in state and state["waiting"].get("reason"):
            reason = state["waiting"]["reason"]
        elif "terminated" in state and phase not in ("Running",):
            reason = state["terminated"].get("reason", "Completed")
    return "Terminating" if pod["metadata"].get("deletionTimestamp") else reason
