"""Shared helpers of the reliability suites (hostile inputs, security, crash, faults, concurrency).

Every suite runs the real console script ``kubectl-sktrace`` in a subprocess, the way a user does, with a
private HOME and XDG_STATE_HOME so that nothing reads or writes the real user's files. The helpers here
judge what a user sees: the exit code, exactly one ``Error:`` line, and no traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

EXE = str(Path(sys.executable).with_name("kubectl-sktrace"))
DATA = Path(__file__).parent / "data"


@dataclass(frozen=True)
class Run:
    """What a user saw: exit code, stdout and stderr as text."""

    args: tuple[str, ...]
    code: int
    stdout: str
    stderr: str

    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("Error:")]

    def describe(self) -> str:
        return f"kubectl-sktrace {' '.join(self.args)} -> exit {self.code}\nstdout: {self.stdout[-2000:]!r}\nstderr: {self.stderr[-2000:]!r}"


def private_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a user with an empty home: no kubeconfig, no state, no proxies."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "XDG_", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"))}
    env.update({"HOME": str(home), "XDG_STATE_HOME": str(home / "state"), "NO_PROXY": "127.0.0.1,localhost"})
    if extra:
        env.update(extra)
    return env


def run_cli(args: Sequence[str], *, home: Path, env: Mapping[str, str] | None = None, timeout: float = 60,
            preexec_fn: object = None) -> Run:
    """Run ``kubectl-sktrace ARGS`` as a user would; the process gets no stdin."""
    proc = subprocess.run(
        [EXE, *args], env=private_env(home, env), stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
        preexec_fn=preexec_fn,  # type: ignore[arg-type]
    )
    return Run(tuple(args), proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"))


def assert_one_error(run: Run, *needles: str) -> str:
    """Exit 1, exactly one ``Error:`` line containing every needle, no traceback anywhere; returns the line."""
    assert run.code == 1, run.describe()
    assert "Traceback" not in run.stderr and "Traceback" not in run.stdout, run.describe()
    lines = run.error_lines()
    assert len(lines) == 1, run.describe()
    assert "unexpected" not in lines[0], f"a bug surfaced as an unexpected exception:\n{run.describe()}"
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in the error line:\n{run.describe()}"
    return lines[0]


def snapshot(paths: Sequence[Path]) -> dict[Path, bytes | None]:
    """The bytes of each file (None when absent), to prove a refused command left them untouched."""
    return {p: (p.read_bytes() if p.is_file() else None) for p in paths}


def has_command(name: str) -> bool:
    """Whether this build of the CLI has the command (suites grow as commands land)."""
    from kubectl_sktrace.cli import cli

    return name in cli.commands  # type: ignore[attr-defined]
