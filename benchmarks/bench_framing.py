"""What the emulator's watch framing costs a reader: CPU per event of one reader against ``--framing per-event``
(the default, as a real API server frames a watch) beside ``--framing batched`` (a burst per chunk), same run.

Run: ``.venv/bin/python benchmarks/bench_framing.py [PODS] [RUNS]`` (default 20,000 pods, 3 runs of each)

Two ``python -m sktrace_emulator serve --workload storm`` processes (TLS) hold PODS pods each; the reader, in
this process, opens a watch without a version and reads the PODS synthetic ADDED events with
``http.client``'s ``read1`` as ``kubectl_sktrace/kube/stream.py`` does (one chunk at most per call), counting
lines. Printed: the reader's CPU per event (``time.process_time``, median and each run), the serving process's
CPU per event (from ``/proc``), the reader's wall time and its number of reads.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time

PODS = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 3


def start(framing: str, tmp: str) -> tuple[subprocess.Popen[str], int, str, str]:
    """A storm server with PODS pods and this framing: (process, port, token, CA)."""
    kc = os.path.join(tmp, f"kc-{framing}")
    proc = subprocess.Popen([sys.executable, "-m", "sktrace_emulator", "serve", "--kubeconfig-out", kc, "--workload", "storm",
                             "--pods", str(PODS), "--framing", framing], stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    while not proc.stderr.readline().startswith("serving"):
        pass
    threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep its stderr drained
    with open(kc) as fh:
        config = json.load(fh)
    cluster = config["clusters"][0]["cluster"]
    ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
    return proc, int(cluster["server"].rsplit(":", 1)[1]), config["users"][0]["user"]["token"], ca


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far, from /proc."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def read(pid: int, port: int, token: str, ca: str) -> tuple[float, float, int, float]:
    """One watch without a version read to its PODS-th event: (reader CPU us/event, wall s, reads, server CPU
    us/event)."""
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ssl.create_default_context(cadata=ca))
    conn.request("GET", "/api/v1/pods?watch=1", headers={"Authorization": f"Bearer {token}"})
    s0 = cpu_seconds(pid)  # before the response: the server encodes nothing, it writes bytes made before
    resp = conn.getresponse()
    c0, w0 = time.process_time(), time.perf_counter()
    seen = reads = 0
    while seen < PODS:
        data = resp.read1(1 << 18)
        reads += 1
        seen += data.count(b"\n")
    c1, w1 = time.process_time(), time.perf_counter()
    server = (cpu_seconds(pid) - s0) / PODS * 1e6
    conn.close()
    return (c1 - c0) / PODS * 1e6, (w1 - w0), reads, server


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        servers = {f: start(f, tmp) for f in ("per-event", "batched")}
        try:
            results: dict[str, list[tuple[float, float, int, float]]] = {f: [] for f in servers}
            for _ in range(RUNS):
                for f, (proc, port, token, ca) in servers.items():
                    results[f].append(read(proc.pid, port, token, ca))
            for f, rs in results.items():
                cpu, server = sorted(r[0] for r in rs), sorted(r[3] for r in rs)
                print(f"{f:9}: reader CPU {cpu[len(cpu) // 2]:.1f} us/event (runs {', '.join(f'{c:.1f}' for c in cpu)}); "
                      f"server CPU {server[len(server) // 2]:.1f} us/event (runs {', '.join(f'{c:.1f}' for c in server)}); "
                      f"wall {sorted(r[1] for r in rs)[len(rs) // 2]:.2f} s; read1 calls {rs[0][2]} for {PODS} events")
        finally:
            for proc, *_ in servers.values():
                proc.terminate()
                proc.wait(10)


if __name__ == "__main__":
    main()
