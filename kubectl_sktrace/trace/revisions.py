"""What a person calls a change of an object besides its spec, and a revision's object made whole. Pure.

SimKube's tracer records a new version of an object only when its spec hash changes (docs/spec.md §4). The cache
also records the changes a person reads (docs/spec.md "What a change is"): a *metadata* change (labels,
annotations, owner references) and, of kinds without a spec, a *data* change (``data`` and ``binaryData``: a
ConfigMap's, a Secret's). Each is a fingerprint here, compared by the recorder (``record/changes.decide_applied``)
with the one it last recorded for the object.

Never a change: status, ``managedFields``, ``resourceVersion``, ``generation``, finalizers, timestamps, and the
annotations of ``IGNORED_ANNOTATIONS``: the two the sanitizer drops (they restate the object or follow its spec),
those that controllers rewrite on their own clock (leader-election records renewed every 2 s, the endpoints
controller's trigger time, an HPA v1's status in annotations, cluster-autoscaler's heartbeat), and those a
controller rewrites together with a spec change it makes (so they never make a change of their own). The rule
matches whole keys, so a person's own annotations under those prefixes still count.

A revision (a version whose spec is the previous version's) stores only what it may change (``revision_body``): its
labels, annotations and owner references, and of a spec-less kind its ``data`` and ``binaryData`` in full (a Secret's values blanked by the
sanitizer as always: only that they changed is recorded, through a fingerprint of values that are never stored).
The rest is its *base*'s, the last version before it that changed the spec: ``with_spec`` makes it whole.

The fingerprints are SipHash-1-3 of the canonical JSON of what they cover (sorted keys, compact): ours, not
SimKube's, so the C encoder does the walk that the spec hash's byte stream must do in Python; a value JSON cannot
encode falls back to that walk.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import json

from kubectl_sktrace.trace.hashing import siphash13, spec_hash

SPEC, METADATA, DATA = "spec", "metadata", "data"
"""The kinds of change: of the spec (SimKube's, a trace event by default), of labels/annotations/owner references,
of a spec-less kind's data."""

CHURN_ANNOTATIONS = (
    # client-go's leader election on Endpoints or ConfigMaps: renewTime rewritten every retry period (2 s)
    "control-plane.alpha.kubernetes.io/leader",
    # the endpoints controller's timestamp of the last pod or service change behind an Endpoints
    "endpoints.kubernetes.io/last-change-trigger-time",
    # an autoscaling/v1 HorizontalPodAutoscaler's v2 status, carried in annotations and rewritten every sync (15 s)
    "autoscaling.alpha.kubernetes.io/conditions",
    "autoscaling.alpha.kubernetes.io/current-metrics",
    # cluster-autoscaler's status ConfigMap heartbeat
    "cluster-autoscaler.kubernetes.io/last-updated",
)
FOLLOW_SPEC_ANNOTATIONS = (
    # written by the Deployment and DaemonSet controllers when they change a ReplicaSet's or a template's spec
    "deployment.kubernetes.io/revision",
    "deployment.kubernetes.io/revision-history",
    "deployment.kubernetes.io/desired-replicas",
    "deployment.kubernetes.io/max-replicas",
    "deprecated.daemonset.template.generation",
    # kubectl's copy of the applied object: what it restates (labels, spec) is compared itself
    "kubectl.kubernetes.io/last-applied-configuration",
)
IGNORED_ANNOTATIONS = frozenset(CHURN_ANNOTATIONS + FOLLOW_SPEC_ANNOTATIONS)
DATA_FIELDS = ("data", "binaryData")
METADATA_FIELDS = ("labels", "annotations", "ownerReferences")
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False, check_circular=False).encode


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def metadata_hash(obj: Mapping[str, Any]) -> int:
    """The fingerprint of what a metadata change changes: labels, annotations but ``IGNORED_ANNOTATIONS``, and
    owner references (as listed). Any other field of ``metadata`` and the rest of the object leave it alone."""
    meta = _map(obj.get("metadata"))
    annotations = _map(meta.get("annotations"))
    if not IGNORED_ANNOTATIONS.isdisjoint(annotations):
        annotations = {k: v for k, v in annotations.items() if k not in IGNORED_ANNOTATIONS}
    refs = meta.get("ownerReferences")
    return _fingerprint([_map(meta.get("labels")), annotations, refs if isinstance(refs, list) else []])


