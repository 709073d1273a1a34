"""The emulator kept honest by a real kube-apiserver v1.28: the requests the product makes, sent to both, compared
on what the product reads of the answers (status codes, headers, the fields of bodies, the framing), the 429 of API
Priority and Fairness, and the audit log each writes for the same writes.

The same script runs on each side through kubectl (a namespace, a Deployment of two replicas whose pods run, a
ConfigMap), then the requests below; ``facts`` reduces every answer to what the product reads. Where the two differ
in a fact, the emulator is wrong (the real server is the reference); the table of what is compared lives in the
emulator's docs (docs/spec.md §11, "Checked against a real server").
"""

from __future__ import annotations

import dataclasses
import json
import socket
import ssl
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from realk8s import ControlPlane, configmap, tight_priority_level

pytestmark = [pytest.mark.timeout(300)]


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    chunks: list[bytes]

    @property
    def body(self) -> Any:
        return json.loads(b"".join(self.chunks) or b"null")


@dataclass
class Side:
    """One API server: its URL, CA and token; the namespace the script uses; its audit log."""

    name: str
    host: str
    port: int
    ca: bytes
    token: str
    kubeconfig: Path
    audit_log: Path
    namespace: str
    context: ssl.SSLContext = field(init=False)
    emulator: Any = None

    def __post_init__(self) -> None:
        self.context = ssl.create_default_context(cadata=self.ca.decode())
        self.context.check_hostname = False  # the emulator's certificate names 127.0.0.1 only as an IP; both are pinned by the CA

    def request(self, method: str, path: str, body: Any = None, *, content_type: str = "application/json",
                until: Callable[[list[bytes]], bool] | None = None, timeout: float = 30) -> Answer:
        """One HTTP/1.1 request over TLS; the chunked body read chunk by chunk, as a watch's reader sees it."""
        data = b"" if body is None else json.dumps(body).encode()
        raw = socket.create_connection((self.host, self.port), timeout=timeout)
        with self.context.wrap_socket(raw, server_hostname="localhost") as sock:
            head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nAuthorization: Bearer {self.token}\r\n"
                    f"Accept: application/json\r\nUser-Agent: kubectl-sktrace/differential\r\n"
                    f"Content-Type: {content_type}\r\nContent-Length: {len(data)}\r\nConnection: close\r\n\r\n")
            sock.sendall(head.encode() + data)
            return _read_answer(sock.makefile("rb"), until)


def _read_answer(stream: Any, until: Callable[[list[bytes]], bool] | None) -> Answer:
    status = int(stream.readline().split()[1])
    headers: dict[str, str] = {}
    while (line := stream.readline().decode().rstrip("\r\n")):
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    chunks: list[bytes] = []
    if headers.get("transfer-encoding") == "chunked":
        while True:
            size = int(stream.readline().split(b";")[0], 16)
            if size == 0:
                break
            chunks.append(stream.read(size))
            stream.readline()
            if until is not None and until(chunks):
                break
    else:
        chunks.append(stream.read(int(headers.get("content-length", "0"))))
    return Answer(status, headers, chunks)


# --- the two sides ---------------------------------------------------------------------------------------------


def real_side(plane: ControlPlane) -> Side:
    ns = plane.namespace("diff")
    return Side("real", "127.0.0.1", plane.ports["APISERVER_PORT"], plane.ca.read_bytes(), plane.admin_token,
                plane.kubeconfig, plane.audit_log, ns)


@pytest.fixture
def emulator_side(tmp_path: Path) -> Iterator[Side]:
    from sktrace_emulator import Emulator
    from sktrace_emulator.workload import Workload

    emu = Emulator(token="diff-token", bookmark_interval=0.2, seed=5).start()
    audit = tmp_path / "emulator-audit.log"
    emu.enable_audit(audit, {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
                             "rules": [{"level": "None", "verbs": ["get", "list", "watch"]}, {"level": "RequestResponse"}]})
    workload = Workload(emu).start()
    kubeconfig = Path(emu.write_kubeconfig(tmp_path / "emulator.kubeconfig"))
    side = Side("emulator", "127.0.0.1", emu.port, emu.ca_pem, "diff-token", kubeconfig, audit, f"diff-{uuid.uuid4().hex[:6]}",
                emulator=emu)
    try:
        yield side
    finally:
        workload.stop()
        emu.stop()


