"""Table output (``Accept: ...;as=Table``), what ``kubectl get`` asks for to print its columns: Name, Age and,
for pods, Ready, Status and Restarts, for Deployments, Ready, Up-to-date and Available, for namespaces, Status, with
each row's object as ``PartialObjectMetadata``."""

from __future__ import annotations

import json
import time
from typing import Any

from sktrace_emulator.records import Obj, ResourceType, Stored


def table(rtype: ResourceType, items: list[Stored], *, rv: int, cont: str, remaining: int) -> Obj:
    """A Table of ``items`` as the list (or watch event) at ``rv`` would carry it."""
    columns = [{"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0}]
    if rtype.kind == "Namespace":
        columns.append({"name": "Status", "type": "string", "format": "", "description": "The status of the namespace", "priority": 0})
    if rtype.kind == "Deployment":
        columns += [
            {"name": "Ready", "type": "string", "format": "", "description": "Number of the pod with ready state", "priority": 0},
            {"name": "Up-to-date", "type": "string", "format": "", "description": "Total number of non-terminated pods targeted by this deployment that have the desired template spec.", "priority": 0},
            {"name": "Available", "type": "string", "format": "", "description": "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.", "priority": 0},
        ]
    if rtype.kind == "Pod":
        columns += [
            {"name": "Ready", "type": "string", "format": "", "description": "The aggregate readiness state of this pod for accepting traffic.", "priority": 0},
            {"name": "Status", "type": "string", "format": "", "description": "The aggregate status of the containers in this pod.", "priority": 0},
            {"name": "Restarts", "type": "string", "format": "", "description": "The number of times the containers in this pod have been restarted.", "priority": 0},
        ]
    columns.append({"name": "Age", "type": "string", "format": "", "description": "CreationTimestamp is a timestamp representing the server time when this object was created.", "priority": 0})
    rows = []
    now = time.time()
    for stored in items:
        obj = stored.obj()
        meta = obj["metadata"]
        cells: list[Any] = [meta["name"]]
        if rtype.kind == "Pod":
            cells += _pod_cells(obj)
        if rtype.kind == "Deployment":
            cells += _deployment_cells(obj)
        if rtype.kind == "Namespace":
            cells.append((obj.get("status") or {}).get("phase", "Active"))
        cells.append(_age(meta.get("creationTimestamp"), now))
        rows.append({"cells": cells, "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}})
    table_meta: Obj = {"resourceVersion": str(rv)}
    if cont:
        table_meta["continue"] = cont
        table_meta["remainingItemCount"] = remaining
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": table_meta, "columnDefinitions": columns, "rows": rows}


def table_event(rtype: ResourceType, event_type: str, stored: Stored) -> bytes:
    """One watch event line whose object is a one-row Table (``kubectl get -w``)."""
    single = table(rtype, [stored], rv=stored.rv, cont="", remaining=0)
    return json.dumps({"type": event_type, "object": single}, separators=(",", ":")).encode() + b"\n"


def _age(created: str | None, now: float) -> str:
    if not created:
        return "<unknown>"
    from calendar import timegm

    seconds = max(0, int(now - timegm(time.strptime(created, "%Y-%m-%dT%H:%M:%SZ"))))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    if seconds < 172800:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


def _deployment_cells(deployment: Obj) -> list[Any]:
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    return [f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}", status.get("updatedReplicas", 0), status.get("availableReplicas", 0)]


def _pod_cells(pod: Obj) -> list[Any]:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    phase = status.get("phase", "Pending")
    reason = phase
    for cs in statuses:
        state = cs.get("state") or {}
        if "waiting" in state and state["waiting"].get("reason"):
            reason = state["waiting"]["reason"]
        elif "terminated" in state and phase not in ("Running",):
            reason = state["terminated"].get("reason", "Completed")
    if pod["metadata"].get("deletionTimestamp"):
        reason = "Terminating"
    restarts = sum(int(c.get("restartCount", 0)) for c in statuses)
    return [f"{ready}/{len(spec.get('containers') or [])}", reason, str(restarts)]
