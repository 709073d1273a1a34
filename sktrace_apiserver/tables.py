"""The Table form (``Accept: ...;as=Table``), what ``kubectl get`` asks for to print its columns: the envelope every
server sends (``envelope``: the column definitions, a row per object with its object as ``PartialObjectMetadata``, the
list's version and continue token), and the emulator's cells of a live object (``table``): Name, Age and, for pods,
Ready, Status and Restarts, for Deployments, Ready, Up-to-date and Available, for namespaces, Status.

kubectl prints a column of priority 0 always and one of a higher priority with ``-o wide``; it adds NAMESPACE (``-A``)
and LABELS (``--show-labels``) itself, from the rows' objects.
"""

from __future__ import annotations

import json
import time
from calendar import timegm
from typing import Any, Sequence

Obj = dict[str, Any]


def column(name: str, description: str = "", *, priority: int = 0, format: str = "") -> Obj:  # noqa: A002 - the Table's own word
    """One column definition."""
    return {"name": name, "type": "string", "format": format, "description": description, "priority": priority}


def envelope(columns: list[Obj], rows: Sequence[tuple[list[Any], Obj]], *, rv: str, cont: str = "", remaining: int = 0) -> Obj:
    """A Table of ``rows`` (each its cells and its object's metadata) as the list (or watch event) at ``rv`` carries it."""
    table_meta: Obj = {"resourceVersion": rv}
    if cont:
        table_meta["continue"] = cont
        table_meta["remainingItemCount"] = remaining
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": table_meta, "columnDefinitions": columns,
            "rows": [{"cells": cells, "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}}
                     for cells, meta in rows]}


def event_line(event_type: str, table: Obj) -> bytes:
    """One watch event line whose object is a one-row Table (``kubectl get -w``)."""
    return json.dumps({"type": event_type, "object": table}, separators=(",", ":")).encode() + b"\n"


_NAME = column("Name", "Name must be unique within a namespace.", format="name")
_AGE = column("Age", "CreationTimestamp is a timestamp representing the server time when this object was created.")
_COLUMNS = {
    "Namespace": [column("Status", "The status of the namespace")],
    "Deployment": [
        column("Ready", "Number of the pod with ready state"),
        column("Up-to-date", "Total number of non-terminated pods targeted by this deployment that have the desired template spec."),
        column("Available", "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment."),
    ],
    "Pod": [
        column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
        column("Status", "The aggregate status of the containers in this pod."),
        column("Restarts", "The number of times the containers in this pod have been restarted."),
    ],
}


def table(kind: str, objects: list[Obj], *, rv: str, cont: str = "", remaining: int = 0) -> Obj:
    """The emulator's Table of live ``objects`` (of ``kind``): their status as it is, a missing one a new object's."""
    now = time.time()
    rows = [([obj["metadata"]["name"], *_status_cells(kind, obj), age(obj["metadata"].get("creationTimestamp"), now)], obj["metadata"])
            for obj in objects]
    return envelope([_NAME, *_COLUMNS.get(kind, []), _AGE], rows, rv=rv, cont=cont, remaining=remaining)


def age(created: str | None, now: float) -> str:
    """The emulator's AGE of an object created at ``created`` (RFC 3339), at ``now``."""
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


def _status_cells(kind: str, obj: Obj) -> list[Any]:
    if kind == "Pod":
        return _pod_cells(obj)
    if kind == "Deployment":
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        return [f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}", status.get("updatedReplicas", 0), status.get("availableReplicas", 0)]
    if kind == "Namespace":
        return [(obj.get("status") or {}).get("phase", "Active")]
    return []


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
