"""``inspect --timeline`` and ``status --timeline`` through the command line: the drawing flags, the width
from the terminal, ASCII when stdout is not UTF-8, an empty trace, and a cache recorded from the emulator."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import textwrap
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubectl_sktrace.cli import cli
from kubectl_sktrace.trace.files.format import Trace, encode_trace
from sktrace_emulator import Emulator

DATA = Path(__file__).resolve().parents[1] / "data"
CRONJOB = str(DATA / "cronjob.sktrace")
DSB = str(DATA / "dsb-scaling.sktrace")


def run(*args: str, env: dict[str, str] | None = None, charset: str = "utf-8") -> tuple[int, str, str]:
    result = CliRunner(charset=charset).invoke(cli, list(args), prog_name="kubectl sktrace", env=env)
    return result.exit_code, result.stdout, result.stderr


def test_inspect_timeline_width_and_top() -> None:
    code, out, err = run("inspect", "--timeline", "--width", "60", CRONJOB)
    assert (code, err) == (0, "")
    assert out.splitlines()[4:8] == [
        "CronJob default/hello-simkube 1 │    █████   ████   █████  │",
        "                                │                         ×│",
        "                                └──────────────────────────┘",
        "                                22:20:23Z          22:23:51Z",
    ]
    code, out, _ = run("inspect", DSB, "--timeline", "--top", "2", "--width", "72")
    assert code == 0
    assert [line.split(" -")[0].strip() for line in out.splitlines() if line.startswith("Deployment")] == [
        "Deployment dsb/nginx-thrift", "Deployment dsb/compose-post-service"]
    assert "The top 2 of 8 owners by pods and spec changes" in out


def test_inspect_timeline_follows_the_terminal_width_else_80() -> None:
    _, narrow, _ = run("inspect", "--timeline", CRONJOB, env={"COLUMNS": "50"})
    assert max(len(line) for line in narrow.splitlines()) <= 50
    assert "default/hello-simkube 1 │   ████  ████  ████  │" in narrow.splitlines()  # the kind left out to fit
    _, default, _ = run("inspect", "--timeline", CRONJOB, env={"COLUMNS": ""})
    assert "└──────────────────────────────────────────┘" in default  # 42 columns of 5s: the most that fit in 80
    assert max(len(line) for line in default.splitlines()) <= 80


def test_inspect_timeline_ascii_when_asked_or_when_stdout_is_not_utf8() -> None:
    _, asked, _ = run("inspect", "--timeline", "--ascii", "--width", "60", CRONJOB)
    assert "CronJob default/hello-simkube 1 |    @@@@@   @@@@   @@@@@  |" in asked
    _, latin, _ = run("inspect", "--timeline", "--width", "60", CRONJOB, charset="latin-1")
    assert latin == asked
    assert asked.isascii()


@pytest.mark.timeout(60)
def test_the_installed_plugin_draws_ascii_on_a_latin1_stdout() -> None:
    script = Path(sys.executable).parent / "kubectl-sktrace"
    if not script.exists():
        pytest.skip("the console script is not installed next to this interpreter")
    result = subprocess.run([str(script), "inspect", "--timeline", "--width", "60", CRONJOB], capture_output=True,
                            env={**os.environ, "PYTHONIOENCODING": "latin-1"}, timeout=60)
    assert result.returncode == 0, result.stderr
    assert b"CronJob default/hello-simkube 1 |    @@@@@   @@@@   @@@@@  |\n" in result.stdout


def test_an_empty_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a short name: the title line wraps at the chart's width like any other
    Path("empty.sktrace").write_bytes(encode_trace(Trace(version=2, config={"trackedObjects": {}}, events=[], index={}, pod_lifecycles={})))
    assert run("inspect", "--timeline", "empty.sktrace") == (0, "Trace empty.sktrace\nNo events: nothing to draw.\n", "")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["inspect", CRONJOB, "--top", "3"], "Error: --top only applies to a chart; add --timeline"),
        (["inspect", CRONJOB, "--ascii", "--width", "90"], "Error: --ascii, --width only apply to a chart; add --timeline"),
        (["inspect", CRONJOB, "--timeline", "--events"], "Error: --timeline draws a chart; leave out --events and -o/--output"),
        (["inspect", CRONJOB, "--timeline", "-o", "json"], "Error: --timeline draws a chart; leave out --events and -o/--output"),
        (["inspect", CRONJOB, "--timeline", "--top", "0"], "Error: Invalid value for '--top': 0 is not in the range x>=1."),
        (["status", "-s", "-1h"], "Error: --start-time only applies to a chart; add --timeline"),
    ],
    ids=["top", "ascii-width", "events", "json", "top-0", "status-window"],
)
def test_drawing_flags_without_a_chart_are_usage_errors(args: list[str], message: str) -> None:
    code, _, err = run(*args)
    assert (code, err.splitlines()[-1]) == (2, message)


def test_too_narrow_a_width_is_one_error_line() -> None:
    assert run("inspect", "--timeline", "--width", "30", CRONJOB) == (
        1, "", "Error: --width 30 is too narrow for a timeline; pass --width 40 or more\n")


# --- status --timeline on a cache the recorder wrote from the emulator --------------------------------------

NS = "shop"


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _deployment(emu: Emulator, name: str, *, replicas: int, started: float) -> None:
    """A Deployment, its ReplicaSet and running pods, as the controllers and kubelet would leave them."""
    labels = {"app": name}
    template = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    dep = emu.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
                      "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template}})
    rs = emu.create({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                     "metadata": {"name": f"{name}-rs", "namespace": NS, "labels": labels,
                                  "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
                                                       "uid": dep["metadata"]["uid"], "controller": True}]},
                     "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template}})
    for i in range(replicas):
        pod = emu.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"{name}-rs-{i}", "namespace": NS, "labels": labels,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs["metadata"]["name"],
                                 "uid": rs["metadata"]["uid"], "controller": True}]}, "spec": template["spec"]})
        pod["status"] = {"phase": "Running", "containerStatuses": [{"name": "c", "state": {"running": {"startedAt": _iso(started)}}}]}
        emu.update_status(pod)


def _sktrace(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    return subprocess.run([sys.executable, "-m", "kubectl_sktrace", *args], capture_output=True, text=True, env=env, timeout=60)


def _query(cache: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"{cache.as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.mark.timeout(120)
def test_status_timeline_draws_a_recorded_window_read_only(emulator: Emulator, emulator_kubeconfig: str, tmp_path: Path) -> None:
    """Two recordings with changes made in between (a scale-up, a deletion): the second start reconstructs
    them, and the chart shows them at its start, with the pods that ran."""
    cache = tmp_path / "cache.db"
    started = time.time() - 60
    _deployment(emulator, "web", replicas=2, started=started)
    _deployment(emulator, "gone", replicas=1, started=started)
    first = _sktrace("start", "--kubeconfig", emulator_kubeconfig, "--cache", str(cache), "--duration", "1")
    assert first.returncode == 0, first.stderr
    emulator.patch("apps/v1", "Deployment", NS, "web", {"spec": {"replicas": 3}})
    emulator.delete("apps/v1", "Deployment", NS, "gone", graceful=False)
    second = _sktrace("start", "--kubeconfig", emulator_kubeconfig, "--cache", str(cache), "--duration", "2")  # a whole second recorded
    assert second.returncode == 0, second.stderr
    (synced, end), = _query(cache, "SELECT (SELECT synced FROM runs WHERE id = 1), max(stopped) FROM runs")
    (changed,), = _query(cache, "SELECT ts FROM events WHERE name = 'web' AND inferred = 1")
    (deleted,), = _query(cache, "SELECT ts FROM events WHERE name = 'gone' AND op = 1")
    (finished,), = _query(cache, "SELECT end_ts FROM pods WHERE name = 'gone-rs-0'")
    (started1, stopped1), (started2, stopped2) = _query(cache, "SELECT started, stopped FROM runs ORDER BY id")
    before = (cache.stat().st_mtime_ns, cache.read_bytes())

    # from the second the first run's lists ended: what they found is the start state, not a change
    start_ts, end_ts = int(synced), int(end) + 1
    result = _sktrace("status", "--cache", str(cache), "--timeline", "--ascii", "--width", "80",
                      "-s", f"@{start_ts}", "-t", f"@{end_ts}")
    assert result.returncode == 0, result.stderr
    assert (cache.stat().st_mtime_ns, cache.read_bytes()) == before
    title = textwrap.wrap(f"Cache {cache}", 80, break_on_hyphens=False)  # a long temporary path takes two lines
    lines = result.stdout.splitlines()[len(title) - 1:]
    assert [*title[:-1], *lines[:3]] == [*title, f"Window {_iso(start_ts)} .. {_iso(end_ts - 1)} ({end_ts - 1 - start_ts}s)",
                                         "2 owners with pods or spec changes"]
    # the window has fewer seconds than columns: each second is `repeat` columns wide, marks in its first
    web_bars, web_marks, gone_bars, gone_marks = lines[4:8]
    repeat = int(lines[-2].rsplit("1 second = ", 1)[1].split()[0])
    seconds = end_ts - start_ts
    assert web_bars == f"Deployment {NS}/web  2 |{'@' * seconds * repeat}|"  # the third pod was never seen started
    assert web_marks == f"{'':23}|{' ' * (changed - start_ts) * repeat}o{' ' * ((end_ts - changed) * repeat - 1)}|"
    assert gone_bars == f"Deployment {NS}/gone 1 |{'@' * (finished - start_ts) * repeat}{' ' * (end_ts - finished) * repeat}|"
    assert gone_marks == f"{'':23}|{' ' * (deleted - start_ts) * repeat}x{' ' * ((end_ts - deleted) * repeat - 1)}|"
    # on the axis, the seconds no recorder ran in, even in part: before, between and after the runs
    offline = [(start_ts, started1), (stopped1, started2), (stopped2, end_ts)]
    axis = "".join(("?" if any(a < second + 1 and b > second for a, b in offline) else "-") * repeat for second in range(start_ts, end_ts))
    assert lines[8] == f"{'':23}+{axis}+" and "-" in axis
    assert lines[-1] == "? no recorder, or a watch down: changes then were caught up later, at that time"
