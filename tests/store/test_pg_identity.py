"""A database's histories are keyed by the cluster's identity: a laptop's history continues in the cluster.

A recorder finds its history by the kube-system uid first, then by its context's name; a new name of a known
cluster becomes an alias that readers find the history by; another cluster under a known name is refused; a
registry made before the registry had migrations (the shape of the previous version) is upgraded in place, and
read as it is by readers. Real PostgreSQL, the emulator, the real CLI in a subprocess.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from reliability_support import assert_one_error, run_cli

from kubectl_sktrace.store.pgregistry import REGISTRY_MIGRATIONS
from sktrace_emulator import Emulator

pytestmark = pytest.mark.timeout(300)


def _query(url: str, sql: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url) as conn:
        return [tuple(row) for row in conn.execute(sql).fetchall()]


def _registry(url: str) -> list[tuple[Any, ...]]:
    return _query(url, "SELECT h.id, h.name, h.cluster_uid, h.server, array_agg(n.name ORDER BY n.added, n.name) "
                       "FROM kubectl_sktrace.histories h JOIN kubectl_sktrace.history_names n ON n.history_id = h.id "
                       "GROUP BY h.id ORDER BY h.id")


def _kubeconfig(emu: Emulator, path: Path, *, context: str, host: str) -> str:
    """A kubeconfig of the emulator under ``context``, naming its server by ``host`` (127.0.0.1 or localhost)."""
    emu.write_kubeconfig(path, context=context)
    config = json.loads(path.read_text())
    config["clusters"][0]["cluster"]["server"] = emu.url.replace("127.0.0.1", host)
    path.write_text(json.dumps(config))
    return str(path)


def _pod_env(emu: Emulator, tmp_path: Path) -> dict[str, str]:
    """A pod's environment (no kubeconfig): the service variables and the service-account mount."""
    mount = tmp_path / "serviceaccount"
    env = emu.write_service_account(mount, namespace="sktrace")
    env["SKTRACE_SERVICE_ACCOUNT_DIR"] = str(mount)
    return env


def _offline_changes(emu: Emulator) -> None:
    from tests.cli.test_cli_start import NS, make_deployment

    emu.delete("apps/v1", "Deployment", NS, "old", graceful=False)
    make_deployment(emu, "new", replicas=1, started=time.time())


def _assert_reconciled(run: Any) -> None:
    report = json.loads(run.stdout)["reconciliation"]
    (kind,) = [k for k in report["kinds"] if k["kind"] == "apps/v1.Deployment"]
    assert [o["name"] for o in kind["deletedWhileOffline"]["objects"]] == ["old"], run.describe()
    assert [o["name"] for o in kind["createdWhileOffline"]["objects"]] == ["new"], run.describe()


def _status(url: str, context: str, home: Path) -> dict[str, Any]:
    run = run_cli(["status", "--cache", url, "--context", context, "-o", "json"], home=home)
    assert run.code == 0, run.describe()
    return dict(json.loads(run.stdout))


def test_a_recorder_under_another_context_name_continues_the_clusters_history(tmp_path: Path, pg_url: str, emulator: Emulator) -> None:
    from tests.cli.test_cli_start import make_deployment

    make_deployment(emulator, "old", replicas=1, started=time.time() - 60)
    laptop = _kubeconfig(emulator, tmp_path / "laptop", context="prod", host="localhost")
    other = _kubeconfig(emulator, tmp_path / "other", context="prod-admin", host="127.0.0.1")
    first = run_cli(["start", "--kubeconfig", laptop, "--cache", pg_url, "--duration", "1s"], home=tmp_path, timeout=120)
    assert first.code == 0, first.describe()
    _offline_changes(emulator)
    second = run_cli(["start", "--kubeconfig", other, "--cache", pg_url, "--duration", "1s", "-o", "json"], home=tmp_path, timeout=120)
    assert second.code == 0, second.describe()
    _assert_reconciled(second)
    server = emulator.url.replace("127.0.0.1", "localhost")
    assert _registry(pg_url) == [(1, "prod", emulator.cluster_uid, server, ["prod", "prod-admin"])]
    for context in ("prod", "prod-admin"):
        status = _status(pg_url, context, tmp_path)
        assert status["runsTotal"] == 2 and status["historyNames"] == ["prod", "prod-admin"], status
    table = run_cli(["status", "--cache", pg_url, "--context", "prod-admin"], home=tmp_path)
    assert "prod, prod-admin" in table.stdout, table.describe()


