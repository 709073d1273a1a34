import math

import pytest

from conftest import key_of, obj
from kubectl_sktrace.hashing import spec_hash
from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.store import history
from kubectl_sktrace.store.history import Run, config_in_force, known_until, uncovered


def dep(name, replicas=1):
    return obj("Deployment", name, spec={"replicas": replicas})


@pytest.fixture
def filled(cache_builder):
    b = cache_builder
    b.run(started=0, stopped=50, config="a")
    b.apply(1, dep("a"))
    b.apply(3, dep("a", 2), owner_chain=[ObjKey(GVK("apps", "v1", "Deployment"), "app", "top")])
    b.apply(2, dep("b"))
    b.delete(5, dep("b"))
    b.apply(6, dep("b", 3))
    b.delete(7, dep("c"))
    b.apply(4, dep("c"), inferred=True)  # written later, stamped earlier
    return b


def test_state_at_is_the_last_applied_version_of_live_objects(filled):
    state = list(history.state_at(filled.cache, ts=5, known=50))
    assert [(e.key.name, e.body["spec"]) for e in state] == [("a", {"replicas": 2}), ("b", {"replicas": 1}), ("c", {"replicas": 1})]
    assert state[0].owner_chain == (ObjKey(GVK("apps", "v1", "Deployment"), "app", "top"),)
    assert state[0].spec_hash == spec_hash({"replicas": 2})
    assert [e.key.name for e in history.state_at(filled.cache, ts=6, known=50)] == ["a", "c"]
    assert [e.key.name for e in history.state_at(filled.cache, ts=8, known=50)] == ["a", "b"]


def test_last_applied_before_keeps_deleted_objects(filled):
    rows = list(history.last_applied_before(filled.cache, ts=100, known=100))
    assert [(e.key.name, e.body["spec"]["replicas"]) for e in rows] == [("a", 2), ("b", 3), ("c", 1)]


def test_window_is_in_time_then_recorded_order(filled):
    heads = list(history.window_heads(filled.cache, start_ts=2, end_ts=7, known=7))
    assert [(h.ts, h.key.name, h.deleted, h.inferred) for h in heads] == [
        (2, "b", False, False), (3, "a", False, False), (4, "c", False, True), (5, "b", True, False), (6, "b", False, False),
    ]
    events = list(history.window_events(filled.cache, start_ts=2, end_ts=7, known=7))
    assert [e.id for e in events] == [h.id for h in heads]
    assert events[3].body is None and events[3].spec_hash is None


def test_pod_lifecycles_in_first_recorded_order(cache_builder):
    owner = key_of(dep("web"))
    cache_builder.pod("z", owner=owner, stable_hash=2**64 - 2, start_ts=5)
    cache_builder.pod("a", owner=owner, stable_hash=1, start_ts=1, end_ts=3)
    cache_builder.pod("late", owner=owner, stable_hash=1, start_ts=50)
    cache_builder.pod("orphan", owner=None, stable_hash=1, start_ts=1)
    rows = list(history.pod_lifecycles(cache_builder.cache, before=10, known=10))
    assert [(r.name, r.owner, r.stable_hash, r.start_ts, r.end_ts) for r in rows] == [
        ("z", owner, 2**64 - 2, 5, None), ("a", owner, 1, 1, 3),
    ]


