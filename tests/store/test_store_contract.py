"""One store contract, two engines: the cache's behaviour, specified once and run against a sqlite file and a
history in a real PostgreSQL database (the ``engine`` fixture; the server is started by the suite, see
``pgserver.py``).

Recording reads back what it wrote; the same history exports the same bytes from either engine (written row by
row, or copied from a real recording with ``cache copy``); readers read while a recorder writes and never
write; a second recorder is refused naming the first; a ``kill -9`` loses at most the open batch and leaves the
next recorder free to start; hostile caches (unreachable, a wrong password, another application's tables, a newer
schema, no psycopg) are one ``Error:`` line, exit 1, and leave everything as it was.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterator

import pytest
from conftest import CacheBuilder, location, obj
from reliability_support import (
    EXE,
    Recorder,
    Traffic,
    assert_one_error,
    private_env,
    run_cli,
)

from kubectl_sktrace.errors import CacheError
from kubectl_sktrace.model import GVK, CacheUrl, ObjKey
from kubectl_sktrace.store import open_cache, open_cache_readonly, pgschema, schema
from kubectl_sktrace.store.recording import EventRow, Identity, OwnerRecord, Recording
from kubectl_sktrace.trace.files import format as traceformat

pytestmark = pytest.mark.timeout(300)

DEPLOY = GVK("apps", "v1", "Deployment")
CONTEXT = "emulator"  # the context of the emulator's kubeconfig: the history's name in a database


def test_the_postgresql_migrations_pair_with_sqlites_by_name() -> None:
    assert [name for name, _ in pgschema.PG_MIGRATIONS] == [name for name, _ in schema.MIGRATIONS]


def _rows(cache: str, sql: str, history: str | None = CONTEXT) -> list[tuple[Any, ...]]:
    """Rows of one query, read as a second process would (read-only)."""
    with open_cache_readonly(CacheUrl(cache, history) if cache.startswith("postgresql://") else cache) as opened:
        return [tuple(row) for row in opened.conn.execute(sql).fetchall()]


# --- recording ------------------------------------------------------------------------------------------


def test_recording_reads_back_what_it_wrote(engine: str) -> None:
    big_hash, key = (1 << 64) - 3, ObjKey(DEPLOY, "ns-ü", "web")
    with open_cache(location(engine), create=True) as cache:
        rec = Recording(cache)
        rec.check_identity(Identity(server="https://a:6443", cluster_uid="uid-a", context="test", namespace=""))
        run = rec.begin_run(started=1000.125, pid=42, config_yaml="trackedObjects: {}\n")
        with rec.batch():
            rec.append_event(run, EventRow(ts=1000, recv=1000.1234567891234, key=key, uid="u1", op=0, spec_hash=big_hash,
                                           owner_chain=(ObjKey(DEPLOY, "ns-ü", "top"),), body=obj("Deployment", "web", "ns-ü")))
            rec.upsert_object(key, uid="u1", spec_hash=big_hash)
            rec.insert_pod(uid="p1", namespace="ns-ü", name="web-1", owner=key, stable_hash=big_hash, start_ts=1000, end_ts=None,
                           first_seen=1000.5)
            rec.upsert_owner(key, OwnerRecord("u1", ()), fetched=1000.0)
            rec.set_watch_state(DEPLOY, "123", 1000.25)
            gap = rec.open_gap(run, DEPLOY, since=1000.5, cause="API unreachable", detail="refused")
            rec.heartbeat(run, 1001.75)
        assert rec.load_owner(key) == OwnerRecord("u1", ())
        rec.stop_run(run, 1002.0, clean=True)
        with pytest.raises(CacheError, match="recorded from another cluster"):
            rec.check_identity(Identity(server="https://b:6443", cluster_uid="uid-b", context="test", namespace=""))
    with open_cache(location(engine), create=True) as cache:
        rec = Recording(cache)
        assert rec.load_live_objects()[key].spec_hash == big_hash
        assert [(p.uid, p.start_ts, p.owner_gvk) for p in rec.load_live_pods().values()] == [("p1", 1000, DEPLOY)]
        assert rec.previous_run() is not None and rec.previous_run().clean  # type: ignore[union-attr]
        assert rec.begin_run(started=2000.0, pid=43, config_yaml="") == run + 1
        assert cache.conn.execute("SELECT recv, spec_hash FROM events").fetchall()[0] == (1000.1234567891234, big_hash - (1 << 64))
        assert tuple(cache.conn.execute("SELECT id, until FROM coverage_gaps").fetchone()) == (gap, 1002.0)


def test_a_restart_reconciles_what_happened_offline(tmp_path: Path, engine: str, emulator: Any, emulator_kubeconfig: str) -> None:
    from tests.cli.test_cli_start import NS, make_deployment

    now = time.time()
    make_deployment(emulator, "old", replicas=2, started=now - 60)
    make_deployment(emulator, "keep", replicas=1, started=now - 60)
    start = ["start", "--kubeconfig", emulator_kubeconfig, "--cache", engine, "--duration", "1s"]
    first = run_cli(start, home=tmp_path, timeout=120)
    assert first.code == 0, first.describe()
    emulator.delete("apps/v1", "Deployment", NS, "old", graceful=False)  # its ReplicaSet and pods go with it
    make_deployment(emulator, "new", replicas=1, started=time.time())
    second = run_cli([*start, "-o", "json"], home=tmp_path, timeout=120)
    assert second.code == 0, second.describe()
    report = __import__("json").loads(second.stdout)["reconciliation"]
    (kind,) = [k for k in report["kinds"] if k["kind"] == "apps/v1.Deployment"]
    assert [o["name"] for o in kind["deletedWhileOffline"]["objects"]] == ["old"]
    assert [o["name"] for o in kind["createdWhileOffline"]["objects"]] == ["new"]
    assert report["podsFinishedWhileOffline"]["count"] == 2
    assert _rows(engine, "SELECT name, op, inferred FROM events WHERE name IN ('old', 'new') ORDER BY name, id") == [
        ("new", 0, 1), ("old", 0, 0), ("old", 1, 1)]
    assert _rows(engine, "SELECT name, end_inferred, live FROM pods WHERE owner_name = 'old' ORDER BY name") == [
        ("old-rs-0", 1, 0), ("old-rs-1", 1, 0)]


def test_prune_keeps_what_later_exports_read_on_either_engine(tmp_path: Path, pg_url: str) -> None:
    sqlite_path, pg = tmp_path / "c.db", CacheUrl(pg_url, "test")
    for where in (sqlite_path, pg):
        builder = CacheBuilder(where)
        _tricky_history(builder)
        builder.close()
    later = {where: _export(where, 1011, 1300, tmp_path) for where in (sqlite_path, pg)}
    from kubectl_sktrace.store.prune import prune_cache

    plans = [prune_cache(where, before=1011, dry_run=True).result for where in (sqlite_path, pg)]
    results = [prune_cache(where, before=1011).result for where in (sqlite_path, pg)]
    assert [(p.events_removed, p.pods_removed, p.events_kept_before) for p in plans] == [
        (r.events_removed, r.pods_removed, r.events_kept_before) for r in results]
    assert results[0].events_removed == results[1].events_removed > 0
    assert (results[0].pods_removed, results[0].events_kept_before) == (results[1].pods_removed, results[1].events_kept_before)
    for where in (sqlite_path, pg):
        assert _export(where, 1011, 1300, tmp_path) == later[where] == later[sqlite_path]
    counts = [_rows(str(w) if isinstance(w, Path) else w.url, "SELECT gvk, op, sum(n) FROM event_counts GROUP BY gvk, op ORDER BY 1, 2", "test")
              for w in (sqlite_path, pg)]
    assert counts[0] == [tuple(int(v) if isinstance(v, Decimal) else v for v in row) for row in counts[1]]
    assert sum(row[2] for row in counts[0]) == _rows(str(sqlite_path), "SELECT count(*) FROM events")[0][0]


# --- export byte-equality ------------------------------------------------------------------------------


def _tricky_history(builder: CacheBuilder) -> None:
    """Names whose order differs between byte order and a language's collation, hashes past 2^63, precise floats,
    an offline creation stamped back, deletions, re-creations, bare and owned pods."""
    builder.run(started=999.5, stopped=1100.0)
    owner = ObjKey(DEPLOY, "app", "Zeta")
    for i, name in enumerate(["b", "B", "_a", "a-b", "Zeta", "zeta", "é"]):
        builder.apply(1000 + i, obj("Deployment", name, spec={"replicas": i, "h": "x" * i}), recv=1000 + i + 0.1234567891234567)
    builder.apply(1010, obj("Deployment", "b", spec={"replicas": 9}))
    builder.delete(1011, obj("Deployment", "B"))
    builder.apply(1012, obj("Deployment", "B", spec={"replicas": 1}), uid="uid-B-2")
    builder.apply(1003, obj("Deployment", "late"), inferred=True, recv=1050.5)
    builder.apply(1013, obj("Pod", "bare", spec={"containers": [{"name": "c"}]}))
    for i, name in enumerate(["p-b", "p-A", "p-a"]):
        builder.pod(name, owner=owner, stable_hash=(1 << 64) - 1 - i, start_ts=1001 + i, end_ts=1020 + i if i else None, first_seen=1001.5)
    builder.pod("bare", owner=None, stable_hash=7, start_ts=1013, end_ts=1030, first_seen=1013.3)
    builder.run(started=1200.25, stopped=1300.0)
    builder.delete(1200, obj("Deployment", "a-b"), inferred=True)


def _export(cache: str | Path | CacheUrl, start: int, end: int, tmp_path: Path, **options: Any) -> bytes:
    from kubectl_sktrace.export.options import ExportFilters
    from kubectl_sktrace.export.window import export_to

    out = tmp_path / f"out-{time.monotonic_ns()}.sktrace"
    export_to(cache, str(out), start_ts=start, end_ts=end, filters=options.pop("filters", ExportFilters()), keep_status=False,
              fmt=options.pop("fmt", "sktrace"), allow_empty=True, stdout=sys.stdout.buffer)
    return out.read_bytes()


@pytest.mark.parametrize("fmt", ["sktrace", "json"])
def test_the_same_history_exports_the_same_bytes_from_either_engine(tmp_path: Path, pg_url: str, fmt: str) -> None:
    sqlite_path, pg = tmp_path / "c.db", CacheUrl(pg_url, "test")
    for where in (sqlite_path, pg):
        builder = CacheBuilder(where)
        _tricky_history(builder)
        builder.close()
    for start, end in [(1000, 1300), (1005, 1012), (1011, 1250), (900, 1001)]:
        a = _export(sqlite_path, start, end, tmp_path, fmt=fmt)
        assert a == _export(pg, start, end, tmp_path, fmt=fmt), (start, end)
    assert len(traceformat.decode_trace(_export(pg, 1000, 1300, tmp_path)).events) > 5


def test_text_sorts_the_same_in_either_engine(tmp_path: Path, pg_url: str) -> None:
    """Every ORDER BY over names agrees: PostgreSQL's text sorts by code point, as sqlite's does, whatever the
    database's collation (the test server's is ICU en-US, which puts 'a' before 'B')."""
    sqlite_path, pg = tmp_path / "c.db", CacheUrl(pg_url, "test")
    for where in (sqlite_path, pg):
        builder = CacheBuilder(where)
        _tricky_history(builder)
        builder.close()
    sql = "SELECT gvk, namespace, name FROM events ORDER BY gvk, namespace, name, id"
    assert _rows(str(sqlite_path), sql) == _rows(pg_url, sql, "test")
    assert _rows(pg_url, "SELECT 'a' < 'B'", "test") == [(True,)]  # the database's own collation is not byte order


# --- stored references and last rows (schema 0006) ------------------------------------------------------

_STORED = "SELECT id, refs, daemonset FROM events ORDER BY id"
_LAST_ROWS = "SELECT gvk, namespace, name, last_ts, last_id, last_op FROM event_objects ORDER BY gvk, namespace, name"


def _at_schema_5(monkeypatch: pytest.MonkeyPatch, where: Path | CacheUrl, fill: Any) -> None:
    """A history written by a version that knew migrations 0001-0005 only (no stored references)."""
    with monkeypatch.context() as patch:
        patch.setattr("kubectl_sktrace.store.connection.MIGRATIONS", schema.MIGRATIONS[:5])
        patch.setattr("kubectl_sktrace.store.connection.SCHEMA_VERSION", 5)
        patch.setattr("kubectl_sktrace.store.postgres.PG_MIGRATIONS", pgschema.PG_MIGRATIONS[:5])
        old = CacheBuilder(where)
        assert not old.cache.has_column("events", "refs") and old.cache.schema_version() == 5
        fill(old)
        old.close()


def test_stored_references_export_the_same_bytes_from_either_engine(tmp_path: Path, pg_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both engines store the same references and DaemonSet ownership per applied row, and export the same bytes
    from them as a sqlite cache read as it is at schema 5 (no references stored: export decodes the bodies), and
    as copies of either into PostgreSQL."""
    from tests.export.test_events import record

    sqlite_path, pg_url = tmp_path / "c.db", pg_server.new_database()
    for where in (sqlite_path, CacheUrl(pg_url, "test")):
        builder = CacheBuilder(where)
        record(builder)
        builder.close()
    stored = _rows(str(sqlite_path), _STORED)
    assert stored == _rows(pg_url, _STORED, "test")
    assert sum(refs is not None for _, refs, _ in stored) == 8 and sum(daemonset == 1 for _, _, daemonset in stored) == 1
    old = tmp_path / "old.db"
    _at_schema_5(monkeypatch, old, record)
    from kubectl_sktrace.store.copying import copy_cache

    copy_cache(sqlite_path, (copied := pg_server.new_database()), context="copy")
    copy_cache(old, (copied_old := pg_server.new_database()), context="copy")
    assert _rows(copied, _STORED, "copy") == stored
    assert _rows(copied_old, "SELECT count(*) FROM events WHERE refs IS NOT NULL OR daemonset IS NOT NULL", "copy") == [(0,)]
    sources: list[Path | CacheUrl] = [CacheUrl(pg_url, "test"), old, CacheUrl(copied, "copy"), CacheUrl(copied_old, "copy")]
    for start, end in [(0, 10), (3, 10), (0, 100), (0, 200), (100, 200)]:
        for fmt in ("sktrace", "json"):
            expected = _export(sqlite_path, start, end, tmp_path, fmt=fmt)
            assert [_export(where, start, end, tmp_path, fmt=fmt) for where in sources] == [expected] * len(sources), (start, end, fmt)
    assert len(traceformat.decode_trace(_export(sqlite_path, 0, 200, tmp_path)).events) > 5


