"""SimKube trace files, format version 2 (docs/spec.md §8.1): decode, encode and stream. The only importer of ``msgpack``.

A trace is one msgpack map with the keys ``version``, ``config``, ``events``, ``index`` and
``pod_lifecycles``, in that order. Decoding then encoding a SimKube trace gives back the identical bytes:
maps keep their order, integers are packed in their most compact form by both msgpack-python and SimKube's
rmp-serde, and the 2-element array keys of ``pod_lifecycles`` are kept as tuples.

Decoded values use lists for arrays (so that callers can dump them as JSON or YAML), except the
``pod_lifecycles`` keys, which are ``(owner_gvk, "ns/name")`` tuples. To get lists everywhere else while
still hashing those array keys, the top-level map is read key by key and only the ``pod_lifecycles`` value
is decoded with ``use_list=False``.

Decoding checks the shape SimKube's deserializer requires (the five keys with the right types, events
with an integer ``ts`` and two object arrays, u64 index values, lifecycle entries ``{"Running": start}``
or ``{"Finished": [start, end]}``) and raises TraceFormatError with one line naming the first problem.
Extra top-level keys are ignored, as serde ignores unknown fields.

``TraceWriter`` writes the same bytes as ``encode_trace`` but one event at a time, so that an export never
holds the whole trace in memory. ``TextTraceWriter`` streams the same content as JSON or YAML, for people.
"""

from __future__ import annotations

import json
import reprlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import msgpack
import yaml

from kubectl_sktrace.errors import TraceFormatError

FORMAT_VERSION = 2
KEYS = ("version", "config", "events", "index", "pod_lifecycles")
_U64_MAX = (1 << 64) - 1
_PRE_V2 = "written by SimKube before format v2; re-export it with a current tracer"

Lifecycles = dict[tuple[str, str], dict[int, list[dict[str, Any]]]]


@dataclass(frozen=True)
class Trace:
    """A whole trace in memory: what ``decode_trace`` returns and ``encode_trace`` writes."""

    version: int
    config: dict[str, Any]
    events: list[dict[str, Any]]
    index: dict[str, dict[str, int]]
    pod_lifecycles: Lifecycles


def _packer() -> msgpack.Packer:
    return msgpack.Packer(use_bin_type=True, autoreset=True)


def dumps_object(obj: object) -> bytes:
    """msgpack bytes of one value, packed exactly as inside a trace."""
    return _packer().pack(obj)  # type: ignore[no-any-return]


def loads(data: bytes) -> Any:
    """One msgpack value (arrays as lists; map keys may be any hashable value)."""
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


def encode_trace(trace: Trace) -> bytes:
    """The msgpack bytes of a trace, keys in SimKube's order."""
    return dumps_object(
        {
            "version": trace.version,
            "config": trace.config,
            "events": trace.events,
            "index": trace.index,
            "pod_lifecycles": trace.pod_lifecycles,
        }
    )


class TraceWriter:
    """Write a trace to a binary stream one event at a time; the bytes equal ``encode_trace``'s.

    The event count goes into the array header before the events, so the caller counts first (a cheap
    query on the cache) and ``finish`` refuses a different number of written events.
    """

    def __init__(self, stream: IO[bytes], *, config: dict[str, Any], event_count: int, version: int = FORMAT_VERSION) -> None:
        self._stream = stream
        self._packer = _packer()
        self._expected = event_count
        self._written = 0
        self._finished = False
        pack = self._packer
        stream.write(pack.pack_map_header(len(KEYS)))
        stream.write(pack.pack("version"))
        stream.write(pack.pack(version))
        stream.write(pack.pack("config"))
        stream.write(pack.pack(config))
        stream.write(pack.pack("events"))
        stream.write(pack.pack_array_header(event_count))

    @property
    def events_written(self) -> int:
        return self._written

    def _next_event(self) -> None:
        if self._finished:
            raise RuntimeError("write_event after finish")
        if self._written >= self._expected:
            raise RuntimeError(f"more events written than the {self._expected} announced")

    def write_event(self, *, ts: int, applied: list[dict[str, Any]], deleted: list[dict[str, Any]]) -> None:
        self._next_event()
        self._stream.write(self._packer.pack({"ts": ts, "applied_objs": applied, "deleted_objs": deleted}))
        self._written += 1

    def write_packed_event(self, *, ts: int, applied: list[bytes], deleted: list[dict[str, Any]]) -> None:
        """Like ``write_event``, with applied objects given as their msgpack bytes (``dumps_object``), which
        are copied as they are: the export of stored objects needs no decoding."""
        self._next_event()
        pack = self._packer
        self._stream.write(b"".join([
            pack.pack_map_header(3), pack.pack("ts"), pack.pack(ts),
            pack.pack("applied_objs"), pack.pack_array_header(len(applied)), *applied,
            pack.pack("deleted_objs"), pack.pack(deleted),
        ]))
        self._written += 1

    def finish(self, *, index: dict[str, dict[str, int]], pod_lifecycles: Lifecycles) -> None:
        if self._written != self._expected:
            raise RuntimeError(f"{self._written} events written but {self._expected} announced")
        pack = self._packer
        self._stream.write(pack.pack("index"))
        self._stream.write(pack.pack(index))
        self._stream.write(pack.pack("pod_lifecycles"))
        self._stream.write(pack.pack(pod_lifecycles))
        self._finished = True


