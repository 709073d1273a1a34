"""A window picked on the page: the ``export`` command that writes it, what it would hold, and its bytes.

The page sends the window and the filters it shows as query parameters: namespaces, ``-l``, ``--allow`` and
``--deny`` rules in the command line's syntax and order, a rule file's content (``--filters``, named as the person
will save it), ``--default``, label exclusions, --transform, --anonymize, the format. ``window_request`` checks them
with export's own parsers (``export/options``, ``trace/selection/rules``), so what the command line refuses is
refused here in the same words. The download is written by export's own code (``export_trace``) from the same
filters, kinds resolved as export resolves them, so it holds the bytes ``export_command``'s command writes; the
decisions are ``export --dry-run``'s (``decide_window``). Transforms are the built-in ones only: the page names no
file for the server to read. The anonymization key never goes into the command (hence into a shell's history): the
command reads it from ``$SKTRACE_ANONYMIZE_KEY``, set from the file the page names.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections import Counter
from dataclasses import dataclass
from typing import IO, Any, Mapping

import yaml

from kubectl_sktrace import safeyaml
from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.export.options import FORMATS, ExportFilters, filters_from_flags
from kubectl_sktrace.export.window import ExportReport, decide_window, export_trace
from kubectl_sktrace.store import Cache
from kubectl_sktrace.store.status import kind_catalog
from kubectl_sktrace.timeparse import format_time
from kubectl_sktrace.trace.files.format import decode_trace
from kubectl_sktrace.trace.selection.rules import ACTIONS, ALLOW, Rule, parse_rule, parse_rules_file, resolve_kinds, selector_rule
from kubectl_sktrace.trace.selection.selectors import quoted
from kubectl_sktrace.trace.skel import BUILTINS, builtin
from kubectl_sktrace.trace.transform import format_key, parse_key
from kubectl_sktrace.view.params import time_param

EXTENSIONS = {"sktrace": "sktrace", "json": "json", "yaml": "yaml"}
KEY_ENV = "SKTRACE_ANONYMIZE_KEY"
"""The variable ``export`` reads its anonymization key from (``cli/transforming``)."""
FILE_NAME = re.compile(r"[A-Za-z0-9._/~-][A-Za-z0-9._/~ -]{0,199}\Z")
"""A file name the page may put in a command: letters, digits, ``._/~-`` and spaces (quoted in the command)."""
MAX_RULES_TEXT = 64 << 10


@dataclass(frozen=True)
class WindowRequest:
    """A window ``[start, end)`` and export's flags as the page chose them."""

    start: int
    end: int
    all_namespaces: bool = False
    include_namespaces: str | None = None
    exclude_labels: tuple[str, ...] = ()
    include_cluster_scoped: bool = False
    transform: str | None = None
    anonymize_key: bytes | None = None
    fmt: str = "sktrace"
    selector: str | None = None
    rules: tuple[tuple[str, str], ...] = ()  # (allow|deny, RULE) in the order typed
    default: str | None = None
    filters_text: str | None = None  # a rule file's content
    filters_name: str = "rules.yaml"  # where the command expects it
    key_file: str = "anonymize.key"  # where the command reads the key from

    @property
    def file_name(self) -> str:
        return f"window-{format_time(self.start).replace(':', '')}.{EXTENSIONS[self.fmt]}"


def _file_name(params: Mapping[str, str], name: str, default: str) -> str:
    value = params.get(name) or default
    if not FILE_NAME.match(value):
        raise UsageError(f"{value[:60]!r} is not a file name the page puts in a command (letters, digits, '._/~-' and spaces)")
    return value


def _typed_rules(text: str) -> tuple[tuple[str, str], ...]:
    """The page's rules, one a line: ``allow RULE`` or ``deny RULE`` (as ``--allow``/``--deny`` take RULE)."""
    rules = []
    for line in (line.strip() for line in text.splitlines()):
        action, _, rule = line.partition(" ")
        if not line:
            continue
        if action not in ACTIONS:
            raise UsageError(f"{line[:80]!r}: a rule line is 'allow RULE' or 'deny RULE', as --allow and --deny take it")
        rules.append((action, rule.strip()))
    return tuple(rules)


def _choices(params: Mapping[str, str]) -> tuple[str | None, str, str | None]:
    """The request's --transform, format and --default, each checked."""
    transform = params.get("transform") or None
    if transform is not None and transform not in BUILTINS:
        raise UsageError(f"--transform {quoted(transform)}: the page offers the built-in transforms ({', '.join(BUILTINS)})")
    fmt = params.get("format") or "sktrace"
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {quoted(fmt)}; use one of {', '.join(FORMATS)}")
    default = params.get("default") or None
    if default is not None and default not in ACTIONS:
        raise UsageError(f"--default {quoted(default)}: use allow or deny")
    if len(params.get("rules", "")) + len(params.get("filters_text", "")) > MAX_RULES_TEXT:
        raise UsageError(f"the rules are longer than {MAX_RULES_TEXT >> 10} KiB; keep them in a --filters file")
    return transform, fmt, default


