"""An audit log's lines, from wherever it is: files of JSON lines, gzip, a folder (a rotated set), ``-`` for stdin,
object-storage URLs (what ``inspect`` and ``validate`` accept: ``trace/files/objectstore``). I/O, injected.

Streaming: one line in memory at a time, each read with a bound (``lines.MAX_LINE_BYTES``): a longer line is reported
as one bad line and skipped to its end without being held. gzip is told by its magic bytes, not by the name (rotated
files are compressed by whatever rotates them). A folder gives its files in name order, hidden files left out; the
order does not matter to what a log gives (each object's writes are taken in time order, the same line met twice in
overlapping files is taken once, by its ``auditID``).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, ContextManager, Iterator, Sequence

from kubectl_sktrace.audit.lines import MAX_LINE_BYTES
from kubectl_sktrace.errors import UsageError

TOO_LONG = b""  # yielded in place of a line longer than MAX_LINE_BYTES (an empty line is never yielded)
_CHUNK = 1 << 20


class AuditLogError(UsageError):
    """A log that cannot be read on (a file missing, a gzip stream broken off): nothing is written."""


@dataclass(frozen=True)
class Source:
    """One file, object or stream of a log."""

    name: str
    open: Callable[[], ContextManager[IO[bytes]]]


def expand(paths: Sequence[str], *, stdin: IO[bytes], open_url: Callable[[str], ContextManager[IO[bytes]]],
           is_url: Callable[[str], bool]) -> list[Source]:
    """The sources ``--audit-log`` names, in order; a folder is its files; UsageError for a path that is none."""
    out: list[Source] = []
    for path in paths:
        if path == "-":
            if any(s.name == "-" for s in out):
                raise UsageError("'-' (stdin) is named twice in --audit-log; name it once")
            out.append(Source("-", lambda: contextlib.nullcontext(stdin)))
        elif is_url(path):
            out.append(Source(path, lambda url=path: open_url(url)))  # type: ignore[misc]
        elif os.path.isdir(path):
            files = sorted(p for p in Path(path).iterdir() if p.is_file() and not p.name.startswith("."))
            if not files:
                raise UsageError(f"{path}: the folder holds no file; name the folder that holds the audit log's files")
            out += [_file(str(p)) for p in files]
        elif os.path.isfile(path):
            out.append(_file(path))
        else:
            raise UsageError(f"{path}: no such file or folder; name the audit log's files (--audit-log FILE...), a folder, or -")
    return out


def _file(path: str) -> Source:
    return Source(path, lambda: open(path, "rb"))


def read_lines(source: Source) -> Iterator[tuple[int, bytes]]:
    """``(line number, bytes)`` of each non-empty line (``TOO_LONG`` for a line over the bound); AuditLogError when the
    source breaks off (a gzip stream truncated or corrupt, a read error)."""
    try:
        with source.open() as raw:
            stream = _decompressed(raw)
            yield from _bounded_lines(stream)
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise AuditLogError(f"{source.name}: the gzip stream is broken ({exc}); nothing was written: "
                            "pass the file's intact part, or leave the file out") from None
    except OSError as exc:
        raise AuditLogError(f"{source.name}: cannot be read ({exc.strerror or exc}); nothing was written") from None


def _decompressed(raw: IO[bytes]) -> Any:
    """The stream, inflated when it is gzip (told by its magic bytes); given ``peek`` when it has none (a pipe)."""
    buffered: Any = raw if hasattr(raw, "peek") else io.BufferedReader(raw)
    if buffered.peek(2)[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=buffered, mode="rb")
    return buffered


def _bounded_lines(stream: Any) -> Iterator[tuple[int, bytes]]:
    number = 0
    while True:
        line = stream.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        number += 1
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while True:  # the rest of the long line, read and dropped in chunks
                rest = stream.readline(_CHUNK)
                if not rest or rest.endswith(b"\n"):
                    break
            yield number, TOO_LONG
            continue
        line = line.rstrip(b"\r\n")
        if line.strip():
            yield number, line