STDIN = "-"
STDIN_NAME = "standard input"


def source_name(path: str) -> str:
    """How a trace's origin is shown: its path, or ``standard input`` for ``-``."""
    return STDIN_NAME if path == STDIN else path


def read_trace(path: str | Path, *, stdin: IO[bytes] | None = None) -> Trace:
    """Read and decode a trace file, or ``stdin`` when ``path`` is ``-``; TraceFormatError (one line naming
    the file) when it is not one."""
    if str(path) == STDIN and stdin is not None:
        name = STDIN_NAME
        try:
            data = stdin.read()
        except OSError as exc:
            raise TraceFormatError(f"{STDIN_NAME}: cannot read it: {exc.strerror or exc}") from None
    else:
        name = str(path)
        data = _read_file(path)
    try:
        return decode_trace(data)
    except TraceFormatError as exc:
        raise TraceFormatError(f"{name}: {exc}") from None


def _read_file(path: str | Path) -> bytes:
    """The bytes of a local file, of a ``file://`` URL's file, or of an object in a store (``objectstore``);
    errors name ``path`` as it was given."""
    from kubectl_sktrace.trace import objectstore

    name = str(path)
    if objectstore.is_remote(name):
        return objectstore.read_object(name)
    try:
        return Path(objectstore.file_url_path(name) or path).read_bytes()
    except FileNotFoundError:
        raise TraceFormatError(f"{name}: no such file; check the path, or write a trace with 'kubectl sktrace export -O FILE'") from None
    except IsADirectoryError:
        raise TraceFormatError(f"{name}: is a directory, not a trace file; pass the path of a trace file") from None
    except OSError as exc:
        raise TraceFormatError(f"{name}: cannot read it: {exc.strerror or exc}") from None


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bytes):
        return "binary data"
    if isinstance(value, dict):
        return "a map"
    if isinstance(value, (list, tuple)):
        return "an array"
    if value is None:
        return "nil"
    return type(value).__name__


def _not_a_trace(detail: str) -> TraceFormatError:
    return TraceFormatError(f"not a SimKube trace: {detail}")


def _damaged(detail: str) -> TraceFormatError:
    """A wrong shape inside a msgpack map: most likely damage, or a file some other program wrote."""
    return _not_a_trace(f"{detail}; the file is damaged or not a trace")


def _first_byte_kind(data: bytes) -> str:
    first = data[0]
    if 0x80 <= first <= 0x8F or first in (0xDE, 0xDF):
        return "map"
    if 0x90 <= first <= 0x9F or first in (0xDC, 0xDD):
        return "array"
    return "other"


