import pytest

from kubectl_sktrace.model import CONFIG_MAP, SECRET, SERVICE_ACCOUNT
from kubectl_sktrace.trace.references import (
    REFERENCED_KIND,
    distinct_references,
    references,
)


def template(**spec):
    return {"spec": {"template": {"spec": spec}}}


@pytest.mark.parametrize(
    ("obj", "paths", "expected"),
    [
        (template(serviceAccountName="sa", serviceAccount="old"), ["/spec/template"], (("E0001", "sa"),)),
        (template(serviceAccount="old"), ["/spec/template"], (("E0001", "old"),)),
        (template(containers=[{"env": [{"valueFrom": {"secretKeyRef": {"name": "s"}}}, {"valueFrom": {"secretKeyRef": {"name": "s"}}},
                                       {"valueFrom": {"configMapKeyRef": {"name": "c", "optional": True}}}]}]),
         ["/spec/template"], (("E0002", "s"),)),
        (template(initContainers=[{"envFrom": [{"configMapRef": {"name": "c"}}]}], containers=[{"envFrom": [{"secretRef": {"name": "s"}}]}]),
         ["/spec/template"], (("E0003", "c"), ("E0002", "s"))),
        (template(volumes=[{"secret": {"secretName": "s"}}, {"configMap": {"name": "c"}}, {"configMap": {"name": 7}}]),
         ["/spec/template"], (("E0004", "s"), ("E0005", "c"))),
        (template(serviceAccountName="sa"), ["/spec/other"], ()),
        (template(serviceAccountName="sa"), [], ()),
    ],
    ids=["account-first", "legacy-account", "env-once-optional-skipped", "init-containers-first", "volumes-and-bad-names",
         "other-path", "no-paths"],
)
def test_distinct_references(obj, paths, expected):
    assert distinct_references(obj, paths) == expected


def test_each_rule_names_the_kind_its_references_are_checked_against():
    obj = template(serviceAccountName="sa", containers=[{"env": [{"valueFrom": {"secretKeyRef": {"name": "s"}}},
                                                                 {"valueFrom": {"configMapKeyRef": {"name": "c"}}}]}],
                   volumes=[{"secret": {"secretName": "v"}}, {"configMap": {"name": "w"}}])
    found = references(obj, ["/spec/template"])
    assert [(code, gvk) for code, gvk, _, _ in found] == [(code, REFERENCED_KIND[code]) for code, _, _, _ in found]
    assert [gvk for _, gvk, _, _ in found] == [SERVICE_ACCOUNT, SECRET, CONFIG_MAP, SECRET, CONFIG_MAP]


@pytest.mark.parametrize("value", [-1, 7.5, "c", {"name": "c"}, True], ids=["int", "float", "string", "map", "bool"])
@pytest.mark.parametrize("field", ["containers", "initContainers", "volumes", "env", "envFrom"])
def test_a_list_field_of_another_type_holds_no_reference(field: str, value: object) -> None:
    """A damaged or hostile trace: ``containers: -1`` was an 'unexpected TypeError' in validate (found by the hostile
    traces' hypothesis test)."""
    container: dict[str, object] = {"name": "c", "env": [{"valueFrom": {"secretKeyRef": {"name": "s"}}}]}
    spec: dict[str, object] = {"containers": [container], "serviceAccountName": "sa"}
    if field in ("env", "envFrom"):
        container[field] = value
    else:
        spec[field] = value
    found = distinct_references({"spec": {"template": {"spec": spec}}}, ["/spec/template"])
    assert ("E0001", "sa") in found
