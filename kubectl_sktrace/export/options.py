"""What an export is asked for, from the command line's words: the window and the filters. Pure functions.

The window is ``[start, end)`` in whole seconds (``docs/spec.md`` §2 for the time forms, §7 for the window).
The namespaces follow one precedence, said once here: ``-n NS`` keeps that namespace; ``-A`` keeps every
namespace (none excluded); ``--include-namespaces`` keeps only those listed and replaces
``--excluded-namespaces``; otherwise the excluded namespaces (SimKube's list by default) are left out.
Contradicting choices are usage errors, never a silent winner.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.export.selectors import Selector, parse_selector
from kubectl_sktrace.timeparse import format_time, parse_time

DEFAULT_EXCLUDED_NAMESPACES = (
    "cert-manager", "default", "kube-public", "kube-node-lease", "kube-system", "local-path-storage", "monitoring", "simkube",
)
"""SimKube's own default for ``--excluded-namespaces``."""

FORMATS = ("sktrace", "json", "yaml")


@dataclass(frozen=True)
class ExportFilters:
    """Which objects a trace leaves out (``export``'s module docstring gives the order they apply in)."""

    excluded_namespaces: frozenset[str] = frozenset(DEFAULT_EXCLUDED_NAMESPACES)
    include_namespaces: frozenset[str] | None = None
    exclude_labels: tuple[Selector, ...] = ()
    include_cluster_scoped: bool = False


def resolve_window(start: str, end: str, *, now: float) -> tuple[int, int]:
    """``[start_ts, end_ts)`` in whole seconds from two time expressions; an empty window is a UsageError.

    The start rounds down and the end up, so the window covers every event second touched by the times
    given (``now`` includes the current second)."""
    start_at = parse_time(start, now=now)
    end_at = parse_time(end, now=now)
    start_ts, end_ts = math.floor(start_at), math.ceil(end_at)
    if end_at < start_at:
        raise UsageError(
            f"the end time {end!r} ({format_time(end_at)}) is before the start time {start!r} ({format_time(start_at)}); "
            "swap them or pass a later --end-time"
        )
    if end_ts <= start_ts:
        raise UsageError(f"the window from {start!r} to {end!r} is empty; pass an --end-time after the --start-time")
    return start_ts, end_ts


def check_format(value: str) -> str:
    """The trace format of ``-o``; skctl's ``-o FILE`` habit gets a hint (here, as in kubectl, -o is the format)."""
    if value in FORMATS:
        return value
    if "/" in value or "." in value or value == "-":
        raise UsageError(f"did you mean -O {value}? (-o is the output format, as in kubectl: {', '.join(FORMATS)})")
    raise UsageError(f"-o/--format {value}: not an output format; pass one of {', '.join(FORMATS)}")


def namespace_list(text: str | None) -> frozenset[str] | None:
    """A comma-separated list of namespaces; None when not given."""
    if text is None:
        return None
    return frozenset(n.strip() for n in text.split(",") if n.strip())


def filters_from_flags(
    *, namespace: str | None, all_namespaces: bool, include_namespaces: str | None, excluded_namespaces: str | None,
    exclude_labels: tuple[str, ...] = (), include_cluster_scoped: bool = False,
) -> ExportFilters:
    """The filters of export's flags. ``excluded_namespaces`` is None when the user did not pass it (SimKube's list
    applies); ``-n`` and ``-A`` are already checked not to be both given."""
    included = namespace_list(include_namespaces)
    if namespace is not None:
        if included is not None:
            raise UsageError("-n/--namespace and --include-namespaces both choose namespaces; pass one of them")
        included = frozenset([namespace])
    excluded = frozenset(DEFAULT_EXCLUDED_NAMESPACES) if excluded_namespaces is None else namespace_list(excluded_namespaces) or frozenset()
    if all_namespaces:
        if included is not None or excluded_namespaces is not None:
            other = "--include-namespaces" if included is not None else "--excluded-namespaces"
            raise UsageError(f"-A/--all-namespaces and {other} contradict each other; pass one of them")
        excluded = frozenset()
    return ExportFilters(
        excluded_namespaces=excluded, include_namespaces=included,
        exclude_labels=tuple(parse_selector(text) for text in exclude_labels), include_cluster_scoped=include_cluster_scoped,
    )
