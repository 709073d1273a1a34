"""Export a time window of the cache as a SimKube v2 trace (docs/spec.md §7). Reads only the cache.

The window is ``[start_ts, end_ts)`` in integer seconds. What the trace holds:

1. A synthetic first event at ``start_ts`` applying the state at ``start_ts`` (the last version of every
   object applied before it and not deleted, keyed by kind *and* namespace/name; pods that finished
   before it are left out).
2. Every event with ``start_ts <= ts < end_ts``, rows of the same second grouped into one event, in time
   then recorded order; events left empty by the filters are dropped.
3. The ``index``: every exported object applied before ``end_ts`` (deleted ones too, as SimKube does) →
   the spec hash of its last version before ``end_ts``.
4. ``pod_lifecycles`` of pods whose owner is in the index and whose lifecycle overlaps the window, starts
   clamped to ``start_ts``, window-spanning pods kept, in the order the pods were first recorded.
5. The tracer config in force, as SimKube loads it.

A window that starts before the cache's first run starts there (the cache knows nothing earlier; the first
run never changes, so this keeps closed windows stable). A window that starts after the last run's last commit
(its heartbeat), or in the future, is refused: nothing in it was recorded. So is a trace with no object at all,
before a byte is written, unless asked for (``--allow-empty``, which also forces the former); what the filters left out, and SimKube's reference rules checked on the
events as they are written (``validation.ReferenceRules``), become notes and warnings (``export/advice.py``).

Filters decide per object, on its last applied version before ``end_ts`` (so an object is in or out of
the whole trace, and its deletion follows it): cluster-scoped objects are out unless asked for (SimKube's
driver crashes on them); then ``--include-namespaces`` if given (it replaces ``--excluded-namespaces``),
else the excluded namespaces; any matching ``--exclude-labels`` selector; an owner of kind DaemonSet; and
last, an owner chain (stored by the recorder) that reaches another exported object, which recreates it in
the simulator.

A window that has ended exports the same bytes every time, however much is recorded after it (while the
recorder still runs, after it stopped, after later restarts): the trace depends only on what the cache had
recorded before the window end. The store says until when that record is final (``history.known_until``):
the window end itself when a synced recorder was running then, else the last heartbeat of a synced run
before it (the end falls in a gap, or before a restarted recorder finished its initial lists), carried into a
gap as far as a ``RequestResponse`` audit log filled it (``backfill.final_until``). Everything is read as of that
time:

- events received after it are left out of the state, the window, the index and the filters' decisions,
  even when stamped earlier (a restart stamps an object created while offline with its creation time, and
  records what vanished at the restart time, while its lists are still running);
- pods first seen after it are left out of ``pod_lifecycles``;
- each lifecycle is taken as it stood then (``lifecycle.as_of``): a pod that finished at or after the window
  end — live, or at a deletion inferred by a later restart — is exported as ``Running(start)``, what was
  known at the window end (SimKube's tracer exports a pod still running when it exports the same way);
- the config is that of the run in force then.

What it cannot see: when the recorder learned a pod's container start or end (the cache keeps the container
times, not when they arrived), so a start or end that happened just before the window end but reached the
recorder after it (network latency, a watch that was down) still shows up in a later export; nor rows that a
relist running at the window end (an expired watch) adds afterwards with its start time
(``history.known_until`` says where it assumes).

Memory: per-object data (keys, hashes, owner chains) and the per-pod lifecycle table are held; events are
not. The events are read twice from one snapshot, once without bodies to count the groups (msgpack needs
the array length first), then with bodies, one group at a time. A msgpack trace without status copies the
stored bytes of each object as they are (``store/bodies.py``); other outputs decode them.
"""

from __future__ import annotations

import io
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import IO, Any, Callable

import yaml

