"""What a real kube-apiserver v1.28 allows and refuses (the real tier): an identity that RBAC limits to one
namespace, and one that API Priority and Fairness throttles. The emulator models both; these run them for real.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubectl_sktrace.store.versions import APPLIED, DELETED
from realk8s import ControlPlane
from reliability_support import Recorder, run_cli
from test_real_recording import CONFIG, DEPLOY, deployment, versions, wait_for_op

pytestmark = [pytest.mark.timeout(240)]


def namespace_reader(plane: ControlPlane, ns: str, tmp_path: Path) -> Path:
    """A service account bound to ``view`` in ``ns`` only, and a kubeconfig of its token."""
    plane.kubectl("-n", ns, "create", "serviceaccount", "recorder")
    plane.kubectl("-n", ns, "create", "rolebinding", "recorder-view", "--clusterrole=view", f"--serviceaccount={ns}:recorder")
    return plane.kubeconfig_for(tmp_path / "recorder.kubeconfig", token=plane.token_of(ns, "recorder"))


def test_an_identity_limited_to_one_namespace_records_it_with_n_and_is_told_how_to_without(real_cluster: ControlPlane, tmp_path: Path) -> None:
    plane, home = real_cluster, tmp_path / "home"
    home.mkdir()
    ns = plane.namespace("rbac")
    kubeconfig = namespace_reader(plane, ns, tmp_path)
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)

    everything = run_cli(["start", "--kubeconfig", str(kubeconfig), "--cache", str(tmp_path / "all.db"), "--config", str(config),
                          "--duration", "3s"], home=home, timeout=120)
    said = everything.stdout + everything.stderr
    assert "Traceback" not in said, everything.describe()
    assert "forbidden" in said and f"-n {ns}" in said, everything.describe()  # what is refused, and the fix: record the namespace

    cache = tmp_path / "ns.db"
    recorder = Recorder(kubeconfig=kubeconfig, cache=cache, home=home, log=tmp_path / "recorder.log",
                        args=["--config", str(config), "--duration", "120", "-n", ns])
    try:
        assert recorder.wait_for("recording changes", timeout=90), recorder.output()
        plane.apply(deployment(ns, "web"))
        wait_for_op(cache, DEPLOY, ns, "web", APPLIED)
        plane.kubectl("-n", ns, "delete", "deployment", "web")
        wait_for_op(cache, DEPLOY, ns, "web", DELETED)
    finally:
        assert recorder.stop() == 0, recorder.output()
    assert "forbidden" not in recorder.output().lower(), recorder.output()
    assert versions(cache, DEPLOY, ns, "web") == [APPLIED, DELETED]
    status = run_cli(["status", "--cache", str(cache), "--kubeconfig", str(kubeconfig), "-o", "json"], home=home)
    assert status.code == 0, status.describe()
    assert json.loads(status.stdout)["runs"][-1]["state"] == "clean"
