"""Where the emulator is no kinder than a real API server (issue 38): what a real server refuses, keeps Pending or
shows, the emulator refuses, keeps Pending and shows too, through the real ``kubectl``; and a broken connection is
one line on its stderr, not a traceback."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from test_emulator_clients import kubectl, wait_for

from sktrace_emulator import Emulator
from sktrace_emulator.workload import Workload

pytestmark = [pytest.mark.timeout(90), pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")]

POD = """apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  EXTRA
  containers: [{name: app, image: busybox:1.36}]
"""


def create(kubeconfig: str, manifest: str) -> subprocess.CompletedProcess[str]:
    cache = str(Path(kubeconfig).parent / "kube-cache")
    return subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "--cache-dir", cache, "create", "-f", "-"], input=manifest,
                          capture_output=True, text=True, timeout=30)


def test_a_pod_whose_service_account_does_not_exist_is_refused(emulator: Emulator, emulator_kubeconfig: str) -> None:
    result = create(emulator_kubeconfig, POD.replace("EXTRA", "serviceAccountName: robot"))
    assert result.returncode == 1
    assert result.stderr == ('Error from server (Forbidden): error when creating "STDIN": pods "p" is forbidden: error looking up service '
                             'account default/robot: serviceaccount "robot" not found\n')
    kubectl(emulator_kubeconfig, "create", "serviceaccount", "robot")
    assert create(emulator_kubeconfig, POD.replace("EXTRA", "serviceAccountName: robot")).returncode == 0


def test_every_namespace_has_its_default_service_account(emulator: Emulator, emulator_kubeconfig: str) -> None:
    kubectl(emulator_kubeconfig, "create", "namespace", "shop")
    assert kubectl(emulator_kubeconfig, "get", "serviceaccounts", "-n", "shop", "-o", "name").stdout == "serviceaccount/default\n"
    assert create(emulator_kubeconfig, POD.replace("EXTRA", "restartPolicy: Always").replace("namespace: default", "namespace: shop")).returncode == 0


def test_a_missing_priority_class_is_refused_and_an_existing_one_gives_the_priority(emulator: Emulator, emulator_kubeconfig: str) -> None:
    result = create(emulator_kubeconfig, POD.replace("EXTRA", "priorityClassName: high"))
    assert (result.returncode, result.stderr) == (
        1, 'Error from server (Forbidden): error when creating "STDIN": pods "p" is forbidden: no PriorityClass with name high was found\n')
    kubectl(emulator_kubeconfig, "create", "priorityclass", "high", "--value=1000")
    assert kubectl(emulator_kubeconfig, "get", "priorityclasses", "-o", "name").stdout == "priorityclass.scheduling.k8s.io/high\n"
    assert create(emulator_kubeconfig, POD.replace("EXTRA", "priorityClassName: high")).returncode == 0
    assert json.loads(kubectl(emulator_kubeconfig, "get", "pod", "p", "-o", "json").stdout)["spec"]["priority"] == 1000


def test_services_are_served(emulator: Emulator, emulator_kubeconfig: str) -> None:
    kubectl(emulator_kubeconfig, "create", "service", "clusterip", "web", "--tcp=80:8080")
    service = json.loads(kubectl(emulator_kubeconfig, "get", "svc", "web", "-o", "json").stdout)
    assert service["spec"]["type"] == "ClusterIP" and service["spec"]["clusterIP"].startswith("10.96.")
    assert service["spec"]["ports"][0]["targetPort"] == 8080


def test_a_pod_whose_node_selector_matches_no_node_stays_pending(emulator: Emulator, emulator_kubeconfig: str) -> None:
    workload = Workload(emulator, start_delay=0.0).start()
    try:
        assert create(emulator_kubeconfig, POD.replace("EXTRA", "nodeSelector: {disk: ssd}")).returncode == 0
        assert create(emulator_kubeconfig, POD.replace("EXTRA", "nodeSelector: {kubernetes.io/os: linux}").replace("name: p", "name: q")).returncode == 0

        def pod(name: str) -> dict:
            return json.loads(kubectl(emulator_kubeconfig, "get", "pod", name, "-o", "json").stdout)

        wait_for(lambda: pod("q")["status"]["phase"] == "Running")
        wait_for(lambda: any(c.get("reason") == "Unschedulable" for c in pod("p")["status"].get("conditions", [])))
        unscheduled = pod("p")
        assert unscheduled["status"]["phase"] == "Pending" and "nodeName" not in unscheduled["spec"]
        assert unscheduled["status"]["conditions"][0]["message"] == "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    finally:
        workload.stop()


def test_a_namespace_is_deleted_through_terminating(emulator: Emulator, emulator_kubeconfig: str) -> None:
    """Terminating until the namespace controller (the workload's, its next step) has emptied it; no new content meanwhile."""
    kubectl(emulator_kubeconfig, "create", "namespace", "shop")
    kubectl(emulator_kubeconfig, "create", "configmap", "settings", "-n", "shop")
    workload = Workload(emulator, interval=3600.0).start()  # its steps are this test's to take
    try:
        assert kubectl(emulator_kubeconfig, "delete", "namespace", "shop", "--wait=false").stdout == 'namespace "shop" deleted\n'
        assert kubectl(emulator_kubeconfig, "get", "namespace", "shop", "--no-headers").stdout.split()[:2] == ["shop", "Terminating"]
        refused = kubectl(emulator_kubeconfig, "create", "configmap", "more", "-n", "shop", check=False)
        assert refused.returncode == 1 and refused.stderr.endswith(
            'configmaps "more" is forbidden: unable to create new content in namespace shop because it is being terminated\n')
        workload.step()
    finally:
        workload.stop()
    assert kubectl(emulator_kubeconfig, "get", "namespace", "shop", check=False).returncode == 1
    assert emulator.list("v1", "ConfigMap", "shop") == []


def test_kubectl_get_deployments_shows_ready_up_to_date_and_available(emulator: Emulator, emulator_kubeconfig: str) -> None:
    workload = Workload(emulator, start_delay=0.0).start()
    try:
        kubectl(emulator_kubeconfig, "create", "deployment", "web", "--image=nginx:1.25", "--replicas=2")

        def row() -> list[str]:
            return kubectl(emulator_kubeconfig, "get", "deploy").stdout.splitlines()[1].split()[:4]

        assert kubectl(emulator_kubeconfig, "get", "deploy").stdout.split("\n")[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
        wait_for(lambda: row() == ["web", "2/2", "2", "2"])
    finally:
        workload.stop()


@pytest.mark.slow
def test_a_broken_connection_is_one_line_on_stderr_not_a_traceback(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "emulator.kubeconfig"
    errors = tmp_path / "stderr"
    with errors.open("w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "kubectl_sktrace", "demo", "--serve", "--workload", "none", "--kubeconfig-out",
                                 str(kubeconfig)], stdout=subprocess.PIPE, stderr=sink, text=True)
    try:
        assert proc.stdout is not None
        for _ in range(4):
            proc.stdout.readline()
        deadline = time.monotonic() + 15
        while "kubeconfig written to" not in errors.read_text():
            assert time.monotonic() < deadline, errors.read_text()
            time.sleep(0.1)
        server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        host, port = server.removeprefix("https://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as plain:  # plain HTTP to the TLS port
            plain.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
            plain.recv(1024)
        insecure = ssl.create_default_context()
        with socket.create_connection((host, int(port)), timeout=10) as raw:  # a client that refuses the certificate
            with pytest.raises(ssl.SSLError):
                insecure.wrap_socket(raw, server_hostname=host)
        kubectl(str(kubeconfig), "get", "pods")  # ordinary use says nothing
        deadline = time.monotonic() + 15
        while errors.read_text().count("sktrace-emulator: a connection from") < 2:
            assert time.monotonic() < deadline, errors.read_text()
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        proc.kill()
        proc.wait()
    lines = [line for line in errors.read_text().splitlines() if "kubeconfig written to" not in line]
    assert "Traceback" not in errors.read_text()
    assert len(lines) == 2 and all(line.startswith(f"sktrace-emulator: a connection from 127.0.0.1:") for line in lines), lines
