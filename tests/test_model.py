from __future__ import annotations

import pytest

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.model import GVK, POD, ObjKey


@pytest.mark.parametrize(
    ("text", "gvk"),
    [
        pytest.param("apps/v1.Deployment", GVK("apps", "v1", "Deployment"), id="grouped"),
        pytest.param("v1.Pod", POD, id="core"),
        pytest.param("/v1.Pod", POD, id="old-leading-slash"),
        pytest.param("/apps/v1.Deployment", GVK("apps", "v1", "Deployment"), id="leading-slash-grouped"),
        pytest.param("networking.k8s.io/v1.Ingress", GVK("networking.k8s.io", "v1", "Ingress"), id="dotted-group"),
    ],
)
def test_parse(text, gvk) -> None:
    assert GVK.parse(text) == gvk


@pytest.mark.parametrize("text", ["apps/v1/Deployment", "Deployment", "//v1.Pod", "apps/v1.Deploy.ment", "apps/.Deployment", "v1.", "apps/v1. Deployment", ""])
def test_parse_rejects(text) -> None:
    with pytest.raises(UsageError, match=r"^invalid GVK .*: expected '<group>/<version>.<Kind>'"):
        GVK.parse(text)


def test_format_and_api_version() -> None:
    gvk = GVK.from_api_version("apps/v1", "Deployment")
    assert (str(gvk), gvk.api_version, gvk.group_version) == ("apps/v1.Deployment", "apps/v1", "apps/v1")
    assert (str(POD), POD.api_version) == ("v1.Pod", "v1")
    assert GVK.parse(str(gvk)) == gvk


def test_objkey() -> None:
    assert ObjKey(POD, "ns", "p").ns_name == "ns/p"
    assert ObjKey(GVK("", "v1", "Namespace"), "", "ns").ns_name == "ns"
    assert str(ObjKey(POD, "ns", "p")) == "v1.Pod ns/p"
    assert {ObjKey(POD, "a", "b"), ObjKey(POD, "a", "b")} == {ObjKey(POD, "a", "b")}
