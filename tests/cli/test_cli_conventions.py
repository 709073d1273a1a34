"""kubectl's conventions on every command: global flags anywhere, -n/-A checked once, flags that do nothing
refused, '-' for standard input, and what kubectl and skctl users type by habit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import CacheBuilder, obj

from kubectl_sktrace.cli import cli
from kubectl_sktrace.kube.kubeconfig import default_cache_path
from kubectl_sktrace.store import WriterLock, open_cache
from kubectl_sktrace.store.recording import Identity, Recording

NOW = 1_800_000_000


def run(args: list[str], *, env: dict[str, str | None] | None = None, input: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, args, prog_name="kubectl sktrace", env=env, input=input)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def no_cluster_env(home: Path) -> dict[str, str | None]:
    """An environment that names no cluster: no KUBECONFIG, an empty HOME, no in-cluster service."""
    return {"HOME": str(home), "XDG_STATE_HOME": None, "KUBECONFIG": None, "KUBERNETES_SERVICE_HOST": None,
            "KUBERNETES_SERVICE_PORT": None}


def build_cache(path: Path, *, context: str = "prod", runs: int = 1) -> Path:
    """A cache of a cluster, with objects in the namespaces app and shop and ``runs`` clean runs."""
    builder = CacheBuilder(path)
    with builder.cache.transaction() as conn:
        for key, value in (("cluster.server", "https://k:6443"), ("cluster.context", context), ("cluster.uid", "ks"),
                           ("scope.namespace", "")):
            conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (key, value))
    for n in range(runs):
        builder.run(started=NOW - 3600 + 100 * n, stopped=NOW - 3600 + 100 * n + 60)
    builder.apply(NOW - 3590, obj("Deployment", "web", "app", spec={"replicas": 1}))
    builder.apply(NOW - 3580, obj("Deployment", "cart", "shop", spec={"replicas": 1}))
    builder.apply(NOW - 3570, obj("Deployment", "pay", "shop", spec={"replicas": 2}))
    builder.apply(NOW - 3560, obj("Deployment", "dns", "default", spec={"replicas": 2}))
    builder.close()
    return path


def write_kubeconfig(path: Path, context: str) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "other",
        "clusters": [{"name": "c", "cluster": {"server": "https://k:6443"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": n, "context": {"cluster": "c", "user": "u"}} for n in (context, "other")],
    }))
    return path


# --- global flags before the command ------------------------------------------------------------------


def test_a_misspelt_context_with_no_cache_is_named_as_start_names_it(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "prod")
    env = {**no_cluster_env(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state")}
    assert run(["status", "--kubeconfig", str(kubeconfig), "--context", "nope"], env=env) == (
        1, "", f"Error: context 'nope' not found in kubeconfig {kubeconfig}, and no cache records it; available contexts: other, prod; "
               "pass --context with one of them, or --cache FILE\n")
    missing = default_cache_path("prod", environ={"XDG_STATE_HOME": str(tmp_path / "state")})
    assert run(["status", "--kubeconfig", str(kubeconfig), "--context", "prod"], env=env)[2] == (  # a context, no cache yet
        f"Error: no cache at {missing}; record one first with 'kubectl sktrace start' or pass --cache FILE\n")
    retired = default_cache_path("retired", environ={"XDG_STATE_HOME": str(tmp_path / "state")})
    build_cache(retired)  # the history of a context the kubeconfig no longer has is still read
    assert run(["status", "--kubeconfig", str(kubeconfig), "--context", "retired", "-o", "json"], env=env)[0] == 0


def test_global_flags_before_the_command_work_as_after_it(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "prod")
    env = {**no_cluster_env(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state")}
    build_cache(default_cache_path("prod", environ={"XDG_STATE_HOME": str(tmp_path / "state")}))
    after = run(["status", "--kubeconfig", str(kubeconfig), "--context", "prod", "-n", "shop", "-o", "json"], env=env)
    before = run(["--kubeconfig", str(kubeconfig), "--context", "prod", "-n", "shop", "status", "-o", "json"], env=env)
    joined = run(["--kubeconfig=" + str(kubeconfig), "--context=prod", "-nshop", "status", "-o", "json"], env=env)
    assert after[0] == 0, after
    assert before == after == joined
    data = json.loads(before[1])
    assert data["cluster"]["context"] == "prod" and data["countsNamespace"] == "shop"
    assert data["kinds"] == [{"kind": "apps/v1.Deployment", "live": 0, "applied": 2, "metadataChanges": 0, "dataChanges": 0, "deleted": 0, "deletedWhileOffline": 0,
                              "watchResourceVersion": None, "watchUpdated": None}]


def test_cache_and_all_namespaces_before_export(tmp_path: Path) -> None:
    cache = build_cache(tmp_path / "c.db")
    window = ["-s", f"@{NOW - 3600}", "-t", f"@{NOW}", "-O", "-", "--format", "json"]
    code, out, err = run(["--cache", str(cache), "-A", "export", *window])
    assert code == 0, err
    assert sorted(json.loads(out)["index"]["apps/v1.Deployment"]) == ["app/web", "default/dns", "shop/cart", "shop/pay"]


@pytest.mark.slow
@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize("spelling", ["-v", "--v", "--verbosity"])
def test_verbosity_before_or_after_the_command(tmp_path: Path, where: str, spelling: str) -> None:
    """-v 6 shows the traceback of an error, wherever it is typed (a subprocess: verbosity is process-wide)."""
    trace = tmp_path / "empty.sktrace"
    trace.write_bytes(b"")
    flag = [spelling, "6"]
    args = [*flag, "inspect", str(trace)] if where == "before" else ["inspect", str(trace), *flag]
    result = subprocess.run([sys.executable, "-m", "kubectl_sktrace", *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "Traceback" in result.stderr and result.stderr.endswith(f"Error: {trace}: the file is empty, not a SimKube trace; export it again\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["inspect", "--kubeconfig", "k", "t.sktrace"], "inspect does not take --kubeconfig: it reads only the trace file",
                     id="inspect-kubeconfig"),
        pytest.param(["--context", "prod", "validate", "t.sktrace"], "validate does not take --context: it reads only the trace file",
                     id="context-before-validate"),
        pytest.param(["-n", "shop", "version"], "version does not take -n (--namespace): it prints versions", id="namespace-before-version"),
        pytest.param(["config", "-A"], "config does not take -A (--all-namespaces): it prints the default tracer config", id="config-all"),
        pytest.param(["prune", "--before", "-1d", "-n", "shop"],
                     "prune does not take -n (--namespace): it prunes every namespace of the cache at once", id="prune-namespace"),
        pytest.param(["--cache", "c.db", "inspect", "t.sktrace"], "inspect does not take --cache: it reads only the trace file",
                     id="cache-before-inspect"),
        pytest.param(["demo", "--kubeconfig", "k"], "demo does not take --kubeconfig: it records its own built-in API server",
                     id="demo-kubeconfig"),
    ],
)
def test_a_global_flag_a_command_does_not_take_is_refused_in_one_line(args: list[str], message: str) -> None:
    assert run(args) == (1, "", f"Error: {message}; leave the flag out\n")


@pytest.mark.parametrize("command", [["start", "--duration", "1s"], ["status"], ["export"]])
@pytest.mark.parametrize("where", ["before", "after"])
def test_one_check_of_namespace_and_all_namespaces_for_every_command(tmp_path: Path, command: list[str], where: str) -> None:
    cache = ["--cache", str(tmp_path / "c.db")]
    args = ["-n", "shop", "-A", *command, *cache] if where == "before" else [*command, *cache, "-n", "shop", "-A"]
    assert run(args) == (1, "", "Error: -n/--namespace and -A/--all-namespaces contradict each other; pass one of them\n")
    assert not (tmp_path / "c.db").exists()


def test_bare_command_prints_help_and_exits_0() -> None:
    code, out, err = run([])
    assert (code, err) == (0, "")
    assert out.startswith("Usage: kubectl sktrace [OPTIONS] COMMAND [ARGS]...") and "Commands:" in out
    assert run(["--context", "prod", "-n", "shop"]) == (
        1, "", "Error: the flags need a command to go with, e.g. 'kubectl sktrace --context NAME status'; "
               "'kubectl sktrace --help' lists the commands\n")
    assert run(["--context", "prod", "--help"])[:2] == (0, out)


# --- status: -n, -A, --runs, a running run, and no kubeconfig at all ------------------------------------


def test_status_namespace_counts_only_that_namespace(tmp_path: Path) -> None:
    cache = build_cache(tmp_path / "c.db")
    code, out, _ = run(["status", "--cache", str(cache), "-n", "shop"])
    assert code == 0
    assert "counts of        namespace shop (kinds, events and pods below; runs are the whole recording's)" in out
    assert "events           2 (2027-01-15T07:00:20Z .. 2027-01-15T07:00:30Z)" in out
    everything = run(["status", "--cache", str(cache)])
    assert "events           4 (" in everything[1]
    assert run(["status", "--cache", str(cache), "-A"]) == everything


def test_status_namespace_outside_the_recorded_scope_is_refused(tmp_path: Path) -> None:
    cache = tmp_path / "c.db"
    opened = open_cache(cache, create=True)
    Recording(opened).check_identity(Identity(server="https://k:6443", cluster_uid="ks", context="prod", namespace="app"))
    opened.close()
    assert run(["status", "--cache", str(cache), "-n", "shop"]) == (
        1, "", f"Error: cache {cache} records only namespace app; pass -n app, or leave -n out\n")


def test_status_shows_the_last_ten_runs_unless_asked(tmp_path: Path) -> None:
    cache = build_cache(tmp_path / "c.db", runs=12)
    code, out, _ = run(["status", "--cache", str(cache)])
    assert code == 0
    runs = out.split("Runs (the last 10 of 12; --runs all shows every run):\n", 1)[1].split("\n\n")[0].splitlines()[2:]
    assert [line.split()[0] for line in runs] == [str(n) for n in range(3, 13)]
    gaps = out.split("Gaps (not observed live; reconstructed by the next run's relist):\n", 1)[1].split("\n\n")[0].splitlines()[2:]
    assert len(gaps) == 9  # the gaps among the runs shown
    data = json.loads(run(["status", "--cache", str(cache), "--runs", "all", "-o", "json"])[1])
    assert [r["run"] for r in data["runs"]] == list(range(1, 13)) and data["runsTotal"] == 12 and len(data["gaps"]) == 11
    assert [r["run"] for r in json.loads(run(["status", "--cache", str(cache), "--runs", "2", "-o", "json"])[1])["runs"]] == [11, 12]
    assert run(["status", "--cache", str(cache), "--runs", "0"]) == (1, "", "Error: --runs 0: pass a number of runs (1 or more) or 'all'\n")


def test_a_running_run_has_no_stopped_time(tmp_path: Path) -> None:
    cache = build_cache(tmp_path / "c.db", runs=2)
    with open_cache(cache, create=False) as opened:
        opened.conn.execute("UPDATE runs SET clean = 0 WHERE id = 2")
    with WriterLock(cache):
        code, out, _ = run(["status", "--cache", str(cache)])
        data = json.loads(run(["status", "--cache", str(cache), "-o", "json"])[1])
    assert code == 0
    assert "2      2027-01-15T07:01:40Z  2027-01-15T07:01:40Z  -                     1m00s       running" in out
    assert data["runs"][1]["stopped"] is None and data["runs"][0]["stopped"] == "2027-01-15T07:01:00Z"


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_status_without_any_kubeconfig_lists_the_caches(tmp_path: Path) -> None:
    home = tmp_path / "home"
    state = home / ".local" / "state" / "kubectl-sktrace"
    build_cache(state / "prod.db", context="prod", runs=2)
    build_cache(state / "staging.db", context="staging")
    (state / "junk.db").write_bytes(b"not a cache at all")
    before = _tree(home)
    code, out, err = run(["status"], env=no_cluster_env(home))
    assert (code, err) == (0, "")
    sizes = {name: _size(state / f"{name}.db") for name in ("prod", "staging")}
    w = max(len("SIZE"), *map(len, sizes.values()))  # the column is as wide as its widest size
    assert out == f"""No kubeconfig (no --kubeconfig, no KUBECONFIG, no ~/.kube/config); the caches in {state}:
