"""What the server says a client may do: the answer to ``SelfSubjectAccessReview`` and ``SelfSubjectRulesReview``
(``kubectl auth can-i``, and clients that ask before they list: k9s asks for each view it opens, and shows none it
is refused). Reading is allowed, every write refused with the reason a write's 405 gives. Asking is a POST that
writes nothing: the review comes back with its answer, as a real API server's does (201). Pure."""

from __future__ import annotations

from typing import Any

from sktrace_apiserver.status import ApiError

GROUP_VERSION = "authorization.k8s.io/v1"
READS = frozenset({"get", "list", "watch"})
REVIEWS = {"selfsubjectaccessreviews": "SelfSubjectAccessReview", "selfsubjectrulesreviews": "SelfSubjectRulesReview"}


def review_path(parts: list[str]) -> bool:
    """Whether a path (its parts) is where a review is posted: ``/apis/authorization.k8s.io/v1/<REVIEWS>``."""
    return len(parts) == 4 and "/".join(parts[:3]) == f"apis/{GROUP_VERSION}" and parts[3] in REVIEWS


def review(resource: str, body: Any, *, refusal: str) -> dict[str, Any]:
    """The review posted to ``resource`` (one of ``REVIEWS``), answered; an ApiError 400 for a body that is not one."""
    kind = REVIEWS[resource]
    if not isinstance(body, dict) or body.get("kind", kind) != kind or not isinstance(body.get("spec"), dict):
        raise ApiError(400, "BadRequest", f"the body is not a {GROUP_VERSION} {kind}")
    spec = body["spec"]
    if kind == "SelfSubjectRulesReview":
        status: dict[str, Any] = {"resourceRules": [{"verbs": sorted(READS), "apiGroups": ["*"], "resources": ["*"]}],
                                  "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["*"]}], "incomplete": False}
    else:
        attributes = spec.get("resourceAttributes") or spec.get("nonResourceAttributes")
        verb = attributes.get("verb") if isinstance(attributes, dict) else None
        if not isinstance(verb, str):
            raise ApiError(400, "BadRequest", "spec.resourceAttributes.verb (or spec.nonResourceAttributes.verb) is required")
        allowed = verb in READS
        status = {"allowed": allowed} if allowed else {"allowed": False, "denied": True, "reason": refusal}
    return {"kind": kind, "apiVersion": GROUP_VERSION, "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}
