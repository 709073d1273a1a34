"""The kube package against a scripted local HTTP server: real sockets, real urllib3 pool from the client."""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from kubectl_sktrace.errors import (
    ExpiredError,
    ForbiddenError,
    KubeError,
    NotServedError,
    SilentConnectionError,
    TransientError,
)
from kubectl_sktrace.kube.client import Kube
from kubectl_sktrace.kube.discovery import Resource, resources_from_discovery
from kubectl_sktrace.kube.kubeconfig import resolve_target
from kubectl_sktrace.kube.rbac import rbac_hint
from kubectl_sktrace.model import GVK, POD
from tests.conftest import CUT, HANG, Reply, write_kubeconfig

DEPLOY = GVK("apps", "v1", "Deployment")
PODS = Resource(gvk=POD, plural="pods", namespaced=True, verbs=frozenset({"get", "list", "watch"}))
CORE_DOC = {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
    {"name": "pods", "kind": "Pod", "namespaced": True, "verbs": ["get", "list", "watch"]},
    {"name": "pods/status", "kind": "Pod", "namespaced": True, "verbs": ["get"]},
    {"name": "namespaces", "kind": "Namespace", "namespaced": False, "verbs": ["get", "list", "watch"]},
]}
APPS_DOC = {"kind": "APIResourceList", "groupVersion": "apps/v1", "resources": [
    {"name": "deployments", "kind": "Deployment", "namespaced": True, "verbs": ["list", "watch"]},
]}

pytestmark = pytest.mark.timeout(20)


def connect(tmp_path: Path, server_url: str, **kw) -> Kube:
    path = write_kubeconfig(tmp_path / "config", server=server_url, **kw)
    return Kube.connect(resolve_target(kubeconfig=str(path), context=None, environ={}), idle_timeout=2.0)


def pod(name: str, rv: str) -> dict:
    return {"metadata": {"name": name, "namespace": "default", "resourceVersion": rv, "uid": f"u-{name}"}}


def test_list_page_sends_token_limit_continue_and_no_resource_version(tmp_path, api_server):
    api_server.route("/api/v1/pods", Reply(body={"kind": "PodList", "metadata": {"resourceVersion": "7", "continue": "c2"},
                                                 "items": [pod("a", "5")]}))
    kube = connect(tmp_path, api_server.url)
    page = kube.list_page(PODS, namespace=None, limit=500, continue_token="c1")
    assert page["items"][0]["metadata"]["name"] == "a"
    assert page["metadata"]["continue"] == "c2"
    seen = api_server.requests[-1]
    assert seen.query == {"limit": "500", "continue": "c1"}
    assert seen.headers["authorization"] == "Bearer t0k3n"
    assert seen.headers["Accept"] == "application/json"


def test_namespaced_paths_and_get_returns_none_on_404(tmp_path, api_server):
    api_server.route("/api/v1/namespaces/team-a/pods/web-1", Reply(body=pod("web-1", "3")))
    kube = connect(tmp_path, api_server.url)
    assert kube.get(PODS, namespace="team-a", name="web-1")["metadata"]["name"] == "web-1"
    assert kube.get(PODS, namespace="team-a", name="gone") is None


def test_watch_streams_events_with_bookmarks_and_query(tmp_path, api_server):
    events = [{"type": "ADDED", "object": pod("a", "11")},
              {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "12"}}},
              {"type": "DELETED", "object": pod("a", "13")}]
    api_server.route("/api/v1/namespaces/ns/pods", Reply(lines=events))
    kube = connect(tmp_path, api_server.url)
    got = list(kube.watch(PODS, namespace="ns", resource_version="10", timeout_seconds=30))
    assert got == events
    assert api_server.requests[-1].query == {"watch": "true", "allowWatchBookmarks": "true",
                                             "resourceVersion": "10", "timeoutSeconds": "30"}


@pytest.mark.slow
def test_watch_joins_lines_split_across_chunks_and_a_last_line_without_newline(tmp_path, api_server):
    line = json.dumps({"type": "ADDED", "object": pod("a", "11")}).encode()
    api_server.route("/api/v1/pods", Reply(lines=[line[:10], 0.05, line[10:] + b"\n" + line[:5], line[5:]]))
    kube = connect(tmp_path, api_server.url)
    got = list(kube.watch(PODS, namespace=None, resource_version="1", timeout_seconds=5))
    assert [e["object"]["metadata"]["resourceVersion"] for e in got] == ["11", "11"]


def test_watch_stops_within_a_second_on_a_silent_stream(tmp_path, api_server):
    api_server.route("/api/v1/pods", Reply(lines=[{"type": "ADDED", "object": pod("a", "2")}, HANG]))
    kube = connect(tmp_path, api_server.url)
    stop = threading.Event()
    got = []
    started = time.monotonic()
    threading.Timer(0.3, stop.set).start()
    for event in kube.watch(PODS, namespace=None, resource_version="1", timeout_seconds=300, stop=stop):
        got.append(event)
    assert len(got) == 1
    assert time.monotonic() - started < 1.3


def test_watch_declares_a_silent_connection_dead_after_the_idle_timeout(tmp_path, api_server):
    api_server.route("/api/v1/pods", Reply(lines=[HANG]))
    kube = connect(tmp_path, api_server.url)
    kube.idle_timeout = 0.5
    started = time.monotonic()
    with pytest.raises(SilentConnectionError) as info:
        list(kube.watch(PODS, namespace=None, resource_version="1", timeout_seconds=300))
    assert str(info.value) == f"no data from {api_server.url} in time (read timed out); the connection is presumed dead"
    assert 0.4 < time.monotonic() - started < 1.5


@pytest.mark.slow  # waits past a timeout
def test_a_watch_is_presumed_dead_only_when_silent_past_its_own_timeout_and_the_grace(tmp_path, api_server, monkeypatch):
    # a real server ends a healthy stream at its timeoutSeconds, however quiet the kind: silence past that is death
    import kubectl_sktrace.kube.client as client

    monkeypatch.setattr(client, "WATCH_GRACE", 0.5)
    api_server.route("/api/v1/pods", Reply(lines=[HANG]))
    kube = connect(tmp_path, api_server.url)
    kube.idle_timeout = None  # the default: each watch's own timeoutSeconds plus the grace
    started = time.monotonic()
    with pytest.raises(SilentConnectionError):
        list(kube.watch(PODS, namespace=None, resource_version="1", timeout_seconds=1))
    assert 1.4 < time.monotonic() - started < 2.5
    assert [r.query.get("timeoutSeconds") for r in api_server.requests] == ["1"]


