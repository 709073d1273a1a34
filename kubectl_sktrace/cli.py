"""The ``kubectl sktrace`` command line: click commands and the one error boundary.

Each command parses its options, calls one library function and renders the result. Library modules are
imported inside the commands so that ``--help``, ``version``, ``inspect`` and the other offline commands
never pay for importing the ``kubernetes`` package. kubectl passes only the arguments after the plugin
name, so the kubectl flags (``--kubeconfig``, ``--context``, ``-n``, ``-A``, ``-v``) are defined here once,
as decorators, and spelled the same on every command.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import traceback
from typing import Any, Callable, TypeVar, cast

import click

from kubectl_sktrace import __version__
from kubectl_sktrace.completion import complete_contexts, complete_files, complete_namespaces
from kubectl_sktrace.errors import SktraceError, UsageError

F = TypeVar("F", bound=Callable[..., Any])

TRACEBACK_VERBOSITY = 6
_state = {"verbosity": 0, "quiet": 0}

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


DEBUG_VERBOSITY = 4


def configure_logging(verbosity: int, *, quiet: bool = False) -> None:
    """Logs go to stderr. Below debug verbosity only our own records pass: the kubernetes client logs
    failures (of an exec credential plugin, say) on the root logger, and those would precede, and repeat
    less clearly, the one ``Error:`` line the user gets. Without ``-v``, warnings read ``Warning: ...``;
    ``--quiet`` (without ``-v``) leaves them out."""
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity < DEBUG_VERBOSITY else logging.DEBUG
    if quiet and verbosity <= 0:
        level = logging.ERROR
    handler = logging.StreamHandler(sys.stderr)
    fmt = "Warning: %(message)s" if verbosity <= 0 else "%(asctime)s %(levelname)s %(name)s: %(message)s"
    handler.setFormatter(logging.Formatter(fmt))
    if verbosity < DEBUG_VERBOSITY:
        handler.addFilter(lambda record: record.name.startswith("kubectl_sktrace"))
    logging.basicConfig(level=level, handlers=[handler], force=True)


def _set_verbosity(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    if value is None:
        return value
    _state["verbosity"] = max(_state["verbosity"], value)
    configure_logging(_state["verbosity"], quiet=bool(_state["quiet"]))
    return value


def verbosity_option(f: F) -> F:
    return click.option(
        "-v", "--v", "--verbosity", "verbosity", type=click.IntRange(0, 10), default=None, expose_value=False, is_eager=True,
        callback=_set_verbosity, metavar="N",
        help="Log verbosity on stderr, as kubectl's: 1-3 info, 4+ debug, 6+ tracebacks on errors.",
    )(f)


def _set_quiet(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    _state["quiet"] = int(value)
    configure_logging(_state["verbosity"], quiet=value)
    return value


def quiet_option(f: F) -> F:
    """``--quiet``, spelled and meaning the same on every command that can warn: no warnings, notes or progress;
    errors are still printed (and what the command is asked for: a table, a trace on stdout)."""
    return click.option(
        "--quiet", "quiet", is_flag=True, is_eager=True, expose_value=False, callback=_set_quiet,
        help="No warnings, notes or progress on stderr; errors only.",
    )(f)


def warn(message: str) -> None:
    """A ``Warning:`` line on stderr, unless ``--quiet``."""
    if not _state["quiet"]:
        click.echo(f"Warning: {message}", err=True)


def note(message: str) -> None:
    """A line of information on stderr, unless ``--quiet``."""
    if not _state["quiet"]:
        click.echo(message, err=True)


def kube_options(f: F) -> F:
    """--kubeconfig, --context, -n/--namespace and -A/--all-namespaces, as kubectl spells them."""
    f = click.option("-A", "--all-namespaces", "all_namespaces", is_flag=True,
                     help="All namespaces (the default of start and status; export: none excluded).")(f)
    f = click.option("-n", "--namespace", "namespace", metavar="NS", shell_complete=complete_namespaces, help="Only this namespace.")(f)
    f = click.option("--context", "context", metavar="NAME", shell_complete=complete_contexts, help="The kubeconfig context to use.")(f)
    f = click.option("--kubeconfig", "kubeconfig", metavar="FILE", shell_complete=complete_files,
                     help="Path to the kubeconfig file (else $KUBECONFIG, else ~/.kube/config).")(f)
    return f


def _local_cache(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse a URL as --cache while parsing, before a command reads a kubeconfig or starts anything."""
    if value:
        from kubectl_sktrace.kubeconfig import check_cache_location

        check_cache_location(value)
    return value


