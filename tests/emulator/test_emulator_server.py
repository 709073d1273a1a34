"""The emulator over real HTTP(S): discovery, REST verbs, list and watch protocol rules, fault knobs."""

from __future__ import annotations

import http.client
import json
import ssl
import time
from pathlib import Path
from typing import Any

import pytest

from sktrace_emulator import Emulator

pytestmark = pytest.mark.timeout(30)

POD = {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}


def make_pod(name: str, namespace: str = "default", **labels: str) -> dict:
    return {**POD, "metadata": {"name": name, "namespace": namespace, "labels": labels}}


def connect(emu: Emulator) -> http.client.HTTPConnection:
    if emu.tls:
        context = ssl.create_default_context(cadata=emu.ca_pem.decode())
        return http.client.HTTPSConnection("127.0.0.1", emu.port, context=context, timeout=10)
    return http.client.HTTPConnection("127.0.0.1", emu.port, timeout=10)


def call(emu: Emulator, method: str, path: str, body: Any = None, *, token: str | None = "test-token", headers: dict[str, str] | None = None) -> tuple[int, Any, http.client.HTTPResponse]:
    conn = connect(emu)
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    if token is not None:
        all_headers["Authorization"] = f"Bearer {token}"
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=all_headers)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, json.loads(data) if data and data[:1] in b"{[" else data, resp


def watch(emu: Emulator, path: str) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    conn = connect(emu)
    conn.request("GET", path, headers={"Authorization": "Bearer test-token"})
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Transfer-Encoding") == "chunked"
    return conn, resp


def events(resp: http.client.HTTPResponse, count: int) -> list[dict]:
    return [json.loads(resp.readline()) for _ in range(count)]


# discovery and auth


def test_token_is_required(emulator: Emulator) -> None:
    status, body, _ = call(emulator, "GET", "/api/v1/pods", token=None)
    assert status == 401 and body["reason"] == "Unauthorized" and body["kind"] == "Status"
    assert call(emulator, "GET", "/api/v1/pods", token="wrong")[0] == 401


def test_the_bearer_scheme_is_case_insensitive_and_a_rotated_token_replaces_the_old(emulator: Emulator, tmp_path: Path) -> None:
    assert call(emulator, "GET", "/api/v1/pods", token=None, headers={"Authorization": "bearer test-token"})[0] == 200
    env = emulator.write_service_account(tmp_path / "sa", namespace="team-a")
    assert env == {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(emulator.port)}
    assert [(tmp_path / "sa" / f).read_bytes() for f in ("token", "namespace", "ca.crt")] == [b"test-token", b"team-a", emulator.ca_pem]
    emulator.rotate_token(tmp_path / "sa", "new-token")
    assert (tmp_path / "sa" / "token").read_text() == "new-token"
    before = emulator.unauthorized
    assert call(emulator, "GET", "/api/v1/pods")[0] == 401  # the old one expired
    assert call(emulator, "GET", "/api/v1/pods", token="new-token")[0] == 200
    assert emulator.unauthorized == before + 1


def test_discovery_documents(emulator: Emulator) -> None:
    assert call(emulator, "GET", "/version")[1]["major"] == "1"
    assert call(emulator, "GET", "/api")[1]["versions"] == ["v1"]
    groups = {g["name"]: g for g in call(emulator, "GET", "/apis")[1]["groups"]}
    assert {"apps", "batch"} <= set(groups) and groups["apps"]["preferredVersion"]["groupVersion"] == "apps/v1"
    core = {r["name"]: r for r in call(emulator, "GET", "/api/v1")[1]["resources"]}
    assert core["pods"]["namespaced"] and not core["namespaces"]["namespaced"] and "watch" in core["pods"]["verbs"]
    assert core["nodes"]["kind"] == "Node" and core["pods"]["shortNames"] == ["po"]
    apps = call(emulator, "GET", "/apis/apps/v1")[1]
    assert apps["groupVersion"] == "apps/v1" and "deployments" in {r["name"] for r in apps["resources"]}
    assert call(emulator, "GET", "/apis/apps")[1]["kind"] == "APIGroup"
    assert call(emulator, "GET", "/apis/nope/v1")[0] == 404