from kubectl_sktrace import safeyaml
from kubectl_sktrace.errors import CacheError, ConfigError, EmptyTraceError, UsageError
from kubectl_sktrace.export import bounds
from kubectl_sktrace.export.advice import (
    NO_RECORDER,
    NOT_COMMITTED,
    PRUNED,
    Filled,
    coverage_block,
    default_namespace_note,
    empty_trace_reason,
    pruned_window,
    validation_warning,
)
from kubectl_sktrace.export.events import (
    count_groups,
    event_writer,
    groups,
    stored_refs_usable,
)
from kubectl_sktrace.export.options import (
    DEFAULT_EXCLUDED_NAMESPACES,
    FORMATS,
    ExportFilters,
)
from kubectl_sktrace.export.plan import Decisions, Plan, plan_objects
from kubectl_sktrace.export.transforms import RewritingWriter
from kubectl_sktrace.model import POD, CacheUrl
from kubectl_sktrace.plural import counted
from kubectl_sktrace.store import Cache, backfill, history, pruning
from kubectl_sktrace.timeparse import format_duration, format_time
from kubectl_sktrace.trace import lifecycle as lifecycles
from kubectl_sktrace.trace.observation import exact_spans
from kubectl_sktrace.trace.reports import validation
from kubectl_sktrace.trace.files.collector import relaxed_gc
from kubectl_sktrace.trace.files.format import Trace, decode_trace
from kubectl_sktrace.trace.skel import Program
from kubectl_sktrace.trace.files.textformat import make_writer
from kubectl_sktrace.trace.transform import AnonymizeOptions, Rewriter, anonymization_report, anonymization_sentence, make_rewriter
from kubectl_sktrace.tracerconfig import (
    TracerConfig,
    config_from_trace,
    config_to_trace,
    parse_config,
)


@dataclass(frozen=True)
class ExportReport:
    """What an export wrote, and what a person should know about it."""

    start_ts: int
    end_ts: int
    events: int
    applied: int
    deleted: int
    index_objects: int
    lifecycles: int
    last_event_ts: int
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    events_matched: int = 0  # --transform's counters, as SimKube counts them (``trace/skel``)
    resources_modified: int = 0
    decisions: Decisions | None = None
    anonymization: dict[str, Any] | None = None  # --anonymize's report (``Anonymizer.report``)

    def as_mapping(self, *, output: str) -> dict[str, Any]:
        """The summary for programs (``--summary json|yaml``): what was written, and what the rules decided."""
        written = {
            "output": output, "events": self.events, "applied": self.applied, "deleted": self.deleted, "indexObjects": self.index_objects,
            "podLifecycles": self.lifecycles, "lastEvent": format_time(self.last_event_ts),
        }
        decided = self.decisions.as_mapping() if self.decisions is not None else {}
        anonymized = {"anonymization": self.anonymization} if self.anonymization is not None else {}
        return {**written, **decided, **anonymized, "notes": list(self.notes), "warnings": list(self.warnings)}


def _index(plan: Plan) -> dict[str, dict[str, int]]:
    index: dict[str, dict[str, int]] = {}
    for key, spec_hash in plan.exported.items():  # sorted by kind, namespace, name
        index.setdefault(str(key.gvk), {})[key.ns_name] = spec_hash
    return index


def _pod_lifecycles(
    cache: Cache, *, start_ts: int, end_ts: int, known: float, plan: Plan,
) -> tuple[dict[tuple[str, str], dict[int, list[dict[str, Any]]]], int]:
    """The ``pod_lifecycles`` table: each lifecycle as it stood at ``known`` (never after the window end)."""
    table: dict[tuple[str, str], dict[int, list[dict[str, Any]]]] = {}
    count = 0
    # a pod that finished before the window, as known then (``as_of``: its end second lies before ``known``), cannot overlap it
    ended_since = min(start_ts, known - 1)
    for pod in history.pod_lifecycles(cache, before=end_ts, known=known, ended_since=ended_since):
        if pod.owner not in plan.exported:
            continue
        lc = lifecycles.as_of(lifecycles.Lifecycle(pod.start_ts, pod.end_ts), at=known)
        if not lifecycles.overlaps(lc, start_ts=start_ts, end_ts=end_ts):
            continue
        entry = lifecycles.to_trace_entry(lifecycles.clamp(lc, start_ts=start_ts))
        table.setdefault((str(pod.owner.gvk), pod.owner.ns_name), {}).setdefault(pod.stable_hash, []).append(entry)
        count += 1
    return table, count


def _config_in_force(cache: Cache, all_runs: list[history.Run], *, at: float) -> TracerConfig:
    """The config of the run in force at ``at`` (the window end, as far as it is known), every kind included
    (``config_to_trace`` gives what the trace holds: pod-less kinds left out)."""
    text = history.config_in_force(all_runs, at=at) or ""
    source = f"the tracer config stored in cache {cache.path}"
    try:
        data = safeyaml.load(text)
    except yaml.YAMLError:
        raise CacheError(f"{source} is not valid YAML; the cache is damaged: record into a new --cache") from None
    return parse_config(data, source=source)


