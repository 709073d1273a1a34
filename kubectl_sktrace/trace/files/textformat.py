"""A trace as JSON or YAML, for people (``-o json|yaml``; SimKube loads neither): streamed as ``format``'s writer streams,
and read back (``inspect``, ``validate``, ``transform``, ``status --timeline`` take either where they take a trace).

A text trace is told from SimKube's msgpack by its first byte: a msgpack trace starts with a map's header (0x80 or
above), text with an ASCII character. It is read whole (it is for people, and several times the size of its msgpack),
checked as ``format`` checks a decoded trace, with ``pod_lifecycles``' keys ``"gvk ns/name"`` and their hashes (JSON
writes map keys as strings) turned back into what the writers write.
"""

from __future__ import annotations

import json
from typing import IO, Any, Iterator, cast

import yaml

from kubectl_sktrace import safeyaml
from kubectl_sktrace.errors import TraceFormatError
from kubectl_sktrace.trace.files import format as traceformat
from kubectl_sktrace.trace.files.format import EventSpool, Lifecycles, Prefixed, Trace, TraceReader, TraceWriter, read_trace, tupled
from kubectl_sktrace.trace.files.shape import check_lifecycles, check_tables, damaged, not_a_trace


MAX_TEXT_TRACE = 1 << 30
"""The largest trace read back as YAML (1 GiB of text; PyYAML holds several times that while it loads)."""


def _json(value: Any) -> str:
    return json.dumps(value, default=_not_json)


def _not_json(value: Any) -> Any:
    """What JSON cannot hold: a msgpack bin value (bytes), which SimKube's traces never hold."""
    raise TraceFormatError(f"the trace holds {'binary data (a msgpack bin value)' if isinstance(value, bytes) else type(value).__name__}, "
                           "which JSON cannot hold and SimKube never writes: the file is damaged or not a trace (-o yaml shows it)")


class TextTraceWriter:
    """The trace as JSON or YAML, for people (SimKube does not load these). Streams like TraceWriter;
    ``pod_lifecycles`` keys become ``"gvk ns/name"`` strings, since neither format has array keys."""

    def __init__(self, stream: IO[bytes], *, fmt: str, config: dict[str, Any]) -> None:
        self._stream = stream
        self._fmt = fmt
        self._first = True
        if fmt == "json":
            self._put('{"version": ' + _json(traceformat.FORMAT_VERSION) + ', "config": ' + _json(config) + ', "events": [')
        else:
            self._put(yaml.safe_dump({"version": traceformat.FORMAT_VERSION, "config": config}, sort_keys=False) + "events:\n")

    def _put(self, text: str) -> None:
        self._stream.write(text.encode())

    def write_event(self, *, ts: int, applied: list[dict[str, Any]], deleted: list[dict[str, Any]]) -> None:
        event = {"ts": ts, "applied_objs": applied, "deleted_objs": deleted}
        if self._fmt == "json":
            self._put(("\n" if self._first else ",\n") + _json(event))
        else:
            self._put(yaml.safe_dump([event], sort_keys=False))
        self._first = False

    def finish(self, *, index: dict[str, dict[str, int]], pod_lifecycles: dict[tuple[str, str], dict[int, list[dict[str, Any]]]]) -> None:
        readable = {f"{gvk} {ns_name}": hashes for (gvk, ns_name), hashes in pod_lifecycles.items()}
        if self._fmt == "json":
            self._put('\n], "index": ' + _json(index) + ', "pod_lifecycles": ' + _json(readable) + "}\n")
        else:
            self._put(yaml.safe_dump({"index": index, "pod_lifecycles": readable}, sort_keys=False))


def make_writer(fmt: str, stream: IO[bytes], *, config: dict[str, Any], event_count: int) -> TraceWriter | TextTraceWriter:
    """The streaming writer of a trace format: ``sktrace`` (SimKube's msgpack), ``json`` or ``yaml``."""
    if fmt == "sktrace":
        return TraceWriter(stream, config=config, event_count=event_count)
    return TextTraceWriter(stream, fmt=fmt, config=config)


