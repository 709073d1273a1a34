"""The protocol every server of the distribution speaks (``sktrace_apiserver``), and the state ``serve --at`` answers
from (``apiserver/state``): pure cases."""

from __future__ import annotations

import json
import socket
import ssl
import threading

import pytest

from kubectl_sktrace.apiserver.catalog import Named
from kubectl_sktrace.apiserver import columns
from kubectl_sktrace.apiserver.state import Filter, Item, Served
from kubectl_sktrace.model import GVK
from kubectl_sktrace.past.kinds import Kind
from kubectl_sktrace.past.state import PodLife
from sktrace_apiserver import discovery, tables, tls, watch
from sktrace_apiserver.selectors import parse_field_selector, parse_label_selector
from sktrace_apiserver.status import ApiError

POD = {"metadata": {"name": "p", "namespace": "a", "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": {"containers": [{}, {}]}}


@pytest.mark.parametrize("pod, cells", [
    (POD, ["p", "0/2", "Pending", "0"]),
    ({**POD, "status": {"phase": "Running", "containerStatuses": [{"ready": True, "restartCount": 2}, {"ready": False}]}},
     ["p", "1/2", "Running", "2"]),
], ids=["new", "running"])
def test_the_emulators_table_of_a_live_pod(pod: dict, cells: list[str]) -> None:
    table = tables.table("Pod", [pod], rv="7")
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Ready", "Status", "Restarts", "Age"]
    assert table["rows"][0]["cells"][:4] == cells and table["metadata"] == {"resourceVersion": "7"}
    assert table["rows"][0]["object"] == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": pod["metadata"]}


def test_the_past_in_the_table_form_has_get_at_s_columns() -> None:
    """A ConfigMap's DATA, a CronJob's SCHEDULE, a pod's STATUS from its lifecycle, AGE at the second asked; what only
    a status says ``<unknown>``; ``-o wide``'s columns at priority 1."""
    cron = Kind(GVK("batch", "v1", "CronJob"), "cronjobs", True)
    made = {"metadata": {"name": "nightly", "namespace": "a", "uid": "u", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x:1"}]}}}}}}
    table = columns.table(cron, [Item({"apiVersion": "batch/v1", "kind": "CronJob", **made})], second=1767225600 + 7200, rv="3")
    assert [(c["name"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("NAME", 0), ("SCHEDULE", 0), ("TIMEZONE", 0), ("SUSPEND", 0), ("ACTIVE", 0), ("LAST SCHEDULE", 0), ("AGE", 0), ("CONTAINERS", 1), ("IMAGES", 1)]
    assert table["rows"][0]["cells"] == ["nightly", "0 3 * * *", "<none>", "False", "<unknown>", "<unknown>", "120m", "c", "x:1"]
    pod = Kind(GVK("", "v1", "Pod"), "pods", True)
    item = Item({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "a", "uid": "u"}}, pod=PodLife(10, 20, False))
    assert [columns.table(pod, [item], second=s, rv="1")["rows"][0]["cells"][2] for s in (5, 15, 25)] == ["Pending", "Running", "Terminated"]
    cm = Kind(GVK("", "v1", "ConfigMap"), "configmaps", True)
    assert columns.table(cm, [Item({"metadata": {"name": "c", "uid": "u"}, "data": {"a": "1", "b": "2"}})], second=0, rv="1")["rows"][0]["cells"][:2] == ["c", "2"]


def test_the_watch_framing() -> None:
    assert watch.chunk(b"abc") == b"3\r\nabc\r\n"
    assert watch.event_line("ADDED", b'{"a":1}') == b'{"type":"ADDED","object":{"a":1}}\n'
    assert json.loads(watch.error_line(ApiError(410, "Expired", "too old").status()))["object"]["code"] == 410
    assert watch.END == b"0\r\n\r\n"


def test_discovery_groups_in_order_the_first_version_preferred() -> None:
    groups = discovery.group_list([("", "v1"), ("apps", "v1"), ("batch", "v1"), ("apps", "v1beta1")])
    assert [(g["name"], [v["version"] for v in g["versions"]], g["preferredVersion"]["version"]) for g in groups["groups"]] == [
        ("apps", ["v1", "v1beta1"], "v1"), ("batch", ["v1"], "v1")]
    assert discovery.api_group(groups, "batch")["kind"] == "APIGroup" and discovery.api_group(groups, "nope") is None


def test_selectors_as_the_server_parses_them() -> None:
    labels = parse_label_selector("app in (web, api),tier!=db,!legacy")
    assert [r.matches({"app": "web", "tier": "fe"}) for r in labels] == [True, True, True]
    with pytest.raises(ApiError) as refused:
        parse_field_selector("spec.replicas=3", Named.of(Kind(GVK("apps", "v1", "Deployment"), "deployments", True)))
    assert refused.value.code == 400 and '"spec.replicas" is not a known field selector' in refused.value.message


@pytest.mark.slow  # the openssl command makes the certificate
def test_tls_made_in_memory_serves_a_handshake_its_certificate_verifies() -> None:
    cert, key = tls.self_signed("test")
    server = tls.server_context(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def accept() -> None:
        conn, _ = listener.accept()
        with server.wrap_socket(conn, server_side=True) as wrapped:
            wrapped.sendall(b"ok")

    thread = threading.Thread(target=accept)
    thread.start()
    client = ssl.create_default_context(cadata=cert.decode())
    with socket.create_connection(("127.0.0.1", port)) as raw, client.wrap_socket(raw, server_hostname="127.0.0.1") as conn:
        assert conn.recv(2) == b"ok"
    thread.join()
    listener.close()
    assert b"PRIVATE KEY" in key


DEPLOY = GVK("apps", "v1", "Deployment")


def _served() -> Served:
    state = Served([Kind(DEPLOY, "deployments", True)], at=100.0)
    state.load((DEPLOY, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"d{i}", "namespace": "a", "uid": f"u{i}",
                                                                                     "labels": {"n": str(i % 2)}}}, None, None)
               for i in range(5))
    return state


def test_a_list_pages_from_one_snapshot_while_changes_come() -> None:
    state = _served()
    rv, first, cont, remaining, _ = state.list_page(DEPLOY, Filter(), limit=2, token="")
    state.apply(gvk=DEPLOY, namespace="a", name="d0", obj=None, ts=101)  # deleted between the pages
    _, second, cont2, _, _ = state.list_page(DEPLOY, Filter(), limit=2, token=cont)
    _, third, cont3, _, _ = state.list_page(DEPLOY, Filter(), limit=2, token=cont2)
    assert (rv, remaining, cont3) == (1, 3, "")
    assert [i.name for i in first + second + third] == ["d0", "d1", "d2", "d3", "d4"]
    assert [i.name for i in state.list_page(DEPLOY, Filter(), limit=0, token="")[1]] == ["d1", "d2", "d3", "d4"]
    with pytest.raises(ApiError) as expired:
        state.list_page(DEPLOY, Filter(), limit=2, token="bm9wZQ==")
    assert expired.value.code == 410


def test_a_watch_resumes_from_a_lists_version() -> None:
    state = _served()
    rv, _, _, _, _ = state.list_page(DEPLOY, Filter(labels=parse_label_selector("n=0")), limit=0, token="")
    state.apply(gvk=DEPLOY, namespace="a", name="d9", obj={"apiVersion": "apps/v1", "kind": "Deployment",
                                                           "metadata": {"name": "d9", "namespace": "a", "uid": "u9"}}, ts=102)
    state.apply(gvk=DEPLOY, namespace="a", name="d1", obj=None, ts=103)
    initial, position = state.watch_start(DEPLOY, Filter(), str(rv))
    events, now = state.since(position, wait=0)
    assert initial == [] and [(e.type, e.item.name, e.rv) for e in events or []] == [("ADDED", "d9", 2), ("DELETED", "d1", 3)]
    assert now == 103
    with pytest.raises(ApiError):
        state.watch_start(DEPLOY, Filter(), "x")
