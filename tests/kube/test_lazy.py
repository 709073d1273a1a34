"""The ``kubernetes`` package without its typed API (``kube/lazy.py``): what a recorder loads, and what stays usable."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sktrace_emulator import Emulator

RECORD_AND_LIST_MODULES = """
import atexit, json, sys
listing = sys.argv[1]
atexit.register(lambda: open(listing, "w").write(json.dumps(sorted(sys.modules))))
from kubectl_sktrace.cli import main
sys.argv = ["kubectl-sktrace", *sys.argv[2:]]
main()
"""


def test_a_recorder_loads_the_client_without_its_models_and_api_classes(emulator: Emulator, emulator_kubeconfig: str,
                                                                          tmp_path: Path) -> None:
    """``start`` against a cluster: credentials, pool, lists and watches, none of the ~800 model modules."""
    emulator.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
                     "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                              "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    listing = tmp_path / "modules.json"
    result = subprocess.run([sys.executable, "-c", RECORD_AND_LIST_MODULES, str(listing), "start", "--quiet", "--kubeconfig",
                             emulator_kubeconfig, "--cache", str(tmp_path / "c.db"), "--duration", "2s"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    modules = set(json.loads(listing.read_text()))
    assert {"kubernetes.client.api_client", "kubernetes.client.configuration", "kubernetes.config.kube_config"} <= modules
    loaded = sorted(m for m in modules if m.startswith(("kubernetes.client.models.", "kubernetes.client.api.", "kubernetes.watch",
                                                          "kubernetes.dynamic", "kubernetes.stream")))
    assert loaded == []
    assert len([m for m in modules if m.startswith("kubernetes")]) < 40


TYPED_API_AFTER_LIGHTEN = """
import sys
from kubectl_sktrace.kube.lazy import lighten
lighten()
from kubernetes.client import ApiClient, Configuration
from kubernetes.config.kube_config import KubeConfigLoader
light = len(sys.modules)
assert "kubernetes.client.models.v1_pod" not in sys.modules
import kubernetes
version = kubernetes.__version__  # the root package first: its __init__ imports every part, the client's included
from kubernetes import client, dynamic, utils, watch
configuration = Configuration()
configuration.host = sys.argv[1]
configuration.verify_ssl = False
configuration.api_key = {"authorization": "Bearer " + sys.argv[2]}
pods = client.CoreV1Api(ApiClient(configuration)).list_namespaced_pod("default")
assert isinstance(pods, client.models.V1PodList), type(pods)
print(version, light, len(sys.modules), type(client).__name__, type(kubernetes).__name__)
"""


def test_code_in_the_same_process_still_gets_the_typed_api(emulator: Emulator) -> None:
    """After ``lighten``, ``kubernetes.client.CoreV1Api``, its models and ``kubernetes.watch`` work as ever: the
    package's ``__init__`` runs when first asked for such a name."""
    result = subprocess.run([sys.executable, "-c", TYPED_API_AFTER_LIGHTEN, emulator.url, emulator.token or ""],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    version, light, whole, client_type, package_type = result.stdout.split()
    assert version.count(".") == 2 and (client_type, package_type) == ("module", "module")
    assert int(light) < 500 < 1000 < int(whole)
