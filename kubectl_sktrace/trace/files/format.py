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
``TraceReader`` reads one event at a time, with the same checks and messages as ``decode_trace``, so that
``transform`` never holds the whole trace either.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterator

import msgpack

from kubectl_sktrace.errors import TraceFormatError
from kubectl_sktrace.trace.files.shape import FORMAT_VERSION as FORMAT_VERSION
from kubectl_sktrace.trace.files.shape import Lifecycles as Lifecycles
from kubectl_sktrace.trace.files.shape import (
    KEYS,
    PRE_V2,
    check_config,
    check_event,
    check_index,
    check_lifecycles,
    check_tables,
    check_version,
    damaged,
    not_a_trace,
    require,
    type_name,
)


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


def object_packer() -> Callable[[object], bytes]:
    """``dumps_object`` for a caller that packs value after value: one Packer and its buffer, instead of one per value."""
    return _packer().pack  # type: ignore[no-any-return]


def strict_packer() -> Callable[[object], bytes]:
    """A packer of values of exactly dict, list, str, bytes, int, float, bool and None (a tuple or a subclass raises
    TypeError): equal bytes, equal values of equal types, so the bytes can key a memo of what a value gives."""
    return msgpack.Packer(use_bin_type=True, autoreset=True, strict_types=True).pack  # type: ignore[no-any-return]


def loads(data: bytes) -> Any:
    """One msgpack value (arrays as lists; map keys may be any hashable value)."""
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


def members(data: bytes) -> list[tuple[Any, bytes]] | None:
    """The members of one msgpack map as ``(key, the value's bytes)``, in order, the values left packed (skipped by
    the decoder, never built); None when ``data`` is not a map. ``loads`` of a value's bytes is the value."""
    if not data or not (0x80 <= data[0] <= 0x8F or data[0] in (0xDE, 0xDF)):
        return None
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
    unpacker.feed(data)
    found = []
    for _ in range(unpacker.read_map_header()):
        key = unpacker.unpack()
        start = unpacker.tell()
        unpacker.skip()
        found.append((key, data[start:unpacker.tell()]))
    return found


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

    def copy_events(self, source: IO[bytes], *, count: int) -> None:
        """Copy ``count`` events packed one after another (``dumps_object`` of each) from ``source`` to its end."""
        if self._written + count > self._expected:
            raise RuntimeError(f"more events written than the {self._expected} announced")
        shutil.copyfileobj(source, self._stream, 1 << 20)
        self._written += count

    def finish(self, *, index: dict[str, dict[str, int]], pod_lifecycles: Lifecycles) -> None:
        if self._written != self._expected:
            raise RuntimeError(f"{self._written} events written but {self._expected} announced")
        pack = self._packer
        self._stream.write(pack.pack("index"))
        self._stream.write(pack.pack(index))
        self._stream.write(pack.pack("pod_lifecycles"))
        self._stream.write(pack.pack(pod_lifecycles))
        self._finished = True


