import pytest

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.trace.selection.selectors import matches_any, parse_selector


@pytest.mark.parametrize(
    "selector, labels, expected",
    [
        ("app=web", {"app": "web"}, True),
        ("app=web", {"app": "db"}, False),
        ("app=web", {}, False),
        ("app==web", {"app": "web"}, True),
        ("app!=web", {"app": "db"}, True),
        ("app!=web", {}, True),
        ("app!=web", {"app": "web"}, False),
        ("tier in (a,b)", {"tier": "b"}, True),
        ("tier in (a, b)", {"tier": "c"}, False),
        ("tier in (a,b)", {}, False),
        ("tier notin (a,b)", {}, True),
        ("tier notin (a,b)", {"tier": "a"}, False),
        ("tier notin (a,b)", {"tier": "c"}, True),
        ("canary", {"canary": ""}, True),
        ("canary", {}, False),
        ("!canary", {}, True),
        ("! canary", {"canary": "x"}, False),
        ("app=web,tier in (a,b),!canary", {"app": "web", "tier": "a"}, True),
        ("app=web,tier in (a,b),!canary", {"app": "web", "tier": "a", "canary": "1"}, False),
        ("example.com/team=infra", {"example.com/team": "infra"}, True),
        ("app=", {"app": ""}, True),
        ("app=", {"app": "x"}, False),
    ],
    ids=lambda v: repr(v),
)
def test_matches(selector, labels, expected):
    assert parse_selector(selector).matches(labels) is expected


def test_none_labels_are_empty():
    assert parse_selector("!a").matches(None)
    assert not parse_selector("a").matches(None)


def test_matches_any_is_an_or_of_repeated_selectors():
    sels = [parse_selector("app=a"), parse_selector("app=b")]
    assert matches_any(sels, {"app": "b"})
    assert not matches_any(sels, {"app": "c"})
    assert not matches_any([], {"app": "c"})


@pytest.mark.parametrize(
    "selector, reason",
    [
        ("app in (", "'(' without ')'"),
        ("=x", "a requirement has an empty key"),
        ("a==b==c", "'b==c' is not a valid label value"),
        ("", "it is empty"),
        ("a,,b", "an empty requirement between commas"),
        ("a b", "'a b' is not a valid label key"),
        ("app in ()", "'in' needs at least one value"),
        ("a)", "')' without '('"),
        ("a=b c", "'b c' is not a valid label value"),
        ("-a=b", "'-a' is not a valid label key"),
        ("!", "a requirement has an empty key"),
        ("a in (x", "'(' without ')'"),
    ],
)
def test_malformed_is_one_line_usage_error(selector, reason):
    with pytest.raises(UsageError) as info:
        parse_selector(selector)
    assert str(info.value) == (
        f"invalid label selector {selector!r}: {reason}; use kubectl syntax like 'a=b,c!=d,e in (x,y),f notin (z),g,!h'"
    )
