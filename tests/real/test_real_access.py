"""What a real kube-apiserver v1.28 allows and refuses (the real tier): an identity that RBAC limits to one
namespace, and one that API Priority and Fairness throttles. The emulator models both; these run them for real.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
from pathlib import Path

import pytest

from kubectl_sktrace.store.versions import APPLIED, DELETED
from realk8s import CONFIG, ControlPlane, DEPLOY, deployment, tight_priority_level, versions, wait_for_op
from reliability_support import Recorder, query, run_cli

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


class Saturation:
    """Threads listing many objects as ``token``, back to back: the identity's level is kept full while they run."""

    def __init__(self, plane: ControlPlane, token: str, path: str, *, threads: int = 8) -> None:
        self.plane, self.token, self.path = plane, token, path
        self.rejected = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(threads)]

    def __enter__(self) -> Saturation:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def _run(self) -> None:
        context = ssl.create_default_context(cafile=str(self.plane.ca))
        context.check_hostname = False
        while not self._stop.is_set():
            conn = http.client.HTTPSConnection("127.0.0.1", self.plane.ports["APISERVER_PORT"], context=context, timeout=30)
            try:
                while not self._stop.is_set():
                    conn.request("GET", self.path, headers={"Authorization": f"Bearer {self.token}"})
                    answer = conn.getresponse()
                    answer.read()
                    if answer.status == 429:
                        self.rejected += 1
            except OSError:
                pass
            finally:
                conn.close()


def throttled(said: str) -> bool:
    """What the recorder says when the server throttles it: while it starts (discovery), or a kind's requests."""
    return "is throttling us (429)" in said or "throttled by the API server since" in said


def test_a_recorder_throttled_by_priority_and_fairness_finishes_its_sync_and_records_on(real_cluster: ControlPlane, tmp_path: Path) -> None:
    plane, home = real_cluster, tmp_path / "home"
    home.mkdir()
    ns = plane.namespace("apf")
    many = {"apiVersion": "v1", "kind": "List",  # lists of many objects cost many seats: a tight level rejects them
            "items": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "namespace": ns}, "data": {"k": "v" * 200}}
                      for i in range(400)]}
    plane.apply(json.dumps(many))
    plane.kubectl("-n", ns, "create", "serviceaccount", "recorder")
    plane.kubectl("create", "clusterrolebinding", f"{ns}-view", "--clusterrole=view", f"--serviceaccount={ns}:recorder")
    name = f"{ns}-tight"
    tight_priority_level(plane, name, f"system:serviceaccount:{ns}:recorder")
    token = plane.token_of(ns, "recorder")
    kubeconfig = plane.kubeconfig_for(tmp_path / "recorder.kubeconfig", token=token)
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    cache = tmp_path / "cache.db"
    try:
        with Saturation(plane, token, f"/api/v1/namespaces/{ns}/configmaps") as load:
            deadline = time.monotonic() + 30
            while not load.rejected and time.monotonic() < deadline:
                time.sleep(0.1)
            assert load.rejected, "the tight level rejected nothing: the test would test nothing"
            recorder = Recorder(kubeconfig=kubeconfig, cache=cache, home=home, log=tmp_path / "recorder.log",
                                args=["--config", str(config), "--duration", "150"])
            # the level stays full until the recorder has met it (the load ends then: a level full for good starves
            # every client of the identity, kubectl too; what is asked is that throttled requests are retried through)
            deadline = time.monotonic() + 90
            while not throttled(recorder.output()) and recorder.proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert throttled(recorder.output()), recorder.output()
        try:
            assert recorder.wait_for("recording changes", timeout=120), recorder.output()
            plane.apply(deployment(ns, "web"))
            wait_for_op(cache, DEPLOY, ns, "web", APPLIED, timeout=90)
        finally:
            assert recorder.stop() == 0, recorder.output()
    finally:
        plane.kubectl("delete", "flowschema", name, "--ignore-not-found")
        plane.kubectl("delete", "prioritylevelconfiguration", name, "--ignore-not-found")
        plane.kubectl("delete", "clusterrolebinding", f"{ns}-view", "--ignore-not-found")
    said = recorder.output()
    assert throttled(said), said  # the server did throttle the recorder itself
    assert "API unreachable" not in said and "Traceback" not in said, said
    assert query(cache, "SELECT count(*) FROM events WHERE gvk = 'v1.ConfigMap' AND namespace = ? AND name LIKE 'cm-%'", ns) == [(400,)]
