import io
import random
import shutil
from pathlib import Path

import pytest
from conftest import CacheBuilder, key_of, location, obj

from kubectl_sktrace.errors import CacheError, EmptyTraceError
from kubectl_sktrace.export.options import ExportFilters
from kubectl_sktrace.export.window import export_trace
from kubectl_sktrace.store import WriterLock, open_cache
from kubectl_sktrace.store.prune import prune_cache
from kubectl_sktrace.store.pruning import PrunedTo, prune_before, step_before


def export_bytes(path, start_ts, end_ts, *, allow_empty=False, **filters):
    out = io.BytesIO()
    with open_cache(path, create=False) as cache:
        export_trace(cache, start_ts=start_ts, end_ts=end_ts, filters=ExportFilters(**filters), keep_status=False, fmt="sktrace", stream=out,
                     allow_empty=allow_empty)
    return out.getvalue()


def random_history(builder: CacheBuilder, seed: int) -> None:
    """Deployments, ReplicaSets, ConfigMaps and bare pods created, changed, deleted and re-created over
    200 seconds; pods with lifecycles before, across and after any cutoff."""
    rng = random.Random(seed)
    builder.run(started=0, stopped=90)
    builder.run(started=110, stopped=200)
    live: dict[str, dict] = {}
    pods = 0
    for ts in range(0, 200, 2):
        for _ in range(rng.randint(0, 4)):
            kind = rng.choice(["Deployment", "ConfigMap", "Pod"])
            name = f"{kind.lower()}-{rng.randint(0, 12)}"
            ns = rng.choice(["app", "team", "kube-system"])
            ident = f"{kind}/{ns}/{name}"
            if ident in live and rng.random() < 0.35:
                gone = live.pop(ident)
                builder.delete(ts, gone, inferred=rng.random() < 0.2, uid=gone["metadata"]["uid"])
                continue
            spec = {"containers": []} if kind == "Pod" else {"replicas": rng.randint(1, 4)}
            body = obj(kind, name, ns, spec=spec, labels={"tier": rng.choice(["web", "db"])})
            new = ident not in live
            uid = f"uid-{ident}-{ts}" if new else live[ident]["metadata"]["uid"]
            body["metadata"]["uid"] = uid
            builder.apply(ts, body, uid=uid)
            live[ident] = body
            if kind == "Deployment":
                rs = obj("ReplicaSet", f"{name}-{ts}", ns, spec={"replicas": 1}, owners=[("Deployment", name)])
                builder.apply(ts, rs, owner_chain=[key_of(body)])
                start = ts + rng.randint(0, 5)
                end = None if rng.random() < 0.3 else start + rng.randint(0, 60)
                pods += 1
                builder.pod(f"p{pods}", namespace=ns, owner=key_of(body), stable_hash=rng.choice([1, 2]), start_ts=start, end_ts=end)
            if kind == "Pod" and new and rng.random() < 0.8:
                start = ts + rng.randint(0, 3)
                end = None if rng.random() < 0.5 else start + rng.randint(0, 40)
                builder.pod(name, namespace=ns, owner=key_of(body), stable_hash=3, start_ts=start, end_ts=end, uid=uid)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("cutoff", [30, 100, 150])
def test_prune_then_export_equals_export_without_prune(tmp_path, seed, cutoff):
    builder = CacheBuilder(tmp_path / "cache.db")
    random_history(builder, seed)
    builder.close()
    pristine = tmp_path / "pristine.db"
    shutil.copy(tmp_path / "cache.db", pristine)
    report = prune_cache(str(tmp_path / "cache.db"), before=cutoff + 0.9)
    assert report.before == cutoff
    assert report.result.events_removed > 0 or cutoff < 100
    windows = [(cutoff, cutoff + 1), (cutoff, 200), (cutoff + 7, cutoff + 40), (cutoff + 35, 260)]
    for start, end in windows:
        for filters in ({}, {"include_namespaces": frozenset({"team", "kube-system"})}):
            assert export_bytes(tmp_path / "cache.db", start, end, **filters) == export_bytes(pristine, start, end, **filters), (start, end, filters)
    if report.result.events_removed:  # earlier windows lose history, as they should, and export says so
        with pytest.raises(EmptyTraceError, match="where the cache's history was pruned"):
            export_bytes(tmp_path / "cache.db", 0, cutoff)
        assert export_bytes(tmp_path / "cache.db", 0, cutoff, allow_empty=True) != export_bytes(pristine, 0, cutoff)


