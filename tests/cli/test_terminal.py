"""``kubectl sktrace start`` in a real terminal, as a person sees it.

The real command runs in an interactive shell inside tmux (a real pseudo-terminal, with its width, its line
discipline and its Ctrl-C), against the emulator; the tests read the screen with ``tmux capture-pane``. What
they hold the progress output to: one status line redrawn in place, never a scroll of them; warnings and log
lines on lines of their own, never glued onto the status line; a narrow window does not wrap it; Ctrl-C
ends with the summary.

Every wait is for something seen on the screen (or in the cache), polled against a generous deadline: the
machine may be busy, and nothing here depends on how fast it is.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest
from reliability_support import private_env

from sktrace_emulator import Emulator
from sktrace_emulator.builders import deployment_object

TMUX = shutil.which("tmux")
pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(TMUX is None, reason="tmux is not installed (Debian package tmux; .ci/run installs it when it can)"),
]

DEADLINE = 60.0
BIN = str(Path(sys.executable).parent)
KUBECTL = ["kubectl", "sktrace"] if shutil.which("kubectl") else ["kubectl-sktrace"]
EXIT = re.compile(r"^\[exit (\d+)\]$", re.M)


class Terminal:
    """An interactive shell in a tmux window of ``columns`` x ``rows``, on a private tmux server."""

    def __init__(self, home: Path, *, columns: int, rows: int = 50) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="skt-"))  # a short path: a unix socket's name is limited
        self.socket = str(self.dir / "tmux")
        env = private_env(home, {"PATH": f"{BIN}:{os.environ.get('PATH', '')}", "PS1": "$ "})
        self._tmux("new-session", "-d", "-s", "t", "-x", str(columns), "-y", str(rows), "bash --norc --noprofile", env=env)

    def _tmux(self, *args: str, env: dict[str, str] | None = None) -> str:
        assert TMUX is not None
        return subprocess.run([TMUX, "-S", self.socket, *args], check=True, capture_output=True, text=True, env=env,
                              timeout=30).stdout

    def type(self, command: str) -> None:
        """Type a command line and Enter; the shell then prints ``[exit N]`` when it ends."""
        self._tmux("send-keys", "-t", "t", "-l", f'{command}; echo "[exit $?]"')
        self._tmux("send-keys", "-t", "t", "Enter")

    def ctrl_c(self) -> None:
        self._tmux("send-keys", "-t", "t", "C-c")

    def screen(self) -> str:
        """What the window shows, wrapped lines joined (a line longer than the window is one line here)."""
        return "\n".join(line.rstrip() for line in self._tmux("capture-pane", "-p", "-J", "-t", "t").splitlines())

    def wait(self, what: str, seen: Callable[[str], bool], *, timeout: float = DEADLINE) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if seen(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"not on the screen after {timeout:.0f}s: {what}\n---\n{screen}\n---")
            time.sleep(0.1)

    def wait_exit(self) -> tuple[int, str]:
        screen = self.wait("the command's exit", lambda s: EXIT.search(s) is not None)
        match = EXIT.search(screen)
        assert match is not None
        return int(match.group(1)), screen

    def close(self) -> None:
        subprocess.run([TMUX or "tmux", "-S", self.socket, "kill-server"], capture_output=True, timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)


def lines(screen: str, prefix: str) -> list[str]:
    return [line for line in screen.splitlines() if line.startswith(prefix)]


def status_lines(screen: str) -> list[str]:
    return [line for line in screen.splitlines() if "recording:" in line or "syncing:" in line]


@pytest.fixture
def terminal(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Terminal]:
    term = Terminal(tmp_path, columns=getattr(request, "param", 120))
    try:
        yield term
    finally:
        term.close()


class Served:
    """``python -m sktrace_emulator serve`` with a steady load, as a person would run it."""

    def __init__(self, tmp_path: Path) -> None:
        self.kubeconfig = tmp_path / "emulator.kubeconfig"
        self.log = tmp_path / "emulator.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "sktrace_emulator", "serve", "--kubeconfig-out", str(self.kubeconfig),
                 "--workload", "load", "--rate", "20", "--bookmark-interval", "0.3"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=private_env(tmp_path),
            )
        self.wait_log("serving ")

    def wait_log(self, text: str, *, after: int = 0) -> None:
        deadline = time.monotonic() + DEADLINE
        while text not in self.log.read_text()[after:]:
            assert self.proc.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, f"the emulator never said {text!r}:\n{self.log.read_text()}"
            time.sleep(0.05)

    def toggle_outage(self, said: str) -> None:
        """SIGUSR2: the API server goes down, or comes back; returns once the emulator says it did."""
        mark = len(self.log.read_text())
        self.proc.send_signal(signal.SIGUSR2)
        self.wait_log(said, after=mark)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    emulator = Served(tmp_path)
    try:
        yield emulator
    finally:
        emulator.stop()


def start_command(kubeconfig: Path | str, cache: Path, *extra: str) -> str:
    return shlex.join([*KUBECTL, "start", "--kubeconfig", str(kubeconfig), "--cache", str(cache), *extra])


def recording_counts(screen: str) -> str | None:
    found = lines(screen, "recording: ")
    return found[-1] if found else None


def test_the_status_line_is_redrawn_in_place_and_ctrl_c_ends_with_the_summary(terminal: Terminal, served: Served,
                                                                             tmp_path: Path) -> None:
    terminal.type(start_command(served.kubeconfig, tmp_path / "cache.db"))
    first = recording_counts(terminal.wait("the live status line", lambda s: recording_counts(s) is not None))
    screen = terminal.wait("the status line redrawn with new counts",
                           lambda s: recording_counts(s) not in (None, first))
    assert len(status_lines(screen)) == 1, screen  # redrawn in place: one status line, not a scroll of them
    assert len(lines(screen, "initial sync done: ")) == 1, screen

    terminal.ctrl_c()
    code, screen = terminal.wait_exit()
    assert code == 0, screen
    assert status_lines(screen) == [], screen  # the summary takes the status line's place
    (recorded,) = lines(screen, "Recorded ")
    assert re.match(r"Recorded \d+ events in \S+ into .*cache\.db \(run 1\)\.$", recorded), screen
    assert lines(screen, "KIND ") and lines(screen, "apps/v1.Deployment "), screen
    assert "Traceback" not in screen and "Interrupted" not in screen


def test_an_outage_is_told_once_on_its_own_line_and_when_it_is_over(terminal: Terminal, served: Served, tmp_path: Path) -> None:
    terminal.type(start_command(served.kubeconfig, tmp_path / "cache.db"))
    terminal.wait("the live status line", lambda s: recording_counts(s) is not None)
    served.toggle_outage("outage: the API server is down")
    screen = terminal.wait("the outage warning", lambda s: bool(lines(s, "Warning: API unreachable since ")))
    assert len(status_lines(screen)) == 1, screen  # cleared before the warning, drawn again below it
    served.toggle_outage("outage over")
    screen = terminal.wait("the recovery line", lambda s: bool(lines(s, "API unreachable since ")))

    (warning,) = lines(screen, "Warning: API unreachable since ")
    assert re.match(r"Warning: API unreachable since \d\d:\d\d:\d\dZ \(.+\): watching stopped; retrying, "
                    r"and what changes meanwhile is caught up once it recovers$", warning), warning
    (over,) = lines(screen, "API unreachable since ")
    match = re.match(r"API unreachable since (\d\d:\d\d:\d\dZ) \((\d+) retr(?:y|ies)\) — recovered after \S+; "
                     r"every kind is watched again$", over)
    assert match and int(match.group(2)) >= 1, over
    assert match.group(1) in warning  # the same outage, named by when it began
    assert len(status_lines(screen)) == 1, screen
    assert screen.rstrip().splitlines()[-1].startswith("recording: "), screen  # below the lines that stay

    terminal.ctrl_c()
    code, screen = terminal.wait_exit()
    assert code == 0, screen
    assert lines(screen, "Outage: API unreachable "), screen


def test_a_forbidden_kind_and_a_log_warning_each_get_a_line_of_their_own(terminal: Terminal, emulator: Emulator,
                                                                        emulator_kubeconfig: str, tmp_path: Path) -> None:
    emulator.create({"apiVersion": "apps/v1", "kind": "Deployment", **deployment_object("shop", "web", replicas=1,
                                                                                        rng=__import__("random").Random(1))})
    emulator.fail("StatefulSet", 403, count=1000)
    emulator.fail("Deployment", 500, count=2)  # the second failure before any list is logged as a warning
    terminal.type(start_command(emulator_kubeconfig, tmp_path / "cache.db"))
    screen = terminal.wait("the live status line", lambda s: recording_counts(s) is not None)
    warnings = [line for line in screen.splitlines() if "Warning:" in line]
    assert all(line.startswith("Warning: ") for line in warnings), screen  # never glued onto the status line
    forbidden = [line for line in screen.splitlines() if "statefulsets" in line]
    assert forbidden == [
        "Warning: forbidden: cannot list statefulsets.apps in all namespaces; grant get, list and watch on statefulsets.apps: "
        "'kubectl sktrace rbac --service-account default:sktrace [--config FILE]' prints the ClusterRole and binding to apply; "
        "apps/v1.StatefulSet is not recorded until it may be read (asked again at least every 48s)"
    ], screen
    assert [line for line in warnings if "apps/v1.Deployment: " in line and "retrying in " in line], screen
    assert len(status_lines(screen)) == 1, screen

    terminal.ctrl_c()
    code, screen = terminal.wait_exit()
    assert code == 0, screen
    assert len([line for line in screen.splitlines() if "statefulsets" in line]) == 1, screen  # once per run


@pytest.mark.parametrize("terminal", [40], indirect=True, ids=["40-columns"])
def test_a_narrow_terminal_does_not_wrap_the_status_line(terminal: Terminal, served: Served, tmp_path: Path) -> None:
    terminal.type(start_command(served.kubeconfig, tmp_path / "cache.db"))
    first = recording_counts(terminal.wait("the live status line", lambda s: recording_counts(s) is not None))
    screen = terminal.wait("the status line redrawn", lambda s: recording_counts(s) not in (None, first))
    (status,) = status_lines(screen)
    assert len(status) < 40 and status.endswith("…"), screen
    terminal.ctrl_c()
    code, screen = terminal.wait_exit()
    assert code == 0, screen
