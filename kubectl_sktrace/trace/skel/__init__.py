"""SKEL, SimKube's trace transformation language: parse a program, then apply it to a trace's events.

    program = parse(text, source="sanitize.skel")        # SkelSyntaxError: file:line:col, one line
    transformer = Transformer(program, start_ts=first_event_ts)
    for event in events:
        event = transformer.apply(event)                  # in place; None when no object is left
    transformer.events_matched, transformer.resources_modified

The language and its semantics are SimKube's (``sk-skel``), with its crashes and wrong results fixed; what
differs, and why, is in ``docs/spec.md`` (SKEL transformations). This package reads no file but its own
built-in programs (``builtin``) and imports nothing of the product but its errors: the trace reader and
writer and the command line sit above it.
"""

from __future__ import annotations

from importlib import resources

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.trace.skel.engine import SkelTransformError, Transformer
from kubectl_sktrace.trace.skel.nodes import Command, Program
from kubectl_sktrace.trace.skel.parser import SkelSyntaxError, parse

BUILTINS = ("sanitize",)
"""Programs shipped in this package, by name (``sanitize``: SimKube's example, for every pod template)."""


def builtin(name: str) -> Program:
    """A built-in program by name; UsageError for a name that is not one."""
    if name not in BUILTINS:
        raise UsageError(f"{name!r} is not a built-in transform (built in: {', '.join(BUILTINS)}); give a SKEL file's path")
    text = resources.files(__name__).joinpath(f"{name}.skel").read_text(encoding="utf-8")
    return parse(text, source=name)


__all__ = ["BUILTINS", "Command", "Program", "SkelSyntaxError", "SkelTransformError", "Transformer", "builtin", "parse"]
