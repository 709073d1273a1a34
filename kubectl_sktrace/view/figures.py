"""A window's figures in bounded memory and time: what it holds per kind, and how much of it the export's filters keep.

Per kind, the window's changes come from the counts the cache keeps (``rates``: its whole hours and minutes summed,
never its rows). What the filters keep is decided per kind and namespace (``RuleSet.decide`` with no name and no
labels, as export decides an object when its rules read nothing else): the window's rows are counted per kind,
namespace, operation and whether reconstructed by the database, a slice of about ``CHUNK_EVENTS`` rows at a time
(an aggregate: memory does not grow with the window), and the slices stop as soon as the page asked for another
window (``Windows``). A window of more than ``PASS_LIMIT`` changes is counted so only when asked. Rules that read
names or labels, owners and DaemonSets are decided per object by the export itself: those figures come with the
export's own report, also only when asked.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any, Callable

from kubectl_sktrace.model import GVK
from kubectl_sktrace.store import Cache, viewing
from kubectl_sktrace.store.versions import DELETED
from kubectl_sktrace.trace.selection.rules import DENY
from kubectl_sktrace.view import exports

PASS_LIMIT = 1_000_000
"""Changes in a window above which what the filters keep is counted only when asked (a pass of ~2 s and more)."""
CHUNK_EVENTS = 50_000
"""Rows counted per slice of the window between two looks at whether the page still wants it."""
MAX_TABS = 64


class Superseded(Exception):
    """The page asked for another window before this one's figures were counted."""


class Windows:
    """The latest window each page asked for (by its ``tab``, with an increasing ``seq``): an earlier one's pass stops."""

    def __init__(self) -> None:
        self._latest: dict[str, int] = {}
        self._lock = threading.Lock()

    def ask(self, tab: str, seq: int) -> Callable[[], bool]:
        """This request is the tab's latest (unless a later one came first); the test of whether it still is."""
        with self._lock:
            if seq >= self._latest.get(tab, -1):
                self._latest.pop(tab, None)
                self._latest[tab] = seq
                while len(self._latest) > MAX_TABS:
                    self._latest.pop(next(iter(self._latest)))
        return lambda: self._latest.get(tab, seq) > seq


@dataclass(frozen=True)
class Kept:
    """What the filters keep of a window per kind (``counts``), or why it is not counted (``reason``)."""

    counts: dict[str, tuple[int, int]] | None
    reason: str = ""


def scope_decider(request: exports.WindowRequest, cache: Cache) -> Callable[[str, str], bool] | None:
    """Whether the filters keep a kind and namespace; None when they read names or labels (decided per object)."""
    filters = exports.filters(request, cache)
    rules = filters.rule_set()
    if any(rule.names or rule.selector is not None for rule in rules.rules):
        return None

    def keeps(gvk: str, namespace: str) -> bool:
        if not namespace and not filters.include_cluster_scoped:
            return False
        return rules.action(rules.decide(gvk=GVK.parse(gvk), namespace=namespace, name="", labels=None)) != DENY
    return keeps


def kept(cache: Cache, request: exports.WindowRequest, *, total: int, asked: bool, superseded: Callable[[], bool]) -> Kept:
    """What the filters keep of the window's ``total`` changes, per kind: (applied, deleted)."""
    keeps = scope_decider(request, cache)
    if keeps is None:
        return Kept(None, "the rules read names or labels: the export decides each object (count what it holds)")
    if total > PASS_LIMIT and not asked:
        return Kept(None, f"counting them per namespace reads the window's {total} rows: ask for it")
    counts: dict[str, list[int]] = {}
    decided: dict[tuple[str, str], bool] = {}
    slices = max(1, math.ceil(total / CHUNK_EVENTS))
    step = max(1, math.ceil((request.end - request.start) / slices))
    for since in range(request.start, request.end, step):
        if superseded():
            raise Superseded()
        for gvk, namespace, op, n in viewing.scope_counts(cache, start=since, end=min(request.end, since + step)):
            if decided.setdefault((gvk, namespace), keeps(gvk, namespace)):
                entry = counts.setdefault(gvk, [0, 0])
                entry[1 if op == DELETED else 0] += n
    return Kept({gvk: (a, d) for gvk, (a, d) in sorted(counts.items())})


def as_answer(found: Kept) -> dict[str, Any]:
    if found.counts is None:
        return {"kept": None, "keptWhy": found.reason}
    return {"kept": {gvk: {"applied": a, "deleted": d} for gvk, (a, d) in found.counts.items()},
            "keptEvents": sum(a + d for a, d in found.counts.values())}
