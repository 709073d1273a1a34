"""``kubectl sktrace view`` on a cache of millions of events: the first picture, and every zoom and window answer.

    python benchmarks/bench_view.py --dir /var/tmp/sktrace-bench                  # the 10M-event cache of bench_cache.py
    python benchmarks/bench_view.py --dir DIR --events 1000000

The cache is bench_cache.py's fixture (built there, reused here; 8 weeks, ~10M events). The view is served in this
process on 127.0.0.1 as ``view`` serves it (a read-only connection per request; the rates read from the counts the cache
keeps, schema 0010, or for a cache built before it, counted in a background thread) and asked over HTTP with the cookie, as the page asks: each figure is the wall time of one answer, JSON included, the
median of ``--repeat``. Targets (issue 28): the first picture in 1 s, every zoom or window answer in 300 ms.

Beside each range, the reference measured in the same run: the database counting that range itself (one GROUP BY over
``events_ts``), which is what every answer would cost without the counted minutes.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from kubectl_sktrace.store import open_cache_readonly, viewing  # noqa: E402
from kubectl_sktrace.view.app import cache_api, check_cache, rate_index  # noqa: E402
from kubectl_sktrace.view.server import ViewServer  # noqa: E402


def ask(server: ViewServer, path: str) -> tuple[float, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
    t = time.perf_counter()
    conn.request("GET", path, headers={"Host": f"127.0.0.1:{server.port}", "Cookie": f"{server.cookie}={server.token}"})
    response = conn.getresponse()
    body = response.read()
    elapsed = time.perf_counter() - t
    conn.close()
    assert response.status == 200, body[:300]
    return elapsed, json.loads(body)


def median(server: ViewServer, path: str, repeat: int) -> tuple[float, dict]:
    runs = [ask(server, path) for _ in range(repeat)]
    return statistics.median(t for t, _ in runs), runs[-1][1]


def direct(cache_path: Path, start: int, end: int, width: int) -> float:
    with open_cache_readonly(cache_path) as cache:
        t = time.perf_counter()
        viewing.minute_counts(cache, start=start, end=end, width=width)
        return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True, help="where bench_cache.py builds and keeps its fixture cache")
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-reference", action="store_true", help="skip the database's own counts of the long ranges (seconds each)")
    args = parser.parse_args()
    cache = args.dir / f"cache-{args.events}.db"
    if not cache.exists():
        args.dir.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(HERE / "bench_cache.py"), "--child-build", str(cache), str(args.events), "8"], check=True)
    print(f"cache {cache}: {cache.stat().st_size / 2**30:.2f} GiB")

    t0 = time.perf_counter()
    check_cache(str(cache))
    index = rate_index(str(cache))  # None: the cache keeps its rates per minute (schema 0010), nothing to count
    server = ViewServer(api=cache_api(str(cache), title=str(cache), command_base=(), index=index))
    threading.Thread(target=server.serve, daemon=True).start()
    filling = threading.Thread(target=index.fill if index is not None else lambda: None, daemon=True)
    filling.start()
    setup = time.perf_counter() - t0
    t_overview, overview = ask(server, "/api/overview")
    begin, end = int(overview["begin"]), int(overview["end"])
    whole = f"/api/histogram?start={begin}&end={end}&buckets=300"
    t_hist, first = ask(server, whole)
    print(f"first picture: {setup + t_overview + t_hist:.3f} s (server up {setup:.3f} s, overview {t_overview:.3f} s with "
          f"{len(overview['spans'])} spans, histogram {t_hist:.3f} s: {'complete' if first['complete'] else 'counting'} "
          f"{first['counted']:.0%}; target 1 s)")
    filling.join()
    counted = time.perf_counter() - t0
    if index is None:
        print("rates read from the counts the cache keeps per hour and minute (schema 0010): no background count")
    else:
        print(f"rates counted in the background: {counted:.1f} s after the start ({index.size} minutes; error {index.error})")
    t_whole, answer = median(server, whole, args.repeat)
    print(f"whole span histogram once counted: {t_whole * 1000:.1f} ms, width {answer['width']} s, {len(answer['buckets'])} buckets")

    middle = begin + (end - begin) // 2 + 17
    print(f"{'range':>10} {'histogram':>10} {'window':>10} {'objects':>10} {'database alone':>15}   (ms; target 300)")
    for label, span in (("8 weeks", end - begin), ("1 week", 7 * 86400), ("1 day", 86400), ("1 hour", 3600), ("1 minute", 60)):
        start = max(begin, middle - span // 2) if span < end - begin else begin
        t_h, h = median(server, f"/api/histogram?start={start}&end={start + span}&buckets=300", args.repeat)
        t_w, w = median(server, f"/api/window?start={start}&end={start + span}", args.repeat)
        t_o, _ = median(server, f"/api/objects?gvk=apps/v1.Deployment&namespace=ns-7&start={start}&end={start + span}&limit=20", args.repeat)
        reference = "-" if args.no_reference and span > 86400 else f"{direct(cache, start, start + span, h['width']) * 1000:.0f}"
        print(f"{label:>10} {t_h * 1000:>10.1f} {t_w * 1000:>10.1f} {t_o * 1000:>10.1f} {reference:>15}   "
              f"({w['events']} events, {len(h['buckets'])} buckets of {h['width']} s)")
    t_s, found = median(server, f"/api/objects?q=app-42&start={begin}&end={end}&limit=20", args.repeat)
    tick = found["objects"][0]["ticks"][-1]["id"]
    t_v, _ = median(server, f"/api/version?id={tick}", args.repeat)
    print(f"search 'app-42' over the whole span: {t_s * 1000:.1f} ms ({found['total']} objects); a version and its diff: {t_v * 1000:.1f} ms")
    server.stop()


if __name__ == "__main__":
    main()
