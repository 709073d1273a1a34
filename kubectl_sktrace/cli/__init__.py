"""The ``kubectl sktrace`` command line: click commands and the one error boundary.

Each command parses its options, calls one library function and renders the result. Library modules are
imported inside the commands so that ``--help``, ``version``, ``inspect`` and the other offline commands
never pay for importing the ``kubernetes`` package, and each command's own module when that command is asked for
(``COMMANDS``): a process runs one command and imports what that command needs. kubectl passes only the arguments after the plugin
name, so the kubectl flags (``--kubeconfig``, ``--context``, ``-n``, ``-A``, ``-v``) are defined here once,
as decorators, and spelled the same on every command.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Iterator, MutableMapping
from typing import Any

import click

from kubectl_sktrace import __version__
from kubectl_sktrace.cli.options import (
    CONTEXT_SETTINGS,
    SktraceCommand,
    TRACEBACK_VERBOSITY,
    _state,
    configure_logging,
    output_option,
    say,
    verbosity_option,
)
from kubectl_sktrace.errors import SktraceError, UsageError
from kubectl_sktrace.terminal import escape


RECURSION_LIMIT = 20_000

COMMANDS = {
    "start": ("recording", "start"), "status": ("recording", "status"), "export": ("exporting", "export_command"),
    "prune": ("exporting", "prune_command"), "config": ("traces", "config_command"), "rbac": ("traces", "rbac_command"),
    "inspect": ("traces", "inspect_command"), "validate": ("traces", "validate_command"), "transform": ("transforming", "transform_command"),
    "demo": ("traces", "demo_command"), "cache": ("caches", "cache_group"), "view": ("viewing", "view_command"),
    "serve": ("pastserving", "serve_command"), "backfill": ("backfilling", "backfill_command"), "get": ("asking", "get_command"),
    "history": ("asking", "history_command"), "diff": ("asking", "diff_command"),
}
"""Each command's name, and the module of ``kubectl_sktrace.cli`` and the name it is defined under: a command's module
is imported when the command is asked for (``LazyCommands``), so that ``get`` pays for ``get`` alone."""


class LazyCommands(MutableMapping[str, click.Command]):
    """The group's commands by name, each module imported at its first use (``COMMANDS``); iterated in that order."""

    def __init__(self, lazy: dict[str, tuple[str, str]]) -> None:
        self._lazy = dict(lazy)
        self._loaded: dict[str, click.Command] = {}
        self._order = list(lazy)

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            module, attribute = self._lazy[name]
            command = getattr(importlib.import_module(f"kubectl_sktrace.cli.{module}"), attribute)
            assert isinstance(command, click.Command) and command.name == name, (name, command)
            self._loaded[name] = command
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command
        self._lazy.pop(name, None)
        if name not in self._order:
            self._order.append(name)

    def __delitem__(self, name: str) -> None:
        if name not in self._order:
            raise KeyError(name)
        self._order.remove(name)
        self._loaded.pop(name, None)
        self._lazy.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, name: object) -> bool:
        return name in self._order


class SktraceGroup(click.Group):
    """The error boundary: SktraceError becomes one ``Error:`` line and exit 1. kubectl's global flags may come
    before the command (``globalflags``); no command at all prints the help."""

    command_class = SktraceCommand

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = LazyCommands(COMMANDS)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args and not ctx.resilient_parsing:
            say(ctx.get_help())
            ctx.exit(0)
        from kubectl_sktrace.cli.globalflags import hoist_global_flags, lacks_command

        if lacks_command(args, commands=self.commands) and not ctx.resilient_parsing:
            if {"-h", "--help"} & set(args):
                say(ctx.get_help())
                ctx.exit(0)
            error = UsageError("the flags need a command to go with, e.g. 'kubectl sktrace --context NAME status'; "
                               "'kubectl sktrace --help' lists the commands")
            _report(str(error), error)  # the group's own arguments: before the error boundary of invoke
            ctx.exit(error.exit_code)
        return super().parse_args(ctx, hoist_global_flags(args, commands=self.commands))

    def invoke(self, ctx: click.Context) -> Any:
        # msgpack's decoder refuses values nested past ~1,000 levels; what it lets through is walked recursively (YAML
        # and JSON writers, --anonymize, SKEL, the view), a few frames a level: room for all of it, not Python's 1,000
        sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
        try:
            return super().invoke(ctx)
        except SktraceError as exc:
            _report(str(exc), exc)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            say("Interrupted.", err=True)
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
    say(f"Error: {message}", err=True)


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
    from kubectl_sktrace import render, store
    from kubectl_sktrace.trace.files import format as traceformat

    info = {"plugin": __version__, "traceFormat": traceformat.FORMAT_VERSION, "cacheSchema": store.SCHEMA_VERSION}
    say(render.render_mapping(info, output))



COMPLETE_VAR = "_KUBECTL_SKTRACE_COMPLETE"


def complete_main() -> None:
    """The ``kubectl_complete-sktrace`` executable: kubectl's plugin completion protocol (``cli/completion.py``)."""
    from kubectl_sktrace.cli.completion import kubectl_complete

    sys.stdout.write(escape(kubectl_complete(cli, sys.argv[1:])) + "\n")  # names a cluster chose, as every line
    sys.stdout.flush()


def main() -> None:
    if os.path.basename(sys.argv[0]).startswith("kubectl_complete-"):  # linked under kubectl's completion name (krew)
        complete_main()
        return
    # Shell completion is generated for the executable's own name: with "kubectl sktrace" click would name
    # the variable with a space and register the completion function for the words kubectl and sktrace.
    completing = COMPLETE_VAR in os.environ
    configure_logging(0)
    cli(prog_name="kubectl-sktrace" if completing else "kubectl sktrace", complete_var=COMPLETE_VAR)


if __name__ == "__main__":
    main()
