"""Which kinds a restart resumes, and the positions a run stores as ones to resume from (``record/resuming``)."""

from __future__ import annotations

from pathlib import Path

from kubectl_sktrace.model import GVK, POD
from kubectl_sktrace.record.changes import written_second
from kubectl_sktrace.record.resuming import Positions, resumable
from kubectl_sktrace.store import open_cache
from kubectl_sktrace.store.recording import Recording

DEPLOY = GVK("apps", "v1", "Deployment")
CM = GVK("", "v1", "ConfigMap")


def test_a_kind_resumes_only_tracked_as_before_large_and_on_the_same_cluster() -> None:
    positions = {DEPLOY: "10", POD: "11", CM: "12"}
    sizes = {DEPLOY: 500, POD: 499, CM: 900}
    kinds = dict(positions=positions, watched=[DEPLOY, POD, CM], fresh=[CM], sizes=sizes, at_least=500)
    assert resumable(**kinds, cluster_uid="u1", stored_uid="u1") == {DEPLOY: "10"}  # pods: too few; config maps: fresh
    assert resumable(**kinds, cluster_uid="u1", stored_uid="u2") == {}  # another cluster
    assert resumable(**kinds, cluster_uid="", stored_uid="") == {}  # a cluster whose identity could not be read


def test_positions_are_resumable_only_once_the_run_synced(tmp_path: Path) -> None:
    rec = Recording(open_cache(tmp_path / "c.db", create=True))
    run = rec.begin_run(started=1.0, pid=1, config_yaml="")
    positions = Positions(rec, run)
    with rec.batch():
        positions.listed(DEPLOY, "10")
        positions.store(2.0, synced=False)  # a kind listed, another not yet: its deletions wait, nothing to resume from
    assert rec.resume_positions(run) == {}
    with rec.batch():
        positions.listed(POD, "20")
        positions.store(3.0, synced=True)
    assert rec.resume_positions(run) == {DEPLOY: "10", POD: "20"}
    with rec.batch():
        positions.refused(POD)  # refused or not served: the next run lists it
        positions.reached(DEPLOY, "30")
        positions.store(4.0, synced=True)
    assert rec.resume_positions(run) == {DEPLOY: "30"}


def test_a_resumed_version_is_stamped_at_its_last_write_inside_the_gap() -> None:
    def obj(*times: str) -> dict[str, object]:
        return {"metadata": {"managedFields": [{"manager": f"m{i}", "time": t} for i, t in enumerate(times)]}}

    gap, recv = 1_800_000_000.5, 1_800_000_100.0  # 2027-01-15T08:00:00Z and 100 s later
    assert written_second(obj("2027-01-15T08:00:10Z", "2027-01-15T08:00:42Z"), gap=gap, recv=recv) == 1_800_000_042
    assert written_second(obj("2027-01-15T08:00:00Z"), gap=gap, recv=recv) == 1_800_000_000  # the gap's own second counts
    assert written_second(obj("2027-01-15T07:59:59Z"), gap=gap, recv=recv) is None  # before the gap: at the restart
    assert written_second(obj("2027-01-15T08:01:40Z"), gap=gap, recv=recv) is None  # not before it was received
    assert written_second({"metadata": {}}, gap=gap, recv=recv) is None
    assert written_second(obj("2027-01-15T08:00:10Z"), gap=None, recv=recv) is None
