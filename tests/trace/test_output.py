"""``export -O PATH`` never changes what PATH is: files are replaced whole, symlinks kept, devices, FIFOs and
descriptors streamed into, and a binary trace refused on a terminal. Run through the console script."""

from __future__ import annotations

import os
import pty
import resource
import signal
import stat
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import obj
from reliability_support import EXE, assert_one_error, private_env, run_cli

from kubectl_sktrace.errors import CacheError, UsageError
from kubectl_sktrace.trace.files.output import write_output

NOW = 1_800_000_000
WINDOW = ["-s", f"@{NOW - 1800}", "-t", f"@{NOW}"]


@pytest.fixture
def cache(cache_builder: Any) -> Path:
    b = cache_builder
    b.run(started=NOW - 3600, stopped=NOW)
    b.apply(NOW - 3000, obj("Deployment", "web", spec={"replicas": 1}))
    b.apply(NOW - 600, obj("Deployment", "web", spec={"replicas": 2}))
    b.delete(NOW - 100, obj("Deployment", "web"))
    return Path(b.path)


def _export(cache: Path, out: str, home: Path, *extra: str, **popen: Any) -> subprocess.CompletedProcess[bytes]:
    popen.setdefault("stdout", subprocess.PIPE)
    return subprocess.run([EXE, "export", "--cache", str(cache), *WINDOW, "-O", out, *extra], env=private_env(home),
                          stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60, check=False, **popen)


@pytest.fixture
def expected(cache: Path, tmp_path: Path) -> bytes:
    """The trace bytes, as a new regular file gets them."""
    out = tmp_path / "reference.sktrace"
    done = _export(cache, str(out), tmp_path)
    assert done.returncode == 0, done.stderr
    return out.read_bytes()


