import math

import pytest
from conftest import key_of, obj

from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.store import history
from kubectl_sktrace.store.history import Run, config_in_force, known_until, uncovered
from kubectl_sktrace.trace.hashing import spec_hash


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
    assert [(ts, name, op, inferred) for ts, _, _, name, op, inferred in heads] == [
        (2, "b", 0, 0), (3, "a", 0, 0), (4, "c", 0, 1), (5, "b", 1, 0), (6, "b", 0, 0),
    ]
    events = list(history.window_events(filled.cache, start_ts=2, end_ts=7, known=7))
    assert [(e.ts, e.key.name, e.deleted) for e in events] == [(ts, name, op == 1) for ts, _, _, name, op, _ in heads]
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
    assert [(name, op) for _, _, _, name, op, _ in history.window_heads(b.cache, start_ts=0, end_ts=10, known=10)] == [("a", 0)]
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


def test_a_refusal_is_blind_time_a_kind_given_up_is_a_kind_the_run_did_not_record_and_not_served_is_neither(cache_builder):
    b = cache_builder
    run = b.run(started=0, stopped=100)
    with b.cache.transaction() as conn:
        conn.executemany("INSERT INTO coverage_gaps (run_id, gvk, since, until, cause, detail) VALUES (?, ?, ?, ?, ?, ?)", [
            (run, "apps/v1.Deployment", 10, 20, "API unreachable", "connection refused"),
            (run, "v1.Pod", 15, 25, "API unreachable", "connection refused"),
            (run, "apps/v1.StatefulSet", 1, None, "forbidden", "forbidden: cannot list statefulsets.apps in all namespaces"),
            (run, "batch/v1.CronJob", 30, 40, "forbidden", "forbidden: cannot watch cronjobs.batch in all namespaces"),
            (run, "batch/v1.Job", 2, 50, "watch failed", "the server no longer serves batch/v1.Job"),
            (run, "example.com/v1.Widget", 60, 70, "not served", "the server does not serve example.com/v1.Widget"),
        ])
    assert history.coverage_gaps(b.cache) == [
        history.CoverageGap(run, 1, 100, "forbidden", ("apps/v1.StatefulSet", "batch/v1.CronJob")),
        history.CoverageGap(run, 10, 25, "API unreachable", ("apps/v1.Deployment", "v1.Pod"))]
    assert history.unrecorded_kinds(b.cache) == [
        history.UnrecordedKind(run, "batch/v1.Job", 2, 50, "watch failed", "the server no longer serves batch/v1.Job")]
    # what ``status`` says the latest run did not record at its end: what was given up, what was still refused
    assert [(u.gvk, u.cause) for u in history.unrecorded_kinds(b.cache, refused_at_end=True)] == [
        ("apps/v1.StatefulSet", "forbidden"), ("batch/v1.Job", "watch failed")]
    assert history.unserved_spans(b.cache) == [
        history.UnrecordedKind(run, "example.com/v1.Widget", 60, 70, "not served", "the server does not serve example.com/v1.Widget")]
    assert history.not_served(b.cache, kinds={"example.com/v1.Widget"}) == [("example.com/v1.Widget", 60, 70)]
    assert history.not_served(b.cache, kinds={"apps/v1.Deployment"}) == []


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


# --- the state at a time read from the objects that may exist then (schema 0006) ----------------------------


def _random_history(b, rng, *, objects: int, rows: int) -> None:
    """Applies, deletions and leavings (a kind no longer tracked) of a few objects, some received late: stamped
    seconds or minutes before they were received, as a relist stamps what it finds."""
    b.run(started=0, stopped=10_000)
    t = 0.0
    for _ in range(rows):
        t += rng.choice([0.1, 0.5, 3.0])
        body = dep(f"d{rng.randrange(objects)}", rng.randrange(3))
        ts = int(t) - rng.choice([0, 0, 0, 0, 1, 5, 40]) if rng.random() < 0.3 else int(t)
        op = rng.choice(["apply", "apply", "delete", "untrack"])
        if op == "apply":
            b.apply(ts, body, recv=t)
        elif op == "delete":
            b.delete(ts, body, recv=t)
        else:
            key = key_of(body)
            with b.cache.transaction() as conn:
                conn.execute("INSERT INTO events (ts, recv, run_id, gvk, namespace, name, uid, op) VALUES (?, ?, ?, ?, ?, ?, 'u', 2)",
                             (ts, t, b.run_id, str(key.gvk), key.namespace, key.name))


