"""SimKube's reference rules checked from the references the recorder stores (schema 0006), and from the bodies
where none are stored: the same trace, the same warnings."""

import io
from collections import Counter
from pathlib import Path

import pytest
import yaml
from conftest import DEFAULT_CONFIG_YAML, CacheBuilder, obj

from kubectl_sktrace.export import events as exportevents
from kubectl_sktrace.export.events import count_groups, groups, stored_refs_usable
from kubectl_sktrace.export.options import ExportFilters
from kubectl_sktrace.export.window import export_trace
from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.store import history, open_cache, open_cache_readonly, schema
from kubectl_sktrace.store.history import Run
from kubectl_sktrace.trace.files.format import decode_trace
from kubectl_sktrace.trace.reports.validation import RULES, ReferenceRules, validate_trace
from kubectl_sktrace.tracerconfig import parse_config

WIDGET = GVK("example.com", "v1", "Widget")
WIDGET_A = "trackedObjects:\n  example.com/v1.Widget:\n    podSpecTemplatePaths: [/spec/a]\n"
WIDGET_B = "trackedObjects:\n  example.com/v1.Widget:\n    podSpecTemplatePaths: [/spec/b]\n  v1.ServiceAccount: {}\n"


def web(version: int, *, secret: str = "db") -> dict:
    spec = {"replicas": version, "template": {"spec": {
        "serviceAccountName": "web",
        "containers": [{"name": "c", "image": f"web:{version}", "env": [{"name": "P", "valueFrom": {"secretKeyRef": {"name": secret}}}]}],
        "volumes": [{"name": "v", "configMap": {"name": "web-config"}}]}}}
    return obj("Deployment", "web", spec=spec)


def widget(name: str) -> dict:
    return obj("Widget", name, api_version="example.com/v1",
               spec={"a": {"spec": {"serviceAccountName": "sa-a"}}, "b": {"spec": {"serviceAccountName": "sa-b"}}})


def record(b: CacheBuilder) -> None:
    """Two runs: Deployments whose references come and go, then a kind whose template path the second run moved."""
    b.run(started=0, stopped=50)
    b.apply(1, web(1))
    b.apply(2, obj("ConfigMap", "web-config"))
    b.apply(3, web(2))
    b.delete(4, obj("ConfigMap", "web-config"))
    b.apply(5, web(3, secret="other"))
    b.apply(6, obj("Deployment", "agent", spec={"replicas": 1}, owners=[("DaemonSet", "node-agent")]))
    b.apply(7, obj("ReplicaSet", "web-1", owners=[("Deployment", "web")]))
    b.run(started=60, stopped=100, config=WIDGET_A)
    b.apply(61, widget("w1"))
    b.run(started=110, stopped=200, config=WIDGET_B)
    b.apply(111, widget("w2"))
    b.apply(112, obj("ServiceAccount", "sa-b"))
    b.apply(113, widget("w3"))


def export(cache, start: int, end: int, *, fmt: str = "sktrace", keep_status: bool = False):
    out = io.BytesIO()
    report = export_trace(cache, start_ts=start, end_ts=end, filters=ExportFilters(), keep_status=keep_status, fmt=fmt, stream=out)
    return report, out.getvalue()


@pytest.fixture
def migrated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The history recorded at schema 5 (no references stored), then opened by this version (migrated)."""
    path = tmp_path / "migrated.db"
    with monkeypatch.context() as patch:
        patch.setattr("kubectl_sktrace.store.connection.MIGRATIONS", schema.MIGRATIONS[:5])
        patch.setattr("kubectl_sktrace.store.connection.SCHEMA_VERSION", 5)
        old = CacheBuilder(path)
        assert not old.cache.has_column("events", "refs")
        record(old)
        old.close()
    with open_cache(path, create=False) as cache:
        assert cache.conn.execute("SELECT count(*) FROM events WHERE refs IS NOT NULL").fetchone() == (0,)
        yield cache


@pytest.fixture
def schema_5(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The history recorded at schema 5, read as it is (export never migrates a cache)."""
    path = tmp_path / "old.db"
    with monkeypatch.context() as patch:
        patch.setattr("kubectl_sktrace.store.connection.MIGRATIONS", schema.MIGRATIONS[:5])
        patch.setattr("kubectl_sktrace.store.connection.SCHEMA_VERSION", 5)
        old = CacheBuilder(path)
        record(old)
        old.cache.checkpoint()
        old.close()
    with open_cache_readonly(path) as cache:
        assert cache.conn.execute("PRAGMA user_version").fetchone() == (5,)
        yield cache


@pytest.fixture
def fresh(tmp_path: Path):
    b = CacheBuilder(tmp_path / "fresh.db")
    record(b)
    assert b.cache.conn.execute("SELECT count(*) FROM events WHERE refs IS NOT NULL").fetchone() == (8,)
    yield b.cache
    b.close()