def test_watch_connection_cut_mid_stream_is_transient(tmp_path, api_server):
    api_server.route("/api/v1/pods", Reply(lines=[{"type": "ADDED", "object": pod("a", "2")}, CUT]))
    kube = connect(tmp_path, api_server.url)
    stream = kube.watch(PODS, namespace=None, resource_version="1", timeout_seconds=5)
    assert next(stream)["type"] == "ADDED"
    with pytest.raises(TransientError, match=f"^connection to {api_server.url} broken \\(Connection broken: IncompleteRead\\(0 bytes read\\)\\)$"):
        next(stream)


def test_watch_ends_cleanly_when_the_server_ends_the_stream(tmp_path, api_server):
    api_server.route("/api/v1/pods", Reply(lines=[{"type": "ADDED", "object": pod("a", "2")}]))
    kube = connect(tmp_path, api_server.url)
    assert [e["type"] for e in kube.watch(PODS, namespace=None, resource_version="1", timeout_seconds=5)] == ["ADDED"]


DEEP = b"[" * 100_000 + b"]" * 100_000


def test_json_nested_too_deeply_is_a_malformed_answer_with_the_standard_librarys_parser(tmp_path, api_server, monkeypatch):
    """The krew package parses with json (no orjson), whose parser raises RecursionError: a list page, a watch line or
    an error's Status nested 100,000 deep is the same one-line error as any malformed answer."""
    from kubectl_sktrace.kube import stream

    monkeypatch.setattr(stream, "loads", json.loads)
    api_server.route("/api/v1/pods", Reply(lines=[b'{"kind":"PodList","items":' + DEEP + b"}"]))
    api_server.route("/api/v1/pods", Reply(lines=[{"type": "ADDED", "object": pod("a", "2")}, b'{"type":"ADDED","object":' + DEEP + b"}\n"]),
                     when=lambda seen: seen.query.get("watch") == "true")
    api_server.route("/api/v1/namespaces/ns/pods", Reply(500, lines=[DEEP]))
    kube = connect(tmp_path, api_server.url)
    with pytest.raises(TransientError, match=f"^malformed response from {api_server.url} \\(JSON nested too deeply\\)$"):
        kube.list_page(PODS, namespace=None)
    stream_ = kube.watch(PODS, namespace=None, resource_version="1", timeout_seconds=5)
    assert next(stream_)["type"] == "ADDED"
    with pytest.raises(TransientError, match=f"^malformed watch event from {api_server.url} \\(JSON nested too deeply\\)$"):
        next(stream_)
    with pytest.raises(TransientError, match=f"^the API server at {api_server.url} failed \\(500\\) on /api/v1/namespaces/ns/pods: \\[+$"):
        kube.list_page(PODS, namespace="ns")


