"""The cyclic garbage collector held back while many acyclic objects are decoded (a trace's events, a history's
versions, a recorder's lists): it only slows their creation (~3×: docs/architecture.md, measured facts)."""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator

SavedGC = tuple[tuple[int, int, int], bool]
"""The collector's thresholds and whether it was enabled, as ``for_recording`` found them (``restore`` puts them back)."""


def for_recording(threshold: int) -> SavedGC:
    """A recorder's collector: its first generation collected every ``threshold`` allocations, and off until the
    recorder turns it on again once synced (its lists' pages are acyclic, freed as each is ingested)."""
    saved = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(threshold, saved[0][1], saved[0][2])
    gc.disable()
    return saved


def restore(saved: SavedGC) -> None:
    """The collector as ``for_recording`` found it, the objects frozen meanwhile given back to it."""
    gc.set_threshold(*saved[0])
    gc.unfreeze()
    if saved[1]:
        gc.enable()


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
