"""API access speed: raw JSON (the kube package) against the client's typed models, on the same local server.

Run: ``.venv/bin/python benchmarks/bench_kube.py [--pods 10000] [--events 50000]``

A local HTTP/1.1 server serves canned, realistic pods (~5 KB of JSON each, with managedFields, env,
volumes, probes and status, as a Deployment's pods look): paginated lists (``limit``/``continue``), one
full list, and a chunked watch stream with one event per chunk, as the API server flushes them. Figures
printed side by side:

- list N pods: ``Kube.list_page`` paginated by 500 (the recorder's path) and in one page, beside
  ``CoreV1Api.list_pod_for_all_namespaces`` (typed V1PodList) on the same data;
- watch: events/s through ``Kube.watch`` beside ``kubernetes.watch.Watch().stream`` (typed events).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml  # noqa: E402

from kubectl_sktrace.kube.client import Kube
from kubectl_sktrace.kube.discovery import Resource  # noqa: E402
from kubectl_sktrace.kube.kubeconfig import resolve_target  # noqa: E402
from kubectl_sktrace.model import POD  # noqa: E402

PODS = Resource(gvk=POD, plural="pods", namespaced=True, verbs=frozenset({"get", "list", "watch"}))


def realistic_pod(i: int, rv: int) -> dict:
    app = f"app-{i % 500}"
    rs = f"{app}-7d9f8c6b5"
    name = f"{rs}-{i:05d}"
    ts = "2026-11-22T10:00:00Z"
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "generateName": f"{rs}-", "namespace": f"team-{i % 50}", "uid": f"0f1e2d3c-{i:08d}-4b5a-9c8d-7e6f5a4b3c2d",
            "resourceVersion": str(rv), "creationTimestamp": ts,
            "labels": {"app": app, "pod-template-hash": "7d9f8c6b5", "tier": "backend", "version": "v1.4.2"},
            "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090",
                            "kubectl.kubernetes.io/restartedAt": ts},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": f"aa-{i % 500:08d}",
                                 "controller": True, "blockOwnerDeletion": True}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": ts,
                               "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {
                                   ".": {}, "f:app": {}, "f:pod-template-hash": {}}, "f:ownerReferences": {}},
                                   "f:spec": {"f:containers": {"k:{\"name\":\"main\"}": {".": {}, "f:image": {}, "f:env": {},
                                              "f:ports": {}, "f:resources": {}}}}}},
                              {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": ts,
                               "fieldsType": "FieldsV1", "subresource": "status",
                               "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:hostIP": {},
                                                         "f:phase": {}, "f:podIP": {}, "f:startTime": {}}}}],
        },
        "spec": {
            "containers": [
                {"name": "main", "image": f"registry.example.com/{app}:v1.4.2", "imagePullPolicy": "IfNotPresent",
                 "args": ["--port=8080", "--metrics-port=9090", "--log-level=info"],
                 "env": [{"name": f"ENV_{k}", "value": f"value-{k}-{i}"} for k in range(8)]
                 + [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                 "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"},
                           {"containerPort": 9090, "name": "metrics", "protocol": "TCP"}],
                 "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
                 "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 10,
                                   "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
                 "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 5,
                                    "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
                 "volumeMounts": [{"name": "config", "mountPath": "/etc/app"},
                                  {"name": "kube-api-access-x7k2p", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": True}],
                 "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"},
                {"name": "sidecar", "image": "registry.example.com/proxy:2.1", "imagePullPolicy": "IfNotPresent",
                 "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                 "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"},
            ],
            "volumes": [{"name": "config", "configMap": {"name": f"{app}-config", "defaultMode": 420}},
                        {"name": "kube-api-access-x7k2p", "projected": {"defaultMode": 420, "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                            {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}]}}]}}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "serviceAccount": "default", "nodeName": f"node-{i % 40}",
            "securityContext": {}, "schedulerName": "default-scheduler", "priority": 0, "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
        },
        "status": {
            "phase": "Running", "hostIP": f"10.0.{i % 40}.1", "podIP": f"10.244.{i % 250}.{i % 200}", "startTime": ts,
            "podIPs": [{"ip": f"10.244.{i % 250}.{i % 200}"}], "qosClass": "Burstable",
            "conditions": [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": ts}
                           for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "containerStatuses": [{"name": c, "ready": True, "restartCount": 0, "started": True,
                                   "image": f"registry.example.com/{c}:v1", "imageID": f"registry.example.com/{c}@sha256:{'ab' * 32}",
                                   "containerID": f"containerd://{'cd' * 32}", "state": {"running": {"startedAt": ts}},
                                   "lastState": {}} for c in ("main", "sidecar")],
        },
    }


class CannedServer:
    """Serves canned pages and a watch stream. Runs in a child process, so that neither its memory nor its
    CPU (the GIL) is counted against the client being measured."""

    def __init__(self, pods: list[dict], events: int) -> None:
        items = [json.dumps({k: v for k, v in p.items() if k not in ("apiVersion", "kind")}).encode() for p in pods]
        self.pages: dict[str | None, bytes] = {}
        for start in range(0, len(items), 500):
            token = None if start == 0 else f"c{start}"
            nxt = f"c{start + 500}" if start + 500 < len(items) else ""
            meta = json.dumps({"resourceVersion": "100000", "continue": nxt} if nxt else {"resourceVersion": "100000"}).encode()
            self.pages[token] = b'{"kind":"PodList","apiVersion":"v1","metadata":' + meta + b',"items":[' + b",".join(items[start:start + 500]) + b"]}"
        self.full = b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"100000"},"items":[' + b",".join(items) + b"]}"
        # one chunk per event, as the API server flushes them; 1,000 distinct events cycled to bound memory
        self.events = events
        self.block_events = min(1000, events)
        chunks = []
        for n in range(self.block_events):
            pod = pods[n % len(pods)]
            line = json.dumps({"type": "MODIFIED", "object": {**pod, "metadata": {**pod["metadata"], "resourceVersion": str(100001 + n)}}}).encode() + b"\n"
            chunks.append(b"%x\r\n%s\r\n" % (len(line), line))
        self.block = b"".join(chunks)
        self.mean_pod_bytes = sum(map(len, items)) / len(items)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                q = {k: v[-1] for k, v in parse_qs(urlsplit(self.path).query).items()}
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                try:
                    if q.get("watch") in ("true", "1", "True"):
                        self.send_header("Transfer-Encoding", "chunked")
                        self.end_headers()
                        for _ in range(outer.events // outer.block_events):
                            self.wfile.write(outer.block)
                        self.wfile.write(b"0\r\n\r\n")
                        return
                    body = outer.pages[q.get("continue")] if q.get("limit") and int(q["limit"]) <= 500 else outer.full
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the typed watch stops reading early
                    self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"


def serve(pods: int, events: int, conn) -> None:
    server = CannedServer([realistic_pod(i, 1000 + i) for i in range(pods)], events)
    conn.send((server.url, server.mean_pod_bytes))
    server.httpd.serve_forever()


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def best_of(runs: int, fn):
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--typed-events", type=int, default=5_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    import multiprocessing
    parent, child = multiprocessing.Pipe()
    server_process = multiprocessing.get_context("fork").Process(target=serve, args=(args.pods, args.events, child), daemon=True)
    server_process.start()
    url, mean_pod_bytes = parent.recv()
    config = Path(tempfile.mkdtemp()) / "config"
    config.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": "bench",
                                      "clusters": [{"name": "c", "cluster": {"server": url}}],
                                      "contexts": [{"name": "bench", "context": {"cluster": "c", "user": "u"}}],
                                      "users": [{"name": "u", "user": {"token": "x"}}]}))
    kube = Kube.connect(resolve_target(kubeconfig=str(config), context=None, environ={}))
    print(f"{args.pods} pods, {mean_pod_bytes / 1024:.1f} KB of JSON each on average; python {sys.version.split()[0]}; "
          "server in a child process (RSS is the client's)")

    def raw_paged() -> int:
        count, token = 0, None
        while True:
            page = kube.list_page(PODS, namespace=None, limit=500, continue_token=token)
            count += len(page["items"])
            token = page["metadata"].get("continue")
            if not token:
                return count

    def raw_single() -> int:
        return len(kube.list_page(PODS, namespace=None, limit=1_000_000)["items"])

    from kubernetes import config as kube_config
    from kubernetes.client import CoreV1Api
    core = CoreV1Api(kube_config.new_client_from_config(config_file=str(config), persist_config=False))

    def typed() -> int:
        return len(core.list_pod_for_all_namespaces().items)

    rss0 = rss_mb()
    t_paged, n1 = best_of(args.runs, raw_paged)
    rss_paged = rss_mb()
    t_single, n2 = best_of(args.runs, raw_single)
    rss_single = rss_mb()
    t_typed, n3 = best_of(1, typed)
    rss_typed = rss_mb()
    assert n1 == n2 == n3 == args.pods
    print(f"\nlist {args.pods} pods (best of {args.runs}; typed: 1 run)      seconds   pods/s    peak RSS so far")
    print(f"  raw, pages of 500 (recorder's path)  {t_paged:8.2f} {args.pods / t_paged:9.0f} {rss_paged:8.0f} MB (start {rss0:.0f})")
    print(f"  raw, one page                        {t_single:8.2f} {args.pods / t_single:9.0f} {rss_single:8.0f} MB")
    print(f"  typed list_pod_for_all_namespaces    {t_typed:8.2f} {args.pods / t_typed:9.0f} {rss_typed:8.0f} MB")
    print(f"  typed / raw paged: {t_typed / t_paged:.1f}x slower")

    def raw_watch() -> int:
        return sum(1 for _ in kube.watch(PODS, namespace=None, resource_version="100000", timeout_seconds=300))

    def typed_watch() -> int:
        from kubernetes import watch
        n = 0
        for _ in watch.Watch().stream(core.list_pod_for_all_namespaces, resource_version="100000", timeout_seconds=300):
            n += 1
            if n >= args.typed_events:
                break
        return n

    def parse_only() -> int:
        # the floor: json.loads of the same lines already in memory, no network
        import urllib3
        body = urllib3.PoolManager().request("GET", url + "/api/v1/pods?watch=true").data
        lines = body.split(b"\n")
        started = time.perf_counter()
        n = sum(1 for line in lines if line and json.loads(line))
        parse_only.seconds = time.perf_counter() - started  # type: ignore[attr-defined]
        return n

    parse_only()
    t_parse = parse_only.seconds  # type: ignore[attr-defined]
    t_raw_watch, n_raw = best_of(args.runs, raw_watch)
    assert n_raw == args.events // min(1000, args.events) * min(1000, args.events)
    t_typed_watch, n_typed = best_of(1, typed_watch)
    print(f"\nwatch (events of {mean_pod_bytes / 1024:.1f} KB)              events   seconds   events/s")
    print(f"  json.loads alone, lines in memory     {n_raw:7d} {t_parse:8.2f} {n_raw / t_parse:10.0f}")
    print(f"  raw Kube.watch (json.loads per line)  {n_raw:7d} {t_raw_watch:8.2f} {n_raw / t_raw_watch:10.0f}")
    print(f"  typed kubernetes.watch.Watch          {n_typed:7d} {t_typed_watch:8.2f} {n_typed / t_typed_watch:10.0f}")
    print(f"  raw / typed: {(n_raw / t_raw_watch) / (n_typed / t_typed_watch):.1f}x faster")
    kube.close()
    server_process.terminate()
    emulator_watch(args.events)


def emulator_watch(events: int) -> None:
    """Watch events/s from the emulator's history replay, when the emulator is installed."""
    try:
        from sktrace_emulator import Emulator
    except ImportError:
        print("\n(emulator not installed: skipping the emulator watch figure)")
        return
    emu = Emulator(token="bench", tls=False).start()
    try:
        start_rv = emu.resource_version
        template = realistic_pod(0, 1)
        size = 0
        for n in range(events):
            pod = json.loads(json.dumps(template))
            pod["metadata"] = {k: v for k, v in pod["metadata"].items() if k not in ("uid", "resourceVersion", "creationTimestamp", "managedFields")}
            pod["metadata"]["name"] = f"pod-{n:06d}"
            pod.pop("status")
            size += len(json.dumps(emu.create(pod)))
        config = Path(tempfile.mkdtemp()) / "config"
        kube = Kube.connect(resolve_target(kubeconfig=emu.write_kubeconfig(config), context=None, environ={}))
        stop = threading.Event()
        seen = 0
        started = time.perf_counter()
        for _ in kube.watch(PODS, namespace=None, resource_version=start_rv, timeout_seconds=300, stop=stop):
            seen += 1
            if seen >= events:
                break
        seconds = time.perf_counter() - started
        print(f"\nemulator (same process) history replay of pods without status ({size / events / 1024:.1f} KB): "
              f"{seen} events in {seconds:.2f}s = {seen / seconds:.0f} events/s")
        kube.close()
    finally:
        emu.stop()


if __name__ == "__main__":
    main()