def test_custom_kind_is_served(emulator: Emulator) -> None:
    emulator.register_kind("example.com", "v1alpha1", "Widget", "widgets")
    assert "example.com" in {g["name"] for g in call(emulator, "GET", "/apis")[1]["groups"]}
    status, made, _ = call(emulator, "POST", "/apis/example.com/v1alpha1/namespaces/x/widgets", {"apiVersion": "example.com/v1alpha1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}})
    assert status == 201 and made["metadata"]["namespace"] == "x"
    listed = call(emulator, "GET", "/apis/example.com/v1alpha1/widgets")[1]
    assert listed["kind"] == "WidgetList" and listed["items"][0]["spec"] == {"size": 3}


# REST verbs


def test_create_get_patch_replace_delete(emulator: Emulator) -> None:
    status, made, _ = call(emulator, "POST", "/api/v1/namespaces/x/pods", make_pod("p", "x"))
    assert status == 201 and made["metadata"]["uid"]
    assert call(emulator, "POST", "/api/v1/namespaces/x/pods", make_pod("p", "x"))[0] == 409
    got = call(emulator, "GET", "/api/v1/namespaces/x/pods/p")[1]
    assert got == made
    status, patched, _ = call(emulator, "PATCH", "/api/v1/namespaces/x/pods/p", {"metadata": {"labels": {"a": "b"}}}, headers={"Content-Type": "application/merge-patch+json"})
    assert status == 200 and patched["metadata"]["labels"] == {"a": "b"}
    patched["metadata"]["annotations"] = {"note": "x"}
    status, replaced, _ = call(emulator, "PUT", "/api/v1/namespaces/x/pods/p", patched)
    assert status == 200 and int(replaced["metadata"]["resourceVersion"]) > int(patched["metadata"]["resourceVersion"])
    assert call(emulator, "PUT", "/api/v1/namespaces/x/pods/p", patched)[0] == 409  # stale resourceVersion
    assert call(emulator, "DELETE", "/api/v1/namespaces/x/pods/p")[0] == 200
    status, body, _ = call(emulator, "GET", "/api/v1/namespaces/x/pods/p")
    assert status == 404 and body["message"] == 'pods "p" not found'


# lists


def test_list_shape_pagination_and_selectors(emulator: Emulator) -> None:
    for i in range(5):
        emulator.create(make_pod(f"p{i}", "x" if i % 2 else "y", app="web" if i < 3 else "db"))
    body = call(emulator, "GET", "/api/v1/pods")[1]
    assert body["kind"] == "PodList" and body["apiVersion"] == "v1"
    assert body["metadata"]["resourceVersion"] == emulator.resource_version and "continue" not in body["metadata"]
    assert all("kind" not in item and "apiVersion" not in item for item in body["items"])
    first = call(emulator, "GET", "/api/v1/pods?limit=2")[1]
    assert len(first["items"]) == 2 and first["metadata"]["remainingItemCount"] == 3
    emulator.create(make_pod("late", "x"))
    rest = call(emulator, "GET", f"/api/v1/pods?limit=10&continue={first['metadata']['continue']}")[1]
    assert [i["metadata"]["name"] for i in first["items"] + rest["items"]] == ["p1", "p3", "p0", "p2", "p4"]
    assert rest["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    names = [i["metadata"]["name"] for i in call(emulator, "GET", "/api/v1/namespaces/x/pods?labelSelector=app%3Dweb")[1]["items"]]
    assert names == ["p1"]
    names = [i["metadata"]["name"] for i in call(emulator, "GET", "/api/v1/pods?fieldSelector=metadata.name%3Dp4")[1]["items"]]
    assert names == ["p4"]


def test_table_output(emulator: Emulator) -> None:
    emulator.create(make_pod("p"))
    table = call(emulator, "GET", "/api/v1/namespaces/default/pods", headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})[1]
    assert table["kind"] == "Table" and [c["name"] for c in table["columnDefinitions"]] == ["Name", "Ready", "Status", "Restarts", "Age"]
    assert table["rows"][0]["cells"][:4] == ["p", "0/1", "Pending", "0"]
    assert table["rows"][0]["object"]["metadata"]["name"] == "p"


# watches


def test_watch_without_version_sends_synthetic_added_then_live(emulator: Emulator) -> None:
    emulator.create(make_pod("a"))
    conn, resp = watch(emulator, "/api/v1/pods?watch=1")
    first = events(resp, 1)[0]
    assert first["type"] == "ADDED" and first["object"]["metadata"]["name"] == "a" and first["object"]["kind"] == "Pod"
    emulator.patch("v1", "Pod", "default", "a", {"metadata": {"labels": {"x": "y"}}})
    emulator.delete("v1", "Pod", "default", "a")
    got = [(e["type"], e["object"]["metadata"]["name"], e["object"]["metadata"].get("deletionGracePeriodSeconds")) for e in events(resp, 3)]
    assert got == [("MODIFIED", "a", None), ("MODIFIED", "a", 0), ("DELETED", "a", 0)]
    conn.close()


def test_watch_replays_history_after_a_version_with_selectors(emulator: Emulator) -> None:
    start = emulator.resource_version
    emulator.create(make_pod("a", app="web"))
    emulator.create(make_pod("b", app="db"))
    emulator.create(make_pod("c", "other", app="web"))
    conn, resp = watch(emulator, f"/api/v1/namespaces/default/pods?watch=true&resourceVersion={start}&labelSelector=app%3Dweb&timeoutSeconds=1")
    got = [json.loads(line) for line in resp.read().splitlines()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in got] == [("ADDED", "a")]
    conn.close()


def test_watch_timeout_ends_stream_cleanly(emulator: Emulator) -> None:
    started = time.monotonic()
    conn, resp = watch(emulator, f"/api/v1/pods?watch=1&resourceVersion={emulator.resource_version}&timeoutSeconds=1")
    assert resp.read() == b""  # a complete chunked body: the terminating chunk arrived
    assert 0.9 <= time.monotonic() - started < 3
    conn.close()


def test_bookmarks_carry_only_the_resource_version(emulator: Emulator) -> None:
    conn, resp = watch(emulator, f"/api/v1/pods?watch=1&resourceVersion={emulator.resource_version}&allowWatchBookmarks=true")
    emulator.create(make_pod("a"))
    added, bookmark = events(resp, 2)
    assert added["type"] == "ADDED"
    assert bookmark == {"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": emulator.resource_version}}}
    conn.close()