def _reader(path: Path, into: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(path, "rb") as handle:
            into.append(handle.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


@pytest.mark.slow
def test_a_regular_file_is_replaced_whole_and_keeps_its_mode(cache: Path, expected: bytes, tmp_path: Path) -> None:
    out = tmp_path / "t.sktrace"
    out.write_bytes(b"old trace")
    out.chmod(0o600)
    done = _export(cache, str(out), tmp_path)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == expected
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []


@pytest.mark.slow
def test_a_symlink_is_kept_and_its_target_rewritten(cache: Path, expected: bytes, tmp_path: Path) -> None:
    (tmp_path / "traces").mkdir()
    real = tmp_path / "traces" / "real.txt"
    real.write_bytes(b"old")
    real.chmod(0o640)
    link = tmp_path / "link.sktrace"
    link.symlink_to("traces/real.txt")
    done = _export(cache, str(link), tmp_path)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and os.readlink(link) == "traces/real.txt"
    assert real.read_bytes() == expected
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert sorted(p.name for p in (tmp_path / "traces").iterdir()) == ["real.txt"]


@pytest.mark.slow
def test_a_dangling_symlink_creates_its_target(cache: Path, expected: bytes, tmp_path: Path) -> None:
    link = tmp_path / "link.sktrace"
    link.symlink_to("new.sktrace")
    done = _export(cache, str(link), tmp_path)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and (tmp_path / "new.sktrace").read_bytes() == expected


@pytest.mark.slow
def test_a_fifo_is_streamed_into_and_stays_a_fifo(cache: Path, expected: bytes, tmp_path: Path) -> None:
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    os.link(fifo, tmp_path / "same.fifo")  # reaches the FIFO even if the path were renamed over
    got: list[bytes] = []
    reader = _reader(fifo, got)
    try:
        done = _export(cache, str(fifo), tmp_path)
        reader.join(10)
    finally:
        if reader.is_alive():
            os.close(os.open(tmp_path / "same.fifo", os.O_WRONLY | os.O_NONBLOCK))
            reader.join(10)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got == [expected]


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_character_device_is_written_into_and_stays_a_device(cache: Path, tmp_path: Path) -> None:
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.stat("/dev/null").st_rdev)
    done = _export(cache, str(null), tmp_path)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISCHR(os.lstat(null).st_mode) and os.lstat(null).st_rdev == os.stat("/dev/null").st_rdev


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/full"), reason="making a device node needs root")
def test_a_full_device_is_one_error_and_stays_a_device(cache: Path, tmp_path: Path) -> None:
    full = tmp_path / "full"
    os.mknod(full, 0o666 | stat.S_IFCHR, os.stat("/dev/full").st_rdev)
    run = run_cli(["export", "--cache", str(cache), *WINDOW, "-O", str(full)], home=tmp_path)
    line = assert_one_error(run)
    assert line == f"Error: cannot write {full} (No space left on device); free space or pass another -O/--output-file"
    assert stat.S_ISCHR(os.lstat(full).st_mode)


@pytest.mark.slow
def test_dev_fd_of_a_pipe_gets_the_bytes(cache: Path, expected: bytes, tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(_drain(read_end)), daemon=True)
    reader.start()
    try:
        done = _export(cache, f"/dev/fd/{write_end}", tmp_path, pass_fds=(write_end,))
    finally:
        os.close(write_end)
    reader.join(10)
    assert done.returncode == 0, done.stderr
    assert got == [expected]


def _drain(fd: int) -> bytes:
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


@pytest.mark.slow
def test_dash_into_a_pipe_writes_the_trace(cache: Path, expected: bytes, tmp_path: Path) -> None:
    done = _export(cache, "-", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected


@pytest.mark.slow
@pytest.mark.parametrize("out", ["-", "/dev/stdout"])
def test_a_binary_trace_is_refused_on_a_terminal(cache: Path, tmp_path: Path, out: str) -> None:
    controller, terminal = pty.openpty()
    try:
        done = _export(cache, out, tmp_path, stdout=terminal)
    finally:
        os.close(terminal)
        os.close(controller)
    assert done.returncode == 1
    assert done.stderr.decode() == (
        "Error: refusing to write a binary trace to a terminal; redirect it (-O - > file) or pass --format yaml\n"
    )


@pytest.mark.slow
def test_yaml_is_written_to_a_terminal(cache: Path, tmp_path: Path) -> None:
    controller, terminal = pty.openpty()
    try:
        done = _export(cache, "-", tmp_path, "--format", "yaml", stdout=terminal)
        shown = os.read(controller, 65536)
    finally:
        os.close(terminal)
        os.close(controller)
    assert done.returncode == 0, done.stderr
    assert shown.startswith(b"version: 2\r\n")


def _file_size_limit(limit: int) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@pytest.mark.slow
def test_a_failed_export_leaves_the_old_file_untouched(cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.sktrace"
    out.write_bytes(b"old trace")
    out.chmod(0o640)
    run = run_cli(["export", "--cache", str(cache), *WINDOW, "-O", str(out)], home=tmp_path,
                  preexec_fn=lambda: _file_size_limit(64))
    line = assert_one_error(run)
    assert line == f"Error: cannot write {out} (File too large); free space or pass another -O/--output-file"
    assert out.read_bytes() == b"old trace" and stat.S_IMODE(out.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_a_failing_writer_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.sktrace"
    target.write_bytes(b"old")

    def fail(stream: Any) -> None:
        stream.write(b"partial")
        raise CacheError("boom")

    with pytest.raises(CacheError):
        write_output(str(target), fail, binary=True, stdout=None)  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.sktrace"]


def test_a_missing_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as info:
        write_output(str(tmp_path / "nope" / "out.sktrace"), lambda s: None, binary=True, stdout=None)  # type: ignore[arg-type]
    assert str(info.value) == (
        f"cannot write {tmp_path}/nope/out.sktrace: the directory {tmp_path}/nope does not exist; create it or pass another -O/--output-file"
    )
