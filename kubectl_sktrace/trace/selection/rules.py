"""Which objects a trace keeps: ordered allow and deny rules, the first that matches decides. Pure functions.

A rule matches an object when every field it gives matches; it gives at least one (``--allow ''``, and ``allow:`` with
nothing in a file, are refused alike: what no rule matches gets the default):

    namespace:GLOB[,GLOB...]    the object's namespace matches one of the globs (``*``, ``?``, ``[a-z]``)
    name:GLOB[,GLOB...]         its name matches one of the globs
    kind:KIND[,KIND...]         its kind: ``Deployment`` (any group and version, case-insensitive) or ``apps/v1.Deployment``;
                                as kubectl names it (``deploy``, ``deployments``, ``Deployments.apps``), once
                                ``resolve_kinds`` has read the discovery documents of the kinds recorded
    labels:SELECTOR             its labels match a kubectl label selector (``trace/selection/selectors``), e.g. ``app=web,tier!=canary``

On the command line a rule is its fields separated by spaces (``namespace:shop kind:Deployment labels:tier=canary``);
a selector may hold spaces (``labels:env in (prod, staging)``) since only spaces before another ``FIELD:`` (one of
the four names and a colon) end it: ``labels:tier in (a, b) kind:Job`` is a selector and a kind.
In a rule file (``--filters``, YAML) each rule is ``allow:`` or ``deny:`` with the same fields as a mapping (a
field's globs or kinds may be a list) or as the command line's string.

The rules are asked in order; an object no rule matches gets the default. ``RuleSet.decide`` says which rule
(or the default) decided, so a summary can count what each rule did. What the rules see of an object is its
last version (export: before the window's end; transform: in the trace), so an object whose labels changed
is in or out as a whole. Cluster-scoped objects have the namespace ``""``, which no namespace glob but ``*``
matches.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.model import GVK
from kubectl_sktrace.plural import closest
from kubectl_sktrace.trace.selection.selectors import Selector, parse_selector, quoted

ALLOW, DENY = "allow", "deny"
ACTIONS = (ALLOW, DENY)
FIELDS = ("namespace", "name", "kind", "labels")
SYNTAX = ("a rule is FIELD:VALUE terms separated by spaces, FIELD one of namespace, name, kind, labels "
          "(e.g. 'namespace:shop kind:Deployment labels:tier=canary')")

# a term starts at the start or after a run of spaces, matched once from its first space: never from each space of a
# run again (which made 16,000 spaces quadratic)
_TERM_START = re.compile(rf"(?:^|(?<!\s)\s+)(?=(?:{'|'.join(FIELDS)}):)")
MAX_GLOB = 253  # the longest name Kubernetes allows: a longer glob matches nothing, and fnmatch is quadratic in '['s
_NAME_GLOB = re.compile(r"[-a-z0-9.*?\[\]!]+")
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_RESOURCE = re.compile(r"[A-Za-z][A-Za-z0-9]*(\.[A-Za-z0-9-]+)+")  # resource.group, resource.version.group (kubectl's spelling)
_GVK_FORM = re.compile(r"v\d+(?:(?:alpha|beta)\d+)?\.[A-Za-z][A-Za-z0-9]*")  # v1.Pod: a core kind's GVK


class _Globs:
    """Globs compiled once: literal names in a set, the rest as one regular expression (an export asks every
    object of the history, so a rule costs about a set lookup per object)."""

    def __init__(self, globs: tuple[str, ...]) -> None:
        wild = [g for g in globs if any(c in g for c in "*?[")]
        self.literals = frozenset(g for g in globs if g not in wild)
        self.pattern = re.compile("|".join(fnmatch.translate(g) for g in wild)) if wild else None

    def match(self, text: str) -> bool:
        return text in self.literals or (self.pattern is not None and self.pattern.match(text) is not None)


@dataclass(frozen=True)
class Rule:
    """One rule: its action, what it matches (empty: anything), and where it came from (``origin``: the flag or the file)."""

    action: str
    namespaces: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()  # 'Deployment' (lower-cased for matching) or 'apps/v1.Deployment'
    selector: Selector | None = None
    negated: bool = False  # matches what the rest does not (``-l``: deny what the selector does not select)
    origin: str = "--allow"
    _namespace_globs: _Globs | None = field(init=False, repr=False, compare=False, default=None)
    _name_globs: _Globs | None = field(init=False, repr=False, compare=False, default=None)
    _kinds: tuple[frozenset[str], frozenset[str]] = field(init=False, repr=False, compare=False, default=(frozenset(), frozenset()))

    def __post_init__(self) -> None:
        object.__setattr__(self, "_namespace_globs", _Globs(self.namespaces) if self.namespaces else None)
        object.__setattr__(self, "_name_globs", _Globs(self.names) if self.names else None)
        bare = frozenset(k.lower() for k in self.kinds if "." not in k)
        object.__setattr__(self, "_kinds", (bare, frozenset(k for k in self.kinds if "." in k)))

    @property
    def text(self) -> str:
        """The rule as the command line spells it (``-l``'s is shown as what it denies)."""
        terms = []
        if self.namespaces:
            terms.append("namespace:" + ",".join(self.namespaces))
        if self.kinds:
            terms.append("kind:" + ",".join(self.kinds))
        if self.names:
            terms.append("name:" + ",".join(self.names))
        if self.selector is not None:
            terms.append("labels:" + self.selector.text)
        body = " ".join(terms) or "everything"
        return f"not ({body})" if self.negated else body

    def matches(self, *, gvk: GVK, namespace: str, name: str, labels: Mapping[str, str] | None) -> bool:
        namespaces, names = self._namespace_globs, self._name_globs
        found = (
            (namespaces is None or namespaces.match(namespace))
            and (names is None or names.match(name))
            and (not self.kinds or gvk.kind.lower() in self._kinds[0] or str(gvk) in self._kinds[1])
            and (self.selector is None or self.selector.matches(labels))
        )
        return found != self.negated


@dataclass(frozen=True)
class RuleSet:
    """The rules in order and the default; ``decide`` gives the index of the deciding rule, ``len(rules)`` for the default."""

    rules: tuple[Rule, ...] = ()
    default: str = ALLOW
    default_origin: str = "default"
    # rules that read only kinds and namespaces decide each (kind, namespace) once: an export asks every object
    _scopes: dict[tuple[GVK, str], int] | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        if not any(rule.names or rule.selector is not None for rule in self.rules):
            object.__setattr__(self, "_scopes", {})

    @property
    def needs_labels(self) -> bool:
        """Whether deciding reads labels (else the object's body need not be decoded)."""
        return any(rule.selector is not None for rule in self.rules)

    def decide(self, *, gvk: GVK, namespace: str, name: str, labels: Mapping[str, str] | None) -> int:
        scopes = self._scopes
        if scopes is not None:
            found = scopes.get((gvk, namespace))
            if found is not None:
                return found
        decided = len(self.rules)
        for position, rule in enumerate(self.rules):
            if rule.matches(gvk=gvk, namespace=namespace, name=name, labels=labels):
                decided = position
                break
        if scopes is not None:
            scopes[(gvk, namespace)] = decided
        return decided

    def action(self, decided: int) -> str:
        return self.rules[decided].action if decided < len(self.rules) else self.default

    def summary(self, counts: Sequence[int]) -> list[dict[str, Any]]:
        """Each rule, then the default, with the objects it decided (``counts[i]`` for ``decide``'s ``i``), for people
        and programs: ``--dry-run`` and the summary's JSON."""
        rows = [{"rule": rule.text, "action": rule.action, "from": rule.origin, "objects": counts[i]} for i, rule in enumerate(self.rules)]
        rows.append({"rule": "everything else", "action": self.default, "from": self.default_origin, "objects": counts[len(self.rules)]})
        return rows


def parse_rule(text: str, *, action: str, origin: str) -> Rule:
    """A rule as typed after ``--allow``/``--deny``; a UsageError naming it when it cannot be read."""
    terms = [t for t in _TERM_START.split(text.strip()) if t]
    if not terms:
        raise UsageError(f"{origin} {quoted(text)}: the rule is empty; {SYNTAX}")
    fields: dict[str, str] = {}
    for term in terms:
        field, sep, value = term.partition(":")
        if not sep or field not in FIELDS:
            raise UsageError(f"{origin} {quoted(text)}: cannot read {quoted(term.strip())}; {SYNTAX}")
        if field in fields:
            raise UsageError(f"{origin} {quoted(text)}: {field} is given twice; give it once (globs and kinds take a comma-separated list)")
        fields[field] = value.strip()
    return rule_from_fields(fields, action=action, origin=origin, where=f"{origin} {quoted(text)}")


def rule_from_fields(fields: Mapping[str, Any], *, action: str, origin: str, where: str) -> Rule:
    """A rule from its fields (each a string, or for globs and kinds a list of strings)."""
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise UsageError(f"{where}: unknown field {unknown[0]!r}; a rule's fields are {', '.join(FIELDS)}")
    labels = fields.get("labels")
    if labels is not None and not isinstance(labels, str):
        raise UsageError(f"{where}: labels must be one kubectl label selector, as a string (e.g. 'app=web,tier!=canary')")
    try:
        selector = parse_selector(labels) if labels is not None else None
    except UsageError as exc:
        raise UsageError(f"{where}: {exc}") from None
    return Rule(
        action=action, namespaces=_globs(fields.get("namespace"), field="namespace", where=where),
        names=_globs(fields.get("name"), field="name", where=where), kinds=_kinds(fields.get("kind"), where=where),
        selector=selector, origin=origin,
    )


def _items(value: Any, *, field: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise UsageError(f"{where}: {field} must be a string or a list of strings")
    found = tuple(i.strip() for i in items if i.strip())
    if not found:
        raise UsageError(f"{where}: {field} is empty; give at least one {'kind' if field == 'kind' else 'glob'}")
    return found


def _globs(value: Any, *, field: str, where: str) -> tuple[str, ...]:
    globs = _items(value, field=field, where=where)
    for glob in globs:
        if len(glob) > MAX_GLOB:
            raise UsageError(f"{where}: {quoted(glob)} is longer than {MAX_GLOB} characters, the longest {field} Kubernetes allows")
        if not _NAME_GLOB.fullmatch(glob):
            raise UsageError(f"{where}: {quoted(glob)} is not a {field} or a glob of one (lower-case letters, digits, '-', '.', '*', '?', '[...]')")
    return globs


def _kinds(value: Any, *, where: str) -> tuple[str, ...]:
    kinds = _items(value, field="kind", where=where)
    for kind in kinds:
        if "/" in kind or _GVK_FORM.fullmatch(kind):
            try:
                GVK.parse(kind)
            except UsageError as exc:
                raise UsageError(f"{where}: {exc}") from None
        elif not _KIND.fullmatch(kind) and not _RESOURCE.fullmatch(kind):
            raise UsageError(f"{where}: {quoted(kind)} is not a kind; give 'Deployment', 'deployments.apps' or 'apps/v1.Deployment'")
    return kinds


def is_gvk_term(kind: str) -> bool:
    """Whether a rule's kind is a GVK (``apps/v1.Deployment``, ``v1.Pod``) rather than a name kubectl takes."""
    return "/" in kind or _GVK_FORM.fullmatch(kind) is not None


@dataclass(frozen=True)
class KindNames:
    """What a kind is called, from a discovery document: its GVK and every name kubectl takes for it (lower-cased:
    the kind, the plural, the singular, the short names)."""

    gvk: GVK
    names: frozenset[str]


def resolve_kinds(rules: Sequence[Rule], *, catalog: Sequence[KindNames], recorded: Sequence[GVK]) -> tuple[tuple[Rule, ...], list[str]]:
    """The rules with their kinds named as kubectl names them (``deploy``, ``deployments``, ``Deployments.apps``) turned
    into the kinds they name, from ``catalog``; and a warning for each kind no ``recorded`` object has (with the name
    meant, when one is close). Pure."""
    warnings: list[str] = []
    out = []
    for rule in rules:
        resolved = {term: _resolve(term, catalog) for term in rule.kinds}
        warnings += (_unknown_kind(term, rule=rule, catalog=catalog, recorded=recorded)
                     for term, kinds in resolved.items() if not any(_recorded(kind, recorded) for kind in kinds))
        kinds = tuple(dict.fromkeys(kind for found in resolved.values() for kind in found))
        out.append(rule if kinds == rule.kinds else replace(rule, kinds=kinds))
    return tuple(out), warnings


def _resolve(term: str, catalog: Sequence[KindNames]) -> tuple[str, ...]:
    if is_gvk_term(term):
        return (term,)
    name, _, group = term.lower().partition(".")
    found = [entry.gvk for entry in catalog
             if name in entry.names and group in ("", entry.gvk.group, f"{entry.gvk.version}.{entry.gvk.group}")]
    if not found:
        return (term,)
    if not group:
        return tuple(dict.fromkeys(gvk.kind for gvk in found))
    return tuple(dict.fromkeys(str(gvk) for gvk in found))


def _recorded(kind: str, recorded: Sequence[GVK]) -> bool:
    if is_gvk_term(kind):
        return any(str(gvk) == kind for gvk in recorded)
    return any(gvk.kind.lower() == kind.lower() for gvk in recorded)


def _unknown_kind(term: str, *, rule: Rule, catalog: Sequence[KindNames], recorded: Sequence[GVK]) -> str:
    names = {gvk.kind for gvk in recorded} | {name for entry in catalog for name in entry.names}
    guess = closest(term.partition(".")[0], names)
    meant = next((entry.gvk.kind for entry in catalog if guess is not None and guess.lower() in entry.names), guess)
    hint = f"; did you mean kind:{meant}?" if meant else ""
    return f"{rule.origin} {rule.text!r}: no recorded object is of kind {term!r}, so it matches nothing{hint}"


def parse_rules_file(data: Any, *, source: str) -> tuple[tuple[Rule, ...], str | None]:
    """The rules and the default (None when not given) of a ``--filters`` file, already loaded from YAML::

        default: deny
        rules:
          - allow: {namespace: kube-system, labels: app.kubernetes.io/name=ingress-nginx}
          - deny: {namespace: shop, kind: Deployment, labels: tier=canary}
          - allow: namespace:shop
    """
    if not isinstance(data, dict) or not set(data) <= {"default", "rules"}:
        raise UsageError(f"{source}: a rule file is a mapping with 'rules' (a list of allow: or deny: items) and an optional 'default'")
    default = data.get("default")
    if default is not None and default not in ACTIONS:
        raise UsageError(f"{source}: default must be allow or deny, not {default!r}")
    items = data.get("rules") or []
    if not isinstance(items, list):
        raise UsageError(f"{source}: rules must be a list of allow: or deny: items")
    origin = f"--filters {source}"
    rules = []
    for number, item in enumerate(items, start=1):
        where = f"{source}: rule {number}"
        if not isinstance(item, dict) or len(item) != 1 or next(iter(item)) not in ACTIONS:
            raise UsageError(f"{where}: each rule is one 'allow:' or 'deny:' with its fields")
        (action, fields), = item.items()
        if fields is None or fields == {}:
            raise UsageError(f"{where}: the rule is empty, as --{action} '' is; {SYNTAX} (what no rule matches gets 'default:')")
        if isinstance(fields, str):
            rules.append(parse_rule(fields, action=action, origin=origin))
        elif isinstance(fields, dict):
            rules.append(rule_from_fields(fields, action=action, origin=origin, where=where))
        else:
            raise UsageError(f"{where}: give the rule's fields as a mapping or as a string")
    return tuple(rules), default


def selector_rule(text: str) -> Rule:
    """``-l SELECTOR`` as a rule: deny what the selector does not select (kubectl's -l keeps what it selects)."""
    return Rule(action=DENY, selector=parse_selector(text), negated=True, origin="-l")