def test_a_huge_error_body_is_read_no_further_than_its_start(tmp_path):
    """A server answering 500 with a body as long as it likes (no length: it ends when the connection closes): the error
    is one line from the body's first characters, and the client stops reading after ``ERROR_BODY_LIMIT`` bytes
    (what the server managed to send is that, plus what the sockets' buffers hold)."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    sent = [0]

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(20)
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(4096)
            conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n")
            block = b"x" * (1 << 20)
            try:
                for _ in range(64):
                    conn.sendall(block)
                    sent[0] += len(block)
            except OSError:
                pass  # the client closed the connection

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    try:
        with pytest.raises(TransientError) as info:
            connect(tmp_path, url).list_page(PODS, namespace=None)
        thread.join(timeout=20)
    finally:
        listener.close()
    assert str(info.value) == f"the API server at {url} failed (500) on /api/v1/pods: " + "x" * 200
    assert sent[0] <= 16 << 20, f"{sent[0] >> 20} MB of the body were read"


def test_410_on_list_is_expired(tmp_path, api_server):
    api_server.route("/api/v1/pods", Reply(410, {"kind": "Status", "code": 410, "reason": "Expired",
                                                  "message": "The provided continue parameter is too old"}))
    kube = connect(tmp_path, api_server.url)
    with pytest.raises(ExpiredError, match="^resource version expired \\(410\\): The provided continue parameter is too old$"):
        kube.list_page(PODS, namespace=None, continue_token="old")


@pytest.mark.parametrize("status,headers,retry_after,message", [
    (429, {"Retry-After": "3"}, 3.0, "the API server at {url} is throttling us (429): slow down"),
    (503, {}, None, "the API server at {url} failed (503) on /api/v1/pods: slow down"),
    (500, {"Retry-After": "soon"}, None, "the API server at {url} failed (500) on /api/v1/pods: slow down"),
], ids=["429-retry-after", "503", "500-bad-retry-after"])
def test_throttling_and_server_errors_are_transient(tmp_path, api_server, status, headers, retry_after, message):
    api_server.route("/api/v1/pods", Reply(status, {"kind": "Status", "message": "slow down"}, headers=headers))
    kube = connect(tmp_path, api_server.url)
    with pytest.raises(TransientError) as info:
        kube.list_page(PODS, namespace=None)
    assert info.value.retry_after == retry_after
    assert str(info.value) == message.format(url=api_server.url)


@pytest.mark.parametrize("namespace,verb,denial,expected", [
    (None, "watch", 'pods is forbidden: User "jane" cannot watch resource "pods" in API group "" at the cluster scope',
     "forbidden: cannot watch pods in all namespaces; grant list and watch on pods: "
     "'kubectl sktrace rbac --user jane [--config FILE]' prints the ClusterRole and binding to apply"),
    ("team-a", "list", 'pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "team-a"',
     "forbidden: cannot list pods in namespace 'team-a'; grant list and watch on pods: "
     "'kubectl sktrace rbac -n team-a --user jane [--config FILE]' prints the Role and binding to apply"),
], ids=["watch-all", "list-namespace"])
def test_403_names_verb_resource_and_rbac_rule(tmp_path, api_server, namespace, verb, denial, expected):
    path = "/api/v1/pods" if namespace is None else f"/api/v1/namespaces/{namespace}/pods"
    api_server.route(path, Reply(403, {"kind": "Status", "code": 403, "reason": "Forbidden", "message": denial}))
    kube = connect(tmp_path, api_server.url)
    with pytest.raises(ForbiddenError) as info:
        if verb == "watch":
            list(kube.watch(PODS, namespace=namespace, resource_version="1", timeout_seconds=5))
        else:
            kube.list_page(PODS, namespace=namespace)
    assert str(info.value) == expected
    assert (info.value.verb, info.value.resource, info.value.user) == (verb, "pods", "jane")
    assert info.value.cluster_scope is (namespace is None)


def test_403_for_a_group_kind_names_its_api_group(tmp_path, api_server):
    deploy = Resource(gvk=DEPLOY, plural="deployments", namespaced=True, verbs=frozenset())
    api_server.route("/apis/apps/v1/deployments", Reply(403, {"kind": "Status", "code": 403}))
    kube = connect(tmp_path, api_server.url)
    with pytest.raises(ForbiddenError) as info:
        kube.list_page(deploy, namespace=None)
    assert str(info.value) == ("forbidden: cannot list deployments.apps in all namespaces; grant get, list and watch on "
                               "deployments.apps: 'kubectl sktrace rbac [--config FILE]' prints the ClusterRole and binding to apply")
    assert info.value.cluster_scope  # a 403 without the API server's wording: judged by the request


@pytest.mark.parametrize("denial,cluster_scope", [
    ('deployments.apps is forbidden: User "jane" cannot list resource "deployments" in API group "apps" at the cluster scope', True),
    ('deployments.apps is forbidden: User "jane" cannot list resource "deployments" in API group "apps" in the namespace "a"', False),
    ("", True),
], ids=["cluster-scope", "in-a-namespace", "no-message"])
def test_403_tells_a_refusal_at_the_cluster_scope_by_the_denial(tmp_path, api_server, denial, cluster_scope):
    deploy = Resource(gvk=DEPLOY, plural="deployments", namespaced=True, verbs=frozenset())
    api_server.route("/apis/apps/v1/deployments", Reply(403, {"kind": "Status", "code": 403, "message": denial}))
    kube = connect(tmp_path, api_server.url)
    with pytest.raises(ForbiddenError) as info:
        kube.list_page(deploy, namespace=None)
    assert info.value.cluster_scope is cluster_scope


@pytest.mark.parametrize("resources,namespace,user,expected", [
    (["pods"], None, "", "grant list and watch on pods: 'kubectl sktrace rbac [--config FILE]' prints the ClusterRole "
     "and binding to apply"),
    (["deployments.apps", "pods"], "team-a", "system:serviceaccount:team-a:recorder", "grant get, list and watch on "
     "deployments.apps, and list and watch on pods: 'kubectl sktrace rbac -n team-a --service-account team-a:recorder "
     "[--config FILE]' prints the Role and binding to apply"),
    (["pods"], None, "alice@example.com", "grant list and watch on pods: 'kubectl sktrace rbac --user alice@example.com "
     "[--config FILE]' prints the ClusterRole and binding to apply"),
], ids=["cluster", "namespace-service-account", "user"])
def test_rbac_hint_is_one_wording_for_one_kind_or_many(resources, namespace, user, expected):
    assert rbac_hint(resources, namespace=namespace, user=user) == expected


def test_404_on_list_says_the_kind_is_not_served(tmp_path, api_server):
    kube = connect(tmp_path, api_server.url)
    with pytest.raises(NotServedError) as info:
        kube.list_page(PODS, namespace=None)
    assert str(info.value) == ("the server does not serve v1.Pod (/api/v1/pods returned 404); check the kind and "
                               "version in your config, or install its CRD")


def test_401_reloads_credentials_once_then_succeeds(tmp_path, api_server):
    """A token file rotated under us: the first request's token is refused, the reload reads the new one."""
    token_file = tmp_path / "token"
    token_file.write_text("old")
    api_server.route("/api/v1/pods", lambda seen: Reply(body={"metadata": {"resourceVersion": "1"}, "items": []})
                     if seen.headers.get("authorization") == "Bearer new" else Reply(401, {"kind": "Status", "code": 401}))
    kube = connect(tmp_path, api_server.url, user={"tokenFile": str(token_file)})
    token_file.write_text("new")
    assert kube.list_page(PODS, namespace=None)["items"] == []
    assert [r.headers.get("authorization") for r in api_server.requests] == ["Bearer old", "Bearer new"]


def test_401_after_reload_is_one_line_with_the_fix(tmp_path, api_server):
    api_server.route("/api/v1/pods", Reply(401, {"kind": "Status", "code": 401}))
    kube = connect(tmp_path, api_server.url)
    with pytest.raises(KubeError) as info:
        kube.list_page(PODS, namespace=None)
    assert not isinstance(info.value, TransientError)
    assert str(info.value) == (f"unauthorized (401) by {api_server.url} with the credentials of context 'test': they "
                               "were rejected or have expired; log in again (refresh the token or the exec plugin's "
                               "login) and retry")
    assert len(api_server.requests) == 2


EXEC_PLUGIN = """#!{python}
import datetime, json, os, pathlib
counter = pathlib.Path({counter!r})
n = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(n))
assert "KUBERNETES_EXEC_INFO" in os.environ
status = {{"token": "exec-%d" % n}}
if {expires_in!r} is not None:
    expiry = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds={expires_in!r})
    status["expirationTimestamp"] = expiry.strftime("%Y-%m-%dT%H:%M:%SZ")
print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", "status": status}}))
"""


def exec_plugin(tmp_path: Path, *, expires_in: int | None = None) -> dict:
    plugin = tmp_path / "bin" / "plugin"
    plugin.parent.mkdir(exist_ok=True)
    plugin.write_text(EXEC_PLUGIN.format(python=sys.executable, counter=str(tmp_path / "count"), expires_in=expires_in))
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    # a relative command with a path separator is relative to the kubeconfig's directory, as in kubectl
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "bin/plugin", "interactiveMode": "Never"}}


@pytest.mark.slow
def test_exec_plugin_runs_again_after_a_401(tmp_path, api_server):
    api_server.route("/api/v1/pods", lambda seen: Reply(body={"metadata": {"resourceVersion": "1"}, "items": []})
                     if seen.headers.get("authorization") == "Bearer exec-2" else Reply(401, {"kind": "Status"}))
    kube = connect(tmp_path, api_server.url, user=exec_plugin(tmp_path))
    kube.list_page(PODS, namespace=None)
    assert [r.headers.get("authorization") for r in api_server.requests] == ["Bearer exec-1", "Bearer exec-2"]


