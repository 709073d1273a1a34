"""How fast the emulator builds a large state and streams watch events (docs/spec.md §11).

Run: ``.venv/bin/python benchmarks/bench_emulator.py [--pods 50000]``

1. Build: ``build_large_state`` for N pods in this process, next to the reference of the ordinary create
   path (``Store.create`` per pod, with defaulting and one ``json.dumps`` each) measured on a sample
   and scaled to N.
2. Streaming: the server runs in its own process (``python -m sktrace_emulator serve --workload
   storm``) so reader and server do not share a GIL. Each SIGUSR1 makes every pod restart once: N
   MODIFIED events of realistic ~5.5 KB pods, produced faster than they can be streamed. Readers:
   a raw Python socket reader (TLS, reads chunks and counts lines) for the synthetic ADDED events of
   a watch without a version and for a storm; then ``kubectl get pods -A --watch -o json`` (its stdout
   is counted here instead of going to /dev/null, so we know when the last object is out) for its
   initial list (printed as one List per page of 500) and for a storm. The server's own production rate
   is printed as the reference.
Target: at least 20,000 events/s to one reader.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

from sktrace_emulator import Emulator
from sktrace_emulator.builders import pod_from_template, sample_pod_template
from sktrace_emulator.bulk import build_large_state


def bench_build(pods: int) -> None:
    emu = Emulator(tls=False)
    started = time.perf_counter()
    count = build_large_state(emu, deployments=pods // 10, pods_per_deployment=10)
    fast = time.perf_counter() - started
    sample = 2000
    rng = random.Random(1)
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "ref", "namespace": "ref", "uid": "u"}, "spec": {"template": sample_pod_template(rng, app="ref")}}
    ref = Emulator(tls=False)
    t_pod = ref.store.type_of("v1", "Pod")
    started = time.perf_counter()
    for _ in range(sample):
        ref.store.create(t_pod, pod_from_template(owner, rng))
    slow = (time.perf_counter() - started) * pods / sample
    size = sum(len(s.raw) for s in emu.store.objects[t_pod].values()) / count
    print(f"build {count} pods (avg {size / 1024:.1f} KB JSON): build_large_state {fast:.2f} s  | reference Store.create path {slow:.2f} s (scaled from {sample})")


class Server:
    def __init__(self, pods: int, kubeconfig: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sktrace_emulator", "serve", "--kubeconfig-out", kubeconfig, "--workload", "storm", "--pods", str(pods), "--history-limit", str(pods * 4)],
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.ready = threading.Event()
        self.storm_done = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        if not self.ready.wait(120):
            raise SystemExit("server did not start: " + "".join(self.lines))
        with open(kubeconfig) as fh:
            config = json.load(fh)
        cluster = config["clusters"][0]["cluster"]
        self.port = int(cluster["server"].rsplit(":", 1)[1])
        self.token = config["users"][0]["user"]["token"]
        import base64

        self.ca = base64.b64decode(cluster["certificate-authority-data"]).decode()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            if line.startswith("serving"):
                self.ready.set()
            if line.startswith("storm:"):
                with self.storm_done:
                    self.storm_done.notify_all()

    def storm(self) -> None:
        os.kill(self.proc.pid, signal.SIGUSR1)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def raw_watch(server: Server, query: str) -> tuple[ssl.SSLSocket, bytes]:
    context = ssl.create_default_context(cadata=server.ca)
    sock = context.wrap_socket(socket.create_connection(("127.0.0.1", server.port)), server_hostname="127.0.0.1")
    sock.sendall(f"GET /api/v1/pods?{query} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {server.token}\r\n\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, rest = data.partition(b"\r\n\r\n")
    assert b" 200 " in head.split(b"\r\n")[0], head
    return sock, rest


def count_lines(sock: ssl.SSLSocket, rest: bytes, wanted: int, *, trigger: object = None) -> float:
    """Seconds from the first event byte to the ``wanted``-th event line (chunk headers counted out)."""
    if trigger is not None:
        trigger()  # type: ignore[operator]
    seen = rest.count(b"}\n")
    tail = rest[-1:]
    first = time.perf_counter() if rest else 0.0
    while seen < wanted:
        data = sock.recv(1 << 20)
        if not data:
            raise SystemExit(f"stream ended after {seen} events")
        if not first:
            first = time.perf_counter()
        seen += (tail + data).count(b"}\n")
        tail = data[-1:]
    return time.perf_counter() - first


def bench_stream(pods: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = os.path.join(tmp, "kubeconfig")
        started = time.perf_counter()
        server = Server(pods, kubeconfig)
        print(f"server process up with {pods} pods in {time.perf_counter() - started:.1f} s ({server.lines[0].strip()})")
        try:
            sock, rest = raw_watch(server, "watch=1")
            seconds = count_lines(sock, rest, pods)
            sock.close()
            print(f"raw socket reader, {pods} synthetic ADDED: {seconds:.2f} s = {pods / seconds:,.0f} events/s")

            sock, rest = raw_watch(server, f"watch=1&resourceVersion={_current_rv(server)}")
            seconds = count_lines(sock, rest, pods, trigger=server.storm)
            sock.close()
            with server.storm_done:
                server.storm_done.wait_for(lambda: server.lines[-1].startswith("storm:"), 10)
            print(f"raw socket reader, storm of {pods} MODIFIED: {seconds:.2f} s = {pods / seconds:,.0f} events/s  | server produced them at: {server.lines[-1].strip()}")

            if not _has_kubectl():
                print("kubectl not on PATH: kubectl readers skipped")
                return
            proc = subprocess.Popen(["kubectl", "--kubeconfig", kubeconfig, "--cache-dir", os.path.join(tmp, "cache"), "get", "--raw", "/api/v1/pods?watch=1"], stdout=subprocess.PIPE)
            assert proc.stdout is not None
            first, seen, tail = 0.0, 0, b""
            while seen < pods:
                data = proc.stdout.read1(1 << 20)
                if not data:
                    raise SystemExit(f"kubectl ended after {seen} events")
                first = first or time.perf_counter()
                seen += (tail + data).count(b"}\n")
                tail = data[-1:]
            seconds = time.perf_counter() - first
            proc.kill()
            proc.wait()
            print(f"kubectl get --raw (no decoding), {pods} synthetic ADDED: {seconds:.2f} s = {pods / seconds:,.0f} events/s")
        finally:
            server.stop()


def bench_kubectl_decoded(pods: int) -> None:
    """kubectl decoding and printing every object: its own CPU is the limit (about 1 ms per pod here)."""
    if not _has_kubectl():
        return
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = os.path.join(tmp, "kubeconfig")
        server = Server(pods, kubeconfig)
        try:
            proc = subprocess.Popen(["kubectl", "--kubeconfig", kubeconfig, "--cache-dir", os.path.join(tmp, "cache"), "get", "pods", "-A", "--watch", "-o", "json"], stdout=subprocess.PIPE)
            assert proc.stdout is not None
            start = time.perf_counter()
            objects, tail = 0, b""
            list_done = storm_start = 0.0
            pages = -(-pods // 500)  # kubectl prints its initial list one page (a List of 500) at a time
            while objects < pages + pods:
                data = proc.stdout.read1(1 << 20)
                if not data:
                    raise SystemExit(f"kubectl ended after {objects} objects")
                chunk = tail + data
                objects += chunk.count(b"\n}\n")  # a pretty-printed object ends with a brace alone on a line
                tail = chunk[-2:]
                if objects >= pages and not list_done:
                    list_done = time.perf_counter()
                    server.storm()
                    storm_start = time.perf_counter()
            end = time.perf_counter()
            proc.kill()
            proc.wait()
            with server.storm_done:
                server.storm_done.wait_for(lambda: server.lines[-1].startswith("storm:"), 10)
            print(f"kubectl get pods -A --watch -o json, initial list of {pods}: {list_done - start:.2f} s = {pods / (list_done - start):,.0f} objects/s")
            print(f"kubectl get pods -A --watch -o json, storm of {pods} MODIFIED: {end - storm_start:.2f} s = {pods / (end - storm_start):,.0f} events/s  | server produced them at: {server.lines[-1].strip()}")
        finally:
            server.stop()


def _current_rv(server: Server) -> str:
    context = ssl.create_default_context(cadata=server.ca)
    import http.client

    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=context)
    conn.request("GET", "/api/v1/namespaces?limit=1", headers={"Authorization": f"Bearer {server.token}"})
    rv = str(json.loads(conn.getresponse().read())["metadata"]["resourceVersion"])
    conn.close()
    return rv


def _has_kubectl() -> bool:
    from shutil import which

    return which("kubectl") is not None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--kubectl-pods", type=int, default=5_000, help="pods for the decoding kubectl reader (it is slow)")
    args = parser.parse_args()
    bench_build(args.pods)
    bench_stream(args.pods)
    bench_kubectl_decoded(args.kubectl_pods)


if __name__ == "__main__":
    main()
