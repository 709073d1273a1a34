"""``export`` and ``prune``: a window of the cache written as a trace, and history dropped."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from kubectl_sktrace.cli.completion import complete_contexts, complete_files, complete_trace_formats
from kubectl_sktrace.cli.filtering import decisions_text, rule_options, user_rules
from kubectl_sktrace.cli.options import (
    SktraceCommand,
    cache_option,
    cache_path,
    kube_options,
    must_read,
    note,
    output_option,
    quiet_option,
    say,
    verbosity_option,
    warn,
)
from kubectl_sktrace.cli.transforming import (
    anonymization_key,
    anonymize_options,
    anonymize_settings,
    load_skel,
    say_fresh_key,
    summary_option,
    transform_option,
)
from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.export.options import DEFAULT_EXCLUDED_NAMESPACES

if TYPE_CHECKING:
    from kubectl_sktrace.export.window import ExportReport
    from kubectl_sktrace.export.options import ExportFilters
    from kubectl_sktrace.model import CacheUrl
    from kubectl_sktrace.trace.skel import Program


def _trace_format(ctx: click.Context, param: click.Parameter, value: str) -> str:
    from kubectl_sktrace.export.options import check_format

    return check_format(value)


@click.command("export", cls=SktraceCommand)
@verbosity_option
@quiet_option
@kube_options
@cache_option
@click.option("-s", "--start-time", "start_time", default="-30m", show_default=True, metavar="TIME",
              help="Window start: 'now', a time relative to now ('-30m' is 30 minutes ago; '-2h', '-1d'), an RFC 3339 time "
                   "or '@<unix seconds>'.")
@click.option("-t", "--end-time", "end_time", default="now", show_default=True, metavar="TIME",
              help="Window end (excluded), in the same forms.")
@click.option("--excluded-namespaces", "excluded_namespaces", default=",".join(DEFAULT_EXCLUDED_NAMESPACES), show_default=True, metavar="LIST",
              help="Comma-separated namespaces to leave out (SimKube's list by default).")
@click.option("--include-namespaces", "include_namespaces", metavar="LIST",
              help="Keep only these namespaces; when given, --excluded-namespaces is ignored (so 'default' can be included).")
@click.option("--exclude-labels", "--excluded-labels", "exclude_labels", multiple=True, metavar="SELECTOR",
              help="Leave out objects matching this kubectl label selector ('a=b,c!=d,e in (x,y),!f'); repeatable, any match excludes.")
@rule_options
@click.option("--include-cluster-scoped", "include_cluster_scoped", is_flag=True,
              help="Keep cluster-scoped objects (SimKube's driver needs namespaced ones, so they are left out by default).")
@click.option("-O", "--output-file", "output_file", default=None, metavar="PATH", shell_complete=complete_files,
              help="Where to write the trace (default: output.sktrace; stdout for -o json|yaml); '-' is stdout. A file (or a "
                   "symlink's target) is replaced whole or not at all, keeping its mode; a device, FIFO or /dev/fd/N is written "
                   "into. An s3://, gs:// or az:// URL (the cloud extra) is an object, written whole or not at all; file:///PATH is PATH.")
@click.option("-o", "--format", "fmt", default="sktrace", show_default=True, metavar="[sktrace|json|yaml]", callback=_trace_format,
              shell_complete=complete_trace_formats,
              help="The trace's format, as kubectl's -o: sktrace is SimKube's msgpack format; json and yaml are for people, "
                   "do not load in SimKube, and go to stdout unless -O says where.")
@summary_option
@click.option("--dry-run", "dry_run", is_flag=False, flag_value="rules", default=None, type=click.Choice(["rules", "objects"]),
              help="Write nothing: show the rules in force and how many objects each decided (the table on stdout, or --summary "
                   "json|yaml); --dry-run=objects also lists each object, exported or not, and the rule or reason that decided it.")
@click.option("--keep-status", "keep_status", is_flag=True, help="Keep each object's status (SimKube drops it; skctl validate warns about it).")
@click.option("--allow-empty", "allow_empty", is_flag=True,
              help="Write the trace even when it holds no object, or its window lies before the history or after its "
                   "last commit (else that is an error, and nothing is written).")
@click.option("--all-changes", "all_changes", is_flag=True,
              help="An event for every recorded change: labels, annotations, owner references and ConfigMap data too "
                   "(by default only new objects, spec changes and deletions, as SimKube's tracer records).")
@transform_option
@anonymize_options
def export_command(
    kubeconfig: str | None, context: str | None, namespace: str | None, all_namespaces: bool, cache: str | None,
    start_time: str, end_time: str, excluded_namespaces: str | None, include_namespaces: str | None, exclude_labels: tuple[str, ...],
    filters_file: str | None, selector: str | None, allow: tuple[str, ...], deny: tuple[str, ...], default: str | None,
    include_cluster_scoped: bool, output_file: str | None, fmt: str, summary: str, dry_run: str | None, keep_status: bool, allow_empty: bool,
    all_changes: bool, transform: str | None, anonymize: bool, anonymize_key: str | None, anonymize_keep: tuple[str, ...], anonymize_map: str | None,
) -> None:
    """Write a SimKube trace of a time window from the cache, without contacting the cluster.

    The window is [--start-time, --end-time). The trace starts with the state at the start time, then every spec change
    in the window (--all-changes: every change). Which objects it holds is decided per object, on its last version in
    the window as the cluster had it (an object whose labels changed mid-window is in or out as a whole), after
    --transform, by rules asked in order, the first that matches deciding: --filters FILE's, then -l, then --allow and
    --deny as typed, then the namespace and label flags: -n NS keeps one namespace; -A keeps every namespace (none
    excluded); --include-namespaces keeps only those listed and overrides --excluded-namespaces; otherwise the excluded
    namespaces are left out; --exclude-labels leaves out what it matches. What no rule matches gets --default.
    Objects owned by a DaemonSet or by another exported object are left out too (SimKube recreates them).
    --dry-run shows what each rule decided; --dry-run=objects lists each object and what decided it.

    \b
    Example:
      kubectl sktrace export -s -1h -O incident.sktrace
      kubectl sktrace export -s 2026-11-22T10:00:00Z -t 2026-11-22T11:00:00Z --exclude-labels 'app in (canary)'
      kubectl sktrace export -n shop -o yaml | less
      kubectl sktrace export --deny 'namespace:shop labels:tier=canary' --allow 'namespace:shop' \\
          --allow 'namespace:kube-system labels:app.kubernetes.io/name=ingress-nginx' --default deny --dry-run
      kubectl sktrace export -s -1h -O s3://my-bucket/incident.sktrace
      kubectl sktrace export -s -1h --transform sanitize --anonymize -O shareable.sktrace
    """
    import time

    from kubectl_sktrace import render
    from kubectl_sktrace.cli.globalflags import namespace_scope
    from kubectl_sktrace.export.options import filters_from_flags, resolve_window
    from kubectl_sktrace.export.window import decide_cache, export_to

    output_file = _trace_destination(output_file, fmt=fmt, summary=summary, dry_run=dry_run is not None)
    start_ts, end_ts = resolve_window(start_time, end_time, now=time.time())
    if click.get_current_context().get_parameter_source("excluded_namespaces") == click.core.ParameterSource.DEFAULT:
        excluded_namespaces = None  # not chosen: SimKube's list, which -A may replace
    rules, rules_default, default_origin = user_rules(filters_file=filters_file, selector=selector, allow=allow, deny=deny, default=default)
    filters = filters_from_flags(
        namespace=namespace_scope(namespace=namespace, all_namespaces=all_namespaces), all_namespaces=all_namespaces,
        include_namespaces=include_namespaces, excluded_namespaces=excluded_namespaces, exclude_labels=exclude_labels,
        include_cluster_scoped=include_cluster_scoped, rules=rules, default=rules_default, default_origin=default_origin,
    )
    program = load_skel(transform) if transform is not None else None  # a syntax error before the cache is opened
    filters = _kinds_resolved(location := cache_path(cache=cache, kubeconfig=kubeconfig, context=context), filters)
    if dry_run is not None:
        decisions = decide_cache(location, start_ts=start_ts, end_ts=end_ts, filters=filters, program=program, keep_status=keep_status,
                                 list_objects=dry_run == "objects", allow_empty=allow_empty).as_mapping()
        return say(decisions_text(decisions) if summary == "table" else render.dump(decisions, summary))
    key, fresh = anonymization_key(anonymize=anonymize, anonymize_key=anonymize_key)
    report = export_to(location, output_file, start_ts=start_ts, end_ts=end_ts, filters=filters, keep_status=keep_status, fmt=fmt,
                       allow_empty=allow_empty, stdout=sys.stdout.buffer, program=program, anonymize_key=key, all_changes=all_changes,
                       anonymize_options=anonymize_settings(anonymize=anonymize, anonymize_keep=anonymize_keep, anonymize_map=anonymize_map))
    _say(report, where="stdout" if output_file == "-" else output_file, summary=summary, program=program)
    if fresh and key is not None:
        say_fresh_key(key)


def _kinds_resolved(location: str | CacheUrl, filters: ExportFilters) -> ExportFilters:
    """The rules' kinds as kubectl names them resolved from the cache's discovery documents; a warning for a kind never recorded."""
    import dataclasses

    from kubectl_sktrace.export.kinds import rule_kinds

    resolved, warnings = rule_kinds(location, filters.rules)
    for warning in warnings:
        warn(warning)
    return dataclasses.replace(filters, rules=resolved)


def _say(report: ExportReport, *, where: str, summary: str, program: Program | None) -> None:
    """What an export says: the notes, warnings and its last line on stderr, or the summary for programs on stdout."""
    from kubectl_sktrace import render
    from kubectl_sktrace.export.window import export_sentence
    from kubectl_sktrace.trace.transform import review_sentence, transform_note

    if summary != "table":
        say(render.dump(report.as_mapping(output=where), summary))
        must_read(review_sentence(report.anonymization))
        return
    for text in report.notes:
        note(f"Note: {text}")
    must_read(review_sentence(report.anonymization))
    for warning in report.warnings:
        warn(warning)
    if program is not None:
        note(transform_note(program.source, events_matched=report.events_matched, resources_modified=report.resources_modified))
    note(export_sentence(report, where=where))


def _trace_destination(output_file: str | None, *, fmt: str, summary: str, dry_run: bool) -> str:
    """Where the trace goes: -O, else stdout for json and yaml (as kubectl's -o prints), else output.sktrace. The
    summary's json or yaml is on stdout too, so the trace must then go to a file."""
    destination = output_file if output_file is not None else "-" if fmt != "sktrace" else "output.sktrace"
    if summary != "table" and destination == "-" and not dry_run:
        why = "-O -" if output_file == "-" else f"-o {fmt} without -O"
        raise UsageError(f"--summary {summary} prints the summary on stdout, where {why} writes the trace; pass -O FILE, or leave --summary out")
    return destination


@click.command("prune", cls=SktraceCommand)
@verbosity_option
@quiet_option
@click.option("--kubeconfig", "kubeconfig", metavar="FILE", shell_complete=complete_files, help="Path to the kubeconfig file (locates the default cache).")
@click.option("--context", "context", metavar="NAME", shell_complete=complete_contexts, help="The kubeconfig context whose default cache to prune.")
@cache_option
@output_option
@click.option("--before", "before", required=True, metavar="TIME",
              help="Drop history older than this: a time relative to now ('-7d' is 7 days ago), an RFC 3339 time or '@<unix seconds>'.")
@click.option("--dry-run", "dry_run", is_flag=True, help="Only count what would be dropped; the cache is opened read-only.")
def prune_command(kubeconfig: str | None, context: str | None, cache: str | None, output: str, before: str, dry_run: bool) -> None:
    """Drop history older than TIME from the cache, keeping what later exports need.

    Any export whose window starts at or after TIME gives the same trace before and after the prune. It
    cannot run while a recorder writes to the same cache; --dry-run can, and changes nothing. Sizes are
    those of the files on disk: 'bytes freed' is what the disk got back. When less than a quarter of the cache
    is freed it is not vacuumed, so the file keeps its size and 'bytes reusable' is reused by later recordings.
    In a PostgreSQL cache the sizes are those of the history's tables, and PostgreSQL's autovacuum makes the
    room of the removed rows reusable.

    \b
    Example:
      kubectl sktrace prune --before -7d --dry-run
      kubectl sktrace prune --before -7d
    """
    import time

    from kubectl_sktrace import render
    from kubectl_sktrace.store.prune import for_people, prune_cache
    from kubectl_sktrace.timeparse import parse_time

    now = time.time()
    cutoff = parse_time(before, now=now)
    report = prune_cache(cache_path(cache=cache, kubeconfig=kubeconfig, context=context), before=cutoff, dry_run=dry_run, now=now)
    mapping = report.as_mapping()
    say(render.render_mapping(for_people(mapping) if output == "table" else mapping, output))