@pytest.mark.slow
@pytest.mark.parametrize(("start", "end"), [(0, 10), (3, 10), (0, 100), (0, 200), (100, 200)])
@pytest.mark.parametrize(("fmt", "keep_status"), [("sktrace", False), ("sktrace", True), ("json", False)])
def test_an_export_of_a_cache_migrated_from_schema_5_equals_one_from_a_fresh_cache(migrated, fresh, start, end, fmt, keep_status):
    old_report, old_bytes = export(migrated, start, end, fmt=fmt, keep_status=keep_status)
    new_report, new_bytes = export(fresh, start, end, fmt=fmt, keep_status=keep_status)
    assert new_bytes == old_bytes
    assert new_report == old_report


def test_the_warnings_count_what_validate_finds(fresh, tmp_path: Path):
    for start, end in [(0, 10), (0, 200)]:
        report, data = export(fresh, start, end)
        (tmp_path / "t.sktrace").write_bytes(data)
        found = Counter(f.code for f in validate_trace(str(tmp_path / "t.sktrace")).findings)
        per_rule = ", ".join(f"{found[code]} {code} {RULES[code]}" for code in sorted(found))
        assert f"with {sum(found.values())} errors ({per_rule})" in report.warnings[-1]
    assert found == {"E0001": 2}  # the Widgets under the third run's path: sa-b, applied after w1 and w2


def test_stored_references_spare_decoding_the_bodies_of_their_runs(fresh, monkeypatch: pytest.MonkeyPatch):
    decoded: list[bytes] = []
    real = exportevents.loads

    def loads(data: bytes):
        decoded.append(data)
        return real(data)

    monkeypatch.setattr(exportevents, "loads", loads)
    export(fresh, 0, 100)
    assert decoded == []
    # the third run moved the Widget's template path: the first run's Widget (stored under /spec/a) is decoded, the
    # third run's are not; a Widget decoded says sa-b, as the trace's config reads it
    export(fresh, 0, 200)
    assert len(decoded) == 1 and b"sa-a" in decoded[0]


def test_stored_references_count_for_the_runs_that_used_the_rules_paths():
    rules = ReferenceRules(parse_config(yaml.safe_load(WIDGET_B), source="the trace's config"))
    runs = [Run(id=n, started=n, synced=n, stopped=n, clean=True, config=config)
            for n, config in enumerate([DEFAULT_CONFIG_YAML, WIDGET_A, WIDGET_B, "trackedObjects: [", WIDGET_B.replace("/spec/b", "/status/b")])]
    assert stored_refs_usable(runs, rules) == {0: frozenset(), 1: frozenset(), 2: frozenset({WIDGET}), 4: frozenset()}
    # a template under status: the stored body has no status, the references were read with it
    into_status = ReferenceRules(parse_config(yaml.safe_load(runs[4].config), source="the trace's config"))
    assert stored_refs_usable(runs, into_status)[4] == frozenset()




def test_the_filters_read_daemonset_owners_from_the_rows_not_the_bodies(migrated, fresh, monkeypatch: pytest.MonkeyPatch):
    """Every object the history applied is judged by the filters (SimKube's index lists them all), from its body
    only where the recorder did not store whether a DaemonSet owns it."""
    calls = []
    real = history.StoredEvent.packed

    def packed(self):
        calls.append(self.key.name)
        return real(self)

    monkeypatch.setattr(history.StoredEvent, "packed", packed)
    for cache, judged in ((migrated, 4), (fresh, 0)):  # web, web-config, agent, web-1: each one's last version
        calls.clear()
        report, data = export(cache, 0, 10)
        assert len(calls) == judged
        index = decode_trace(data).index
        assert {kind: sorted(objects) for kind, objects in index.items()} == {
            "apps/v1.Deployment": ["app/web"], "apps/v1.ReplicaSet": ["app/web-1"], "v1.ConfigMap": ["app/web-config"]}  # not agent


@pytest.mark.parametrize("seed", range(20))
def test_the_counting_pass_counts_the_events_the_writing_pass_writes(seed):
    import random

    rng = random.Random(seed)
    kinds = [GVK("apps", "v1", "Deployment"), GVK("", "v1", "ConfigMap")]
    keys = [ObjKey(kinds[i % 2], "app", f"o{i}") for i in range(5)]
    exported = {key: 1 for key in keys if rng.random() < 0.7}
    heads, rows = [], []
    ts = 0
    for n in range(rng.randrange(0, 60)):
        ts += rng.choice([0, 0, 0, 1, 2])
        key, deleted, inferred = rng.choice(keys), rng.random() < 0.4, rng.random() < 0.2
        heads.append((ts, str(key.gvk), key.namespace, key.name, int(deleted), int(inferred)))
        rows.append(history.StoredEvent(n, ts, key, "u", deleted, inferred, None, (), None, None))
    written = list(groups(rows, exported))
    count = count_groups(iter(heads), {(str(k.gvk), k.namespace, k.name) for k in exported})
    assert count.groups == len(written)
    assert count.inferred == sum(r.inferred for _, group in written for r in group)
    assert count.inferred_deleted == sum(r.inferred and r.deleted for _, group in written for r in group)


@pytest.mark.parametrize(("start", "end"), [(0, 10), (3, 10), (0, 200), (100, 200)])
def test_an_export_of_a_cache_read_at_schema_5_equals_one_from_a_fresh_cache(schema_5, fresh, start, end):
    assert export(schema_5, start, end) == export(fresh, start, end)
