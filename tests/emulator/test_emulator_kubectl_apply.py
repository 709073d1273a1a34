"""``kubectl apply/create/replace -f`` against the emulator with kubectl's default validation, as against a real
API server: the OpenAPI kubectl reads, ``fieldValidation=Strict`` honoured, client-side apply's strategic merge
patch, and the recorder seeing what apply changed."""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_emulator_clients import kubectl

from kubectl_sktrace.store.bodies import decode_body
from sktrace_emulator import Emulator

pytestmark = [pytest.mark.timeout(90), pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")]

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: IMAGE
        ports: [{containerPort: 80}]
      - name: sidecar
        image: busybox:1.36
"""

CONFIGMAPS = """apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: a, namespace: default}
  data: {x: "1"}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: b, namespace: default}
  data: {k: "VALUE"}
"""

CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"""

WIDGET = """apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: default}
spec: {size: SIZE}
"""


def write(path: Path, text: str, **values: str) -> str:
    for key, value in values.items():
        text = text.replace(key, value)
    path.write_text(text)
    return str(path)


def test_create_apply_replace_a_list_with_default_validation(emulator: Emulator, emulator_kubeconfig: str, tmp_path: Path) -> None:
    manifest = write(tmp_path / "cms.yaml", CONFIGMAPS, VALUE="2")
    assert kubectl(emulator_kubeconfig, "create", "-f", manifest).stdout == "configmap/a created\nconfigmap/b created\n"
    write(tmp_path / "cms.yaml", CONFIGMAPS, VALUE="3")
    assert kubectl(emulator_kubeconfig, "replace", "-f", manifest).stdout == "configmap/a replaced\nconfigmap/b replaced\n"
    write(tmp_path / "cms.yaml", CONFIGMAPS, VALUE="4")
    assert kubectl(emulator_kubeconfig, "apply", "-f", manifest).stdout == "configmap/a configured\nconfigmap/b configured\n"
    stored = emulator.get("v1", "ConfigMap", "default", "b")
    assert stored is not None and stored["data"] == {"k": "4"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in stored["metadata"]["annotations"]


def test_apply_twice_merges_containers_by_name_and_stores_no_directive(emulator: Emulator, emulator_kubeconfig: str, tmp_path: Path) -> None:
    manifest = write(tmp_path / "app.yaml", DEPLOYMENT, REPLICAS="2", IMAGE="nginx:1.25")
    assert kubectl(emulator_kubeconfig, "apply", "-f", manifest).stdout == "deployment.apps/web created\n"
    write(tmp_path / "app.yaml", DEPLOYMENT, REPLICAS="3", IMAGE="nginx:1.26")
    result = kubectl(emulator_kubeconfig, "apply", "-f", manifest, "-v=6")
    assert "deployment.apps/web configured" in result.stdout
    assert "PATCH" in result.stderr and "fieldValidation=Strict" in result.stderr  # client-side apply, validated by the server
    spec = emulator.get("apps/v1", "Deployment", "default", "web")["spec"]  # type: ignore[index]
    assert spec["replicas"] == 3
    assert spec["template"]["spec"] == {"containers": [{"name": "web", "image": "nginx:1.26", "ports": [{"containerPort": 80}]},
                                                       {"name": "sidecar", "image": "busybox:1.36"}]}
    assert kubectl(emulator_kubeconfig, "apply", "-f", manifest).stdout == "deployment.apps/web unchanged\n"


def test_strict_validation_rejects_unknown_fields_and_warn_accepts(emulator: Emulator, emulator_kubeconfig: str, tmp_path: Path) -> None:
    manifest = write(tmp_path / "bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default, labelz: {a: b}}\ndatta: {x: '1'}\n")
    for verb in ("create", "apply"):
        refused = kubectl(emulator_kubeconfig, verb, "-f", manifest, check=False)
        assert refused.returncode == 1
        assert refused.stderr == ('Error from server (BadRequest): error when creating "bad.yaml": ConfigMap in version "v1" cannot be handled '
                                  'as a ConfigMap: strict decoding error: unknown field "datta", unknown field "metadata.labelz"\n'
                                  .replace('"bad.yaml"', json.dumps(manifest)))
    assert emulator.get("v1", "ConfigMap", "default", "c") is None
    warned = kubectl(emulator_kubeconfig, "create", "-f", manifest, "--validate=warn")
    assert warned.stdout == "configmap/c created\n"
    assert warned.stderr == 'Warning: unknown field "datta"\nWarning: unknown field "metadata.labelz"\n'


def test_strict_validation_rejects_duplicate_fields(emulator: Emulator, emulator_kubeconfig: str, tmp_path: Path) -> None:
    body = tmp_path / "dup.json"
    body.write_text('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d","name":"d"},"data":{"x":"1","x":"2"}}')
    path = "/api/v1/namespaces/default/configmaps?fieldValidation=Strict"
    refused = kubectl(emulator_kubeconfig, "create", "--raw", path, "-f", str(body), check=False)
    assert refused.returncode == 1
    assert 'strict decoding error: duplicate field "metadata.name", duplicate field "data.x"' in refused.stderr
    assert emulator.get("v1", "ConfigMap", "default", "d") is None


def test_apply_a_crd_and_its_objects(emulator: Emulator, emulator_kubeconfig: str, tmp_path: Path) -> None:
    crd = write(tmp_path / "crd.yaml", CRD)
    assert kubectl(emulator_kubeconfig, "apply", "-f", crd).stdout == "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created\n"
    widget = write(tmp_path / "w.yaml", WIDGET, SIZE="1")
    assert kubectl(emulator_kubeconfig, "apply", "-f", widget).stdout == "widget.example.com/w created\n"
    write(tmp_path / "w.yaml", WIDGET, SIZE="2")
    assert kubectl(emulator_kubeconfig, "apply", "-f", widget).stdout == "widget.example.com/w configured\n"
    assert kubectl(emulator_kubeconfig, "replace", "-f", widget).stdout == "widget.example.com/w replaced\n"
    assert emulator.get("example.com/v1", "Widget", "default", "w")["spec"] == {"size": 2}  # type: ignore[index]


def _query(cache: Path, sql: str) -> list[tuple[Any, ...]]:
    try:
        conn = sqlite3.connect(f"file:{cache}?mode=rw", uri=True)  # never creates it: a recorder refuses a cache of 0644
    except sqlite3.OperationalError:
        return []
    try:
        return conn.execute(sql).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def _wait(cache: Path, sql: str, proc: subprocess.Popen[str]) -> list[tuple[Any, ...]]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        rows = _query(cache, sql)
        if rows:
            return rows
        time.sleep(0.05)
    raise AssertionError(f"nothing for {sql}")


def test_start_records_what_apply_changed(emulator: Emulator, emulator_kubeconfig: str, tmp_path: Path) -> None:
    manifest = write(tmp_path / "app.yaml", DEPLOYMENT, REPLICAS="2", IMAGE="nginx:1.25")
    kubectl(emulator_kubeconfig, "apply", "-f", manifest)
    cache = tmp_path / "cache.db"
    proc = subprocess.Popen([sys.executable, "-m", "kubectl_sktrace", "start", "--kubeconfig", emulator_kubeconfig, "--cache", str(cache),
                             "--duration", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait(cache, "SELECT synced FROM runs WHERE synced IS NOT NULL", proc)
        write(tmp_path / "app.yaml", DEPLOYMENT, REPLICAS="3", IMAGE="nginx:1.26")
        kubectl(emulator_kubeconfig, "apply", "-f", manifest)
        _wait(cache, "SELECT 1 FROM events WHERE name = 'web' AND gvk = 'apps/v1.Deployment' GROUP BY name HAVING count(*) >= 2", proc)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    assert proc.returncode == 0
    bodies = [decode_body(b[0]) for b in _query(cache, "SELECT body FROM events WHERE name = 'web' AND gvk = 'apps/v1.Deployment' ORDER BY id")]
    assert [b["spec"]["replicas"] for b in bodies] == [2, 3]
    assert [[c["image"] for c in b["spec"]["template"]["spec"]["containers"]] for b in bodies] == [["nginx:1.25", "busybox:1.36"],
                                                                                                  ["nginx:1.26", "busybox:1.36"]]
    assert "$setElementOrder" not in json.dumps(bodies[-1])
