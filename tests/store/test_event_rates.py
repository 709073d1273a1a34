"""The counts per minute and kind that the cache keeps beside its history (schema 0010, ``event_rates``), on both
engines: filled from the events already there by the migration, then kept exact by the triggers through the
recorder's batches, single rows, deletions, ``prune`` and the recorder's retention (a chain of prunes); and what
``view`` reads from them equals what the database counts from ``events``."""

from __future__ import annotations

import random
from typing import Any

import pytest
from conftest import CacheBuilder, location, obj

from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.store import open_cache, open_cache_readonly, pgschema, schema, viewing
from kubectl_sktrace.store.prune import prune_cache
from kubectl_sktrace.store.pruning import prune_before, step_before
from kubectl_sktrace.store.recording import EventRow, Recording

pytestmark = pytest.mark.timeout(300)

KINDS = ("Deployment", "ConfigMap", "Job")
LEVELS = (("event_rates", "minute", 60), ("event_rates_hourly", "hour", 3600))


def _rows(where: Any, sql: str) -> list[tuple[Any, ...]]:
    """Rows of one query read as a second process would (PostgreSQL's sums as integers)."""
    with open_cache_readonly(where) as cache:
        return [tuple(v if isinstance(v, str) else int(v) for v in row) for row in cache.conn.execute(sql).fetchall()]


def _assert_kept(where: Any) -> None:
    """Each table of counts holds what a GROUP BY over ``events`` counts, and no row of a count fallen to 0."""
    for table, column, size in LEVELS:
        kept = _rows(where, f"SELECT {column}, gvk, op, inferred, n FROM {table} ORDER BY 1, 2, 3, 4")
        counted = _rows(where, f"SELECT ts / {size}, gvk, op, inferred, count(*) FROM events GROUP BY ts / {size}, gvk, op, inferred "
                               "ORDER BY 1, 2, 3, 4")
        assert kept == counted, table
        assert kept and all(row[4] > 0 for row in kept)


def _random_rows(builder: CacheBuilder, seed: int, *, since: int, count: int) -> None:
    """Single rows, as the tests' builder writes them: applied and deleted, some reconstructed, over a few hours."""
    rng = random.Random(seed)
    for _ in range(count):
        kind, name = rng.choice(KINDS), f"o-{rng.randint(0, 20)}"
        ts, inferred = since + rng.randint(0, 4 * 3600), rng.random() < 0.2
        if rng.random() < 0.25:
            builder.delete(ts, obj(kind, name, "ns"), inferred=inferred)
        else:
            builder.apply(ts, obj(kind, name, "ns", spec={"n": rng.randint(0, 9)}), inferred=inferred)


def _recorded_batch(where: Any, *, since: int, count: int) -> None:
    """Many rows in one batch of the recorder (one COPY per batch on PostgreSQL: the statement triggers see them all)."""
    with open_cache(where, create=False) as cache:
        rec = Recording(cache)
        run = rec.begin_run(started=since, pid=7, config_yaml="trackedObjects: {}\n")
        with rec.batch():
            for i in range(count):
                key = ObjKey(GVK("apps", "v1", "Deployment"), "batch", f"d-{i % 7}")
                rec.append_event(run, EventRow(ts=since + i * 13, recv=since + i * 13 + 0.5, key=key, uid=f"u-{i % 7}", op=int(i % 5 == 4),
                                               inferred=i % 11 == 0, body=None if i % 5 == 4 else obj("Deployment", key.name, "batch")))
        rec.stop_run(run, since + count * 13, clean=True)


def _chain(where: Any, *, until: int, rows: int) -> None:
    """A chain of prunes in links of ``rows`` rows, as the recorder's retention runs it."""
    since = None
    with open_cache(where, create=False) as cache:
        while since is None or since.before < until:
            cutoff = step_before(cache, after=None if since is None else since.before, until=until, rows=rows)
            since = prune_before(cache, before=cutoff, since=since, compact=False).pruned


def test_the_counts_per_minute_stay_exact_through_writes_deletions_prune_and_retention(engine: str) -> None:
    where = location(engine)
    builder = CacheBuilder(where)
    builder.run(started=1_000_000, stopped=1_100_000)
    _random_rows(builder, 1, since=1_000_000, count=150)
    builder.close()
    _assert_kept(where)
    _recorded_batch(where, since=1_020_000, count=400)
    _assert_kept(where)
    with open_cache(where, create=False) as cache, cache.transaction() as conn:
        conn.execute("DELETE FROM events WHERE gvk = 'v1.ConfigMap' AND op = 1")
        conn.execute("DELETE FROM events WHERE id IN (SELECT id FROM events WHERE inferred = 1 ORDER BY id LIMIT 9)")
    _assert_kept(where)
    before = _rows(where, "SELECT count(*) FROM event_rates")[0][0], _rows(where, "SELECT count(*) FROM event_rates_hourly")[0][0]
    assert prune_cache(where, before=1_007_000).result.events_removed > 0
    _assert_kept(where)
    _chain(where, until=1_024_000, rows=15)
    _assert_kept(where)
    after = _rows(where, "SELECT count(*) FROM event_rates")[0][0], _rows(where, "SELECT count(*) FROM event_rates_hourly")[0][0]
    assert 0 < after[0] < before[0] and 0 < after[1] < before[1]  # pruned minutes and hours leave the tables


def test_the_migration_counts_the_history_already_recorded(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    where = location(engine)
    with monkeypatch.context() as patch:
        patch.setattr("kubectl_sktrace.store.connection.MIGRATIONS", schema.MIGRATIONS[:9])
        patch.setattr("kubectl_sktrace.store.connection.SCHEMA_VERSION", 8)
        patch.setattr("kubectl_sktrace.store.postgres.PG_MIGRATIONS", pgschema.PG_MIGRATIONS[:9])
        old = CacheBuilder(where)
        old.run(started=1_000_000, stopped=1_100_000)
        _random_rows(old, 2, since=1_000_000, count=120)
        assert not old.cache.has_table("event_rates")
        old.close()
    with open_cache(where, create=False) as cache:
        assert viewing.has_rates(cache)
    _assert_kept(where)
    assert _rows(where, "SELECT sum(n) FROM event_rates") == _rows(where, "SELECT count(*) FROM events")


@pytest.mark.parametrize("span", [(1_000_000, 1_014_400), (1_000_017, 1_003_623), (1_001_234, 1_001_250), (999_000, 1_020_000),
                                  (997_200, 1_015_200)])
def test_what_the_view_reads_from_the_counts_equals_the_events_counted(engine: str, span: tuple[int, int]) -> None:
    """Buckets of whole minutes and one window with ragged edges: the kept minutes plus the edges counted from the
    events give the database's own GROUP BY over ``events``."""
    where = location(engine)
    builder = CacheBuilder(where)
    builder.run(started=1_000_000, stopped=1_100_000)
    _random_rows(builder, 3, since=1_000_000, count=200)
    builder.close()
    start, end = span
    with open_cache_readonly(where) as cache:
        for width, origin in ((7200, start - start % 7200), (3600, start - start % 3600), (600, start - start % 600),
                              (60, start - start % 60), (45, start - start % 45), (end - start, start)):
            kept = viewing.per_bucket(viewing.rate_counts(cache, start=start, end=end, width=width, origin=origin))
            counted = viewing.per_bucket(viewing.minute_counts(cache, start=start, end=end, width=width, origin=origin))
            assert kept == counted and (counted or span == (1_001_234, 1_001_250))
