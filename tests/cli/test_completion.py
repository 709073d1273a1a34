"""Shell completion: kubectl's plugin protocol (``kubectl_complete-sktrace``) and click's own, on the same
values: subcommands, flags, contexts of a kubeconfig, namespaces of a cache (never written), files."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kubectl_sktrace.cli import cli
from kubectl_sktrace.cli.completion import kubectl_complete
from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.store import open_cache
from kubectl_sktrace.store.recording import Identity, Recording

BIN = Path(sys.executable).parent
KUBECONFIG = """\
apiVersion: v1
kind: Config
current-context: prod
contexts:
- {name: prod, context: {cluster: c, user: u}}
- {name: staging, context: {cluster: c, user: u, namespace: shop}}
- {name: dev, context: {cluster: c, user: u}}
clusters:
- {name: c, cluster: {server: "https://127.0.0.1:1"}}
users:
- {name: u, user: {token: x}}
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HOME and state directory, no KUBECONFIG: nothing of the machine's leaks in."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    return path


def complete(*words: str) -> list[str]:
    return kubectl_complete(cli, list(words)).split("\n")


def test_subcommands_with_their_short_help(home: Path) -> None:
    lines = complete("")
    assert lines[-1] == ":4"
    assert lines[:-1] == [f"{name}\t{cli.commands[name].get_short_help_str()}" for name in sorted(cli.commands)]
    assert "inspect\tSummarize a SimKube v2 trace file." in lines
    assert complete("st") == ["start\tRecord the cluster into the local cache...", "status\tShow what the cache holds: cluster,...", ":4"]


def test_flags_of_a_subcommand(home: Path) -> None:
    assert complete("export", "--ex") == [
        "--excluded-namespaces\tComma-separated namespaces to leave out (SimKube's list by default).",
        "--exclude-labels\tLeave out objects matching this kubectl label selector ('a=b,c!=d,e in (x,y),!f'); repeatable, any match excludes.",
        "--excluded-labels\tLeave out objects matching this kubectl label selector ('a=b,c!=d,e in (x,y),!f'); repeatable, any match excludes.",
        ":4",
    ]
    assert complete("inspect", "--ti") == ["--timeline\tDraw running pods and spec changes per owner over time (a terminal chart).", ":4"]


def test_choices(home: Path) -> None:
    assert complete("version", "-o", "") == ["table", "json", "yaml", ":4"]
    assert complete("status", "--output=j") == ["json", ":4"]


def test_trace_formats_summary_formats_and_the_builtin_transform(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    formats = ["sktrace\tSimKube's msgpack trace", "json\tthe trace as JSON, for people", "yaml\tthe trace as YAML, for people", ":4"]
    assert complete("export", "-o", "") == formats
    assert complete("transform", "t.sktrace", "-o", "") == formats
    assert complete("export", "--summary", "j") == ["json", ":4"]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "strip.skel").write_text("remove(status);\n")
    (tmp_path / "skel").mkdir()
    (tmp_path / "skel" / "more.skel").write_text("remove(status);\n")
    (tmp_path / "strip.sktrace").write_bytes(b"")  # neither a program nor a directory: not offered
    (tmp_path / "notes.txt").write_text("")
    assert complete("export", "--transform", "") == ["sanitize\tthe built-in program", "home/", "skel/", "strip.skel", ":4"]
    assert complete("export", "--transform", "s") == ["sanitize\tthe built-in program", "skel/", "strip.skel", ":4"]
    assert complete("export", "--transform", "skel/") == ["skel/more.skel", ":4"]
    assert complete("transform", "t.sktrace", "sa") == ["sanitize\tthe built-in program", ":4"]


