"""What an export says about its own usefulness (SPEC §2): the lines a person reads to learn that a trace is
empty, smaller than expected, or would not pass ``validate``, each with what to pass instead. Pure.

Export counts what its filters left out (``LeftOut``) while it plans the trace; these functions turn the
counts into one-line notes, warnings and the reason of an empty trace. The hints name flags exactly as the
user types them, so they can be copied.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kubectl_sktrace.model import CONFIG_MAP, SECRET, SERVICE_ACCOUNT, GVK
from kubectl_sktrace.timeparse import format_time

DEFAULT_NAMESPACE = "default"

# The kind each validation rule finds missing (validation.py's E0001-E0005).
_MISSING_KIND = {
    "E0001": SERVICE_ACCOUNT,
    "E0002": SECRET,
    "E0003": CONFIG_MAP,
    "E0004": SECRET,
    "E0005": CONFIG_MAP,
}


@dataclass
class LeftOut:
    """What the filters did with the objects recorded before the window end."""

    recorded: int = 0
    cluster_scoped: int = 0
    namespaces: Counter[str] = field(default_factory=Counter)  # objects per namespace the namespace filters left out
    labels: int = 0
    daemonset: int = 0
    kept_namespaces: set[str] = field(default_factory=set)  # namespaces of the exported objects


def count(n: int, noun: str) -> str:
    """``1 object``, ``2 objects``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def clamp_note(*, history_start: int, asked: int) -> str:
    return f"the cache starts at {format_time(history_start)}, after the window start {format_time(asked)}; the trace starts there"


def default_namespace_note(left: LeftOut, *, include_namespaces: frozenset[str] | None, default_exclusions: bool) -> str | None:
    """When SimKube's default exclusions left out objects of namespace ``default``: how many, and the flag that
    keeps them along with what the trace holds now."""
    held = left.namespaces[DEFAULT_NAMESPACE]
    if include_namespaces is not None or not default_exclusions or not held:
        return None
    keep = ",".join(sorted({ns for ns in left.kept_namespaces if ns} | {DEFAULT_NAMESPACE}))
    return (f"left out {count(held, 'object')} in namespace default (SimKube's excluded namespaces include it); "
            f"to keep them, pass --include-namespaces {keep}")


def empty_trace_reason(
    left: LeftOut, *, include_namespaces: frozenset[str] | None, end_ts: int, history_start: float | None,
) -> str:
    """Why a trace holds no object, and what to pass instead (one line, for ``Error:``)."""
    if not left.recorded:
        if history_start is None:
            why, hint = "no recording in the cache has finished listing the cluster", "record with 'kubectl sktrace start' first"
        elif end_ts <= history_start:
            first = format_time(history_start)
            why = f"the window ends at {format_time(end_ts)}, before the cache's history starts at {first}"
            hint = f"pass an --end-time after {first}"
        else:
            why = f"the cache recorded no object before {format_time(end_ts)}"
            hint = "check the kinds of the tracer config ('kubectl sktrace status' shows what the cache holds)"
    else:
        why, hint = _everything_left_out(left, include_namespaces=include_namespaces)
    return f"the trace would hold no objects: {why}; {hint}, or pass --allow-empty to write it anyway"


def _everything_left_out(left: LeftOut, *, include_namespaces: frozenset[str] | None) -> tuple[str, str]:
    namespaces = sorted(left.namespaces)
    parts: list[tuple[int, str, str]] = []  # (objects, what they are, the flag that keeps them)
    if namespaces:
        held = sum(left.namespaces.values())
        if include_namespaces is not None:
            wanted = sorted(include_namespaces)
            where = f"{'namespace' if len(wanted) == 1 else 'namespaces'} {', '.join(wanted)}"
            keep = f"-n {namespaces[0]}" if len(namespaces) == 1 else f"--include-namespaces {','.join(namespaces)}"
            parts.append((held, f"outside {where} (in {', '.join(namespaces)})", f"pass {keep}"))
        else:
            keep = DEFAULT_NAMESPACE if DEFAULT_NAMESPACE in left.namespaces else ",".join(namespaces)
            parts.append((held, f"in excluded namespaces ({', '.join(namespaces)})", f"pass --include-namespaces {keep}"))
    if left.cluster_scoped:
        parts.append((left.cluster_scoped, "cluster-scoped", "pass --include-cluster-scoped"))
    if left.labels:
        parts.append((left.labels, "matched by --exclude-labels", "pass fewer --exclude-labels"))
    if left.daemonset:
        parts.append((left.daemonset, "owned by DaemonSets (SimKube leaves them out)", "export a window with other objects"))
    total = sum(n for n, _, _ in parts)
    hint = max(parts, key=lambda p: p[0])[2]
    if len(parts) == 1:
        everything = "the only object is" if total == 1 else f"all {total} objects are"
        return f"{everything} {parts[0][1]}", hint
    return f"all {total} objects were left out: {', '.join(f'{n} {what}' for n, what, _ in parts)}", hint


def validation_warning(errors: Counter[str], *, rule_names: dict[str, str], tracked: frozenset[GVK]) -> str | None:
    """When the trace breaks SimKube's reference rules: the count per rule and the fix (track the kind, when
    the config does not)."""
    if not errors:
        return None
    total = sum(errors.values())
    per_rule = ", ".join(f"{errors[code]} {code} {rule_names[code]}" for code in sorted(errors))
    kinds = sorted({_MISSING_KIND[code] for code in errors}, key=str)
    untracked = [str(gvk) for gvk in kinds if gvk not in tracked]
    if untracked:
        fix = (f"add {' and '.join(untracked)} to trackedObjects in the tracer config ('kubectl sktrace start --config FILE') "
               "and record again")
    else:
        fix = ("the objects they use were not recorded before them, or the filters left them out; "
               "'kubectl sktrace validate' on the trace lists them")
    return f"the trace would fail 'kubectl sktrace validate' with {count(total, 'error')} ({per_rule}): {fix}"
