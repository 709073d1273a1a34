"""``transform``, and the flags ``export`` shares with it: ``--transform``, ``--anonymize``, ``--anonymize-key``."""

from __future__ import annotations

import sys
from typing import Any, Callable, TypeVar

import click

from kubectl_sktrace.cli.completion import complete_files
from kubectl_sktrace.cli.options import SktraceCommand, note, quiet_option, verbosity_option
from kubectl_sktrace.errors import UsageError

F = TypeVar("F", bound=Callable[..., Any])

KEY_ENV = "SKTRACE_ANONYMIZE_KEY"
_SUMMARY_FORMATS = ("table", "json", "yaml")


def anonymize_options(f: F) -> F:
    """``--anonymize``, ``--anonymize-key``, ``--anonymize-keep-label-values`` and ``--anonymize-map``, spelled and meaning
    the same on ``transform`` and ``export``."""
    f = click.option("--anonymize-map", "anonymize_map", metavar="FILE", shell_complete=complete_files,
                     help="Also write each original string with its pseudonym to FILE (JSON, mode 0600), for the trace's "
                          "owner alone: never share it.")(f)
    f = click.option("--anonymize-keep-label-values", "anonymize_keep", metavar="KEY", multiple=True,
                     help="Keep the values of this label key (e.g. the node-pool label simulated nodes carry); repeatable. "
                          "Never by default; the report lists them for review.")(f)
    f = click.option("--anonymize-key", "anonymize_key", metavar="KEY", envvar=KEY_ENV, show_envvar=False,
                     help=f"The pseudonyms' key, in hex (else ${KEY_ENV}; else a fresh random key, printed once on stderr, "
                          "even with --quiet): two traces anonymized with one key line up.")(f)
    f = click.option("--anonymize", "anonymize", is_flag=True,
                     help="Keep only Kubernetes' own vocabulary (field names, enum values, numbers, quantities, well-known "
                          "label keys) and replace every other string and owner-chosen map key with a keyed pseudonym, the "
                          "same throughout the trace (index and pod lifecycles included), so that it replays the same and can "
                          "be shared. The summary says what was replaced and what to review.")(f)
    return f


def transform_option(f: F) -> F:
    return click.option("--transform", "transform", metavar="SKEL_FILE|sanitize", shell_complete=complete_files,
                        help="Rewrite the objects with a SKEL program (SimKube's transformations: a file, or 'sanitize' for the "
                             "built-in) before the namespace and label filters, as skctl export --transform does; '@t' counts "
                             "from the window's start, and the start state is kept even when emptied.")(f)


def anonymization_key(*, anonymize: bool, anonymize_key: str | None) -> tuple[bytes | None, bool]:
    """The key ``--anonymize`` uses, and whether it is a fresh one (to print once). A key typed on the command
    line without ``--anonymize`` is refused; one in the environment waits for ``--anonymize``."""
    from kubectl_sktrace.trace.transform import parse_key
    from kubectl_sktrace.trace.pseudonyms import new_key

    source = click.get_current_context().get_parameter_source("anonymize_key")
    if not anonymize:
        if anonymize_key is not None and source == click.core.ParameterSource.COMMANDLINE:
            raise UsageError("--anonymize-key is given without --anonymize; add --anonymize, or leave the key out")
        return None, False
    if anonymize_key is not None:
        return parse_key(anonymize_key), False
    return new_key(), True


def anonymize_settings(*, anonymize: bool, anonymize_keep: tuple[str, ...], anonymize_map: str | None) -> Any:
    """``AnonymizeOptions`` of the flags; refused without ``--anonymize``."""
    from kubectl_sktrace.trace.transform import AnonymizeOptions

    if not anonymize and (anonymize_keep or anonymize_map):
        raise UsageError("--anonymize-keep-label-values and --anonymize-map need --anonymize; add it, or leave them out")
    return AnonymizeOptions(keep_label_values=frozenset(anonymize_keep), map_file=anonymize_map)