CONTEXT    CLUSTER         {'SIZE'.ljust(w)}  LAST RUN                                CACHE
---------  --------------  {'-' * w}  --------------------------------------  ----------
prod       https://k:6443  {sizes['prod'].ljust(w)}  2027-01-15T07:01:40Z–07:02:40Z (clean)  prod.db
staging    https://k:6443  {sizes['staging'].ljust(w)}  2027-01-15T07:00:00Z–07:01:00Z (clean)  staging.db
Not listed: {state}/junk.db is not a kubectl-sktrace cache (not an sqlite file); it was left untouched, pass another --cache FILE

Show one with 'kubectl sktrace status --context CONTEXT' or 'kubectl sktrace status --cache FILE'.
"""
    data = json.loads(run(["status", "-o", "json"], env=no_cluster_env(home))[1])
    assert data["stateDirectory"] == str(state)
    assert [(c["context"], c["lastRun"] and c["lastRun"]["run"]) for c in data["caches"]] == [(None, None), ("prod", 2), ("staging", 1)]
    assert _tree(home) == before, "status only reads"
    assert run(["status", "--context", "prod", "-o", "json"], env=no_cluster_env(home))[0] == 0


def _size(path: Path) -> str:
    from kubectl_sktrace.store.connection import disk_size

    return f"{disk_size(path) / 1024:.1f} KiB"


def test_status_without_any_kubeconfig_or_cache(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    code, out, _ = run(["status"], env=no_cluster_env(home))
    assert code == 0
    assert out == (f"No kubeconfig (no --kubeconfig, no KUBECONFIG, no ~/.kube/config), and no cache in "
                   f"{home}/.local/state/kubectl-sktrace. Record one with 'kubectl sktrace start --kubeconfig FILE'.\n")
    assert list(home.iterdir()) == []


# --- export: -A, -o, relative times --------------------------------------------------------------------


def test_export_all_namespaces_excludes_none(tmp_path: Path) -> None:
    cache = build_cache(tmp_path / "c.db")
    base = ["export", "--cache", str(cache), "-s", f"@{NOW - 3600}", "-t", f"@{NOW}", "-O", "-", "--format", "json"]
    default = json.loads(run(base)[1])["index"]["apps/v1.Deployment"]
    everything = json.loads(run([*base, "-A"])[1])["index"]["apps/v1.Deployment"]
    assert sorted(default) == ["app/web", "shop/cart", "shop/pay"]
    assert sorted(everything) == ["app/web", "default/dns", "shop/cart", "shop/pay"]
    for other in (["--excluded-namespaces", "kube-system"], ["--include-namespaces", "app"]):
        assert run([*base, "-A", *other]) == (
            1, "", f"Error: -A/--all-namespaces and {other[0]} contradict each other; pass one of them\n")


@pytest.mark.parametrize("value", ["trace.out", "out/t.sktrace", "-"])
def test_export_lowercase_o_with_a_path_suggests_capital_o(tmp_path: Path, value: str) -> None:
    cache = build_cache(tmp_path / "c.db")
    assert run(["export", "--cache", str(cache), "-o", value]) == (
        1, "", f"Error: did you mean -O {value}? (-o is the output format, as in kubectl: sktrace, json, yaml)\n")


def test_export_lowercase_o_is_the_format(tmp_path: Path) -> None:
    cache = build_cache(tmp_path / "c.db")
    code, out, _ = run(["export", "--cache", str(cache), "-s", f"@{NOW - 3600}", "-t", f"@{NOW}", "-o", "yaml", "-O", "-"])
    assert code == 0 and yaml.safe_load(out)["version"] == 2
    assert run(["export", "--cache", str(cache), "-o", "xml"]) == (
        1, "", "Error: -o/--format xml: not an output format; pass one of sktrace, json, yaml\n")


def test_export_help_says_relative_times_count_back_from_now() -> None:
    out = " ".join(run(["export", "--help"])[1].split())
    assert "a time relative to now ('-30m' is 30 minutes ago; '-2h', '-1d')" in out
    assert "a time relative to now ('-7d' is 7 days ago)" in " ".join(run(["prune", "--help"])[1].split())


def test_counts_are_singular_when_one(tmp_path: Path) -> None:
    builder = CacheBuilder(tmp_path / "c.db")
    builder.run(started=NOW - 3600, stopped=NOW)
    builder.apply(NOW - 3590, obj("Deployment", "web", "app", spec={"replicas": 1}))
    builder.close()
    code, _, err = run(["export", "--cache", str(tmp_path / "c.db"), "-s", f"@{NOW - 3589}", "-t", f"@{NOW}", "-O", str(tmp_path / "t.sktrace")])
    assert code == 0, err
    note, wrote = err.splitlines()
    assert note.endswith("the trace holds only the state at its start (1 object)")
    assert wrote.startswith(f"Wrote {tmp_path}/t.sktrace: 1 event (0 applied, 0 deleted after the start state), 1 object in the index, "
                            "0 pod lifecycles, ")


# --- inspect and validate: standard input, and errors in JSON --------------------------------------------


@pytest.mark.parametrize("command", ["inspect", "validate"])
def test_dash_reads_standard_input(dsb_path: Path, command: str) -> None:
    from_file = run([command, str(dsb_path), "-o", "json"])
    from_stdin = run([command, "-", "-o", "json"], input=dsb_path.read_bytes())
    assert from_stdin[0] == from_file[0] == 0
    assert json.loads(from_stdin[1]) == {**json.loads(from_file[1]), "file": "standard input"}


def test_dash_with_no_trace_on_standard_input() -> None:
    assert run(["validate", "-"], input=b"") == (1, "", "Error: standard input: the file is empty, not a SimKube trace; export it again\n")


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_validate_reports_an_unreadable_file_in_the_format_asked(tmp_path: Path, fmt: str) -> None:
    empty = tmp_path / "empty.sktrace"
    empty.write_bytes(b"")
    for path, message in ((empty, "the file is empty, not a SimKube trace; export it again"),
                          (tmp_path / "nope.sktrace", "no such file; check the path, or write a trace with 'kubectl sktrace export -O FILE'")):
        code, out, err = run(["validate", str(path), "-o", fmt])
        data: dict[str, Any] = json.loads(out) if fmt == "json" else yaml.safe_load(out)
        assert (code, err) == (1, "")
        assert data == {"file": str(path), "valid": False, "error": f"{path}: {message}", "errors": 1, "warnings": 0, "findings": []}


# --- prune and demo through the CLI ----------------------------------------------------------------------


def test_prune_dry_run_changes_nothing_and_prune_reports_the_bytes_the_disk_got_back(tmp_path: Path) -> None:
    builder = CacheBuilder(tmp_path / "c.db")
    builder.run(started=0, stopped=1000)
    for ts in range(300):
        builder.apply(ts, obj("ConfigMap", "big", spec={"blob": [str(ts) * 50 for _ in range(40)]}))
    builder.close()
    cache = tmp_path / "c.db"
    before = _tree(tmp_path)
    code, out, _ = run(["prune", "--cache", str(cache), "--before", "@299", "--dry-run", "-o", "json"])
    plan = json.loads(out)
    assert code == 0 and plan["dryRun"] is True and plan["eventsRemoved"] == 298 and plan["bytesBefore"] == os.path.getsize(cache)
    assert _tree(tmp_path) == before
    code, out, _ = run(["prune", "--cache", str(cache), "--before", "@299", "-o", "json"])
    done = json.loads(out)
    assert code == 0 and done["vacuumed"] is True
    assert done["bytesBefore"] == len(before["c.db"]) + len(before.get("c.db-wal", b""))
    assert done["bytesAfter"] == os.path.getsize(cache) and not os.path.exists(f"{cache}-wal")
    assert done["bytesFreed"] == done["bytesBefore"] - done["bytesAfter"] > 0


def test_a_prune_without_vacuum_frees_no_disk_space_and_says_what_is_reusable(tmp_path: Path) -> None:
    builder = CacheBuilder(tmp_path / "c.db")
    builder.run(started=0, stopped=1000)
    for ts in range(2000):
        builder.apply(ts, obj("ConfigMap", f"cm-{ts % 200}", spec={"n": ts}))
    builder.close()
    cache = tmp_path / "c.db"
    size = os.path.getsize(cache)
    code, out, _ = run(["prune", "--cache", str(cache), "--before", "@400", "-o", "json"])
    done = json.loads(out)
    assert code == 0 and done["eventsRemoved"] == 200 and done["vacuumed"] is False
    assert (done["bytesBefore"], done["bytesAfter"], done["bytesFreed"]) == (size, os.path.getsize(cache), 0)
    assert done["bytesReusable"] > 0


def test_demo_help_states_the_true_minimum() -> None:
    from kubectl_sktrace.cli import demo

    out = " ".join(run(["demo", "--help"])[1].split())
    assert f"--record-seconds N Seconds of recording in all (at least {demo.MIN_RECORD_SECONDS}: two recordings of 2 seconds)" in out
    assert "x>=1" not in out
    assert min(demo.split_seconds(demo.MIN_RECORD_SECONDS)) == 2


# --- small conventions a new user trips on (issue 38) -------------------------------------------------------


@pytest.mark.parametrize("command", [["export"], ["transform", "t.sktrace"]])
@pytest.mark.parametrize("spelling", [["--output", "yaml"], ["--output=yaml"]])
def test_output_points_at_the_format_not_the_output_file(command: list[str], spelling: list[str]) -> None:
    assert run([*command, *spelling]) == (
        1, "", "Error: no such option --output: the trace's format is -o/--format (sktrace, json or yaml), as kubectl's -o; "
               "where it goes is -O/--output-file\n")


@pytest.mark.parametrize("value", ["10m", "2h", "1h30m"])
def test_a_time_without_its_sign_suggests_the_relative_one(tmp_path: Path, value: str) -> None:
    cache = build_cache(tmp_path / "c.db")
    assert run(["export", "--cache", str(cache), "-s", value]) == (
        1, "", f"Error: invalid time '{value}': a time relative to now has a sign; did you mean '-{value}' ({value} ago)?\n")


def test_export_with_a_namespace_typo_says_did_you_mean(tmp_path: Path) -> None:
    cache = build_cache(tmp_path / "c.db")
    window = ["--cache", str(cache), "-s", f"@{NOW - 3600}", "-t", f"@{NOW}", "-O", str(tmp_path / "t.sktrace")]
    typo = (1, "", "Error: the cache never saw namespace shpo (no object was recorded there); did you mean -n shop? "
                   "(--allow-empty exports it as asked)\n")
    assert run(["export", *window, "-n", "shpo"]) == typo
    assert run(["export", *window, "-n", "shpo", "--dry-run"]) == typo  # the preview refuses what the export refuses
    assert run(["export", *window, "--include-namespaces", "shpo,ap"])[2].endswith(
        "; did you mean --include-namespaces app,shop? (--allow-empty exports it as asked)\n")
    # one namespace right, one misspelt: refused too, not a trace without the second
    assert run(["export", *window, "--include-namespaces", "shop,ap"]) == (
        1, "", "Error: the cache never saw namespace ap (no object was recorded there); did you mean --include-namespaces app,shop? "
               "(--allow-empty exports it as asked)\n")
    assert run(["export", *window, "--include-namespaces", "shop,ap", "--allow-empty"])[0] == 0
    many = ",".join(["shop", *(f"team-{i}" for i in range(40))])  # a list from elsewhere, not typos: each name is not compared
    assert run(["export", *window, "--include-namespaces", many])[0] == 0
    assert run(["export", *window, "--include-namespaces", "shop,shpo"])[2].endswith(  # the typo of one asked right
        "; did you mean -n shop? (--allow-empty exports it as asked)\n")
    assert run(["export", "--cache", str(cache), "-s", f"@{NOW + 3600}", "-t", f"@{NOW + 7200}", "--dry-run"])[2].startswith(
        "Error: the window")  # a window after everything recorded: refused by the preview as by the export


def test_status_of_a_namespace_never_seen_says_so(tmp_path: Path) -> None:
    cache = build_cache(tmp_path / "c.db")
    assert run(["status", "--cache", str(cache), "-n", "shpo"]) == (
        1, "", f"Error: cache {cache} never saw namespace {'shpo'} (no object was recorded there); did you mean -n shop?\n")
    assert run(["status", "--cache", str(cache), "-n", "nope"]) == (
        1, "", f"Error: cache {cache} never saw namespace nope (no object was recorded there); it knows app, default, shop\n")


# An interrupt while Python loads the program: a hook that raises KeyboardInterrupt at one of the command line's
# imports, as a Ctrl-C in the first tenth of a second of `kubectl sktrace start` does at whichever import it falls in.
_INTERRUPTED_AT_IMPORT = """
import sys
class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == "kubectl_sktrace.cli.options":
            raise KeyboardInterrupt
