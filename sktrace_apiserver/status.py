"""The API server's errors as it sends them: a ``meta/v1 Status`` with its code and reason, word for word."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


class ApiError(Exception):
    """A request the server refuses; it answers with a ``Status`` of this code and reason."""

    def __init__(self, code: int, reason: str, message: str, *, retry_after: int | None = None,
                 details: Obj | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.retry_after = retry_after
        self.details = details

    def status(self) -> Obj:
        return status_body(code=self.code, reason=self.reason, message=self.message, details=self.details)


def not_found() -> ApiError:
    """The API server's 404 for a path it does not serve (a kind without its CRD, say), word for word."""
    return ApiError(404, "NotFound", "the server could not find the requested resource", details={})


def object_not_found(*, group: str, plural: str, name: str) -> ApiError:
    """The API server's 404 for an object that does not exist: ``deployments.apps "web" not found``."""
    qualified = f"{plural}.{group}" if group else plural
    return ApiError(404, "NotFound", f'{qualified} "{name}" not found', details={"name": name, "group": group, "kind": plural})


def status_body(*, code: int, reason: str, message: str, details: Obj | None = None) -> Obj:
    """A ``meta/v1 Status`` as a real server sends for errors (and inside ERROR watch events)."""
    body: Obj = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body