def say_fresh_key(key: bytes) -> None:
    """The fresh random key, once, on stderr (even with --quiet: without it no other trace can line up with this one)."""
    from kubectl_sktrace.trace.transform import format_key

    click.echo(f"Note: anonymized with a fresh random key; to line up another export or transform with this trace, pass it as "
               f"--anonymize-key (or set ${KEY_ENV}): {format_key(key)}", err=True)


def _summary_format(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if value in _SUMMARY_FORMATS:
        return value
    if "/" in value or "." in value or value == "-":
        raise UsageError(f"did you mean -O {value}? (-o is the summary's format: {', '.join(_SUMMARY_FORMATS)}; -O is the trace's path)")
    raise UsageError(f"-o/--output {value}: not a summary format; pass one of {', '.join(_SUMMARY_FORMATS)}")


@click.command("transform", cls=SktraceCommand, short_help="Rewrite a trace with a SKEL program, or anonymize it.")
@verbosity_option
@quiet_option
@click.argument("trace", metavar="TRACE", type=click.Path())
@click.argument("skel_file", metavar="[SKEL_FILE]", required=False, shell_complete=complete_files)
@click.option("-O", "--output-file", "output_file", required=True, metavar="PATH", shell_complete=complete_files,
              help="Where to write the trace; '-' is stdout. As export's -O: a file is replaced whole or not at all, keeping its "
                   "mode; a device, FIFO or /dev/fd/N is written into; an s3://, gs:// or az:// URL is an object. Nothing is "
                   "written unless every event transformed.")
@anonymize_options
@click.option("-o", "--output", "output", default="table", show_default=True, metavar="[table|json|yaml]", callback=_summary_format,
              help="The summary's format: table on stderr, as skctl prints it; json or yaml on stdout, for programs.")
def transform_command(trace: str, skel_file: str | None, output_file: str, anonymize: bool, anonymize_key: str | None,
                      anonymize_keep: tuple[str, ...], anonymize_map: str | None, output: str) -> None:
    """Rewrite the objects of a trace with a SKEL program (SimKube's skctl transform), or anonymize it, or both.

    SKEL_FILE is a SKEL file, or 'sanitize' for the built-in program with the effect of SimKube's example (status,
    service accounts, ConfigMap and Secret references, their volumes and mounts); a file named sanitize is
    ./sanitize. Each command applies in order to every object of every event, '@t' counting from the trace's
    first event; objects deleted and events left without objects are dropped; the index and pod lifecycles
    follow the objects the program moves or deletes. --anonymize (after the program) keeps Kubernetes'
    vocabulary and replaces every other string with keyed pseudonyms.
    TRACE '-' reads standard input; an s3://, gs:// or az:// URL reads an object (the cloud extra). The trace is
    read event by event, the output spooled to a temporary file ($TMPDIR), so memory stays bounded.

    \b
    Example:
      kubectl sktrace transform incident.sktrace sanitize -O incident-sanitized.sktrace
      kubectl sktrace transform incident.sktrace strip.skel -O - | kubectl sktrace inspect -
      kubectl sktrace transform incident.sktrace --anonymize -O shareable.sktrace -o json
    """
    from kubectl_sktrace import render
    from kubectl_sktrace.trace.transform import load_program, transform_sentence, transform_summary, transform_to

    if skel_file is None and not anonymize:
        raise click.UsageError("give a SKEL_FILE (a path, or 'sanitize'), --anonymize, or both")
    if output != "table" and output_file == "-":
        raise UsageError(f"-o {output} prints the summary on stdout, where -O - writes the trace; pass -O FILE, or leave -o out")
    program = load_program(skel_file) if skel_file is not None else None  # a syntax error before anything is read or written
    key, fresh = anonymization_key(anonymize=anonymize, anonymize_key=anonymize_key)
    options = anonymize_settings(anonymize=anonymize, anonymize_keep=anonymize_keep, anonymize_map=anonymize_map)
    report = transform_to(trace, output_file, program=program, key=key, stdin=sys.stdin.buffer, stdout=sys.stdout.buffer,
                          options=options)
    if output != "table":
        click.echo(render.render_mapping(report.as_mapping(), output))
    elif program is not None:
        note(transform_summary(report))
    note(transform_sentence(report))
    if fresh:
        assert key is not None
        say_fresh_key(key)
