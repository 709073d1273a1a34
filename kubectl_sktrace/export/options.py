"""What an export is asked for, from the command line's words: the window and the filters. Pure functions.

The window is ``[start, end)`` in whole seconds (``docs/spec.md`` §2 for the time forms, §7 for the window).
The namespaces follow one precedence, said once here: ``-n NS`` keeps that namespace; ``-A`` keeps every
namespace (none excluded); ``--include-namespaces`` keeps only those listed and replaces
``--excluded-namespaces``; otherwise the excluded namespaces (SimKube's list by default) are left out.
Contradicting choices are usage errors, never a silent winner.

Those flags are rules (``trace/selection/rules``): ``--excluded-namespaces`` denies its namespaces, ``--exclude-labels`` denies
what each selector matches, ``-n``/``--include-namespaces`` allow theirs and make the default deny. The rules a user
writes (``--filters FILE``, then ``-l``, then ``--allow``/``--deny`` in the order typed) come before them, so that
``--allow 'namespace:kube-system labels:app=ingress'`` keeps what SimKube's excluded namespaces would leave out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.trace.selection.rules import ALLOW, DENY, Rule, RuleSet
from kubectl_sktrace.trace.selection.selectors import Selector, parse_selector
from kubectl_sktrace.timeparse import format_time, parse_time

DEFAULT_EXCLUDED_NAMESPACES = (
    "cert-manager", "default", "kube-public", "kube-node-lease", "kube-system", "local-path-storage", "monitoring", "simkube",
)
"""SimKube's own default for ``--excluded-namespaces``."""

DEFAULT_EXCLUDED = frozenset(DEFAULT_EXCLUDED_NAMESPACES)
DEFAULT_EXCLUDED_ORIGIN = "--excluded-namespaces (default)"
NAMESPACE_ORIGINS = frozenset({DEFAULT_EXCLUDED_ORIGIN, "--excluded-namespaces", "--include-namespaces", "-n"})
LABELS_ORIGIN = "--exclude-labels"

FORMATS = ("sktrace", "json", "yaml")


@dataclass(frozen=True)
class ExportFilters:
    """Which objects a trace leaves out (``export``'s module docstring gives the order they apply in)."""

    excluded_namespaces: frozenset[str] = DEFAULT_EXCLUDED
    include_namespaces: frozenset[str] | None = None
    exclude_labels: tuple[Selector, ...] = ()
    include_cluster_scoped: bool = False
    rules: tuple[Rule, ...] = ()  # the user's (--filters, -l, --allow, --deny), asked before the flags' own
    default: str | None = None  # --default; None: deny with included namespaces, else allow
    default_origin: str = "--default"  # or --filters FILE, whose default: it was
    included_by: str = "--include-namespaces"  # or -n: the flag the summary names

    def rule_set(self) -> RuleSet:
        """Every rule in force, in the order asked: the user's, then the legacy flags' as rules, then the default."""
        legacy: list[Rule] = []
        if self.include_namespaces is None and self.excluded_namespaces:
            origin = DEFAULT_EXCLUDED_ORIGIN if self.excluded_namespaces == DEFAULT_EXCLUDED else "--excluded-namespaces"
            legacy.append(Rule(action=DENY, namespaces=tuple(sorted(self.excluded_namespaces)), origin=origin))
        legacy += (Rule(action=DENY, selector=selector, origin=LABELS_ORIGIN) for selector in self.exclude_labels)
        if self.include_namespaces is not None:
            legacy.append(Rule(action=ALLOW, namespaces=tuple(sorted(self.include_namespaces)), origin=self.included_by))
            return RuleSet(rules=self.rules + tuple(legacy), default=self.default or DENY,
                           default_origin=self.default_origin if self.default else self.included_by)
        return RuleSet(rules=self.rules + tuple(legacy), default=self.default or ALLOW,
                       default_origin=self.default_origin if self.default else "default")


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
    exclude_labels: tuple[str, ...] = (), include_cluster_scoped: bool = False, rules: tuple[Rule, ...] = (), default: str | None = None,
    default_origin: str = "--default",
) -> ExportFilters:
    """The filters of export's flags. ``excluded_namespaces`` is None when the user did not pass it (SimKube's list
    applies); ``-n`` and ``-A`` are already checked not to be both given; ``rules`` are the user's, in order, and
    ``default`` theirs, from ``default_origin`` (``--default``, or ``--filters FILE``)."""
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
    if default == ALLOW and included is not None:
        flag = "-n/--namespace" if namespace is not None else "--include-namespaces"
        if default_origin == "--default":
            raise UsageError(f"--default allow and {flag} contradict each other ({flag} keeps only its namespaces); "
                             f"pass --allow 'namespace:…' rules instead of {flag}, or leave --default out")
        raise UsageError(f"'default: allow' in {default_origin.removeprefix('--filters ')} and {flag} contradict each other ({flag} keeps "
                         f"only its namespaces); leave {flag} out and add 'allow: namespace:…' rules to the file, or pass --default deny")
    return ExportFilters(
        excluded_namespaces=excluded, include_namespaces=included,
        exclude_labels=tuple(parse_selector(text) for text in exclude_labels), include_cluster_scoped=include_cluster_scoped,
        rules=rules, default=default, default_origin=default_origin, included_by="-n" if namespace is not None else "--include-namespaces",
    )
