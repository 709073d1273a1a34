"""Spec hash throughput: specs hashed per second on a realistic Deployment spec, for each SipHash path.

The recorder hashes the spec of every watch event, so this is on the hot path. Printed side by side with a
reference measured in the same run: ``json.dumps`` of the same spec (what any serialization of it costs).

Run: .venv/bin/python benchmarks/bench_hashing.py [seconds per measurement, default 1]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

from kubectl_sktrace.trace import hashing
from kubectl_sktrace.trace.files.format import read_trace

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "data" / "dsb-scaling.sktrace"


def realistic_spec() -> dict[str, Any]:
    """The largest Deployment spec of the dsb-scaling fixture (a real Helm-deployed microservice)."""
    trace = read_trace(FIXTURE)
    specs = [obj["spec"] for event in trace.events for obj in event["applied_objs"]]
    return max(specs, key=lambda s: len(json.dumps(s)))


def rate(fn: Callable[[], object], seconds: float) -> float:
    count, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(50):
            fn()
        count += 50
        now = time.perf_counter()
        if now >= deadline:
            return count / (now - start)


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    spec = realistic_spec()
    stream = hashing.hash_stream(spec)
    expected = hashing.siphash13_pure(stream)
    rows: list[tuple[str, float]] = [("reference: json.dumps(spec)", rate(lambda: json.dumps(spec), seconds))]
    rows.append(("byte stream only (hash_stream)", rate(lambda: hashing.hash_stream(spec), seconds)))
    if hashing.siphash13_compiled is not None:
        assert hashing.siphash13_compiled(stream) == expected
        rows.append(("spec_hash, compiled siphash24", rate(lambda: hashing.spec_hash(spec), seconds)))
    else:
        rows.append(("spec_hash, compiled siphash24", float("nan")))
    rows.append(("spec_hash, pure-Python SipHash", rate(lambda: hashing.siphash13_pure(hashing.hash_stream(spec)), seconds)))
    print(f"spec: {len(json.dumps(spec))} bytes of JSON, hash stream {len(stream)} bytes")
    width = max(len(name) for name, _ in rows)
    for name, per_second in rows:
        print(f"{name:<{width}}  {per_second:>10,.0f} specs/s")


if __name__ == "__main__":
    main()
