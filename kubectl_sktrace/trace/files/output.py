"""Where ``export -O PATH`` writes, and how, so that whatever is at PATH keeps being what it was (docs/spec.md §2).

- ``-`` is standard output, written as it is (a pipe, a file the shell opened, a terminal).
- ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N`` and ``/proc/self/fd/N`` of a descriptor this process holds
  (``-O >(gzip > t.gz)``) are that descriptor, written as it is, like ``-``.
- A regular file, a new path, or a symlink to either: the trace goes to a temporary file beside the real file
  (the symlink's target, resolved) and is renamed over it only once written whole and synced, so the path holds
  the old trace or the new one, never a partial one. The old file's permission bits (and, when allowed, owner)
  are kept; a symlink stays a symlink. A hard link to the old file keeps the old trace, as with ``sed -i``.
- Anything else that exists (a character device, a FIFO, a block device) is opened and streamed into: it is
  never renamed over, so a device stays a device and a FIFO's reader gets the bytes.
- A directory is refused.
- ``file://PATH`` is PATH; another URL (``s3://bucket/key``, ``gs://``, ``az://``) is an object, written whole or
  not at all by ``objectstore``.

A binary trace is refused on a terminal before anything is written, as ``gzip`` refuses to compress to one.
A streamed target cannot be rolled back: a failed export leaves there whatever it had written.

A private file (``write_private``: the pseudonym map) is stricter: only a new path or a regular file, replaced by a
new file of mode 0600 written beside it and renamed over it. A symlink, a device or a FIFO is refused, never
followed or opened, so that another user's link in a shared directory cannot aim our secret at their file or
truncate and chmod one of ours.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import IO, Callable, Iterator, TypeVar

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.trace.files import objectstore

T = TypeVar("T")

_DESCRIPTOR_PATH = re.compile(r"/(?:dev/fd|proc/self/fd)/(\d+)")
_STANDARD_STREAMS = {"/dev/stdout": 1, "/dev/stderr": 2}


def write_output(path: str, write: Callable[[IO[bytes]], T], *, binary: bool, stdout: IO[bytes]) -> T:
    """Run ``write`` on the stream that ``-O path`` names (module docstring) and return what it returns.
    ``binary``: the bytes are not text, so a terminal is refused."""
    if path == "-":
        _refuse_terminal(stdout, binary=binary)
        result = _guarded("stdout", lambda: write(stdout))
        _guarded("stdout", stdout.flush)
        return result
    if objectstore.is_remote(path):
        return objectstore.write_object(path, write)
    path = objectstore.file_url_path(path) or path
    fd = _descriptor(path)
    if fd is not None:
        return _stream_into(path, os.dup(fd), write, binary=binary)
    target = Path(path).expanduser()
    try:
        kind = os.stat(target).st_mode
    except FileNotFoundError:
        return _replace(path, _resolved(target), write, mode=None)
    except OSError as exc:
        raise UsageError(f"cannot write {path} ({exc.strerror}); pass another -O/--output-file") from exc
    if stat.S_ISDIR(kind):
        raise UsageError(f"cannot write {path}: it is a directory; pass a file path with -O/--output-file")
    if stat.S_ISREG(kind):
        return _replace(path, _resolved(target), write, mode=kind)
    try:
        opened = os.open(target, os.O_WRONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise UsageError(f"cannot write {path} ({exc.strerror}); pass another -O/--output-file") from exc
    return _stream_into(path, opened, write, binary=binary)


def write_private(path: str, data: bytes, *, what: str, flag: str) -> None:
    """``data`` as the whole of the file ``path`` (a new path or a regular file), readable by its owner alone;
    ``what`` and ``flag`` name it in errors (the module docstring says what is refused)."""
    try:
        kind = os.lstat(path).st_mode
    except FileNotFoundError:
        kind = None
    except OSError as exc:
        raise UsageError(f"cannot write {what} {path} ({exc.strerror}); pass another {flag}") from exc
    if kind is not None and not stat.S_ISREG(kind):
        found = "a symbolic link" if stat.S_ISLNK(kind) else "a directory" if stat.S_ISDIR(kind) else "not a regular file"
        raise UsageError(f"cannot write {what} {path}: it is {found}, and {what} is written only to a new path or a regular "
                         f"file; pass another {flag}")
    parent = os.path.dirname(os.path.abspath(path))
    try:
        fd, temp_name = tempfile.mkstemp(dir=parent, prefix=f".{os.path.basename(path)}.", suffix=".tmp")  # mode 0600
    except OSError as exc:
        raise UsageError(f"cannot write {what} {path} ({exc.strerror}); pass a writable {flag}") from exc
    try:
        with _closing(os.fdopen(fd, "wb")) as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise UsageError(f"cannot write {what} {path} ({exc.strerror or exc}); free space or pass another {flag}") from exc


def _resolved(target: Path) -> Path:
    """Where a symlink leads (written there, so the link stays), else the path itself."""
    return Path(os.path.realpath(target)) if target.is_symlink() else target


def _descriptor(path: str) -> int | None:
    """The open descriptor of this process that ``path`` names, if it names one."""
    absolute = os.path.abspath(path)
    match = _DESCRIPTOR_PATH.fullmatch(absolute)
    fd = int(match.group(1)) if match else _STANDARD_STREAMS.get(absolute)
    if fd is None:
        return None
    try:
        os.fstat(fd)
    except OSError:
        return None
    return fd


def _refuse_terminal(stream: IO[bytes], *, binary: bool) -> None:
    if binary and stream.isatty():
        raise UsageError("refusing to write a binary trace to a terminal; redirect it (-O - > file) or pass --format yaml")


def _stream_into(path: str, fd: int, write: Callable[[IO[bytes]], T], *, binary: bool) -> T:
    with _closing(os.fdopen(fd, "wb")) as handle:
        _refuse_terminal(handle, binary=binary)
        result = _guarded(path, lambda: write(handle))
        _guarded(path, handle.flush)
    return result


def _replace(path: str, real: Path, write: Callable[[IO[bytes]], T], *, mode: int | None) -> T:
    parent = real.parent
    if not parent.is_dir():
        raise UsageError(f"cannot write {path}: the directory {parent} does not exist; create it or pass another -O/--output-file")
    try:
        fd, temp_name = tempfile.mkstemp(dir=parent, prefix=f".{real.name}.", suffix=".tmp")
    except OSError as exc:
        raise UsageError(f"cannot write in {parent} ({exc.strerror}); pass a writable -O/--output-file") from exc
    try:
        _take_over_mode(fd, real, mode=mode)
        with _closing(os.fdopen(fd, "wb")) as handle:
            result = _guarded(path, lambda: write(handle))
            _guarded(path, handle.flush)
            _guarded(path, lambda: os.fsync(handle.fileno()))
        os.replace(temp_name, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    return result


def _take_over_mode(fd: int, real: Path, *, mode: int | None) -> None:
    """A new file gets the umask's usual mode (mkstemp's 0600 would hide it); a replaced one keeps its own."""
    if mode is None:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        return
    os.fchmod(fd, stat.S_IMODE(mode) & 0o777)
    with contextlib.suppress(OSError):
        old = os.stat(real)
        if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
            os.fchown(fd, old.st_uid, old.st_gid)


@contextlib.contextmanager
def _closing(handle: IO[bytes]) -> Iterator[IO[bytes]]:
    """Close without letting a second failed flush hide the error already reported."""
    try:
        yield handle
    finally:
        with contextlib.suppress(OSError):
            handle.close()


def _guarded(path: str, action: Callable[[], T]) -> T:
    """Turn a failed write (a full disk, a device that refuses) into the user's error; a closed pipe stays a
    BrokenPipeError, which the CLI ends quietly as ``| head`` expects."""
    try:
        return action()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise UsageError(f"cannot write {path} ({exc.strerror or exc}); free space or pass another -O/--output-file") from exc
