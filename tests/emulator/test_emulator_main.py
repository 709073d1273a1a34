"""``python -m sktrace_emulator serve``: a standalone server that writes its own kubeconfig."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(30)


def test_serve_writes_kubeconfig_serves_and_stops_on_sigterm(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    proc = subprocess.Popen([sys.executable, "-m", "sktrace_emulator", "serve", "--kubeconfig-out", str(kubeconfig), "--workload", "demo"], stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("serving https://127.0.0.1:") and line.endswith(f"; kubeconfig written to {kubeconfig}\n")
        assert kubeconfig.stat().st_mode & 0o777 == 0o600
        from kubernetes import client, config

        api = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig), persist_config=False))
        deadline = time.monotonic() + 10
        while len(api.list_namespaced_pod("demo").items) < 6:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert json.loads(kubeconfig.read_text())["current-context"] == "emulator"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        proc.kill()
        proc.wait()


def test_serve_help_names_the_workloads() -> None:
    result = subprocess.run([sys.executable, "-m", "sktrace_emulator", "serve", "--help"], capture_output=True, text=True, check=True)
    assert "{none,demo,load,large,storm}" in result.stdout and "--kubeconfig-out FILE" in result.stdout


def test_sigusr2_takes_the_server_down_and_brings_it_back_with_the_same_state(tmp_path: Path) -> None:
    import socket

    kubeconfig = tmp_path / "kc"
    proc = subprocess.Popen([sys.executable, "-m", "sktrace_emulator", "serve", "--kubeconfig-out", str(kubeconfig), "--workload", "demo"],
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        port = int(proc.stderr.readline().split("127.0.0.1:")[1].split(";")[0])
        from kubernetes import client, config

        api = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig), persist_config=False))
        uid = api.read_namespace("kube-system").metadata.uid
        proc.send_signal(signal.SIGUSR2)
        assert proc.stderr.readline() == "outage: the API server is down (connection refused); SIGUSR2 brings it back\n"
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        proc.send_signal(signal.SIGUSR2)
        assert proc.stderr.readline() == f"outage over: serving https://127.0.0.1:{port} again\n"
        assert api.read_namespace("kube-system").metadata.uid == uid  # the same cluster, not a new one
        version = api.list_namespace().metadata.resource_version
        proc.send_signal(signal.SIGHUP)
        assert proc.stderr.readline() == "compacted: watch history before now is gone, every watch was cut\n"
        try:
            resp = api.list_namespace(watch=True, resource_version=str(int(version) - 1), timeout_seconds=1, _preload_content=False)
            first = json.loads(resp.data.splitlines()[0])
            assert first["type"] == "ERROR" and first["object"]["code"] == 410, first  # resuming from before is 410 Gone
        except client.ApiException as gone:
            assert gone.status == 410
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        proc.kill()
        proc.wait()


def test_workload_none_runs_the_controllers_for_what_kubectl_creates(tmp_path: Path) -> None:
    import shutil

    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not on PATH")
    kubeconfig = tmp_path / "kc"
    proc = subprocess.Popen([sys.executable, "-m", "sktrace_emulator", "serve", "--kubeconfig-out", str(kubeconfig), "--workload", "none"],
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None and proc.stderr.readline().startswith("serving https://127.0.0.1:")

        def kubectl(*args: str) -> str:
            result = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "kube-cache"), *args],
                                    capture_output=True, text=True, timeout=30)
            assert result.returncode == 0, result.stderr
            return result.stdout

        assert kubectl("get", "deployments", "-A") == ""  # nothing but what the user creates
        kubectl("create", "deployment", "web", "--image=nginx:1.25", "--replicas=2")
        deadline = time.monotonic() + 20  # the controllers create the pods, the kubelet starts them half a second later
        while (pods := kubectl("get", "pods", "--no-headers").splitlines()) and sum("Running" in p for p in pods) < 2 or not pods:
            assert time.monotonic() < deadline, kubectl("get", "all")
            time.sleep(0.1)
        assert len(pods) == 2 and all(p.startswith("web-") for p in pods)
        assert kubectl("get", "replicasets", "-o", "name").startswith("replicaset.apps/web-")
    finally:
        proc.kill()
        proc.wait()


def test_serve_help_describes_each_workload() -> None:
    result = subprocess.run([sys.executable, "-m", "sktrace_emulator", "serve", "--help"], capture_output=True, text=True, check=True)
    flat = " ".join(result.stdout.split())
    assert "none: an empty cluster whose controllers and kubelet act on what you create" in flat
    assert "demo (default):" in flat and "storm:" in flat


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
def test_serve_with_client_certificates_lets_in_only_its_certificate_and_names_its_user(tmp_path: Path) -> None:
    """``--client-certificates``: the kubeconfig's user is a certificate of the server's client CA (kubeadm's
    ``kubernetes-admin``); real kubectl gets in with it, and with the token alone the handshake is refused."""
    kubeconfig = tmp_path / "kc"
    proc = subprocess.Popen([sys.executable, "-m", "sktrace_emulator", "serve", "--kubeconfig-out", str(kubeconfig),
                             "--workload", "none", "--client-certificates", "--audit-log-path", str(tmp_path / "audit.log")],
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None and proc.stderr.readline().startswith("serving https://127.0.0.1:")
        doc = json.loads(kubeconfig.read_text())
        assert sorted(doc["users"][0]["user"]) == ["client-certificate-data", "client-key-data"]
        got = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "get", "namespace", "kube-system", "-o", "name"],
                             capture_output=True, text=True, timeout=20)
        assert (got.returncode, got.stdout) == (0, "namespace/kube-system\n"), got.stderr
        users = {json.loads(line)["user"]["username"] for line in (tmp_path / "audit.log").read_text().splitlines()}
        assert "kubernetes-admin" in users, users  # kubectl's requests, beside the controllers' own
        doc["users"][0]["user"] = {"token": "emulator-token"}
        (tmp_path / "token-only").write_text(json.dumps(doc))
        refused = subprocess.run(["kubectl", "--kubeconfig", str(tmp_path / "token-only"), "get", "namespaces"],
                                 capture_output=True, text=True, timeout=20)
        assert refused.returncode != 0 and "tls: handshake failure" in refused.stderr, refused.stderr
    finally:
        proc.kill()
        proc.wait()
