"""The cyclic garbage collector held back while many acyclic objects are decoded (a trace's events, a history's
versions): it only slows their creation (~3×: docs/architecture.md, measured facts)."""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def relaxed_gc(*, command: bool = False) -> Iterator[None]:
    """Decoded objects are acyclic: the cyclic collector only slows their creation (~3×: docs/architecture.md, measured
    facts). Its first generation is collected every 200,000 allocations instead of 700 while the block runs.

    With ``command`` (the block is a command's reading, and the process ends soon after it), what the block made is
    frozen at its end (``gc.freeze``): the collector never walks it again. Without, the first collection after the block
    walks every object it decoded once more (a quarter of a second for the 10,000 versions of one object's history)."""
    old = gc.get_threshold()
    gc.set_threshold(200_000, 50, 100)
    try:
        yield
    finally:
        if command:
            gc.freeze()
        gc.set_threshold(*old)