def test_contexts_from_the_kubeconfig(home: Path, kubeconfig: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert complete("export", "--kubeconfig", str(kubeconfig), "--context", "") == ["dev", "prod", "staging", ":4"]
    assert complete("export", "--kubeconfig", str(kubeconfig), "--context=", ) == ["dev", "prod", "staging", ":4"]
    monkeypatch.setenv("KUBECONFIG", f"{home}/missing{os.pathsep}{kubeconfig}")
    assert complete("status", "--context", "s") == ["staging", ":4"]
    # before the command, as kubectl users type global flags: the same values, then the commands after them
    assert complete("--context", "") == ["dev", "prod", "staging", ":4"]
    assert complete("--kubeconfig", str(kubeconfig), "--context", "p") == ["prod", ":4"]
    assert complete("--context", "prod", "exp")[0].startswith("export\t")


def test_no_kubeconfig_or_a_broken_one_completes_to_nothing(home: Path, tmp_path: Path) -> None:
    assert complete("export", "--context", "") == [":4"]
    broken = tmp_path / "broken"
    broken.write_text("contexts: [unclosed\n")
    assert complete("export", "--kubeconfig", str(broken), "--context", "") == [":4"]


def _cache_with_namespaces(path: Path) -> None:
    cache = open_cache(path, create=True)
    rec = Recording(cache)
    rec.check_identity(Identity(server="https://k:6443", cluster_uid="ks", context="prod", namespace=""))
    run = rec.begin_run(started=1_800_000_000.0, pid=1, config_yaml="")
    with rec.batch():
        for ns, name in (("shop", "web"), ("billing", "api"), ("shop", "db")):
            rec.upsert_object(ObjKey(GVK("apps", "v1", "Deployment"), ns, name), uid=name, spec_hash=1)
        rec.insert_pod(uid="p", namespace="batch-jobs", name="p", owner=None, stable_hash=None, start_ts=None, end_ts=None,
                       first_seen=1_800_000_000.0)
    rec.stop_run(run, 1_800_000_060.0, clean=True)
    cache.checkpoint()
    cache.close()


def _snapshot(directory: Path) -> dict[str, tuple[int, bytes]]:
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(directory.iterdir())}


def test_namespaces_from_the_cache_which_is_left_untouched(home: Path, tmp_path: Path) -> None:
    caches = tmp_path / "caches"
    caches.mkdir()
    cache = caches / "c.db"
    _cache_with_namespaces(cache)
    for leftover in caches.glob("c.db-*"):
        leftover.unlink()  # a stopped recorder leaves none
    before = _snapshot(caches)
    assert complete("export", "--cache", str(cache), "-n", "") == ["batch-jobs", "billing", "shop", ":4"]
    assert complete("status", "--cache", str(cache), "--namespace", "b") == ["batch-jobs", "billing", ":4"]
    assert _snapshot(caches) == before


def test_namespaces_of_the_contexts_default_cache_and_none_created(home: Path, tmp_path: Path, kubeconfig: Path) -> None:
    state = tmp_path / "state" / "kubectl-sktrace"
    assert complete("export", "--kubeconfig", str(kubeconfig), "-n", "") == [":4"]
    assert not (tmp_path / "state").exists()  # completing never creates the cache or its directory
    state.mkdir(parents=True)
    _cache_with_namespaces(state / "staging.db")
    assert complete("export", "--kubeconfig", str(kubeconfig), "--context", "staging", "-n", "s") == ["shop", ":4"]
    assert complete("export", "--kubeconfig", str(kubeconfig), "-n", "s") == [":4"]  # prod, the current context, has none


def test_files_are_left_to_the_shell(home: Path) -> None:
    assert complete("inspect", "") == [":0"]
    assert complete("export", "-O", "out") == [":0"]
    assert complete("start", "--config", "") == [":0"]
    assert complete("status", "--cache=") == [":0"]


