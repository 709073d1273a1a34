"""``transform``, and the flags ``export`` shares with it: ``--transform``, ``--anonymize``, ``--anonymize-key``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import click

from kubectl_sktrace.cli.completion import complete_files, complete_summary_formats, complete_trace_formats, complete_transforms
from kubectl_sktrace.cli.filtering import rule_options, transform_rules
from kubectl_sktrace.cli.options import SktraceCommand, must_read, note, quiet_option, say, verbosity_option, warn
from kubectl_sktrace.errors import UsageError

if TYPE_CHECKING:
    from kubectl_sktrace.trace.selection.filtering import RuleFilter
    from kubectl_sktrace.trace.skel import Program

F = TypeVar("F", bound=Callable[..., Any])

KEY_ENV = "SKTRACE_ANONYMIZE_KEY"
_SUMMARY_FORMATS = ("table", "json", "yaml")


def anonymize_options(f: F) -> F:
    """``--anonymize``, ``--anonymize-key``, ``--anonymize-keep-label-values`` and ``--anonymize-map``, spelled and meaning
    the same on ``transform`` and ``export``."""
    f = click.option("--anonymize-map", "anonymize_map", metavar="FILE", shell_complete=complete_files,
                     help="Also write each original string with its pseudonym to FILE (JSON, mode 0600), for the trace's "
                          "owner alone: never share it. FILE is a new path or a regular file, replaced whole (a symlink or "
                          "a device is refused); it is written before the trace, and if it cannot be, neither is.")(f)
    f = click.option("--anonymize-keep-label-values", "anonymize_keep", metavar="KEY", multiple=True,
                     help="Keep the values of this label key (e.g. the node-pool label simulated nodes carry); repeatable. "
                          "Never by default; the report lists them for review.")(f)
    f = click.option("--anonymize-key", "anonymize_key", metavar="KEY", envvar=KEY_ENV, show_envvar=False,
                     help=f"The pseudonyms' key, in hex (else ${KEY_ENV}; else a fresh random key, printed once on stderr, "
                          "even with --quiet): two traces anonymized with one key line up.")(f)
    f = click.option("--anonymize", "anonymize", is_flag=True,
                     help="Keep only Kubernetes' own vocabulary (field names, enum values, numbers, quantities, well-known "
                          "label keys; of an image's tag only 'latest', so ':7.0' is replaced too) and replace every other string "
                          "and owner-chosen map key with a keyed pseudonym, the "
                          "same throughout the trace (index and pod lifecycles included), so that it replays the same and can "
                          "be shared. The summary says what was replaced and what to review.")(f)
    return f


def transform_option(f: F) -> F:
    return click.option("--transform", "transform", metavar="SKEL_FILE|sanitize", shell_complete=complete_transforms,
                        help="Rewrite the objects with a SKEL program (SimKube's transformations: a file, or 'sanitize' for the "
                             "built-in) before the namespace and label filters, as skctl export --transform does; '@t' counts "
                             "from the window's start, and the start state is kept even when emptied.")(f)


def load_skel(spec: str) -> Program:
    """The program of ``SKEL_FILE``/``--transform`` (``transform.load_program``), with a warning on stderr for each mistake
    SKEL accepts silently (``trace/skel/checks``): it still runs as written, with SimKube's semantics."""
    from kubectl_sktrace.trace.skel.checks import check_program
    from kubectl_sktrace.trace.transform import load_program

    program = load_program(spec)
    for text in check_program(program):
        warn(text)
    return program


def anonymization_key(*, anonymize: bool, anonymize_key: str | None) -> tuple[bytes | None, bool]:
    """The key ``--anonymize`` uses, and whether it is a fresh one (to print once). A key typed on the command
    line without ``--anonymize`` is refused; one in the environment waits for ``--anonymize``."""
    from kubectl_sktrace.trace.transform import parse_key
    from kubectl_sktrace.trace.anonymizing.pseudonyms import new_key

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

    must_read(f"Note: anonymized with a fresh random key; to line up another export or transform with this trace, pass it as "
              f"--anonymize-key (or set ${KEY_ENV}): {format_key(key)}")


