"""A custom kind whose CRD appears while the recorder runs, and goes away again, on a real kube-apiserver v1.28 (the
real tier): not served at the start (a gap of cause `not served`, no error), recorded from the moment the server
serves it, and its objects deleted when the CRD is (the server sends DELETED for each on open watches).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from kubectl_sktrace.store.versions import APPLIED, DELETED
from realk8s import ControlPlane, versions, wait_for_op
from reliability_support import Recorder, query

pytestmark = [pytest.mark.timeout(240)]


def crd(group: str) -> dict[str, object]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": f"widgets.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]},
    }


def test_a_custom_kind_whose_crd_appears_mid_run_is_recorded_from_then_and_deleted_with_it(real_cluster: ControlPlane, tmp_path: Path) -> None:
    plane, home, cache = real_cluster, tmp_path / "home", tmp_path / "cache.db"
    home.mkdir()
    group = f"t{uuid.uuid4().hex[:8]}.example.com"  # a group of this test's own: CRDs are cluster-wide
    gvk = f"{group}/v1.Widget"
    ns = plane.namespace("crd")
    config = tmp_path / "config.yaml"
    config.write_text(f"trackedObjects:\n  apps/v1.Deployment:\n    podSpecTemplatePaths: [/spec/template]\n  {gvk}: {{}}\n")
    recorder = Recorder(kubeconfig=plane.kubeconfig, cache=cache, home=home, log=tmp_path / "recorder.log",
                        args=["--config", str(config), "--duration", "200"])
    try:
        assert recorder.wait_for("recording changes", timeout=90), recorder.output()
        assert recorder.wait_for(f"{gvk} is not served", timeout=30), recorder.output()
        plane.apply(crd(group))
        plane.kubectl("wait", "--for=condition=Established", f"crd/widgets.{group}", "--timeout=60s")
        plane.apply({"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1", "namespace": ns}, "spec": {"size": 1}})
        wait_for_op(cache, gvk, ns, "w1", APPLIED, timeout=90)  # asked again at most ~24 s apart
        plane.kubectl("delete", "crd", f"widgets.{group}", "--wait=true")
        wait_for_op(cache, gvk, ns, "w1", DELETED, timeout=60)
    finally:
        assert recorder.stop() == 0, recorder.output()
    assert versions(cache, gvk, ns, "w1") == [APPLIED, DELETED]
    gaps = query(cache, "SELECT since, until FROM coverage_gaps WHERE gvk = ? AND cause = 'not served' ORDER BY since", gvk)
    assert gaps and gaps[0][1] is not None, gaps  # not served from the start until the CRD served it
    assert "Traceback" not in recorder.output() and "Error:" not in recorder.output(), recorder.output()
