"""Which objects a window exports (docs/spec.md §7 step 3): the rules decide each object on its last applied
version before the window's end, as ``--transform`` leaves it; then what a DaemonSet owns is left out, and what
an exported object owns (its owner recreates it in the simulator). What each rule decided is counted, for the
summary and ``--dry-run``; what was left out and why, for the advice (``export/advice``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubectl_sktrace.export.advice import LeftOut
from kubectl_sktrace.export.options import LABELS_ORIGIN, NAMESPACE_ORIGINS, ExportFilters
from kubectl_sktrace.export.transforms import ProgramView, namespace_of
from kubectl_sktrace.model import ObjKey
from kubectl_sktrace.store import Cache, history
from kubectl_sktrace.timeparse import format_time
from kubectl_sktrace.trace.rules import ALLOW, DENY, RuleSet
from kubectl_sktrace.trace.sanitize import is_daemonset_owned
from kubectl_sktrace.trace.skel import Program


@dataclass
class Plan:
    """What planning a window decided: the objects exported (their index hash), what was left out and why, and the
    objects each rule decided."""

    exported: dict[ObjKey, int] = field(default_factory=dict)
    left_out: LeftOut = field(default_factory=LeftOut)
    keys: dict[Any, Any] = field(default_factory=dict)  # shared by every query: each object's one ObjKey (``history._event``)
    deleted_by_program: int = 0  # objects whose last version --transform deletes (``export/transforms``)
    rules: RuleSet = field(default_factory=RuleSet)
    decisions: list[int] = field(default_factory=list)  # objects per rule that decided them, the default last

    def decisions_report(self, *, start_ts: int, end_ts: int) -> Decisions:
        left = self.left_out
        return Decisions(
            start_ts=start_ts, end_ts=end_ts, recorded=left.recorded, exported=len(self.exported),
            rules=tuple(self.rules.summary(self.decisions)),
            left_out={"clusterScoped": left.cluster_scoped, "deniedByRules": sum(left.namespaces.values()) + left.labels + left.rules,
                      "ownedByDaemonSet": left.daemonset, "ownedByExported": left.owned, "deletedByTransform": self.deleted_by_program},
        )


def _decide(event: history.StoredEvent, rules: RuleSet, *, namespace: str, body: dict[str, Any] | None) -> tuple[int, bool]:
    """The rule that decides an object (``RuleSet.decide``; ``len(rules)``: the default) and, when it is allowed,
    whether a DaemonSet owns it; ``body`` (with its ``namespace``) is the object as --transform leaves it, None to
    read the stored one."""
    key = event.key
    if body is None:
        if not rules.needs_labels:  # the body needs no decoding (the index holds every object ever)
            decided = rules.decide(gvk=key.gvk, namespace=namespace, name=key.name, labels=None)
            if rules.action(decided) == DENY:
                return decided, False
            if event.daemonset is not None:
                return decided, bool(event.daemonset)  # as the recorder found it (schema 0006)
            if event.body_blob is not None and b"DaemonSet" not in event.packed():
                return decided, False  # no owner reference can name that kind
        body = event.without_status() or {}
    metadata = body.get("metadata") or {}
    decided = rules.decide(gvk=key.gvk, namespace=namespace, name=metadata.get("name") or key.name, labels=metadata.get("labels"))
    return decided, rules.action(decided) == ALLOW and is_daemonset_owned(body)


def _count_denied(left: LeftOut, rules: RuleSet, decided: int, *, namespace: str) -> None:
    """What the advice says of a denied object: the namespace flags', the label flags' or the user's rules' doing."""
    origin = rules.rules[decided].origin if decided < len(rules.rules) else rules.default_origin
    if origin in NAMESPACE_ORIGINS:
        left.namespaces[namespace] += 1
    elif origin == LABELS_ORIGIN:
        left.labels += 1
    else:
        left.rules += 1


@dataclass(frozen=True)
class Decisions:
    """What the rules and the owners decided of a window's objects (``--dry-run``, the summary's JSON)."""

    start_ts: int
    end_ts: int
    recorded: int
    exported: int
    rules: tuple[dict[str, Any], ...]  # ``RuleSet.summary``: each rule, the default last, with the objects it decided
    left_out: dict[str, int]

    def as_mapping(self) -> dict[str, Any]:
        return {"start": format_time(self.start_ts), "end": format_time(self.end_ts), "objectsRecorded": self.recorded,
                "objectsExported": self.exported, "rules": [dict(row) for row in self.rules], "leftOut": dict(self.left_out)}


def plan_objects(cache: Cache, *, start_ts: int, end_ts: int, known: float, filters: ExportFilters, program: Program | None,
          keep_status: bool) -> Plan:
    """Decide which objects are exported, and the index hash of each, from what was recorded before ``known``;
    the rules judge each object as ``program`` (--transform) leaves it."""
    rules = filters.rule_set()
    plan = Plan(rules=rules, decisions=[0] * (len(rules.rules) + 1))
    view = None if program is None else ProgramView(program, start_ts=start_ts, keep_status=keep_status)
    candidates: dict[ObjKey, tuple[int, tuple[ObjKey, ...]]] = {}
    untracked = history.untracked_before(cache, start_ts=start_ts, end_ts=end_ts, known=known)
    for event in history.last_applied_before(cache, ts=end_ts, known=known, keys=plan.keys,
                                             bodies=rules.needs_labels or view is not None, made_whole=view is not None):
        if event.key in untracked:
            continue
        left = plan.left_out
        left.recorded += 1
        body = None if view is None else view.body(event)
        if view is not None and body is None:
            plan.deleted_by_program += 1
            continue
        namespace = event.key.namespace if body is None else namespace_of(body)
        if not namespace and not filters.include_cluster_scoped:
            left.cluster_scoped += 1
            continue
        decided, daemonset = _decide(event, rules, namespace=namespace, body=body)
        plan.decisions[decided] += 1
        if rules.action(decided) == DENY:
            _count_denied(left, rules, decided, namespace=namespace)
        elif daemonset:
            left.daemonset += 1
        else:
            candidates[event.key] = (event.spec_hash or 0, event.owner_chain)
    for key in sorted(candidates, key=_key_order):
        spec_hash, chain = candidates[key]
        if not any(owner in candidates for owner in chain):
            plan.exported[key] = spec_hash
            plan.left_out.kept_namespaces.add(key.namespace)
        else:
            plan.left_out.owned += 1
    return plan


def _key_order(key: ObjKey) -> tuple[str, str, str, str, str]:
    """ObjKey's own order as plain strings: sorting every object of a long history by the dataclasses' ``<`` costs ~5x."""
    gvk = key.gvk
    return gvk.group, gvk.version, gvk.kind, key.namespace, key.name
