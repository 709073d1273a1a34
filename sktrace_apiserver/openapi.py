"""The OpenAPI answers kubectl reads before a write (``kubectl apply/create/replace -f``).

kubectl (v1.30) validates a manifest before sending it: it reads ``/openapi/v2`` (protobuf) for client-side
schemas, and ``/openapi/v3`` to learn whether the server validates fields itself (a ``fieldValidation`` query
parameter on the kind's PATCH operation). Finding it, kubectl sends ``fieldValidation=Strict`` and leaves the
checking to the server. These documents publish no schemas (the v2 document has none, the v3 documents only the
PATCH operations), so that the request reaches the server, whose answer the user then reads (the emulator's strict
field validation, ``serve --at``'s 405).
"""

from __future__ import annotations

from typing import Any, Iterable, Protocol

from sktrace_apiserver.selectors import Kind

Obj = dict[str, Any]


class Served(Kind, Protocol):
    """What the documents say of a served kind: a kind, and its scope."""

    @property
    def namespaced(self) -> bool: ...


def gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def v3(kinds: Iterable[Served], gv_parts: list[str], *, git_version: str, revision: str) -> Obj | None:
    """``/openapi/v3`` (the group-versions, each with its ``serverRelativeURL`` at ``revision``) or one group-version's
    document: every kind's PATCH operation with its ``fieldValidation`` query parameter, and no schemas; None for a
    group-version not served."""
    served = list(kinds)
    if not gv_parts:
        gvs = sorted({gv_path(k.group, k.version) for k in served})
        return {"paths": {gv: {"serverRelativeURL": f"/openapi/v3/{gv}?hash={revision}"} for gv in gvs}}
    gv = "/".join(gv_parts)
    paths: Obj = {}
    for k in served:
        if gv_path(k.group, k.version) != gv:
            continue
        scope = "/namespaces/{namespace}" if k.namespaced else ""
        paths[f"/{gv}{scope}/{k.plural}/{{name}}"] = {
            "patch": {
                "operationId": f"patch{k.kind}",
                "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True},
                                "description": "Ignore, Warn or Strict: whether the server rejects unknown or duplicate fields"}],
                "responses": {"200": {"description": "OK"}},
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {"group": k.group, "version": k.version, "kind": k.kind},
            }
        }
    if not paths:
        return None
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": git_version}, "paths": paths, "components": {"schemas": {}}}


def _field(number: int, value: bytes) -> bytes:
    """One length-delimited protobuf field (wire type 2); lengths here stay under 128 bytes."""
    assert len(value) < 128
    return bytes([number << 3 | 2, len(value)]) + value


V2_CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def v2_protobuf(git_version: str) -> bytes:
    """``/openapi/v2`` as kubectl asks for it (``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``):
    gnostic's ``openapi_v2.Document`` with ``swagger`` (1) and ``info`` (2: title 1, version 2) and nothing else.
    No definitions: kubectl finds no schema to validate against on the client and relies on the server's
    ``fieldValidation`` (``v3``)."""
    info = _field(1, b"Kubernetes") + _field(2, git_version.encode())
    return _field(1, b"2.0") + _field(2, info)
