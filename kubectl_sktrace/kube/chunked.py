"""HTTP/1.1 chunked transfer coding (RFC 9112 §7.1) decoded into lines: no I/O, fed whatever the socket gave.

A watch stream is a chunked body of JSON lines. A real API server sends each event as its own chunk, so a
reader that lets ``http.client`` decode the framing pays several Python-level reads per event; this decoder
takes what one socket read returned (any number of chunks, or a piece of one) and gives back the complete
lines in it, so the caller reads in large blocks and parses a batch of lines per read.

What it accepts: a chunk size in hex (either case), optional chunk extensions (``;name=value``, ignored),
CRLF (a bare LF is tolerated, as ``http.client`` does), the data, CRLF; the last chunk (size 0) and its
trailer fields (ignored) up to the empty line. A line may span chunks and reads; empty lines are dropped;
a last line without a newline is given by ``finish``. Anything else is a ``FramingError`` naming what was
found where.

Bounded memory: a size or trailer line longer than ``MAX_HEAD`` and a line of data longer than ``max_line``
(a stream that never sends a newline) are errors; a line bigger than one read is kept as a list of pieces,
joined once when its newline arrives.
"""

from __future__ import annotations

import re

MAX_HEAD = 64 * 1024
"""Bytes a chunk-size line (with extensions) or a trailer line may take, as ``http.client`` allows."""

MAX_LINE = 64 * 1024 * 1024
"""Bytes one line of data may take: far above any object the API server stores (etcd caps a request at 1.5 MB)."""

_SIZE, _DATA_END, _TRAILER, _DONE = range(4)
_HEX = frozenset(b"0123456789abcdefABCDEF")
_PLAIN_SIZE = re.compile(rb"([0-9a-fA-F]{1,16})\r\n")
"""A size line as servers send it (no extension, no blanks): the fast path's; anything else takes the general one."""


class FramingError(ValueError):
    """The body is not valid chunked transfer coding, or a line exceeds the bound."""