def cache_option(f: F) -> F:
    return click.option(
        "--cache", "cache", metavar="FILE", callback=_local_cache, shell_complete=complete_files,
        help="The sqlite cache (default: one file per context under ${XDG_STATE_HOME:-~/.local/state}/kubectl-sktrace/).",
    )(f)


def output_option(f: F) -> F:
    return click.option(
        "-o", "--output", "output", type=click.Choice(["table", "json", "yaml"]), default="table", show_default=True,
        help="Output format.",
    )(f)


class SktraceCommand(click.Command):
    """A command that refuses a kubectl global flag it has no use for with one line saying so."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        from kubectl_sktrace import globalflags

        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            if globalflags.global_spelling(exc.option_name) is None:
                raise
            raise UsageError(globalflags.refusal(ctx.info_name or self.name or "", exc.option_name)) from None


class SktraceGroup(click.Group):
    """The error boundary: SktraceError becomes one ``Error:`` line and exit 1. kubectl's global flags may come
    before the command (``globalflags``); no command at all prints the help."""

    command_class = SktraceCommand

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args and not ctx.resilient_parsing:
            click.echo(ctx.get_help())
            ctx.exit(0)
        from kubectl_sktrace.globalflags import hoist_global_flags, lacks_command

        if lacks_command(args, commands=self.commands) and not ctx.resilient_parsing:
            if {"-h", "--help"} & set(args):
                click.echo(ctx.get_help())
                ctx.exit(0)
            error = UsageError("the flags need a command to go with, e.g. 'kubectl sktrace --context NAME status'; "
                               "'kubectl sktrace --help' lists the commands")
            _report(str(error), error)  # the group's own arguments: before the error boundary of invoke
            ctx.exit(error.exit_code)
        return super().parse_args(ctx, hoist_global_flags(args, commands=self.commands))

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SktraceError as exc:
            _report(str(exc), exc)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            sys.exit(130)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort, SystemExit):
            raise
        except BrokenPipeError:
            sys.stderr.close()
            sys.exit(1)
        except Exception as exc:  # a bug: say so in one line, traceback only when asked for
            _report(f"unexpected {type(exc).__name__}: {exc} (rerun with -v 6 for a traceback and report it)", exc)
            sys.exit(1)


def _report(message: str, exc: BaseException) -> None:
    if _state["verbosity"] >= TRACEBACK_VERBOSITY:
        traceback.print_exception(exc, file=sys.stderr)
    click.echo(f"Error: {message}", err=True)


@click.group(cls=SktraceGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "--version", message="kubectl-sktrace %(version)s")
@verbosity_option
def cli() -> None:
    """Record a Kubernetes cluster trace and export it as a SimKube trace file.

    \b
    Example:
      kubectl sktrace start --duration 10m
      kubectl sktrace export -s -10m -O incident.sktrace
    """


@cli.command()
@verbosity_option
@output_option
def version(output: str) -> None:
    """Print the versions of the plugin, the trace format and the cache schema.

    \b
    Example:
      kubectl sktrace version -o json
    """
    from kubectl_sktrace import render, store, traceformat

    info = {"plugin": __version__, "traceFormat": traceformat.FORMAT_VERSION, "cacheSchema": store.SCHEMA_VERSION}
    click.echo(render.render_mapping(info, output))


# --- timeline charts: inspect --timeline and status --timeline ------------------------------------
#
# --timeline turns inspect and status into drawing a chart. Each is a decorator that adds the drawing flags
# and, when --timeline is given, draws instead of running the command it wraps (which never sees the flags).


def _timeline_options(f: F, *, window: bool) -> F:
    if window:
        f = click.option("-t", "--end-time", "end_time", metavar="TIME", help="With --timeline: the window end (default now).")(f)
        f = click.option("-s", "--start-time", "start_time", metavar="TIME",
                         help="With --timeline: the window start, in export's forms (default -30m).")(f)
    f = click.option("--width", "width", type=int, metavar="N", help="Chart width in columns (default: the terminal's, else 80).")(f)
    f = click.option("--ascii", "ascii_only", is_flag=True, help="Plain ASCII instead of block characters (the default when stdout is not UTF-8).")(f)
    f = click.option("--top", "top", type=click.IntRange(min=1), metavar="N", help="Draw the N most active owners (default 10).")(f)
    f = click.option("--timeline", "timeline", is_flag=True,
                     help="Draw running pods and spec changes per owner over time (a terminal chart).")(f)
    return f


def inspect_timeline(f: F) -> F:
    """``inspect --timeline [--top N] [--ascii] [--width N] TRACE``: the trace file, drawn."""

    @functools.wraps(f)
    def command(*, timeline: bool, top: int | None, ascii_only: bool, width: int | None, **kwargs: Any) -> Any:
        _refuse_without_timeline(timeline, **{"--top": top, "--ascii": ascii_only, "--width": width})
        if not timeline:
            return f(**kwargs)
        if kwargs.get("with_events") or kwargs.get("output", "table") != "table":
            raise click.UsageError("--timeline draws a chart; leave out --events and -o/--output")
        from kubectl_sktrace.traceformat import read_trace, source_name

        trace = kwargs["trace"]
        _draw_timeline(read_trace(trace, stdin=sys.stdin.buffer), title=f"Trace {source_name(trace)}", top=top, width=width, ascii_only=ascii_only)
        return None

    return cast(F, _timeline_options(command, window=False))


def status_timeline(f: F) -> F:
    """``status --timeline [-s TIME] [-t TIME] [-n NS] ...``: a window of the cache, drawn from the trace export
    writes for it (its default filters, or only -n NS). Read-only and offline, as status is."""

    @functools.wraps(f)
    def command(*, timeline: bool, top: int | None, ascii_only: bool, width: int | None, start_time: str | None,
                end_time: str | None, **kwargs: Any) -> Any:
        _refuse_without_timeline(timeline, **{"--top": top, "--ascii": ascii_only, "--width": width, "--start-time": start_time,
                                              "--end-time": end_time})
        if not timeline:
            return f(**kwargs)
        if kwargs.get("output", "table") != "table":
            raise click.UsageError("--timeline draws a chart; leave out -o/--output")
        namespace = kwargs.get("namespace")
        if namespace and kwargs.get("all_namespaces"):
            raise click.UsageError("use either -n/--namespace or -A/--all-namespaces, not both")
        import time

        from kubectl_sktrace.export import ExportFilters, resolve_window, window_trace
        from kubectl_sktrace.store import open_cache_readonly

        start_ts, end_ts = resolve_window(start_time or "-30m", end_time or "now", now=time.time())
        filters = ExportFilters() if not namespace else ExportFilters(include_namespaces=frozenset([namespace]))
        path = _cache_path(cache=kwargs.get("cache"), kubeconfig=kwargs.get("kubeconfig"), context=kwargs.get("context"))
        with open_cache_readonly(path) as opened:
            window = window_trace(opened, start_ts=start_ts, end_ts=end_ts, filters=filters)
        for note in window.report.notes:
            click.echo(f"Note: {note}", err=True)
        _draw_timeline(window.trace, title=f"Cache {path}", top=top, width=width, ascii_only=ascii_only,
                       start=window.report.start_ts, end=window.report.end_ts - 1, gaps=window.gaps)
        return None

    return cast(F, _timeline_options(command, window=True))


def _refuse_without_timeline(timeline: bool, **given: object) -> None:
    """A drawing flag without --timeline would be silently ignored: refuse it."""
    used = [name for name, value in given.items() if value not in (None, False)]
    if used and not timeline:
        raise click.UsageError(f"{', '.join(used)} only {'apply' if len(used) > 1 else 'applies'} to a chart; add --timeline")


def _draw_timeline(trace: Any, *, title: str, top: int | None, width: int | None, ascii_only: bool,
                   start: int | None = None, end: int | None = None, gaps: tuple[tuple[float, float], ...] = ()) -> None:
    import shutil

    from kubectl_sktrace import timeline
    from kubectl_sktrace.errors import UsageError

    if width is not None and width < timeline.MIN_WIDTH:
        raise UsageError(f"--width {width} is too narrow for a timeline; pass --width {timeline.MIN_WIDTH} or more")
    columns = width if width is not None else max(timeline.MIN_WIDTH, shutil.get_terminal_size((80, 24)).columns)
    charset = timeline.charset_for(sys.stdout.encoding, ascii_only=ascii_only)
    click.echo(timeline.draw(trace, title=title, top=top or 10, width=columns, charset=charset, start=start, end=end, gaps=gaps))


# --- recording: start and status --------------------------------------------------------------------


@cli.command()
@kube_options
@cache_option
@click.option("--config", "config_path", metavar="FILE", shell_complete=complete_files, help="SimKube TracerConfig YAML (default: Deployments, StatefulSets, Jobs, CronJobs).")
@click.option("--duration", metavar="DUR", help="Stop after this long, e.g. 90s, 10m, 2h (default: until Ctrl-C or SIGTERM).")
@quiet_option
@output_option
@verbosity_option
def start(kubeconfig: str | None, context: str | None, namespace: str | None, all_namespaces: bool, cache: str | None,
          config_path: str | None, duration: str | None, output: str) -> None:
    """Record the cluster into the local cache until --duration elapses or Ctrl-C.

    On every start the cluster is listed and compared with the cache, so what changed while no recorder
    ran is recorded too (deletions inferred at the start time); once the lists are done, a report on stderr
    names what was deleted, created and changed while offline and which pods finished meanwhile. Ends with a
    summary per kind; -o json|yaml prints it, with the outages and that report, as one document on stdout.

    \b
    Example:
      kubectl sktrace start --duration 10m
      kubectl sktrace start --config tracer.yaml -n team-a --cache team-a.db
      kubectl sktrace start --duration 1m -o json | jq .reconciliation
    """
    from kubectl_sktrace import progress, recorder, render
    from kubectl_sktrace.globalflags import namespace_scope
    from kubectl_sktrace.plural import counted
    from kubectl_sktrace.status import outage_span
    from kubectl_sktrace.timeparse import format_duration, parse_duration

    namespace = namespace_scope(namespace=namespace, all_namespaces=all_namespaces)
    seconds = parse_duration(duration) if duration is not None else None
    quiet = bool(_state["quiet"])
    view = progress.Progress(stream=sys.stderr, tty=sys.stderr.isatty(), quiet=quiet, columns=progress.stream_columns(sys.stderr))
    options = recorder.StartOptions(kubeconfig=kubeconfig, context=context, namespace=namespace, cache=cache,
                                    config_path=config_path, duration=seconds, quiet=quiet)
    with progress.routed_logs(view):
        summary = recorder.start(options, progress=view)
    if output != "table":
        click.echo(render.render_mapping(recorder.summary_to_dict(summary), output))
    elif not quiet:
        synced = "" if summary.synced is not None else " (stopped before the initial sync finished)"
        click.echo(f"Recorded {counted(summary.events, 'event')} in {format_duration(summary.stopped - summary.started)} "
                   f"into {summary.cache} (run {summary.run_id}){synced}.")
        click.echo(render.render_table(list(recorder.iter_rows(summary)), "table"))
        for outage in summary.outages:
            click.echo(f"Outage: {outage_span(outage.cause, outage.since, outage.until)} "
                       f"({format_duration(outage.until - outage.since)}; {', '.join(outage.kinds)}): "
                       "changes made then were caught up afterwards, not seen live.")


@cli.command()
@kube_options
@cache_option
@output_option
@click.option("--runs", "runs", default="10", show_default=True, metavar="N|all", help="Show the last N recording runs, or all of them.")
@quiet_option
@verbosity_option
@status_timeline
def status(kubeconfig: str | None, context: str | None, namespace: str | None, all_namespaces: bool, cache: str | None,
           output: str, runs: str) -> None:
    """Show what the cache holds: cluster, recording runs and gaps, counts per kind, pods, size.

    Needs no cluster, and works while a recorder is writing to the cache. -n NS counts only the kinds, events
    and pods of that namespace. With no kubeconfig at all (and no --cache or --context), lists the caches
    kept in ${XDG_STATE_HOME:-~/.local/state}/kubectl-sktrace/ instead.

    \b
    Example:
      kubectl sktrace status
      kubectl sktrace status -n shop --runs all
      kubectl sktrace status --cache team-a.db -o json
      kubectl sktrace status --timeline -s -1h
    """
    from kubectl_sktrace import status as status_module
    from kubectl_sktrace.globalflags import namespace_scope

    namespace = namespace_scope(namespace=namespace, all_namespaces=all_namespaces)
    click.echo(status_module.status_text(cache=cache, kubeconfig=kubeconfig, context=context, namespace=namespace,
                                         runs=status_module.parse_runs(runs), fmt=output))

# --- end of recording commands -----------------------------------------------------------------------


# --- export and prune -------------------------------------------------------------------------------

_SIMKUBE_EXCLUDED_NAMESPACES = "cert-manager,default,kube-public,kube-node-lease,kube-system,local-path-storage,monitoring,simkube"


def _namespace_list(text: str | None) -> frozenset[str] | None:
    if text is None:
        return None
    return frozenset(n.strip() for n in text.split(",") if n.strip())


def _cache_path(*, cache: str | None, kubeconfig: str | None, context: str | None) -> str:
    """The cache named by --cache, else the default one of the kubeconfig context (read offline)."""
    if cache:
        return cache
    from kubectl_sktrace.kubeconfig import resolve_cache_path

    return str(resolve_cache_path(cache=cache, kubeconfig=kubeconfig, context=context))


TRACE_FORMATS = ("sktrace", "json", "yaml")


def _trace_format(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """skctl's ``-o FILE`` habit gets a hint: here, as in kubectl, -o is the output format."""
    if value in TRACE_FORMATS:
        return value
    if "/" in value or "." in value or value == "-":
        raise UsageError(f"did you mean -O {value}? (-o is the output format, as in kubectl: {', '.join(TRACE_FORMATS)})")
    raise UsageError(f"-o/--format {value}: not an output format; pass one of {', '.join(TRACE_FORMATS)}")


