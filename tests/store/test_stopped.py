"""Schema 0020 on both engines (``store/stopped``): what a clean stop keeps for the next start, carried forward by the
next clean stop, dropped for objects no longer live, copied by ``cache copy``; a cache recorded before 0020 migrates
and keeps nothing to trust yet, and a kubectl-sktrace that knows only 0019 refuses the migrated cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import location
from olderschema import assert_refused_at, at_schema

from kubectl_sktrace import __version__
from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.record import unchanged
from kubectl_sktrace.store import open_cache, open_cache_readonly, schema, stopped
from kubectl_sktrace.store.copying import copy_history
from kubectl_sktrace.store.recording import Identity, Recording

pytestmark = pytest.mark.timeout(120)

DEPLOY = GVK("apps", "v1", "Deployment")
T0 = 1_800_000_000.0
IDENTITY = Identity(server="https://cluster", cluster_uid="kube-system-uid", context="ctx", namespace="")


def _live(rec: Recording, *, objects: dict[str, str], pods: dict[str, bool]) -> None:
    """Within a batch: the live index holds ``objects`` (uid -> name), the pods table ``pods`` (uid -> live)."""
    for uid, name in objects.items():
        rec.upsert_object(ObjKey(DEPLOY, "ns", name), uid=uid, spec_hash=1, meta_hash=2)
    for uid, live in pods.items():
        rec.insert_pod(uid=uid, namespace="ns", name=uid, owner=None, stable_hash=None, start_ts=None, end_ts=None, first_seen=T0)
        if not live:
            rec.update_pod(uid, start_ts=None, end_ts=None, end_inferred=False, live=False)


def _stop(cache: Any, run: int, *, carried_from: int | None, rows: list[tuple[str, str, bytes]]) -> None:
    with cache.transaction():
        stopped.keep(cache, run_id=run, carried_from=carried_from, rows=rows, recorder=__version__)
    Recording(cache).stop_run(run, T0 + run * 100, clean=True)


def test_a_clean_stop_keeps_carries_and_drops_the_versions_of_what_is_live(engine: str) -> None:
    with open_cache(location(engine), create=True) as cache:
        rec = Recording(cache)
        first = rec.begin_run(started=T0, pid=1, config_yaml="")
        with rec.batch():
            _live(rec, objects={"d1": "web", "d2": "api"}, pods={"p1": True, "p2": True})
        _stop(cache, first, carried_from=None, rows=[("d1", "10", b"{}"), ("d2", "11", b'{"replicas":1}'), ("p1", "12", b"\x00\x01"),
                                                      ("p2", "13", b"{}")])
        assert stopped.load(cache, first) == {"d1": ("10", b"{}"), "d2": ("11", b'{"replicas":1}'), "p1": ("12", b"\x00\x01"),
                                              "p2": ("13", b"{}")}
        second = rec.begin_run(started=T0 + 150, pid=1, config_yaml="")
        with rec.batch():  # meanwhile: d2 deleted, p2 gone, d3 new; d1 changed
            cache.write("DELETE FROM objects WHERE uid = 'd2'")
            rec.update_pod("p2", start_ts=None, end_ts=None, end_inferred=False, live=False)
            _live(rec, objects={"d3": "new"}, pods={})
        _stop(cache, second, carried_from=first, rows=[("d1", "20", b'{"replicas":2}'), ("d3", "21", b"{}")])
        assert stopped.load(cache, first) == {}
        assert stopped.load(cache, second) == {"d1": ("20", b'{"replicas":2}'), "p1": ("12", b"\x00\x01"), "d3": ("21", b"{}")}
        third = rec.begin_run(started=T0 + 250, pid=1, config_yaml="")
        _stop(cache, third, carried_from=None, rows=[("d3", "30", b"{}")])  # it trusted none: only its own are kept
        assert stopped.load(cache, second) == {} and stopped.load(cache, third) == {"d3": ("30", b"{}")}


def test_a_copy_carries_the_versions_its_next_start_trusts(engine: str, tmp_path: Path) -> None:
    with open_cache(location(engine), create=True) as cache:
        rec = Recording(cache)
        rec.check_identity(IDENTITY)
        run = rec.begin_run(started=T0, pid=1, config_yaml="")
        with rec.batch():
            _live(rec, objects={"d1": "web"}, pods={"p1": True})
        _stop(cache, run, carried_from=None, rows=[("d1", "10", b"{}"), ("p1", "12", b'{"phase":"Running"}')])
        with open_cache(tmp_path / "copy.db", create=True) as copy, copy.writer_lock():
            copy_history(cache, copy)
        with open_cache(tmp_path / "copy.db", create=False) as copy:
            rec = Recording(copy)
            versions = unchanged.last_stop(rec, rec.previous_run(), cluster_uid=IDENTITY.cluster_uid)
            assert versions.stopped == {"d1": ("10", b"{}"), "p1": ("12", b'{"phase":"Running"}')} and versions.carried_from == run


def _record_before_0020(where: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    patch = at_schema(monkeypatch, 18)  # 0019_resume_positions is the 18th (0017 never shipped)
    try:
        with open_cache(where, create=True) as cache:
            rec = Recording(cache)
            rec.check_identity(IDENTITY)
            run = rec.begin_run(started=T0, pid=1, config_yaml="")
            with rec.batch():
                _live(rec, objects={"d1": "web"}, pods={"p1": True})
            rec.stop_run(run, T0 + 100, clean=True)
    finally:
        patch.__exit__(None, None, None)


def test_a_cache_before_0020_migrates_with_nothing_to_trust_yet(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    where = location(engine)
    _record_before_0020(where, monkeypatch)
    with open_cache_readonly(where) as cache:  # read as it is: no versions
        assert cache.schema_version() == 18 and stopped.load(cache, 1) == {}
    with open_cache(where, create=False) as cache:
        assert cache.schema_version() == len(schema.MIGRATIONS) == 19
        rec = Recording(cache)
        assert unchanged.last_stop(rec, rec.previous_run(), cluster_uid=IDENTITY.cluster_uid).stopped == {}  # the last run kept none
        run = rec.begin_run(started=T0 + 200, pid=1, config_yaml="")
        _stop(cache, run, carried_from=None, rows=[("d1", "10", b"{}")])
        assert unchanged.last_stop(rec, rec.previous_run(), cluster_uid=IDENTITY.cluster_uid).stopped == {"d1": ("10", b"{}")}


def test_a_kubectl_sktrace_before_0020_refuses_a_migrated_cache(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    where = location(engine)
    _record_before_0020(where, monkeypatch)
    with open_cache(where, create=False):
        pass  # migrated to 0020
    assert_refused_at(where, monkeypatch, 18)