def test_prune_counts_and_keeps_at_most_two_rows_per_object(cache_builder):
    b = cache_builder
    b.run(started=0, stopped=100)
    web = obj("Deployment", "web", spec={"replicas": 1})
    for ts in range(10):
        b.apply(ts, obj("Deployment", "web", spec={"replicas": ts}))
    b.delete(10, web)
    b.apply(11, obj("ConfigMap", "cm", spec={"x": 1}))
    b.apply(12, obj("ConfigMap", "cm", spec={"x": 2}))
    b.pod("old", owner=key_of(web), stable_hash=1, start_ts=1, end_ts=5)
    b.pod("new", owner=key_of(web), stable_hash=1, start_ts=1, end_ts=50)
    path = str(b.path)
    b.close()
    report = prune_cache(path, before=20)
    r = report.result
    assert (r.events_removed, r.events_kept_before, r.pods_removed) == (10, 3, 1)
    with open_cache(path, create=False) as cache:
        rows = cache.conn.execute("SELECT ts, name, op FROM events ORDER BY id").fetchall()
        assert rows == [(9, "web", 0), (10, "web", 1), (12, "cm", 0)]
        assert [p[0] for p in cache.conn.execute("SELECT name FROM pods")] == ["new"]
    assert report.as_mapping()["eventsRemoved"] == 10
    again = prune_cache(path, before=20).result
    assert (again.events_removed, again.pods_removed, again.vacuumed) == (0, 0, False)


@pytest.mark.slow
def test_prune_vacuums_when_much_space_is_free(tmp_path):
    b = CacheBuilder(tmp_path / "cache.db")
    b.run(started=0, stopped=1000)
    for ts in range(800):  # rows enough that the schema's own pages (one per table and index) are a small part
        b.apply(ts, obj("ConfigMap", "big", spec={"blob": [random.Random(ts).random() for _ in range(400)]}))
    b.close()
    result = prune_cache(str(tmp_path / "cache.db"), before=799).result
    assert result.events_removed == 798
    assert result.vacuumed
    assert result.bytes_after < result.bytes_before / 2
    assert result.freed_bytes > 0


def test_prune_refuses_while_a_recorder_holds_the_lock(cache_builder):
    cache_builder.run(started=0, stopped=1)
    path = str(cache_builder.path)
    with WriterLock(path):
        with pytest.raises(CacheError) as info:
            prune_cache(path, before=10)
    import os
    assert str(info.value) == f"a recorder (pid {os.getpid()}) is writing to {path}; prune cannot run alongside it: stop the recorder, then prune"


def test_prune_of_a_missing_cache(tmp_path):
    with pytest.raises(CacheError, match="no cache at"):
        prune_cache(str(tmp_path / "missing.db"), before=10)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("cutoff", [30, 100, 150])
def test_a_dry_run_counts_what_the_prune_then_removes(tmp_path, seed, cutoff):
    builder = CacheBuilder(tmp_path / "cache.db")
    random_history(builder, seed)
    builder.close()
    path = str(tmp_path / "cache.db")
    pristine = (tmp_path / "cache.db").read_bytes()
    plan = prune_cache(path, before=cutoff, dry_run=True)
    assert (tmp_path / "cache.db").read_bytes() == pristine and sorted(p.name for p in tmp_path.iterdir()) == ["cache.db"]
    done = prune_cache(path, before=cutoff).result
    p = plan.result
    assert (p.events_removed, p.pods_removed, p.events_kept_before, p.bytes_before) == (
        done.events_removed, done.pods_removed, done.events_kept_before, done.bytes_before)
    assert plan.as_mapping() == {"cache": path, "before": plan.as_mapping()["before"], "dryRun": True, "eventsRemoved": p.events_removed,
                                 "eventsKeptBefore": p.events_kept_before, "podsRemoved": p.pods_removed, "bytesBefore": p.bytes_before}


def test_a_dry_run_runs_beside_a_recorder(cache_builder):
    cache_builder.run(started=0, stopped=1)
    path = str(cache_builder.path)
    with WriterLock(path):
        assert prune_cache(path, before=10, dry_run=True).result.events_removed == 0


