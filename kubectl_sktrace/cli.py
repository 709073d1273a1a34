"""The ``kubectl sktrace`` command line: click commands and the one error boundary.

Each command parses its options, calls one library function and renders the result. Library modules are
imported inside the commands so that ``--help``, ``version``, ``inspect`` and the other offline commands
never pay for importing the ``kubernetes`` package. kubectl passes only the arguments after the plugin
name, so the kubectl flags (``--kubeconfig``, ``--context``, ``-n``, ``-A``, ``-v``) are defined here once,
as decorators, and spelled the same on every command.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from typing import Any, Callable, TypeVar

import click

from kubectl_sktrace import __version__
from kubectl_sktrace.errors import SktraceError

F = TypeVar("F", bound=Callable[..., Any])

TRACEBACK_VERBOSITY = 6
_state = {"verbosity": 0}

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _set_verbosity(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    if value is None:
        return value
    _state["verbosity"] = max(_state["verbosity"], value)
    level = logging.WARNING if value <= 0 else logging.INFO if value < 4 else logging.DEBUG
    logging.basicConfig(level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True)
    return value


def verbosity_option(f: F) -> F:
    return click.option(
        "-v", "--v", "verbosity", type=click.IntRange(0, 10), default=None, expose_value=False, is_eager=True,
        callback=_set_verbosity, metavar="N",
        help="Log verbosity on stderr, as kubectl's: 1-3 info, 4+ debug, 6+ tracebacks on errors.",
    )(f)


def kube_options(f: F) -> F:
    """--kubeconfig, --context, -n/--namespace and -A/--all-namespaces, as kubectl spells them."""
    f = click.option("-A", "--all-namespaces", "all_namespaces", is_flag=True, help="All namespaces (the default for start).")(f)
    f = click.option("-n", "--namespace", "namespace", metavar="NS", help="Only this namespace.")(f)
    f = click.option("--context", "context", metavar="NAME", help="The kubeconfig context to use.")(f)
    f = click.option("--kubeconfig", "kubeconfig", metavar="FILE", help="Path to the kubeconfig file (else $KUBECONFIG, else ~/.kube/config).")(f)
    return f


def cache_option(f: F) -> F:
    return click.option(
        "--cache", "cache", metavar="FILE",
        help="The sqlite cache (default: one file per context under ${XDG_STATE_HOME:-~/.local/state}/kubectl-sktrace/).",
    )(f)


def output_option(f: F) -> F:
    return click.option(
        "-o", "--output", "output", type=click.Choice(["table", "json", "yaml"]), default="table", show_default=True,
        help="Output format.",
    )(f)


class SktraceGroup(click.Group):
    """The error boundary: SktraceError becomes one ``Error:`` line and exit 1."""

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
@output_option
@click.option("--events", "with_events", is_flag=True, help="Also list every event (+ applied, - deleted).")
@click.argument("trace", metavar="TRACE", type=click.Path(dir_okay=False))
def inspect_command(trace: str, with_events: bool, output: str) -> None:
    """Summarize a SimKube v2 trace file: window, events, objects per kind, pod lifecycles.

    Works on any v2 trace, written by kubectl sktrace or by SimKube's tracer.

    \b
    Example:
      kubectl sktrace inspect incident.sktrace --events
    """
    from kubectl_sktrace import inspection, render

    click.echo(render.render_inspection(inspection.inspect_trace(trace, with_events=with_events), output))


@cli.command("validate", short_help="Check a trace as SimKube would; exit 1 on errors.")
@verbosity_option
@output_option
@click.argument("trace", metavar="TRACE", type=click.Path(dir_okay=False))
def validate_command(trace: str, output: str) -> None:
    """Check a trace the way SimKube loads it, plus its rules W0000 and E0001-E0005; exit 1 on errors.

    A file that is not a v2 trace at all is one Error: line. Otherwise every finding is listed: L0001-L0003
    (SimKube would refuse to load the trace), W0000 (status present), E0001-E0005 (a ServiceAccount,
    Secret or ConfigMap used by a pod template is not in the trace before it).

    \b
    Example:
      kubectl sktrace validate incident.sktrace -o json
    """
    from kubectl_sktrace import render, validation

    report = validation.validate_trace(trace)
    click.echo(render.render_validation(report, output))
    if report.has_errors:
        sys.exit(1)


COMPLETE_VAR = "_KUBECTL_SKTRACE_COMPLETE"


def main() -> None:
    # Shell completion is generated for the executable's own name: with "kubectl sktrace" click would name
    # the variable with a space and register the completion function for the words kubectl and sktrace.
    completing = COMPLETE_VAR in os.environ
    cli(prog_name="kubectl-sktrace" if completing else "kubectl sktrace", complete_var=COMPLETE_VAR)


if __name__ == "__main__":
    main()