def decode_trace(data: bytes) -> Trace:
    """Decode trace bytes; TraceFormatError with one line saying what is wrong and what to do."""
    if not data:
        raise TraceFormatError("the file is empty, not a SimKube trace; export it again")
    kind = _first_byte_kind(data)
    if kind == "other" and data.lstrip()[:1] in (b"{", b"["):
        raise _not_a_trace("it looks like JSON text; SimKube loads msgpack traces (export with --format sktrace)")
    if kind == "array":
        raise TraceFormatError(f"this is an array-shaped trace, {_PRE_V2}")
    if kind != "map":
        raise _not_a_trace("the file does not start with a msgpack map; is it a .sktrace file?")
    values = _read_top_map(data)
    for key in KEYS:
        if key not in values:
            raise _damaged(f"the key {key!r} is missing")
    version = values["version"]
    if not isinstance(version, int) or isinstance(version, bool):
        raise _damaged(f"'version' must be an integer, found {_type_name(version)}")
    if version < FORMAT_VERSION:
        raise TraceFormatError(f"format version {version} was {_PRE_V2}")
    if version > FORMAT_VERSION:
        raise TraceFormatError(
            f"format version {version} is newer than this plugin reads ({FORMAT_VERSION}); upgrade kubectl-sktrace"
        )
    _check_config(values["config"])
    _check_events(values["events"])
    _check_index(values["index"])
    lifecycles = _check_lifecycles(values["pod_lifecycles"])
    return Trace(
        version=version,
        config=values["config"],
        events=values["events"],
        index=values["index"],
        pod_lifecycles=lifecycles,
    )


def _read_top_map(data: bytes) -> dict[str, Any]:
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=max(len(data), 1 << 20))
    unpacker.feed(data)
    values: dict[str, Any] = {}
    try:
        size = unpacker.read_map_header()
        for _ in range(size):
            key = unpacker.unpack()
            if key == "pod_lifecycles":
                start = unpacker.tell()
                unpacker.skip()
                values[key] = msgpack.unpackb(
                    data[start:unpacker.tell()], raw=False, strict_map_key=False, use_list=False
                )
            elif isinstance(key, str):
                values[key] = unpacker.unpack()
            else:
                raise _damaged(f"a top-level key is {_type_name(key)}, expected the names {', '.join(KEYS)}")
    except msgpack.OutOfData:
        raise TraceFormatError("the trace is truncated (the data ends in the middle); copy or export it again") from None
    except TraceFormatError:
        raise
    except UnicodeDecodeError:
        raise _not_a_trace("a string is not valid UTF-8; the file is damaged or not a trace") from None
    except (ValueError, TypeError, msgpack.UnpackException):
        raise _not_a_trace("the data is not valid msgpack; the file is damaged or not a trace") from None
    if unpacker.tell() != len(data):
        raise _not_a_trace(f"{len(data) - unpacker.tell()} bytes follow the trace; the file is damaged or not a trace")
    return values