def test_what_was_received_after_known_is_left_out(cache_builder):
    """A restart stamps an object created while offline with its creation time: a row stamped 4 but
    received at 60, after rows that were already final at 10."""
    b = cache_builder
    b.run(started=0, stopped=100)
    b.apply(1, dep("a"))
    b.apply(4, dep("a", 2), recv=60)
    b.apply(4, dep("late"), recv=60.5)
    b.delete(5, dep("a"), recv=60.5)
    owner = key_of(dep("web"))
    b.pod("seen", owner=owner, stable_hash=1, start_ts=2, first_seen=2.5)
    b.pod("seen-late", owner=owner, stable_hash=1, start_ts=3, first_seen=60)

    def names(rows):
        return [(r.key.name, r.deleted) for r in rows]

    assert names(history.state_at(b.cache, ts=10, known=10)) == [("a", False)]
    assert next(history.state_at(b.cache, ts=10, known=10)).body["spec"] == {"replicas": 1}
    assert names(history.last_applied_before(b.cache, ts=10, known=10)) == [("a", False)]
    assert names(history.window_heads(b.cache, start_ts=0, end_ts=10, known=10)) == [("a", False)]
    assert names(history.window_events(b.cache, start_ts=0, end_ts=10, known=61)) == [
        ("a", False), ("a", False), ("late", False), ("a", True),
    ]
    assert names(history.state_at(b.cache, ts=10, known=61)) == [("late", False)]
    assert [p.name for p in history.pod_lifecycles(b.cache, before=10, known=10)] == ["seen"]
    assert [p.name for p in history.pod_lifecycles(b.cache, before=10, known=61)] == ["seen", "seen-late"]
    assert list(history.state_at(b.cache, ts=10, known=-math.inf)) == []


def test_a_bare_pod_is_finished_in_the_state_only_once_its_end_was_known(cache_builder):
    b = cache_builder
    b.run(started=0, stopped=100)
    b.apply(1, obj("Pod", "job", spec={"containers": []}))
    b.pod("job", owner=None, stable_hash=1, start_ts=1, end_ts=8)
    assert [e.key.name for e in history.state_at(b.cache, ts=9, known=8)] == ["job"]  # ended in the second known is in
    assert [e.key.name for e in history.state_at(b.cache, ts=9, known=8.9)] == ["job"]
    assert [e.key.name for e in history.state_at(b.cache, ts=9, known=9)] == []


def run(start, stop, config="c", synced="at start"):
    return Run(id=0, started=start, synced=start if synced == "at start" else synced, stopped=stop, clean=True, config=config)


@pytest.mark.parametrize(
    "runs, window, gaps",
    [
        ([], (0, 10), [(0, 10)]),
        ([run(0, 10)], (2, 8), []),
        ([run(0, 4), run(6, 20)], (2, 8), [(4, 6)]),
        ([run(3, 5)], (0, 10), [(0, 3), (5, 10)]),
        ([run(0, 6), run(2, 4), run(5, 12)], (0, 10), []),
        ([run(20, 30)], (0, 10), [(0, 10)]),
    ],
    ids=["none", "covered", "gap-between", "gaps-around", "overlapping-runs", "run-after"],
)
def test_uncovered(runs, window, gaps):
    assert uncovered(runs, start=window[0], end=window[1]) == gaps


def test_config_in_force():
    runs = [run(0, 5, "first"), run(10, 20, "second")]
    assert config_in_force(runs, at=8) == "first"
    assert config_in_force(runs, at=15) == "second"
    assert config_in_force(runs, at=0) == "first"
    assert config_in_force([], at=1) is None


@pytest.mark.parametrize(
    "runs, end, known",
    [
        ([], 10, -math.inf),
        ([run(0, 20)], 10, 10),
        ([run(0, 10)], 10, 10),
        ([run(0, 8.5)], 10, 8.5),
        ([run(0, 4.5), run(6, 20)], 5, 4.5),
        ([run(0, 4.5), run(6, 20, synced=12)], 10, 4.5),
        ([run(0, 4.5), run(6, 20, synced=None)], 10, 4.5),
        ([run(0, 4.5), run(6, 20, synced=12)], 12, 12),
        ([run(0, 20, synced=None)], 10, -math.inf),
        ([run(0, 3, synced=None), run(5, 20)], 10, 10),
        ([run(20, 30)], 10, -math.inf),
    ],
    ids=[
        "no-run", "recording", "at-the-last-heartbeat", "after-the-last-heartbeat", "in-a-gap", "during-a-restarts-sync",
        "restart-never-synced", "at-the-sync", "first-run-not-synced", "after-a-run-that-never-synced", "before-any-run",
    ],
)
def test_known_until(runs, end, known):
    assert known_until(runs, end=end) == known