# --- the script and the facts the product reads ------------------------------------------------------------------


def kubectl(side: Side, *args: str, input: str | None = None) -> str:
    import os
    import subprocess

    done = subprocess.run(["kubectl", *args], input=input, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "KUBECONFIG": str(side.kubeconfig)})
    assert done.returncode == 0, f"{side.name}: kubectl {' '.join(args)}: {done.stderr}"
    return done.stdout


def wait_pods_running(side: Side, count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pods = side.request("GET", f"/api/v1/namespaces/{side.namespace}/pods").body["items"]
        running = [pod for pod in pods if pod["status"].get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")]
        if len(running) >= count:
            return running
        time.sleep(0.2)
    raise AssertionError(f"{side.name}: {count} pods not running within 60 s")


def resource_facts(body: dict[str, Any], names: set[str]) -> dict[str, Any]:
    """Of a discovery document: each resource's name, scope, kind, group/version (subresources), and verbs the product uses."""
    used = {"get", "list", "watch", "delete", "patch"}
    return {r["name"]: (r["namespaced"], r["kind"], r.get("group"), r.get("version"), sorted(used & set(r["verbs"])),
                        sorted(r.get("shortNames", [])))
            for r in body["resources"] if r["name"] in names}


def status_facts(body: dict[str, Any]) -> dict[str, Any]:
    details = body.get("details") or {}
    return {"kind": body.get("kind"), "apiVersion": body.get("apiVersion"), "status": body.get("status"), "reason": body.get("reason"),
            "code": body.get("code"), "details": sorted(k for k in details if k != "causes"), "details.kind": details.get("kind"),
            "details.group": details.get("group")}


def object_facts(body: dict[str, Any]) -> dict[str, Any]:
    meta = body.get("metadata") or {}
    return {"kind": body.get("kind"), "apiVersion": body.get("apiVersion"), "deletionTimestamp": "deletionTimestamp" in meta,
            "deletionGracePeriodSeconds": meta.get("deletionGracePeriodSeconds"), "uid": "uid" in meta,
            "resourceVersion": "resourceVersion" in meta}


def list_facts(body: dict[str, Any]) -> dict[str, Any]:
    meta = body.get("metadata") or {}
    items = body.get("items") or []
    return {"kind": body.get("kind"), "apiVersion": body.get("apiVersion"), "continue": bool(meta.get("continue")),
            "resourceVersion": bool(meta.get("resourceVersion")), "remainingItemCount": meta.get("remainingItemCount"),
            "items": len(items), "item kind": sorted({str(item.get("kind")) for item in items}),
            "item apiVersion": sorted({str(item.get("apiVersion")) for item in items})}


def complete_lines(chunks: list[bytes]) -> list[bytes]:
    """The whole lines of a chunked body so far: an event may span chunks, and a chunk hold several events."""
    return b"".join(chunks).split(b"\n")[:-1]


def events(answer: Answer) -> list[dict[str, Any]]:
    return [json.loads(line) for line in complete_lines(answer.chunks)]


def watch_facts(answer: Answer) -> dict[str, Any]:
    lines = events(answer)
    return {"status": answer.status, "content-type": answer.headers.get("content-type"),
            "transfer-encoding": answer.headers.get("transfer-encoding"),
            "JSON lines": b"".join(answer.chunks).endswith(b"\n"),
            "types": [line["type"] for line in lines if line["type"] != "BOOKMARK"],
            "object kinds": sorted({line["object"].get("kind") for line in lines}),
            "object apiVersions": sorted({line["object"].get("apiVersion") for line in lines})}


def header_facts(answer: Answer) -> dict[str, Any]:
    return {"status": answer.status, "content-type": answer.headers.get("content-type")}


def run_script(side: Side) -> dict[str, Any]:
    """The script on one side; every request's facts by a name that says what it is."""
    ns, facts = side.namespace, {}
    if side.name == "emulator":
        kubectl(side, "create", "namespace", ns)
    kubectl(side, "-n", ns, "create", "deployment", "web", "--image=nginx", "--replicas=2")
    kubectl(side, "-n", ns, "create", "configmap", "settings", "--from-literal=mode=a")
    pods = wait_pods_running(side, 2)

    apps = side.request("GET", "/apis/apps/v1")
    facts["GET /apis/apps/v1 (discovery)"] = (header_facts(apps), resource_facts(apps.body, {"deployments", "deployments/scale",
                                                                                             "replicasets", "statefulsets", "daemonsets"}))
    core = side.request("GET", "/api/v1")
    facts["GET /api/v1 (discovery)"] = (header_facts(core), resource_facts(core.body, {"pods", "pods/status", "configmaps", "namespaces"}))
    groups = side.request("GET", "/apis")
    facts["GET /apis (discovery)"] = (header_facts(groups), groups.body.get("kind"),
                                      sorted(g["name"] for g in groups.body["groups"] if g["name"] in {"apps", "batch", "apiextensions.k8s.io"}))

    first = side.request("GET", f"/api/v1/namespaces/{ns}/pods?limit=1")
    facts["GET pods?limit=1 (a list's first page)"] = (header_facts(first), list_facts(first.body))
    token = first.body["metadata"]["continue"]
    rest = side.request("GET", f"/api/v1/namespaces/{ns}/pods?limit=1&continue={token}")
    facts["GET pods?limit=1&continue= (its last page)"] = (header_facts(rest), list_facts(rest.body))
    expired = side.request("GET", f"/api/v1/namespaces/{ns}/pods?limit=1&continue=not-a-token")
    facts["GET pods?continue=<malformed>"] = (expired.status, status_facts(expired.body)["kind"])

    rs = side.request("GET", f"/apis/apps/v1/namespaces/{ns}/replicasets").body["items"][0]["metadata"]["name"]
    owner = side.request("GET", f"/apis/apps/v1/namespaces/{ns}/replicasets/{rs}")
    facts["GET replicasets/NAME (an owner)"] = (header_facts(owner), object_facts(owner.body))
    missing = side.request("GET", f"/apis/apps/v1/namespaces/{ns}/replicasets/nope")
    facts["GET replicasets/MISSING"] = (missing.status, status_facts(missing.body))

    listed = side.request("GET", f"/api/v1/namespaces/{ns}/configmaps")
    version = listed.body["metadata"]["resourceVersion"]

    def two_events(chunks: list[bytes]) -> bool:
        return sum(1 for line in complete_lines(chunks) if b'"BOOKMARK"' not in line) >= 2

    threading.Timer(1.0, lambda: kubectl(side, "-n", ns, "create", "configmap", "added", "--from-literal=a=b")).start()
    threading.Timer(2.0, lambda: kubectl(side, "-n", ns, "delete", "configmap", "added")).start()
    watched = side.request("GET", f"/api/v1/namespaces/{ns}/configmaps?watch=1&allowWatchBookmarks=true&resourceVersion={version}"
                                  "&timeoutSeconds=30", until=two_events)
    facts["GET configmaps?watch=1&resourceVersion=LIST (a watch)"] = watch_facts(watched)
    ended = side.request("GET", f"/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion={version}&timeoutSeconds=1")
    facts["GET configmaps?watch=1&timeoutSeconds=1 (ends cleanly)"] = (ended.status, ended.headers.get("transfer-encoding"))
    too_old = side.request("GET", f"/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion=1&timeoutSeconds=5",
                           until=lambda chunks: bool(complete_lines(chunks)))
    gone = events(too_old)[:1]
    facts["GET configmaps?watch=1&resourceVersion=1 (too old: 410)"] = (too_old.status, [(line["type"], status_facts(line["object"])) for line in gone])

    scale = side.request("PATCH", f"/apis/apps/v1/namespaces/{ns}/deployments/web/scale", {"spec": {"replicas": 3}},
                         content_type="application/merge-patch+json")
    facts["PATCH deployments/web/scale"] = (header_facts(scale), object_facts(scale.body), scale.body["spec"])
    pods = wait_pods_running(side, 3)  # the controllers' writes of the scale-up are in the log before anything is deleted
    patched = side.request("PATCH", f"/api/v1/namespaces/{ns}/pods/{pods[0]['metadata']['name']}/status",
                           {"metadata": {"labels": {"probe": "x"}}}, content_type="application/merge-patch+json")
    facts["PATCH pods/NAME/status"] = (header_facts(patched), object_facts(patched.body))

    deleted_pod = side.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{pods[1]['metadata']['name']}")
    facts["DELETE pods/NAME (graceful)"] = (header_facts(deleted_pod), object_facts(deleted_pod.body))
    deleted_cm = side.request("DELETE", f"/api/v1/namespaces/{ns}/configmaps/settings")
    facts["DELETE configmaps/NAME"] = (header_facts(deleted_cm), status_facts(deleted_cm.body))
    deleted_missing = side.request("DELETE", f"/api/v1/namespaces/{ns}/configmaps/settings")
    facts["DELETE configmaps/MISSING"] = (deleted_missing.status, status_facts(deleted_missing.body))
    collection = side.request("DELETE", f"/api/v1/namespaces/{ns}/pods")
    facts["DELETE pods (deletecollection)"] = (header_facts(collection), {**list_facts(collection.body), "items": "-",
                                                                          "continue": "-", "remainingItemCount": "-"})
    deleted_deploy = side.request("DELETE", f"/apis/apps/v1/namespaces/{ns}/deployments/web")
    facts["DELETE deployments/NAME (background)"] = (header_facts(deleted_deploy), status_facts(deleted_deploy.body))
    deadline = time.monotonic() + 60  # every pod's kubelet-side final delete made (each is a line of the log)
    while side.request("GET", f"/api/v1/namespaces/{ns}/pods").body["items"]:
        assert time.monotonic() < deadline, f"{side.name}: pods left in {ns} after 60 s"
        time.sleep(0.2)
    return facts


def throttled_facts(answer: Answer) -> dict[str, Any]:
    """Of API Priority and Fairness's 429: what the product reads (the code, ``Retry-After`` in whole seconds) and
    what it would say (the body: plain text, not a ``Status``)."""
    after = answer.headers.get("retry-after", "")
    return {"status": answer.status, "content-type": answer.headers.get("content-type"),
            "Retry-After": "whole seconds, at least 1" if after.isdigit() and int(after) >= 1 else after,
            "body": b"".join(answer.chunks).decode().strip()}


def real_throttled(plane: ControlPlane, side: Side) -> Answer:
    """A 429 of a real server's API Priority and Fairness: an identity of its own in a level of the least share that
    rejects, whose lists of many objects (each wider than the whole level) go from several threads until one is
    rejected. A namespace of its own: the script's audit lines stay the script's."""
    ns = plane.namespace("diff-apf")
    plane.apply(json.dumps({"apiVersion": "v1", "kind": "List",
                            "items": [configmap(ns, f"cm-{i}", {"k": "v" * 200}) for i in range(400)]}))
    plane.kubectl("-n", ns, "create", "serviceaccount", "throttled")
    plane.kubectl("-n", ns, "create", "rolebinding", "throttled-view", "--clusterrole=view", f"--serviceaccount={ns}:throttled")
    identity = dataclasses.replace(side, token=plane.token_of(ns, "throttled"))
    rejected: list[Answer] = []
    deadline = time.monotonic() + 60

    def lists() -> None:
        while not rejected and time.monotonic() < deadline:
            answer = identity.request("GET", f"/api/v1/namespaces/{ns}/configmaps")
            if answer.status == 429:
                rejected.append(answer)

    tight_priority_level(plane, f"{ns}-tight", f"system:serviceaccount:{ns}:throttled")
    try:
        threads = [threading.Thread(target=lists, daemon=True) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=90)
    finally:
        plane.kubectl("delete", "flowschema", f"{ns}-tight", "--ignore-not-found")
        plane.kubectl("delete", "prioritylevelconfiguration", f"{ns}-tight", "--ignore-not-found")
    assert rejected, "the tight level rejected nothing within 60 s: no 429 to compare"
    return rejected[0]


def emulator_throttled(side: Side) -> Answer:
    """A 429 of the emulator's API Priority and Fairness (sktrace_emulator/apf.py): its level met full by a list."""
    level = side.emulator.throttle(4)
    level.full_for("list", resource="configmaps")
    try:
        return side.request("GET", f"/api/v1/namespaces/{side.namespace}/configmaps")
    finally:
        side.emulator.throttle(None)


def audit_facts(side: Side) -> dict[str, Any]:
    """Of the audit log's lines in the script's namespace: per (user kind, verb, resource/subresource), the fields
    the product reads. Users are told apart by what they are (a controller, the kubelet, the script)."""
    seen: dict[str, Any] = {}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # a log backend writes its lines asynchronously (buffered): read until the last write is in
        lines = [json.loads(text) for text in side.audit_log.read_text().splitlines() if text.strip()]
        lines = [line for line in lines if (line.get("objectRef") or {}).get("namespace") == side.namespace]
        if any(line["verb"] == "delete" and line["objectRef"].get("resource") == "deployments" for line in lines):
            break
        time.sleep(0.2)
    for line in lines:
        ref = line["objectRef"]
        if not 200 <= (line.get("responseStatus") or {}).get("code", 0) < 300:
            continue  # a refused write changes nothing; which ones a real cluster's controllers race into varies
        resource = ref.get("resource", "") + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        key = f"{line['verb']} {resource}"
        response = line.get("responseObject") or {}
        fact = {"level": line.get("level"), "stage": line.get("stage"), "apiGroup": ref.get("apiGroup"),
                "apiVersion": ref.get("apiVersion"), "code": (line.get("responseStatus") or {}).get("code"),
                "responseObject.kind": response.get("kind"), "requestObject": "requestObject" in line,
                "timestamps": all(len(line.get(f, "")) == 27 for f in ("requestReceivedTimestamp", "stageTimestamp"))}
        seen.setdefault(key, [])
        if fact not in seen[key]:
            seen[key].append(fact)
    return seen


PRODUCT_RESOURCES = {"pods", "pods/status", "pods/binding", "deployments", "deployments/scale", "deployments/status", "replicasets",
                     "replicasets/status", "configmaps"}
"""The audit log's resources the product reads back (backfill), of those the script touches."""


def test_the_emulator_answers_the_product_s_requests_as_a_real_kube_apiserver_does(real_cluster: ControlPlane, emulator_side: Side) -> None:
    real = real_side(real_cluster)
    expected, got = run_script(real), run_script(emulator_side)
    real_audit, emulator_audit = audit_facts(real), audit_facts(emulator_side)
    name = "GET configmaps as an identity API Priority and Fairness rejects (429)"
    expected[name], got[name] = throttled_facts(real_throttled(real_cluster, real)), throttled_facts(emulator_throttled(emulator_side))
    compared = sorted(key for key in {*real_audit, *emulator_audit} if key.split(" ", 1)[1] in PRODUCT_RESOURCES)
    differences = [f"{name}:\n    real:     {expected[name]}\n    emulator: {got.get(name)}"
                   for name in expected if expected[name] != got.get(name)]
    differences += [f"audit {key}:\n    real:     {real_audit.get(key)}\n    emulator: {emulator_audit.get(key)}"
                    for key in compared if real_audit.get(key) != emulator_audit.get(key)]
    assert not differences, f"{len(differences)} of {len(expected) + len(compared)} compared answers differ:\n" + "\n".join(differences)
