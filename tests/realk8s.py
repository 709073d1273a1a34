"""A real Kubernetes control plane for the tests: ``../shared/realk8s`` beside the checkout.

A real kube-apiserver and kube-controller-manager v1.28.0, etcd, and a fake kubelet that binds pods to one node
and runs them (its README says what it does and does not do). The emulator of §11 is kinder than a real server
in ways that broke the product before (APF throttling a GET, a pod's DELETE answered with the Pod, framing,
quiet watches, RBAC); the tests of the real tier (``@pytest.mark.real``) run the product against this one.

One control plane serves every test of a run: the first worker that needs it starts it under a file lock in a
directory the run's controller made (``SKTRACE_REAL_SHARED``), the others reuse it, and the controller stops it
at the end of the session, by the PIDs its scripts recorded, and checks that no process and no port is left.
Tests isolate themselves by namespace (and by identity, where a test limits one). A test that stops the server
(an outage) makes a private control plane of its own, stopped and checked in the same way.

Where ``../shared/realk8s`` is absent (a user's clone) or etcd is not installed, the tier skips with one line.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    from reliability_support import Recorder

KIT = Path(__file__).resolve().parents[1].parent / "shared" / "realk8s"
SHARED_ENV = "SKTRACE_REAL_SHARED"
COMPONENTS = ("fake-kubelet", "kube-controller-manager", "kube-apiserver", "etcd")

AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  verbs: [get, list, watch]
- level: RequestResponse
"""
"""Every write with its bodies, as `backfill` asks of a log; reads left out, as most clusters' policies do."""


def unavailable() -> str | None:
    """Why the real tier cannot run on this machine, in one line; None when it can."""
    if os.environ.get("SKTRACE_REALK8S") == "0":
        return "the real tier is turned off (SKTRACE_REALK8S=0)"
    if not (kit() / "new.sh").exists():
        return f"the real tier needs {kit()} (a real kube-apiserver v1.28 beside the checkout as ../shared/realk8s); skipped"
    missing = [tool for tool in ("etcd", "openssl", "curl", "kubectl", "xz") if shutil.which(tool) is None and not Path(f"/usr/bin/{tool}").exists()]
    if missing:
        return f"the real tier needs {', '.join(missing)} on PATH (apt-get install etcd-server; .ci/run does); skipped"
    return None


