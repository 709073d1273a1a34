"""The recorder as a Deployment runs it: inside a pod, with the pod's service account and no kubeconfig.

The real CLI in a subprocess, as a container runs it (no terminal, no ``--duration``, stopped by SIGTERM),
against the emulator; the pod's service-account mount is laid out in a temporary directory that
``SKTRACE_SERVICE_ACCOUNT_DIR`` names, with ``KUBERNETES_SERVICE_HOST``/``PORT`` set as the kubelet sets them.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from sktrace_emulator import Emulator

pytestmark = pytest.mark.timeout(90)


def pod_env(emu: Emulator, tmp_path: Path) -> dict[str, str]:
    """A pod's environment: the service variables, the mount, a HOME without a kubeconfig."""
    mount = tmp_path / "serviceaccount"
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "XDG_STATE_HOME")}
    env.update(emu.write_service_account(mount, namespace="sktrace"))
    env.update(HOME=str(tmp_path / "home"), SKTRACE_SERVICE_ACCOUNT_DIR=str(mount))
    return env


def deployment(emu: Emulator, name: str) -> None:
    labels = {"app": name}
    emu.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
                "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                         "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})


def wait(what: str, check: Any, seconds: float = 30) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"waited {seconds} s for {what}")


def probe(port: int, path: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
    except OSError:
        return 0, {}


def recorded(cache: Path, name: str) -> bool:
    try:
        conn = sqlite3.connect(f"file:{cache}?mode=ro", uri=True)
        try:
            return bool(conn.execute("SELECT 1 FROM events WHERE name = ? AND op = 0", (name,)).fetchall())
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return False


@pytest.fixture
def recorder(emulator: Emulator, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path, Path, Path, dict[str, str]]]:
    env = pod_env(emulator, tmp_path)
    cache, out, err = tmp_path / "data" / "cache.db", tmp_path / "stdout", tmp_path / "stderr"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "kubectl_sktrace", "start", "--cache", str(cache), "--health-port", "0"],
                                stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, env=env)
    try:
        yield proc, cache, out, err, env
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_pod_records_with_its_service_account_through_a_token_rotation_and_stops_on_sigterm(
        emulator: Emulator, recorder: tuple[subprocess.Popen[bytes], Path, Path, Path, dict[str, str]], tmp_path: Path) -> None:
    proc, cache, out, err, env = recorder
    deployment(emulator, "before")
    health = wait("the health line", lambda: re.search(r"Health, on every interface: http://127.0.0.1:(\d+)/healthz", err.read_text()))
    port = int(health.group(1))
    wait("readiness", lambda: probe(port, "/readyz")[0] == 200)
    assert probe(port, "/healthz")[0] == 200
    wait("the first deployment", lambda: recorded(cache, "before"))

    status = subprocess.run([sys.executable, "-m", "kubectl_sktrace", "status", "--cache", str(cache)], env=env,
                            capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    assert "context          in-cluster\n" in status.stdout
    assert re.search(r"running \(heartbeat \ds ago\)", status.stdout), status.stdout

    rejected = emulator.unauthorized
    emulator.rotate_token(tmp_path / "serviceaccount", "rotated-token")  # the old token expires with it
    emulator.drop_watches()  # every watch reconnects, with the token now in the file
    deployment(emulator, "after")
    wait("the deployment made after the rotation", lambda: recorded(cache, "after"))
    assert emulator.unauthorized == rejected  # the new token was read before any request was refused
    wait("readiness after the reconnect", lambda: probe(port, "/readyz")[0] == 200)

    asked = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    assert time.monotonic() - asked < 10  # well within a pod's 30 s grace period
    stdout, stderr = out.read_text(), err.read_text()
    assert stdout.startswith("Recorded ") and "apps/v1.Deployment" in stdout
    assert "\r" not in stderr and "\x1b" not in stderr  # a container log: plain lines, no redraws
    assert "Synced" in stderr or "synced" in stderr
    conn = sqlite3.connect(f"file:{cache}?mode=ro", uri=True)
    try:
        assert conn.execute("SELECT clean, synced IS NOT NULL FROM runs").fetchall() == [(1, 1)]
        assert conn.execute("SELECT value FROM meta WHERE key = 'cluster.context'").fetchall() == [("in-cluster",)]
    finally:
        conn.close()


def test_an_api_outage_makes_the_recorder_unready_but_not_dead(
        emulator: Emulator, recorder: tuple[subprocess.Popen[bytes], Path, Path, Path, dict[str, str]]) -> None:
    proc, _, _, err, _ = recorder
    health = wait("the health line", lambda: re.search(r"Health, on every interface: http://127.0.0.1:(\d+)/healthz", err.read_text()))
    port = int(health.group(1))
    wait("readiness", lambda: probe(port, "/readyz")[0] == 200)
    emulator.stop()  # the control plane goes away: connections refused, watches cut
    status, body = wait("unreadiness", lambda: (lambda got: got if got[0] == 503 else None)(probe(port, "/readyz")))
    assert body["status"].startswith("outage: ") and body["live"], body
    assert probe(port, "/healthz")[0] == 200  # still committing: a restart would not help
    emulator.start()
    wait("readiness after the outage", lambda: probe(port, "/readyz")[0] == 200, seconds=60)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0


def test_a_pod_without_its_token_is_told_how_to_mount_it(emulator: Emulator, tmp_path: Path) -> None:
    env = pod_env(emulator, tmp_path)
    (tmp_path / "serviceaccount" / "token").unlink()
    done = subprocess.run([sys.executable, "-m", "kubectl_sktrace", "start", "--cache", str(tmp_path / "c.db")], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == (f"Error: cannot read the pod's service-account token {tmp_path}/serviceaccount/token: No such file or "
                           "directory; mount the service account's token (automountServiceAccountToken: true), or pass "
                           "--kubeconfig FILE\n")


def test_a_pod_granted_one_namespace_is_told_to_record_it_then_records_it(emulator: Emulator, tmp_path: Path) -> None:
    """The namespaced install: a Role in the pod's namespace (``rbac -n sktrace``), read from the mount's ``namespace``
    file when every list across the cluster is refused, then ``start -n sktrace`` as deploy/README.md says."""
    env = pod_env(emulator, tmp_path)
    printed = subprocess.run([sys.executable, "-m", "kubectl_sktrace", "rbac", "-n", "sktrace"], env=env, capture_output=True,
                             text=True, timeout=60)
    role = next(doc for doc in yaml.safe_load_all(printed.stdout) if doc and doc["kind"] == "Role")
    emulator.grant_rules(role["rules"], namespace="sktrace", user="system:serviceaccount:sktrace:sktrace")
    cache = str(tmp_path / "c.db")

    refused = subprocess.run([sys.executable, "-m", "kubectl_sktrace", "start", "--cache", cache, "--duration", "10s"], env=env,
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1
    assert refused.stderr.splitlines()[-1].startswith(
        "Error: forbidden to list and watch every tracked kind at the cluster scope; you may only have access to namespace "
        "'sktrace': record it with -n sktrace, or grant get, list and watch on deployments.apps, statefulsets.apps, jobs.batch, "
        "cronjobs.batch, and list and watch on pods: 'kubectl sktrace rbac --service-account sktrace:sktrace [--config FILE]' prints the ClusterRole"), refused.stderr

    recorded = subprocess.run([sys.executable, "-m", "kubectl_sktrace", "start", "--cache", cache, "-n", "sktrace", "--duration", "1s"],
                              env=env, capture_output=True, text=True, timeout=60)
    assert recorded.returncode == 0 and "Warning" not in recorded.stderr, recorded.stderr
