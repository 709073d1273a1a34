"""``transform``'s allow and deny rules (``trace/selection/rules``) over a trace already read: which objects stay. Pure but
for the spools it is handed.

As in ``export``, an object is decided on its last version in the trace (its last applied version; its deletion
when it is only deleted), so it is in or out of the whole trace: every version, its deletion, its ``index`` entry
and the ``pod_lifecycles`` of the pods it owns. An object of the index that no event holds (an export's index
names objects deleted before its window) is decided on its kind, namespace and name, without labels. Events left
without objects are dropped, as a program's are; an event that came without any is kept. ``export``'s other rules (cluster-scoped objects, what a
DaemonSet or an exported object owns) are about the cluster's record and are not applied again here.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from kubectl_sktrace.model import GVK
from kubectl_sktrace.trace.files.format import EventSpool, Trace
from kubectl_sktrace.trace.selection.rules import ALLOW, KindNames, RuleSet, resolve_kinds
from kubectl_sktrace.trace.sanitize import object_key

_Key = tuple[str, str, str]  # the index's spelling: gvk, namespace, name


def _key_and_labels(obj: dict[str, Any]) -> tuple[_Key, GVK, Mapping[str, str] | None] | None:
    key = object_key(obj)
    if key is None:
        return None
    labels = (obj.get("metadata") or {}).get("labels")
    return (str(key.gvk), key.namespace, key.name), key.gvk, labels if isinstance(labels, dict) else None


class RuleFilter:
    """The rules applied to one trace: ``learn`` its events, then ``event`` each again, then ``rest``;
    ``summary`` counts the objects each rule decided."""

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self._last: dict[_Key, tuple[GVK, Mapping[str, str] | None, bool]] = {}  # key -> gvk, labels, applied
        self._kept: dict[_Key, bool] = {}
        self.counts = [0] * (len(rules.rules) + 1)

    def learn(self, events: Iterable[dict[str, Any]]) -> None:
        """Read every event once, to know each object's last version."""
        for event in events:
            for field, applied in (("applied_objs", True), ("deleted_objs", False)):
                for obj in event.get(field) or ():
                    found = _key_and_labels(obj)
                    if found is not None and (applied or not self._last.get(found[0], (None, None, False))[2]):
                        self._last[found[0]] = (found[1], found[2], applied)

    def _allowed(self, key: _Key, gvk: GVK | None = None, labels: Mapping[str, str] | None = None) -> bool:
        if key not in self._kept:
            known = self._last.get(key)
            if known is not None:
                gvk, labels = known[0], known[1]
            decided = self.rules.decide(gvk=gvk or GVK.parse(key[0]), namespace=key[1], name=key[2], labels=labels)
            self.counts[decided] += 1
            self._kept[key] = self.rules.action(decided) == ALLOW
        return self._kept[key]

    def event(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """The event without the objects the rules leave out; None when none is left (an event that came empty, the
        state at an export's window start say, is kept: it is where the trace starts)."""
        kept = {}
        for field in ("applied_objs", "deleted_objs"):
            objs = event.get(field) or []
            kept[field] = [obj for obj in objs if self._keeps(obj)]
        if not kept["applied_objs"] and not kept["deleted_objs"] and (event.get("applied_objs") or event.get("deleted_objs")):
            return None
        return {**event, **kept}

    def _keeps(self, obj: dict[str, Any]) -> bool:
        found = _key_and_labels(obj)
        return found is None or self._allowed(found[0])  # an object without a name is the program's business, not the rules'

    def rest(self, trace: Trace) -> Trace:
        """``index`` and ``pod_lifecycles`` of the objects kept."""
        index: dict[str, dict[str, int]] = {}
        for gvk, objects in trace.index.items():
            for ns_name, spec_hash in objects.items():
                if self._allowed((gvk, *_split(ns_name))):
                    index.setdefault(gvk, {})[ns_name] = spec_hash
        lifecycles = {owner: table for owner, table in trace.pod_lifecycles.items()
                      if self._allowed((owner[0], *_split(owner[1])))}
        return Trace(version=trace.version, config=trace.config, events=[], index=index, pod_lifecycles=lifecycles)

    def summary(self) -> list[dict[str, Any]]:
        return self.rules.summary(self.counts)

    def kind_warnings(self) -> list[str]:
        """Once the trace is learnt: a warning for each kind a rule names that no object of the trace has, with the kind
        meant when one is close (a trace holds no discovery document: kinds are matched by name, any case, or GVK)."""
        kinds = sorted({gvk for gvk, _, _ in self._last.values()}, key=str)
        return resolve_kinds(self.rules.rules, catalog=[KindNames(gvk, frozenset({gvk.kind.lower()})) for gvk in kinds], recorded=kinds)[1]


def _split(ns_name: str) -> tuple[str, str]:
    namespace, _, name = ns_name.rpartition("/")
    return namespace, name


def filter_spool(source: EventSpool, target: EventSpool, rule_filter: RuleFilter,
                 then: Callable[[dict[str, Any]], dict[str, Any]] = lambda event: event) -> None:
    """The events of ``source`` through ``rule_filter``, then ``then`` (the anonymizer, which must see only what is
    kept, and after the rules saw the names), into ``target``: two reads of ``source``'s file."""
    rule_filter.learn(source.events())
    for event in source.events():
        out = rule_filter.event(event)
        if out is not None:
            target.add(then(out))
