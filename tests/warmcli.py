"""``kubectl-sktrace`` run as a process of its own, forked from a warm interpreter instead of started cold.

Hundreds of tests run the console script once each and read what a user reads: the exit code, stdout and
stderr. A cold start costs about 0.3 s of CPU, nearly all of it the interpreter and the product's imports,
which the tests do not test (the console scripts' own start is tested where it matters, in
``test_layers.py``, ``test_krew.py`` and the terminal tests). So a warm interpreter, started once per test
process, imports what the console script imports (and what the client imports to read a cluster) and forks
one child per run; the child is a real process with its own pid, environment, working directory, standard
streams and exit code, and runs exactly what the console script runs: ``sys.exit(kubectl_sktrace.cli.main())``.
An exception that escapes is printed the way the interpreter prints it, so a traceback is seen as a traceback.

The warm interpreter is a process of its own and single-threaded, so forking it is safe (forking pytest,
whose plugins run threads, would not be). A request carries the arguments, environment and working directory,
the run's three standard streams as file descriptors, and a socket for the answer; for each, the warm
interpreter forks a waiter, which forks the run and answers with its pid, then its wait status. Runs may
overlap, as a user's commands do (a second recorder started while the first records). It ends when its
socket closes.
"""

from __future__ import annotations

import json
import threading
import os
import signal
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

EXE = str(Path(sys.executable).with_name("kubectl-sktrace"))


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: bytes
    stderr: bytes


class WarmCli:
    """The client side: one warm interpreter, started at the first run."""

    def __init__(self) -> None:
        self._sock: socket.socket | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()  # one request at a time on the socket; the runs themselves overlap

    def _start(self) -> socket.socket:
        if self._sock is None or self._proc is None or self._proc.poll() is not None:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            self._proc = subprocess.Popen([sys.executable, __file__, str(theirs.fileno())], pass_fds=[theirs.fileno()],
                                          stdin=subprocess.DEVNULL)
            theirs.close()
            self._sock = ours
        return self._sock

    def run(self, args: Sequence[str], *, env: Mapping[str, str], timeout: float) -> Finished:
        with open(os.devnull, "rb") as stdin, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            with mine:
                request = json.dumps({"argv": [EXE, *args], "env": dict(env), "cwd": os.getcwd()}).encode()
                with self._lock:
                    socket.send_fds(self._start(), [request], [stdin.fileno(), out.fileno(), err.fileno(), theirs.fileno()])
                theirs.close()
                pid = int(mine.recv(64))
                mine.settimeout(timeout)
                try:
                    status = int(mine.recv(64))
                except (TimeoutError, socket.timeout):
                    os.kill(pid, signal.SIGKILL)
                    raise subprocess.TimeoutExpired([EXE, *args], timeout) from None
            out.seek(0)
            err.seek(0)
            return Finished(os.waitstatus_to_exitcode(status), out.read(), err.read())

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._proc is not None:
            self._proc.wait(timeout=10)
            self._proc = None


def _child(argv: list[str], env: dict[str, str], cwd: str, fds: list[int]) -> None:
    """In the forked child: become the user's process, run what the console script runs, never return."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.argv = argv
        from kubectl_sktrace.__main__ import main

        try:
            main()
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc.code)
        except BaseException:  # what the interpreter does with an exception nobody caught
            import traceback

            traceback.print_exc()
            code = 1
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - as at the interpreter's exit, a failed flush is said and the code is 120
            code = 120
    finally:
        os._exit(code)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def serve(fd: int) -> None:
    """The warm interpreter: import what the console script imports, then fork a waiter per request."""
    import kubectl_sktrace.cli  # noqa: F401 - warm: the imports every run of the console script makes
    from kubectl_sktrace.kube.lazy import lighten

    lighten()  # and those of every run that reads a cluster, as the client makes them (kube/client.py)
    import kubernetes.client.api_client  # noqa: F401
    import kubernetes.config.kube_config  # noqa: F401

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the waiters are reaped by the kernel
    sock = socket.socket(fileno=fd)
    while True:
        message, fds, _flags, _addr = socket.recv_fds(sock, 1 << 20, 4)
        if not message:
            return
        if os.fork() == 0:
            sock.close()
            _wait_for_run(json.loads(message), fds)
        for received in fds:
            os.close(received)


def _wait_for_run(request: dict[str, object], fds: list[int]) -> None:
    """In the waiter: fork the run, answer its pid and then its wait status, never return."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    *streams, answer = fds
    pid = os.fork()
    if pid == 0:
        os.close(answer)
        _child(request["argv"], request["env"], request["cwd"], streams)  # type: ignore[arg-type]
    for stream in streams:
        os.close(stream)
    reply = socket.socket(fileno=answer)
    try:
        reply.send(str(pid).encode())
        _, status = os.waitpid(pid, 0)
        reply.send(str(status).encode())
    finally:
        os._exit(0)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
