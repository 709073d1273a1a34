"""Schema 0014 on both engines: ``events_object`` carries ``inferred`` and ``pods_owner`` the pods' times, so the view
reads an object's changes, and finds and counts its pods, from the indexes alone. A cache recorded before it is read as
it is (never migrated by a reader, its answer the same) and migrates with its history whole at the first open for
writing; a kubectl-sktrace that knows only 0013 refuses the migrated cache. And a page of objects found by name walks
the objects once, its total included."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import location
from olderschema import assert_refused_at, at_schema

from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.store import open_cache, open_cache_readonly, schema, viewing
from kubectl_sktrace.store.recording import EventRow, Recording

pytestmark = pytest.mark.timeout(120)

DEPLOY = GVK("apps", "v1", "Deployment")
T0 = 1_800_000_000


def _record(where: Any, *, objects: int = 3, changes: int = 12, pods: int = 0) -> None:
    """``objects`` Deployments of ``changes`` rows each, every third reconstructed, the last object's last one a deletion,
    and ``pods`` pods each."""
    with open_cache(where, create=True) as cache:
        rec = Recording(cache)
        run = rec.begin_run(started=T0, pid=1, config_yaml="trackedObjects: {}\n")
        with rec.batch():
            for i in range(objects):
                key = ObjKey(DEPLOY, f"ns-{i % 2}", f"app-{i}")
                for n in range(changes):
                    gone = i == objects - 1 and n == changes - 1
                    body = None if gone else {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": key.name},
                                              "spec": {"replicas": n}}
                    rec.append_event(run, EventRow(ts=T0 + 10 * n + i, recv=T0 + 10 * n + i, key=key, uid=f"u{i}", op=1 if gone else 0,
                                                   inferred=n % 3 == 0, spec_hash=None if gone else n, body=body))
                for n in range(pods):  # pods one after the other, each ending after the next started; the last runs on
                    rec.insert_pod(uid=f"p{i}-{n}", namespace=key.namespace, name=f"{key.name}-{n}", owner=key, stable_hash=1,
                                   start_ts=None, end_ts=None, first_seen=T0)
                    rec.update_pod(f"p{i}-{n}", start_ts=T0 + 5 * n, end_ts=None if n == pods - 1 else T0 + 5 * n + 7, end_inferred=False,
                                   live=n == pods - 1)
        rec.stop_run(run, T0 + 10 * changes + 10, clean=True)


def _ticks(cache: Any, columns: int, *, start: int = T0) -> list[tuple[str, list[tuple[int, int, bool, int]], list[Any], int]]:
    rows, total = viewing.object_page(cache, gvk=None, namespace=None, search="", start=start, end=T0 + 1000, offset=0, limit=50,
                                      columns=columns)
    assert total == len(rows)
    return [(r.key.name, [(t.ts, t.op, t.inferred, t.n) for t in r.ticks], [(p.name, p.start, p.end, p.live) for p in r.pods], r.pods_total)
            for r in rows]


def _index_columns(cache: Any, index: str = "events_object") -> list[str]:
    if cache.engine == "postgresql":
        (definition,) = cache.conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = ? AND schemaname = current_schema()",
                                           (index,)).fetchone()
        return [c.strip() for c in definition.split("(", 1)[1].rstrip(")").split(",")]
    return [str(row[2]) for row in cache.conn.execute(f"PRAGMA index_info({index})")]


@pytest.mark.parametrize("columns", [200, 4])
def test_a_cache_before_0014_is_read_as_it_is_then_migrates_and_reads_the_same(engine: str, monkeypatch: pytest.MonkeyPatch,
                                                                                columns: int) -> None:
    where = location(engine)
    patch = at_schema(monkeypatch, 13)
    try:
        _record(where, pods=viewing.MAX_PODS + 5)
    finally:
        patch.__exit__(None, None, None)
    with open_cache_readonly(where) as cache:  # a reader (view) never migrates: the older index, the same answer
        assert cache.schema_version() == 13 and "inferred" not in _index_columns(cache)
        before = _ticks(cache, columns)
        later = _ticks(cache, columns, start=T0 + 200)  # the pods of the range: those that ended before it are not
    assert [name for name, *_ in before] == ["app-0", "app-2", "app-1"]  # by namespace, then name
    assert any(inferred for _, ticks, *_ in before for _, _, inferred, _ in ticks)
    assert all(sum(n for *_, n in ticks) == 12 for _, ticks, *_ in before)
    assert {name: ticks for name, ticks, *_ in before}["app-2"][-1][1] == 1  # the deletion is its column's tick
    pods = {name: (drawn, total) for name, _, drawn, total in before}["app-0"]
    assert len(pods[0]) == viewing.MAX_PODS and pods[1] == viewing.MAX_PODS + 5 and pods[0][0] == ("app-0-0", T0, T0 + 7, False)
    assert {name: (drawn[0], total) for name, _, drawn, total in later}["app-0"] == (("app-0-39", T0 + 195, T0 + 202, False), 26)
    with open_cache(where, create=False) as cache:  # the first open for writing migrates
        assert cache.schema_version() == len(schema.MIGRATIONS) == 19
        assert _index_columns(cache) == ["gvk", "namespace", "name", "ts", "id", "recv", "op", "inferred"]
        assert _index_columns(cache, "pods_owner") == ["owner_gvk", "owner_namespace", "owner_name", "start_ts", "end_ts"]
        assert cache.conn.execute("SELECT count(*) FROM events").fetchone()[0] == 36
    with open_cache_readonly(where) as cache:
        assert _ticks(cache, columns) == before and _ticks(cache, columns, start=T0 + 200) == later


def test_a_kubectl_sktrace_before_0014_refuses_a_migrated_cache(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    where = location(engine)
    _record(where)
    assert_refused_at(where, monkeypatch, 13)


def _statements(cache: Any, **page: Any) -> list[str]:
    """The statements a page of objects runs, with their parameters in them."""
    ran: list[str] = []
    cache.conn.set_trace_callback(ran.append)
    try:
        viewing.object_page(cache, gvk=None, namespace=None, **page)
    finally:
        cache.conn.set_trace_callback(None)
    return ran


@pytest.mark.parametrize("columns", [200, 4])
def test_an_object_s_changes_are_read_from_the_index_alone(tmp_path: Path, columns: int) -> None:
    where = tmp_path / "cache.db"
    _record(where, pods=viewing.MAX_PODS + 5)
    with open_cache_readonly(where) as cache:
        ran = _statements(cache, search="", start=T0, end=T0 + 1000, offset=0, limit=50, columns=columns)
        reads = [s for s in ran if re.search(r"SELECT id, ts, op, inferred FROM events", s)]
        assert len(reads) == 3  # one per object
        for statement in reads:
            plan = " ".join(str(row[-1]) for row in cache.conn.execute(f"EXPLAIN QUERY PLAN {statement}"))
            assert "USING COVERING INDEX events_object" in plan, plan
        # its pods: those drawn and their total found in the index, only the rows of those drawn read
        pods = [s for s in ran if "FROM pods" in s]
        assert len(pods) == 6
        for statement in pods:
            plan = [str(row[-1]) for row in cache.conn.execute(f"EXPLAIN QUERY PLAN {statement}")]
            assert any("USING COVERING INDEX pods_owner" in step for step in plan), plan
            assert all("USING INDEX pods_owner" not in step for step in plan), plan


def _like_counted(conn: sqlite3.Connection) -> list[int]:
    """sqlite's LIKE (ASCII case ignored, ``\\`` the escape), counting the objects it looks at."""
    seen = [0]

    def like(pattern: str, value: str, escape: str = "\\") -> bool:
        seen[0] += 1
        text, chars = "", iter(pattern)
        for c in chars:
            text += re.escape(next(chars, "")) if c == escape else ".*" if c == "%" else "." if c == "_" else re.escape(c)
        return re.fullmatch(text, value, re.I | re.S) is not None

    conn.create_function("like", 3, like)
    conn.create_function("like", 2, like)
    return seen


@pytest.mark.parametrize(("search", "offset", "limit", "expected"),
                         [("app-", 0, 50, 30), ("app-", 0, 7, 30), ("app-", 21, 7, 30), ("app-2", 0, 5, 11), ("app-29", 0, 5, 1),
                          ("ns-1/app-1", 0, 3, 6), ("nothing", 0, 5, 0)])
def test_a_name_search_walks_the_objects_once_and_counts_them_all(tmp_path: Path, search: str, offset: int, limit: int,
                                                                   expected: int) -> None:
    where = tmp_path / "cache.db"
    _record(where, objects=30, changes=1)
    with open_cache_readonly(where) as cache:
        seen = _like_counted(cache.conn)
        rows, total = viewing.object_page(cache, gvk=None, namespace=None, search=search, start=T0, end=T0 + 1000, offset=offset,
                                          limit=limit, columns=200)
        assert total == expected
        assert len(rows) == max(0, min(limit, expected - offset))
        patterns = len(viewing.search_patterns(search))
        # each object looked at once (a pattern a column), the total with the page: the count after a full page starts at
        # its last object, looked at again (two walks of the matches, as a count beside the page, would see 30 more)
        assert seen[0] <= 30 * patterns + 1