def decide_window(cache: Cache, *, start_ts: int, end_ts: int, filters: ExportFilters, program: Program | None = None,
                  keep_status: bool = False, list_objects: bool = False, allow_empty: bool = False) -> Decisions:
    """What ``export_trace`` would decide of each object of the window, without writing it (``export --dry-run``; with
    ``list_objects``, each object's verdict too: ``--dry-run=objects``); what the export refuses, refused alike."""
    if end_ts <= start_ts:
        raise UsageError(f"the window [{start_ts}, {end_ts}) is empty; pass an end time after the start time")
    with history.read_snapshot(cache), relaxed_gc():
        all_runs = bounds.runs(cache)
        start_ts, _ = bounds.clamped_start(all_runs, start_ts=start_ts, end_ts=end_ts)
        if not allow_empty:
            bounds.refuse_what_export_refuses(cache, all_runs, start_ts=start_ts, end_ts=end_ts, filters=filters)
        known = bounds.known_until(cache, all_runs, end_ts=end_ts)
        plan = plan_objects(cache, start_ts=start_ts, end_ts=end_ts, known=known, filters=filters, program=program, keep_status=keep_status,
                            list_objects=list_objects)
    return plan.decisions_report(start_ts=start_ts, end_ts=end_ts)


def export_trace(
    cache: Cache, *, start_ts: int, end_ts: int, filters: ExportFilters, keep_status: bool, fmt: str, stream: IO[bytes],
    allow_empty: bool = False, program: Program | None = None, anonymize_key: bytes | None = None,
    anonymize_options: AnonymizeOptions = AnonymizeOptions(), all_changes: bool = False) -> ExportReport:
    """Write the trace of ``[start_ts, end_ts)`` to ``stream`` in ``fmt`` (sktrace, json or yaml), its objects
    rewritten by ``program`` (--transform) and anonymized with ``anonymize_key`` when given (``export/transforms``).
    Its events are SimKube's (new objects, spec changes, deletions), and with ``all_changes`` every recorded change
    (labels, annotations, owner references, data: docs/spec.md "What a change is"), the state at the start too.

    A window that starts before the cache's first run starts at the second that run began in (no event of
    it is earlier): the cache knows nothing before, and the first run never changes, so a closed window
    still exports the same bytes. A trace that would hold no object raises EmptyTraceError before anything is written to
    ``stream``, unless ``allow_empty``."""
    if end_ts <= start_ts:
        raise UsageError(f"the window [{start_ts}, {end_ts}) is empty; pass an end time after the start time")
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    with history.read_snapshot(cache), relaxed_gc():
        all_runs = bounds.runs(cache)
        start_ts, notes = bounds.clamped_start(all_runs, start_ts=start_ts, end_ts=end_ts, filled_before=bounds.filled_before(cache))
        if not allow_empty:
            bounds.refuse_what_export_refuses(cache, all_runs, start_ts=start_ts, end_ts=end_ts, filters=filters)
        pruned = _pruned_into(cache, start_ts=start_ts, end_ts=end_ts, allow_empty=allow_empty)
        known = bounds.known_until(cache, all_runs, end_ts=end_ts)
        config = _config_in_force(cache, all_runs, at=known)  # a damaged cache says so before anything else
        rewriter = make_rewriter(program, key=anonymize_key, options=anonymize_options, start_ts=start_ts)
        plan = plan_objects(cache, start_ts=start_ts, end_ts=end_ts, known=known, filters=filters, program=program, keep_status=keep_status)
        if not plan.exported and not allow_empty:
            synced = [r.synced for r in all_runs if r.synced is not None]
            raise EmptyTraceError(empty_trace_reason(
                plan.left_out, include_namespaces=filters.include_namespaces, end_ts=end_ts,
                history_start=math.ceil(min(synced)) if synced else None,
            ))
        dropped_kinds = history.untracked_in(cache, start_ts=start_ts, end_ts=end_ts, known=known)
        coverage = _coverage(cache, all_runs, config=config, start_ts=start_ts, end_ts=end_ts, pruned=pruned)
        window = _Window(start_ts=start_ts, end_ts=end_ts, known=known, runs=all_runs, rewriter=rewriter, all_changes=all_changes)
        written = _write_trace(cache, window, plan=plan, config=config, fmt=fmt, stream=stream, keep_status=keep_status)
    more_notes, warnings = _messages(
        plan=plan, groups=written.groups, state=written.state, inferred=written.inferred,
        inferred_deleted=written.inferred_deleted, coverage=coverage, start_ts=start_ts, end_ts=end_ts,
    )
    anonymization = anonymization_report(rewriter, anonymize_options)
    notes += [*more_notes, *_filter_notes(plan, filters=filters, dropped_kinds=dropped_kinds)]
    notes += [anonymization_sentence(anonymization)] if anonymization is not None else []
    invalid = validation_warning(written.errors, rule_names=validation.RULES, tracked=frozenset(config.tracked))
    if invalid:
        warnings += (invalid,)
    return ExportReport(
        start_ts=start_ts, end_ts=end_ts, events=1 + written.groups, applied=written.applied, deleted=written.deleted,
        index_objects=len(plan.exported), lifecycles=written.lifecycles, last_event_ts=written.last_ts, notes=tuple(notes),
        warnings=warnings, events_matched=rewriter.events_matched, resources_modified=rewriter.resources_modified,
        decisions=plan.decisions_report(start_ts=start_ts, end_ts=end_ts), anonymization=anonymization,
    )