def _fingerprint(value: Any) -> int:
    try:
        return siphash13(_CANONICAL(value).encode())
    except (TypeError, ValueError):  # a key that is not a string, NaN: what JSON cannot say, the spec hash's walk can
        try:
            return spec_hash(value)
        except TypeError:  # a trace's msgpack binary value, which no API object holds: its text stands for it
            return siphash13(repr(value).encode())


def data_hash(obj: Mapping[str, Any]) -> int | None:
    """The fingerprint of a spec-less object's ``data`` and ``binaryData`` (None: the object has a spec, whose hash
    says it all). Taken before sanitizing: a Secret's values change it, though they are never stored."""
    if "spec" in obj:
        return None
    return _fingerprint([obj.get(field) for field in DATA_FIELDS])


def revision_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """What a revision stores of a sanitized object: the fields of its ``metadata`` that a change changes, and of a
    spec-less kind its data fields; None where it has none, so that what was removed is removed when made whole."""
    meta = _map(body.get("metadata"))
    out: dict[str, Any] = {"metadata": {field: meta.get(field) for field in METADATA_FIELDS}}
    if "spec" not in body:
        out.update((field, body.get(field)) for field in DATA_FIELDS)
    return out


def with_spec(revision: Mapping[str, Any], base: Mapping[str, Any] | None) -> dict[str, Any]:
    """A revision's object made whole: its base (the object's last version that changed the spec) without its status,
    in its order, with the revision's labels, annotations, owner references and data in their place (None: without
    the revision's base, what it stored)."""
    out = {k: v for k, v in (base or {}).items() if k != "status"}
    meta = {**_map(out.get("metadata")), **_map(revision.get("metadata"))}
    out.update(revision, metadata={k: v for k, v in meta.items() if v is not None})
    return {k: v for k, v in out.items() if v is not None}


def describe(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> str:
    """What changed between two versions of an object, for people: ``labels changed: release=2026-11``,
    ``annotations changed: note=x, -old``, ``owner references changed``, ``data changed: key``; parts joined by
    ``; ``, at most three keys named per part. '' when none of these differ (a spec change)."""
    old_meta, new_meta = _map((before or {}).get("metadata")), _map(after.get("metadata"))
    parts = []
    for field in ("labels", "annotations"):
        if old_meta.get(field) == new_meta.get(field):
            continue
        changed = _changed_keys(_map(old_meta.get(field)), _map(new_meta.get(field)), values=True,
                                ignored=IGNORED_ANNOTATIONS if field == "annotations" else frozenset())
        if changed:
            parts.append(f"{field} changed: {changed}")
    if (old_meta.get("ownerReferences") or []) != (new_meta.get("ownerReferences") or []):
        parts.append("owner references changed")
    if all((before or {}).get(field) == after.get(field) for field in DATA_FIELDS):
        return "; ".join(parts)
    old_data = {k: v for field in DATA_FIELDS for k, v in _map((before or {}).get(field)).items()}
    new_data = {k: v for field in DATA_FIELDS for k, v in _map(after.get(field)).items()}
    changed = _changed_keys(old_data, new_data, values=False, ignored=frozenset())
    if changed:
        parts.append(f"data changed: {changed}")
    return "; ".join(parts)


def _changed_keys(old: Mapping[str, Any], new: Mapping[str, Any], *, values: bool, ignored: frozenset[str]) -> str:
    """``key=value`` (``key`` without ``values``) of what was set, ``-key`` of what was removed; three, then ``+N``."""
    items = [f"{k}={new[k]}" if values else k for k in sorted(new) if k not in ignored and old.get(k) != new[k]]
    items += [f"-{k}" for k in sorted(old) if k not in ignored and k not in new]
    if len(items) > 3:
        return ", ".join(items[:3]) + f" +{len(items) - 3} more"
    return ", ".join(items)