def window_request(params: Mapping[str, str]) -> WindowRequest:
    """The request's window and flags, each checked; UsageError in the words of ``export``'s flags."""
    start, end = time_param(params, "start"), time_param(params, "end")
    if end <= start:
        raise UsageError("the window is empty; drag across the axis to pick one")
    transform, fmt, default = _choices(params)
    key = params.get("anonymize_key") or None
    anonymize = params.get("anonymize") == "1"
    if anonymize and key is None:
        raise UsageError("--anonymize needs a key here: the page makes one")
    request = WindowRequest(
        start=start, end=end, all_namespaces=params.get("all_namespaces") == "1", include_namespaces=params.get("include_namespaces") or None,
        exclude_labels=tuple(s for s in params.get("exclude_labels", "").split("\n") if s.strip()),
        include_cluster_scoped=params.get("include_cluster_scoped") == "1", transform=transform,
        anonymize_key=parse_key(key) if anonymize and key else None, fmt=fmt,
        selector=params.get("selector", "").strip() or None, rules=_typed_rules(params.get("rules", "")), default=default,
        filters_text=params.get("filters_text") if params.get("filters_text", "").strip() else None,
        filters_name=_file_name(params, "filters_name", "rules.yaml"), key_file=_file_name(params, "key_file", "anonymize.key"),
    )
    filters(request)  # the filters' own checks (contradictions, selectors, rules)
    return request


def _user_rules(request: WindowRequest) -> tuple[tuple[Rule, ...], str | None, str]:
    """As ``cli/filtering.user_rules`` reads the flags: the file's rules, ``-l``, the typed rules; the default and its origin."""
    rules: list[Rule] = []
    file_default = None
    if request.filters_text is not None:
        source = f"--filters {request.filters_name}"
        try:
            data = safeyaml.load(request.filters_text)
        except yaml.YAMLError as exc:
            raise UsageError(f"{source}: not YAML ({str(exc).splitlines()[0]}); a rule file is 'rules:' with allow:/deny: items") from None
        file_rules, file_default = parse_rules_file(data, source=request.filters_name)
        rules += file_rules
    if request.selector is not None:
        rules.append(selector_rule(request.selector))
    rules += (parse_rule(text, action=action, origin="--allow" if action == ALLOW else "--deny") for action, text in request.rules)
    origin = "--default" if request.default is not None or request.filters_text is None or file_default is None \
        else f"--filters {request.filters_name}"
    return tuple(rules), request.default or file_default, origin


def filters(request: WindowRequest, cache: Cache | None = None) -> ExportFilters:
    """Export's filters of the page's choices; with ``cache``, the rules' kinds resolved from it as export does."""
    rules, default, origin = _user_rules(request)
    found = filters_from_flags(
        namespace=None, all_namespaces=request.all_namespaces, include_namespaces=request.include_namespaces,
        excluded_namespaces=None, exclude_labels=request.exclude_labels, include_cluster_scoped=request.include_cluster_scoped,
        rules=rules, default=default, default_origin=origin,
    )
    if cache is None or not any(rule.kinds for rule in found.rules):
        return found
    catalog, recorded = kind_catalog(cache)
    return dataclasses.replace(found, rules=resolve_kinds(found.rules, catalog=catalog, recorded=recorded)[0])


def export_command(request: WindowRequest, *, base: tuple[str, ...]) -> str:
    """The ``kubectl sktrace export`` command line that writes this window, the cache named as ``view`` was given it."""
    args = ["kubectl", "sktrace", "export", *base, "-s", format_time(request.start), "-t", format_time(request.end)]
    if request.all_namespaces:
        args.append("-A")
    if request.include_namespaces:
        args += ["--include-namespaces", request.include_namespaces]
    for selector in request.exclude_labels:
        args += ["--exclude-labels", selector]
    if request.filters_text is not None:
        args += ["--filters", request.filters_name]
    if request.selector is not None:
        args += ["-l", request.selector]
    for action, text in request.rules:
        args += [f"--{action}", text]
    if request.default is not None:
        args += ["--default", request.default]
    if request.include_cluster_scoped:
        args.append("--include-cluster-scoped")
    if request.transform:
        args += ["--transform", request.transform]
    if request.anonymize_key is not None:
        args.append("--anonymize")
    if request.fmt != "sktrace":
        args += ["-o", request.fmt]
    args += ["-O", request.file_name]
    command = " ".join(shlex.quote(a) for a in args)
    if request.anonymize_key is None:
        return command
    return f'{KEY_ENV}="$(cat {shlex.quote(request.key_file)})" {command}'


def write_window(cache: Cache, request: WindowRequest, stream: IO[bytes]) -> ExportReport:
    """The trace of the window, as ``export`` writes it with these flags (an empty one included: the page says so)."""
    program = builtin(request.transform) if request.transform else None
    return export_trace(cache, start_ts=request.start, end_ts=request.end, filters=filters(request, cache), keep_status=False, fmt=request.fmt,
                        stream=stream, allow_empty=True, program=program, anonymize_key=request.anonymize_key)


def decisions(cache: Cache, request: WindowRequest) -> dict[str, Any]:
    """What ``export --dry-run`` prints of the window with these filters: each rule and the objects it decided."""
    program = builtin(request.transform) if request.transform else None
    return decide_window(cache, start_ts=request.start, end_ts=request.end, filters=filters(request, cache), program=program).as_mapping()


def report_of(report: ExportReport, data: bytes | None) -> dict[str, Any]:
    """What the export holds, for the page: ``report``'s figures, and per kind the objects of its index (from the trace
    written as sktrace, when given)."""
    objects: dict[str, int] = {}
    lifecycles = report.lifecycles
    if data is not None:
        trace = decode_trace(data)
        objects = dict(sorted(Counter({gvk: len(names) for gvk, names in trace.index.items()}).items()))
    return {
        "start": report.start_ts, "end": report.end_ts, "events": report.events, "applied": report.applied, "deleted": report.deleted,
        "indexObjects": report.index_objects, "objectsPerKind": objects, "lifecycles": lifecycles, "lastEvent": report.last_event_ts,
        "notes": list(report.notes), "warnings": list(report.warnings),
    }
