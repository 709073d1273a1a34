"""deploy/: the example manifests agree with each other, with ``kubectl sktrace rbac`` and with the CLI, and the
real kubectl applies them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_sktrace.cli import cli
from sktrace_emulator import Emulator

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
MANIFESTS = ("namespace.yaml", "serviceaccount.yaml", "rbac.yaml", "secret.example.yaml", "deployment.yaml")


def load(name: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((DEPLOY / name).read_text()) if doc is not None]


def one(name: str) -> dict[str, Any]:
    (doc,) = load(name)
    return doc


def test_each_file_holds_the_kinds_it_is_named_for() -> None:
    assert [(d["apiVersion"], d["kind"]) for name in MANIFESTS for d in load(name)] == [
        ("v1", "Namespace"), ("v1", "ServiceAccount"), ("rbac.authorization.k8s.io/v1", "ClusterRole"),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), ("v1", "Secret"), ("apps/v1", "Deployment")]


def test_rbac_yaml_is_what_the_rbac_command_prints_for_the_default_config() -> None:
    result = CliRunner().invoke(cli, ["rbac"], env={"KUBECONFIG": None, "KUBERNETES_SERVICE_HOST": None})
    assert result.exit_code == 0, result.output
    assert (DEPLOY / "rbac.yaml").read_text() == result.output


def test_names_match_across_the_files() -> None:
    namespace = one("namespace.yaml")["metadata"]["name"]
    account = one("serviceaccount.yaml")
    _, binding = load("rbac.yaml")
    secret, deployment = one("secret.example.yaml"), one("deployment.yaml")
    assert {account["metadata"]["namespace"], secret["metadata"]["namespace"], deployment["metadata"]["namespace"]} == {namespace}
    pod = deployment["spec"]["template"]["spec"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": pod["serviceAccountName"], "namespace": namespace}]
    assert account["metadata"]["name"] == pod["serviceAccountName"]
    (container,) = pod["containers"]
    (cache,) = [e for e in container["env"] if e["name"] == "SKTRACE_CACHE"]
    ref = cache["valueFrom"]["secretKeyRef"]
    assert ref["name"] == secret["metadata"]["name"] and ref["key"] in secret["stringData"]


def test_the_deployment_runs_one_recorder_that_its_probes_can_reach() -> None:
    deployment = one("deployment.yaml")
    spec = deployment["spec"]
    assert (spec["replicas"], spec["strategy"]) == (1, {"type": "Recreate"})  # two recorders never overlap
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    (container,) = spec["template"]["spec"]["containers"]
    args = container["args"]
    assert args[0] == "start" and "--duration" not in args and "--cache" not in args  # runs until stopped; the cache from env
    cli.commands["start"].make_context("start", list(args[1:]))  # the CLI accepts them
    assert args[args.index("--retain") + 1] == "30d"  # a recorder that runs for weeks prunes as it goes
    port = int(args[args.index("--health-port") + 1])
    (named,) = container["ports"]
    assert named == {"name": "health", "containerPort": port}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert spec["template"]["metadata"]["annotations"] == {"prometheus.io/scrape": "true", "prometheus.io/port": str(port),
                                                           "prometheus.io/path": "/metrics"}
    assert spec["template"]["spec"]["terminationGracePeriodSeconds"] >= 30


def test_the_image_runs_the_console_script_as_the_deployment_expects() -> None:
    lines = (DEPLOY / "Dockerfile").read_text().splitlines()
    assert any(line.startswith("FROM python:") and line.endswith("-slim") for line in lines)
    assert any("pip install" in line and "kubectl-sktrace[postgres]" in line for line in lines)
    assert 'ENTRYPOINT ["kubectl-sktrace"]' in lines
    user = next(line.split()[1] for line in lines if line.startswith("USER "))
    pod = one("deployment.yaml")["spec"]["template"]["spec"]
    assert user == f"{pod['securityContext']['runAsUser']}:{pod['securityContext']['runAsGroup']}"


def test_kubectl_applies_every_manifest(emulator: Emulator, emulator_kubeconfig: str, tmp_path: Path) -> None:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not on PATH")
    args = [arg for name in MANIFESTS for arg in ("-f", str(DEPLOY / name))]
    done = subprocess.run(["kubectl", "--kubeconfig", emulator_kubeconfig, "--cache-dir", str(tmp_path / "kubectl-cache"), "apply",
                           *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "namespace/sktrace created", "serviceaccount/sktrace created",
        "clusterrole.rbac.authorization.k8s.io/sktrace-recorder created",
        "clusterrolebinding.rbac.authorization.k8s.io/sktrace-recorder:serviceaccount:sktrace:sktrace created",
        "secret/sktrace-cache created", "deployment.apps/sktrace-recorder created"]
    assert emulator.get("apps/v1", "Deployment", "sktrace", "sktrace-recorder") is not None


def test_the_image_is_the_package_version() -> None:
    from kubectl_sktrace import __version__

    (container,) = one("deployment.yaml")["spec"]["template"]["spec"]["containers"]
    assert container["image"] == f"kubectl-sktrace:{__version__}"
    assert f"ARG SKTRACE_VERSION={__version__}\n" in (DEPLOY / "Dockerfile").read_text()
