"""``kubectl sktrace demo`` end to end: the real command in a subprocess, in an empty directory.

The full run takes ``--record-seconds`` plus a few seconds of start-up; one run is shared by the tests that
read its output and its trace. Each run gets its own TMPDIR so "nothing left behind" can be checked.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgpack
import pytest
from click.testing import CliRunner

from kubectl_sktrace.cli import cli
from kubectl_sktrace.cli.demo import split_seconds
from kubectl_sktrace.trace.files.format import read_trace
from kubectl_sktrace.trace.reports.validation import validate_trace


def _env(tmpdir: Path) -> dict[str, str]:
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    env.pop("KUBECONFIG", None)
    return env


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    work, tmpdir = tmp_path / "work", tmp_path / "tmp"
    work.mkdir()
    tmpdir.mkdir()
    return work, tmpdir


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work, tmpdir = _dirs(tmp_path_factory.mktemp("demo"))
    began = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "kubectl_sktrace", "demo", "--record-seconds", "8"], cwd=work,
                            env=_env(tmpdir), capture_output=True, text=True, timeout=90)
    return {"result": result, "work": work, "tmpdir": tmpdir, "seconds": time.monotonic() - began}


@pytest.mark.timeout(120)
def test_demo_exits_0_narrating_each_step_and_naming_the_trace(demo_run: dict[str, Any]) -> None:
    result, work = demo_run["result"], demo_run["work"]
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Error:" not in result.stderr
    lines = result.stdout.splitlines()
    trace = str(work / "demo.sktrace")
    steps = [line[:5] for line in lines if line[:1].isdigit() and line[1:5] == "/5  "]
    assert steps == ["1/5  ", "2/5  ", "3/5  ", "4/5  ", "5/5  "]
    assert lines[0].startswith("1/5  Started a local Kubernetes API server at https://127.0.0.1:")
    assert "$ kubectl sktrace start --kubeconfig $DEMO/kubeconfig.yaml --cache $DEMO/cache.db --config $DEMO/tracer.yaml --duration 6s" in lines
    assert "$ kubectl sktrace start --kubeconfig $DEMO/kubeconfig.yaml --cache $DEMO/cache.db --config $DEMO/tracer.yaml --duration 2s" in lines
    assert "3/5  Nothing is recording now. Changing the cluster behind the recorder's back: deleting Deployment" in lines
    assert f"$ kubectl sktrace validate {trace}" in lines
    assert f"{trace}: valid, 0 errors, 0 warnings" in lines
    assert any(line.startswith("Done in ") and line.endswith(f"s. Your trace: {trace}") for line in lines)
    assert lines[-6:] == [
        "Next, try:",
        "  kubectl sktrace inspect demo.sktrace --events   # every event: + applied, - deleted",
        "  kubectl sktrace demo --cache demo.db            # keep the cache, to export it again",
        "  kubectl sktrace start --duration 10m            # record your own cluster (the current context)",
        "  kubectl sktrace demo --serve                    # or keep this API server running, as a cluster to try",
        "  skctl xray demo.sktrace                         # browse it in SimKube's viewer",
    ]
    # the restart's reconciliation, as the second start's summary reports it
    second_summary = result.stdout.split("(run 2).")[1]
    assert [line.split()[:7] for line in second_summary.splitlines() if line.startswith("apps/v1.Deployment")][0] == \
        ["apps/v1.Deployment", "2", "1", "0", "0", "0", "1"]  # listed, applied, metadata, data, deleted live, while offline
    coverage = [line for line in result.stderr.splitlines() if line.startswith("Warning: coverage: ")]
    assert len(coverage) == 1, result.stderr  # one block
    assert result.stderr.count(", no recorder ran)") == 1  # the gap the demo made, and only that one


@pytest.mark.timeout(120)
def test_demo_trace_decodes_validates_and_marks_what_was_deleted_offline(demo_run: dict[str, Any]) -> None:
    assert demo_run["result"].returncode == 0, demo_run["result"].stderr
    path = demo_run["work"] / "demo.sktrace"
    raw = msgpack.unpackb(path.read_bytes(), raw=False, strict_map_key=False, use_list=False)
    assert raw["version"] == 2 and len(raw["events"]) >= 3
    report = validate_trace(str(path))
    assert (report.errors, report.warnings) == (0, 0), report.findings
    trace = read_trace(str(path))
    first_ts = trace.events[0]["ts"]
    deleted = {(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]): e["ts"]
               for e in trace.events for o in e["deleted_objs"]}
    assert set(deleted) == {("Deployment", "shop", "checkout"), ("ConfigMap", "shop", "checkout-config")}
    assert deleted[("Deployment", "shop", "checkout")] == deleted[("ConfigMap", "shop", "checkout-config")] > first_ts
    assert "shop/checkout" in trace.index["apps/v1.Deployment"]  # deleted objects stay in the index
    checkout = trace.pod_lifecycles[("apps/v1.Deployment", "shop/checkout")]
    entries = [entry for by_hash in checkout.values() for entry in by_hash]
    assert len(entries) == 2 and all("Finished" in entry for entry in entries)
    migrate = [entry for by_hash in trace.pod_lifecycles[("batch/v1.Job", "shop/migrate-db")].values() for entry in by_hash]
    assert len(migrate) == 1 and "Finished" in migrate[0]
    cart = [entry for by_hash in trace.pod_lifecycles[("apps/v1.Deployment", "shop/cart")].values() for entry in by_hash]
    assert len(cart) == 4  # scaled 2 -> 4 while nothing recorded


@pytest.mark.timeout(120)
def test_demo_leaves_only_the_trace_and_runs_in_under_a_minute(demo_run: dict[str, Any]) -> None:
    assert demo_run["result"].returncode == 0, demo_run["result"].stderr
    assert sorted(p.name for p in demo_run["work"].iterdir()) == ["demo.sktrace"]
    assert list(demo_run["tmpdir"].iterdir()) == []
    assert demo_run["seconds"] < 60


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.timeout(60)
@pytest.mark.skipif(not Path("/proc").is_dir() or os.name != "posix", reason="needs POSIX signals and /proc")
@pytest.mark.parametrize("inherited", [signal.SIG_DFL, signal.SIG_IGN], ids=["from-a-terminal", "sigint-ignored-by-the-launcher"])
def test_ctrl_c_while_recording_stops_everything_and_removes_the_temporary_files(tmp_path: Path, inherited: Any) -> None:
    """A script's background job inherits SIGINT ignored; the demo stops on it all the same, as start does."""
    work, tmpdir = _dirs(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "kubectl_sktrace", "demo", "--record-seconds", "30"], cwd=work,
                            env=_env(tmpdir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, inherited))
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("$ kubectl sktrace start"):
            break
    deadline = time.monotonic() + 20
    while not _processes_mentioning(str(tmpdir)) and time.monotonic() < deadline:
        time.sleep(0.1)
    recorder = _processes_mentioning(str(tmpdir))
    assert recorder, "the recorder child never started"
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.endswith("Interrupted.\n")
    assert _processes_mentioning(str(tmpdir)) == []
    assert list(tmpdir.iterdir()) == []
    assert list(work.iterdir()) == []


