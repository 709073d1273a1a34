"""What an export says about its own usefulness (docs/spec.md §2): the lines a person reads to learn that a trace is
empty, smaller than expected, or would not pass ``validate``, each with what to pass instead. Pure.

Export counts what its filters left out (``LeftOut``) while it plans the trace; these functions turn the
counts into one-line notes, warnings and the reason of an empty trace. The hints name flags exactly as the
user types them, so they can be copied. What the window's record is worth (how much of it was observed
live, where it was not, what was reconstructed) is said once, in one block (``coverage_block``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from kubectl_sktrace.model import GVK
from kubectl_sktrace.plural import closest, counted
from kubectl_sktrace.timeparse import format_duration, format_span, format_time
from kubectl_sktrace.trace.observation import EXACT, LIVE, NOT_OBSERVED, exact_spans, percent, shares, tell
from kubectl_sktrace.trace.references import REFERENCED_KIND

DEFAULT_NAMESPACE = "default"

@dataclass
class LeftOut:
    """What the filters did with the objects recorded before the window end."""

    recorded: int = 0
    cluster_scoped: int = 0
    namespaces: Counter[str] = field(default_factory=Counter)  # objects per namespace the namespace filters left out
    labels: int = 0
    daemonset: int = 0
    rules: int = 0  # denied by the user's rules (--filters, -l, --allow, --deny, --default)
    owned: int = 0  # allowed, but owned by an exported object (which recreates them)
    kept_namespaces: set[str] = field(default_factory=set)  # namespaces of the exported objects


def clamp_note(*, history_start: int, asked: int, filled_before: bool = False) -> str:
    partial = "; what backfill --before-first-run filled before it is partial and not exported (kubectl sktrace get --at reads it)"
    return (f"the cache starts at {format_time(history_start)}, after the window start {format_time(asked)}; the trace starts there"
            + (partial if filled_before else ""))


def default_namespace_note(left: LeftOut, *, include_namespaces: frozenset[str] | None, default_exclusions: bool) -> str | None:
    """When SimKube's default exclusions left out objects of namespace ``default``: how many, and the flag that
    keeps them along with what the trace holds now."""
    held = left.namespaces[DEFAULT_NAMESPACE]
    if include_namespaces is not None or not default_exclusions or not held:
        return None
    keep = ",".join(sorted({ns for ns in left.kept_namespaces if ns} | {DEFAULT_NAMESPACE}))
    return (f"left out {counted(held, 'object')} in namespace default (SimKube's excluded namespaces include it); "
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
            # the first list's end, not the run's start that the other notes and status name: no object is known before it
            why = f"the window ends at {format_time(end_ts)}, before the cache's first recording had listed the cluster ({first})"
            hint = f"pass an --end-time after {first}"
        else:
            why = f"the cache recorded no object before {format_time(end_ts)}"
            hint = "check the kinds of the tracer config ('kubectl sktrace status' shows what the cache holds)"
    else:
        why, hint = _everything_left_out(left, include_namespaces=include_namespaces)
        if hint.startswith("did you mean"):
            return f"the trace would hold no objects: {why}; {hint} (--allow-empty writes it anyway)"
    return f"the trace would hold no objects: {why}; {hint}, or pass --allow-empty to write it anyway"


MAX_TYPOS = 20
"""Namespaces asked for and never recorded that are looked at for a typo (each is compared with every one recorded)."""


def misspelt_namespaces(wanted: frozenset[str] | None, recorded: list[str]) -> str | None:
    """The refusal of namespaces asked for (-n, --include-namespaces) that the cache never recorded while one close to
    each is recorded: ``did you mean …?``, the flags meant, those asked right kept. None when every name asked was
    recorded or none is close to one (a namespace created later, nothing recorded in it yet: the trace says so)."""
    known = set(recorded)
    unseen = [name for name in sorted(wanted or ()) if name not in known]
    if not unseen or len(unseen) > MAX_TYPOS:  # that many names not recorded are no typos: a list from elsewhere
        return None
    hint = _typo_hint(sorted(wanted or ()), recorded)
    if hint is None:
        return None
    return (f"the cache never saw namespace {', '.join(unseen)} (no object was recorded there); {hint} "
            "(--allow-empty exports it as asked)")


def _typo_hint(wanted: list[str], recorded: list[str]) -> str | None:
    """``did you mean -n shop?`` when a namespace asked for holds nothing and is close to one that does."""
    guesses = {name: closest(name, recorded) for name in wanted if name not in recorded}
    if not any(guesses.values()):
        return None
    fixed = sorted({guesses.get(name) or name for name in wanted})  # a typo of a namespace also asked right: once
    return f"did you mean -n {fixed[0]}?" if len(fixed) == 1 else f"did you mean --include-namespaces {','.join(fixed)}?"


def _everything_left_out(left: LeftOut, *, include_namespaces: frozenset[str] | None) -> tuple[str, str]:
    namespaces = sorted(left.namespaces)
    parts: list[tuple[int, str, str]] = []  # (objects, what they are, the flag that keeps them)
    if namespaces:
        held = sum(left.namespaces.values())
        if include_namespaces is not None:
            wanted = sorted(include_namespaces)
            where = f"{'namespace' if len(wanted) == 1 else 'namespaces'} {', '.join(wanted)}"
            keep = f"-n {namespaces[0]}" if len(namespaces) == 1 else f"--include-namespaces {','.join(namespaces)}"
            parts.append((held, f"outside {where} (in {', '.join(namespaces)})", _typo_hint(wanted, namespaces) or f"pass {keep}"))
        else:
            keep = DEFAULT_NAMESPACE if DEFAULT_NAMESPACE in left.namespaces else ",".join(namespaces)
            parts.append((held, f"in excluded namespaces ({', '.join(namespaces)})", f"pass --include-namespaces {keep}"))
    if left.cluster_scoped:
        parts.append((left.cluster_scoped, "cluster-scoped", "pass --include-cluster-scoped"))
    if left.labels:
        parts.append((left.labels, "matched by --exclude-labels", "pass fewer --exclude-labels"))
    if left.rules:
        parts.append((left.rules, "denied by the rules (--filters, -l, --allow, --deny, --default)", "see which rule decided what with --dry-run"))
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
    kinds = sorted({REFERENCED_KIND[code] for code in errors}, key=str)
    untracked = [str(gvk) for gvk in kinds if gvk not in tracked]
    now = "export again with --transform sanitize, which removes those references (as SimKube's sanitize example does)"
    if untracked:
        later = (f"to have the objects in the traces of later windows, add {' and '.join(untracked)} to trackedObjects in the "
                 "tracer config ('kubectl sktrace start --config FILE')")
    else:
        later = ("'kubectl sktrace validate' on the trace lists the objects they name (not recorded before them, or left out by "
                 "the filters)")
    return f"the trace would fail 'kubectl sktrace validate' with {counted(total, 'error')} ({per_rule}): to make it valid, {now}; {later}"


NO_RECORDER = "no recorder ran"
NOT_COMMITTED = "not yet committed: its recorder is running"
"""After a running recorder's last commit (its heartbeat, every second): what it received since is on its way."""
PRUNED = "pruned"
ALWAYS_LISTED = (NO_RECORDER, NOT_COMMITTED, PRUNED)
LISTED_GAP_SECONDS = 5.0
"""Outages shorter than this (a watch re-established at once) count in the share, but are not listed one by one;
the time between two runs always is (a stop is the person's own doing, and there are few)."""
MAX_LISTED_GAPS = 5