def _filter_notes(plan: Plan, *, filters: ExportFilters, dropped_kinds: list[tuple[str, int, int]]) -> list[str]:
    """What the default namespace exclusions left out, and the kinds that stopped being tracked in the window."""
    notes = []
    left_out_default = default_namespace_note(
        plan.left_out, include_namespaces=filters.include_namespaces,
        default_exclusions=filters.excluded_namespaces == frozenset(DEFAULT_EXCLUDED_NAMESPACES),
    )
    if left_out_default:
        notes.append(left_out_default)
    if plan.deleted_by_program:
        notes.append(f"left out {counted(plan.deleted_by_program, 'object')} whose last version before the window's end --transform "
                     "deletes")
    notes += (
        f"{gvk} stopped being tracked at {format_time(ts)} (a run's config dropped or changed it): its {counted(count, 'object')} "
        "are in the trace up to then, not deleted"
        for gvk, ts, count in dropped_kinds
    )
    return notes


@dataclass(frozen=True)
class _Window:
    start_ts: int
    end_ts: int
    known: float
    runs: list[history.Run]
    rewriter: Rewriter  # --transform, --anonymize (or neither: not ``active``)
    all_changes: bool = False  # --all-changes: revisions are events too


@dataclass
class _Written:
    """What writing the trace counted: its event groups, the rows behind them, the validation errors met."""

    groups: int = 0
    inferred: int = 0
    inferred_deleted: int = 0
    state: int = 0
    applied: int = 0
    deleted: int = 0
    last_ts: int = 0
    lifecycles: int = 0
    errors: Counter[str] = field(default_factory=Counter)


def _write_trace(
    cache: Cache, window: _Window, *, plan: Plan, config: TracerConfig, fmt: str, stream: IO[bytes], keep_status: bool,
) -> _Written:
    """The trace itself: the state at the window's start, one event per second with changes, the index and the
    pod lifecycles. The event count goes first in the file, so the groups are counted in a first pass."""
    start_ts, end_ts, known = window.start_ts, window.end_ts, window.known
    out = _Written(last_ts=start_ts)
    stored_names = {(str(key.gvk), key.namespace, key.name) for key in plan.exported}
    revisions = window.all_changes
    counted_groups = count_groups(history.window_heads(cache, start_ts=start_ts, end_ts=end_ts, known=known, revisions=revisions),
                                  stored_names)
    out.groups, out.inferred, out.inferred_deleted = counted_groups.groups, counted_groups.inferred, counted_groups.inferred_deleted
    trace_config = config_to_trace(config)
    rules = _reference_rules(trace_config)
    finish: Callable[..., None]
    if not window.rewriter.active:
        writer = make_writer(fmt, stream, config=trace_config, event_count=1 + out.groups)
        usable = {} if rules is None else stored_refs_usable(window.runs, rules)
        write = state = event_writer(writer, packed=fmt == "sktrace" and not keep_status, keep_status=keep_status, rules=rules,
                                     usable=usable, errors=out.errors)
        finish = writer.finish
    else:  # the program may empty events: they are counted as written (``RewritingWriter``)
        rewriting = RewritingWriter(window.rewriter, fmt=fmt, stream=stream, config=trace_config, keep_status=keep_status, rules=rules,
                                    errors=out.errors)
        write, state, finish = rewriting.event, rewriting.state, rewriting.finish
    out.state = state(start_ts, [e for e in history.state_at(cache, ts=start_ts, known=known, keys=plan.keys, revisions=revisions)
                                 if e.key in plan.exported])
    events = history.window_events(cache, start_ts=start_ts, end_ts=end_ts, known=known, keys=plan.keys, revisions=revisions)
    for ts, rows in groups(events, plan.exported):
        count = write(ts, rows)
        out.applied, out.deleted, out.last_ts = out.applied + count, out.deleted + len(rows) - count, ts
    table, out.lifecycles = _pod_lifecycles(cache, start_ts=start_ts, end_ts=end_ts, known=known, plan=plan)
    finish(index=_index(plan), pod_lifecycles=table)
    if window.rewriter.active:
        out.groups, out.applied, out.deleted = rewriting.groups, rewriting.applied, rewriting.deleted
        out.last_ts = start_ts if rewriting.last_ts is None else rewriting.last_ts
    return out