def _state_ids(cache, *, ts, known, narrowed):
    sql = f"SELECT id, op FROM ({history.last_row_per_object(cache, applied_only=False, before=ts, known=known if narrowed else None)})"
    params = {"before": ts, "known": known, "since": history.since_param(ts, known)}
    return sorted(cache.conn.execute(sql, params).fetchall())


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_the_objects_that_may_exist_give_the_same_state_as_every_object(cache_builder, seed):
    import random

    rng = random.Random(seed)
    b = cache_builder
    _random_history(b, rng, objects=12, rows=400)
    end = int(b.cache.conn.execute("SELECT max(recv) FROM events").fetchone()[0]) + 1
    for _ in range(60):
        start = rng.randrange(0, end + 5)
        known = rng.choice([end + 10, start + rng.randrange(-50, 400) + rng.random()])
        narrowed = _state_ids(b.cache, ts=start, known=known, narrowed=True)
        full = _state_ids(b.cache, ts=start, known=known, narrowed=False)
        applied = [row for row in full if row[1] == history.APPLIED]
        assert [row for row in narrowed if row[1] == history.APPLIED] == applied, (start, known)


def test_each_objects_last_row_is_kept_through_inserts_out_of_order_and_deletions(cache_builder):
    import random

    b = cache_builder
    _random_history(b, random.Random(9), objects=20, rows=300)
    last = ("SELECT gvk, namespace, name, (SELECT id FROM events e WHERE e.gvk = k.gvk AND e.namespace = k.namespace AND e.name = k.name "
            "ORDER BY ts DESC, id DESC LIMIT 1) FROM event_objects k ORDER BY 1, 2, 3")
    stored = "SELECT gvk, namespace, name, last_id FROM event_objects ORDER BY 1, 2, 3"
    assert b.cache.conn.execute(stored).fetchall() == b.cache.conn.execute(last).fetchall()
    with b.cache.transaction() as conn:
        conn.execute("DELETE FROM events WHERE id IN (SELECT last_id FROM event_objects WHERE name IN ('d1', 'd2', 'd3'))")
        conn.execute("DELETE FROM events WHERE name = 'd4'")
    assert b.cache.conn.execute(stored).fetchall() == b.cache.conn.execute(last).fetchall()
    assert b.cache.conn.execute("SELECT last_id, last_op FROM event_objects WHERE name = 'd4'").fetchone() == (None, None)
    ops = "SELECT k.name, k.last_ts, k.last_op, e.ts, e.op FROM event_objects k JOIN events e ON e.id = k.last_id"
    assert all(row[1:3] == row[3:5] for row in b.cache.conn.execute(ops))


def test_the_state_at_a_window_start_costs_what_exists_not_what_ever_existed(cache_builder):
    """SQLite's own count of the steps it ran (not a time): the state of a recent second reads about the same
    whether the history before holds a hundred finished objects or five thousand (every object: fifty times)."""
    b = cache_builder
    b.run(started=0, stopped=100_000)

    def steps_for_state() -> int:
        count = [0]

        def tick() -> int:
            count[0] += 1
            return 0

        b.cache.conn.set_progress_handler(tick, 10)
        try:
            state = list(history.state_at(b.cache, ts=90_000, known=95_000))
        finally:
            b.cache.conn.set_progress_handler(None, 10)
        assert [e.key.name for e in state] == ["live-0", "live-1", "live-2"]
        return count[0]

    def finished_jobs(first: int, n: int) -> None:
        with b.cache.transaction() as conn:
            conn.executemany(
                "INSERT INTO events (ts, recv, run_id, gvk, namespace, name, uid, op) VALUES (?, ?, 1, 'batch/v1.Job', 'app', ?, 'u', ?)",
                [(t, t + 0.25, f"job-{i}", op) for i in range(first, first + n) for t, op in ((i * 10, 0), (i * 10 + 5, 1))])

    for i in range(3):
        b.apply(50_000 + i, dep(f"live-{i}"))
    finished_jobs(0, 100)
    few = steps_for_state()
    finished_jobs(100, 4900)
    many = steps_for_state()
    assert many < few * 2, (few, many)  # the indexes' depth grows, not the objects read
