"""A window picked on the page: the ``export`` command that writes it, what it would hold, and its bytes.

The page sends the window and the filters it shows (namespaces, label selectors, --transform, --anonymize, the
format) as query parameters; ``window_request`` checks them with export's own rules (``export/options``), so a
filter the command line refuses is refused here in the same words. The download is written by export's own code
(``export_trace``) from the same filters, so it holds the bytes ``export_command``'s command writes. Transforms are
the built-in ones only: the page names no file for the server to read.
"""

from __future__ import annotations

import shlex
from collections import Counter
from dataclasses import dataclass
from typing import IO, Any, Mapping

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.export.options import FORMATS, ExportFilters, filters_from_flags
from kubectl_sktrace.export.window import ExportReport, export_trace
from kubectl_sktrace.store import Cache
from kubectl_sktrace.timeparse import format_time
from kubectl_sktrace.trace.files.format import decode_trace
from kubectl_sktrace.trace.selection.selectors import quoted
from kubectl_sktrace.trace.skel import BUILTINS, builtin
from kubectl_sktrace.trace.transform import format_key, parse_key
from kubectl_sktrace.view.params import time_param

EXTENSIONS = {"sktrace": "sktrace", "json": "json", "yaml": "yaml"}


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

    @property
    def file_name(self) -> str:
        return f"window-{format_time(self.start).replace(':', '')}.{EXTENSIONS[self.fmt]}"


def window_request(params: Mapping[str, str]) -> WindowRequest:
    """The request's window and flags, each checked; UsageError in the words of ``export``'s flags."""
    start, end = time_param(params, "start"), time_param(params, "end")
    if end <= start:
        raise UsageError("the window is empty; drag across the axis to pick one")
    transform = params.get("transform") or None
    if transform is not None and transform not in BUILTINS:
        raise UsageError(f"--transform {quoted(transform)}: the page offers the built-in transforms ({', '.join(BUILTINS)})")
    fmt = params.get("format") or "sktrace"
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {quoted(fmt)}; use one of {', '.join(FORMATS)}")
    key = params.get("anonymize_key") or None
    request = WindowRequest(
        start=start, end=end, all_namespaces=params.get("all_namespaces") == "1", include_namespaces=params.get("include_namespaces") or None,
        exclude_labels=tuple(s for s in params.get("exclude_labels", "").split("\n") if s.strip()),
        include_cluster_scoped=params.get("include_cluster_scoped") == "1", transform=transform,
        anonymize_key=parse_key(key) if params.get("anonymize") == "1" and key else None, fmt=fmt,
    )
    if params.get("anonymize") == "1" and request.anonymize_key is None:
        raise UsageError("--anonymize needs a key here: the page makes one")
    filters(request)  # the filters' own checks (contradictions, selectors)
    return request


def filters(request: WindowRequest) -> ExportFilters:
    return filters_from_flags(
        namespace=None, all_namespaces=request.all_namespaces, include_namespaces=request.include_namespaces,
        excluded_namespaces=None, exclude_labels=request.exclude_labels, include_cluster_scoped=request.include_cluster_scoped,
    )


def export_command(request: WindowRequest, *, base: tuple[str, ...]) -> str:
    """The ``kubectl sktrace export`` command line that writes this window, the cache named as ``view`` was given it."""
    args = ["kubectl", "sktrace", "export", *base, "-s", format_time(request.start), "-t", format_time(request.end)]
    if request.all_namespaces:
        args.append("-A")
    if request.include_namespaces:
        args += ["--include-namespaces", request.include_namespaces]
    for selector in request.exclude_labels:
        args += ["--exclude-labels", selector]
    if request.include_cluster_scoped:
        args.append("--include-cluster-scoped")
    if request.transform:
        args += ["--transform", request.transform]
    if request.anonymize_key is not None:
        args += ["--anonymize", "--anonymize-key", format_key(request.anonymize_key)]
    if request.fmt != "sktrace":
        args += ["-o", request.fmt]
    args += ["-O", request.file_name]
    return " ".join(shlex.quote(a) for a in args)


def write_window(cache: Cache, request: WindowRequest, stream: IO[bytes]) -> ExportReport:
    """The trace of the window, as ``export`` writes it with these flags (an empty one included: the page says so)."""
    program = builtin(request.transform) if request.transform else None
    return export_trace(cache, start_ts=request.start, end_ts=request.end, filters=filters(request), keep_status=False, fmt=request.fmt,
                        stream=stream, allow_empty=True, program=program, anonymize_key=request.anonymize_key)


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
