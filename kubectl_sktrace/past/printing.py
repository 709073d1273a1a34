"""The past printed as ``kubectl get`` prints the present: its columns per kind, ``-o wide``, ``--show-labels``, ``-o name``,
``custom-columns``, a List for ``-o json|yaml``. Pure.

A column is filled from what the history keeps (the spec, labels, data, a pod's lifecycle, the creation time, the
reduced status: ``statuscells`` computes kubectl's READY, UP-TO-DATE, AVAILABLE, STATUS, RESTARTS from it); where the
history does not know the status at that time, or the reduced status does not hold the field (a pod's IP, a Job's
DURATION), the column prints ``<unknown>``, never a guess, and the caller says once which columns those were
(``Table.unknown``). A pod whose status is not known shows the STATUS its lifecycle says (Pending, Running, Terminated).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.past import jsonpath, statuscells
from kubectl_sktrace.past.state import PastObject

UNKNOWN = "<unknown>"
NONE = "<none>"


def age(seconds: float) -> str:
    """kubectl's short age (``HumanDuration``): 45s, 3m20s, 45m, 5h3m, 20h, 3d4h, 30d, 2y."""
    s = int(seconds)
    if s < 0:
        return UNKNOWN
    if s < 120:
        return f"{s}s"
    minutes, hours, days = s // 60, s // 3600, s // 86400
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if hours < 3:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    return f"{days // 365}y{days % 365}d" if days < 365 * 8 and days % 365 else f"{days // 365}y"


def _spec(obj: Mapping[str, Any], *path: str) -> Any:
    value: Any = obj
    for step in path:
        value = value.get(step) if isinstance(value, Mapping) else None
    return value