class ChunkedLines:
    """The state of one chunked body between reads: ``feed`` bytes as they arrive, get complete lines back.

    ``chunked=False`` reads a body without framing (a ``Content-Length`` or close-delimited body) into lines
    the same way. ``done`` turns true once the last chunk and its trailers were read; bytes fed after that are
    an error (the server sent more than the body).
    """

    def __init__(self, *, chunked: bool = True, max_line: int = MAX_LINE) -> None:
        self._state = _SIZE if chunked else _DATA_END
        self._chunked = chunked
        self._left = 0 if chunked else -1  # bytes of the current chunk's data still to come; -1: no framing
        self._head = b""  # bytes of framing (a size line, the CRLF after data, a trailer line) not complete yet
        self._line: list[bytes] = []  # pieces of a line whose newline has not arrived
        self._line_size = 0
        self._max_line = max_line

    @property
    def done(self) -> bool:
        return self._state == _DONE

    def feed(self, data: bytes) -> list[bytes]:
        """The lines completed by ``data`` (without their newlines), in order."""
        if self._left < 0:
            return self._lines([data]) if data else []
        if self._head:
            data, self._head = self._head + data, b""
        pieces: list[bytes] = []
        pos, end = 0, len(data)
        while 0 <= pos < end:  # each step returns where the next starts, -1 when the rest waits for more bytes
            if self._left:
                pos = self._take(data, pos, end, pieces)
            elif self._state == _SIZE:
                pos = self._chunk_at(data, pos, end, pieces)
            elif self._state == _DATA_END:
                pos = self._data_end(data, pos, end)
            else:
                pos = self._framing_line(data, pos, end)
        return self._lines(pieces) if pieces else []

    def _chunk_at(self, data: bytes, pos: int, end: int, pieces: list[bytes]) -> int:
        """At a size line: a whole chunk framed plainly in this read is taken at once, else the line is read."""
        plain = _PLAIN_SIZE.match(data, pos)
        if plain is not None:
            start = plain.end()
            stop = start + int(plain[1], 16)
            if start < stop and data[stop:stop + 2] == b"\r\n":
                pieces.append(data[start:stop])
                return stop + 2
        return self._framing_line(data, pos, end)

    def _take(self, data: bytes, pos: int, end: int, pieces: list[bytes]) -> int:
        """The current chunk's data, as much of it as this read holds."""
        left = self._left
        take = left if left <= end - pos else end - pos
        pieces.append(data[pos:pos + take] if take != end or pos else data)
        self._left = left - take
        if not self._left:
            self._state = _DATA_END
        return pos + take

    def _data_end(self, data: bytes, pos: int, end: int) -> int:
        """The CRLF after a chunk's data."""
        if end - pos < 2:
            if data[pos:] != b"\r":
                raise FramingError(f"expected CRLF after chunk data, got {data[pos:pos + 2]!r}")
            self._head = data[pos:]
            return -1
        if data[pos] != 13 or data[pos + 1] != 10:
            raise FramingError(f"expected CRLF after chunk data, got {data[pos:pos + 2]!r}")
        self._state = _SIZE
        return pos + 2

    def finish(self) -> list[bytes]:
        """At the end of the body (the last chunk read, or the connection closed where a body without framing
        ends): the last line if it had no newline. FramingError when a chunked body was cut before its last chunk."""
        if self._chunked and self._state != _DONE:
            raise FramingError("the body ended before its last chunk")
        rest, self._line, self._line_size = b"".join(self._line), [], 0
        return [rest] if rest.strip() else []

    def _framing_line(self, data: bytes, pos: int, end: int) -> int:
        """Consume one size or trailer line at ``pos``; the position after it, or -1 when it is incomplete."""
        if self._state == _DONE:
            raise FramingError(f"data after the last chunk: {data[pos:pos + 20]!r}")
        eol = data.find(b"\n", pos)
        if eol < 0:
            if end - pos > MAX_HEAD:
                raise FramingError(f"chunk size line longer than {MAX_HEAD} bytes")
            self._head = data[pos:]
            return -1
        if eol - pos > MAX_HEAD:
            raise FramingError(f"chunk size line longer than {MAX_HEAD} bytes")
        line = data[pos:eol]
        if self._state == _TRAILER:
            if line in (b"", b"\r"):
                self._state = _DONE
            return eol + 1
        size = chunk_size(line)
        if size:
            self._left = size
        else:
            self._state = _TRAILER
        return eol + 1

    def _lines(self, pieces: list[bytes]) -> list[bytes]:
        data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        first = data.find(b"\n")
        if first < 0:
            self._line.append(data)
            self._line_size += len(data)
            if self._line_size > self._max_line:
                raise FramingError(f"a line of more than {self._max_line} bytes without a newline")
            return []
        if first == len(data) - 1:  # the only newline ends the data, as a server sends an event: no split (a byte loop)
            line = data[:-1]
            if self._line:
                self._line.append(line)
                line = b"".join(self._line)
                self._line, self._line_size = [], 0
            return [line] if line else []
        if self._line:
            self._line.append(data)
            data = b"".join(self._line)
            self._line, self._line_size = [], 0
        lines = data.split(b"\n")
        last = lines.pop()
        if last:
            if len(last) > self._max_line:
                raise FramingError(f"a line of more than {self._max_line} bytes without a newline")
            self._line, self._line_size = [last], len(last)
        if len(lines) == 1 and lines[0]:
            return lines
        return [line for line in lines if line]


def chunk_size(line: bytes) -> int:
    """The size of a chunk-size line (``1a2F;ext=1`` with its CR, without its LF); FramingError otherwise."""
    digits = line.split(b";", 1)[0].strip(b" \t\r")
    if not digits or len(digits) > 16 or not _HEX.issuperset(digits):
        raise FramingError(f"invalid chunk size line {line[:40]!r}")
    return int(digits, 16)