def test_a_laptops_copied_history_continues_in_the_cluster(tmp_path: Path, pg_url: str, emulator: Emulator) -> None:
    from tests.cli.test_cli_start import make_deployment

    make_deployment(emulator, "old", replicas=1, started=time.time() - 60)
    laptop = _kubeconfig(emulator, tmp_path / "laptop", context="prod", host="localhost")
    local = str(tmp_path / "laptop.db")
    first = run_cli(["start", "--kubeconfig", laptop, "--cache", local, "--duration", "1s"], home=tmp_path, timeout=120)
    assert first.code == 0, first.describe()
    copied = run_cli(["cache", "copy", local, pg_url], home=tmp_path, timeout=120)
    assert copied.code == 0, copied.describe()
    assert _registry(pg_url) == [(1, "prod", emulator.cluster_uid, emulator.url.replace("127.0.0.1", "localhost"), ["prod"])]
    _offline_changes(emulator)
    pod = run_cli(["start", "--cache", pg_url, "--duration", "1s", "-o", "json"], home=tmp_path / "pod", env=_pod_env(emulator, tmp_path),
                  timeout=120)
    assert pod.code == 0, pod.describe()
    _assert_reconciled(pod)
    assert [row[4] for row in _registry(pg_url)] == [["prod", "in-cluster"]]
    assert _status(pg_url, "in-cluster", tmp_path)["runsTotal"] == 2
    # prune finds the history by its new name, and on a machine without a kubeconfig as the only one
    for extra in (["--context", "in-cluster"], []):
        pruned = run_cli(["prune", "--cache", pg_url, "--before", "-1h", *extra], home=tmp_path / "elsewhere", timeout=120)
        assert pruned.code == 0, pruned.describe()
    again = run_cli(["cache", "copy", local, pg_url, "--context", "elsewhere"], home=tmp_path, timeout=120)
    assert_one_error(again, "already holds a history")
    assert [row[4] for row in _registry(pg_url)] == [["prod", "in-cluster"]]


def test_another_cluster_under_a_known_name_is_refused(tmp_path: Path, pg_url: str, emulator: Emulator) -> None:
    first = run_cli(["start", "--kubeconfig", emulator.write_kubeconfig(tmp_path / "one"), "--cache", pg_url, "--duration", "1s"],
                    home=tmp_path, timeout=120)
    assert first.code == 0, first.describe()
    before = _registry(pg_url)
    runs = _query(pg_url, "SELECT id FROM sktrace_h1.runs")
    other = Emulator(token="test-token", seed=2)
    other.start()
    try:
        assert other.cluster_uid != emulator.cluster_uid
        second = run_cli(["start", "--kubeconfig", other.write_kubeconfig(tmp_path / "two"), "--cache", pg_url, "--duration", "1s"],
                         home=tmp_path, timeout=120)
    finally:
        other.stop()
    assert_one_error(second, "another cluster", emulator.cluster_uid, other.cluster_uid, "another history of the database (--context NAME)")
    assert _registry(pg_url) == before and _query(pg_url, "SELECT id FROM sktrace_h1.runs") == runs


