"""``kubectl sktrace view`` as a person runs it: the address printed, the page behind the token, a clean stop on Ctrl-C
or SIGTERM, and the cache left exactly as it was."""

from __future__ import annotations

import http.client
import re
import signal
import subprocess
import urllib.parse
from pathlib import Path

import pytest
from reliability_support import EXE, private_env
from viewsupport import build_history

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_view_prints_its_address_serves_the_page_and_stops_cleanly(tmp_path: Path, stop: signal.Signals) -> None:
    cache = tmp_path / "cache.db"
    build_history(cache)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    proc = subprocess.Popen([EXE, "view", "--cache", str(cache), "--no-browser"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=private_env(tmp_path), text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith(f"Viewing the cache {cache} at http://127.0.0.1:") and "/#token=" in first
        assert proc.stdout.readline() == "Press Ctrl-C to stop.\n"
        url = urllib.parse.urlsplit(first.split(" at ", 1)[1].strip())
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        conn.request("GET", "/")
        response = conn.getresponse()
        assert response.status == 200 and b"view.js" in response.read()
        conn.request("GET", "/api/overview", headers={"X-Sktrace-Token": url.fragment.removeprefix("token=")})
        overview = conn.getresponse()
        assert overview.status == 200 and b'"context":"view-test"' in overview.read()
        conn.close()
        proc.send_signal(stop)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (proc.returncode, out, err) == (0, "Stopped.\n", "")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_another_address_is_served_with_a_warning(tmp_path: Path) -> None:
    cache = tmp_path / "cache.db"
    build_history(cache)
    proc = subprocess.Popen([EXE, "view", "--cache", str(cache), "--no-browser", "--address", "0.0.0.0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=private_env(tmp_path), text=True)
    try:
        assert proc.stdout is not None
        assert " at http://127.0.0.1:" in proc.stdout.readline()
        listening = proc.stdout.readline()
        assert listening.startswith("(listening on 0.0.0.0:")
        assert proc.stdout.readline() == "Press Ctrl-C to stop.\n"
        from kubectl_sktrace.view.app import machine_addresses

        others = machine_addresses("0.0.0.0")
        for address in others:  # printed, and answering there (by address: a name in the Host header is refused)
            url = re.search(rf"http://{re.escape(address)}:\d+/#token=\S+(?=[,)])", listening)
            assert url is not None, listening
            parts = urllib.parse.urlsplit(url.group(0))
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
            conn.request("GET", "/api/overview", headers={"X-Sktrace-Token": parts.fragment.split("=", 1)[1]})
            assert conn.getresponse().status == 200
            conn.close()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert err.startswith("Warning: listening on 0.0.0.0, not 127.0.0.1: whoever reaches it and learns the address's token reads ")
    assert out == "Stopped.\n"


def test_with_no_kubeconfig_view_offers_the_caches_it_finds(tmp_path: Path) -> None:
    """As ``status`` lists them: a person with no kubeconfig learns which caches there are and how to view one."""
    from reliability_support import assert_one_error, run_cli

    empty = run_cli(["view", "--no-browser"], home=tmp_path)
    line = assert_one_error(empty, "no kubeconfig names a cache to view", "kubectl sktrace view TRACE")
    assert "holds none" in line
    state = tmp_path / "state" / "kubectl-sktrace"  # XDG_STATE_HOME, as private_env sets it
    state.mkdir(parents=True)
    build_history(state / "prod.db")
    found = run_cli(["view", "--no-browser"], home=tmp_path)
    line = assert_one_error(found, "holds prod.db (context view-test)", f"kubectl sktrace view --cache {state / 'prod.db'}")
    assert list(state.iterdir()) == [state / "prod.db"], "a command that only reads writes nothing"


def _served(tmp_path: Path, *flags: str) -> tuple[str, str, str]:
    """``view`` of a history with ``flags``, stopped once it has said where it listens (its lines up to "Press Ctrl-C to
    stop."): its first line, the rest of its stdout and its stderr."""
    cache = tmp_path / "cache.db"
    build_history(cache)
    proc = subprocess.Popen([EXE, "view", "--cache", str(cache), "--no-browser", *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=private_env(tmp_path), text=True)
    try:
        assert proc.stdout is not None
        first, said = proc.stdout.readline(), ""
        while not said.endswith("Press Ctrl-C to stop.\n") and proc.poll() is None:
            said += proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return first, said + out, err


def test_localhost_is_this_machine_s_alone_no_warning_and_quiet_silences_the_warning_of_another_address(tmp_path: Path) -> None:
    first, _, err = _served(tmp_path / "a", "--address", "localhost")
    assert " at http://127.0.0.1:" in first and err == ""
    first, out, err = _served(tmp_path / "b", "--address", "0.0.0.0", "--quiet")
    assert " at http://127.0.0.1:" in first and "(listening on 0.0.0.0:" in out and err == ""


def test_an_address_this_machine_does_not_have_names_the_address_as_the_fix(tmp_path: Path) -> None:
    from reliability_support import assert_one_error, run_cli

    cache = tmp_path / "cache.db"
    build_history(cache)
    before = cache.read_bytes()
    for address in ("203.0.113.77", "no-such-host.invalid"):
        run = run_cli(["view", "--cache", str(cache), "--no-browser", "--address", address], home=tmp_path)
        assert_one_error(run, f"cannot listen on {address}:0", "pass an address of this machine to --address (127.0.0.1, the default")
    assert cache.read_bytes() == before


def _sigint_caught(pid: int) -> bool:
    """Whether the process has a handler for SIGINT (``SigCgt`` in /proc/PID/status, a mask of signals)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught & (1 << (signal.SIGINT - 1)))


def test_view_started_in_the_background_by_a_shell_stops_on_kill_int_even_while_it_loads(tmp_path: Path) -> None:
    """A shell starts `view &` with SIGINT ignored; the view honours it from its first instruction: here while it waits
    for a trace on its standard input (before it serves anything), as Ctrl-C would stop it there."""
    import signal as signals
    import time

    proc = subprocess.Popen([EXE, "view", "-", "--no-browser"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=private_env(tmp_path), text=True,
                            preexec_fn=lambda: signals.signal(signals.SIGINT, signals.SIG_IGN))  # what `cmd &` in a script does
    try:
        deadline = time.monotonic() + 30
        while not _sigint_caught(proc.pid):  # the program runs (a handler is Python's own): it is past its first instruction
            assert proc.poll() is None and time.monotonic() < deadline, "SIGINT is still ignored: kill -INT would do nothing"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert (proc.returncode, out, err) == (130, "", "Interrupted.\n")