def kit() -> Path:
    return Path(os.environ.get("SKTRACE_REALK8S_KIT", str(KIT)))


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    status = Path(f"/proc/{pid}/stat")
    try:  # a zombie has ended: only its parent's wait is missing
        return status.read_text().split(") ", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@dataclass(frozen=True)
class ControlPlane:
    """One control plane directory made by ``new.sh``: its scripts, keys, ports, logs and PIDs."""

    root: Path

    @classmethod
    def create(cls, root: Path) -> ControlPlane:
        subprocess.run([str(kit() / "new.sh"), str(root)], check=True, capture_output=True, timeout=300)
        (root / "audit-policy.yaml").write_text(AUDIT_POLICY)
        return cls(root)

    # --- where things are

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def audit_log(self) -> Path:
        return self.root / "logs" / "audit.log"

    @property
    def ports(self) -> dict[str, int]:
        lines = (self.root / "config.env").read_text().split()
        return {name: int(value) for name, _, value in (line.partition("=") for line in lines)}

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['APISERVER_PORT']}"

    @property
    def ca(self) -> Path:
        return self.root / "pki" / "ca.crt"

    @property
    def admin_token(self) -> str:
        return (self.root / "pki" / "admin.token").read_text().strip()

    def pid(self, component: str) -> int | None:
        path = self.root / "run" / f"{component}.pid"
        try:
            return int(path.read_text().strip())
        except (OSError, ValueError):
            return None

    # --- up and down

    def up(self, **env: str) -> None:
        """Start every part (idempotent), the audit log on; ``env`` sets ``up.sh``'s knobs (``FAKE_JOB_SECONDS``, ...)."""
        full = {**os.environ, "AUDIT_POLICY": str(self.root / "audit-policy.yaml"), "FAKE_JOB_SECONDS": "3", **env}
        done = subprocess.run([str(self.root / "up.sh")], env=full, capture_output=True, text=True, timeout=180)
        if done.returncode != 0:
            raise RuntimeError(f"the real control plane in {self.root} did not come up:\n{done.stdout}\n{done.stderr}")
        if env.get("KCM", "1") != "0":
            self._settle()

    def _settle(self, timeout: float = 60) -> None:
        """Until the controller manager has done what a cluster of users has long had done: the aggregated
        ClusterRoles filled (``view`` is empty on a new control plane until its controller runs, and a RoleBinding to it
        grants nothing), the ``default`` service account made."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            view = self.kubectl("get", "clusterrole", "view", "-o", "json", check=False)
            account = self.kubectl("-n", "default", "get", "serviceaccount", "default", check=False)
            if view.returncode == 0 and json.loads(view.stdout).get("rules") and account.returncode == 0:
                return
            time.sleep(0.2)
        raise RuntimeError(f"the real control plane in {self.root} did not settle within {timeout:.0f} s")

    def healthy(self) -> bool:
        return subprocess.run([str(self.root / "status.sh")], capture_output=True, timeout=60).returncode == 0

    def down(self) -> list[str]:
        """Stop every part by its PID and say what is left behind (a process alive, a port still listening): []."""
        pids = {name: pid for name in COMPONENTS if (pid := self.pid(name)) is not None}
        subprocess.run([str(self.root / "down.sh")], capture_output=True, timeout=180)
        left = [f"{name} (pid {pid}) still running" for name, pid in pids.items() if _alive(pid)]
        for name, pid in pids.items():
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        listening = dict(self.ports)
        while listening and time.monotonic() < deadline:
            listening = {name: port for name, port in listening.items() if _port_open(port)}
            if listening:
                time.sleep(0.2)
        left += [f"port {port} ({name}) still listening" for name, port in listening.items()]
        return left

    # --- using it

    def kubectl(self, *args: str, input: str | None = None, check: bool = True, kubeconfig: Path | None = None,
                timeout: float = 60) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KUBECONFIG": str(kubeconfig or self.kubeconfig)}
        done = subprocess.run(["kubectl", *args], input=input, env=env, capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}")
        return done

    def apply(self, manifest: dict[str, Any] | str) -> None:
        text = manifest if isinstance(manifest, str) else json.dumps(manifest)
        self.kubectl("apply", "-f", "-", input=text)

    def get_json(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def namespace(self, prefix: str) -> str:
        name = f"{prefix[:40].rstrip('-')}-{uuid.uuid4().hex[:6]}"
        self.kubectl("create", "namespace", name)
        return name

    def kubeconfig_for(self, path: Path, *, token: str) -> Path:
        """A kubeconfig for this server as another identity (a bearer token), 0600 as kubectl writes them."""
        text = self.kubeconfig.read_text().replace(self.admin_token, token).replace("admin@realk8s", "other@realk8s")
        path.write_text(text)
        path.chmod(0o600)
        return path

    def token_of(self, namespace: str, serviceaccount: str) -> str:
        return self.kubectl("-n", namespace, "create", "token", serviceaccount, "--duration", "1h").stdout.strip()

    def audit_lines(self, *, namespace: str | None = None) -> list[dict[str, Any]]:
        """The audit log's lines (all files, rotated ones first), those of one namespace when given."""
        files = sorted(self.audit_log.parent.glob("audit-*.log")) + ([self.audit_log] if self.audit_log.exists() else [])
        lines = []
        for path in files:
            for text in path.read_text().splitlines():
                if not text.strip():
                    continue
                line = json.loads(text)
                if namespace is None or (line.get("objectRef") or {}).get("namespace") == namespace:
                    lines.append(line)
        return lines


