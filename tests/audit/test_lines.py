"""What one audit line gives (audit/lines), the streams of a log (audit/sources), and a gap's writes walked by the
recorder's rules (audit/replay): pure tables, and files in a temporary folder."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest

from kubectl_sktrace.audit.collect import collect
from kubectl_sktrace.audit.lines import MAX_LINE_BYTES, BadLine, Logged, Wanted, read_line
from kubectl_sktrace.audit.replay import Version, accounts_for, replay
from kubectl_sktrace.audit.sources import TOO_LONG, AuditLogError, expand, read_lines
from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.model import GVK, POD, ObjKey
from kubectl_sktrace.trace import hashing
from kubectl_sktrace.tracerconfig import TrackedObject

DEPLOY = GVK("apps", "v1", "Deployment")
SECRET = GVK("", "v1", "Secret")
WANTED = Wanted({("apps", "deployments"): DEPLOY, ("", "pods"): POD, ("", "secrets"): SECRET})
UID = "6b7e1f4c-0000-4000-8000-000000000001"
T = "2026-11-28T10:00:05.250000Z"


def dep(replicas: int = 1, image: str = "nginx:1", uid: str = UID, **meta: Any) -> dict[str, Any]:
    return {"kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"name": "web", "namespace": "ns", "uid": uid, **meta},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "c", "image": image}]}}}}


def line(verb: str = "patch", *, resource: str = "deployments", group: str | None = "apps", code: int = 200, level: str = "RequestResponse",
         stage: str = "ResponseComplete", response: Any = None, subresource: str | None = None, name: str = "web", at: str = T) -> bytes:
    ref: dict[str, Any] = {"resource": resource, "namespace": "ns", "name": name}
    if group:
        ref["apiGroup"] = group
    ref["apiVersion"] = "v1"
    if subresource:
        ref["subresource"] = subresource
    event: dict[str, Any] = {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": level, "auditID": "a1", "stage": stage,
                             "requestURI": "/x", "verb": verb, "user": {"username": "u"}, "objectRef": ref,
                             "responseStatus": {"metadata": {}, "code": code}}
    if response is not None:
        event["responseObject"] = response
    event["requestReceivedTimestamp"] = at
    event["stageTimestamp"] = at
    return json.dumps(event, separators=(",", ":")).encode()


KEY = ObjKey(DEPLOY, "ns", "web")


@pytest.mark.parametrize(("raw", "gives"), [
    (line("get"), "reads"),
    (line("watch", resource="pods", group=None), "reads"),
    (line(stage="RequestReceived"), "other stages"),
    (line(resource="leases", group="coordination.k8s.io"), "kinds not tracked"),
    (line("create", resource="pods", group=None, subresource="binding", code=201,
          response={"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
     "pod bindings (a Status: the pod's status writes tell its start)"),
    (line(code=409, response={"kind": "Status"}), "failed requests"),
    (line(code=404), "failed requests"),
], ids=["read", "watch", "received-stage", "untracked", "binding", "conflict", "not-found"])
def test_lines_that_give_nothing_say_why(raw: bytes, gives: str) -> None:
    assert read_line(raw, wanted=WANTED, line=3) == gives


def test_a_write_at_request_response_gives_the_object_after_it_at_its_stage_time() -> None:
    got = read_line(line(response=dep(3)), wanted=WANTED, line=7)
    assert isinstance(got, tuple) and len(got) == 1
    record = got[0]
    assert (record.key, record.uid, record.verb, record.level, record.line) == (KEY, UID, "patch", "RequestResponse", 7)
    assert record.body == dep(3) and record.at == 1795860005.25


def test_a_scale_write_gives_replicas_not_a_body() -> None:
    scale = {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {"name": "web", "uid": UID}, "spec": {"replicas": 5}}
    (record,) = read_line(line(subresource="scale", response=scale), wanted=WANTED, line=1)  # type: ignore[misc]
    assert record.replicas == 5 and record.body is None and record.subresource == "scale"


@pytest.mark.parametrize(("response", "removed", "body"), [
    ({"kind": "Status", "status": "Success", "details": {"name": "web", "group": "apps", "kind": "deployments", "uid": UID}}, True, False),
    (dep(finalizers=["example.com/keep"]), False, True),
    (None, None, False),
], ids=["status-answer-removed", "object-answer-marked", "metadata-level-unknown"])
def test_a_delete_is_a_removal_only_when_answered_with_a_status(response: Any, removed: bool | None, body: bool) -> None:
    (record,) = read_line(line("delete", response=response, level="RequestResponse" if response else "Metadata"),  # type: ignore[misc]
                          wanted=WANTED, line=1)
    assert record.removed is removed and (record.body is not None) is body
    assert record.uid == (UID if response is not None else "")


def pod(**meta: Any) -> dict[str, Any]:
    return {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p", "namespace": "ns", "uid": UID, **meta},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx:1"}]}, "status": {"phase": "Running"}}


@pytest.mark.parametrize(("response", "removed"), [
    (pod(deletionTimestamp="2026-11-28T10:00:35Z", deletionGracePeriodSeconds=30), False),
    (pod(deletionTimestamp="2026-11-28T10:00:05Z", deletionGracePeriodSeconds=0), True),
    (pod(deletionTimestamp="2026-11-28T10:00:05Z", deletionGracePeriodSeconds=0, finalizers=["example.com/keep"]), False),
], ids=["graceful-marks", "final-grace-0-removes", "finalizer-left-marks"])
def test_a_pods_delete_answered_with_the_pod_removes_it_at_grace_0(response: Any, removed: bool) -> None:
    """A real server answers every pod's DELETE with the Pod: the graceful one (grace 30) marks it, the kubelet's final
    one (grace 0, no finalizer left) is its end."""
    (record,) = read_line(line("delete", resource="pods", group=None, name="p", response=response), wanted=WANTED, line=1)  # type: ignore[misc]
    assert record.removed is removed and record.body is not None and record.uid == UID


def test_a_namespace_controllers_deletecollection_removes_pods_not_running_and_marks_running_ones() -> None:
    done = {**pod(name="done", uid="u-done"), "status": {"phase": "Succeeded"}}
    running = pod(name="run", uid="u-run")
    listed = {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": [done, running]}
    records = read_line(line("deletecollection", resource="pods", group=None, name="", response=listed), wanted=WANTED, line=1)
    assert isinstance(records, tuple)
    assert [(r.key.name, r.uid, r.removed) for r in records] == [("done", "u-done", True), ("run", "u-run", False)]


def test_a_secret_body_is_never_read() -> None:
    secret = {"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "web", "namespace": "ns", "uid": UID}, "data": {"k": "c2VjcmV0"}}
    (record,) = read_line(line("update", resource="secrets", group=None, response=secret), wanted=WANTED, line=1)  # type: ignore[misc]
    assert record.body is None and record.key.gvk == SECRET


@pytest.mark.parametrize(("raw", "reason"), [
    (line(response=dep())[:80], "not JSON (truncated?)"),
    (b"hello world", "not JSON (truncated?)"),
    (b"[1, 2]", "not an audit Event (a JSON object)"),
    (line().replace(b'"code":200', b'"code":"200"'), "not an audit Event: responseStatus.code is not a number"),
    (line().replace(b'"stageTimestamp":"' + T.encode() + b'"', b'"stageTimestamp":"yesterday"'), "not an audit Event: Invalid isoformat string: 'yesterday'"),
    (line().replace(b'"level":"RequestResponse"', b'"level":"Loud"'), "not an audit Event: unknown level 'Loud'"),
    (line(response={"kind": "Deployment", "metadata": "x"}), "not an audit Event: responseObject is not a Deployment"),
    (b'{"verb":"create","objectRef":{"resource":"deployments","apiGroup":"apps"}}', "not an audit Event: responseStatus.code is not a number"),
    (b"x" * (MAX_LINE_BYTES + 1), "longer than 16 MiB"),
], ids=["truncated", "text", "array", "code-type", "time", "level", "body-type", "no-status", "huge"])
def test_a_bad_line_is_named_with_its_line_number_and_why(raw: bytes, reason: str) -> None:
    assert read_line(raw, wanted=WANTED, line=42) == BadLine(42, reason)


# -- sources ---------------------------------------------------------------------------------------------------


def _expand(*paths: str, stdin: bytes = b"") -> list[Any]:
    return expand(paths, stdin=io.BytesIO(stdin), open_url=lambda url: io.BytesIO(b""), is_url=lambda p: "://" in p)


def test_files_gzip_folders_and_stdin_are_read_line_by_line(tmp_path: Path) -> None:
    (tmp_path / "rotated").mkdir()
    (tmp_path / "rotated" / "audit-1.log.gz").write_bytes(gzip.compress(b"one\ntwo\n"))
    (tmp_path / "rotated" / "audit.log").write_bytes(b"three\n\nfour")
    (tmp_path / "rotated" / ".hidden").write_bytes(b"never\n")
    sources = _expand(str(tmp_path / "rotated"), "-", stdin=b"five\r\n")
    assert [s.name.rsplit("/", 1)[-1] for s in sources] == ["audit-1.log.gz", "audit.log", "-"]
    assert [list(read_lines(s)) for s in sources] == [[(1, b"one"), (2, b"two")], [(1, b"three"), (3, b"four")], [(1, b"five")]]


def test_a_line_over_the_bound_is_skipped_without_being_held(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    path.write_bytes(b"a\n" + b"x" * (MAX_LINE_BYTES + 10) + b"\nb\n")
    assert list(read_lines(_expand(str(path))[0])) == [(1, b"a"), (2, TOO_LONG), (3, b"b")]


def test_a_broken_gzip_stream_is_one_error_and_a_missing_path_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "audit.log.gz"
    path.write_bytes(gzip.compress(b"one\n" * 1000)[:-20])
    with pytest.raises(AuditLogError, match=r"audit.log.gz: the gzip stream is broken .*nothing was written"):
        list(read_lines(_expand(str(path))[0]))
    with pytest.raises(UsageError, match="no such file or folder"):
        _expand(str(tmp_path / "missing.log"))
    with pytest.raises(UsageError, match="named twice"):
        _expand("-", "-")


def test_the_same_line_in_overlapping_files_is_taken_once(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_bytes(line(response=dep(2)) + b"\n")
    (tmp_path / "b.log").write_bytes(line(response=dep(2)) + b"\n" + line(response=dep(3)).replace(b'"a1"', b'"a2"') + b"\n")
    got = collect(_expand(str(tmp_path / "a.log"), str(tmp_path / "b.log")), wanted=WANTED)
    assert [r.body["spec"]["replicas"] for r in got.writes[KEY]] == [2, 3]  # type: ignore[index]
    assert got.skipped["repeated lines"] == 1 and got.lines == 3


# -- replay -----------------------------------------------------------------------------------------------------

OPTIONS = TrackedObject(pod_spec_template_paths=("/spec/template",), track_lifecycle=True)


def logged(verb: str, at: float, *, body: dict[str, Any] | None = None, replicas: int | None = None, removed: bool | None = None,
           uid: str = UID, level: str = "RequestResponse") -> Logged:
    return Logged(at=at, audit_id=str(at), verb=verb, key=KEY, uid=uid, level=level, body=body, replicas=replicas, removed=removed)


def version(body: dict[str, Any]) -> Version:
    return Version.of(uid=body["metadata"]["uid"], spec_hash=hashing.spec_hash(body["spec"]), body=body)


def walk(prior: Version | None, *events: Logged) -> list[tuple[float, int, int | None]]:
    walked = replay(prior, events, options=OPTIONS, chain=lambda head: ())
    return [(p.at, p.op, p.spec_hash) for p in walked.rows]


def test_changes_are_applied_one_by_one_by_the_recorders_rule() -> None:
    prior = version(dep(1))
    rows = walk(prior, logged("patch", 10.0, body=dep(1, labels={"x": "y"})), logged("update", 11.0, replicas=4),
                logged("patch", 12.0, body=dep(4, image="nginx:2")), logged("patch", 13.0, body=dep(4, image="nginx:2")))
    assert rows == [(10.0, 3, prior.live.spec_hash), (11.0, 0, hashing.spec_hash(dep(4)["spec"])),
                    (12.0, 0, hashing.spec_hash(dep(4, image="nginx:2")["spec"]))]  # a label: a revision; the same spec: nothing


def test_a_removal_deletes_and_a_marked_deletion_does_not() -> None:
    assert walk(version(dep()), logged("delete", 5.0, body=dep(), removed=False), logged("delete", 6.0, removed=True)) == [(6.0, 1, None)]


def test_created_and_deleted_in_the_gap_and_a_new_uid_is_a_delete_then_an_apply() -> None:
    other = dep(uid="other")
    assert walk(None, logged("create", 1.0, body=dep()), logged("delete", 2.0, removed=True)) == [
        (1.0, 0, hashing.spec_hash(dep()["spec"])), (2.0, 1, None)]
    assert [op for _, op, _ in walk(version(dep()), logged("create", 3.0, body=other, uid="other"))] == [1, 0]


def test_a_walk_accounts_for_the_restart_only_when_complete_and_ending_where_it_found_the_object() -> None:
    prior = version(dep(1))
    complete = replay(prior, [logged("patch", 1.0, body=dep(2))], options=OPTIONS, chain=lambda head: ())
    assert accounts_for(complete, version(dep(2))) and not accounts_for(complete, version(dep(3)))
    hidden = replay(prior, [logged("patch", 1.0, level="Metadata")], options=OPTIONS, chain=lambda head: ())
    assert not hidden.complete and hidden.rows == () and not accounts_for(hidden, prior)
    gone = replay(prior, [logged("delete", 2.0, removed=None, level="Metadata")], options=OPTIONS, chain=lambda head: ())
    assert gone.removals == ((2.0, UID),) and not gone.complete
    orphan_scale = replay(None, [logged("patch", 1.0, replicas=3)], options=OPTIONS, chain=lambda head: ())
    assert not orphan_scale.complete and orphan_scale.rows == ()


def test_a_deletecollection_below_request_response_names_its_kind_and_namespace_when_it_has_no_selector() -> None:
    """The namespace controller's deletecollection at Metadata: no list, but no selector either: every Deployment of the
    namespace went then (one record with no name); one with a selector says nothing."""
    every = json.loads(line("deletecollection", name="", level="Metadata"))
    every["requestURI"] = "/apis/apps/v1/namespaces/ns/deployments"
    (record,) = read_line(json.dumps(every).encode(), wanted=WANTED, line=1)  # type: ignore[misc]
    assert (record.verb, record.key, record.removed) == ("deletecollection", ObjKey(DEPLOY, "ns", ""), None)
    every["requestURI"] += "?labelSelector=app%3Dweb"
    assert read_line(json.dumps(every).encode(), wanted=WANTED, line=1) == ()
