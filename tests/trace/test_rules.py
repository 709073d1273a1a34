import time

import pytest

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.model import GVK
from kubectl_sktrace.trace.selection.rules import ALLOW, DENY, RuleSet, parse_rule, parse_rules_file, selector_rule

DEP = GVK("apps", "v1", "Deployment")
POD = GVK("", "v1", "Pod")


def subject(namespace="shop", name="web", gvk=DEP, labels=None):
    return {"gvk": gvk, "namespace": namespace, "name": name, "labels": labels}


@pytest.mark.parametrize("rule, obj, matches", [
    pytest.param("namespace:shop", subject(), True, id="namespace"),
    pytest.param("namespace:team-*", subject("team-a"), True, id="namespace-glob"),
    pytest.param("namespace:team-?,shop", subject("team-ab"), False, id="namespace-question-mark"),
    pytest.param("namespace:*", subject(""), True, id="star-matches-cluster-scoped"),
    pytest.param("namespace:shop", subject(""), False, id="cluster-scoped-has-no-namespace"),
    pytest.param("name:web-*", subject(name="web"), False, id="name-glob"),
    pytest.param("name:web*", subject(name="web-canary"), True, id="name-glob-prefix"),
    pytest.param("kind:Deployment", subject(), True, id="kind"),
    pytest.param("kind:deployment", subject(), True, id="kind-any-case"),
    pytest.param("kind:apps/v1.Deployment", subject(), True, id="gvk"),
    pytest.param("kind:apps/v2.Deployment", subject(), False, id="gvk-version"),
    pytest.param("kind:v1.Pod,Job", subject(gvk=POD), True, id="core-gvk-in-a-list"),
    pytest.param("labels:app=web,tier!=canary", subject(labels={"app": "web", "tier": "front"}), True, id="selector"),
    pytest.param("labels:app=web,tier!=canary", subject(labels={"app": "web", "tier": "canary"}), False, id="selector-not"),
    pytest.param("labels:env in (prod, staging)", subject(labels={"env": "staging"}), True, id="set-selector-with-spaces"),
    pytest.param("labels:!tier", subject(labels=None), True, id="no-labels"),
    pytest.param("namespace:shop labels:tier=canary kind:Deployment", subject(labels={"tier": "canary"}), True, id="all-fields-and"),
    pytest.param("namespace:shop labels:tier=canary kind:Job", subject(labels={"tier": "canary"}), False, id="one-field-fails"),
    pytest.param("  namespace:shop   name:web  ", subject(), True, id="spaces"),
])
def test_a_rule_matches_when_every_field_does(rule, obj, matches):
    assert parse_rule(rule, action=ALLOW, origin="--allow").matches(**obj) is matches


def test_the_first_rule_that_matches_decides_and_the_default_takes_the_rest():
    canary = parse_rule("namespace:shop labels:tier=canary", action=ALLOW, origin="--allow")
    shop = parse_rule("namespace:shop", action=DENY, origin="--deny")
    rules = RuleSet(rules=(canary, shop), default=ALLOW)
    decide = [rules.decide(**subject(labels={"tier": "canary"})), rules.decide(**subject()), rules.decide(**subject("other"))]
    assert decide == [0, 1, 2]
    assert [rules.action(d) for d in decide] == [ALLOW, DENY, ALLOW]
    swapped = RuleSet(rules=(shop, canary), default=ALLOW)
    assert swapped.action(swapped.decide(**subject(labels={"tier": "canary"}))) == DENY
    assert swapped.summary([2, 0, 5]) == [
        {"rule": "namespace:shop", "action": "deny", "from": "--deny", "objects": 2},
        {"rule": "namespace:shop labels:tier=canary", "action": "allow", "from": "--allow", "objects": 0},
        {"rule": "everything else", "action": "allow", "from": "default", "objects": 5},
    ]
    assert rules.needs_labels and not RuleSet(rules=(shop,)).needs_labels


def test_selector_rule_denies_what_the_selector_does_not_select():
    rule = selector_rule("app=web")
    assert (rule.matches(**subject(labels={"app": "web"})), rule.matches(**subject(labels={"app": "db"}))) == (False, True)
    assert (rule.action, rule.text, rule.origin) == (DENY, "not (labels:app=web)", "-l")


def test_a_rule_file_gives_rules_in_order_and_its_default():
    rules, default = parse_rules_file({"default": "deny", "rules": [
        {"deny": {"namespace": "shop", "kind": "Deployment", "labels": "tier=canary"}},
        {"allow": {"namespace": ["shop", "team-*"]}},
        {"allow": "namespace:kube-system labels:app=ingress"},
    ]}, source="policy.yaml")
    assert default == DENY
    assert [(r.action, r.text, r.origin) for r in rules] == [
        ("deny", "namespace:shop kind:Deployment labels:tier=canary", "--filters policy.yaml"),
        ("allow", "namespace:shop,team-*", "--filters policy.yaml"),
        ("allow", "namespace:kube-system labels:app=ingress", "--filters policy.yaml"),
    ]


@pytest.mark.parametrize("fields", [None, {}, ""], ids=["nothing", "empty-mapping", "empty-string"])
def test_an_empty_rule_in_a_file_is_refused_as_allow_empty_is(fields):
    """``allow:`` with no value and ``--allow ''`` agree (issue 38): neither is a rule that matches everything."""
    with pytest.raises(UsageError, match="the rule is empty"):
        parse_rule("", action=ALLOW, origin="--allow")
    with pytest.raises(UsageError, match="the rule is empty"):
        parse_rules_file({"rules": [{"allow": "namespace:shop"}, {"allow": fields}]}, source="policy.yaml")


@pytest.mark.parametrize("text", [
    "namespace:a" + " " * 200_000 + "x",
    "namespace:a" + " labels:" * 50_000,
    "labels:a in (" + "b, " * 100_000,
], ids=["a-run-of-spaces", "many-terms", "a-long-selector"])
def test_reading_a_rule_is_linear(text):
    """A bound against a quadratic reader (a run of 200,000 spaces took minutes), with a generous CPU limit."""
    started = time.process_time()
    with pytest.raises(UsageError):
        parse_rule(text, action=ALLOW, origin="--allow")
    assert time.process_time() - started < 5


@pytest.mark.parametrize("text, message", [
    ("", "--allow '': the rule is empty"),
    ("shop", "--allow 'shop': cannot read 'shop'"),
    ("namespace:", "--allow 'namespace:': namespace is empty; give at least one glob"),
    ("namespace:Shop", "--allow 'namespace:Shop': 'Shop' is not a namespace or a glob of one"),
    ("labels:", "--allow 'labels:': invalid label selector '': it is empty"),
    ("kind:Deploy-ment", "--allow 'kind:Deploy-ment': 'Deploy-ment' is not a kind"),
])
def test_a_bad_rule_is_a_usage_error_naming_it(text, message):
    with pytest.raises(UsageError) as raised:
        parse_rule(text, action=ALLOW, origin="--allow")
    assert str(raised.value).startswith(message)