def _run_script(name: str, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    script = BIN / name
    if not script.exists():
        pytest.skip(f"the console script {name} is not installed next to this interpreter")
    return subprocess.run([str(script), *args], capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_kubectl_complete_executable(home: Path, kubeconfig: Path) -> None:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    result = _run_script("kubectl_complete-sktrace", ["export", "--context", ""], env)
    assert (result.returncode, result.stdout, result.stderr) == (0, "dev\nprod\nstaging\n:4\n", "")
    result = _run_script("kubectl_complete-sktrace", ["export", "--since", "-x", "--context", "p"], env)  # nonsense typed
    assert (result.returncode, result.stderr) == (0, "")


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_clicks_own_completion_offers_the_same_values(home: Path, kubeconfig: Path, tmp_path: Path) -> None:
    cache = tmp_path / "c.db"
    _cache_with_namespaces(cache)
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "_KUBECTL_SKTRACE_COMPLETE": "bash_complete"}
    result = _run_script("kubectl-sktrace", [], {**env, "COMP_WORDS": "kubectl-sktrace export --context ", "COMP_CWORD": "3"})
    assert (result.returncode, result.stdout) == (0, "plain,dev\nplain,prod\nplain,staging\n")
    result = _run_script("kubectl-sktrace", [], {**env, "COMP_WORDS": f"kubectl-sktrace status --cache {cache} -n b", "COMP_CWORD": "5"})
    assert result.stdout == "plain,batch-jobs\nplain,billing\n"
    result = _run_script("kubectl-sktrace", [], {**env, "COMP_WORDS": "kubectl-sktrace export -O ", "COMP_CWORD": "3"})
    assert result.stdout == "file,\n"


def _kubectl_version(kubectl: str) -> tuple[int, int] | None:
    out = subprocess.run([kubectl, "version", "--client"], capture_output=True, text=True, timeout=60).stdout
    match = re.search(r"v(\d+)\.(\d+)", out)
    return (int(match.group(1)), int(match.group(2))) if match else None


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_real_kubectl_runs_the_completion_executable(home: Path, kubeconfig: Path) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not on PATH")
    version = _kubectl_version(kubectl)
    if version is None or version < (1, 26):
        pytest.skip(f"kubectl {version} predates plugin completion (1.26)")
    if not (BIN / "kubectl_complete-sktrace").exists():
        pytest.skip("kubectl_complete-sktrace is not installed next to this interpreter")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "KUBECONFIG": str(kubeconfig)}
    out = subprocess.run([kubectl, "__complete", "sktrace", ""], capture_output=True, text=True, env=env, timeout=60).stdout
    assert out.splitlines()[-1] == ":4"
    assert "inspect\tSummarize a SimKube v2 trace file." in out.splitlines()
    out = subprocess.run([kubectl, "__complete", "sktrace", "export", "--context", ""], capture_output=True, text=True, env=env,
                         timeout=60).stdout
    assert out.splitlines() == ["dev", "prod", "staging", ":4"]
    for command in (["export"], ["transform", "t.sktrace"]):
        out = subprocess.run([kubectl, "__complete", "sktrace", *command, "-o", ""], capture_output=True, text=True, env=env, timeout=60).stdout
        assert [line.split("\t")[0] for line in out.splitlines()] == ["sktrace", "json", "yaml", ":4"]
    work = home / "work"
    work.mkdir()
    for name in ("strip.skel", "incident.sktrace", "notes.txt"):
        (work / name).write_text("")
    out = subprocess.run([kubectl, "__complete", "sktrace", "export", "--transform", ""], capture_output=True, text=True, env=env,
                         timeout=60, cwd=work).stdout
    assert [line.split("\t")[0] for line in out.splitlines()] == ["sanitize", "strip.skel", ":4"]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_plugin_linked_under_the_completion_name_completes(home: Path, kubeconfig: Path, tmp_path: Path) -> None:
    """What the README tells krew users to do: a symlink named kubectl_complete-sktrace to the plugin."""
    plugin = BIN / "kubectl-sktrace"
    if not plugin.exists():
        pytest.skip("kubectl-sktrace is not installed next to this interpreter")
    link = tmp_path / "bin" / "kubectl_complete-sktrace"
    link.parent.mkdir()
    link.symlink_to(plugin)
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    result = subprocess.run([str(link), "export", "--context", "st"], capture_output=True, text=True, env=env, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (0, "staging\n:4\n", "")


def test_the_in_cluster_flags(home: Path) -> None:
    assert "rbac\tPrint the Role or ClusterRole and binding that start needs." in complete("")
    assert complete("rbac", "--se") == ["--service-account\tBind to this ServiceAccount (default: sktrace, in -n's namespace, else in sktrace).", ":4"]
    assert complete("rbac", "--config", "") == [":0"]  # a file: the shell completes it
    assert [line.split("\t")[0] for line in complete("start", "--he")] == ["--health-port", "--help", ":4"]