@pytest.mark.parametrize(
    "args, message",
    [
        (["-O", "missing/demo.sktrace"], "Error: cannot write missing/demo.sktrace: the directory missing does not exist; create it or pass another -O/--output-file\n"),
        (["--cache", "old.db"], "Error: the cache old.db already exists; the demo records a new cluster, so pass a new --cache path\n"),
        (["--record-seconds", "3"], "Error: --record-seconds 3 is too short to show anything; pass 4 or more\n"),
    ],
    ids=["output-directory-missing", "cache-exists", "too-short"],
)
def test_bad_options_are_one_error_line_before_anything_starts(args: list[str], message: str, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "old.db").write_bytes(b"")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    result = CliRunner().invoke(cli, ["demo", *args])
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", message)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.db"]


def test_closing_words_name_the_trace_and_the_kept_cache() -> None:
    from kubectl_sktrace.cli.demo import DemoResult, closing_words

    text = closing_words(DemoResult(trace="/w/t.sktrace", cache="d.db", seconds=23.6), output_file="t.sktrace")
    assert text.splitlines() == [
        "Done in 24s. Your trace: /w/t.sktrace",
        "Next, try:",
        "  kubectl sktrace inspect t.sktrace --events           # every event: + applied, - deleted",
        "  kubectl sktrace export --cache d.db -s -5m -o yaml   # the same history, readable",
        "  kubectl sktrace start --duration 10m                 # record your own cluster (the current context)",
        "  kubectl sktrace demo --serve                         # or keep this API server running, as a cluster to try",
        "  skctl xray t.sktrace                                 # browse it in SimKube's viewer",
    ]


@pytest.mark.parametrize("total, expected", [(20, (14, 6)), (8, (6, 2)), (4, (2, 2)), (60, (42, 18))])
def test_recording_seconds_split_about_70_30(total: int, expected: tuple[int, int]) -> None:
    assert split_seconds(total) == expected


def test_the_demo_waits_while_the_recorder_is_still_creating_its_cache(tmp_path: Path) -> None:
    """The demo polls the cache the child recorder creates: sqlite's header without the first migration is
    "not synced yet", never an error that stops the demo (seen when the poll hit that instant)."""
    import sqlite3

    from kubectl_sktrace.cli.demo import _recording_synced
    from kubectl_sktrace.store import open_cache

    path = tmp_path / "cache.db"
    assert not _recording_synced(str(path))
    path.touch(mode=0o600)  # as a recorder creates it
    creating = sqlite3.connect(path, isolation_level=None)
    creating.execute("PRAGMA journal_mode = WAL")
    creating.execute("BEGIN IMMEDIATE")
    creating.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    try:
        assert not _recording_synced(str(path))
    finally:
        creating.execute("ROLLBACK")
        creating.close()
    with open_cache(path, create=True):
        pass
    assert not _recording_synced(str(path))  # a cache with no run yet


def test_demo_serve_keeps_a_cluster_running_that_kubectl_and_the_plugin_use(tmp_path: Path) -> None:
    import shutil
    import signal

    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not on PATH")
    kubeconfig = tmp_path / "emulator.kubeconfig"
    proc = subprocess.Popen([sys.executable, "-m", "kubectl_sktrace", "demo", "--serve", "--workload", "none", "--kubeconfig-out", str(kubeconfig)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        said = [proc.stdout.readline() for _ in range(4)]
        assert said[1] == f"Its kubeconfig: {kubeconfig}\n" and said[3] == f"  export KUBECONFIG={kubeconfig}\n"
        assert proc.stderr.readline().endswith(f"; kubeconfig written to {kubeconfig}\n")

        def kubectl(*args: str) -> str:
            result = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "kube-cache"), *args],
                                    capture_output=True, text=True, timeout=30)
            assert result.returncode == 0, result.stderr
            return result.stdout

        kubectl("create", "deployment", "web", "--image=nginx:1.25", "--replicas=1")
        assert kubectl("scale", "deployment", "web", "--replicas=2") == "deployment.apps/web scaled\n"
        deadline = time.monotonic() + 15
        while sum(line.startswith("pod/web-") for line in kubectl("get", "all", "-A", "-o", "name").split()) < 2:
            assert time.monotonic() < deadline, kubectl("get", "all", "-A")
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        proc.kill()
        proc.wait()