def test_compacted_version_gets_error_410_event(emulator: Emulator) -> None:
    old = emulator.resource_version
    emulator.create(make_pod("a"))
    emulator.compact()
    conn, resp = watch(emulator, f"/api/v1/pods?watch=1&resourceVersion={old}")
    body = resp.read().splitlines()
    assert len(body) == 1
    error = json.loads(body[0])
    assert error["type"] == "ERROR"
    assert {k: error["object"][k] for k in ("kind", "apiVersion", "status", "reason", "code")} == {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired", "code": 410}
    assert error["object"]["message"].startswith(f"too old resource version: {old}")
    conn.close()


def test_graceful_deletion_over_watch(emulator: Emulator) -> None:
    bound = make_pod("b")
    bound["spec"]["nodeName"] = "node-1"
    emulator.create(bound)
    conn, resp = watch(emulator, f"/api/v1/pods?watch=1&resourceVersion={emulator.resource_version}")
    status, answer, _ = call(emulator, "DELETE", "/api/v1/namespaces/default/pods/b")
    assert status == 200  # a pod's DELETE answers with the Pod, marked, as kube-apiserver v1.28 does
    assert answer["kind"] == "Pod" and answer["metadata"]["deletionGracePeriodSeconds"] == 30
    modified, final, deleted = events(resp, 3)
    assert modified["type"] == "MODIFIED" and modified["object"]["metadata"]["deletionGracePeriodSeconds"] == 30
    # no kubelet runs: the final delete (grace 0, deletionTimestamp back to when the deletion began) follows at once
    assert final["type"] == "MODIFIED" and final["object"]["metadata"]["deletionGracePeriodSeconds"] == 0
    assert final["object"]["metadata"]["deletionTimestamp"] <= modified["object"]["metadata"]["deletionTimestamp"]
    assert deleted["type"] == "DELETED"
    conn.close()


# fault knobs


def test_force_410_hits_the_next_watch_of_that_kind_only(emulator: Emulator) -> None:
    emulator.force_410("Pod")
    conn, resp = watch(emulator, "/apis/apps/v1/deployments?watch=1&timeoutSeconds=1")
    assert resp.read() == b""
    conn.close()
    conn, resp = watch(emulator, "/api/v1/pods?watch=1&resourceVersion=1")
    assert json.loads(resp.read())["object"]["code"] == 410
    conn.close()
    conn, resp = watch(emulator, "/api/v1/pods?watch=1&timeoutSeconds=1")
    assert resp.read() == b""
    conn.close()


def test_drop_watches_cuts_streams_without_the_terminating_chunk(emulator: Emulator) -> None:
    conn, resp = watch(emulator, f"/api/v1/pods?watch=1&resourceVersion={emulator.resource_version}")
    emulator.create(make_pod("a"))
    assert events(resp, 1)[0]["type"] == "ADDED"
    emulator.drop_watches()
    with pytest.raises((http.client.IncompleteRead, ConnectionError, ssl.SSLError)):
        resp.read()
    conn.close()


def test_a_connection_accepted_before_the_server_stopped_gets_no_watch_served_after(emulator: Emulator) -> None:
    """A stopped API server serves nothing more: a connection it accepted just before it stopped (after its watches
    were dropped) does not go on streaming a watch, even across a restart on the same port."""
    conn = connect(emulator)
    conn.connect()  # accepted (and, with TLS, handshaken) while the server runs
    emulator.stop()
    emulator.start()
    conn.request("GET", f"/api/v1/pods?watch=1&resourceVersion={emulator.resource_version}", headers={"Authorization": "Bearer test-token"})
    resp = conn.getresponse()
    with pytest.raises((http.client.IncompleteRead, ConnectionError, ssl.SSLError)):
        resp.read()
    conn.close()


@pytest.mark.parametrize(("status", "reason"), [(429, "TooManyRequests"), (500, "InternalError"), (401, "Unauthorized"), (403, "Forbidden")])
def test_fail_answers_status_for_that_kind_count_times(emulator: Emulator, status: int, reason: str) -> None:
    emulator.fail("Pod", status, count=2, retry_after=3 if status == 429 else None)
    assert call(emulator, "GET", "/apis/apps/v1/deployments")[0] == 200
    got, body, resp = call(emulator, "GET", "/api/v1/pods")
    assert (got, body["reason"], body["code"]) == (status, reason, status)
    assert resp.getheader("Retry-After") == ("3" if status == 429 else None)
    assert call(emulator, "GET", "/api/v1/pods?watch=1")[0] == status
    assert call(emulator, "GET", "/api/v1/pods")[0] == 200


def test_forbidden_message_names_verb_and_resource(emulator: Emulator) -> None:
    emulator.fail(None, 403)
    body = call(emulator, "GET", "/apis/batch/v1/jobs")[1]
    assert body["message"] == ('jobs.batch is forbidden: User "system:serviceaccount:default:sktrace" cannot list resource "jobs" '
                               'in API group "batch" at the cluster scope')
    assert body["details"] == {"group": "batch", "kind": "jobs"}


# RBAC of a user bound to `view` in one namespace: the API server's own 403 text, word for word

VIEW_CASES = [
    ("GET", "/api/v1/pods", 403, 'pods is forbidden: User "jane" cannot list resource "pods" in API group "" at the cluster scope'),
    ("GET", "/apis/apps/v1/deployments?watch=1&timeoutSeconds=1", 403,
     'deployments.apps is forbidden: User "jane" cannot watch resource "deployments" in API group "apps" at the cluster scope'),
    ("GET", "/api/v1/namespaces/team-b/pods", 403,
     'pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "team-b"'),
    ("GET", "/api/v1/namespaces/kube-system", 403,
     'namespaces "kube-system" is forbidden: User "jane" cannot get resource "namespaces" in API group "" in the namespace "kube-system"'),
    ("GET", "/api/v1/nodes", 403, 'nodes is forbidden: User "jane" cannot list resource "nodes" in API group "" at the cluster scope'),
    ("GET", "/api/v1/namespaces/team-a/secrets", 403,
     'secrets is forbidden: User "jane" cannot list resource "secrets" in API group "" in the namespace "team-a"'),
    ("POST", "/api/v1/namespaces/team-a/pods", 403,
     'pods is forbidden: User "jane" cannot create resource "pods" in API group "" in the namespace "team-a"'),
    ("GET", "/api/v1/namespaces/team-a/pods", 200, None),
    ("GET", "/apis/apps/v1/namespaces/team-a/deployments?watch=1&timeoutSeconds=1", 200, None),
    ("GET", "/api/v1/namespaces/team-a/pods/a", 200, None),
    ("GET", "/api/v1/namespaces/team-a", 200, None),
    ("GET", "/apis/apps/v1", 200, None),
    ("GET", "/version", 200, None),
]


@pytest.mark.parametrize(("method", "path", "status", "message"), VIEW_CASES,
                         ids=["list-all", "watch-all", "list-other-ns", "get-kube-system", "cluster-kind", "secrets", "create",
                              "list-ns", "watch-ns", "get-in-ns", "get-own-ns", "discovery", "version"])
def test_a_view_grant_in_one_namespace_allows_reading_it_and_refuses_the_rest(
    emulator: Emulator, method: str, path: str, status: int, message: str | None
) -> None:
    emulator.create(make_pod("a", "team-a"))
    emulator.grant_view(["team-a"], user="jane")
    got, body, _ = call(emulator, method, path, make_pod("b", "team-a") if method == "POST" else None)
    assert got == status
    if message is not None:
        assert (body["reason"], body["code"], body["message"]) == ("Forbidden", 403, message)


def test_grant_view_none_allows_everything_again(emulator: Emulator) -> None:
    emulator.grant_view(["team-a"])
    assert call(emulator, "GET", "/api/v1/pods")[0] == 403
    emulator.grant_view(None)
    assert call(emulator, "GET", "/api/v1/pods")[0] == 200


def test_delay_slows_responses(emulator: Emulator) -> None:
    emulator.set_delay(0.3)
    started = time.monotonic()
    call(emulator, "GET", "/version")
    assert time.monotonic() - started >= 0.3
    emulator.set_delay(0)


def test_vanish_removes_without_an_event(emulator: Emulator) -> None:
    emulator.create(make_pod("a"))
    rv = emulator.resource_version
    conn, resp = watch(emulator, f"/api/v1/pods?watch=1&resourceVersion={rv}&timeoutSeconds=1")
    emulator.vanish("v1", "Pod", "default", "a")
    assert resp.read() == b""
    assert emulator.get("v1", "Pod", "default", "a") is None and emulator.resource_version == rv
    conn.close()


def test_cluster_uid_is_kube_system_uid(emulator: Emulator) -> None:
    assert emulator.cluster_uid == call(emulator, "GET", "/api/v1/namespaces/kube-system")[1]["metadata"]["uid"]
    names = [i["metadata"]["name"] for i in call(emulator, "GET", "/api/v1/namespaces")[1]["items"]]
    assert {"default", "kube-system", "kube-public"} <= set(names)


def test_plain_http_mode_and_kubeconfig(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with Emulator(token="test-token", tls=False) as emu:
        assert emu.url.startswith("http://127.0.0.1:")
        assert call(emu, "GET", "/api/v1/pods")[0] == 200
        config = json.loads(open(emu.write_kubeconfig(tmp_path / "k", context="c")).read())
        assert config["current-context"] == "c" and config["clusters"][0]["cluster"] == {"server": emu.url}
        assert config["users"][0]["user"] == {"token": "test-token"}


def test_watch_as_table_for_kubectl_human_output(emulator: Emulator) -> None:
    conn = connect(emulator)
    conn.request("GET", f"/api/v1/pods?watch=1&resourceVersion={emulator.resource_version}", headers={"Authorization": "Bearer test-token", "Accept": "application/json;as=Table;g=meta.k8s.io;v=v1"})
    resp = conn.getresponse()
    emulator.create(make_pod("t"))
    event = events(resp, 1)[0]
    assert event["type"] == "ADDED" and event["object"]["kind"] == "Table"
    assert event["object"]["rows"][0]["cells"][0] == "t"
    conn.close()


# quiet kinds, kinds that come and go, roles that change: as a real API server (v1.28, measured)


def test_the_watch_of_a_kind_that_does_not_change_gets_no_byte_until_its_timeout(emulator: Emulator) -> None:
    emulator.create(make_pod("a"))
    started = time.monotonic()
    conn, resp = watch(emulator, f"/apis/batch/v1/jobs?watch=1&resourceVersion={emulator.resource_version}"
                                 "&allowWatchBookmarks=true&timeoutSeconds=1")
    emulator.create(make_pod("b"))  # another kind's version moves: no bookmark for jobs (bookmarks every 0.2 s here)
    assert resp.read() == b"" and time.monotonic() - started >= 0.9
    conn.close()


def widget_crd() -> dict:
    from sktrace_emulator import crd_object

    return crd_object("example.com", "Widget", "widgets")


def widget(name: str) -> dict:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name, "namespace": "default"}, "spec": {"size": 1}}