def tight_priority_level(plane: ControlPlane, name: str, user: str) -> None:
    """A PriorityLevelConfiguration of the least share a level can have, rejecting (no queue) what exceeds it, and a
    FlowSchema that puts ``user`` there before every default schema: the identity of a busy, fairly shared server."""
    plane.apply({"apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3", "kind": "PriorityLevelConfiguration",
                 "metadata": {"name": name},
                 "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "lendablePercent": 0, "borrowingLimitPercent": 0,
                                                         "limitResponse": {"type": "Reject"}}}})
    namespace, account = user.split(":")[2:]
    plane.apply({"apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3", "kind": "FlowSchema", "metadata": {"name": name},
                 "spec": {"priorityLevelConfiguration": {"name": name}, "matchingPrecedence": 100,
                          "distinguisherMethod": {"type": "ByUser"},
                          "rules": [{"subjects": [{"kind": "ServiceAccount", "serviceAccount": {"namespace": namespace, "name": account}}],
                                     "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": True,
                                                        "namespaces": ["*"]}],
                                     "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}})


# --- one control plane per run, shared by its workers --------------------------------------------------------


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def shared(base: Path) -> ControlPlane:
    """The run's control plane: made and started by the first worker that asks, healthy for every later one."""
    with _locked(base / "lock"):
        root = base / "cp"
        plane = ControlPlane(root) if (root / "config.env").exists() else ControlPlane.create(root)
        if not plane.healthy():
            plane.up()
        return plane


def tear_down_shared(base: Path) -> list[str]:
    """Stop the run's control plane if a worker started one, and say what is left behind; the directory removed."""
    left: list[str] = []
    if (base / "cp" / "config.env").exists():
        left = ControlPlane(base / "cp").down()
    if not left:
        shutil.rmtree(base, ignore_errors=True)
    return left


# --- the recorder on it ---------------------------------------------------------------------------------------

CONFIG = """\
trackedObjects:
  apps/v1.Deployment:
    podSpecTemplatePaths: [/spec/template]
    trackLifecycle: true
  v1.ConfigMap: {}
"""
DEPLOY, CONFIGMAP = "apps/v1.Deployment", "v1.ConfigMap"


def deployment(namespace: str, name: str, *, replicas: int = 1, image: str = "nginx:1.25") -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "main", "image": image}]}}},
    }


def configmap(namespace: str, name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}


def versions(cache: Path, gvk: str, namespace: str, name: str) -> list[int]:
    """The ops of one object's rows, in recorded order."""
    from reliability_support import query

    return [row[0] for row in query(cache, "SELECT op FROM events WHERE gvk = ? AND namespace = ? AND name = ? ORDER BY id",
                                    gvk, namespace, name)]


def wait_for_op(cache: Path, gvk: str, namespace: str, name: str, op: int, *, count: int = 1, timeout: float = 60) -> None:
    """Until the recorder committed ``count`` rows of ``op`` for one object (it commits within its cadence)."""
    from reliability_support import wait_rows

    wait_rows(cache, "SELECT 1 FROM events WHERE gvk = ? AND namespace = ? AND name = ? AND op = ? "
                     "GROUP BY gvk HAVING count(*) >= ?", gvk, namespace, name, op, count, timeout=timeout)


def start_recorder(plane: ControlPlane, cache: Path, home: Path, tmp_path: Path, *args: str) -> Recorder:
    """``kubectl sktrace start`` of ``CONFIG`` on this control plane, once it records changes."""
    from reliability_support import Recorder

    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    recorder = Recorder(kubeconfig=plane.kubeconfig, cache=cache, home=home, log=tmp_path / "recorder.log",
                        args=["--config", str(config), "--duration", "200", *args])
    assert recorder.wait_for("recording changes", timeout=90), recorder.output()
    return recorder