def test_prune_in_a_gap_keeps_what_a_window_ending_in_the_gap_reads(tmp_path):
    """A restart stamped an object created while offline back into the gap; a window ending in the gap reads
    only what was recorded before the gap, so the version before it must survive a prune in the gap."""
    b = CacheBuilder(tmp_path / "cache.db")
    b.run(started=0, stopped=90)
    web = obj("Deployment", "web", spec={"replicas": 1})
    b.apply(10, web)
    b.apply(20, obj("ConfigMap", "cm", spec={"x": 1}))
    b.pod("p", owner=key_of(web), stable_hash=1, start_ts=30, end_ts=90)  # its end not over at the last heartbeat
    b.run(started=110, stopped=200)
    b.apply(95, obj("Deployment", "web", spec={"replicas": 4}), inferred=True, recv=110.5)  # changed offline
    b.apply(98, obj("ConfigMap", "cm", spec={"x": 2}), inferred=True, recv=110.5)
    b.close()
    pristine = tmp_path / "pristine.db"
    shutil.copy(tmp_path / "cache.db", pristine)
    result = prune_cache(str(tmp_path / "cache.db"), before=100).result
    assert (result.events_removed, result.pods_removed) == (0, 0)
    for start, end in [(100, 105), (100, 120), (101, 200)]:
        assert export_bytes(tmp_path / "cache.db", start, end) == export_bytes(pristine, start, end), (start, end)
    again = prune_cache(str(tmp_path / "cache.db"), before=150).result
    assert (again.events_removed, again.pods_removed) == (2, 1)


# --- a chain of prunes (the running recorder's retention) -----------------------------------------------


def _late_rows(builder: CacheBuilder, seed: int, *, recv: float) -> None:
    """Objects found by a relist long after their second (a restart stamps offline creations back), and a few
    changes that follow, as a recorder goes on recording after a prune."""
    rng = random.Random(seed)
    for n in range(6):
        ts = rng.randint(40, 140)
        builder.apply(ts, obj("ConfigMap", f"configmap-{rng.randint(0, 12)}", "app", spec={"late": n}), inferred=True, recv=recv + n)
    for ts in range(200, 230, 3):
        builder.apply(ts, obj("Deployment", f"deployment-{rng.randint(0, 12)}", "team", spec={"replicas": ts}))


def _rows(location_: object) -> tuple[list[tuple[object, ...]], list[str]]:
    with open_cache(location_, create=False) as cache:  # type: ignore[arg-type]
        events = cache.conn.execute("SELECT ts, recv, gvk, namespace, name, uid, op FROM events ORDER BY ts, recv, gvk, namespace, name, op").fetchall()
        pods = [row[0] for row in cache.conn.execute("SELECT uid FROM pods ORDER BY uid")]
    return [tuple(r) for r in events], pods


def _chain(location_: object, *, until: int, rows: int, since: PrunedTo | None) -> tuple[PrunedTo | None, int]:
    """Prune up to ``until`` in links of about ``rows`` rows, as the recorder's retention does; the last link and how many."""
    links = 0
    with open_cache(location_, create=False) as cache:  # type: ignore[arg-type]
        while since is None or since.before < until:
            cutoff = step_before(cache, after=None if since is None else since.before, until=until, rows=rows)
            since = prune_before(cache, before=cutoff, since=since, compact=False).pruned
            links += 1
    return since, links


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_chain_of_prunes_removes_what_one_prune_removes(engine, seed):
    """One prune at the end, against links of a few rows each that look only at what changed since the link
    before, with rows recorded between two chains (late ones too, stamped back before the last link): the same
    rows survive."""
    one, chained = ((location(engine, "one"), location(engine, "chained")) if engine.startswith("postgresql://")
                    else (Path(engine).with_name("one.db"), Path(engine).with_name("chained.db")))
    builders = [CacheBuilder(one), CacheBuilder(chained)]
    for b in builders:
        random_history(b, seed)
    builders[1].close()
    last, links = _chain(chained, until=100, rows=5, since=None)
    assert links > 10 and last is not None and last.before == 100
    builders[1] = CacheBuilder(chained)
    builders[1].run_id = builders[0].run_id
    for b in builders:
        _late_rows(b, seed, recv=111)
        b.close()
    _chain(chained, until=150, rows=7, since=last)
    recorded = len(_rows(one)[0])
    with open_cache(one, create=False) as cache:
        removed = prune_before(cache, before=150).events_removed
    assert removed > recorded / 6
    assert _rows(chained) == _rows(one)