@pytest.mark.slow
def test_an_expiring_exec_token_is_renewed_before_requests(tmp_path, api_server):
    """The client counts a token as expired 5 minutes early: one valid for a minute is renewed each time."""
    api_server.route("/api/v1/pods", Reply(body={"metadata": {"resourceVersion": "1"}, "items": []}))
    kube = connect(tmp_path, api_server.url, user=exec_plugin(tmp_path, expires_in=60))
    kube.list_page(PODS, namespace=None)
    kube.list_page(PODS, namespace=None)
    assert [r.headers.get("authorization") for r in api_server.requests] == ["Bearer exec-2", "Bearer exec-3"]


@pytest.mark.slow
def test_a_long_lived_exec_token_is_reused(tmp_path, api_server):
    api_server.route("/api/v1/pods", Reply(body={"metadata": {"resourceVersion": "1"}, "items": []}))
    kube = connect(tmp_path, api_server.url, user=exec_plugin(tmp_path, expires_in=3600))
    kube.list_page(PODS, namespace=None)
    kube.list_page(PODS, namespace=None)
    assert [r.headers.get("authorization") for r in api_server.requests] == ["Bearer exec-1", "Bearer exec-1"]


def test_kubeconfig_is_never_written(tmp_path, api_server):
    api_server.route("/api/v1/pods", Reply(body={"metadata": {"resourceVersion": "1"}, "items": []}))
    path = write_kubeconfig(tmp_path / "config", server=api_server.url)
    before = (path.read_bytes(), os.stat(path).st_mtime_ns)
    kube = Kube.connect(resolve_target(kubeconfig=str(path), context=None, environ={}))
    kube.list_page(PODS, namespace=None)
    assert (path.read_bytes(), os.stat(path).st_mtime_ns) == before


def test_unreachable_server_names_the_url_and_context(tmp_path):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    kube = connect(tmp_path, url)
    with pytest.raises(TransientError) as info:
        kube.list_page(PODS, namespace=None)
    assert str(info.value) == (f"cannot reach the API server at {url} (Connection refused); check that the cluster is up "
                               "and that the server URL of context 'test' is right")


def make_tls(api_server, tmp_path) -> Path:
    """Serve ``api_server`` over TLS with a fresh self-signed certificate for 127.0.0.1; return the cert."""
    import ssl
    import subprocess
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    done = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                           str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip("openssl not available")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    api_server.httpd.socket = context.wrap_socket(api_server.httpd.socket, server_side=True)
    api_server.url = api_server.url.replace("http://", "https://")
    return cert


@pytest.mark.slow
def test_tls_failure_is_permanent_and_names_the_certificate_authority(tmp_path, api_server):
    make_tls(api_server, tmp_path)
    kube = connect(tmp_path, api_server.url)
    with pytest.raises(KubeError) as info:
        kube.list_page(PODS, namespace=None)
    assert not isinstance(info.value, TransientError)
    assert str(info.value) == (f"TLS certificate check failed for {api_server.url} (certificate verify failed: self-signed "
                               "certificate); check certificate-authority of the cluster of context 'test' in your "
                               "kubeconfig, or the server's certificate")


@pytest.mark.slow
def test_certificate_authority_data_is_trusted(tmp_path, api_server):
    import base64
    cert = make_tls(api_server, tmp_path)
    api_server.route("/api/v1/pods", Reply(body={"metadata": {"resourceVersion": "3"}, "items": []}))
    path = write_kubeconfig(tmp_path / "config", server=api_server.url)
    doc = yaml.safe_load(path.read_text())
    doc["clusters"][0]["cluster"]["certificate-authority-data"] = base64.b64encode(cert.read_bytes()).decode()
    path.write_text(yaml.safe_dump(doc))
    kube = Kube.connect(resolve_target(kubeconfig=str(path), context=None, environ={}))
    assert kube.list_page(PODS, namespace=None)["metadata"]["resourceVersion"] == "3"