NOT_FOUND = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
             "message": "the server could not find the requested resource", "reason": "NotFound", "details": {}, "code": 404}


def test_a_crd_serves_its_kind_and_takes_it_away_with_its_objects(emulator: Emulator) -> None:
    assert call(emulator, "GET", "/apis/example.com/v1/widgets")[:2] == (404, NOT_FOUND)
    assert call(emulator, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widget_crd())[0] == 201
    assert call(emulator, "GET", "/apis/example.com/v1")[1]["resources"][0]["name"] == "widgets"
    for name in ("w1", "w2"):
        assert call(emulator, "POST", "/apis/example.com/v1/namespaces/default/widgets", widget(name))[0] == 201
    listed = call(emulator, "GET", "/apis/example.com/v1/widgets")[1]
    conn, resp = watch(emulator, f"/apis/example.com/v1/widgets?watch=1&resourceVersion={listed['metadata']['resourceVersion']}")
    assert call(emulator, "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com")[0] == 200
    deleted = [json.loads(line) for line in resp.read().splitlines()]  # a DELETED each, then the stream's clean end
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in deleted] == [("DELETED", "w1"), ("DELETED", "w2")]
    conn.close()
    assert call(emulator, "GET", "/apis/example.com/v1/widgets")[:2] == (404, NOT_FOUND)
    assert call(emulator, "GET", "/apis/example.com/v1/widgets?watch=1&resourceVersion=1")[:2] == (404, NOT_FOUND)
    assert "example.com" not in [g["name"] for g in call(emulator, "GET", "/apis")[1]["groups"]]
    assert call(emulator, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widget_crd())[0] == 201
    assert call(emulator, "GET", "/apis/example.com/v1/widgets")[1]["items"] == []  # served again, at once, empty


