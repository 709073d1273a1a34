"""The forms managed clusters hand audit events out in, unwrapped to the API server's own line. Pure.

Supported, each from its provider's documentation (README, "Backfill from the audit log"):

- **the log backend's own line** (self-managed clusters, ``--audit-log-path``, ``--audit-log-format json``): an
  ``audit.k8s.io/v1`` Event, as it is (the fast path: nothing is parsed here);
- **EKS**, control plane logs in CloudWatch Logs (log type ``audit``): a CloudWatch Logs subscription's document
  (``messageType: DATA_MESSAGE``, ``logEvents[].message``, as a subscription filter delivers it to Firehose, S3 or
  Lambda, gzip included) or ``aws logs filter-log-events`` output (``events[].message``): each message is an Event;
- **AKS**, diagnostic settings of category ``kube-audit`` or ``kube-audit-admin`` sent to a storage account or an event
  hub: a record whose ``properties.log`` is the Event as a string (``{"records": [...]}`` of an event hub too); and the
  resource-specific Log Analytics tables ``AKSAudit`` and ``AKSAuditAdmin`` exported as JSON rows (``Verb``,
  ``ObjectRef``, ``ResponseStatus``, ``ResponseObject``, ``StageReceivedTime``, ...), mapped back to the Event's fields;
- **GKE**, Kubernetes audit logs in Cloud Logging (``gcloud logging read --format json``, a sink to Cloud Storage): a
  LogEntry whose ``protoPayload`` is an AuditLog with ``methodName`` ``io.k8s.<group>.<version>.<resource>[.<sub>].<verb>``,
  ``resourceName`` ``<group>/<version>/namespaces/<ns>/<resource>/<name>[/<sub>]``, ``request``, ``response`` and
  ``status``: mapped to an Event (``RequestResponse`` when the response is there, else ``Metadata``; ``core`` is the core
  group).

Anything else is passed on as it is, and read (or counted bad) as an Event. A wrapper that cannot be read is passed on
whole, so that it is counted as one bad line with its line number; one whose columns cannot be read (JSON text nested
too deeply) raises ``UnreadableLine``, counted the same way.
"""

from __future__ import annotations

import json
from typing import Any

_NATIVE = b'{"kind":"Event"'
_MARKERS = (b'"logEvents"', b'"events"', b'"properties"', b'"records"', b'"protoPayload"', b'"AuditId"')
_DUMPS = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_AKS_COLUMNS = {"Level": "level", "AuditId": "auditID", "Stage": "stage", "RequestUri": "requestURI", "Verb": "verb", "User": "user",
                "SourceIps": "sourceIPs", "UserAgent": "userAgent", "ObjectRef": "objectRef", "ResponseStatus": "responseStatus",
                "RequestObject": "requestObject", "ResponseObject": "responseObject", "RequestReceivedTime": "requestReceivedTimestamp",
                "StageReceivedTime": "stageTimestamp", "Annotations": "annotations"}


def unwrap(raw: bytes) -> tuple[bytes, ...]:
    """The Event lines one line of a log holds."""
    if raw.startswith(_NATIVE) or not any(marker in raw for marker in _MARKERS):
        return (raw,)
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        return (raw,)
    if not isinstance(doc, dict) or doc.get("kind") == "Event":
        return (raw,)
    try:
        events = _events(doc)
        return (raw,) if events is None else tuple(e if isinstance(e, bytes) else _DUMPS(e).encode() for e in events)
    except RecursionError:  # a column holding JSON text nested deeper than Python's parser goes
        raise UnreadableLine("JSON nested too deeply") from None


class UnreadableLine(ValueError):
    """A line of a known form whose content cannot be read: one bad line, with this reason."""


def _events(doc: dict[str, Any]) -> list[Any] | None:
    for key in ("logEvents", "events"):  # CloudWatch Logs: a subscription's document, filter-log-events output
        if isinstance(doc.get(key), list):
            return [_text(str(e["message"])) for e in doc[key] if isinstance(e, dict) and isinstance(e.get("message"), str)]
    if isinstance(doc.get("records"), list):  # an event hub's batch of diagnostic records
        return [e for r in doc["records"] if isinstance(r, dict) for e in (_events(r) or ())]
    properties = doc.get("properties")
    if isinstance(properties, dict) and isinstance(properties.get("log"), str):  # AKS diagnostic settings
        return [_text(properties["log"])]
    if "AuditId" in doc and "Verb" in doc:  # AKS, Log Analytics' AKSAudit / AKSAuditAdmin rows
        return [{event: _dynamic(doc[column]) for column, event in _AKS_COLUMNS.items() if column in doc}]
    payload = doc.get("protoPayload")
    if isinstance(payload, dict) and str(payload.get("methodName", "")).startswith("io.k8s."):
        event = _gke(doc, payload)
        return None if event is None else [event]
    return None


def _text(message: str) -> bytes:
    return message.rstrip("\n").encode()


def _dynamic(value: Any) -> Any:
    """A Log Analytics ``dynamic`` column exported as JSON text, read back; anything else as it is."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _gke(entry: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any] | None:
    """A Cloud Logging entry of a Kubernetes audit log as the API server's Event."""
    method = str(payload["methodName"]).split(".")
    parts = str(payload.get("resourceName", "")).split("/")
    if len(method) < 5 or len(parts) < 3:
        return None
    verb = method[-1]
    group, version = ("" if parts[0] == "core" else parts[0]), parts[1]
    rest = parts[2:]
    namespace = ""
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) > 2:
        namespace, rest = rest[1], rest[2:]
    ref: dict[str, Any] = {"resource": rest[0], "namespace": namespace, "name": rest[1] if len(rest) > 1 else "",
                           "apiGroup": group, "apiVersion": version}
    if len(rest) > 2:
        ref["subresource"] = rest[2]
    status = payload.get("status") or {}
    code = status.get("code", 0) if isinstance(status, dict) else 0
    event: dict[str, Any] = {
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse" if "response" in payload else "Metadata",
        "auditID": entry.get("insertId", ""), "stage": "ResponseComplete", "verb": verb, "objectRef": ref,
        "responseStatus": {"code": 200 if not code else 400 + int(code)},
        "requestReceivedTimestamp": entry.get("timestamp", ""), "stageTimestamp": entry.get("timestamp", ""),
    }
    response = payload.get("response")
    if isinstance(response, dict):
        answer = {k: v for k, v in response.items() if k != "@type"}
        if str(response.get("@type", "")).endswith(".Status"):
            answer.setdefault("kind", "Status")
        event["responseObject"] = answer
    return event