def _require(cond: bool, what: str, value: object, expected: str) -> None:
    if not cond:
        raise _damaged(f"{what} must be {expected}, found {_type_name(value)}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_config(config: object) -> None:
    _require(isinstance(config, dict), "'config'", config, "a map")
    assert isinstance(config, dict)
    tracked = config.get("trackedObjects")
    _require(isinstance(tracked, dict), "'config.trackedObjects'", tracked, "a map")


def _check_events(events: object) -> None:
    _require(isinstance(events, list), "'events'", events, "an array")
    assert isinstance(events, list)
    for i, event in enumerate(events):
        _require(isinstance(event, dict), f"'events[{i}]'", event, "a map")
        for key in ("ts", "applied_objs", "deleted_objs"):
            if key not in event:
                raise _damaged(f"'events[{i}]' has no key {key!r}")
        _require(_is_int(event["ts"]), f"'events[{i}].ts'", event["ts"], "an integer")
        for key in ("applied_objs", "deleted_objs"):
            objs = event[key]
            _require(isinstance(objs, list), f"'events[{i}].{key}'", objs, "an array")
            for j, obj in enumerate(objs):
                _require(isinstance(obj, dict), f"'events[{i}].{key}[{j}]'", obj, "a map (a Kubernetes object)")


def _check_index(index: object) -> None:
    _require(isinstance(index, dict), "'index'", index, "a map")
    assert isinstance(index, dict)
    for gvk, entries in index.items():
        _require(isinstance(gvk, str), "a key of 'index'", gvk, "a GVK string")
        _require(isinstance(entries, dict), f"'index.{gvk}'", entries, "a map")
        for name, value in entries.items():
            _require(isinstance(name, str), f"a key of 'index.{gvk}'", name, "a 'ns/name' string")
            _require(_is_int(value) and 0 <= value <= _U64_MAX, f"'index.{gvk}.{name}'", value, "an unsigned 64-bit hash")


def _check_lifecycles(raw: object) -> Lifecycles:
    _require(isinstance(raw, dict), "'pod_lifecycles'", raw, "a map")
    assert isinstance(raw, dict)
    result: Lifecycles = {}
    for owner, by_hash in raw.items():
        ok_key = isinstance(owner, tuple) and len(owner) == 2 and all(isinstance(p, str) for p in owner)
        _require(ok_key, "a key of 'pod_lifecycles'", owner, "an array [owner_gvk, 'ns/name']")
        where = f"'pod_lifecycles[{owner[0]} {owner[1]}]'"
        _require(isinstance(by_hash, dict), where, by_hash, "a map")
        entries: dict[int, list[dict[str, Any]]] = {}
        for pod_hash, lifecycles in by_hash.items():
            _require(_is_int(pod_hash) and 0 <= pod_hash <= _U64_MAX, f"a key of {where}", pod_hash, "an unsigned 64-bit hash")
            _require(isinstance(lifecycles, tuple), f"{where}[{pod_hash}]", lifecycles, "an array")
            entries[pod_hash] = [_lifecycle_entry(entry, where) for entry in lifecycles]
        result[owner] = entries
    return result


def _lifecycle_entry(entry: object, where: str) -> dict[str, Any]:
    if isinstance(entry, dict) and len(entry) == 1:
        ((state, value),) = entry.items()
        if state == "Running" and _is_int(value):
            return {"Running": value}
        if state == "Finished" and isinstance(value, tuple) and len(value) == 2 and all(_is_int(v) for v in value):
            return {"Finished": list(value)}
    raise _damaged(f"a lifecycle in {where} is not {{'Running': start}} or {{'Finished': [start, end]}}: {reprlib.repr(entry)}")


class TextTraceWriter:
    """The trace as JSON or YAML, for people (SimKube does not load these). Streams like TraceWriter;
    ``pod_lifecycles`` keys become ``"gvk ns/name"`` strings, since neither format has array keys."""

    def __init__(self, stream: IO[bytes], *, fmt: str, config: dict[str, Any]) -> None:
        self._stream = stream
        self._fmt = fmt
        self._first = True
        if fmt == "json":
            self._put('{"version": ' + json.dumps(FORMAT_VERSION) + ', "config": ' + json.dumps(config) + ', "events": [')
        else:
            self._put(yaml.safe_dump({"version": FORMAT_VERSION, "config": config}, sort_keys=False) + "events:\n")

    def _put(self, text: str) -> None:
        self._stream.write(text.encode())

    def write_event(self, *, ts: int, applied: list[dict[str, Any]], deleted: list[dict[str, Any]]) -> None:
        event = {"ts": ts, "applied_objs": applied, "deleted_objs": deleted}
        if self._fmt == "json":
            self._put(("\n" if self._first else ",\n") + json.dumps(event))
        else:
            self._put(yaml.safe_dump([event], sort_keys=False))
        self._first = False

    def finish(self, *, index: dict[str, dict[str, int]], pod_lifecycles: dict[tuple[str, str], dict[int, list[dict[str, Any]]]]) -> None:
        readable = {f"{gvk} {ns_name}": hashes for (gvk, ns_name), hashes in pod_lifecycles.items()}
        if self._fmt == "json":
            self._put('\n], "index": ' + json.dumps(index) + ', "pod_lifecycles": ' + json.dumps(readable) + "}\n")
        else:
            self._put(yaml.safe_dump({"index": index, "pod_lifecycles": readable}, sort_keys=False))


def make_writer(fmt: str, stream: IO[bytes], *, config: dict[str, Any], event_count: int) -> TraceWriter | TextTraceWriter:
    """The streaming writer of a trace format: ``sktrace`` (SimKube's msgpack), ``json`` or ``yaml``."""
    if fmt == "sktrace":
        return TraceWriter(stream, config=config, event_count=event_count)
    return TextTraceWriter(stream, fmt=fmt, config=config)