@cli.command("export")
@verbosity_option
@quiet_option
@kube_options
@cache_option
@click.option("-s", "--start-time", "start_time", default="-30m", show_default=True, metavar="TIME",
              help="Window start: 'now', a time relative to now ('-30m' is 30 minutes ago; '-2h', '-1d'), an RFC 3339 time "
                   "or '@<unix seconds>'.")
@click.option("-t", "--end-time", "end_time", default="now", show_default=True, metavar="TIME",
              help="Window end (excluded), in the same forms.")
@click.option("--excluded-namespaces", "excluded_namespaces", default=_SIMKUBE_EXCLUDED_NAMESPACES, show_default=True, metavar="LIST",
              help="Comma-separated namespaces to leave out (SimKube's list by default).")
@click.option("--include-namespaces", "include_namespaces", metavar="LIST",
              help="Keep only these namespaces; when given, --excluded-namespaces is ignored (so 'default' can be included).")
@click.option("--exclude-labels", "exclude_labels", multiple=True, metavar="SELECTOR",
              help="Leave out objects matching this kubectl label selector ('a=b,c!=d,e in (x,y),!f'); repeatable, any match excludes.")
@click.option("--include-cluster-scoped", "include_cluster_scoped", is_flag=True,
              help="Keep cluster-scoped objects (SimKube's driver needs namespaced ones, so they are left out by default).")