def _reference_rules(trace_config: dict[str, Any]) -> validation.ReferenceRules | None:
    """SimKube's reference rules under the trace's own config, as ``validate`` loads it."""
    try:
        return validation.ReferenceRules(config_from_trace(trace_config))
    except ConfigError:
        return None  # validate reports the config itself (L0001)


@dataclass(frozen=True)
class _Coverage:
    """What the cache knows of how a window was observed: ``blind`` stretches ``(since, until, cause)`` (no recorder ran,
    not yet committed, outages, refusals, first lists, pruned history), kinds not recorded or not served, the cut."""

    blind: list[tuple[float, float, str]]
    unrecorded: list[tuple[str, int, str]]
    unserved: list[tuple[str, float, float]]
    pruned: int | None  # the window reaches before this prune's cutoff
    filled: list[Filled]  # gaps the audit log filled (``backfill``)


def _pruned_into(cache: Cache, *, start_ts: int, end_ts: int, allow_empty: bool) -> int | None:
    """The cutoff of the cache's prunes when the window reaches before it; a window wholly before it is refused."""
    cutoff = pruning.pruned_before(cache)
    if cutoff is None or start_ts >= cutoff:
        return None
    if end_ts <= cutoff and not allow_empty:
        raise EmptyTraceError(pruned_window(start_ts=start_ts, end_ts=end_ts, cutoff=cutoff))
    return cutoff


def _coverage(cache: Cache, all_runs: list[history.Run], *, config: TracerConfig, start_ts: int, end_ts: int,
              pruned: int | None) -> _Coverage:
    # before the first run there is no history to miss (the clamp note says where it starts), not a gap; after a running
    # recorder's last commit, what it received is not committed yet
    uncommitted = all_runs[-1].stopped if cache.writer_active() else None
    gaps = history.uncovered(all_runs, start=max(start_ts, all_runs[0].started), end=end_ts)
    blind = [(a, b, NOT_COMMITTED if a == uncommitted else NO_RECORDER) for a, b in gaps]
    blind += [(g.since, g.until, g.cause) for g in history.coverage_gaps(cache) if g.since < end_ts and g.until > start_ts]
    if pruned is not None:
        blind.append((start_ts, pruned, PRUNED))
    watched = {str(g) for g in config.tracked} | {str(POD)}
    unrecorded = [(u.gvk, u.run_id, u.cause) for u in history.unrecorded_kinds(cache)
                  if u.since < end_ts and u.until > start_ts and u.gvk in watched]
    return _Coverage(blind=blind, unrecorded=unrecorded, unserved=history.not_served(cache, kinds=watched), pruned=pruned,
                     filled=audit_fills(cache))


def audit_fills(cache: Cache) -> list[Filled]:
    """The gaps an audit log filled (``backfill``), as the coverage block and the view's time axis say them."""
    return [Filled(f.since, f.until, f.covered_since, f.covered_until, f.levels, f.events, f.kept, f.gvk) for f in backfill.fills(cache)]