def test_each_objects_last_row_is_kept_the_same_by_either_engine(tmp_path: Path, pg_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``event_objects``' last row per object, as rows arrive, as a migration fills it from an older history, and
    as rows are deleted (an object's last one, or all of its rows)."""
    fresh = {"sqlite": tmp_path / "c.db", "postgresql": CacheUrl(pg_server.new_database(), "test")}
    migrated = {"sqlite": tmp_path / "old.db", "postgresql": CacheUrl(pg_server.new_database(), "test")}
    for where in fresh.values():
        builder = CacheBuilder(where)
        _tricky_history(builder)
        builder.close()
    for where in migrated.values():
        _at_schema_5(monkeypatch, where, _tricky_history)
        open_cache(where, create=False).close()  # migrates to this version's schema

    def last_rows(where: Path | CacheUrl) -> list[tuple[Any, ...]]:
        return _rows(str(where), _LAST_ROWS) if isinstance(where, Path) else _rows(where.url, _LAST_ROWS, where.history)

    expected = last_rows(fresh["sqlite"])
    assert ("apps/v1.Deployment", "app", "b", 1010, 8, 0) in expected and ("apps/v1.Deployment", "app", "B", 1012, 10, 0) in expected
    assert ("apps/v1.Deployment", "app", "a-b", 1200, 13, 1) in expected and ("apps/v1.Deployment", "app", "late", 1003, 11, 0) in expected
    assert [last_rows(where) for where in (fresh["postgresql"], migrated["sqlite"], migrated["postgresql"])] == [expected] * 3
    for where in fresh.values():
        with open_cache(where, create=False) as cache, cache.transaction() as conn:
            conn.execute("DELETE FROM events WHERE id IN (8, 10, 11) OR name = 'zeta'")  # b's and B's last rows, all of late and zeta
    after = last_rows(fresh["sqlite"])
    assert ("apps/v1.Deployment", "app", "b", 1000, 1, 0) in after and ("apps/v1.Deployment", "app", "B", 1011, 9, 1) in after
    assert ("apps/v1.Deployment", "app", "late", None, None, None) in after and ("apps/v1.Deployment", "app", "zeta", None, None, None) in after
    assert last_rows(fresh["postgresql"]) == after


def _many_gone(builder: CacheBuilder) -> None:
    """``record``'s history, then 300 ConfigMaps created and deleted, and one that stays."""
    from tests.export.test_events import record

    record(builder)
    for i in range(300):
        builder.apply(300, obj("ConfigMap", f"gone-{i}"))
        builder.delete(301, obj("ConfigMap", f"gone-{i}"))
    builder.apply(400, obj("ConfigMap", "stays"))


def test_the_state_at_a_windows_start_reads_the_changed_objects_on_either_engine(tmp_path: Path, pg_url: str,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Past many deleted objects, both engines read the state at a window's start from the objects alive at the end
    and those changed since (``event_objects_live``, ``events_late``), and export what a schema-5 cache reads by
    walking every object."""
    from kubectl_sktrace.store import history

    sqlite_path, pg, old = tmp_path / "c.db", CacheUrl(pg_url, "test"), tmp_path / "old.db"
    for where in (sqlite_path, pg):
        builder = CacheBuilder(where)
        _many_gone(builder)
        builder.close()
        with open_cache_readonly(where) as cache, cache.read_snapshot():
            assert "UNION" in history.last_row_per_object(cache, applied_only=False, before=500, known=600.0)
            state = list(history.state_at(cache, ts=500, known=600.0))
            assert len(state) == 8 and state[-1].key.name == "stays"
    _at_schema_5(monkeypatch, old, _many_gone)
    for start, end in [(500, 600), (302, 600), (0, 600)]:
        expected = _export(old, start, end, tmp_path)
        assert [_export(sqlite_path, start, end, tmp_path), _export(pg, start, end, tmp_path)] == [expected] * 2, (start, end)


def test_a_real_recording_copied_between_engines_exports_the_same_bytes(tmp_path: Path, pg_url: str) -> None:
    from sktrace_emulator import Emulator

    emu = Emulator(seed=5).start()
    try:
        kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
        traffic = Traffic(emu, seed=5, rate=60, namespace="copy").start()
        try:
            first = run_cli(["start", "--kubeconfig", str(kubeconfig), "--cache", str(tmp_path / "rec.db"), "--duration", "4s"],
                            home=tmp_path, timeout=120)
        finally:
            traffic.stop()
    finally:
        emu.stop()
    assert first.code == 0, first.describe()
    copied = run_cli(["cache", "copy", str(tmp_path / "rec.db"), pg_url], home=tmp_path)
    assert copied.code == 0, copied.describe()
    assert "s3cret" not in copied.stdout + copied.stderr and "postgresql://sktrace:****@" in copied.stdout
    back = run_cli(["cache", "copy", pg_url, str(tmp_path / "back.db")], home=tmp_path)
    assert back.code == 0, back.describe()
    for again in ([str(tmp_path / "rec.db"), pg_url], [pg_url, str(tmp_path / "back.db")]):  # a copy never merges two histories
        assert_one_error(run_cli(["cache", "copy", *again], home=tmp_path), "already holds a history; copy into a new DST")
    ((first_ts, last_ts),) = _rows(str(tmp_path / "rec.db"), "SELECT min(ts), max(ts) FROM events")
    traces = {}
    for name, cache in [("sqlite", str(tmp_path / "rec.db")), ("postgresql", pg_url), ("back", str(tmp_path / "back.db"))]:
        out = tmp_path / f"{name}.sktrace"
        result = run_cli(["export", "--cache", cache, "--context", CONTEXT, "-s", f"@{first_ts}", "-t", f"@{last_ts + 1}", "-O", str(out),
                          "--quiet"], home=tmp_path)
        assert result.code == 0, result.describe()
        traces[name] = out.read_bytes()
    assert traces["sqlite"] == traces["postgresql"] == traces["back"]
    events = traceformat.decode_trace(traces["postgresql"]).events
    # the traffic's five Deployments are there from the start; how many changes 4 s of it add depends on the machine's speed
    # (the emulator's controllers write status between them), so a floor of the changes would be luck: more than the five
    assert sum(len(e["applied_objs"]) + len(e["deleted_objs"]) for e in events) > 5
    statuses = [run_cli(["status", "--cache", cache, "--context", CONTEXT, "-o", "json"], home=tmp_path) for cache in (str(tmp_path / "rec.db"), pg_url)]
    counts = [{k: v for k, v in __import__("json").loads(s.stdout).items() if k in ("kinds", "pods", "events", "runs")} for s in statuses]
    assert counts[0] == counts[1]


# --- a recorder at work: readers beside it, a second one refused, kill -9 ---------------------------------


@pytest.fixture
def busy(tmp_path: Path) -> Iterator[tuple[Any, Path]]:
    """An emulator with a busy seeded workload; yields it and its kubeconfig."""
    from sktrace_emulator import Emulator

    emu = Emulator(seed=11).start()
    traffic = Traffic(emu, seed=11, rate=80, namespace="busy").start()
    try:
        yield emu, emu.write_kubeconfig(tmp_path / "kubeconfig")
    finally:
        traffic.stop()
        emu.stop()


def _reader_url(request: pytest.FixtureRequest, url: str) -> str:
    """The same database as a role that may only read it: any write a reader tried would fail."""
    server = request.getfixturevalue("pg_server")
    database = url.rsplit("/", 1)[1]
    schemas = [s for (s,) in _rows(url, "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'sktrace_h%' OR nspname = 'kubectl_sktrace'")]
    server.admin("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'reader') THEN "
                 "CREATE ROLE reader LOGIN PASSWORD 'r'; END IF; END $$")
    for name in schemas:
        server.admin(f"GRANT USAGE ON SCHEMA {name} TO reader; GRANT SELECT ON ALL TABLES IN SCHEMA {name} TO reader", database=database)
    return url.replace("sktrace:s3cret-pw@", "reader:r@")


@pytest.mark.slow
def test_readers_read_while_a_recorder_writes_and_never_write(tmp_path: Path, engine: str, busy: tuple[Any, Path],
                                                              request: pytest.FixtureRequest) -> None:
    _, kubeconfig = busy
    rec = Recorder(kubeconfig=kubeconfig, cache=Path(engine) if "://" not in engine else engine, home=tmp_path, log=tmp_path / "rec.log")  # type: ignore[arg-type]
    try:
        assert rec.wait_for("initial sync done", timeout=60), rec.output()
        time.sleep(1.5)
        reader = _reader_url(request, engine) if engine.startswith("postgresql://") else engine
        for _ in range(2):
            status = run_cli(["status", "--cache", reader, "--context", CONTEXT, "-o", "json"], home=tmp_path)
            assert status.code == 0, status.describe()
            assert __import__("json").loads(status.stdout)["runs"][-1]["state"] == "running"
            out = tmp_path / "live.sktrace"
            export = run_cli(["export", "--cache", reader, "--context", CONTEXT, "-s", "-1m", "-O", str(out), "--quiet"], home=tmp_path)
            assert export.code == 0, export.describe()
            assert traceformat.read_trace(out).events
            dry = run_cli(["prune", "--cache", reader, "--context", CONTEXT, "--before", "-5s", "--dry-run", "-o", "json"], home=tmp_path)
            assert dry.code == 0, dry.describe()
            time.sleep(0.5)
        assert rec.proc.poll() is None
    finally:
        assert rec.stop() == 0, rec.output()[-3000:]


@pytest.mark.slow
def test_a_second_recorder_is_refused_naming_the_first(tmp_path: Path, engine: str, busy: tuple[Any, Path]) -> None:
    _, kubeconfig = busy
    rec = Recorder(kubeconfig=kubeconfig, cache=engine, home=tmp_path, log=tmp_path / "rec.log")  # type: ignore[arg-type]
    try:
        assert rec.wait_for("initial sync done", timeout=60), rec.output()
        second = run_cli(["start", "--kubeconfig", str(kubeconfig), "--cache", engine, "--duration", "5s"], home=tmp_path)
        line = assert_one_error(second, f"another recorder (pid {rec.proc.pid}", "stop it first")
        assert "s3cret" not in second.stderr + second.stdout
        if engine.startswith("postgresql://"):
            assert f"pid {rec.proc.pid} on host " in line and "(history emulator)" in line
        prune = run_cli(["prune", "--cache", engine, "--kubeconfig", str(kubeconfig), "--before", "-1h"], home=tmp_path)
        assert_one_error(prune, f"a recorder (pid {rec.proc.pid}", "stop the recorder, then prune")
        assert rec.proc.poll() is None
    finally:
        assert rec.stop() == 0, rec.output()[-3000:]
    after = run_cli(["start", "--kubeconfig", str(kubeconfig), "--cache", engine, "--duration", "1s"], home=tmp_path, timeout=120)
    assert after.code == 0, after.describe()


def test_a_recorder_that_lost_its_lock_stops(tmp_path: Path, pg_server: Any, pg_url: str, busy: tuple[Any, Path]) -> None:
    """The lock's connection ended (a server restart, a network cut): another recorder could take the lock, so this
    one stops at its next commit, in one line, instead of writing beside it."""
    _, kubeconfig = busy
    rec = Recorder(kubeconfig=kubeconfig, cache=pg_url, home=tmp_path, log=tmp_path / "rec.log")
    try:
        assert rec.wait_for("initial sync done", timeout=60), rec.output()
        database = pg_url.rsplit("/", 1)[1]
        pg_server.admin("SELECT pg_terminate_backend(l.pid) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                        f"WHERE l.locktype = 'advisory' AND l.granted AND a.datname = '{database}'")
        assert rec.proc.wait(timeout=30) == 1, rec.output()[-3000:]
    finally:
        if rec.proc.poll() is None:
            rec.kill()
    errors = [line for line in rec.output().splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "lost the writer lock on postgresql://sktrace:****@" in errors[0], rec.output()[-3000:]
    assert "Traceback" not in rec.output()
    after = run_cli(["start", "--kubeconfig", str(kubeconfig), "--cache", pg_url, "--duration", "1s"], home=tmp_path, timeout=120)
    assert after.code == 0, after.describe()


def _committed(cache: str) -> dict[int, tuple[Any, ...]]:
    return {row[0]: row[1:] for row in _rows(cache, "SELECT id, ts, gvk, namespace, name, op, spec_hash, body FROM events")}


@pytest.mark.slow
def test_kill_9_mid_batch_loses_at_most_the_open_batch(tmp_path: Path, engine: str, busy: tuple[Any, Path]) -> None:
    _, kubeconfig = busy
    rng = random.Random(20261123)
    seen: dict[int, tuple[Any, ...]] = {}
    for round_ in range(3):
        rec = Recorder(kubeconfig=kubeconfig, cache=engine, home=tmp_path, log=tmp_path / "rec.log")  # type: ignore[arg-type]
        assert rec.wait_for("initial sync done", timeout=60), rec.output()
        time.sleep(rng.uniform(0.3, 1.2))
        before_kill = _committed(engine)
        killed_at = time.time()
        rec.kill()
        after = _committed(engine)
        assert {k: after.get(k) for k in before_kill} == before_kill, f"round {round_}: committed rows lost or changed"
        assert {k: after.get(k) for k in seen} == seen
        seen = after
        (stopped,) = _rows(engine, "SELECT stopped FROM runs ORDER BY id DESC LIMIT 1")[0]
        assert killed_at - stopped < 5.0  # the heartbeat moved with the commits up to the kill
    final = run_cli(["start", "--kubeconfig", str(kubeconfig), "--cache", engine, "--duration", "2s"], home=tmp_path, timeout=120)
    assert final.code == 0, final.describe()  # the lock died with its holder
    assert {k: _committed(engine).get(k) for k in seen} == seen
    states = [r["state"] for r in __import__("json").loads(
        run_cli(["status", "--cache", engine, "--context", CONTEXT, "-o", "json", "--runs", "all"], home=tmp_path).stdout)["runs"]]
    assert states == ["crashed", "crashed", "crashed", "clean"]


# --- hostile inputs ------------------------------------------------------------------------------------------


def _catalog(server: Any, url: str) -> list[tuple[Any, ...]]:
    """Every schema, table and registry row of the database: what 'nothing written' compares."""
    import psycopg

    with psycopg.connect(url) as conn:
        tables = conn.execute("SELECT n.nspname, c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                              "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') ORDER BY 1, 2").fetchall()
        registry = conn.execute("SELECT to_regclass('kubectl_sktrace.histories') IS NOT NULL").fetchone()[0]
        rows = conn.execute("SELECT * FROM kubectl_sktrace.histories ORDER BY id").fetchall() if registry else []
        counts = [conn.execute(f'SELECT count(*) FROM "{s}"."{t}"').fetchone() for s, t, k in tables if k == "r"]
    return [*tables, *rows, *counts]


def _reader_commands(cache: str) -> list[list[str]]:
    return [["status", "--cache", cache, "--context", CONTEXT], ["export", "--cache", cache, "--context", CONTEXT, "-s", "-1h", "-O", "-"],
            ["prune", "--cache", cache, "--context", CONTEXT, "--before", "-1h", "--dry-run"],
            ["prune", "--cache", cache, "--context", CONTEXT, "--before", "-1h"]]


@pytest.mark.parametrize("kind", ["unreachable", "wrong password", "no such database"])
def test_a_database_that_cannot_be_reached_is_one_line(tmp_path: Path, pg_server: Any, emulator_kubeconfig: str, kind: str) -> None:
    good = pg_server.new_database()
    url = {"unreachable": good.replace(f":{pg_server.port}/", ":1/"), "wrong password": good.replace("s3cret-pw", "wrong-pw"),
           "no such database": good.rsplit("/", 1)[0] + "/absent"}[kind]
    before = _catalog(pg_server, good)
    for args in [["start", "--kubeconfig", emulator_kubeconfig, "--cache", url, "--duration", "1s"], *_reader_commands(url)]:
        line = assert_one_error(run_cli(args, home=tmp_path), "cannot connect to postgresql://sktrace:****@127.0.0.1:")
        assert "wrong-pw" not in line and "s3cret" not in line
    assert _catalog(pg_server, good) == before


def test_a_database_of_another_application_is_left_untouched(tmp_path: Path, pg_server: Any, pg_url: str, emulator_kubeconfig: str) -> None:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE public.users (id int PRIMARY KEY, name text); INSERT INTO public.users VALUES (1, 'ann')")
    before = _catalog(pg_server, pg_url)
    assert_one_error(run_cli(["start", "--kubeconfig", emulator_kubeconfig, "--cache", pg_url, "--duration", "1s"], home=tmp_path),
                     "holds another application's tables (1, e.g. public.users)", "left untouched")
    for args in _reader_commands(pg_url):
        assert_one_error(run_cli(args, home=tmp_path), "no kubectl-sktrace history in postgresql://sktrace:****@")
    assert _catalog(pg_server, pg_url) == before


def _newer(engine: str) -> None:
    """Make the cache's schema one this version does not know."""
    if engine.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(engine, autocommit=True) as conn:
            conn.execute("INSERT INTO sktrace_h1.schema_migrations VALUES (%s, '0099_future', 0)", (len(pgschema.PG_MIGRATIONS) + 1,))
    else:
        import sqlite3

        conn = sqlite3.connect(engine, isolation_level=None)
        conn.execute("PRAGMA user_version = 99")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every byte in the main file: what the snapshot compares
        conn.close()


def test_a_newer_schema_is_refused_and_left_untouched(tmp_path: Path, engine: str, emulator_kubeconfig: str) -> None:
    first = run_cli(["start", "--kubeconfig", emulator_kubeconfig, "--cache", engine, "--duration", "1s"], home=tmp_path, timeout=120)
    assert first.code == 0, first.describe()
    _newer(engine)
    snapshot = _state(engine)
    for args in [["start", "--kubeconfig", emulator_kubeconfig, "--cache", engine, "--duration", "1s"], *_reader_commands(engine)]:
        assert_one_error(run_cli(args, home=tmp_path), "newer than this kubectl-sktrace knows", "upgrade kubectl-sktrace")
    assert _state(engine) == snapshot


def test_a_history_with_migrations_this_version_never_made_is_refused(tmp_path: Path, pg_url: str, emulator_kubeconfig: str) -> None:
    import psycopg

    start = ["start", "--kubeconfig", emulator_kubeconfig, "--cache", pg_url, "--duration", "1s"]
    assert run_cli(start, home=tmp_path, timeout=120).code == 0
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE sktrace_h1.schema_migrations SET name = '0002_something_else' WHERE number = 2")
    snapshot = _state(pg_url)
    for args in [start, *_reader_commands(pg_url)]:
        assert_one_error(run_cli(args, home=tmp_path), "has migrations this kubectl-sktrace never made",
                         "left untouched")
    assert _state(pg_url) == snapshot


def _state(engine: str) -> Any:
    if engine.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(engine) as conn:
            return [conn.execute("SELECT count(*) FROM sktrace_h1.events").fetchone(), conn.execute("SELECT * FROM sktrace_h1.runs").fetchall(),
                    conn.execute("SELECT number, name FROM sktrace_h1.schema_migrations").fetchall()]
    return Path(engine).read_bytes()


@pytest.mark.slow
def test_without_psycopg_a_database_cache_names_the_extra(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['psycopg'] = None\n"
            "from kubectl_sktrace.cli import main\n"
            "sys.argv = ['kubectl-sktrace', 'status', '--cache', 'postgresql://alice:hunter2@127.0.0.1:1/db', '--context', 'x']\n"
            "main()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=private_env(tmp_path), timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "Error: a postgresql:// cache needs psycopg, which is not installed; pip install 'kubectl-sktrace[postgres]'"]


@pytest.mark.slow
def test_sqlite_users_never_load_psycopg(tmp_path: Path, cache_builder: CacheBuilder) -> None:
    cache_builder.run(started=1000.0, stopped=1010.0)
    cache_builder.close()
    code = ("import sys\nfrom click.testing import CliRunner\nfrom kubectl_sktrace.cli import cli\n"
            f"r = CliRunner().invoke(cli, ['status', '--cache', {str(cache_builder.path)!r}])\nassert r.exit_code == 0, r.output\n"
            "r = CliRunner().invoke(cli, ['--help'])\nprint(sorted(m for m in sys.modules if m.split('.')[0] == 'psycopg'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=private_env(tmp_path)).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_the_password_never_shows(tmp_path: Path, pg_url: str, emulator_kubeconfig: str) -> None:
    started = run_cli(["start", "--kubeconfig", emulator_kubeconfig, "--cache", pg_url, "--duration", "1s", "-v", "6"], home=tmp_path,
                      timeout=120)
    assert started.code == 0, started.describe()
    shown = started.stdout + started.stderr
    for args in [["status", "--context", CONTEXT], ["status", "--context", CONTEXT, "-o", "json"], ["prune", "--before", "-1h", "--context", CONTEXT]]:
        result = run_cli(args, home=tmp_path, env={"SKTRACE_CACHE": pg_url})
        assert result.code == 0, result.describe()
        shown += result.stdout + result.stderr
    assert "postgresql://sktrace:****@127.0.0.1" in shown and "s3cret" not in shown


def test_a_database_names_its_histories_by_context(tmp_path: Path, pg_url: str, emulator_kubeconfig: str) -> None:
    from sktrace_emulator import Emulator

    second = Emulator(token="test-token", seed=2)  # another cluster (another kube-system uid): another history
    second.start()
    try:
        for kubeconfig in (emulator_kubeconfig, second.write_kubeconfig(tmp_path / "second", context="second")):
            result = run_cli(["start", "--kubeconfig", kubeconfig, "--cache", pg_url, "--duration", "1s"], home=tmp_path, timeout=120)
            assert result.code == 0, result.describe()
    finally:
        second.stop()
    # a laptop without a kubeconfig: the context names the history, and with two there is no guessing
    assert_one_error(run_cli(["status", "--cache", pg_url], home=tmp_path), "holds 2 histories (emulator, second); pass --context NAME")
    assert_one_error(run_cli(["status", "--cache", pg_url, "--context", "third"], home=tmp_path),
                     "no history of context 'third' in", "(it holds: emulator, second)")
    shown = run_cli(["status", "--cache", pg_url, "--context", "second", "-o", "json"], home=tmp_path)
    assert shown.code == 0 and __import__("json").loads(shown.stdout)["cluster"]["context"] == "second", shown.describe()


def test_pruned_history_is_recorded_shown_and_said_by_export_on_either_engine(tmp_path: Path, pg_url: str) -> None:
    from kubectl_sktrace.errors import EmptyTraceError
    from kubectl_sktrace.export.options import ExportFilters
    from kubectl_sktrace.export.window import export_to
    from kubectl_sktrace.record.status import render_status, status_to_dict
    from kubectl_sktrace.store.prune import prune_cache
    from kubectl_sktrace.store.status import cache_status

    sqlite_path, pg = tmp_path / "c.db", CacheUrl(pg_url, "test")
    for n, where in enumerate((sqlite_path, pg)):
        builder = CacheBuilder(where)
        _tricky_history(builder)
        builder.close()
        with open_cache_readonly(where) as cache:
            assert status_to_dict(cache_status(cache))["pruned"] is None
        prune_cache(where, before=1011.7)
        with open_cache_readonly(where) as cache:
            status = cache_status(cache)
        pruned = status_to_dict(status)["pruned"]
        assert pruned["before"] == "1970-01-01T00:16:51Z" and [p["source"] for p in pruned["by"]] == ["prune"]
        assert pruned["by"][0]["eventsRemoved"] > 0
        table = render_status(status, "table")
        assert "history before 1970-01-01T00:16:51Z is gone (prune at " in table, table
        into = export_to(where, str(tmp_path / "into.json"), start_ts=1000, end_ts=1300, filters=ExportFilters(), keep_status=False,
                         fmt="json", allow_empty=False, stdout=sys.stdout.buffer)
        block = next(w for w in into.warnings if w.startswith("coverage: "))
        assert "  history before 1970-01-01T00:16:51Z was pruned: objects and lifecycles before it are gone" in block
        assert "(11s, pruned)" in block  # the window's start (the history's, 999) to the cut, not observed
        after = export_to(where, str(tmp_path / "after.json"), start_ts=1011, end_ts=1300, filters=ExportFilters(), keep_status=False,
                          fmt="json", allow_empty=False, stdout=sys.stdout.buffer)
        assert not any("pruned" in w for w in after.warnings)
        with pytest.raises(EmptyTraceError, match="lies wholly before 1970-01-01T00:16:51Z, where the cache's history was pruned"):
            export_to(where, str(tmp_path / f"inside-{n}.json"), start_ts=1000, end_ts=1010, filters=ExportFilters(), keep_status=False,
                      fmt="json", allow_empty=False, stdout=sys.stdout.buffer)
        assert not (tmp_path / f"inside-{n}.json").exists()
        export_to(where, str(tmp_path / f"inside-{n}.json"), start_ts=1000, end_ts=1010, filters=ExportFilters(), keep_status=False,
                  fmt="json", allow_empty=True, stdout=sys.stdout.buffer)