def _make_registry_old(url: str) -> None:
    """The registry as the previous version made it: no registry migrations, no names, no cluster identity."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE kubectl_sktrace.registry_migrations, kubectl_sktrace.history_names")
        conn.execute("ALTER TABLE kubectl_sktrace.histories DROP COLUMN cluster_uid, DROP COLUMN server, DROP COLUMN scope_namespace")


def test_an_old_registry_is_read_as_it_is_and_upgraded_by_a_recorder(tmp_path: Path, pg_url: str, emulator: Emulator) -> None:
    kubeconfig = emulator.write_kubeconfig(tmp_path / "kubeconfig")
    first = run_cli(["start", "--kubeconfig", kubeconfig, "--cache", pg_url, "--duration", "1s"], home=tmp_path, timeout=120)
    assert first.code == 0, first.describe()
    _make_registry_old(pg_url)
    old_columns = _query(pg_url, "SELECT column_name FROM information_schema.columns WHERE table_schema = 'kubectl_sktrace' ORDER BY 1")
    status = _status(pg_url, "emulator", tmp_path)  # a reader reads the old registry and never changes it
    assert status["runsTotal"] == 1 and status["historyNames"] == ["emulator"]
    assert _query(pg_url, "SELECT column_name FROM information_schema.columns WHERE table_schema = 'kubectl_sktrace' ORDER BY 1") == old_columns
    renamed = _kubeconfig(emulator, tmp_path / "renamed", context="renamed", host="localhost")
    second = run_cli(["start", "--kubeconfig", renamed, "--cache", pg_url, "--duration", "1s"], home=tmp_path, timeout=120)
    assert second.code == 0, second.describe()
    assert _query(pg_url, "SELECT number, name FROM kubectl_sktrace.registry_migrations ORDER BY number") == [
        (number, name) for number, (name, _) in enumerate(REGISTRY_MIGRATIONS, start=1)]
    # the uid came from the history itself, so the renamed context found it
    assert _registry(pg_url) == [(1, "emulator", emulator.cluster_uid, emulator.url, ["emulator", "renamed"])]
    assert _status(pg_url, "renamed", tmp_path)["runsTotal"] == 2


def test_a_newer_registry_is_refused_and_left_untouched(tmp_path: Path, pg_url: str, emulator: Emulator) -> None:
    kubeconfig = emulator.write_kubeconfig(tmp_path / "kubeconfig")
    start = ["start", "--kubeconfig", kubeconfig, "--cache", pg_url, "--duration", "1s"]
    assert run_cli(start, home=tmp_path, timeout=120).code == 0
    _query(pg_url, f"INSERT INTO kubectl_sktrace.registry_migrations VALUES ({len(REGISTRY_MIGRATIONS) + 1}, '0099_future', 0) RETURNING 1")
    before = _registry(pg_url)
    for args in [start, ["status", "--cache", pg_url, "--kubeconfig", kubeconfig]]:
        assert_one_error(run_cli(args, home=tmp_path, timeout=120), "newer than this kubectl-sktrace knows", "upgrade kubectl-sktrace")
    assert _registry(pg_url) == before


def test_an_unreachable_cluster_is_reported_before_the_database_is_touched(tmp_path: Path, pg_server: Any, pg_url: str) -> None:
    from conftest import write_kubeconfig
    from pgserver import _free_port

    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(kubeconfig, server=f"https://127.0.0.1:{_free_port()}", context="prod")
    run = run_cli(["start", "--kubeconfig", str(kubeconfig), "--cache", pg_url, "--duration", "1s"], home=tmp_path, timeout=120)
    line = assert_one_error(run, "127.0.0.1")
    assert "cache" not in line.split(";")[0], line
    assert _query(pg_url, "SELECT to_regclass('kubectl_sktrace.histories') IS NULL") == [(True,)]


def test_without_the_clusters_uid_the_context_name_chooses(tmp_path: Path, pg_url: str, emulator: Emulator) -> None:
    emulator.grant_view(["default"])  # a Role's rights: kube-system cannot be read, so the uid is unknown
    for context in ("team-a", "team-b", "team-a"):
        kubeconfig = _kubeconfig(emulator, tmp_path / context, context=context, host="127.0.0.1")
        run = run_cli(["start", "--kubeconfig", kubeconfig, "--cache", pg_url, "-n", "default", "--duration", "1s"], home=tmp_path, timeout=120)
        assert run.code == 0, run.describe()
    assert _registry(pg_url) == [(1, "team-a", "", emulator.url, ["team-a"]), (2, "team-b", "", emulator.url, ["team-b"])]
    assert _status(pg_url, "team-a", tmp_path)["runsTotal"] == 2


def test_two_scopes_of_one_cluster_are_two_histories(tmp_path: Path, pg_url: str, emulator: Emulator) -> None:
    runs = [("whole", []), ("team", ["-n", "default"]), ("team-admin", ["-n", "default"])]
    for context, scope in runs:
        kubeconfig = _kubeconfig(emulator, tmp_path / context, context=context, host="127.0.0.1")
        run = run_cli(["start", "--kubeconfig", kubeconfig, "--cache", pg_url, *scope, "--duration", "1s"], home=tmp_path, timeout=120)
        assert run.code == 0, run.describe()
    uid = emulator.cluster_uid
    assert _registry(pg_url) == [(1, "whole", uid, emulator.url, ["whole"]), (2, "team", uid, emulator.url, ["team", "team-admin"])]
    assert _query(pg_url, "SELECT scope_namespace FROM kubectl_sktrace.histories ORDER BY id") == [("",), ("default",)]