@pytest.mark.slow
def test_insecure_skip_tls_verify_connects_without_a_warning_per_request(tmp_path, api_server, recwarn):
    make_tls(api_server, tmp_path)
    api_server.route("/api/v1/pods", Reply(body={"metadata": {"resourceVersion": "5"}, "items": []}))
    path = write_kubeconfig(tmp_path / "config", server=api_server.url)
    doc = yaml.safe_load(path.read_text())
    doc["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    path.write_text(yaml.safe_dump(doc))
    kube = Kube.connect(resolve_target(kubeconfig=str(path), context=None, environ={}))
    for _ in range(3):
        assert kube.list_page(PODS, namespace=None)["metadata"]["resourceVersion"] == "5"
    assert not [w for w in recwarn if "Unverified HTTPS" in str(w.message)]


def in_cluster_target(api_server, tmp_path, token: str = "sa-token"):
    """A pod's service-account mount for ``api_server`` (TLS), resolved as a pod resolves it: no kubeconfig,
    the service variables set, the mount directory named by SKTRACE_SERVICE_ACCOUNT_DIR."""
    cert = make_tls(api_server, tmp_path)
    mount = tmp_path / "serviceaccount"
    mount.mkdir()
    (mount / "ca.crt").write_bytes(cert.read_bytes())
    (mount / "token").write_text(token + "\n")  # a trailing newline, as a token file edited by hand has
    (mount / "namespace").write_text("recorder")
    port = api_server.url.rsplit(":", 1)[1]
    environ = {"HOME": str(tmp_path / "home"), "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port,
               "SKTRACE_SERVICE_ACCOUNT_DIR": str(mount)}
    return resolve_target(kubeconfig=None, context=None, environ=environ), mount


@pytest.mark.slow
def test_in_cluster_service_account(tmp_path, api_server):
    api_server.route("/api/v1/pods", Reply(body={"metadata": {"resourceVersion": "4"}, "items": []}))
    target, _ = in_cluster_target(api_server, tmp_path)
    assert (target.context, target.cluster_server, target.namespace) == ("in-cluster", api_server.url, "recorder")
    kube = Kube.connect(target)
    assert kube.list_page(PODS, namespace=None)["metadata"]["resourceVersion"] == "4"
    assert api_server.requests[-1].headers["Authorization"] == "Bearer sa-token"


@pytest.mark.slow
def test_in_cluster_token_rotated_by_the_kubelet_is_read_at_the_next_request(tmp_path, api_server):
    api_server.route("/api/v1/pods", Reply(body={"metadata": {"resourceVersion": "4"}, "items": []}))
    target, mount = in_cluster_target(api_server, tmp_path)
    kube = Kube.connect(target)
    kube.list_page(PODS, namespace=None)
    (mount / "..2026_11_23_rotated").write_text("rotated-token")
    os.replace(mount / "..2026_11_23_rotated", mount / "token")  # the kubelet swaps a new file in
    kube.list_page(PODS, namespace=None)
    assert [r.headers["Authorization"] for r in api_server.requests] == ["Bearer sa-token", "Bearer rotated-token"]
    (mount / "token").unlink()  # a mount gone bad later: the last token read is kept, the server judges it
    kube.list_page(PODS, namespace=None)
    assert api_server.requests[-1].headers["Authorization"] == "Bearer rotated-token"


@pytest.mark.slow
def test_in_cluster_401_after_the_reload_says_what_to_check_in_the_pod(tmp_path, api_server):
    api_server.route("/api/v1/pods", Reply(401, {"kind": "Status", "code": 401, "message": "Unauthorized"}))
    target, _ = in_cluster_target(api_server, tmp_path)
    kube = Kube.connect(target)
    with pytest.raises(KubeError) as info:
        kube.list_page(PODS, namespace=None)
    assert str(info.value) == (f"unauthorized (401) by {api_server.url} with the pod's service-account token: it was rejected "
                               "or has expired; check that the pod's ServiceAccount still exists and its token is mounted, "
                               "then restart the pod")
    assert len(api_server.requests) == 2  # the token was read again and tried once more


@pytest.mark.parametrize("missing, expected", [
    ("token", "cannot read the pod's service-account token {mount}/token: No such file or directory; mount the service "
              "account's token (automountServiceAccountToken: true), or pass --kubeconfig FILE"),
    ("ca.crt", "cannot read the cluster's CA certificate {mount}/ca.crt: No such file or directory; mount the service "
               "account's token (automountServiceAccountToken: true), or pass --kubeconfig FILE"),
])
@pytest.mark.slow
def test_in_cluster_without_a_mounted_service_account_is_one_line(tmp_path, api_server, missing, expected):
    target, mount = in_cluster_target(api_server, tmp_path)
    (mount / missing).unlink()
    with pytest.raises(KubeError) as info:
        Kube.connect(target)
    assert str(info.value) == expected.format(mount=mount)


def test_discover_fetches_only_needed_group_versions_and_reuses_the_cache(tmp_path, api_server):
    api_server.route("/api/v1", Reply(body=CORE_DOC))
    api_server.route("/apis/apps/v1", Reply(body=APPS_DOC))
    kube = connect(tmp_path, api_server.url)
    resources, fetched = kube.discover([POD, DEPLOY, GVK("batch", "v1", "Job")])
    assert resources == {
        POD: Resource(gvk=POD, plural="pods", namespaced=True, verbs=frozenset({"get", "list", "watch"})),
        DEPLOY: Resource(gvk=DEPLOY, plural="deployments", namespaced=True, verbs=frozenset({"list", "watch"})),
    }
    assert set(fetched) == {"v1", "apps/v1"}
    assert sorted(r.path for r in api_server.requests) == ["/api/v1", "/apis/apps/v1", "/apis/batch/v1"]
    api_server.requests.clear()
    again, fetched_again = kube.discover([POD, DEPLOY], cached=fetched)
    assert again == {k: v for k, v in resources.items()}
    assert fetched_again == {} and api_server.requests == []


def test_discover_refetches_a_cached_document_missing_a_kind(tmp_path, api_server):
    api_server.route("/apis/apps/v1", Reply(body=APPS_DOC))
    kube = connect(tmp_path, api_server.url)
    stale = {"apps/v1": {"resources": []}}
    resources, fetched = kube.discover([DEPLOY], cached=stale)
    assert DEPLOY in resources and fetched == {"apps/v1": APPS_DOC}


def test_cluster_identity_reads_kube_system_uid_or_empty_when_forbidden(tmp_path, api_server):
    kube = connect(tmp_path, api_server.url)
    api_server.route("/api/v1/namespaces/kube-system", Reply(body={"metadata": {"uid": "abc-123"}}))
    assert kube.cluster_identity() == (api_server.url, "abc-123")
    api_server.route("/api/v1/namespaces/kube-system", Reply(403, {"kind": "Status"}))
    assert kube.cluster_identity() == (api_server.url, "")


def test_resources_from_discovery_skips_subresources():
    assert set(resources_from_discovery("v1", CORE_DOC)) == {POD, GVK("", "v1", "Namespace")}
    ns = resources_from_discovery("v1", CORE_DOC)[GVK("", "v1", "Namespace")]
    assert ns.path(namespace="ignored") == "/api/v1/namespaces"
    assert ns.forbidden_message("list", namespace="ignored") == (
        "forbidden: cannot list namespaces (cluster-scoped); grant get, list and watch on namespaces: "
        "'kubectl sktrace rbac [--config FILE]' prints the ClusterRole and binding to apply")


@pytest.mark.slow
def test_engine_over_http_paginates_watches_resumes_and_relists_on_410(tmp_path, api_server):
    """run_watch wired to a real Kube: pages, a clean end, a bookmark resume, an HTTP 410, a relist."""
    import random

    from kubectl_sktrace.record.watching import run_watch

    lists = iter([
        Reply(body={"metadata": {"resourceVersion": "10", "continue": "p2"}, "items": [pod("a", "5")]}),
        Reply(body={"metadata": {"resourceVersion": "10"}, "items": [pod("b", "6")]}),
        Reply(body={"metadata": {"resourceVersion": "30"}, "items": [pod("b", "6")]}),
    ])
    watches = iter([
        Reply(lines=[{"type": "ADDED", "object": pod("c", "11")},
                     {"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "15"}}}]),
        Reply(410, {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version: 15 (20)"}),
        Reply(lines=[{"type": "DELETED", "object": pod("b", "31")}, HANG]),
    ])
    api_server.route("/api/v1/pods", lambda seen: next(watches) if seen.query.get("watch") else next(lists))
    kube = connect(tmp_path, api_server.url)
    stop = threading.Event()
    calls = []

    class Sink:
        def relist_begin(self, gvk, ts): calls.append(("begin",))
        def relist_page(self, gvk, items, ts): calls.append(("page", [i["metadata"]["name"] for i in items], items[0]["kind"]))
        def relist_end(self, gvk, rv, ts): calls.append(("end", rv))
        def failed(self, gvk, error): calls.append(("failed", str(error)))
        def interrupted(self, gvk, since, cause, detail): calls.append(("interrupted", cause))
        def resumed(self, gvk, ts, horizon): calls.append(("resumed", horizon))

        def event(self, gvk, kind, obj, ts):
            calls.append((kind, obj["metadata"]["name"]))
            if kind == "DELETED":
                stop.set()

    started = time.monotonic()
    run_watch(resource=PODS, namespace=None, list_page=kube.list_page, watch=kube.watch, sink=Sink(), clock=time.time,
              sleep=stop.wait, stop=stop, rng=random.Random(0), timeout_seconds=60)
    assert time.monotonic() - started < 3
    assert calls == [("begin",), ("page", ["a"], "Pod"), ("page", ["b"], "Pod"), ("end", "10"), ("ADDED", "c"),
                     ("interrupted", "watch expired"), ("begin",), ("page", ["b"], "Pod"), ("end", "30"), ("resumed", None),
                     ("DELETED", "b")]
    watch_versions = [r.query["resourceVersion"] for r in api_server.requests if r.query.get("watch")]
    assert watch_versions == ["10", "15", "30"]
    assert [r.query.get("continue") for r in api_server.requests if not r.query.get("watch")] == [None, "p2", None]
    assert all("resourceVersion" not in r.query for r in api_server.requests if not r.query.get("watch"))


@pytest.mark.slow
def test_one_stop_ends_every_stream_sharing_it_and_the_watchdog_thread_exits(tmp_path, api_server):
    api_server.route("/api/v1/pods", Reply(lines=[HANG]))
    kube = connect(tmp_path, api_server.url)
    kube.idle_timeout = 30
    stop = threading.Event()
    ended = []

    def consume():
        list(kube.watch(PODS, namespace=None, resource_version="1", timeout_seconds=300, stop=stop))
        ended.append(time.monotonic())

    threads = [threading.Thread(target=consume) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    stopped_at = time.monotonic()
    stop.set()
    for t in threads:
        t.join(3)
    assert len(ended) == 3 and max(ended) - stopped_at < 1.0
    time.sleep(0.5)
    assert not any(t.name == "sktrace-watch-stopper" for t in threading.enumerate())


# --- against the emulator (docs/spec.md §11), once it is on the branch ------------------------------------------


@pytest.fixture
def emu():
    emulator = pytest.importorskip("sktrace_emulator")
    server = emulator.Emulator(token="sekret", tls=False, bookmark_interval=0.3).start()
    yield server
    server.stop()


def emu_pod(name: str, namespace: str = "default") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


class LiveSink:
    """Keeps the set of live pod names as the engine reports them, and every call in order."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.live: dict[str, str] = {}
        self._relisting: dict[str, str] | None = None
        self.changed = threading.Condition()

    def relist_begin(self, gvk, ts):
        self._relisting = {}
        self._note(("begin",))

    def relist_page(self, gvk, items, ts):
        assert self._relisting is not None
        for item in items:
            self._relisting[item["metadata"]["name"]] = item["metadata"]["uid"]
        self._note(("page", len(items)))

    def relist_end(self, gvk, rv, ts):
        assert self._relisting is not None
        self.live, self._relisting = self._relisting, None
        self._note(("end",))

    def event(self, gvk, kind, obj, ts):
        name = obj["metadata"]["name"]
        if kind == "DELETED":
            self.live.pop(name, None)
        else:
            self.live[name] = obj["metadata"]["uid"]
        self._note((kind, name))

    def failed(self, gvk, error):
        self._note(("failed", str(error)))

    def unserved(self, gvk, ts, detail):
        self._note(("unserved", detail))

    def interrupted(self, gvk, since, cause, detail):
        self._note(("interrupted", cause))

    def resumed(self, gvk, ts, horizon):
        self._note(("resumed",))

    def _note(self, call):
        with self.changed:
            self.calls.append(call)
            self.changed.notify_all()

    def wait_for(self, predicate, timeout: float = 5.0) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: predicate(self), timeout), self.calls[-10:]


def start_engine(kube: Kube, sink: LiveSink) -> tuple[threading.Event, threading.Thread]:
    import random

    from kubectl_sktrace.record.watching import run_watch
    stop = threading.Event()
    thread = threading.Thread(target=run_watch, kwargs=dict(
        resource=PODS, namespace=None, list_page=kube.list_page, watch=kube.watch, sink=sink, clock=time.time,
        sleep=stop.wait, stop=stop, rng=random.Random(0), timeout_seconds=60), daemon=True)
    thread.start()
    return stop, thread


def emu_kube(emu, tmp_path) -> Kube:
    path = emu.write_kubeconfig(tmp_path / "config")
    return Kube.connect(resolve_target(kubeconfig=path, context=None, environ={}), idle_timeout=5)


@pytest.mark.slow
@pytest.mark.timeout(30)
def test_emulator_pagination_watch_drop_and_vanish_then_410(emu, tmp_path):
    for i in range(1203):
        emu.create(emu_pod(f"p{i:04d}", namespace=f"ns{i % 3}"))
    kube = emu_kube(emu, tmp_path)
    resources, _ = kube.discover([POD])
    assert resources[POD].plural == "pods"
    sink = LiveSink()
    stop, thread = start_engine(kube, sink)
    try:
        sink.wait_for(lambda s: ("end",) in s.calls)
        assert [c for c in sink.calls if c[0] == "page"] == [("page", 500), ("page", 500), ("page", 203)]
        assert len(sink.live) == 1203
        emu.create(emu_pod("new-1"))
        sink.wait_for(lambda s: "new-1" in s.live)
        emu.drop_watches()  # the connection breaks mid-stream; resume must neither replay nor lose events
        emu.create(emu_pod("new-2"))
        emu.delete("v1", "Pod", "default", "new-1", graceful=False)
        sink.wait_for(lambda s: "new-2" in s.live and "new-1" not in s.live)
        assert [c for c in sink.calls if c[1:] == ("new-1",) and c[0] == "ADDED"] == [("ADDED", "new-1")]
        assert sum(1 for c in sink.calls if c == ("begin",)) == 1
        emu.vanish("v1", "Pod", "ns0", "p0000")  # gone without a watch event ...
        emu.force_410("Pod")
        emu.drop_watches()  # ... caught by the relist the 410 forces
        sink.wait_for(lambda s: sum(1 for c in s.calls if c == ("end",)) == 2)
        assert "p0000" not in sink.live and len(sink.live) == 1203
    finally:
        stop.set()
        thread.join(3)
    assert not thread.is_alive()


@pytest.mark.slow
@pytest.mark.timeout(30)
def test_emulator_transient_failures_back_off_and_a_refused_kind_is_asked_again_until_it_may_be_read(emu, tmp_path):
    kube = emu_kube(emu, tmp_path)
    kube.discover([POD])
    emu.fail("Pod", 503, count=2)
    sink = LiveSink()
    stop, thread = start_engine(kube, sink)
    try:
        sink.wait_for(lambda s: ("end",) in s.calls)
        emu.fail("Pod", 403, count=2)
        emu.drop_watches()
        sink.wait_for(lambda s: any(c[0] == "failed" for c in s.calls))
        # a stream cut abruptly opens an outage, and the first request after it is the list that reads the server's
        # version; a stream that ended cleanly is watched again at once
        verb = "list" if ("interrupted", "API unreachable") in sink.calls else "watch"
        (failed,) = [c for c in sink.calls if c[0] == "failed"]  # told once, however many refusals
        assert failed == ("failed", f"forbidden: cannot {verb} pods in all namespaces; grant list and watch on "
                                    "pods: 'kubectl sktrace rbac --service-account default:sktrace [--config FILE]' "
                                    "prints the ClusterRole and binding to apply")
        sink.wait_for(lambda s: s.calls[-1] == ("end",))  # the refusals spent (1 s, then 2 s later): listed again
        assert thread.is_alive()
    finally:
        stop.set()


def test_emulator_view_in_one_namespace_refuses_the_cluster_scope_and_serves_that_namespace(emu, tmp_path):
    emu.create(emu_pod("a", namespace="team-a"))
    emu.grant_view(["team-a"], user="jane")
    kube = emu_kube(emu, tmp_path)
    resources, _ = kube.discover([POD])
    with pytest.raises(ForbiddenError) as info:
        kube.list_page(resources[POD], namespace=None)
    assert info.value.cluster_scope
    assert [p["metadata"]["name"] for p in kube.list_page(resources[POD], namespace="team-a")["items"]] == ["a"]
    with pytest.raises(ForbiddenError) as info:
        kube.list_page(resources[POD], namespace="team-b")
    assert not info.value.cluster_scope
    assert kube.cluster_identity() == (emu.url, "")  # kube-system is not readable: no uid, no error


def test_emulator_identity_and_wrong_token(emu, tmp_path):
    kube = emu_kube(emu, tmp_path)
    assert kube.cluster_identity() == (emu.url, emu.cluster_uid)
    path = emu.write_kubeconfig(tmp_path / "bad")
    Path(path).write_text(Path(path).read_text().replace("sekret", "wrong"))
    bad = Kube.connect(resolve_target(kubeconfig=path, context=None, environ={}))
    with pytest.raises(KubeError, match=r"^unauthorized \(401\) by http://127\.0\.0\.1:\d+ with the credentials of context 'emulator'"):
        bad.list_page(PODS, namespace=None)


@pytest.mark.parametrize("failure, expected", [
    ("exec: process returned 1. error: log in first", "exec: executable /bin/p failed with exit code 1: error: log in first"),
    ("exec: process returned 2. line one\n  line two\n", "exec: executable /bin/p failed with exit code 2: line one line two"),
    ("exec: process returned 3", "exec: executable /bin/p failed with exit code 3; run /bin/p yourself to see why"),
    ("exec: failed to decode process output: Expecting value: line 1 column 1 (char 0)",
     "exec: failed to decode process output: Expecting value: line 1 column 1 (char 0); check the plugin and its "
     "configuration in your kubeconfig"),
    ("exec: missing token or clientCertificateData field in plugin output",
     "exec: missing token or clientCertificateData field in plugin output; check the plugin and its configuration "
     "in your kubeconfig"),
    ("[Errno 13] Permission denied: '/bin/p'", "exec: executable /bin/p failed: [Errno 13] Permission denied: '/bin/p'; "
     "check the plugin and its configuration in your kubeconfig"),
], ids=["stderr", "multi-line-stderr", "silent", "bad-output", "no-token", "os-error"])
def test_exec_plugin_failures_are_one_line(failure, expected):
    from kubectl_sktrace.kube.errors import exec_failed

    assert str(exec_failed("/bin/p", failure, context="c")) == f"cannot get the credentials of context 'c': {expected}"


@pytest.mark.slow
def test_an_exec_plugin_printing_no_credential_is_reported_not_sent_as_anonymous(tmp_path, api_server):
    plugin = tmp_path / "plugin"
    plugin.write_text("#!/bin/sh\necho '{\"apiVersion\": \"client.authentication.k8s.io/v1beta1\", "
                      "\"kind\": \"ExecCredential\", \"status\": {}}'\n")
    plugin.chmod(0o755)
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(plugin), "interactiveMode": "Never"}}
    with pytest.raises(KubeError) as info:
        connect(tmp_path, api_server.url, user=user)
    assert str(info.value) == ("cannot get the credentials of context 'test': exec: missing token or clientCertificateData "
                               "field in plugin output; check the plugin and its configuration in your kubeconfig")
    assert api_server.requests == []


@pytest.mark.parametrize("url, status, reason, seconds, expected", [
    pytest.param("https://10.0.0.1:6443/api/v1/pods?limit=500", 200, "OK", 0.0049,
                 "GET https://10.0.0.1:6443/api/v1/pods?limit=500 200 OK in 4 milliseconds", id="answered"),
    pytest.param("https://10.0.0.1:6443/api/v1/pods", 410, "", 0.0,
                 "GET https://10.0.0.1:6443/api/v1/pods 410 Gone in 0 milliseconds", id="reason-from-the-status"),
    pytest.param("https://127.0.0.1:1/api", None, "", 0.0021,
                 "GET https://127.0.0.1:1/api  in 2 milliseconds", id="no-answer-as-kubectl"),
    pytest.param("https://admin:s3cr3t@10.0.0.1:6443/api", 200, "OK", 0.01,
                 "GET https://10.0.0.1:6443/api 200 OK in 10 milliseconds", id="userinfo-left-out"),
])
def test_request_line_is_kubectl_v6s(url, status, reason, seconds, expected) -> None:
    from kubectl_sktrace.kube.client import request_line

    assert request_line("GET", url, status=status, reason=reason, seconds=seconds) == expected


def test_request_url_encodes_the_query_in_key_order() -> None:
    from kubectl_sktrace.kube.client import request_url

    assert request_url("https://h", "/api/v1/pods", {"watch": "true", "resourceVersion": "7", "continue": "a b/c"}) == (
        "https://h/api/v1/pods?continue=a+b%2Fc&resourceVersion=7&watch=true")
    assert request_url("https://h", "/api", {}) == "https://h/api"


@pytest.mark.slow
@pytest.mark.timeout(30)
@pytest.mark.parametrize("framing", ["per-event", "batched"])
def test_emulator_watch_over_tls_reads_every_event_in_order_then_reuses_the_connection(tmp_path, framing):
    emulator = pytest.importorskip("sktrace_emulator")
    with emulator.Emulator(token="sekret", framing=framing) as emu:
        if not emu.tls:
            pytest.skip("no openssl to make the emulator's certificate")
        kube = emu_kube(emu, tmp_path)
        since = emu.resource_version
        for i in range(300):
            emu.create(emu_pod(f"p{i:03d}"))
        names = [e["object"]["metadata"]["name"]
                 for e in kube.watch(PODS, namespace=None, resource_version=since, timeout_seconds=1)]
        assert names == [f"p{i:03d}" for i in range(300)]
        # the stream ended with its last chunk: the connection went back to the pool and serves the next request
        pool = kube._api.rest_client.pool_manager.connection_from_url(emu.url)
        assert len(kube.list_page(PODS, namespace=None)["items"]) == 300
        assert pool.num_connections == 1
        stop = threading.Event()
        threading.Timer(0.3, stop.set).start()
        started = time.monotonic()
        assert list(kube.watch(PODS, namespace=None, resource_version=emu.resource_version, timeout_seconds=60, stop=stop)) == []
        assert time.monotonic() - started < 1.0


COALESCE_CASES = {
    # 1.28 MB/s (128 KB in 0.1 s): exactly the longest pause; slower streams are paused as long, not longer
    "a few hundred pods a second": (128 * 1024, 0.1, 0.001, 0.1, 0.1),
    "a slow stream": (6_000, 0.1, 0.05, 0.1, 0.1),
    # 12.8 MB/s: 10 ms would do; never shorter than the shortest pause
    "a fast stream": (1_280 * 1024, 0.1, 0.001, 0.1, 0.02),
    "in between": (256 * 1024, 0.1, 0.001, 0.1, 0.05),
    # one slow cycle after short pauses: at most twice the previous pause
    "a stream slowing down": (6_000, 0.1, 0.005, 0.02, 0.04),
    "a stream slowing down, a cycle later": (6_000, 0.1, 0.005, 0.04, 0.08),
    # the last read waited longer than the longest pause: a burst may be starting, whatever the rate before
    "after a quiet spell": (6_000, 5.0, 4.9, 0.1, 0.02),
    "nothing received": (0, 0.1, 0.01, 0.1, 0.02),
}


@pytest.mark.parametrize("received, seconds, waited, previous, expected", COALESCE_CASES.values(), ids=COALESCE_CASES.keys())
def test_coalesce_pause_lets_a_stream_queue_one_receive_buffer_at_its_rate(received, seconds, waited, previous, expected):
    from kubectl_sktrace.kube.stream import coalesce_pause

    assert coalesce_pause(received=received, seconds=seconds, waited=waited, previous=previous) == pytest.approx(expected)


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_watch_at_a_few_hundred_events_a_second_reads_them_in_batches_a_tenth_of_a_second_apart(tmp_path, monkeypatch):
    """One event per chunk, flushed, as a real server sends them: the watch pauses its reads so that they come in
    batches, and at a rate far below a receive buffer per tenth of a second it pauses the longest."""
    emulator = pytest.importorskip("sktrace_emulator")
    from kubectl_sktrace.kube import stream

    reader = threading.current_thread()
    pauses: list[float] = []
    real_sleep = time.sleep

    def sleep(seconds: float) -> None:
        if threading.current_thread() is reader:
            pauses.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(stream.time, "sleep", sleep)
    with emulator.Emulator(token="sekret") as emu:
        kube = emu_kube(emu, tmp_path)
        since = emu.resource_version
        done = threading.Event()

        def pace() -> None:  # ~200 small pods a second (~0.2 MB/s), one event each
            for i in range(400):
                if done.is_set():
                    return
                emu.create(emu_pod(f"p{i:03d}"))
                real_sleep(0.005)

        pacer = threading.Thread(target=pace, daemon=True)
        pacer.start()
        names = []
        for event in kube.watch(PODS, namespace=None, resource_version=since, timeout_seconds=30):
            if event["type"] == "ADDED":
                names.append(event["object"]["metadata"]["name"])
            if len(names) == 400:
                break
        done.set()
        pacer.join()
    assert names == [f"p{i:03d}" for i in range(400)]
    assert pauses, "the paced stream was read without a pause"
    # the pauses grow to the longest within a few reads (a stall of the pacer starts them short again)
    longest = [p for p in pauses if p == stream.COALESCE_MAX]
    assert len(longest) >= len(pauses) / 3, pauses


def test_an_event_reaches_the_cache_within_half_a_second_however_long_its_stream_pauses():
    """docs/spec.md §6: a kill -9 loses at most the last half second. An event waits in the socket for at most the
    longest pause, then at most one commit interval in its batch."""
    from kubectl_sktrace.kube.stream import COALESCE_MAX
    from kubectl_sktrace.record.writer import COMMIT_INTERVAL

    assert COALESCE_MAX + COMMIT_INTERVAL <= 0.4  # a tenth of a second left for the event's own way
