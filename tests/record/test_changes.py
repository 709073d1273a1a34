"""What watch events and relist items mean for tracked objects (docs/spec.md §4 applied/identity, §5 step 2)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubectl_sktrace.model import GVK, POD, LiveObject, ObjKey
from kubectl_sktrace.record import changes
from kubectl_sktrace.record.changes import (
    Decision,
    decide_applied,
    event_second,
    is_skipped_owned,
    same_uid,
    vanished,
)
from kubectl_sktrace.trace.hashing import spec_hash
from kubectl_sktrace.trace.revisions import DATA, METADATA, SPEC
from kubectl_sktrace.trace.sanitize import read_head

DEPLOYMENT = GVK("apps", "v1", "Deployment")


def key(name: str, namespace: str = "ns") -> ObjKey:
    return ObjKey(DEPLOYMENT, namespace, name)


@pytest.mark.parametrize(
    "known, uid, spec_hash, expected",
    [
        pytest.param(None, "u1", 7, Decision(delete_first=False, change=SPEC, spec_hash=7), id="new-object-applied"),
        pytest.param(LiveObject("u1", 7), "u1", 7, Decision(delete_first=False, change=None, spec_hash=7), id="same-uid-same-hash-nothing"),
        pytest.param(LiveObject("u1", 7), "u1", 8, Decision(delete_first=False, change=SPEC, spec_hash=8), id="spec-changed-applied"),
        pytest.param(LiveObject("u1", 7), "u2", 7, Decision(delete_first=True, change=SPEC, spec_hash=7), id="recreated-same-spec-delete-then-apply"),
        pytest.param(LiveObject("u1", 7), "u2", 9, Decision(delete_first=True, change=SPEC, spec_hash=9), id="recreated-new-spec-delete-then-apply"),
        pytest.param(LiveObject("", 7), "u2", 7, Decision(delete_first=False, change=None, spec_hash=7), id="unknown-cached-uid-matches"),
        pytest.param(LiveObject("u1", 7), "", 8, Decision(delete_first=False, change=SPEC, spec_hash=8), id="object-without-uid-compared-by-hash"),
        pytest.param(LiveObject("u1", 0), "u1", 0, Decision(delete_first=False, change=None, spec_hash=0), id="zero-hash-is-a-hash"),
    ],
)
def test_decide_applied(known: LiveObject | None, uid: str, spec_hash: int, expected: Decision) -> None:
    assert decide_applied(known=known, uid=uid, spec_hash=spec_hash) == expected


@pytest.mark.parametrize(
    "known, meta, data, change",
    [
        pytest.param(LiveObject("u1", 7, 1, None), 1, None, None, id="same-metadata-nothing"),
        pytest.param(LiveObject("u1", 7, 1, None), 2, None, METADATA, id="metadata-changed-revision"),
        pytest.param(LiveObject("u1", 7, 1, 5), 1, 6, DATA, id="data-changed-revision"),
        pytest.param(LiveObject("u1", 7, 1, 5), 2, 6, DATA, id="data-and-metadata-changed-data-revision"),
        pytest.param(LiveObject("u1", 7, None, None), 2, 6, None, id="fingerprints-unknown-before-0011-nothing"),
        pytest.param(LiveObject("u1", 8, 1, None), 2, None, SPEC, id="spec-and-metadata-changed-spec"),
    ],
)
def test_decide_revisions(known: LiveObject, meta: int, data: int | None, change: str | None) -> None:
    decision = decide_applied(known=known, uid="u1", spec_hash=7, meta_hash=meta, data_hash=data)
    assert decision.change == change
    assert decision.live("u1") == LiveObject("u1", 7, meta, data)


@pytest.mark.parametrize(
    "a, b, same",
    [
        pytest.param("u1", "u1", True, id="equal"),
        pytest.param("u1", "u2", False, id="different"),
        pytest.param("", "u2", True, id="left-unknown"),
        pytest.param("u1", "", True, id="right-unknown"),
    ],
)
def test_same_uid(a: str, b: str, same: bool) -> None:
    assert same_uid(a, b) is same


OWNED = {"metadata": {"name": "p", "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u"}]}}


@pytest.mark.parametrize(
    "obj, skip_owned, skipped",
    [
        pytest.param(OWNED, True, True, id="owned-skipped"),
        pytest.param(OWNED, False, False, id="owned-kept-without-flag"),
        pytest.param({"metadata": {"name": "p"}}, True, False, id="bare-kept"),
        pytest.param({"metadata": {"name": "p", "ownerReferences": []}}, True, False, id="empty-refs-kept"),
        pytest.param({"metadata": {"name": "p", "ownerReferences": None}}, True, False, id="null-refs-kept"),
        pytest.param({"metadata": {"name": "p", "ownerReferences": [{"kind": "ReplicaSet"}]}}, True, False, id="unreadable-refs-kept"),
    ],
)
def test_is_skipped_owned(obj: dict[str, Any], skip_owned: bool, skipped: bool) -> None:
    assert is_skipped_owned(read_head(obj, POD), skip_owned=skip_owned) is skipped


@pytest.mark.parametrize(
    "known, seen, expected",
    [
        pytest.param({}, {}, [], id="nothing-cached"),
        pytest.param({key("a"): LiveObject("u1", 1)}, {key("a"): "u1"}, [], id="still-there"),
        pytest.param({key("a"): LiveObject("u1", 1)}, {}, [key("a")], id="missing-from-list"),
        pytest.param({key("a"): LiveObject("u1", 1)}, {key("a"): "u2"}, [key("a")], id="listed-with-other-uid"),
        pytest.param({key("a"): LiveObject("", 1)}, {key("a"): "u2"}, [], id="unknown-uid-not-vanished"),
        pytest.param({key("a"): LiveObject("u1", 1)}, {key("a", "other"): "u1"}, [key("a")], id="same-name-other-namespace"),
        pytest.param({}, {key("new"): "u9"}, [], id="new-listed-objects-are-not-vanished"),
        pytest.param(
            {key("c"): LiveObject("u3", 1), key("a"): LiveObject("u1", 1), key("b"): LiveObject("u2", 1), key("z", "a-ns"): LiveObject("u4", 1)},
            {key("b"): "u2"},
            [key("z", "a-ns"), key("a"), key("c")],
            id="sorted-by-key",
        ),
    ],
)
def test_vanished(known: dict[ObjKey, LiveObject], seen: dict[ObjKey, str], expected: list[ObjKey]) -> None:
    assert vanished(known, seen) == expected


@pytest.mark.parametrize(
    "recv, second",
    [
        pytest.param(1795341600.0, 1795341600, id="whole-second"),
        pytest.param(1795341600.999, 1795341600, id="end-of-second-same-event"),
        pytest.param(1795341601.001, 1795341601, id="next-second"),
        pytest.param(0.5, 0, id="epoch"),
    ],
)
def test_event_second(recv: float, second: int) -> None:
    assert event_second(recv) == second
    assert isinstance(event_second(recv), int)


def test_changes_in_one_second_share_an_event() -> None:
    times = [100.0, 100.2, 100.99, 101.0, 101.5, 103.1]
    assert [event_second(t) for t in times] == [100, 100, 100, 101, 101, 103]


def test_status_and_label_changes_record_nothing_with_real_hash() -> None:
    first = {"metadata": {"uid": "u1", "labels": {"a": "1"}}, "spec": {"replicas": 3}, "status": {"readyReplicas": 1}}
    relabelled = {"metadata": {"uid": "u1", "labels": {"a": "2"}}, "spec": {"replicas": 3}, "status": {"readyReplicas": 3}}
    scaled = {"metadata": {"uid": "u1"}, "spec": {"replicas": 4}}
    known = LiveObject("u1", spec_hash(first.get("spec")))
    assert decide_applied(known=known, uid="u1", spec_hash=spec_hash(relabelled.get("spec"))).apply is False
    assert decide_applied(known=known, uid="u1", spec_hash=spec_hash(scaled.get("spec"))).apply is True
    specless: dict[str, Any] = {"metadata": {"uid": "u2"}}
    assert decide_applied(known=LiveObject("u2", spec_hash(None)), uid="u2", spec_hash=spec_hash(specless.get("spec"))).apply is False


@pytest.mark.parametrize(("created", "gap", "start", "inferred", "expected"), [
    (50.0, 100.0, None, True, (130, True)),  # after an offline gap, created before it: at the list
    (110.5, 100.0, None, True, (110, True)),  # created while offline: at its creation time
    (100.0, 100.6, None, True, (100, True)),  # created in the second the gap began in, after the run stopped: that second
    (99.0, 100.6, None, True, (130, True)),  # the second before it: the stopped run saw it, or it was not created then
    (50.0, None, 100.2, False, (100, False)),  # a first list with no history: existed at the run's start
    (100.2, None, 100.2, False, (100, False)),  # created at the start itself
    (120.7, None, 100.2, False, (120, True)),  # created after the start, before the list: reconstructed
    (131.0, None, 100.2, False, (130, False)),  # created after the list began (a clock ahead): at the list
    (50.0, None, None, False, (130, False)),  # not a first list: at the list
], ids=["offline-before-gap", "offline-in-gap", "offline-in-the-gap-s-first-second", "offline-second-before-gap", "first-list-existed", "first-list-at-start", "first-list-since",
        "first-list-clock-ahead", "later-list"])
def test_creation_second(created: float, gap: float | None, start: float | None, inferred: bool,
                         expected: tuple[int, bool]) -> None:
    assert changes.creation_second(created, ts=130, recv=130.4, gap=gap, start=start, inferred=inferred) == expected


def test_a_spec_is_walked_for_its_hash_only_when_its_fingerprint_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    walked: list[object] = []
    real = changes.simkube_spec_hash
    monkeypatch.setattr(changes, "simkube_spec_hash", lambda spec: walked.append(spec) or real(spec))
    by_parts = changes.spec_hash_by_parts
    monkeypatch.setattr(changes, "spec_hash_by_parts", lambda spec: walked.append(spec) or by_parts(spec))
    text = '{"spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}}'
    spec = json.loads(text)["spec"]
    first, fp = changes.spec_hash(spec, None)
    assert first == real(spec) and fp is not None and len(walked) == 1
    known = LiveObject("u1", first, spec_fp=fp)
    again = json.loads(text)["spec"]  # the next event of the watch, its status changed: an equal spec, parsed again
    assert changes.spec_hash(again, known) == (first, fp) and len(walked) == 1
    changed = {**spec, "replicas": 3}
    assert changes.spec_hash(changed, known)[0] == real(changed) != first and len(walked) == 2
    assert changes.spec_hash({**spec, "replicas": 2.0}, known)[0] == real({**spec, "replicas": 2.0})  # 2.0 is not 2
    assert changes.spec_hash(spec, LiveObject("u1", first))[0] == first and len(walked) == 4  # no fingerprint known: walked


def test_the_metadata_fingerprint_is_taken_again_only_when_labels_annotations_or_owners_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[object] = []
    real = changes.revisions_metadata_hash
    monkeypatch.setattr(changes, "revisions_metadata_hash", lambda obj: taken.append(obj) or real(obj))
    text = '{"metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {"note": "a"}, "resourceVersion": "1"}}'
    obj = json.loads(text)
    first, fp = changes.metadata_hash(obj, None)
    assert first == real(obj) and len(taken) == 1
    known = LiveObject("u1", 1, meta_hash=first, meta_fp=fp)
    again = json.loads(text.replace('"resourceVersion": "1"', '"resourceVersion": "2"'))  # a status change's next version
    assert changes.metadata_hash(again, known) == (first, fp) and len(taken) == 1
    relabelled = json.loads(text.replace('"app": "web"', '"app": "web", "tier": "front"'))
    assert changes.metadata_hash(relabelled, known)[0] == real(relabelled) != first and len(taken) == 2
    leader = json.loads(text.replace('"note": "a"', '"note": "a", "control-plane.alpha.kubernetes.io/leader": "{}"'))
    assert changes.metadata_hash(leader, known)[0] == first and len(taken) == 3  # taken again, and still unchanged
    assert changes.metadata_hash(obj, LiveObject("u1", 1, meta_fp=fp))[0] == first and len(taken) == 4  # no hash known: taken