def _messages(
    *, plan: Plan, groups: int, state: int, inferred: int, inferred_deleted: int, coverage: _Coverage, start_ts: int,
    end_ts: int,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    notes: list[str] = []
    warnings: list[str] = []
    if plan.left_out.cluster_scoped:
        notes.append(
            f"left out {counted(plan.left_out.cluster_scoped, 'cluster-scoped object')}: SimKube's driver needs namespaced objects "
            "(pass --include-cluster-scoped to keep them)"
        )
    if not groups:
        notes.append(
            f"no events in the window {format_time(start_ts)} to {format_time(end_ts)}: the trace holds only the state at its start "
            f"({counted(state, 'object')})"
        )
    block = coverage_block(
        start_ts=start_ts, end_ts=end_ts, blind=coverage.blind, unrecorded=coverage.unrecorded, inferred=inferred,
        inferred_deleted=inferred_deleted, unserved=coverage.unserved, pruned=coverage.pruned, filled=coverage.filled,
    )
    if block:
        warnings.append(block)
    return tuple(notes), tuple(warnings)


@dataclass(frozen=True)
class WindowTrace:
    """The trace ``export_trace`` writes for a window, decoded, with its report and the times of the window
    nothing was recorded live (no recorder ran, or a run's watches were down), in order, and those of them an audit
    log made exact."""

    trace: Trace
    report: ExportReport
    gaps: tuple[tuple[float, float], ...]
    exact: tuple[tuple[float, float], ...] = ()  # the parts of the gaps an audit log made exact (``trace/observation``)


def window_trace(cache: Cache, *, start_ts: int, end_ts: int, filters: ExportFilters, all_changes: bool = False) -> WindowTrace:
    """The trace of ``[start_ts, end_ts)`` exactly as ``export_trace`` writes it, held in memory (to be drawn:
    ``status --timeline``, every change). A window without objects is no error here: it draws as one."""
    buffer = io.BytesIO()
    report = export_trace(cache, start_ts=start_ts, end_ts=end_ts, filters=filters, keep_status=False, fmt="sktrace", stream=buffer,
                          allow_empty=True, all_changes=all_changes)
    with history.read_snapshot(cache):
        offline = history.uncovered(history.runs(cache), start=report.start_ts, end=report.end_ts)
        outages = [(gap.since, gap.until) for gap in history.coverage_gaps(cache)]
        exact = exact_spans(audit_fills(cache))
    return WindowTrace(trace=decode_trace(buffer.getvalue()), report=report, gaps=tuple(sorted(offline + outages)), exact=tuple(exact))


def export_to(
    cache_path: str | CacheUrl, output_file: str, *, start_ts: int, end_ts: int, filters: ExportFilters, keep_status: bool, fmt: str,
    allow_empty: bool, stdout: IO[bytes], program: Program | None = None, anonymize_key: bytes | None = None,
    anonymize_options: AnonymizeOptions = AnonymizeOptions(), all_changes: bool = False,
) -> ExportReport:
    """``export``: the window of the cache at ``cache_path``, opened read-only, written to ``output_file`` the way
    ``output.write_output`` writes (``-`` is ``stdout``). A cache that a recorder changed while it was read is
    refused before the trace replaces a file."""
    from kubectl_sktrace.store import open_cache_readonly
    from kubectl_sktrace.trace.files.output import write_output

    with open_cache_readonly(cache_path) as opened:
        def write(stream: IO[bytes]) -> ExportReport:
            report = export_trace(opened, start_ts=start_ts, end_ts=end_ts, filters=filters, keep_status=keep_status, fmt=fmt,
                                  stream=stream, allow_empty=allow_empty, program=program, anonymize_key=anonymize_key,
                                  anonymize_options=anonymize_options, all_changes=all_changes)
            opened.ensure_unchanged()  # a writer may have changed what was read
            return report

        return write_output(output_file, write, binary=fmt == "sktrace", stdout=stdout)


def export_sentence(report: ExportReport, *, where: str) -> str:
    """The one line ``export`` ends with: what it wrote, and the window as ``inspect`` will show it."""
    return (
        f"Wrote {where}: {counted(report.events, 'event')} ({report.applied} applied, {report.deleted} deleted after the start state), "
        f"{counted(report.index_objects, 'object')} in the index, {counted(report.lifecycles, 'pod lifecycle')}, "
        f"window {format_time(report.start_ts)} .. {format_time(report.last_event_ts)} "
        f"({format_duration(report.last_event_ts - report.start_ts)}, first to last event as inspect shows it; "
        f"exported up to {format_time(report.end_ts)})."
    )


def decide_cache(cache_path: str | CacheUrl, *, start_ts: int, end_ts: int, filters: ExportFilters, program: Program | None = None,
                 keep_status: bool = False, list_objects: bool = False, allow_empty: bool = False) -> Decisions:
    """``export --dry-run``: ``decide_window`` on the cache at ``cache_path``, opened read-only."""
    from kubectl_sktrace.store import open_cache_readonly

    with open_cache_readonly(cache_path) as opened:
        return decide_window(opened, start_ts=start_ts, end_ts=end_ts, filters=filters, program=program, keep_status=keep_status,
                             list_objects=list_objects, allow_empty=allow_empty)
