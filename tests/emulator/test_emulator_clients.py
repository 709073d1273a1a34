"""The emulator judged by unmodified clients: the real ``kubectl`` binary and the ``kubernetes`` package."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from sktrace_emulator import Emulator
from sktrace_emulator.workload import Workload

pytestmark = pytest.mark.timeout(60)

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")


def make_pod(name: str, namespace: str = "default") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}


def kubectl(kubeconfig: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    cache = str(Path(kubeconfig).parent / "kube-cache")
    result = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "--cache-dir", cache, *args], capture_output=True, text=True, timeout=30)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def wait_for(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


# kubectl


@needs_kubectl
def test_kubectl_get_pods_all_namespaces(emulator: Emulator, emulator_kubeconfig: str) -> None:
    emulator.create(make_pod("alpha", "x"))
    emulator.create(make_pod("beta", "y"))
    lines = kubectl(emulator_kubeconfig, "get", "pods", "-A").stdout.splitlines()
    assert lines[0].split() == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert [line.split()[:4] for line in lines[1:]] == [["x", "alpha", "0/1", "Pending"], ["y", "beta", "0/1", "Pending"]]


@needs_kubectl
def test_kubectl_get_deploy_json_and_chunked_pods(emulator: Emulator, emulator_kubeconfig: str) -> None:
    emulator.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "x"}, "spec": {"replicas": 2}})
    doc = json.loads(kubectl(emulator_kubeconfig, "get", "deploy", "-n", "x", "-o", "json").stdout)
    assert [(i["kind"], i["metadata"]["name"], i["spec"]["replicas"]) for i in doc["items"]] == [("Deployment", "web", 2)]
    for i in range(5):
        emulator.create(make_pod(f"p{i}"))
    result = kubectl(emulator_kubeconfig, "get", "pods", "--chunk-size=2", "-o", "name", "-v=6")
    assert result.stdout.split() == [f"pod/p{i}" for i in range(5)]
    pages = [line for line in result.stderr.splitlines() if "/api/v1/namespaces/default/pods?" in line]
    assert len(pages) == 3 and sum("continue=" in line for line in pages) == 2


@needs_kubectl
def test_kubectl_watch_json_receives_live_events(emulator: Emulator, emulator_kubeconfig: str) -> None:
    emulator.create(make_pod("before"))
    cache = str(Path(emulator_kubeconfig).parent / "kube-cache")
    proc = subprocess.Popen(["kubectl", "--kubeconfig", emulator_kubeconfig, "--cache-dir", cache, "get", "pods", "-A", "--watch", "-o", "json"], stdout=subprocess.PIPE, text=True)
    try:
        decoder, buffer, seen = json.JSONDecoder(), "", []

        def read_object() -> dict:
            nonlocal buffer
            while True:
                text = buffer.lstrip()
                if text:
                    try:
                        obj, end = decoder.raw_decode(text)
                        buffer = text[end:]
                        return obj
                    except ValueError:
                        pass
                assert proc.stdout is not None
                line = proc.stdout.readline()
                assert line, "kubectl ended"
                buffer += line

        seen.append(read_object())
        emulator.create(make_pod("during"))
        emulator.patch("v1", "Pod", "default", "during", {"metadata": {"labels": {"step": "2"}}})
        seen.append(read_object())
        seen.append(read_object())
    finally:
        proc.kill()
        proc.wait()
    assert [o["metadata"]["name"] for o in seen] == ["before", "during", "during"]
    assert seen[2]["metadata"]["labels"] == {"step": "2"}


@needs_kubectl
def test_kubectl_create_and_delete_deployment_with_controllers(emulator: Emulator, emulator_kubeconfig: str, tmp_path: Path) -> None:
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\n"
        "spec:\n  replicas: 3\n  selector: {matchLabels: {app: web}}\n"
        "  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: 'nginx:1.25'}]}\n"
    )
    with Workload(emulator, seed=1, start_delay=0.0, interval=0.02):
        assert kubectl(emulator_kubeconfig, "create", "-f", str(manifest)).stdout == "deployment.apps/web created\n"
        wait_for(lambda: sum(p["status"]["phase"] == "Running" for p in emulator.list("v1", "Pod", "shop")) == 3)
        pods = emulator.list("v1", "Pod", "shop")
        rs = emulator.list("apps/v1", "ReplicaSet", "shop")
        assert len(rs) == 1 and all(p["metadata"]["ownerReferences"][0]["uid"] == rs[0]["metadata"]["uid"] for p in pods)
        assert kubectl(emulator_kubeconfig, "delete", "deployment", "-n", "shop", "web").stdout == 'deployment.apps "web" deleted\n'
        wait_for(lambda: not emulator.list("v1", "Pod", "shop") and not emulator.list("apps/v1", "ReplicaSet", "shop"))
    assert kubectl(emulator_kubeconfig, "get", "pods", "-n", "shop").stderr == "No resources found in shop namespace.\n"


# the kubernetes Python client


@pytest.fixture
def core_api(emulator_kubeconfig: str) -> Any:
    from kubernetes import client, config

    api_client = config.new_client_from_config(config_file=emulator_kubeconfig, persist_config=False)
    yield client.CoreV1Api(api_client)
    api_client.close()


def test_python_client_lists_with_pagination(emulator: Emulator, core_api: Any) -> None:
    for i in range(5):
        emulator.create(make_pod(f"p{i}", "x"))
    first = core_api.list_pod_for_all_namespaces(limit=3)
    assert [p.metadata.name for p in first.items] == ["p0", "p1", "p2"] and first.metadata._continue
    rest = core_api.list_pod_for_all_namespaces(limit=3, _continue=first.metadata._continue)
    assert [p.metadata.name for p in rest.items] == ["p3", "p4"] and rest.metadata.resource_version == first.metadata.resource_version
    assert core_api.read_namespace("kube-system").metadata.uid == emulator.cluster_uid


def test_python_client_watches_and_hits_410(emulator: Emulator, core_api: Any) -> None:
    from kubernetes import watch
    from kubernetes.client.exceptions import ApiException

    start = emulator.resource_version
    emulator.create(make_pod("a"))
    emulator.delete("v1", "Pod", "default", "a")
    stream = watch.Watch().stream(core_api.list_namespaced_pod, "default", resource_version=start, timeout_seconds=1)
    # a pod's delete first writes its deletionTimestamp (grace 0: it was never bound), then removes it
    assert [(e["type"], e["object"].metadata.name) for e in stream] == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    emulator.compact()
    with pytest.raises(ApiException) as exc:
        list(watch.Watch().stream(core_api.list_namespaced_pod, "default", resource_version=start, timeout_seconds=1))
    assert exc.value.status == 410


def test_python_client_raw_watch_stream(emulator: Emulator, core_api: Any) -> None:
    resp = core_api.list_pod_for_all_namespaces(watch=True, resource_version=emulator.resource_version, allow_watch_bookmarks=True, _preload_content=False)
    emulator.create(make_pod("raw"))
    lines = resp.stream(amt=None)
    first = json.loads(next(iter(_lines(lines))))
    assert first["type"] == "ADDED" and first["object"]["metadata"]["name"] == "raw"
    resp.release_conn()


def _lines(chunks: Any) -> Any:
    buffer = b""
    for chunk in chunks:
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield line


@needs_kubectl
def test_kubectl_scale_writes_the_scale_subresource_and_the_controllers_follow(emulator: Emulator, emulator_kubeconfig: str) -> None:
    with Workload(emulator, seed=3):
        kubectl(emulator_kubeconfig, "create", "deployment", "web", "--image=nginx:1.25", "--replicas=1", "-n", "shop")
        result = kubectl(emulator_kubeconfig, "scale", "deployment", "web", "--replicas=3", "-n", "shop")
        assert result.stdout == "deployment.apps/web scaled\n"
        pods = lambda: kubectl(emulator_kubeconfig, "get", "pods", "-n", "shop", "-o", "name").stdout.split()  # noqa: E731
        wait_for(lambda: len(pods()) == 3)
        scale = json.loads(kubectl(emulator_kubeconfig, "get", "--raw", "/apis/apps/v1/namespaces/shop/deployments/web/scale").stdout)
        assert (scale["kind"], scale["apiVersion"], scale["spec"], scale["status"]["selector"]) == (
            "Scale", "autoscaling/v1", {"replicas": 3}, "app=web")
        kubectl(emulator_kubeconfig, "scale", "deployment", "web", "--replicas=1", "--current-replicas=3", "-n", "shop")
        wait_for(lambda: len(pods()) == 1)
        refused = kubectl(emulator_kubeconfig, "scale", "deployment", "web", "--replicas=5", "--current-replicas=3", "-n", "shop", check=False)
        assert refused.returncode == 1 and "Expected replicas to be 3, was 1" in refused.stderr


@needs_kubectl
def test_kubectl_get_all_lists_the_category_all(emulator: Emulator, emulator_kubeconfig: str) -> None:
    with Workload(emulator, seed=3):
        kubectl(emulator_kubeconfig, "create", "deployment", "web", "--image=nginx:1.25", "--replicas=2", "-n", "shop")
        kubectl(emulator_kubeconfig, "create", "job", "backup", "--image=busybox:1.36", "-n", "shop")
        kubectl(emulator_kubeconfig, "create", "configmap", "settings", "-n", "shop")
        names = lambda: kubectl(emulator_kubeconfig, "get", "all", "-A", "-o", "name").stdout.split()  # noqa: E731
        wait_for(lambda: sum(n.startswith("pod/") for n in names()) >= 3)
        found = names()
    assert {n.split("/")[0] for n in found} == {"pod", "deployment.apps", "replicaset.apps", "job.batch"}
    assert "deployment.apps/web" in found and "job.batch/backup" in found and not any("configmap" in n for n in found)