def _summary_format(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if value in _SUMMARY_FORMATS:
        return value
    raise UsageError(f"--summary {value}: not a summary format; pass one of {', '.join(_SUMMARY_FORMATS)}")


def summary_option(f: F) -> F:
    """``--summary``: what ``export`` and ``transform`` say of what they wrote, as a table on stderr or json/yaml on stdout."""
    return click.option("--summary", "summary", default="table", show_default=True, metavar="[table|json|yaml]", callback=_summary_format,
                        shell_complete=complete_summary_formats,
                        help="The summary's format: table on stderr, for people; json or yaml on stdout, for programs.")(f)


def _trace_format(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """The trace format of ``-o``; ``-o table``, the summary's format before ``--summary``, still means ``--summary table``."""
    from kubectl_sktrace.export.options import check_format

    return value if value == "table" else check_format(value)


def _print_skel_reference(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from kubectl_sktrace.trace.skel.reference import REFERENCE

        say(REFERENCE, nl=False)
        ctx.exit()


@click.command("transform", cls=SktraceCommand, short_help="Rewrite a trace with a SKEL program, or anonymize it.")
@verbosity_option
@quiet_option
@click.argument("trace", metavar="TRACE", type=click.Path())
@click.argument("skel_file", metavar="[SKEL_FILE]", required=False, shell_complete=complete_transforms)
@click.option("-O", "--output-file", "output_file", metavar="PATH", shell_complete=complete_files,
              help="Where to write the trace (needed for sktrace; stdout for -o json|yaml); '-' is stdout. As export's -O: a file "
                   "is replaced whole or not at all, keeping its mode; a device, FIFO or /dev/fd/N is written into; an s3://, gs:// "
                   "or az:// URL is an object. Nothing is written unless every event transformed.")
@anonymize_options
@click.option("-o", "--format", "fmt", default="sktrace", show_default=True, metavar="[sktrace|json|yaml]", callback=_trace_format,
              shell_complete=complete_trace_formats,
              help="The trace's format, as export's: sktrace is SimKube's msgpack format; json and yaml are for people and do not "
                   "load in SimKube.")
@summary_option
@rule_options
@click.option("--help-skel", is_flag=True, is_eager=True, expose_value=False, callback=_print_skel_reference,
              help="Print the SKEL language's reference and exit.")
def transform_command(trace: str, skel_file: str | None, output_file: str | None, anonymize: bool, anonymize_key: str | None,
                      anonymize_keep: tuple[str, ...], anonymize_map: str | None, fmt: str, summary: str, filters_file: str | None,
                      selector: str | None, allow: tuple[str, ...], deny: tuple[str, ...], default: str | None) -> None:
    """Rewrite the objects of a trace with a SKEL program (SimKube's skctl transform), keep or leave out objects by
    rules, anonymize it, or all three.

    SKEL_FILE is a SKEL file, or 'sanitize' for the built-in program with the effect of SimKube's example (status,
    service accounts, ConfigMap and Secret references, their volumes and mounts); a file named sanitize is
    ./sanitize. Each command applies in order to every object of every event, '@t' counting from the trace's
    first event; objects deleted and events left without objects are dropped (an event that came empty, a window's
    start, is kept); the index and pod lifecycles
    follow the objects the program moves or deletes. The rules (--filters, -l, --allow, --deny, --default, as
    export's) then decide each object on its last version in the trace, and --anonymize keeps Kubernetes'
    vocabulary and replaces every other string with keyed pseudonyms.
    With none of them, the trace is written as it is, in -o's format: 'transform X -o yaml' prints a trace as
    text, and 'transform X.yaml -O X.sktrace' makes it SimKube's again.
    TRACE '-' reads standard input; an s3://, gs:// or az:// URL reads an object (the cloud extra); TRACE may be
    SimKube's msgpack or the JSON or YAML that -o json|yaml writes. The trace is read event by event (a JSON or
    YAML one whole), the output spooled to a temporary file ($TMPDIR), so memory stays bounded.

    \b
    SKEL: commands, each ending with ';' ('#' starts a comment to the end of the line):
      delete(SELECTOR);                   drop the objects SELECTOR matches
      remove(SELECTOR, PATH);             remove a field (PATH: spec.template.spec.volumes[*])
      modify(SELECTOR, PATH = VALUE);     set a field; remove(PATH) and modify(PATH = V) match everything
      SELECTOR: tests joined by &&, e.g. metadata.namespace == "shop" && @t > 60s
    The whole language: kubectl sktrace transform --help-skel

    \b
    Example:
      kubectl sktrace transform incident.sktrace sanitize -O incident-sanitized.sktrace
      kubectl sktrace transform incident.sktrace strip.skel -O - | kubectl sktrace inspect -
      kubectl sktrace transform incident.sktrace --deny 'namespace:shop labels:tier=canary' -O smaller.sktrace
      kubectl sktrace transform incident.sktrace --anonymize -O shareable.sktrace --summary json
      kubectl sktrace transform incident.sktrace -o yaml | less
    """
    from kubectl_sktrace import render
    from kubectl_sktrace.trace.transform import review_sentence, transform_sentence, transform_summary, transform_to

    _readable(trace)
    output_file, fmt = _destination(output_file, fmt=fmt, summary=summary)
    program = load_skel(skel_file) if skel_file is not None else None  # a syntax error before anything is read or written
    rule_filter = transform_rules(filters_file=filters_file, selector=selector, allow=allow, deny=deny, default=default)
    key, fresh = anonymization_key(anonymize=anonymize, anonymize_key=anonymize_key)
    options = anonymize_settings(anonymize=anonymize, anonymize_keep=anonymize_keep, anonymize_map=anonymize_map)
    report = transform_to(trace, output_file, program=program, key=key, stdin=sys.stdin.buffer, stdout=sys.stdout.buffer, fmt=fmt,
                          rule_filter=rule_filter, options=options)
    if summary != "table":
        rules = {} if rule_filter is None else {"rules": rule_filter.summary()}
        say(render.render_mapping({**report.as_mapping(), **rules}, summary))
    elif program is not None:
        note(transform_summary(report))
    if rule_filter is not None:
        _say_rules(rule_filter, table=summary == "table")
    if program is None and rule_filter is None and key is None:
        note(f"Nothing to change (no SKEL_FILE, rules or --anonymize): the trace is written as it is, in {fmt}.")
    note(transform_sentence(report))
    must_read(review_sentence(report.anonymization))
    if fresh and key is not None:
        say_fresh_key(key)


def _say_rules(rule_filter: RuleFilter, *, table: bool) -> None:
    """What the rules did, after the trace was read: a warning for each kind no object of it has; the table of what each
    rule decided (on stderr, unless the summary is a document on stdout)."""
    from kubectl_sktrace import render

    for warning in rule_filter.kind_warnings():
        warn(warning)
    if table:
        note(render.render_table(rule_filter.summary(), "table", columns=["rule", "action", "from", "objects"]))


def _readable(trace: str) -> None:
    """A local trace that is not there (or not readable) is said first, before what the command line lacks."""
    from kubectl_sktrace.trace.files import objectstore
    from kubectl_sktrace.trace.files.format import open_source

    if trace != "-" and not objectstore.is_remote(trace):
        open_source(trace).close()


def _destination(output_file: str | None, *, fmt: str, summary: str) -> tuple[str, str]:
    """Where the trace goes (``-`` is stdout: the default of -o json|yaml) and in which format."""
    if fmt == "table":
        fmt = "sktrace"  # -o table: the summary's format before --summary, which it is still read as
    if output_file is None:
        if fmt == "sktrace":
            raise UsageError("where should the trace go? pass -O PATH (or -O - for stdout, or -o json|yaml to print it)")
        output_file = "-"
    if summary != "table" and output_file == "-":
        raise UsageError(f"--summary {summary} prints the summary on stdout, where the trace goes too; pass -O FILE, or leave --summary out")
    return output_file, fmt