def _containers(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = _spec(obj, "spec", "template", "spec") or _spec(obj, "spec", "jobTemplate", "spec", "template", "spec") or _spec(obj, "spec")
    found = spec.get("containers") if isinstance(spec, Mapping) else None
    return [c for c in found if isinstance(c, Mapping)] if isinstance(found, list) else []


def _selector(obj: Mapping[str, Any]) -> str:
    labels = _spec(obj, "spec", "selector", "matchLabels") or _spec(obj, "spec", "selector")
    if not isinstance(labels, Mapping) or not labels or "matchLabels" in labels:
        return NONE
    return ",".join(f"{k}={v}" for k, v in labels.items())


def _ports(obj: Mapping[str, Any]) -> str:
    ports = _spec(obj, "spec", "ports")
    if not isinstance(ports, list) or not ports:
        return NONE
    return ",".join(f"{p.get('port')}{':' + str(p['nodePort']) if p.get('nodePort') else ''}/{p.get('protocol', 'TCP')}"
                    for p in ports if isinstance(p, Mapping))


def _data_count(obj: Mapping[str, Any]) -> str:
    return str(sum(len(obj.get(f) or {}) for f in ("data", "binaryData", "stringData") if isinstance(obj.get(f) or {}, Mapping)))


Cell = Callable[[PastObject, int], str]
_NAME: Cell = lambda o, s: o.key.name  # noqa: E731
_AGE: Cell = lambda o, s: UNKNOWN if o.obj["metadata"].get("creationTimestamp") is None else age(s - _created(o))  # noqa: E731
_STATUS_ONLY: Cell = lambda o, s: UNKNOWN  # noqa: E731
_IMAGES: Cell = lambda o, s: ",".join(str(c.get("image", "")) for c in _containers(o.obj)) or NONE  # noqa: E731
_NAMES: Cell = lambda o, s: ",".join(str(c.get("name", "")) for c in _containers(o.obj)) or NONE  # noqa: E731


def _created(found: PastObject) -> int:
    from kubectl_sktrace.timeparse import parse_api_time

    return int(parse_api_time(found.obj["metadata"]["creationTimestamp"]) or 0)


def _status(read: Callable[[Mapping[str, Any], Mapping[str, Any]], str | None]) -> Cell:
    """A cell read from the object's reduced status: ``<unknown>`` where the status at that time is not known."""
    return lambda o, s: UNKNOWN if o.status is None else read(o.obj, o.status) or UNKNOWN


def _pod_status(found: PastObject, second: int) -> str:
    said = None if found.status is None else statuscells.pod_status(found.obj, found.status)
    if said is not None:
        return said
    return UNKNOWN if found.pod is None else found.pod.phase_at(second)


_READY = _status(statuscells.ready_of_desired)


# kind -> (columns, wide columns after them); a cell read from status prints <unknown> where it is not known
COLUMNS: dict[str, tuple[list[tuple[str, Cell]], list[tuple[str, Cell]]]] = {
    "Deployment": ([("NAME", _NAME), ("READY", _READY), ("UP-TO-DATE", _status(statuscells.count("updatedReplicas"))),
                    ("AVAILABLE", _status(statuscells.count("availableReplicas"))), ("AGE", _AGE)],
                   [("CONTAINERS", _NAMES), ("IMAGES", _IMAGES), ("SELECTOR", lambda o, s: _selector(o.obj))]),
    "StatefulSet": ([("NAME", _NAME), ("READY", _READY), ("AGE", _AGE)], [("CONTAINERS", _NAMES), ("IMAGES", _IMAGES)]),
    "ReplicaSet": ([("NAME", _NAME), ("DESIRED", lambda o, s: str(_spec(o.obj, "spec", "replicas") or 0)),
                    ("CURRENT", _status(statuscells.count("replicas"))), ("READY", _status(statuscells.count("readyReplicas"))), ("AGE", _AGE)],
                   [("CONTAINERS", _NAMES), ("IMAGES", _IMAGES), ("SELECTOR", lambda o, s: _selector(o.obj))]),
    "DaemonSet": ([("NAME", _NAME), ("DESIRED", _status(statuscells.count("desiredNumberScheduled"))),
                   ("CURRENT", _status(statuscells.count("currentNumberScheduled"))), ("READY", _status(statuscells.count("numberReady"))),
                   ("UP-TO-DATE", _status(statuscells.count("updatedNumberScheduled"))), ("AVAILABLE", _status(statuscells.count("numberAvailable"))),
                   ("NODE SELECTOR", lambda o, s: ",".join(f"{k}={v}" for k, v in (_spec(o.obj, "spec", "template", "spec", "nodeSelector") or {}).items()) or NONE),
                   ("AGE", _AGE)], [("CONTAINERS", _NAMES), ("IMAGES", _IMAGES), ("SELECTOR", lambda o, s: _selector(o.obj))]),
    "Pod": ([("NAME", _NAME), ("READY", _status(statuscells.pod_ready)), ("STATUS", _pod_status), ("RESTARTS", _status(statuscells.pod_restarts)),
             ("AGE", _AGE)],
            [("IP", _STATUS_ONLY), ("NODE", _status(statuscells.pod_node)), ("NOMINATED NODE", _STATUS_ONLY),
             ("READINESS GATES", _status(statuscells.readiness_gates))]),
    "ConfigMap": ([("NAME", _NAME), ("DATA", lambda o, s: _data_count(o.obj)), ("AGE", _AGE)], []),
    "Secret": ([("NAME", _NAME), ("TYPE", lambda o, s: str(o.obj.get("type") or "Opaque")), ("DATA", lambda o, s: _data_count(o.obj)), ("AGE", _AGE)], []),
    "Service": ([("NAME", _NAME), ("TYPE", lambda o, s: str(_spec(o.obj, "spec", "type") or "ClusterIP")),
                 ("CLUSTER-IP", lambda o, s: str(_spec(o.obj, "spec", "clusterIP") or NONE)), ("EXTERNAL-IP", _STATUS_ONLY),
                 ("PORT(S)", lambda o, s: _ports(o.obj)), ("AGE", _AGE)], [("SELECTOR", lambda o, s: _selector(o.obj))]),
    "Job": ([("NAME", _NAME), ("STATUS", _status(statuscells.job_status)), ("COMPLETIONS", _status(statuscells.job_completions)),
             ("DURATION", _STATUS_ONLY), ("AGE", _AGE)],
            [("CONTAINERS", _NAMES), ("IMAGES", _IMAGES), ("SELECTOR", lambda o, s: _selector(o.obj))]),
    "CronJob": ([("NAME", _NAME), ("SCHEDULE", lambda o, s: str(_spec(o.obj, "spec", "schedule") or NONE)),
                 ("TIMEZONE", lambda o, s: str(_spec(o.obj, "spec", "timeZone") or NONE)),
                 ("SUSPEND", lambda o, s: "True" if _spec(o.obj, "spec", "suspend") else "False"), ("ACTIVE", _status(statuscells.cronjob_active)),
                 ("LAST SCHEDULE", _STATUS_ONLY), ("AGE", _AGE)], [("CONTAINERS", _NAMES), ("IMAGES", _IMAGES)]),
    "Namespace": ([("NAME", _NAME), ("STATUS", _STATUS_ONLY), ("AGE", _AGE)], []),
}
_GENERIC: tuple[list[tuple[str, Cell]], list[tuple[str, Cell]]] = ([("NAME", _NAME), ("AGE", _AGE)], [])


def never_kept(kind: str) -> set[str]:
    """The columns of ``kind`` that no status change keeps (a pod's IP, a Job's DURATION): always ``<unknown>``."""
    base, extra = COLUMNS.get(kind, _GENERIC)
    return {name for name, cell in [*base, *extra] if cell is _STATUS_ONLY}


@dataclass(frozen=True)
class Table:
    text: str
    unknown: tuple[str, ...]  # the columns printed <unknown> in some row


def table(objects: Sequence[PastObject], kind: str, *, second: int, namespace_column: bool, wide: bool, show_labels: bool,
          no_headers: bool, qualified: bool = False) -> Table:
    """``kubectl get``'s table of ``objects`` (of kind ``kind``) as they were at ``second``; ``qualified``: names as
    ``deployment.apps/web``, as kubectl prints them when several kinds were asked."""
    base, extra = COLUMNS.get(kind, _GENERIC)
    columns = list(base) + (list(extra) if wide else [])
    if qualified:
        columns[0] = ("NAME", lambda o, s: name_line(o))
    if namespace_column:
        columns.insert(0, ("NAMESPACE", lambda o, s: o.key.namespace))
    if show_labels:
        columns.append(("LABELS", lambda o, s: ",".join(f"{k}={v}" for k, v in (o.obj["metadata"].get("labels") or {}).items()) or NONE))
    rows = [[cell(o, second) for _, cell in columns] for o in objects]
    unknown = tuple(name for i, (name, _) in enumerate(columns) if any(row[i] == UNKNOWN for row in rows))
    return Table(layout([name for name, _ in columns], rows, headers=not no_headers), unknown)


def layout(names: list[str], rows: list[list[str]], *, headers: bool = True) -> str:
    """Columns three spaces apart, as kubectl's tab writer sets them."""
    shown = ([names] if headers else []) + rows
    if not shown:
        return ""
    widths = [max(len(row[i]) for row in shown) for i in range(len(shown[0]))]
    return "\n".join("   ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in shown)


def custom_columns(spec: str, objects: Sequence[PastObject], *, no_headers: bool) -> str:
    """``-o custom-columns=NAME:.metadata.name,IMAGE:.spec.template.spec.containers[*].image``."""
    pairs = []
    for part in spec.split(","):
        header, sep, path = part.partition(":")
        if not sep or not header or not path:
            raise UsageError(f"custom-columns {spec!r}: each column is HEADER:JSONPATH, like NAME:.metadata.name")
        pairs.append((header, path))
    rows = [[jsonpath.value(path, document(o)) for _, path in pairs] for o in objects]
    return layout([h for h, _ in pairs], rows, headers=not no_headers)


def document(found: PastObject) -> dict[str, Any]:
    """The object as ``-o json|yaml``, jsonpath and custom columns read it: with its reduced status in the API's shape
    (``statusform``) where the history knows it, without ``status`` where it does not."""
    return with_status(found.obj, found.status)


def with_status(obj: dict[str, Any], reduced: dict[str, Any] | None) -> dict[str, Any]:
    """``obj`` with the reduced status ``reduced`` in the API's shape; as it is where the status is not known (None)."""
    if reduced is None:
        return obj
    from kubectl_sktrace.past.statusform import status

    return {**obj, "status": status(obj, reduced)}


def as_list(objects: Sequence[PastObject]) -> dict[str, Any]:
    """What ``kubectl get -o json`` prints for several objects."""
    return {"apiVersion": "v1", "items": [document(o) for o in objects], "kind": "List", "metadata": {"resourceVersion": ""}}


def name_line(found: PastObject) -> str:
    """``-o name``: ``deployment.apps/web``."""
    return f"{found.kind.name_prefix}/{found.key.name}"
