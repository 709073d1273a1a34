"""What one line of an audit log gives the cache. Pure: the line's bytes in, a record out.

An ``audit.k8s.io/v1`` Event (NOTES.md, "Audit log", measured on a v1.28 server) gives the cache a change only when:

- it is the request's last stage (``ResponseComplete``; ``RequestReceived`` lines repeat the request without its
  answer) and it succeeded (2xx): failed requests change nothing;
- it is a write (``create``, ``update``, ``patch``, ``delete``, ``deletecollection``): reads never change anything;
- of a kind the cache tracks (``Wanted``), a pod (lifecycles), or an owner kind between them (a ReplicaSet: chains).

What it then gives depends on its level: at ``RequestResponse`` the object after the write (``responseObject``) or,
for the ``scale`` subresource, the Scale's ``spec.replicas``; a delete answered with a ``Status`` removed the object
(its ``details.uid``), one answered with the object only marked it (finalizers, a graceful deletion), except a pod's:
a real server answers every pod's DELETE with the Pod, and the one that sets ``deletionGracePeriodSeconds`` to 0 (the
kubelet's final delete, or the only one of a pod not running) removed it. At ``Metadata``
or ``Request`` only the time and the object's name (a ``Request`` body is what the client sent, for a patch the patch
itself: never taken for the object). Secrets' bodies are never read, whatever the level.

Cheap first: a line whose verb or ``objectRef.resource`` (as the API server writes them, first in the line) says it
is a read or of a kind not wanted is skipped before it is parsed; any other line is parsed and checked, and a line
that is not an Event (truncated, not JSON, fields of the wrong type, longer than ``MAX_LINE_BYTES``) is *bad*: the
caller counts it and names its line number.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping

from kubectl_sktrace.model import GVK, POD, SECRET, ObjKey

LEVELS = ("Metadata", "Request", "RequestResponse")  # "None" is never written
WRITES = frozenset({"create", "update", "patch", "delete", "deletecollection"})
MAX_LINE_BYTES = 16 * 1024 * 1024  # the API server refuses bodies over 3 MB; a line of both bodies stays far below
# why a line gives nothing, counted by the caller
READ, FAILED, UNTRACKED, STAGE = "reads", "failed requests", "kinds not tracked", "other stages"
STATUS_ONLY = "status writes (no spec change)"  # a workload's: its status changes only (``Collected.statuses``)
BINDINGS = "pod bindings (a Status: the pod's status writes tell its start)"
OTHER_PODS = "status writes of pods not created in the log"

_VERB = re.compile(rb'"verb":"([a-z]*)"')
_RESOURCE = re.compile(rb'"objectRef":\{"resource":"([^"\\]*)"(?:,"namespace":"([^"\\]*)")?(?:,"name":"([^"\\]*)")?([^}]*)\}')
_STAGE = re.compile(rb'"stage":"([A-Za-z]*)"')


@dataclass(frozen=True)
class Wanted:
    """The kinds whose writes the cache takes, by the log's ``(apiGroup, resource)``."""

    kinds: Mapping[tuple[str, str], GVK]

    @property
    def resources(self) -> frozenset[bytes]:
        return frozenset(resource.encode() for _, resource in self.kinds)


@dataclass(frozen=True)
class Logged:
    """A write the log saw succeed: when (``at``, ``stageTimestamp``), what, and what the level shows of it."""

    at: float
    audit_id: str
    verb: str
    key: ObjKey
    uid: str  # '' when the line does not say
    level: str
    body: dict[str, Any] | None = None  # the object after the write (RequestResponse, never a Secret's)
    replicas: int | None = None  # a write of the scale subresource: its Scale's spec.replicas (RequestResponse)
    subresource: str = ""
    removed: bool | None = None  # a delete: True answered with a Status, False with the object; None: the level hides it
    line: int = 0


@dataclass(frozen=True)
class BadLine:
    line: int
    reason: str