class EventSpool:
    """Events packed one after another into a temporary file, and counted: for a writer that knows how many
    events it writes only once they are written (a transform drops those it empties), since ``TraceWriter``
    needs the count first. ``add`` each event, then ``write_trace`` once; holds no event in memory."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()
        self._pack = _packer().pack
        self.count = 0

    def __enter__(self) -> EventSpool:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()

    def add(self, event: dict[str, Any]) -> None:
        """One event, its keys in its own order (a trace's are ``ts``, ``applied_objs``, ``deleted_objs``)."""
        self._file.write(self._pack(event))
        self.count += 1

    def events(self) -> Iterator[dict[str, Any]]:
        """The spooled events in the order they were added, one at a time (more may be added after)."""
        self._file.flush()
        self._file.seek(0)
        for event in msgpack.Unpacker(self._file, raw=False, strict_map_key=False, max_buffer_size=(1 << 31) - 1):
            yield event
        self._file.seek(0, os.SEEK_END)

    def write_trace(self, stream: IO[bytes], *, version: int, config: dict[str, Any], index: dict[str, dict[str, int]],
                    pod_lifecycles: Lifecycles) -> None:
        """The whole trace, the spooled events in the order they were added (``textformat.write_spooled``: as text)."""
        self._file.flush()
        self._file.seek(0)
        writer = TraceWriter(stream, config=config, event_count=self.count, version=version)
        writer.copy_events(self._file, count=self.count)
        writer.finish(index=index, pod_lifecycles=pod_lifecycles)


class BytesSpool:
    """Byte strings kept to be read again later, in memory up to ``memory`` bytes, then in a temporary file: ``add``
    gives the reference ``get`` takes. For what a transform looks at again after the events (the specs ``--anonymize``
    hashes at the end), so that its memory stays bounded whatever the trace's size; nothing is ever removed. A reference
    is one int (the offset times 2^32, plus the length: smaller than a pair, kept by the hundred thousand)."""

    def __init__(self, memory: int = 16 << 20) -> None:
        self._file = tempfile.SpooledTemporaryFile(max_size=memory)
        self._end = 0
        self._at_end = True

    def add(self, data: bytes) -> int:
        if not self._at_end:
            self._file.seek(self._end)
            self._at_end = True
        self._file.write(data)
        ref = self._end << 32 | len(data)
        self._end += len(data)
        return ref

    def get(self, ref: int) -> bytes:
        self._at_end = False
        self._file.seek(ref >> 32)
        return self._file.read(ref & 0xFFFFFFFF)

    def close(self) -> None:
        self._file.close()


STDIN = "-"
STDIN_NAME = "standard input"


def source_name(path: str) -> str:
    """How a trace's origin is shown: its path, or ``standard input`` for ``-``."""
    return STDIN_NAME if path == STDIN else path


def read_trace(path: str | Path, *, stdin: IO[bytes] | None = None, text: Callable[[bytes], Trace | None] | None = None) -> Trace:
    """Read and decode a trace file, or ``stdin`` when ``path`` is ``-``; TraceFormatError (one line naming
    the file) when it is not one. ``text`` reads what is no msgpack (``textformat.read_any_trace``: -o json|yaml's
    traces), or gives None."""
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
        return (text(data) if text is not None else None) or decode_trace(data)
    except TraceFormatError as exc:
        raise TraceFormatError(f"{name}: {exc}") from None


def _read_file(path: str | Path) -> bytes:
    with open_source(path) as source:
        try:
            return source.read()
        except OSError as exc:
            raise TraceFormatError(f"{path}: cannot read it: {exc.strerror or exc}") from None


def open_source(path: str | Path) -> IO[bytes]:
    """A local file, a ``file://`` URL's file, or an object in a store (``objectstore``: read whole) opened for
    reading; errors name ``path`` as it was given."""
    from kubectl_sktrace.trace.files import objectstore

    name = str(path)
    if objectstore.is_remote(name):
        return io.BytesIO(objectstore.read_object(name))
    try:
        return open(objectstore.file_url_path(name) or path, "rb")
    except FileNotFoundError:
        raise TraceFormatError(f"{name}: no such file; check the path, or write a trace with 'kubectl sktrace export -O FILE'") from None
    except IsADirectoryError:
        raise TraceFormatError(f"{name}: is a directory, not a trace file; pass the path of a trace file") from None
    except OSError as exc:
        raise TraceFormatError(f"{name}: cannot read it: {exc.strerror or exc}") from None


def _first_byte_kind(data: bytes) -> str:
    first = data[0]
    if 0x80 <= first <= 0x8F or first in (0xDE, 0xDF):
        return "map"
    if 0x90 <= first <= 0x9F or first in (0xDC, 0xDD):
        return "array"
    return "other"


def _check_start(data: bytes) -> None:
    """What the first bytes say: empty, JSON text, a pre-v2 array, not a msgpack map."""
    if not data:
        raise TraceFormatError("the file is empty, not a SimKube trace; export it again")
    kind = _first_byte_kind(data)
    if kind == "other" and data.lstrip()[:1] in (b"{", b"["):
        raise not_a_trace("it looks like JSON text; SimKube loads msgpack traces (export with --format sktrace)")
    if kind == "array":
        raise TraceFormatError(f"this is an array-shaped trace, {PRE_V2}")
    if kind != "map":
        raise not_a_trace("the file does not start with a msgpack map; is it a .sktrace file?")


def decode_trace(data: bytes) -> Trace:
    """Decode trace bytes; TraceFormatError with one line saying what is wrong and what to do."""
    _check_start(data)
    values = _read_top_map(data)
    check_tables(values)
    lifecycles = check_lifecycles(values["pod_lifecycles"])
    return Trace(
        version=values["version"],
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
                raise damaged(f"a top-level key is {type_name(key)}, expected the names {', '.join(KEYS)}")
    except msgpack.OutOfData:
        raise TraceFormatError("the trace is truncated (the data ends in the middle); copy or export it again") from None
    except TraceFormatError:
        raise
    except UnicodeDecodeError:
        raise not_a_trace("a string is not valid UTF-8; the file is damaged or not a trace") from None
    except (ValueError, TypeError, msgpack.UnpackException):
        raise not_a_trace("the data is not valid msgpack; the file is damaged or not a trace") from None
    if unpacker.tell() != len(data):
        raise not_a_trace(f"{len(data) - unpacker.tell()} bytes follow the trace; the file is damaged or not a trace")
    return values



class TraceReader:
    """A trace read from ``stream`` one event at a time: ``events()`` yields them lazily, each checked as
    ``decode_trace`` checks it, then ``finish()`` reads the rest. The top-level keys are read in file order;
    what comes before ``events`` (SimKube's ``version`` and ``config``) is checked at once, so an old or future
    trace is refused before its first event. TraceFormatError, one line naming the trace, as ``read_trace``."""

    def __init__(self, stream: IO[bytes], *, name: str) -> None:
        self.name = name
        self._values: dict[str, Any] = {}
        with self._errors():
            head = stream.read(1 << 16)
            _check_start(head)
            self._unpacker = msgpack.Unpacker(Prefixed(head, stream), raw=False, strict_map_key=False, max_buffer_size=(1 << 31) - 1)
            self._left = self._unpacker.read_map_header()
            self._at_events = self._read_keys(until_events=True)

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except TraceFormatError as exc:
            raise TraceFormatError(f"{self.name}: {exc}") from None
        except msgpack.OutOfData:
            raise TraceFormatError(f"{self.name}: the trace is truncated (the data ends in the middle); copy or export it again") from None
        except UnicodeDecodeError:
            raise TraceFormatError(f"{self.name}: {not_a_trace('a string is not valid UTF-8; the file is damaged or not a trace')}") from None
        except OSError as exc:
            raise TraceFormatError(f"{self.name}: cannot read it: {exc.strerror or exc}") from None
        except (ValueError, TypeError, msgpack.UnpackException):
            raise TraceFormatError(f"{self.name}: {not_a_trace('the data is not valid msgpack; the file is damaged or not a trace')}") from None

    def _read_keys(self, *, until_events: bool) -> bool:
        """Read top-level keys and their values; True when stopped before the events."""
        while self._left:
            key = self._unpacker.unpack()
            self._left -= 1
            if not isinstance(key, str):
                raise damaged(f"a top-level key is {type_name(key)}, expected the names {', '.join(KEYS)}")
            if key == "events" and until_events:
                return True
            value = self._values[key] = self._lifecycles() if key == "pod_lifecycles" else self._unpacker.unpack()
            if key == "version":
                check_version(value)
            elif key == "config":
                check_config(value)
        return False

    def _header(self, what: str, read: Any) -> int:
        try:
            return int(read())
        except ValueError:
            value = self._unpacker.unpack()
            raise damaged(f"{what} must be {'an array' if what == repr('events') else 'a map'}, found {type_name(value)}") from None

    def _lifecycles(self) -> Lifecycles:
        unpack = self._unpacker.unpack
        raw = {}
        for _ in range(self._header("'pod_lifecycles'", self._unpacker.read_map_header)):
            key, value = unpack(), unpack()
            key = tuple(key) if isinstance(key, list) else key
            require(not isinstance(key, dict), "a key of 'pod_lifecycles'", key, "an array [owner_gvk, 'ns/name']")
            raw[key] = tupled(value)
        return check_lifecycles(raw)

    @property
    def config(self) -> Any:
        """The trace's config, once read (it comes before the events in SimKube's traces); None before."""
        return self._values.get("config")

    def events(self) -> Iterator[dict[str, Any]]:
        """Each event in turn (once)."""
        with self._errors():
            if self._at_events:
                self._values["events"] = None
                for i in range(self._header("'events'", self._unpacker.read_array_header)):
                    event = self._unpacker.unpack()
                    check_event(i, event)
                    yield event
                self._at_events = False

    def finish(self) -> Trace:
        """What follows the events, once they are read: the trace without its events."""
        with self._errors():
            if self._at_events:
                raise RuntimeError("finish before the events were read")
            self._read_keys(until_events=False)
            missing = [key for key in KEYS if key not in self._values]
            if missing:
                raise damaged(f"the key {missing[0]!r} is missing")
            check_index(self._values["index"])
            extra = sum(len(chunk) for chunk in iter(lambda: self._unpacker.read_bytes(1 << 16), b""))
            if extra:
                raise not_a_trace(f"{extra} bytes follow the trace; the file is damaged or not a trace")
        values = self._values
        return Trace(version=values["version"], config=values["config"], events=[], index=values["index"], pod_lifecycles=values["pod_lifecycles"])


class Prefixed:
    """A stream whose first bytes were read already (to tell what it is), given back first."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head, self._rest = head, rest

    def read(self, size: int = -1) -> bytes:
        if not self._head:
            return self._rest.read(size)
        out, self._head = (self._head, b"") if size < 0 else (self._head[:size], self._head[size:])
        return out


def tupled(value: Any) -> Any:
    """Arrays as tuples, as ``decode_trace`` reads ``pod_lifecycles``."""
    if isinstance(value, list):
        return tuple(tupled(item) for item in value)
    if isinstance(value, dict):
        return {key: tupled(item) for key, item in value.items()}
    return value
