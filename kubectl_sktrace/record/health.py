"""``start --health-port N``: the recorder's health over HTTP, for the probes of a Deployment (``deploy/``).

- ``/healthz`` (liveness): 200 while the recorder's main loop commits, i.e. its last commit (the heartbeat
  moves at least every second, ``writer.HEARTBEAT``) is younger than ``STALE_AFTER`` seconds; 503 when it is
  older (a loop stuck on a disk that no longer answers: restarting the pod is the cure) and while stopping.
- ``/readyz`` (readiness): 200 once the initial sync is done and every watched kind is watching; 503 while
  syncing, while a kind is in an outage (the API server unreachable, say) or given up (403), and when not
  live. An outage makes the recorder unready, never dead: restarting it would not bring the API server back,
  and the recorder catches up by itself when it returns.

Each answer is a small JSON document saying why (``verdict``, pure). The server thread only reads the last
``HealthSample`` the recorder's main loop posted on the ``HealthBoard``; it never touches the cache or the
recorder's state. The port listens on every interface: the kubelet probes the pod's IP.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Mapping

from kubectl_sktrace.errors import UsageError

STALE_AFTER = 30.0
"""Seconds without a commit after which the recorder is reported dead (its heartbeat moves every second)."""


@dataclass(frozen=True)
class HealthSample:
    """What the main loop posts at each round: when it last committed (monotonic), and how the watches are."""

    committed: float
    synced: bool
    outages: tuple[str, ...] = ()  # kinds in an outage now
    failed: tuple[str, ...] = ()  # kinds given up for this run (403, no longer served)
    stopping: bool = False


def verdict(path: str, sample: HealthSample, *, now: float) -> tuple[int, dict[str, Any]]:
    """The status and body of ``/healthz`` or ``/readyz`` for ``sample`` at monotonic time ``now``; 404 else."""
    age = round(max(0.0, now - sample.committed), 1)
    live = not sample.stopping and age < STALE_AFTER
    body: dict[str, Any] = {"live": live, "heartbeatAgeSeconds": age, "synced": sample.synced,
                            "outages": list(sample.outages), "failed": list(sample.failed)}
    if path == "/healthz":
        why = "stopping" if sample.stopping else f"no commit for {age:.0f} s" if not live else "committing"
    elif path == "/readyz":
        why = ("not live" if not live else "initial sync in progress" if not sample.synced
               else f"outage: {', '.join(sample.outages)}" if sample.outages
               else f"not recorded: {', '.join(sample.failed)}" if sample.failed else "recording")
        live = live and why == "recording"
    else:
        return 404, {"error": "not found; ask /healthz, /readyz or /metrics"}
    return (200 if live else 503), {"status": why, **body}


class HealthBoard:
    """The last sample, shared between the main loop (``post``) and the server's threads (``answer``)."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        # before the first round (discovery, opening the cache) the recorder counts as starting, not dead
        self._sample = HealthSample(committed=clock(), synced=False)

    def post(self, sample: HealthSample) -> None:
        with self._lock:
            self._sample = sample

    def stopping(self) -> None:
        with self._lock:
            self._sample = HealthSample(committed=self._sample.committed, synced=self._sample.synced, stopping=True)

    def answer(self, path: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            sample = self._sample
        return verdict(path.split("?", 1)[0], sample, now=self.clock())


class HealthServer:
    """``/healthz`` and ``/readyz`` on ``port`` (every interface), served by daemon threads until ``close``; ``pages``
    answers other paths with a body and its content type (``/metrics``: ``metrics.MetricsBoard.exposition``)."""

    def __init__(self, port: int, board: HealthBoard, *, pages: Mapping[str, Callable[[], tuple[bytes, str]]] | None = None) -> None:
        extra = dict(pages or {})

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                page = extra.get(self.path.split("?", 1)[0])
                if page is not None:
                    data, content_type = page()
                    status = 200
                else:
                    answer, body = board.answer(self.path)
                    data, content_type, status = json.dumps(body).encode() + b"\n", "application/json", answer
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass  # a probe every few seconds would flood the container's log

        try:
            self._httpd = ThreadingHTTPServer(("", port), Handler)
        except OSError as exc:
            raise UsageError(f"--health-port {port}: cannot listen ({exc.strerror or exc}); pick a free port") from exc
        self._httpd.daemon_threads = True
        self.port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.5},
                                        name="health", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