@click.option("-O", "--output-file", "output_file", default="output.sktrace", show_default=True, metavar="PATH", shell_complete=complete_files,
              help="Where to write the trace; '-' is stdout. A file (or a symlink's target) is replaced whole or not at all, "
                   "keeping its mode; a device, FIFO or /dev/fd/N is written into.")
@click.option("-o", "--format", "fmt", default="sktrace", show_default=True, metavar="[sktrace|json|yaml]", callback=_trace_format,
              help="The output format, as kubectl's -o: sktrace is SimKube's msgpack format; json and yaml are for people "
                   "and do not load in SimKube.")
@click.option("--keep-status", "keep_status", is_flag=True, help="Keep each object's status (SimKube drops it; skctl validate warns about it).")
@click.option("--allow-empty", "allow_empty", is_flag=True,
              help="Write the trace even when it holds no object (else that is an error, and nothing is written).")
def export_command(
    kubeconfig: str | None, context: str | None, namespace: str | None, all_namespaces: bool, cache: str | None,
    start_time: str, end_time: str, excluded_namespaces: str, include_namespaces: str | None, exclude_labels: tuple[str, ...],
    include_cluster_scoped: bool, output_file: str, fmt: str, keep_status: bool, allow_empty: bool,
) -> None:
    """Write a SimKube trace of a time window from the cache, without contacting the cluster.

    The window is [--start-time, --end-time). The trace starts with the state at the start time, then every
    recorded change in the window. Namespaces: -n NS keeps one namespace; -A keeps every namespace (none
    excluded); --include-namespaces keeps only those listed and overrides --excluded-namespaces; otherwise
    the excluded namespaces are left out. Objects
    owned by a DaemonSet or by another exported object are left out too (SimKube recreates them).

    \b
    Example:
      kubectl sktrace export -s -1h -O incident.sktrace
      kubectl sktrace export -s 2026-11-22T10:00:00Z -t 2026-11-22T11:00:00Z --exclude-labels 'app in (canary)'
      kubectl sktrace export -n shop --format yaml -O - | less
    """
    import time

    from kubectl_sktrace.export import ExportFilters, export_trace, resolve_window
    from kubectl_sktrace.globalflags import namespace_scope
    from kubectl_sktrace.output import write_output
    from kubectl_sktrace.selectors import parse_selector
    from kubectl_sktrace.store import open_cache_readonly

    start_ts, end_ts = resolve_window(start_time, end_time, now=time.time())
    selectors = tuple(parse_selector(text) for text in exclude_labels)
    included = _namespace_list(include_namespaces)
    excluded = _namespace_list(excluded_namespaces) or frozenset()
    namespace = namespace_scope(namespace=namespace, all_namespaces=all_namespaces)
    if namespace is not None:
        if included is not None:
            raise UsageError("-n/--namespace and --include-namespaces both choose namespaces; pass one of them")
        included = frozenset([namespace])
    if all_namespaces:
        chosen = click.get_current_context().get_parameter_source("excluded_namespaces") != click.core.ParameterSource.DEFAULT
        if included is not None or chosen:
            other = "--include-namespaces" if included is not None else "--excluded-namespaces"
            raise UsageError(f"-A/--all-namespaces and {other} contradict each other; pass one of them")
        excluded = frozenset()
    filters = ExportFilters(
        excluded_namespaces=excluded, include_namespaces=included,
        exclude_labels=selectors, include_cluster_scoped=include_cluster_scoped,
    )
    path = _cache_path(cache=cache, kubeconfig=kubeconfig, context=context)
    with open_cache_readonly(path) as opened:
        def write(stream: Any) -> Any:
            report = export_trace(opened, start_ts=start_ts, end_ts=end_ts, filters=filters, keep_status=keep_status, fmt=fmt,
                                  stream=stream, allow_empty=allow_empty)
            opened.ensure_unchanged()  # before the trace replaces a file at -O: a writer may have changed what was read
            return report

        report = write_output(output_file, write, binary=fmt == "sktrace", stdout=sys.stdout.buffer)
    for text in report.notes:
        note(f"Note: {text}")
    for warning in report.warnings:
        warn(warning)
    from kubectl_sktrace.plural import counted
    from kubectl_sktrace.timeparse import format_duration, format_time

    where = "stdout" if output_file == "-" else output_file
    note(
        f"Wrote {where}: {counted(report.events, 'event')} ({report.applied} applied, {report.deleted} deleted after the start state), "
        f"{counted(report.index_objects, 'object')} in the index, {counted(report.lifecycles, 'pod lifecycle')}, "
        f"window {format_time(report.start_ts)} .. {format_time(report.last_event_ts)} "
        f"({format_duration(report.last_event_ts - report.start_ts)}, first to last event as inspect shows it; "
        f"exported up to {format_time(report.end_ts)})."
    )