@dataclass(frozen=True)
class Blind:
    """A stretch of the window not observed live, whatever kinds it touched, with every cause met in it."""

    since: float
    until: float
    causes: tuple[str, ...]


def merge_blind(spans: Iterable[tuple[float, float, str]], *, start: float, end: float) -> list[Blind]:
    """``(since, until, cause)`` spans clipped to ``[start, end)`` and merged where they overlap or touch,
    across kinds and causes (causes kept in the order met), in time order."""
    clipped = sorted((max(a, start), min(b, end), cause) for a, b, cause in spans if min(b, end) > max(a, start))
    merged: list[Blind] = []
    for since, until, cause in clipped:
        last = merged[-1] if merged else None
        if last is not None and since <= last.until:
            causes = last.causes if cause in last.causes else (*last.causes, cause)
            merged[-1] = Blind(last.since, max(last.until, until), causes)
        else:
            merged.append(Blind(since, until, (cause,)))
    return merged


def _share(observed: float) -> str:
    """``97.2%``, rounded down so that a window with anything unobserved never reads ``100%``."""
    return percent(observed)


def _gap_lines(gaps: list[Blind], filled: Sequence[Filled] = ()) -> tuple[list[str], list[Filled]]:
    """The stretches not observed: those a person must see (no recorder, not committed, pruned, 5 s or longer), the
    first ``MAX_LISTED_GAPS``; the rest counted. A time between runs under a second (a restart's handover) is counted,
    never listed: its span would read ``16:14:40Z–16:14:40Z (0s, no recorder ran)``. A gap a log filled says so on its
    own line (listed once); the fills of no listed gap are returned, to be said apart."""
    def must_see(gap: Blind) -> bool:
        return any(c in gap.causes for c in ALWAYS_LISTED) and (gap.until - gap.since >= 1 or gap.causes != (NO_RECORDER,))
    listed = [g for g in gaps if must_see(g) or g.until - g.since >= LISTED_GAP_SECONDS]
    said: list[Filled] = []
    lines = []
    for gap in listed[:MAX_LISTED_GAPS]:
        fills = [f for f in filled if f.since < gap.until and f.until > gap.since]
        said += fills
        words = "".join(f"; {filled_words(f)}" for f in fills)
        lines.append(f"  {format_span(gap.since, gap.until)} ({format_duration(gap.until - gap.since)}, {', '.join(gap.causes)}){words}")
    more = len(listed) - MAX_LISTED_GAPS
    shorter = len(gaps) - len(listed)
    rest = [text for n, text in ((more, counted(more, "more gap")),
                                 (shorter, f"{counted(shorter, 'gap')} shorter than {LISTED_GAP_SECONDS:.0f}s")) if n > 0]
    if rest:
        lines.append(f"  {'and ' if listed else ''}{' and '.join(rest)}")
    return lines, [f for f in filled if f not in said]