def test_a_role_changed_mid_run_is_met_at_the_next_request_while_an_open_watch_keeps_streaming(emulator: Emulator) -> None:
    rules = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}]
    emulator.grant_rules(rules, user="system:serviceaccount:sktrace:sktrace")
    conn, resp = watch(emulator, f"/api/v1/pods?watch=1&resourceVersion={emulator.resource_version}")
    emulator.grant_rules([], user="system:serviceaccount:sktrace:sktrace")  # revoked
    emulator.create(make_pod("a"))
    assert events(resp, 1)[0]["object"]["metadata"]["name"] == "a"  # authorized when it was opened: it goes on
    conn.close()
    status, body, _ = call(emulator, "GET", "/api/v1/pods?watch=1&resourceVersion=1")
    assert (status, body["message"]) == (403, 'pods is forbidden: User "system:serviceaccount:sktrace:sktrace" cannot watch '
                                              'resource "pods" in API group "" at the cluster scope')
    emulator.grant_rules(rules)
    assert call(emulator, "GET", "/api/v1/pods")[0] == 200


def test_a_refused_post_leaves_nothing_on_a_kept_alive_connection(emulator: Emulator) -> None:
    emulator.grant_view(["team-a"], user="jane")
    conn = connect(emulator)
    headers = {"Authorization": "Bearer test-token", "Content-Type": "application/json"}
    conn.request("POST", "/api/v1/namespaces/team-a/pods", body=json.dumps(make_pod("b", "team-a")), headers=headers)
    refused = conn.getresponse()
    assert (refused.status, json.loads(refused.read())["reason"]) == (403, "Forbidden")
    conn.request("GET", "/version", headers=headers)  # the same connection: its next request is read as sent
    answer = conn.getresponse()
    assert (answer.status, json.loads(answer.read())["gitVersion"]) == (200, "v1.30.0-sktrace-emulator")
    conn.close()
