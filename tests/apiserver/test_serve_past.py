"""``kubectl sktrace serve --at T`` judged by unmodified clients: the real ``kubectl`` and the ``kubernetes`` package,
against the real command serving a real cache (both engines); every write refused and the cache's bytes unchanged."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from conftest import CacheBuilder, location, obj
from kubectl_sktrace.past.objects import Scope
from kubectl_sktrace.past.state import Past
from kubectl_sktrace.store import open_cache_readonly
from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.store.recording import Recording

pytestmark = [pytest.mark.timeout(120), pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")]

SCRIPT = str(Path(sys.executable).parent / "kubectl-sktrace")
T0 = int(time.time()) - 3600  # the history: an hour ago, for ten minutes
AT = T0 + 150  # web scaled to 3, api alive, cfg present
WEB = {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}},
       "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}}}


DISCOVERY = {
    "v1": [("pods", "Pod", ["po"]), ("configmaps", "ConfigMap", ["cm"]), ("namespaces", "Namespace", ["ns"])],
    "apps/v1": [("deployments", "Deployment", ["deploy"]), ("replicasets", "ReplicaSet", ["rs"])],
}


def build(where: Path | Any) -> None:
    """The history: web created and scaled, api created then deleted, a ConfigMap, a pod of web; the discovery documents
    the recorder kept."""
    b = CacheBuilder(where)
    try:
        with b.cache.transaction() as conn:
            for group_version, kinds in DISCOVERY.items():
                doc = {"kind": "APIResourceList", "groupVersion": group_version, "resources": [
                    {"name": plural, "singularName": kind.lower(), "namespaced": kind != "Namespace", "kind": kind, "shortNames": short,
                     "verbs": ["get", "list", "watch", "create", "delete"]} for plural, kind, short in kinds]}
                conn.execute("INSERT INTO discovery (group_version, body, fetched) VALUES (?, ?, ?)", (group_version, json.dumps(doc), T0))
        b.run(started=T0, stopped=T0 + 600)
        b.apply(T0 + 10, obj("Deployment", "web", labels={"app": "web"}, spec=WEB))
        b.apply(T0 + 20, obj("Deployment", "api", labels={"app": "api"}, spec={**WEB, "replicas": 1}))
        b.apply(T0 + 30, obj("ConfigMap", "cfg", labels={"app": "web"}) | {"data": {"mode": "fast"}})
        b.apply(T0 + 40, obj("Pod", "web-1", labels={"app": "web"}, spec={"containers": [{"name": "web", "image": "nginx:1.25"}]}))
        b.pod("web-1", owner=None, stable_hash=1, start_ts=T0 + 45)
        b.apply(T0 + 100, obj("Deployment", "web", labels={"app": "web"}, spec={**WEB, "replicas": 3}))
        b.apply(T0 + 190, obj("Pod", "web-2", labels={"app": "web"}, spec={"containers": [{"name": "web", "image": "nginx:1.25"}]}))
        b.pod("web-2", owner=None, stable_hash=1, start_ts=T0 + 190)
        b.delete(T0 + 200, obj("Deployment", "api"))
        b.apply(T0 + 201, obj("Deployment", "web", labels={"app": "web"}, spec={**WEB, "replicas": 5}))
    finally:
        b.close()


def digest(cache: str) -> str:
    """The cache's bytes (a file, with its WAL), or a database's rows."""
    if cache.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(cache) as conn:
            rows = [conn.execute(f"SELECT * FROM test.{table} ORDER BY 1").fetchall() for table in ("events", "runs", "pods")]
        return hashlib.sha256(repr(rows).encode()).hexdigest()
    return "".join(hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in (cache, cache + "-wal") if Path(p).exists())


class Served:
    """A running ``kubectl sktrace serve``: its kubeconfig, and kubectl and HTTPS through it."""

    def __init__(self, proc: subprocess.Popen[str], kubeconfig: Path, first_line: str) -> None:
        self.proc, self.kubeconfig, self.first_line = proc, kubeconfig, first_line
        config = yaml.safe_load(kubeconfig.read_text())
        self.server = config["clusters"][0]["cluster"]["server"]
        self.token = config["users"][0]["user"]["token"]
        import base64

        self.ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]).decode()

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cache_dir = str(self.kubeconfig.parent / "kube-cache")
        done = subprocess.run(["kubectl", "--kubeconfig", str(self.kubeconfig), "--cache-dir", cache_dir, *args],
                              capture_output=True, text=True, timeout=60)
        if check:
            assert done.returncode == 0, done.stderr
        return done

    def request(self, path: str, *, method: str = "GET", token: str | None = "", body: bytes | None = None) -> tuple[int, Any]:
        headers = {} if token is None else {"Authorization": f"Bearer {token or self.token}"}
        request = urllib.request.Request(self.server + path, method=method, headers=headers, data=body)
        context = ssl.create_default_context(cadata=self.ca)
        try:
            with urllib.request.urlopen(request, context=context, timeout=30) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())


def serve(cache: str, tmp_path: Path, *args: str) -> Iterator[Served]:
    kubeconfig = tmp_path / "past.kubeconfig"
    proc = subprocess.Popen([SCRIPT, "serve", "--cache", cache, "--kubeconfig-out", str(kubeconfig), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline() if proc.stdout else ""  # said once the server listens and the kubeconfig is written
        assert first.startswith("Serving the cluster as it was at"), (first, proc.stderr.read() if proc.stderr else "")
        yield Served(proc, kubeconfig, first)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


@pytest.fixture
def sqlite_cache(tmp_path: Path) -> str:
    path = tmp_path / "cache.db"
    build(path)
    return str(path)


@pytest.fixture
def served(sqlite_cache: str, tmp_path: Path) -> Iterator[Served]:
    yield from serve(sqlite_cache, tmp_path, "--at", f"@{AT}")


def test_kubectl_get_prints_its_columns_at_t(served: Served) -> None:
    lines = served.kubectl("get", "deploy", "-n", "app").stdout.splitlines()
    assert [line.split() for line in lines] == [["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
                                                ["api", "<unknown>", "<unknown>", "<unknown>", "<unknown>"],
                                                ["web", "<unknown>", "<unknown>", "<unknown>", "<unknown>"]]
    pods = served.kubectl("get", "pods", "-A").stdout.splitlines()
    assert [line.split() for line in pods] == [["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"],
                                               ["app", "web-1", "<unknown>", "Running", "<unknown>", "<unknown>"]]


def test_kubectl_get_yaml_is_the_state_at_t_of_the_one_layer(served: Served, sqlite_cache: str) -> None:
    shown = yaml.safe_load(served.kubectl("get", "deploy", "web", "-n", "app", "-o", "yaml").stdout)
    with open_cache_readonly(sqlite_cache) as cache:
        past = Past(cache)
        layer = [found.obj for kind in past.kinds() for found in past.objects_at(kind, Scope(), AT)]
    assert shown == next(o for o in layer if o["kind"] == "Deployment" and o["metadata"]["name"] == "web")
    assert shown["spec"]["replicas"] == 3 and "status" not in shown and "resourceVersion" not in shown["metadata"]
    listed = json.loads(served.kubectl("get", "deploy,cm,pods", "-A", "-o", "json").stdout)["items"]
    assert sorted(listed, key=json.dumps) == sorted(layer, key=json.dumps)


@pytest.mark.parametrize("kind", ["deploy", "cm", "pods"])
def test_kubectl_get_json_through_serve_equals_sktrace_get_at_t(served: Served, sqlite_cache: str, kind: str) -> None:
    through = json.loads(served.kubectl("get", kind, "-A", "-o", "json").stdout)["items"]
    asked = subprocess.run([SCRIPT, "get", kind, "-A", "--cache", sqlite_cache, "--at", f"@{AT}", "-o", "json"],
                           capture_output=True, text=True, timeout=60, check=True).stdout
    assert through == json.loads(asked)["items"] and through


def test_kubectl_describe(served: Served) -> None:
    text = served.kubectl("describe", "deploy", "web", "-n", "app").stdout
    assert re.search(r"^Name:\s+web$", text, re.M) and re.search(r"^Namespace:\s+app$", text, re.M)
    assert re.search(r"^Replicas:\s+3 desired", text, re.M)
    assert "nginx:1.25" in text
    pod = served.kubectl("describe", "pod", "web-1", "-n", "app").stdout
    assert re.search(r"^Name:\s+web-1$", pod, re.M) and re.search(r"^Labels:\s+app=web$", pod, re.M)


def test_label_and_field_selectors(served: Served) -> None:
    assert served.kubectl("get", "deploy,cm", "-A", "-l", "app=web", "-o", "name").stdout.split() == ["deployment.apps/web", "configmap/cfg"]
    assert served.kubectl("get", "deploy", "-A", "-l", "app in (api, db)", "-o", "name").stdout.split() == ["deployment.apps/api"]
    assert served.kubectl("get", "deploy", "-n", "app", "--field-selector", "metadata.name!=web", "-o", "name").stdout.split() == ["deployment.apps/api"]
    refused = served.kubectl("get", "deploy", "-A", "--field-selector", "spec.replicas=3", check=False)
    assert refused.returncode == 1 and '"spec.replicas" is not a known field selector' in refused.stderr


def test_kubectl_pages_through_one_snapshot(served: Served) -> None:
    whole = served.kubectl("get", "deploy,cm,pods", "-A", "-o", "name").stdout.split()
    paged = served.kubectl("get", "deploy,cm,pods", "-A", "-o", "name", "--chunk-size=1", "-v=6")
    assert paged.stdout.split() == whole and len(whole) == 4
    assert "/apis/apps/v1/deployments?continue=" in paged.stderr  # the two deployments came a page each


def test_every_write_gets_405_and_the_cache_is_unchanged(served: Served, sqlite_cache: str, tmp_path: Path) -> None:
    before = digest(sqlite_cache)
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: new, namespace: app}\ndata: {a: b}\n")
    writes = [("delete", "deploy", "web", "-n", "app"), ("scale", "deploy", "web", "-n", "app", "--replicas=1"),
              ("label", "deploy", "web", "-n", "app", "x=y"), ("annotate", "cm", "cfg", "-n", "app", "x=y"),
              ("patch", "deploy", "web", "-n", "app", "-p", '{"spec":{"replicas":9}}'), ("create", "-f", str(manifest)),
              ("replace", "-f", str(manifest)), ("apply", "-f", str(manifest)), ("create", "namespace", "other"), ("delete", "pods", "--all", "-n", "app")]
    for args in writes:
        done = served.kubectl(*args, check=False)
        assert done.returncode == 1, args
        assert f"read-only history at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(AT))}" in done.stderr, (args, done.stderr)
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        code, status = served.request("/apis/apps/v1/namespaces/app/deployments/web", method=method, body=b"{}")
        assert (code, status["reason"]) == (405, "MethodNotAllowed")
    assert served.kubectl("get", "deploy", "web", "-n", "app", "-o", "jsonpath={.spec.replicas}").stdout == "3"
    assert digest(sqlite_cache) == before


def test_no_or_wrong_token_is_401(served: Served) -> None:
    assert served.request("/api/v1/pods", token=None)[0] == 401
    assert served.request("/api/v1/pods", token="not-the-token")[0] == 401
    assert served.request("/api/v1/pods", token=None, method="DELETE")[0] == 401  # a write without a token: 401 first
    assert served.request("/api/v1/pods")[0] == 200


def test_hostile_requests_get_a_4xx(served: Served, sqlite_cache: str) -> None:
    before = digest(sqlite_cache)
    huge = ",".join(f"k{i}=v" for i in range(2000))
    assert served.request(f"/apis/apps/v1/deployments?labelSelector={huge}")[0] == 400
    assert served.request("/apis/apps/v1/deployments?labelSelector=" + ",".join(f"k{i}" for i in range(100)))[0] == 400
    assert served.request("/apis/apps/v1/deployments?labelSelector=a%20in%20b")[0] == 400
    assert served.request("/apis/apps/v1/deployments?limit=-1")[0] == 400
    assert served.request("/apis/apps/v1/deployments?continue=garbage")[0] == 410
    assert served.request("/apis/apps/v1/nothings")[0] == 404
    assert served.request("/apis/apps/v1/namespaces/app/deployments/nope")[0] == 404
    assert served.request("/apis/apps/v1/deployments?watch=1&resourceVersion=abc")[0] == 400
    assert served.request("/apis/apps/v1/deployments?labelSelector=%ff%fe")[0] == 400
    assert served.request("/apis/apps/v1/deployments?watch=1&timeoutSeconds=99999999999")[0] == 400
    assert digest(sqlite_cache) == before


def test_a_request_flood_is_bounded_and_the_server_answers_after(served: Served, sqlite_cache: str) -> None:
    """300 connections at once, each asking a list: each gets its list, a 429 or a closed connection; never a hang,
    and the server answers normally once the flood is gone."""
    before = digest(sqlite_cache)
    host, port = served.server.removeprefix("https://").split(":")
    outcomes: list[str] = []
    context = ssl.create_default_context(cadata=served.ca)

    def one() -> None:
        try:
            with socket.create_connection((host, int(port)), timeout=30) as raw, context.wrap_socket(raw, server_hostname=host) as tls:
                tls.sendall(f"GET /api/v1/pods HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {served.token}\r\nConnection: close\r\n\r\n".encode())
                outcomes.append(tls.recv(64).decode(errors="replace").split("\r\n")[0] or "closed")
        except (OSError, ssl.SSLError):
            outcomes.append("closed")

    threads = [threading.Thread(target=one) for _ in range(300)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(outcomes) == 300 and set(outcomes) <= {"HTTP/1.1 200 OK", "HTTP/1.1 429 Too Many Requests", "closed"}
    assert "HTTP/1.1 200 OK" in outcomes
    assert served.request("/api/v1/pods")[0] == 200
    assert digest(sqlite_cache) == before


def test_a_kubernetes_client_program(served: Served) -> None:
    program = f"""
