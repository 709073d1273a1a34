"""kube/chunked.py: RFC 9112 §7.1 chunked transfer coding decoded into lines, fed as a socket would give it."""

from __future__ import annotations

import pytest

from kubectl_sktrace.kube.chunked import (
    MAX_HEAD,
    ChunkedLines,
    FramingError,
    chunk_size,
)


def chunk(data: bytes, *, size: bytes | None = None, ext: bytes = b"") -> bytes:
    return (size if size is not None else b"%x" % len(data)) + ext + b"\r\n" + data + b"\r\n"


LAST = b"0\r\n\r\n"
A = b'{"type":"ADDED","object":{"metadata":{"name":"a"}}}'
B = b'{"type":"MODIFIED","object":{"metadata":{"name":"bb"}}}'


def decode(stream: bytes, *, cuts: list[int] | None = None, max_line: int = 1 << 20) -> tuple[list[bytes], bool]:
    """Every line ``stream`` holds, fed in pieces cut at ``cuts``; and whether the body ended."""
    lines = ChunkedLines(max_line=max_line)
    got: list[bytes] = []
    bounds = [0, *(cuts or []), len(stream)]
    for start, end in zip(bounds, bounds[1:]):
        got += lines.feed(stream[start:end])
    if lines.done:
        got += lines.finish()
    return got, lines.done


CASES = {
    "one event per chunk": (chunk(A + b"\n") + chunk(B + b"\n") + LAST, [A, B]),
    "several events in one chunk": (chunk(A + b"\n" + B + b"\n") + LAST, [A, B]),
    "a line spanning chunks": (chunk(A[:7]) + chunk(A[7:30]) + chunk(A[30:] + b"\n" + B[:3]) + chunk(B[3:] + b"\n") + LAST, [A, B]),
    "size in upper case hex": (chunk(A + b"\n", size=b"%X" % (len(A) + 1)) + LAST, [A]),
    "size in lower case hex with leading zeros": (chunk(A + b"\n", size=b"00%x" % (len(A) + 1)) + LAST, [A]),
    "chunk extensions ignored": (chunk(A + b"\n", ext=b';name=value;q="x;y"') + chunk(B + b"\n", ext=b";flag") + LAST, [A, B]),
    "last line without a newline": (chunk(A + b"\n" + B) + LAST, [A, B]),
    "empty lines dropped": (chunk(b"\n" + A + b"\n\n") + LAST, [A]),
    "trailer fields ignored": (chunk(A + b"\n") + b"0\r\nX-Trailer: 1\r\nOther: two\r\n\r\n", [A]),
    "last chunk with an extension": (chunk(A + b"\n") + b"0;done\r\n\r\n", [A]),
    "bare LF after the size": (b"%x\n" % (len(A) + 1) + A + b"\n\r\n" + LAST, [A]),
}


@pytest.mark.parametrize("stream, expected", CASES.values(), ids=CASES.keys())
def test_lines_whole(stream: bytes, expected: list[bytes]) -> None:
    assert decode(stream) == (expected, True)


@pytest.mark.parametrize("stream, expected", CASES.values(), ids=CASES.keys())
def test_lines_cut_at_every_byte(stream: bytes, expected: list[bytes]) -> None:
    for cut in range(1, len(stream)):
        assert decode(stream, cuts=[cut]) == (expected, True), cut


@pytest.mark.parametrize("stream, expected", CASES.values(), ids=CASES.keys())
def test_lines_fed_one_byte_at_a_time(stream: bytes, expected: list[bytes]) -> None:
    assert decode(stream, cuts=list(range(1, len(stream)))) == (expected, True)


def test_lines_come_as_soon_as_their_newline_arrives() -> None:
    lines = ChunkedLines()
    assert lines.feed(chunk(A[:10])) == []
    assert lines.feed(chunk(A[10:] + b"\n" + B[:4])) == [A]
    assert lines.feed(chunk(B[4:] + b"\n")) == [B]
    assert not lines.done
    assert lines.feed(LAST) == [] and lines.done


GARBAGE = {
    "not hex": (b"zz\r\n", "invalid chunk size line b'zz\\r'"),
    "empty size": (b"\r\n", "invalid chunk size line b'\\r'"),
    "negative": (b"-5\r\nhello\r\n", "invalid chunk size line b'-5\\r'"),
    "0x prefix": (b"0x5\r\nhello\r\n", "invalid chunk size line b'0x5\\r'"),
    "size too big": (b"1" * 17 + b"\r\n", "invalid chunk size line"),
    "no CRLF after data": (b"5\r\nhelloXY", "expected CRLF after chunk data, got b'XY'"),
    "LF alone after data": (b"5\r\nhello\nX", "expected CRLF after chunk data, got b'\\nX'"),
    "data after the last chunk": (chunk(A) + LAST + b"5\r\n", "data after the last chunk: b'5\\r\\n'"),
    "a size line without end": (b"a" * (MAX_HEAD + 1), f"chunk size line longer than {MAX_HEAD} bytes"),
}


@pytest.mark.parametrize("stream, message", GARBAGE.values(), ids=GARBAGE.keys())
def test_garbage_is_a_clear_error(stream: bytes, message: str) -> None:
    with pytest.raises(FramingError) as info:
        decode(stream)
    assert str(info.value).startswith(message)


def test_a_line_that_never_ends_is_bounded() -> None:
    lines = ChunkedLines(max_line=1000)
    for _ in range(3):
        assert lines.feed(chunk(b"x" * 300)) == []
    with pytest.raises(FramingError, match="^a line of more than 1000 bytes without a newline$"):
        lines.feed(chunk(b"x" * 300))


def test_a_line_bigger_than_any_read_is_joined_once_whole() -> None:
    line = b'{"big":"' + b"y" * 200_000 + b'"}'
    stream = chunk(line + b"\n") + LAST
    got, done = decode(stream, cuts=list(range(4096, len(stream), 4096)))
    assert got == [line] and done


def test_a_body_cut_before_its_last_chunk_cannot_finish() -> None:
    lines = ChunkedLines()
    assert lines.feed(chunk(A + b"\n")) == [A]
    with pytest.raises(FramingError, match="^the body ended before its last chunk$"):
        lines.finish()


def test_without_framing_the_bytes_are_lines_and_the_end_gives_the_last() -> None:
    lines = ChunkedLines(chunked=False)
    assert lines.feed(A + b"\n" + B[:5]) == [A]
    assert lines.feed(B[5:]) == []
    assert lines.finish() == [B]


@pytest.mark.parametrize("line, size", [(b"0", 0), (b"1a", 26), (b"1A\r", 26), (b"FFFF;x=1\r", 65535), (b" 10 \r", 16)])
def test_chunk_size(line: bytes, size: int) -> None:
    assert chunk_size(line) == size
