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
from kubectl_sktrace.trace.selection.rules import ALLOW, DENY, RuleSet
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
    verdicts: list[tuple[ObjKey, bool, int | str]] | None = None  # ``--dry-run=objects``: each object, exported or not, and why

    def verdict(self, key: ObjKey, *, exported: bool, why: int | str) -> None:
        """What decided an object (``why``: the index of the rule, or the reason), when the verdicts are kept."""
        if self.verdicts is not None:
            self.verdicts.append((key, exported, why))

    def decisions_report(self, *, start_ts: int, end_ts: int) -> Decisions:
        left = self.left_out
        return Decisions(
            start_ts=start_ts, end_ts=end_ts, recorded=left.recorded, exported=len(self.exported),
            rules=tuple(self.rules.summary(self.decisions)),
            objects=None if self.verdicts is None else tuple(
                {"kind": str(key.gvk), "namespace": key.namespace, "name": key.name, "exported": exported,
                 "rule": None if isinstance(why, str) else why + 1, "decidedBy": why if isinstance(why, str) else _rule_named(self.rules, why)}
                for key, exported, why in sorted(self.verdicts, key=lambda v: _key_order(v[0]))),
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
    objects: tuple[dict[str, Any], ...] | None = None  # ``--dry-run=objects``: each object and what decided it

    def as_mapping(self) -> dict[str, Any]:
        listed = {} if self.objects is None else {"objects": [dict(row) for row in self.objects]}
        return {"start": format_time(self.start_ts), "end": format_time(self.end_ts), "objectsRecorded": self.recorded,
                "objectsExported": self.exported, "rules": [dict(row) for row in self.rules], "leftOut": dict(self.left_out), **listed}


def plan_objects(cache: Cache, *, start_ts: int, end_ts: int, known: float, filters: ExportFilters, program: Program | None,
          keep_status: bool, list_objects: bool = False) -> Plan:
    """Decide which objects are exported, and the index hash of each, from what was recorded before ``known``;
    the rules judge each object as ``program`` (--transform) leaves it; ``list_objects`` keeps each one's verdict."""
    rules = filters.rule_set()
    plan = Plan(rules=rules, decisions=[0] * (len(rules.rules) + 1), verdicts=[] if list_objects else None)
    view = None if program is None else ProgramView(program, start_ts=start_ts, keep_status=keep_status)
    candidates: dict[ObjKey, tuple[int, tuple[ObjKey, ...], int]] = {}
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
            plan.verdict(event.key, exported=False, why="deleted by --transform")
            continue
        namespace = event.key.namespace if body is None else namespace_of(body)
        if not namespace and not filters.include_cluster_scoped:
            left.cluster_scoped += 1
            plan.verdict(event.key, exported=False, why="cluster-scoped (--include-cluster-scoped keeps it)")
            continue
        decided, daemonset = _decide(event, rules, namespace=namespace, body=body)
        plan.decisions[decided] += 1
        if rules.action(decided) == DENY:
            _count_denied(left, rules, decided, namespace=namespace)
            plan.verdict(event.key, exported=False, why=decided)
        elif daemonset:
            left.daemonset += 1
            plan.verdict(event.key, exported=False, why="owned by a DaemonSet")
        else:
            candidates[event.key] = (event.spec_hash or 0, event.owner_chain, decided)
    for key in sorted(candidates, key=_key_order):
        spec_hash, chain, decided = candidates[key]
        owner = next((owner for owner in chain if owner in candidates), None)
        if owner is None:
            plan.exported[key] = spec_hash
            plan.left_out.kept_namespaces.add(key.namespace)
            plan.verdict(key, exported=True, why=decided)
        else:
            plan.left_out.owned += 1
            plan.verdict(key, exported=False, why=f"owned by the exported {owner.gvk.kind} {owner.ns_name}")
    return plan


def _rule_named(rules: RuleSet, decided: int) -> str:
    """The rule that decided, as the dry-run's table numbers it: ``rule N (FROM)``, the default last."""
    origin = rules.rules[decided].origin if decided < len(rules.rules) else rules.default_origin
    return f"rule {decided + 1} ({origin})"


def _key_order(key: ObjKey) -> tuple[str, str, str, str, str]:
    """ObjKey's own order as plain strings: sorting every object of a long history by the dataclasses' ``<`` costs ~5x."""
    gvk = key.gvk
    return gvk.group, gvk.version, gvk.kind, key.namespace, key.name