import json
from kubernetes import client, config, watch
config.load_kube_config(config_file={str(served.kubeconfig)!r})
apps = client.AppsV1Api()
names = [d.metadata.name for d in apps.list_deployment_for_all_namespaces().items]
replicas = apps.read_namespaced_deployment("web", "app").spec.replicas
events = [(e["type"], e["object"].metadata.name) for e in watch.Watch().stream(apps.list_namespaced_deployment, "app", timeout_seconds=1)]
try:
    apps.delete_namespaced_deployment("web", "app")
    refused = None
except client.ApiException as error:
    refused = error.status
cms = [c.data for c in client.CoreV1Api().list_config_map_for_all_namespaces(label_selector="app=web").items]
print(json.dumps([names, replicas, events, refused, cms]))
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [["api", "web"], 3, [["ADDED", "api"], ["ADDED", "web"]], 405, [{"mode": "fast"}]]


def test_watch_replays_the_changes_after_t_at_the_speed_asked(sqlite_cache: str, tmp_path: Path) -> None:
    """At 100x, the deletion 50 s after T comes in about half a second, the scale a second later; kubectl -w shows them."""
    for served in serve(sqlite_cache, tmp_path, "--at", f"@{AT}", "--replay-speed", "100"):
        watch = subprocess.Popen(["kubectl", "--kubeconfig", str(served.kubeconfig), "--cache-dir", str(tmp_path / "kc"), "get", "deploy",
                                  "-n", "app", "-w", "--output-watch-events", "-o", 'jsonpath={.type} {.object.metadata.name} {.object.spec.replicas}{"\\n"}'],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen: list[list[str]] = []
        try:
            assert watch.stdout is not None
            while len(seen) < 4:
                line = watch.stdout.readline()
                assert line, watch.stderr.read() if watch.stderr else ""
                seen.append(line.split())
        finally:
            watch.kill()
            watch.wait()
        assert seen == [["ADDED", "api", "1"], ["ADDED", "web", "3"], ["DELETED", "api", "1"], ["MODIFIED", "web", "5"]]


def _watch_events(served: Served, tmp_path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(["kubectl", "--kubeconfig", str(served.kubeconfig), "--cache-dir", str(tmp_path / "kc"), "get", "deploy",
                             "-n", "app", "-w", "--output-watch-events", "-o", 'jsonpath={.type} {.object.metadata.name} {.object.spec.replicas}{"\\n"}'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_replay_that_reached_the_present_follows_a_recorder(engine: str, tmp_path: Path) -> None:
    """What a recorder commits while the server replays comes to the watches, once the history's clock reaches it."""
    where = location(engine)
    build(where)
    for served in serve(engine, tmp_path, "--at", f"@{AT}", "--replay-speed", "10000"):
        watch = _watch_events(served, tmp_path)
        try:
            assert watch.stdout is not None
            seen = [watch.stdout.readline().split() for _ in range(4)]
            writer = CacheBuilder(where)
            try:
                writer.run(started=time.time(), stopped=time.time() + 60)
                writer.apply(int(time.time()), obj("Deployment", "late", labels={"app": "late"}, spec={**WEB, "replicas": 7}))
            finally:
                writer.close()
            seen.append(watch.stdout.readline().split())
        finally:
            watch.kill()
            watch.wait()
        assert seen == [["ADDED", "api", "1"], ["ADDED", "web", "3"], ["DELETED", "api", "1"], ["MODIFIED", "web", "5"], ["ADDED", "late", "7"]]


def test_kubectl_get_w_prints_its_columns_as_the_replay_goes(sqlite_cache: str, tmp_path: Path) -> None:
    """The Table form of a watch: the pods at T, then the one created 40 s after T, Running from its lifecycle."""
    for served in serve(sqlite_cache, tmp_path, "--at", f"@{AT}", "--replay-speed", "100"):
        watch = subprocess.Popen(["kubectl", "--kubeconfig", str(served.kubeconfig), "--cache-dir", str(tmp_path / "kc"), "get", "pods",
                                  "-n", "app", "-w"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert watch.stdout is not None
            seen = [watch.stdout.readline().split() for _ in range(3)]
        finally:
            watch.kill()
            watch.wait()
        assert seen == [["NAME", "READY", "STATUS", "RESTARTS", "AGE"], ["web-1", "<unknown>", "Running", "<unknown>", "<unknown>"],
                        ["web-2", "<unknown>", "Running", "<unknown>", "<unknown>"]]


def test_without_replay_a_watch_is_the_state_at_t_then_quiet(served: Served) -> None:
    started = time.monotonic()
    raw = urllib.request.urlopen(urllib.request.Request(served.server + "/apis/apps/v1/namespaces/app/deployments?watch=1&timeoutSeconds=2",
                                                        headers={"Authorization": f"Bearer {served.token}"}),
                                 context=ssl.create_default_context(cadata=served.ca), timeout=30).read().decode()
    assert time.monotonic() - started >= 2  # the stream stayed open, quiet, until its timeout
    assert [(json.loads(line)["type"], json.loads(line)["object"]["metadata"]["name"]) for line in raw.splitlines()] == [
        ("ADDED", "api"), ("ADDED", "web")]


@pytest.mark.parametrize("at, said", [
    ("yesterday-ish", "invalid time 'yesterday-ish'"),
    (f"@{T0 - 86400}", "is before the history, which begins at"),
    ("+1h", "is in the future"),
], ids=["malformed", "before-history", "future"])
def test_a_time_outside_the_history_is_one_line(sqlite_cache: str, tmp_path: Path, at: str, said: str) -> None:
    before = digest(sqlite_cache)
    done = subprocess.run([SCRIPT, "serve", "--cache", sqlite_cache, "--at", at, "--kubeconfig-out", str(tmp_path / "kc")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "kc").exists()
    assert digest(sqlite_cache) == before


def test_a_port_taken_is_one_line(served: Served, sqlite_cache: str, tmp_path: Path) -> None:
    port = served.server.rsplit(":", 1)[1]
    done = subprocess.run([SCRIPT, "serve", "--cache", sqlite_cache, "--at", f"@{AT}", "--port", port, "--kubeconfig-out", str(tmp_path / "kc")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.startswith(f"Error: cannot listen on 127.0.0.1:{port} (Address already in use); pass another --port")
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "kc").exists()


def test_a_kubeconfig_out_that_cannot_be_written_is_one_line(sqlite_cache: str, tmp_path: Path) -> None:
    target = tmp_path / "missing" / "kc"
    done = subprocess.run([SCRIPT, "serve", "--cache", sqlite_cache, "--at", f"@{AT}", "--kubeconfig-out", str(target)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.startswith(f"Error: cannot write the kubeconfig to {target} (No such file or directory)")
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_kubeconfig_is_private_and_printed_without_the_flag(served: Served, sqlite_cache: str) -> None:
    assert os.stat(served.kubeconfig).st_mode & 0o777 == 0o600
    proc = subprocess.Popen([SCRIPT, "serve", "--cache", sqlite_cache, "--at", f"@{AT}"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(3)]
        assert lines[:2] == ["apiVersion: v1\n", "kind: Config\n"]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def test_both_engines_and_a_writer_beside(engine: str, tmp_path: Path) -> None:
    """PostgreSQL as sqlite; the server starts and answers while a writer holds an open write transaction on the cache,
    which commits meanwhile: neither waits for the other."""
    where = location(engine)
    build(where)
    writer = CacheBuilder(where)
    try:
        writer.cache.begin()
        writer.cache.write("UPDATE runs SET stopped = stopped + 1")
        for served in serve(engine, tmp_path, "--at", f"@{AT}"):
            assert served.kubectl("get", "deploy", "-n", "app", "-o", "name").stdout.split() == ["deployment.apps/api", "deployment.apps/web"]
            writer.cache.commit()
            assert served.kubectl("get", "cm", "cfg", "-n", "app", "-o", "jsonpath={.data.mode}").stdout == "fast"
    finally:
        writer.close()


def test_a_replay_brings_the_status_changes_too(tmp_path: Path) -> None:
    """With ``--replay-speed``, a status change after T is a MODIFIED of its own, the object with that status (kubectl
    -w shows readiness moving, as it did live); the state at T carries the status in force then."""
    cache = tmp_path / "cache.db"
    build(cache)
    b = CacheBuilder(cache)
    b.run_id = 1  # the history's one run
    try:
        with b.cache.transaction():
            recording = Recording(b.cache)
            for ts, ready in ((T0 + 100, 1), (T0 + 160, 2), (T0 + 170, 3)):  # web's readiness after its scale to 3
                recording.append_status(b.run_id, ts=ts, recv=ts + 0.25, key=ObjKey(GVK.parse("apps/v1.Deployment"), "app", "web"),
                                        uid="uid-web", inferred=False, reduced={"desired": 3, "replicas": 3, "readyReplicas": ready})
    finally:
        b.close()
    for served in serve(str(cache), tmp_path, "--at", f"@{AT}", "--replay-speed", "20"):
        watch = subprocess.Popen(["kubectl", "--kubeconfig", str(served.kubeconfig), "--cache-dir", str(tmp_path / "kc"), "get", "deploy",
                                  "web", "-n", "app", "-w", "--output-watch-events", "-o", 'jsonpath={.type} {.object.status.readyReplicas}{"\\n"}'],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert watch.stdout is not None
            seen = [watch.stdout.readline().split() for _ in range(3)]
        finally:
            watch.kill()
            watch.wait()
        assert seen == [["ADDED", "1"], ["MODIFIED", "2"], ["MODIFIED", "3"]], seen


def test_may_i_is_answered_reading_yes_writing_no_and_asking_writes_nothing(served: Served, sqlite_cache: str) -> None:
    """``kubectl auth can-i`` and the clients that ask before they list (k9s asks a SelfSubjectAccessReview for each view,
    and shows none it is refused): reading is allowed, a write refused with the 405's reason."""
    before = digest(sqlite_cache)
    assert served.kubectl("auth", "can-i", "list", "deployments", "-n", "app").stdout.strip() == "yes"
    assert served.kubectl("auth", "can-i", "watch", "pods", "-A").stdout.strip() == "yes"
    refused = served.kubectl("auth", "can-i", "delete", "deployments", "-n", "app", check=False)
    assert refused.returncode == 1 and refused.stdout.startswith("no - read-only history at"), refused.stdout
    listed = served.kubectl("auth", "can-i", "--list", "-n", "app").stdout
    assert "[get list watch]" in listed and "create" not in listed
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"namespace": "app", "verb": "patch", "group": "apps", "resource": "deployments"}}}
    code, answered = served.request("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", method="POST", body=json.dumps(review).encode())
    assert code == 201 and answered["spec"] == review["spec"]
    assert answered["status"]["allowed"] is False and answered["status"]["reason"].startswith("read-only history at")
    for bad in (b"not json", b"[]", b'{"kind": "Pod", "spec": {}}', b'{"spec": {"resourceAttributes": {}}}', b"[" * 200_000,
                b'{"spec": {"resourceAttributes": {"verb": ["get"]}}}', b"\xff\xfe"):
        assert served.request("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", method="POST", body=bad)[0] == 400
    assert served.request("/apis/authorization.k8s.io/v1/namespaces/app/selfsubjectaccessreviews", method="POST", body=b"{}")[0] == 405
    assert digest(sqlite_cache) == before