sys.meta_path.insert(0, Interrupt())
sys.argv = ["kubectl-sktrace", "version"]
from kubectl_sktrace.__main__ import main
main()
"""


@pytest.mark.slow  # a process of its own
def test_ctrl_c_while_the_program_loads_is_an_interrupt_not_a_traceback() -> None:
    run = subprocess.run([sys.executable, "-c", _INTERRUPTED_AT_IMPORT], capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stdout, run.stderr) == (130, "", "Interrupted.\n")


def test_the_executables_enter_through_the_interrupt_boundary() -> None:
    from importlib.metadata import entry_points

    scripts = {e.name: e.value for e in entry_points(group="console_scripts") if e.name.endswith("sktrace")}
    assert scripts == {"kubectl-sktrace": "kubectl_sktrace.__main__:main", "kubectl_complete-sktrace": "kubectl_sktrace.__main__:complete_main"}
    assert "from kubectl_sktrace.__main__ import main" in (Path(__file__).resolve().parents[2] / "krew" / "bootstrap.py").read_text()


def test_every_command_that_can_warn_takes_quiet() -> None:
    """The README's promise: ``--quiet``, spelled and meaning the same, on each command that can print a warning."""
    warning = {"backfill", "export", "inspect", "prune", "start", "status", "transform", "validate", "view"}
    quiet = {name for name, command in cli.commands.items() if any("--quiet" in p.opts for p in command.params)}
    assert warning <= quiet, sorted(warning - quiet)