def read_line(raw: bytes, *, wanted: Wanted, line: int) -> tuple[Logged, ...] | str | BadLine:
    """What line number ``line`` gives: the writes it logged (a deletecollection logs several), why it gives nothing
    (one of the counted reasons), or why it is bad."""
    if len(raw) > MAX_LINE_BYTES:
        return BadLine(line, f"longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB")
    skipped = _cheap_skip(raw, wanted)
    if skipped is not None:
        return skipped
    try:
        event = json.loads(raw)
    except RecursionError:
        return BadLine(line, "JSON nested too deeply")
    except ValueError:
        return BadLine(line, "not JSON (truncated?)")
    if not isinstance(event, dict):
        return BadLine(line, "not an audit Event (a JSON object)")
    try:
        return event_gives(event, wanted=wanted, line=line)
    except RecursionError:  # a body nested deeper than the recorder's rules walk
        return BadLine(line, "JSON nested too deeply")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return BadLine(line, f"not an audit Event: {_why(exc)}")


def _cheap_skip(raw: bytes, wanted: Wanted) -> str | None:
    """A reason to skip the line without parsing it, read from the fields the API server writes first (the verb, the
    stage, then ``objectRef``: resource, namespace, name, ..., subresource, in that order). A status write is parsed:
    what a person reads of the object changed there (``trace/statuses``)."""
    head = raw[:4096]
    verb = _VERB.search(head)
    if verb is not None and verb.group(1).decode() not in WRITES:
        return READ
    stage = _STAGE.search(head)
    if stage is not None and stage.group(1) != b"ResponseComplete":
        return STAGE
    ref = _RESOURCE.search(head)
    if ref is not None and ref.group(1) not in wanted.resources:
        return UNTRACKED
    return None


def event_gives(event: Mapping[str, Any], *, wanted: Wanted, line: int) -> tuple[Logged, ...] | str:
    """What a decoded Event gives (see the module docstring); KeyError, TypeError or ValueError when it is no Event."""
    verb = _text(event, "verb")
    if verb not in WRITES:
        return READ
    if event.get("stage", "ResponseComplete") != "ResponseComplete":
        return STAGE
    ref = event["objectRef"]
    if not isinstance(ref, dict):
        raise TypeError("objectRef is not an object")
    group, resource = _text(ref, "apiGroup", ""), _text(ref, "resource")
    gvk = wanted.kinds.get((group, resource))
    if gvk is None:
        return UNTRACKED
    code = (event.get("responseStatus") or {}).get("code")
    if not isinstance(code, int) or isinstance(code, bool):
        raise TypeError("responseStatus.code is not a number")
    if not 200 <= code < 300:
        return FAILED
    level = _text(event, "level")
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}")
    at = parse_time(_text(event, "stageTimestamp"))
    subresource = _text(ref, "subresource", "")
    if subresource == "binding":
        return BINDINGS  # answered with a Status, not the Pod (measured on v1.28)
    base = Logged(at=at, audit_id=_text(event, "auditID", ""), verb=verb, key=ObjKey(gvk, _text(ref, "namespace", ""), _text(ref, "name", "")),
                  uid=_text(ref, "uid", ""), level=level, subresource=subresource, line=line)
    response = event.get("responseObject") if level == "RequestResponse" and gvk != SECRET else None
    if verb == "deletecollection":
        return _collection(base, response, uri=event.get("requestURI"))
    if verb == "delete":
        return (_deletion(base, response),)
    return _written(base, response, gvk)


def _written(base: Logged, response: Any, gvk: GVK) -> tuple[Logged, ...]:
    if not isinstance(response, dict):
        return (base,)  # a time only: the level hides the object
    meta = response.get("metadata") or {}
    uid = meta.get("uid") if isinstance(meta, dict) else None
    uid = uid if isinstance(uid, str) else base.uid
    if base.subresource == "scale":
        replicas = (response.get("spec") or {}).get("replicas", 0)
        if not isinstance(replicas, int) or isinstance(replicas, bool):
            raise TypeError("the Scale's spec.replicas is not a number")
        return (_with(base, uid=uid, replicas=replicas),)
    if response.get("kind") not in (None, gvk.kind) or not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        raise TypeError(f"responseObject is not a {gvk.kind}")
    key = ObjKey(gvk, base.key.namespace or _text(meta, "namespace", ""), meta["name"])
    return (_with(base, key=key, uid=uid, body=response),)