@cli.command("prune")
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
    those of the files on disk: bytesFreed is what the disk got back. When less than a quarter of the cache
    is freed it is not vacuumed, so the file keeps its size and bytesReusable is reused by later recordings.

    \b
    Example:
      kubectl sktrace prune --before -7d --dry-run
      kubectl sktrace prune --before -7d
    """
    import time

    from kubectl_sktrace import render
    from kubectl_sktrace.prune import prune_cache
    from kubectl_sktrace.timeparse import parse_time

    cutoff = parse_time(before, now=time.time())
    report = prune_cache(_cache_path(cache=cache, kubeconfig=kubeconfig, context=context), before=cutoff, dry_run=dry_run)
    click.echo(render.render_mapping(report.as_mapping(), output))


# --- end export and prune ---------------------------------------------------------------------------

# --- foundation commands: config, inspect, validate -------------------------------------------------


@cli.command("config", short_help="Print the default tracer config to start from.")
@verbosity_option
def config_command() -> None:
    """Print the default tracer config (SimKube's TracerConfig YAML) to start from.

    \b
    Example:
      kubectl sktrace config > tracer.yaml
      kubectl sktrace start --config tracer.yaml
    """
    from kubectl_sktrace import tracerconfig

    click.echo(tracerconfig.config_to_yaml(tracerconfig.default_config()), nl=False)


@cli.command("inspect", short_help="Summarize a SimKube v2 trace file.")
@verbosity_option
@quiet_option
@output_option
@click.option("--events", "with_events", is_flag=True, help="Also list every event (+ applied, - deleted).")
@inspect_timeline
@click.argument("trace", metavar="TRACE", type=click.Path())
def inspect_command(trace: str, with_events: bool, output: str) -> None:
    """Summarize a SimKube v2 trace file: window, events, objects per kind, pod lifecycles.

    Works on any v2 trace, written by kubectl sktrace or by SimKube's tracer. TRACE '-' reads standard input.

    \b
    Example:
      kubectl sktrace inspect incident.sktrace --events
      kubectl sktrace export -s -1h -O - | kubectl sktrace inspect -
    """
    from kubectl_sktrace import inspection, render

    click.echo(render.render_inspection(inspection.inspect_trace(trace, with_events=with_events, stdin=sys.stdin.buffer), output))


@cli.command("validate", short_help="Check a trace as SimKube would; exit 1 on errors.")
@verbosity_option
@quiet_option
@output_option
@click.argument("trace", metavar="TRACE", type=click.Path())
def validate_command(trace: str, output: str) -> None:
    """Check a trace the way SimKube loads it, plus its rules W0000 and E0001-E0005; exit 1 on errors.

    A file that is not a v2 trace at all is one Error: line. Otherwise every finding is listed: L0001-L0003
    (SimKube would refuse to load the trace), W0000 (status present), E0001-E0005 (a ServiceAccount,
    Secret or ConfigMap used by a pod template is not in the trace before it). TRACE '-' reads standard
    input. With -o json or yaml, a file that is no trace is reported in that format too (on stdout, exit 1).

    \b
    Example:
      kubectl sktrace validate incident.sktrace -o json
      kubectl sktrace export -s -1h -O - | kubectl sktrace validate -
    """
    from kubectl_sktrace import render, validation
    from kubectl_sktrace.errors import TraceFormatError

    try:
        report = validation.validate_trace(trace, stdin=sys.stdin.buffer)
    except TraceFormatError as exc:
        if output == "table":
            raise
        click.echo(render.render_unreadable(trace, str(exc), output))
        sys.exit(1)
    click.echo(render.render_validation(report, output))
    if report.has_errors:
        sys.exit(1)


# --- demo ---------------------------------------------------------------------------------------------


@cli.command("demo", short_help="Record, export and check a scripted workload on a built-in API server.")
@verbosity_option
@click.option("--cache", "cache", metavar="FILE", callback=_local_cache, shell_complete=complete_files,
              help="Keep the recording cache here (default: a temporary directory, removed at the end).")
@click.option("-O", "--output-file", "output_file", default="demo.sktrace", show_default=True, metavar="PATH", help="Where to write the trace.")
@click.option("--record-seconds", "record_seconds", type=int, default=20, show_default=True, metavar="N",
              help="Seconds of recording in all (at least 4: two recordings of 2 seconds), split about 70/30 between the two recordings.")
def demo_command(cache: str | None, output_file: str, record_seconds: int) -> None:
    """Run the whole flow on a built-in local API server, narrated: no cluster needed, under a minute.

    Starts the server with a scripted workload, records it, changes it while nothing records, records again
    (the restart reconciles what happened offline), exports the window, inspects and validates the trace.
    Leaves only the trace (and the cache, if --cache is given).

    \b
    Example:
      kubectl sktrace demo
      kubectl sktrace demo --cache demo.db -O /tmp/demo.sktrace
    """
    from kubectl_sktrace import demo

    def say(text: str) -> None:
        click.echo(text)
        sys.stdout.flush()

    options = demo.DemoOptions(output_file=output_file, cache=cache, record_seconds=record_seconds, verbosity=_state["verbosity"])
    result = demo.run_demo(options, say=say)
    say(demo.closing_words(result, output_file=output_file))

# --- end demo -----------------------------------------------------------------------------------------


COMPLETE_VAR = "_KUBECTL_SKTRACE_COMPLETE"


def main() -> None:
    if os.path.basename(sys.argv[0]).startswith("kubectl_complete-"):  # linked under kubectl's completion name (krew)
        from kubectl_sktrace import completion

        completion.main()
        return
    # Shell completion is generated for the executable's own name: with "kubectl sktrace" click would name
    # the variable with a space and register the completion function for the words kubectl and sktrace.
    completing = COMPLETE_VAR in os.environ
    configure_logging(0)
    cli(prog_name="kubectl-sktrace" if completing else "kubectl sktrace", complete_var=COMPLETE_VAR)


if __name__ == "__main__":
    main()
