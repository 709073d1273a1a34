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


def test_gvk_hash_is_cached_but_behaves_like_its_fields() -> None:
    import dataclasses
    import pickle

    gvk = GVK("apps", "v1", "Deployment")
    assert gvk == GVK.parse("apps/v1.Deployment") and hash(gvk) == hash(GVK.parse("apps/v1.Deployment"))
    assert gvk != GVK("apps", "v1", "ReplicaSet") and {gvk: 1}.get(GVK("apps", "v1", "ReplicaSet")) is None
    copied = pickle.loads(pickle.dumps(gvk))
    assert copied == gvk and hash(copied) == hash(gvk) and copied._hash == hash(("apps", "v1", "Deployment"))
    changed = dataclasses.replace(gvk, kind="StatefulSet")
    assert changed == GVK("apps", "v1", "StatefulSet") and hash(changed) == hash(GVK("apps", "v1", "StatefulSet"))
    assert repr(gvk) == "GVK(group='apps', version='v1', kind='Deployment')"
    assert sorted([GVK("b", "v1", "K"), GVK("", "v1", "Pod")])[0] == GVK("", "v1", "Pod")