def _kind_lines(refused: list[tuple[str, int, str]], absent: list[tuple[str, float, float]]) -> list[str]:
    """The kinds a run did not record, and when kinds were not served."""
    lines = [f"  {gvk} was not recorded by run {run} ({cause}): its changes during that run are not in the trace"
             for gvk, run, cause in refused]
    return lines + [f"  {gvk} was not served {format_span(since, until)} ({format_duration(until - since)}): "
                    "none of its objects existed then" for gvk, since, until in absent]


@dataclass(frozen=True)
class Filled:
    """A gap the API server's audit log filled (``store/backfill.Fill``, said here): the gap, the part the log covered."""

    since: float
    until: float
    covered_since: float | None
    covered_until: float | None
    levels: tuple[str, ...]
    events: int
    kept: int
    kind: str = ""  # an outage of this kind ('' : time between runs)


def filled_words(f: Filled) -> str:
    """What a log filled of a gap: ``filled from the audit log (RequestResponse, 4 events)``, and the parts it left
    reconstructed (``export``'s coverage block, the view's time axis)."""
    parts = []
    if f.covered_since is None or f.covered_until is None:
        parts.append("the log covers none of it: reconstructed")
    else:
        uncovered = [(a, b) for a, b in ((f.since, f.covered_since), (f.covered_until, f.until)) if b - a >= 1]
        parts += [f"{format_span(a, b)} not in the log: reconstructed" for a, b in uncovered]
    if f.kept:
        parts.append(f"{counted(f.kept, 'object')} the log does not account for: reconstructed")
    words = f"filled from the audit log ({', '.join(f.levels) or 'no write'}, {counted(f.events, 'event')})"
    return words + (f"; {'; '.join(parts)}" if parts else "")


def filled_lines(filled: Iterable[Filled], *, start: float, end: float) -> list[str]:
    """Per gap of the window that a log filled: what from (level, events), and the part the log left reconstructed."""
    lines = []
    for f in filled:
        if f.until <= start or f.since >= end:
            continue
        whose = f" ({f.kind}'s outage)" if f.kind else ""
        lines.append(f"  {format_span(f.since, f.until)}{whose} {filled_words(f)}")
    return lines