def _deletion(base: Logged, response: Any) -> Logged:
    if not isinstance(response, dict):
        return base
    if response.get("kind") == "Status":
        uid = (response.get("details") or {}).get("uid")
        return _with(base, uid=uid if isinstance(uid, str) and uid else base.uid, removed=True)
    meta = response.get("metadata") or {}
    uid = meta.get("uid") if isinstance(meta, dict) else None
    return _with(base, uid=uid if isinstance(uid, str) and uid else base.uid, removed=base.key.gvk == POD and _pod_gone(response),
                 body=response if base.key.gvk != SECRET else None)


def _pod_gone(pod: Mapping[str, Any]) -> bool:
    """Whether a pod's DELETE, answered with the Pod (a real server never answers a pod's with a Status), removed it: its
    final delete sets ``deletionGracePeriodSeconds`` to 0 with no finalizer left; a graceful one (grace > 0) only marks it.
    A pod not bound, or finished, takes grace 0 at once."""
    meta = pod.get("metadata")
    if not isinstance(meta, dict) or "deletionTimestamp" not in meta:
        return False
    return meta.get("deletionGracePeriodSeconds") == 0 and not meta.get("finalizers")


def _collected_pod_gone(pod: Mapping[str, Any]) -> bool:
    """Whether a pod a deletecollection listed (as it was before) went at once: grace 0 for a pod not bound to a node
    or finished; a running one is only marked, and ends at its kubelet's final delete."""
    spec, status = pod.get("spec"), pod.get("status")
    bound = isinstance(spec, dict) and bool(spec.get("nodeName"))
    finished = isinstance(status, dict) and status.get("phase") in ("Succeeded", "Failed")
    return not bound or finished


def _collection(base: Logged, response: Any, *, uri: Any) -> tuple[Logged, ...]:
    """A deletecollection answers the list of what it deleted (RequestResponse); below that level nothing names them, but
    one without a selector (the namespace controller's) deleted every object of its kind in its namespace: one record
    with no name says so, for the deletions a restart found there."""
    items = response.get("items") if isinstance(response, dict) else None
    if not isinstance(items, list):
        every = isinstance(uri, str) and "labelSelector=" not in uri and "fieldSelector=" not in uri and bool(base.key.namespace)
        return (_with(base, key=ObjKey(base.key.gvk, base.key.namespace, "")),) if every and response is None else ()
    out = []
    for item in items:
        meta = item.get("metadata") if isinstance(item, dict) else None
        if isinstance(meta, dict) and isinstance(meta.get("name"), str):
            key = ObjKey(base.key.gvk, _text(meta, "namespace", base.key.namespace), meta["name"])
            gone = base.key.gvk != POD or _collected_pod_gone(item)
            out.append(_with(base, verb="delete", key=key, uid=_text(meta, "uid", ""), removed=gone))
    return tuple(out)


def _with(base: Logged, **changes: Any) -> Logged:
    return dataclasses.replace(base, **changes)


def _text(obj: Mapping[str, Any], key: str, default: str | None = None) -> str:
    value = obj.get(key, default) if default is not None else obj[key]
    if not isinstance(value, str):
        raise TypeError(f"{key} is not a string")
    return value


def parse_time(text: str) -> float:
    """An audit time (RFC 3339, microseconds, ``Z``) as Unix seconds; ValueError when it is none."""
    when = datetime.fromisoformat(text)
    if when.tzinfo is None:
        raise ValueError(f"the time {text!r} has no zone")
    return when.timestamp()


def _why(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"no field {exc.args[0]}"
    return str(exc)