def test_a_kind_given_up_is_not_an_outage_but_a_kind_the_run_did_not_record(cache_builder):
    b = cache_builder
    run = b.run(started=0, stopped=100)
    with b.cache.transaction() as conn:
        conn.executemany("INSERT INTO coverage_gaps (run_id, gvk, since, until, cause, detail) VALUES (?, ?, ?, ?, ?, ?)", [
            (run, "apps/v1.Deployment", 10, 20, "API unreachable", "connection refused"),
            (run, "v1.Pod", 15, 25, "API unreachable", "connection refused"),
            (run, "apps/v1.StatefulSet", 1, None, "forbidden", "forbidden: cannot list statefulsets.apps in all namespaces"),
            (run, "batch/v1.Job", 2, 50, "watch failed", "the server no longer serves batch/v1.Job"),
        ])
    assert history.coverage_gaps(b.cache) == [
        history.CoverageGap(run, 10, 25, "API unreachable", ("apps/v1.Deployment", "v1.Pod"))]
    assert history.unrecorded_kinds(b.cache) == [
        history.UnrecordedKind(run, "apps/v1.StatefulSet", 1, 100, "forbidden", "forbidden: cannot list statefulsets.apps in all namespaces"),
        history.UnrecordedKind(run, "batch/v1.Job", 2, 50, "watch failed", "the server no longer serves batch/v1.Job"),
    ]


def _events_scans(cache, read):
    """The plan steps that walk the whole of ``events`` (or one of its indexes) in the statements ``read`` runs."""
    statements = []
    cache.conn.set_trace_callback(statements.append)  # the SQL with its values bound (Python 3.11)
    try:
        read()
    finally:
        cache.conn.set_trace_callback(None)
    scans = []
    for sql in statements:
        if sql.lstrip().upper().startswith("SELECT") or sql.lstrip().upper().startswith("WITH"):
            for *_, detail in cache.conn.execute("EXPLAIN QUERY PLAN " + sql):
                if detail.startswith(("SCAN e ", "SCAN events")) or detail in ("SCAN e", "SCAN events"):
                    scans.append((detail, sql))
    return scans


@pytest.mark.parametrize("read", [
    pytest.param(lambda c: list(history.state_at(c, ts=5, known=50)), id="state_at"),
    pytest.param(lambda c: list(history.last_applied_before(c, ts=5, known=50)), id="last_applied_before"),
    pytest.param(lambda c: history.untracked_before(c, start_ts=5, end_ts=9, known=50), id="untracked_before"),
    pytest.param(lambda c: list(history.window_events(c, start_ts=2, end_ts=7, known=50)), id="window_events"),
])
def test_reading_a_window_walks_no_history_but_its_own(filled, read):
    filled.delete(8, dep("a"))
    assert _events_scans(filled.cache, lambda: read(filled.cache)) == []


def test_an_older_schema_ranks_the_history_and_finds_the_same_rows(filled):
    seek = [(e.id, e.key.name) for e in history.state_at(filled.cache, ts=6, known=50)]
    applied = [e.id for e in history.last_applied_before(filled.cache, ts=100, known=100)]
    filled.cache.conn.execute("DROP TABLE event_objects")  # as a cache of schema 4 read as it is
    assert [(e.id, e.key.name) for e in history.state_at(filled.cache, ts=6, known=50)] == seek == [(2, "a"), (7, "c")]
    assert [e.id for e in history.last_applied_before(filled.cache, ts=100, known=100)] == applied


def test_both_ways_to_an_objects_last_row_agree_at_every_time(filled):
    """Early times rank the few rows before them, later ones step through the objects: the same rows either way."""
    def snapshot():
        return [([e.id for e in history.state_at(filled.cache, ts=t, known=50)],
                 [e.id for e in history.last_applied_before(filled.cache, ts=t, known=50)]) for t in range(0, 10)]

    chosen = snapshot()
    filled.cache.conn.execute("DROP TABLE event_objects")
    assert chosen == snapshot()