def coverage_head(start_ts: float, end_ts: float, gaps: list[Blind], filled: Iterable[Filled]) -> str:
    """``coverage: 44.5% of the window (16s) observed live, 38.0% exact from the audit log, 17.5% not observed; not
    observed live:``, each stretch told one way (``trace/observation``), a share only when there is some of it;
    without a log's exact time, as before."""
    window = end_ts - start_ts
    told = shares(tell(start=start_ts, end=end_ts, blind=[(g.since, g.until) for g in gaps], exact=exact_spans(filled)))
    head = f"coverage: {_share(told[LIVE] / window)} of the window ({format_duration(window)}) observed live"
    if told[EXACT] <= 0:
        return head + ("; not observed:" if gaps else "")
    unobserved = f", {_share(told[NOT_OBSERVED] / window)} {NOT_OBSERVED}" if told[NOT_OBSERVED] > 0 else ""  # as status says it
    return f"{head}, {_share(told[EXACT] / window)} {EXACT}{unobserved}; not observed live:"


def coverage_block(
    *, start_ts: float, end_ts: float, blind: Iterable[tuple[float, float, str]],
    unrecorded: Iterable[tuple[str, int, str]] = (), inferred: int = 0, inferred_deleted: int = 0,
    unserved: Iterable[tuple[str, float, float]] = (), pruned: int | None = None, filled: Iterable[Filled] = (),
) -> str | None:
    """What the trace of ``[start_ts, end_ts)`` is worth, in one block: the share of the window observed live,
    the stretches that were not (no recorder ran, an outage or a refusal: ``blind``; outages from ``LISTED_GAP_SECONDS``
    on), the kinds a run did not record (``(gvk, run, cause)``), when kinds were not served (``(gvk, since, until)``:
    no blind time, said so that nobody takes "none" for "not looked"), and how many events were reconstructed; ``pruned``:
    the history before that second was pruned (its stretch is among ``blind``). None when there is nothing to say."""
    gaps = merge_blind(blind, start=start_ts, end=end_ts)
    refused = sorted(set(unrecorded))
    absent = sorted((gvk, max(a, start_ts), min(b, end_ts)) for gvk, a, b in unserved if min(b, end_ts) > max(a, start_ts))
    if not gaps and not refused and not absent and not inferred:
        return None
    fills = [f for f in filled if f.until > start_ts and f.since < end_ts]
    lines = [coverage_head(start_ts, end_ts, gaps, fills)]
    gap_lines, apart = _gap_lines(gaps, fills)
    lines += gap_lines
    lines += filled_lines(apart, start=start_ts, end=end_ts)
    if pruned is not None:
        lines.append(f"  history before {format_time(pruned)} was pruned: objects and lifecycles before it are gone")
    lines += _kind_lines(refused, absent)
    if inferred:
        changed = inferred - inferred_deleted
        lines.append(f"  {counted(inferred, 'event')} reconstructed after a gap ({counted(inferred_deleted, 'deletion')}, "
                     f"{changed} {'creation or change' if changed == 1 else 'creations or changes'}): "
                     "their times are when the recorder caught up, not when they happened")
    return "\n".join(lines)


def after_history(*, start_ts: int, end_ts: int, last: float, running: bool) -> str:
    """Why a window that starts after the last commit of the cache's last run is not exported (one line, for ``Error:``):
    nothing in it was recorded, and the trace would hold a start state that pretends to be the window's."""
    until = format_time(last)
    whose = f"its running recorder has committed up to {until}" if running else f"its last recording stopped at {until}"
    return (f"the window {format_time(start_ts)} to {format_time(end_ts)} starts after the cache's record ends ({whose}): nothing "
            f"in it was recorded; pass a --start-time before {until} (or record that time with 'kubectl sktrace start'), or pass "
            "--allow-empty to write it anyway")


def pruned_window(*, start_ts: int, end_ts: int, cutoff: int) -> str:
    """Why a window wholly before a prune's cutoff is not exported (one line, for ``Error:``)."""
    return (f"the window {format_time(start_ts)} to {format_time(end_ts)} lies wholly before {format_time(cutoff)}, where the "
            "cache's history was pruned: objects and lifecycles before it are gone; export a window that ends after "
            f"{format_time(cutoff)}, or pass --allow-empty to write it anyway")
