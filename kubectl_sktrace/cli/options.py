"""The options every command spells the same way, as decorators, and the state they set: kubectl's flags
(``--kubeconfig``, ``--context``, ``-n``, ``-A``, ``-v``), ``--cache``, ``-o`` and ``--quiet``; the log setup
they drive; and the command class that refuses a kubectl global flag a command has no use for.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Callable, TypeVar

import click

from kubectl_sktrace.cli.completion import (
    complete_contexts,
    complete_files,
    complete_namespaces,
)
from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.model import CacheUrl, is_database_url
from kubectl_sktrace.terminal import escape

F = TypeVar("F", bound=Callable[..., Any])

TRACEBACK_VERBOSITY = 6
_state = {"verbosity": 0, "quiet": 0}
_ORDER = "kubectl_sktrace.option_order"

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


DEBUG_VERBOSITY = 4
REQUEST_VERBOSITY = 3


class _EscapingFormatter(logging.Formatter):
    """Log lines carry what a cluster said (a watch's error, a Status message): escaped as every printed line is."""

    def format(self, record: logging.LogRecord) -> str:
        return escape(super().format(record))


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
    handler.setFormatter(_EscapingFormatter(fmt))
    if verbosity < DEBUG_VERBOSITY:
        handler.addFilter(lambda record: record.name.startswith("kubectl_sktrace"))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    # each API request, as kubectl -v 6 shows them, from -v 3 on
    logging.getLogger("kubectl_sktrace.kube.requests").setLevel(logging.INFO if verbosity >= REQUEST_VERBOSITY else logging.WARNING)


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
    errors are still printed (and what the command is asked for: a table, a trace on stdout), and what must be read
    before sharing a file (``must_read``)."""
    return click.option(
        "--quiet", "quiet", is_flag=True, is_eager=True, expose_value=False, callback=_set_quiet,
        help="No warnings, notes or progress on stderr; errors only (and what --anonymize asks to review before sharing).",
    )(f)


def say(text: str, *, err: bool = False, nl: bool = True) -> None:
    """The one way the commands print text (tests/test_layers.py holds it): escaped for a terminal (``terminal``),
    on stdout, or stderr with ``err``."""
    click.echo(escape(text), err=err, nl=nl)


def warn(message: str) -> None:
    """A ``Warning:`` line on stderr, unless ``--quiet``."""
    if not _state["quiet"]:
        say(f"Warning: {message}", err=True)


def note(message: str) -> None:
    """A line of information on stderr, unless ``--quiet``."""
    if not _state["quiet"]:
        say(message, err=True)


def must_read(message: str | None) -> None:
    """A line on stderr that ``--quiet`` does not hide: what a person must read before sharing a file."""
    if message:
        say(message, err=True)


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
    """Refuse a URL other than a database's as --cache while parsing, before a command reads a kubeconfig or
    starts anything."""
    if value:
        from kubectl_sktrace.kube.kubeconfig import check_cache_location

        value = value.strip()  # a space pasted before it, the newline a Secret made --from-file ends with
        check_cache_location(value)
    return value or None


def cache_option(f: F) -> F:
    return click.option(
        "--cache", "cache", metavar="FILE|URL", callback=_local_cache, shell_complete=complete_files, envvar="SKTRACE_CACHE",
        help="The cache: a sqlite file, or a PostgreSQL database postgresql://user@host:port/db holding one history per "
             "context (needs kubectl-sktrace[postgres]). Else $SKTRACE_CACHE, else one file per context under "
             "${XDG_STATE_HOME:-~/.local/state}/kubectl-sktrace/.",
    )(f)


def output_option(f: F) -> F:
    return click.option(
        "-o", "--output", "output", type=click.Choice(["table", "json", "yaml"]), default="table", show_default=True,
        help="Output format.",
    )(f)


class SktraceCommand(click.Command):
    """A command that refuses a kubectl global flag it has no use for with one line saying so, and keeps the order
    its options were typed in (``typed_in_order``: --allow and --deny interleave)."""

    def make_parser(self, ctx: click.Context) -> Any:
        parser = super().make_parser(ctx)
        parse = parser.parse_args

        def parse_in_order(args: list[str]) -> Any:
            opts, largs, order = parse(args=args)
            ctx.meta[_ORDER] = [param.name for param in order]
            if ctx.meta[_ORDER].count("namespace") > 1:  # click keeps the last, silently; kubectl takes one namespace
                several = " (export: --include-namespaces a,b keeps several)" if any(p.name == "include_namespaces" for p in self.params) else ""
                raise UsageError(f"-n/--namespace is given more than once; pass one namespace{several}")
            return opts, largs, order

        setattr(parser, "parse_args", parse_in_order)
        return parser

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        from kubectl_sktrace.cli import globalflags

        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            if exc.option_name.split("=")[0] == "--output" and any(param.name == "fmt" for param in self.params):
                raise UsageError("no such option --output: the trace's format is -o/--format (sktrace, json or yaml), as kubectl's -o; "
                                 "where it goes is -O/--output-file") from None
            if globalflags.global_spelling(exc.option_name) is None:
                raise
            raise UsageError(globalflags.refusal(ctx.info_name or self.name or "", exc.option_name)) from None


def typed_in_order(ctx: click.Context, values: dict[str, tuple[str, ...]]) -> list[tuple[str, str]]:
    """The values of several repeatable options as (option, value) in the order they were typed."""
    left = {name: list(found) for name, found in values.items()}
    ordered = []
    for name in ctx.meta.get(_ORDER, []):
        if left.get(name):
            ordered.append((name, left[name].pop(0)))
    return ordered


def cache_path(*, cache: str | None, kubeconfig: str | None, context: str | None) -> str | CacheUrl:
    """The cache named by --cache (a database's history: the context's), else the default file of the
    kubeconfig context (read offline)."""
    if cache and not is_database_url(cache):
        return cache
    from kubectl_sktrace.kube.kubeconfig import resolve_cache_path

    location = resolve_cache_path(cache=cache, kubeconfig=kubeconfig, context=context)
    return location if isinstance(location, CacheUrl) else str(location)
