"""``kubectl sktrace view`` as a person waits for it, in a real Chromium, beside another version's page in the same run.

    python benchmarks/bench_view.py --dir /var/tmp/sktrace-bench                        # the 10M-event cache of bench_cache.py
    git archive 1753a9c | tar -x -C /tmp/base
    python benchmarks/bench_view.py --dir DIR --events 1000000 --baseline /tmp/base     # and that version's page beside

The cache is bench_cache.py's fixture (built there, reused here; 8 weeks of history). Each version's ``view`` runs as
a process of its own (``python -m kubectl_sktrace view --no-browser`` from its source tree) and Debian's Chromium is
driven through Playwright, as the browser tests drive it. Each figure is the wall time from the input to the page
settled (``body[data-busy="0"]``: no request in flight, no redraw waiting; histogram, objects and their ticks drawn),
the median of ``--repeat`` fresh tabs:

- first picture: navigation to the whole history drawn (the address opened, the token traded, every answer drawn);
- zoom: one wheel notch in over the middle of the timeline;
- pan: a drag of 200 px along the timeline;
- search: a name put in the objects' search box (one input, as a paste: the page asks at once; typing on is asked at
  most every 90 ms) until the rows found are drawn.

Targets (issue 36): the first picture within 1 s, a zoom or a pan within 300 ms, a search within 300 ms.

The fixture is built at the schema of the tree that builds it. When this tree's schema is newer (0014: the index the
view reads an object's changes from), a version before it cannot read a migrated cache and ``view`` never migrates
one: the baseline reads the fixture as built, this tree a copy of it (``cache-N.migrated.db``, made once, its
migration timed as a user's first write pays it). ``--as-built`` measures this tree on the fixture as built too (the
view of a cache no command has migrated yet).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CHROMIUM = "/usr/bin/chromium"
STEPS = ("first picture", "zoom", "pan", "search")
TARGETS = {"first picture": 1.0, "zoom": 0.3, "pan": 0.3, "search": 0.3}


def start_view(tree: Path, cache: Path) -> tuple[subprocess.Popen[str], str]:
    """``view`` of ``cache`` served by the source tree ``tree``, and the address it printed."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.Popen([sys.executable, "-m", "kubectl_sktrace", "view", "--cache", str(cache), "--no-browser"], cwd=tree, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if " at http" not in line:
        proc.kill()
        raise SystemExit(f"view from {tree} did not start: {line!r}")
    return proc, line.split(" at ", 1)[1].strip()


def settled(page: Any, timeout: float) -> None:
    page.wait_for_selector('body[data-busy="0"]', state="attached", timeout=timeout * 1000)


def one_tab(browser: Any, url: str, *, search: str, timeout: float) -> dict[str, float]:
    """The four figures in a fresh tab."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    figures = {}
    try:
        t = time.perf_counter()
        page.goto(url)
        page.wait_for_selector("body[data-ready][data-histogram][data-objects]", state="attached", timeout=timeout * 1000)
        settled(page, timeout)
        figures["first picture"] = time.perf_counter() - t
        box = page.locator("#timeline").bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 100)
        t = time.perf_counter()
        page.mouse.wheel(0, -100)
        settled(page, timeout)
        figures["zoom"] = time.perf_counter() - t
        t = time.perf_counter()
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] / 2 - 200, box["y"] + 100, steps=4)
        page.mouse.up()
        settled(page, timeout)
        figures["pan"] = time.perf_counter() - t
        t = time.perf_counter()
        page.fill("#search", search)
        page.wait_for_selector(f"body[data-objects^='{search}:']", state="attached", timeout=timeout * 1000)
        settled(page, timeout)
        figures["search"] = time.perf_counter() - t
    finally:
        context.close()
    return figures


def measure(browser: Any, tree: Path, cache: Path, *, repeat: int, search: str, timeout: float) -> dict[str, float]:
    proc, url = start_view(tree, cache)
    try:
        runs = []
        for _ in range(repeat):
            # a fresh tab needs the address's token: the printed one works in every tab (a code would be spent)
            runs.append(one_tab(browser, url, search=search, timeout=timeout))
        return {step: statistics.median(r[step] for r in runs) for step in STEPS}
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)


def migrated(cache: Path) -> Path:
    """The cache this tree reads: the fixture, or when its schema is older than this tree's, a copy migrated by this tree
    (made once; the migration timed and printed: what a user's first command that writes pays)."""
    with cache.open("rb") as header:  # sqlite's user_version (the schema), read without a connection's -shm file
        built = int.from_bytes(header.read(64)[60:64], "big")
    sys.path.insert(0, str(ROOT))
    from kubectl_sktrace.store import open_cache, schema

    if built >= schema.SCHEMA_VERSION:
        return cache
    copy = cache.with_suffix(".migrated.db")
    if not copy.exists():
        partial = cache.with_suffix(".migrating.db")
        shutil.copyfile(cache, partial)
        partial.chmod(0o600)  # a cache's mode, as the recorder makes it (a cache others may read is refused)
        wall, cpu = time.perf_counter(), time.process_time()
        open_cache(partial, create=False).close()
        print(f"the fixture (schema {built}) migrated to schema {schema.SCHEMA_VERSION} by this tree: "
              f"{time.perf_counter() - wall:.1f} s wall, {time.process_time() - cpu:.1f} s CPU")
        partial.rename(copy)
    return copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True, help="where bench_cache.py builds and keeps its fixture cache")
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--baseline", type=Path, help="a source tree of another version (e.g. git archive 1753a9c), measured beside")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--search", default="app-42", help="the name typed in the search box")
    parser.add_argument("--as-built", action="store_true", help="this tree on the fixture as built too, when it migrates a copy")
    parser.add_argument("--timeout", type=float, default=300, help="seconds one step may take before the run gives up")
    args = parser.parse_args()
    cache = args.dir / f"cache-{args.events}.db"
    if not cache.exists():
        args.dir.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(HERE / "bench_cache.py"), "--child-build", str(cache), str(args.events), "8"], check=True)
    print(f"cache {cache}: {cache.stat().st_size / 2**30:.2f} GiB; Chromium {CHROMIUM}, median of {args.repeat} tabs each")
    from playwright.sync_api import sync_playwright

    trees = ([("baseline", args.baseline, cache)] if args.baseline else []) + [("this tree", ROOT, migrated(cache))]
    if args.as_built and trees[-1][2] != cache:
        trees.append(("as built", ROOT, cache))
    results = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            for label, tree, read in trees:
                results[label] = measure(browser, tree, read, repeat=args.repeat, search=args.search, timeout=args.timeout)
        finally:
            browser.close()
    print(f"{'step':>14} " + " ".join(f"{label:>12}" for label, *_ in trees) + f" {'target':>8}   (ms)")
    for step in STEPS:
        print(f"{step:>14} " + " ".join(f"{results[label][step] * 1000:>12.0f}" for label, *_ in trees) + f" {TARGETS[step] * 1000:>8.0f}")


if __name__ == "__main__":
    main()