def write_spooled(spool: EventSpool, stream: IO[bytes], *, fmt: str, version: int, config: dict[str, Any],
                  index: dict[str, dict[str, int]], pod_lifecycles: Lifecycles) -> None:
    """The spooled events and the tables after them, as a whole trace in ``fmt`` (``sktrace``, ``json`` or ``yaml``)."""
    if fmt == "sktrace":
        spool.write_trace(stream, version=version, config=config, index=index, pod_lifecycles=pod_lifecycles)
        return
    text = TextTraceWriter(stream, fmt=fmt, config=config)
    for event in spool.events():
        text.write_event(ts=event["ts"], applied=event["applied_objs"], deleted=event["deleted_objs"])
    text.finish(index=index, pod_lifecycles=pod_lifecycles)


def is_text(head: bytes) -> bool:
    """Whether a trace's first bytes are text (-o json|yaml's) rather than SimKube's msgpack."""
    return bool(head) and head[0] < 0x80


def decode_text_trace(data: bytes) -> Trace | None:
    """The trace ``-o json|yaml`` wrote, read back; None when ``data`` is no text (``is_text``). TraceFormatError, one
    line, when it is text but not such a trace."""
    if not is_text(data):
        return None
    try:
        text = data.decode("utf-8")
        # a trace is data, not configuration: bounded by its own size (aliases cannot expand it past its length)
        values = json.loads(text) if text.lstrip().startswith("{") else safeyaml.load(text, max_chars=MAX_TEXT_TRACE, max_values=len(text))
    except (UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        raise not_a_trace(f"the file is text, but neither the JSON nor the YAML of a trace ({_problem(exc)}); pass a trace written by "
                          "'kubectl sktrace export' (-o sktrace, json or yaml)") from None
    if not isinstance(values, dict):
        raise not_a_trace("the file is text, but not the JSON or YAML of a trace (-o json|yaml writes a map); pass a trace file")
    check_tables(values)
    return Trace(version=values["version"], config=values["config"], events=values["events"], index=values["index"],
                 pod_lifecycles=check_lifecycles(_lifecycles_read_back(values["pod_lifecycles"])))


def _problem(exc: Exception) -> str:
    """What a JSON or YAML parser found wrong, and where, in a few words."""
    if isinstance(exc, json.JSONDecodeError):
        return f"line {exc.lineno}: {exc.msg}"
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        return f"line {exc.problem_mark.line + 1}: {exc.problem}"
    return "it is not UTF-8" if isinstance(exc, UnicodeDecodeError) else str(exc).splitlines()[0]


def _lifecycles_read_back(readable: Any) -> Any:
    """``pod_lifecycles`` as ``TextTraceWriter`` wrote it (``{"gvk ns/name": {hash: [entry]}}``), in the form ``format``
    decodes (``{(gvk, ns/name): {hash: (entry,)}}``); what does not fit is left for ``check_lifecycles`` to name."""
    if not isinstance(readable, dict):
        return readable
    table: dict[Any, Any] = {}
    for owner, by_hash in readable.items():
        key = tuple(owner.split(" ", 1)) if isinstance(owner, str) and " " in owner else owner
        if isinstance(by_hash, dict):
            by_hash = {int(h) if isinstance(h, str) and h.isdigit() else h: tupled(entries) for h, entries in by_hash.items()}
        table[key] = by_hash
    return table


def read_any_trace(path: str, *, stdin: IO[bytes] | None = None) -> Trace:
    """``format.read_trace``, which also reads back the JSON and YAML that ``-o json|yaml`` writes."""
    return read_trace(path, stdin=stdin, text=decode_text_trace)


class TextTraceReader:
    """A text trace, read whole, behind ``TraceReader``'s interface: ``config``, ``events()``, then ``finish()``."""

    def __init__(self, trace: Trace) -> None:
        self._trace = trace

    @property
    def config(self) -> Any:
        return self._trace.config

    def events(self) -> Iterator[dict[str, Any]]:
        yield from self._trace.events

    def finish(self) -> Trace:
        trace = self._trace
        return Trace(version=trace.version, config=trace.config, events=[], index=trace.index, pod_lifecycles=trace.pod_lifecycles)


def trace_reader(stream: IO[bytes], *, name: str) -> TraceReader | TextTraceReader:
    """The reader of a trace in any format we write: SimKube's msgpack streamed (``format.TraceReader``), or text read whole."""
    head = stream.read(1 << 16)
    if not is_text(head):
        return TraceReader(cast(IO[bytes], Prefixed(head, stream)), name=name)  # it reads as a stream does
    try:
        trace = decode_text_trace(head + stream.read())
    except TraceFormatError as exc:
        raise TraceFormatError(f"{name}: {exc}") from None
    assert trace is not None
    return TextTraceReader(trace)
