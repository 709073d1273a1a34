"""``--timeline``: ``inspect`` and ``status`` draw a chart instead. Each is a decorator that adds the drawing flags
and, when --timeline is given, draws instead of running the command it wraps (which never sees the flags).
"""

from __future__ import annotations

import functools
import sys
from typing import Any, cast

import click

from kubectl_sktrace.cli.options import F, cache_path, say


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
        from kubectl_sktrace.trace.files.format import source_name
        from kubectl_sktrace.trace.files.textformat import read_any_trace

        trace = kwargs["trace"]
        _draw_timeline(read_any_trace(trace, stdin=sys.stdin.buffer), title=f"Trace {source_name(trace)}", top=top, width=width, ascii_only=ascii_only)
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
        if kwargs.get("run_id") is not None:
            raise click.UsageError("--timeline draws a window (-s, -t) and --run N reports one run; pass one of them")
        namespace = kwargs.get("namespace")
        if namespace and kwargs.get("all_namespaces"):
            raise click.UsageError("use either -n/--namespace or -A/--all-namespaces, not both")
        import time

        from kubectl_sktrace.export.options import ExportFilters, resolve_window
        from kubectl_sktrace.export.window import window_trace
        from kubectl_sktrace.store import open_cache_readonly

        start_ts, end_ts = resolve_window(start_time or "-30m", end_time or "now", now=time.time())
        filters = ExportFilters() if not namespace else ExportFilters(include_namespaces=frozenset([namespace]))
        path = cache_path(cache=kwargs.get("cache"), kubeconfig=kwargs.get("kubeconfig"), context=kwargs.get("context"))
        with open_cache_readonly(path) as opened:
            window = window_trace(opened, start_ts=start_ts, end_ts=end_ts, filters=filters, all_changes=True)
        for note in window.report.notes:
            say(f"Note: {note}", err=True)
        _draw_timeline(window.trace, title=f"Cache {path}", top=top, width=width, ascii_only=ascii_only,
                       start=window.report.start_ts, end=window.report.end_ts - 1, gaps=window.gaps, exact=window.exact)
        return None

    return cast(F, _timeline_options(command, window=True))


def _refuse_without_timeline(timeline: bool, **given: object) -> None:
    """A drawing flag without --timeline would be silently ignored: refuse it."""
    used = [name for name, value in given.items() if value not in (None, False)]
    if used and not timeline:
        raise click.UsageError(f"{', '.join(used)} only {'apply' if len(used) > 1 else 'applies'} to a chart; add --timeline")


def _draw_timeline(trace: Any, *, title: str, top: int | None, width: int | None, ascii_only: bool,
                   start: int | None = None, end: int | None = None, gaps: tuple[tuple[float, float], ...] = (),
                   exact: tuple[tuple[float, float], ...] = ()) -> None:
    import shutil

    from kubectl_sktrace.errors import UsageError
    from kubectl_sktrace.trace.reports import timeline

    if width is not None and width < timeline.MIN_WIDTH:
        raise UsageError(f"--width {width} is too narrow for a timeline; pass --width {timeline.MIN_WIDTH} or more")
    columns = width if width is not None else max(timeline.MIN_WIDTH, shutil.get_terminal_size((80, 24)).columns)
    charset = timeline.charset_for(sys.stdout.encoding, ascii_only=ascii_only)
    say(timeline.draw(trace, title=title, top=top or 10, width=columns, charset=charset, start=start, end=end, gaps=gaps, exact=exact))


