"""A trace as JSON or YAML, for people (``-o json|yaml``; SimKube loads neither): streamed as ``format``'s writer streams."""

from __future__ import annotations

import json
from typing import IO, Any

import yaml

from kubectl_sktrace.errors import TraceFormatError
from kubectl_sktrace.trace import format as traceformat
from kubectl_sktrace.trace.format import EventSpool, Lifecycles, TraceWriter


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
