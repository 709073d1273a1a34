"""The pure rules of ``past``: kubectl's JSON form of a stored version, selectors, JSONPath, ages and columns, what a
change changed, and which recorded kind a kubectl name means."""

from __future__ import annotations

import pytest

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.past import jsonpath, printing
from kubectl_sktrace.past.kinds import Kind, resolve
from kubectl_sktrace.past.objects import Scope, kubectl_form, parse_field_selector
from kubectl_sktrace.past.state import Knowledge, PastObject, PodLife, changed_paths
from kubectl_sktrace.trace.selection.selectors import parse_selector

DEPLOY = GVK("apps", "v1", "Deployment")
KEY = ObjKey(DEPLOY, "shop", "web")


def stored() -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop", "annotations": {},
            "labels": {"app": "web"}}, "spec": {"replicas": 2}, "status": {"replicas": 2}}


def test_kubectl_form_gives_back_identity_and_never_invents_what_was_not_kept() -> None:
    obj = kubectl_form(stored(), key=KEY, uid="u-1", created=1_796_000_000)
    assert obj == {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"},
                   "uid": "u-1", "creationTimestamp": "2026-11-30T00:53:20Z"}, "spec": {"replicas": 2}}
    assert "creationTimestamp" not in kubectl_form(stored(), key=KEY, uid="u-1")["metadata"]
    assert list(obj) == ["apiVersion", "kind", "metadata", "spec"]


def test_scope_selects_by_namespace_names_labels_and_fields() -> None:
    obj = kubectl_form(stored(), key=KEY, uid="u")
    assert Scope().selects(KEY, obj)
    assert not Scope(namespace="other").selects(KEY, obj)
    assert Scope(labels=parse_selector("app in (web,api)")).selects(KEY, obj)
    assert not Scope(labels=parse_selector("app!=web")).selects(KEY, obj)
    assert Scope(fields=parse_field_selector("metadata.name=web,metadata.namespace!=kube-system")).selects(KEY, obj)
    assert Scope(fields=parse_field_selector("metadata.name==web")).name_filter() == ("web",)


@pytest.mark.parametrize("text", ["status.phase=Running", "metadata.name", "x" * 5000])
def test_a_field_selector_on_what_the_history_cannot_select_is_refused(text: str) -> None:
    with pytest.raises(UsageError):
        parse_field_selector(text)


def test_jsonpath_reads_kubectls_templates_and_refuses_filters() -> None:
    data = {"items": [{"metadata": {"name": "a", "labels": {"app.kubernetes.io/name": "x"}}}, {"metadata": {"name": "b"}}]}
    assert jsonpath.render("{.items[*].metadata.name}", data) == "a b"
    assert jsonpath.render('{range .items[*]}{.metadata.name}{"\\n"}{end}', data) == "a\nb\n"
    assert jsonpath.render("{.items[0].metadata.labels.app\\.kubernetes\\.io/name}", data) == "x"
    assert jsonpath.render("{.items[-1].metadata}", data) == '{"name":"b"}'
    assert jsonpath.value(".spec.replicas", data["items"][0]) == "<none>"
    for bad in ("{..name}", "{.items[?(@.x)]}", "{.items[0:2]}", "{.a"):
        with pytest.raises(UsageError):
            jsonpath.render(bad, data)


@pytest.mark.parametrize("seconds, shown", [(45, "45s"), (200, "3m20s"), (45 * 60, "45m"), (5 * 3600 + 180, "5h3m"), (20 * 3600, "20h"),
                                            (3 * 86400 + 4 * 3600, "3d4h"), (30 * 86400, "30d"), (-1, "<unknown>")])
def test_age_as_kubectl_prints_it(seconds: int, shown: str) -> None:
    assert printing.age(seconds) == shown


def test_the_table_fills_what_the_history_knows_and_says_which_columns_it_cannot() -> None:
    kind = Kind(DEPLOY, "deployments", True, ("deploy",), "deployment")
    found = PastObject(kind, KEY, "u", kubectl_form(stored(), key=KEY, uid="u", created=1000), 1500, 1, 1, Knowledge("live"))
    table = printing.table([found], "Deployment", second=1600, namespace_column=True, wide=False, show_labels=True, no_headers=False)
    assert table.text.splitlines()[0].split() == ["NAMESPACE", "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "LABELS"]
    assert table.text.splitlines()[1].split() == ["shop", "web", "<unknown>", "<unknown>", "<unknown>", "10m", "app=web"]
    assert table.unknown == ("READY", "UP-TO-DATE", "AVAILABLE")
    assert printing.name_line(found) == "deployment.apps/web"
    assert PodLife(10, 20, False).phase_at(15) == "Running" and PodLife(10, 20, False).phase_at(20) == "Terminated"
    assert PodLife(None, None, False).phase_at(15) == "Pending"


def test_changed_paths_name_the_leaves_with_short_values() -> None:
    old = {"replicas": 2, "template": {"spec": {"containers": [{"image": "a:1"}]}}}
    new = {"replicas": 3, "template": {"spec": {"containers": [{"image": "a:2"}]}}}
    assert changed_paths(old, new, "spec") == ["spec.replicas 2→3", "spec.template.spec.containers[0].image a:1→a:2"]
    assert changed_paths({"a": [1]}, {"a": [1, 2]}, "spec") == ["spec.a"]


def test_kinds_as_kubectl_names_them() -> None:
    kinds = [Kind(DEPLOY, "deployments", True, ("deploy",), "deployment"), Kind(GVK("", "v1", "ConfigMap"), "configmaps", True, ("cm",), "configmap")]
    for term in ("deploy", "Deployment", "deployments", "deployments.apps", "deployment.v1.apps", "apps/v1.Deployment"):
        assert resolve(kinds, term).gvk == DEPLOY, term
    assert resolve(kinds, "cm").plural == "configmaps"
    with pytest.raises(UsageError, match="recorded: configmaps, deployments"):
        resolve(kinds, "deplyoment")
