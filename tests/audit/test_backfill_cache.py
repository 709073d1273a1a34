"""``backfill`` on a cache written as the recorder writes it: a restart's reconstruction replaced, twice is once,
another cluster's log refused, hostile logs reported with the cache left as it was (the command in process)."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from tests.conftest import CacheBuilder, obj

from kubectl_sktrace.audit.sources import AuditLogError
from kubectl_sktrace.cli import cli

T0 = 1_800_000_000  # 2027-01-15T08:00:00Z
SPEC = {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}}


def stamp(ts: float) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def delete_line(ts: float, *, name: str = "web", uid: str = "uid-web", audit_id: str = "d1") -> str:
    return json.dumps({
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse", "auditID": audit_id, "stage": "ResponseComplete",
        "requestURI": f"/apis/apps/v1/namespaces/app/deployments/{name}", "verb": "delete", "user": {"username": "alice"},
        "objectRef": {"resource": "deployments", "namespace": "app", "name": name, "apiGroup": "apps", "apiVersion": "v1"},
        "responseStatus": {"metadata": {}, "code": 200},
        "responseObject": {"kind": "Status", "apiVersion": "v1", "status": "Success",
                           "details": {"name": name, "group": "apps", "kind": "deployments", "uid": uid}},
        "requestReceivedTimestamp": stamp(ts), "stageTimestamp": stamp(ts)}, separators=(",", ":"))


def offline_deletion(builder: CacheBuilder) -> None:
    """Run 1 records Deployment web; it is deleted while no recorder runs; run 2's restart records the deletion, inferred."""
    builder.run(started=T0, stopped=T0 + 10)
    builder.apply(T0, obj("Deployment", "web", spec=SPEC))
    builder.run(started=T0 + 100, stopped=T0 + 110)
    builder.delete(T0 + 100, obj("Deployment", "web"), inferred=True, recv=T0 + 100.5)


def backfill(cache: Path, *args: str, stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(cli, ["backfill", "--cache", str(cache), *args], prog_name="kubectl sktrace", input=stdin)


def history(cache: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(cache)
    try:
        rows = conn.execute("SELECT id, ts, recv, gvk, namespace, name, uid, op, inferred FROM events ORDER BY id").fetchall()
        rows += conn.execute("SELECT * FROM audit_fills").fetchall() + conn.execute("SELECT * FROM audit_rows").fetchall()
        return rows
    finally:
        conn.close()


def events_of(cache: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(cache)
    try:
        return conn.execute("SELECT id, ts, recv, gvk, namespace, name, uid, op, inferred FROM events ORDER BY ts, id").fetchall()
    finally:
        conn.close()


def test_a_logged_deletion_replaces_the_restarts_and_twice_is_once(cache_builder: CacheBuilder, tmp_path: Path) -> None:
    offline_deletion(cache_builder)
    log = tmp_path / "audit.log"
    log.write_text(delete_line(T0 + 42.5) + "\n")
    first = backfill(cache_builder.path, "--audit-log", str(log))  # type: ignore[arg-type]
    assert first.exit_code == 0, first.output
    assert first.output.splitlines()[1] == ("gap 2027-01-15T08:00:10Z to 2027-01-15T08:01:40Z (1m30s, before run 2): filled from the "
                                            "audit log (RequestResponse, 1 event written, 1 reconstructed replaced, 0 pod lifecycles ended)")
    assert [r[1:9] for r in history(cache_builder.path)[:2]] == [
        (T0, T0 + 0.25, "apps/v1.Deployment", "app", "web", "uid-web", 0, 0),
        (T0 + 42, T0 + 42.5, "apps/v1.Deployment", "app", "web", "uid-web", 1, 0)]
    once = history(cache_builder.path)
    assert backfill(cache_builder.path, "--audit-log", str(log)).exit_code == 0  # type: ignore[arg-type]
    assert history(cache_builder.path)[:2] == once[:2] and len(history(cache_builder.path)) == len(once)
    status = CliRunner().invoke(cli, ["status", "--cache", str(cache_builder.path)], prog_name="kubectl sktrace").output
    assert ("Gaps (not observed live; reconstructed by the next run's relist, or exact from the audit log where backfill filled "
            "them: below):") in status
    # a Status-answered deletion log of one line covers its instant only: the gap stays reconstructed, told once per gap
    assert "Coverage from the first run shown to the last: 18.1% observed live, 81.8% not observed" in status, status
    assert status.split("Gaps (", 1)[1].splitlines()[1].split() == ["FROM", "TO", "DURATION", "OBSERVED"]
    filled = status.split("Filled from the audit log (kubectl sktrace backfill; the rest of a gap stays reconstructed):\n", 1)[1]
    assert filled.splitlines()[0].split() == ["RUN", "KIND", "FROM", "TO", "FILLED", "LOG", "COVERS", "KEPT", "RECONSTRUCTED"]


def test_a_log_of_another_cluster_is_refused_unless_forced(cache_builder: CacheBuilder, tmp_path: Path) -> None:
    offline_deletion(cache_builder)
    log = tmp_path / "audit.log"
    log.write_text(delete_line(T0 + 42.5, uid="someone-elses") + "\n")
    before = history(cache_builder.path)
    refused = backfill(cache_builder.path, "--audit-log", str(log))  # type: ignore[arg-type]
    assert refused.exit_code == 1
    assert "Error: the audit log names 1 object and none of them is in cache" in refused.output and "--force" in refused.output
    assert history(cache_builder.path) == before
    checked = backfill(cache_builder.path, "--check", "--audit-log", str(log))  # type: ignore[arg-type]
    assert checked.exit_code == 0 and "nothing to compare" in checked.output and "agrees" not in checked.output, checked.output
    forced = backfill(cache_builder.path, "--audit-log", str(log), "--force")  # type: ignore[arg-type]
    assert forced.exit_code == 0, forced.output
    assert "1 object kept as reconstructed" in forced.output  # another uid: the restart's deletion is not accounted for


def test_bad_lines_are_counted_and_named_and_the_rest_is_used(cache_builder: CacheBuilder, tmp_path: Path) -> None:
    offline_deletion(cache_builder)
    good = delete_line(T0 + 42.5)
    log = tmp_path / "audit.log"
    log.write_text("\n".join([good[:70], "not json", '{"verb": 3}', good, '{"kind":"Event","verb":"delete","objectRef":[]}']) + "\n")
    done = backfill(cache_builder.path, "--audit-log", str(log))  # type: ignore[arg-type]
    assert done.exit_code == 0, done.output
    assert f"Warning: 4 bad lines skipped (not audit Events):\n  {log} line 1: not JSON (truncated?)\n  {log} line 2: not JSON (truncated?)\n" \
           f"  {log} line 3: not an audit Event: verb is not a string\n  {log} line 5: not an audit Event: objectRef is not an object\n" in done.output
    assert "1 event written" in done.output
    quiet = backfill(cache_builder.path, "--audit-log", str(log), "--quiet")  # type: ignore[arg-type]
    assert quiet.exit_code == 0 and "bad line" not in quiet.output and quiet.output.startswith("read 5 lines")  # the report stays


def test_json_nested_too_deeply_is_a_bad_line_in_every_form(cache_builder: CacheBuilder, tmp_path: Path) -> None:
    """An AKS row whose column holds JSON text nested 100,000 deep, an Event nested as deep, and one nested just shallow
    enough for the parser: each is one bad line with its reason, and the good line is used."""
    offline_deletion(cache_builder)
    deep = "[" * 100_000 + "]" * 100_000
    aks = json.dumps({"AuditId": "a", "Verb": "create", "RequestObject": deep})
    native = delete_line(T0 + 40)[:-1] + ',"requestObject":' + deep + "}"
    shallow = json.loads(delete_line(T0 + 41, name="api", uid="uid-api", audit_id="d2"))
    shallow["verb"], shallow["responseObject"] = "create", obj("Deployment", "api", spec={**SPEC, "x": json.loads("[" * 900 + "]" * 900)})
    shallow["responseObject"]["metadata"].update(namespace="app", uid="uid-api")
    log = tmp_path / "deep.log"
    log.write_text("\n".join([aks, native, json.dumps(shallow), delete_line(T0 + 42.5)]) + "\n")
    done = backfill(cache_builder.path, "--audit-log", str(log))  # type: ignore[arg-type]
    assert done.exit_code == 0 and "unexpected" not in done.output, done.output
    assert f"  {log} line 1: JSON nested too deeply\n  {log} line 2: JSON nested too deeply\n" in done.output, done.output
    # web's logged deletion; api's creation, its end (after the log) reconstructed at the restart
    assert "3 events written" in done.output, done.output


def test_a_hostile_log_writes_nothing(cache_builder: CacheBuilder, tmp_path: Path) -> None:
    offline_deletion(cache_builder)
    before = history(cache_builder.path)
    garbage = tmp_path / "garbage.log"
    garbage.write_bytes(b"\x00\xff" * 100 + b"\n[[[[\n" + b"{" * 100_000 + b"\n")
    refused = backfill(cache_builder.path, "--audit-log", str(garbage))  # type: ignore[arg-type]
    assert refused.exit_code == 1 and "Error: no line of the audit log is an audit Event" in refused.output
    broken = tmp_path / "audit.log.gz"
    broken.write_bytes(gzip.compress((delete_line(T0 + 42.5) + "\n").encode() * 3000)[:-40])
    stopped = backfill(cache_builder.path, "--audit-log", str(broken))  # type: ignore[arg-type]
    assert stopped.exit_code == 1 and "the gzip stream is broken" in stopped.output and "Traceback" not in stopped.output
    assert isinstance(stopped.exception, SystemExit) and not isinstance(stopped.exception, AuditLogError)
    assert history(cache_builder.path) == before


def test_stdin_is_a_log_too(cache_builder: CacheBuilder) -> None:
    offline_deletion(cache_builder)
    done = backfill(cache_builder.path, "--audit-log", "-", stdin=gzip.compress((delete_line(T0 + 42.5) + "\n").encode()))  # type: ignore[arg-type]
    assert done.exit_code == 0, done.output
    assert "1 event written" in done.output


def test_either_engine_fills_a_gap_the_same(engine: str, tmp_path: Path) -> None:
    """The store's SQL of backfill on sqlite and PostgreSQL: the restart's deletion replaced, twice is once."""
    import io

    from tests.conftest import location

    from kubectl_sktrace.audit.running import run
    from kubectl_sktrace.store import open_cache_readonly

    builder = CacheBuilder(location(engine))
    try:
        offline_deletion(builder)
    finally:
        builder.close()
    log = tmp_path / "audit.log"
    log.write_text(delete_line(T0 + 42.5) + "\n")

    def fill() -> list[tuple[Any, ...]]:
        run(location(engine), paths=[str(log)], before_first=False, force=False, stdin=io.BytesIO(),
            open_url=lambda url: io.BytesIO(), is_url=lambda path: False)
        with open_cache_readonly(location(engine)) as cache:
            return [tuple(r) for r in cache.conn.execute("SELECT ts, name, uid, op, inferred FROM events ORDER BY ts, id").fetchall()]

    first = fill()
    assert first == [(T0, "web", "uid-web", 0, 0), (T0 + 42, "web", "uid-web", 1, 0)]
    assert fill() == first


def create_line(ts: float, *, name: str = "web", uid: str = "uid-web", spec: dict[str, Any] | None = None, audit_id: str = "c1") -> str:
    body = {**obj("Deployment", name, spec=spec or SPEC), "metadata": {"name": name, "namespace": "app", "uid": uid}}
    event = json.loads(delete_line(ts, name=name, uid=uid, audit_id=audit_id))
    event.update(verb="create", responseObject=body, responseStatus={"metadata": {}, "code": 201})
    return json.dumps(event, separators=(",", ":"))


def test_the_time_before_the_first_run_is_filled_only_when_asked_and_marked_partial(cache_builder: CacheBuilder, tmp_path: Path) -> None:
    offline_deletion(cache_builder)
    log = tmp_path / "audit.log"
    log.write_text(create_line(T0 - 300.5) + "\n" + delete_line(T0 + 42.5) + "\n")
    plain = backfill(cache_builder.path, "--audit-log", str(log))  # type: ignore[arg-type]
    assert plain.exit_code == 0 and "before the cache's first run (--before-first-run fills it) 1" in plain.output, plain.output
    assert [r[1] for r in events_of(cache_builder.path)] == [T0, T0 + 42]
    asked = backfill(cache_builder.path, "--audit-log", str(log), "--before-first-run")  # type: ignore[arg-type]
    assert asked.exit_code == 0, asked.output
    assert "the time before run 1 (partial: objects that never changed in the log are not known): filled from the audit log" in asked.output
    assert [r[1:9] for r in events_of(cache_builder.path)] == [(T0 - 301, T0 - 300.5, "apps/v1.Deployment", "app", "web", "uid-web", 0, 0),
                        (T0 + 42, T0 + 42.5, "apps/v1.Deployment", "app", "web", "uid-web", 1, 0)]  # the creation replaces run 1's first sight
    again = backfill(cache_builder.path, "--audit-log", str(log))  # type: ignore[arg-type]
    assert "before the cache's first run (filled by an earlier --before-first-run) 1" in again.output, again.output
    # no export reaches that time (no start state can be made of a partial fill): both ends say so, and where it is read
    assert "  not exported: an export starts at the cache's first run; kubectl sktrace get --at reads it" in asked.output.splitlines()
    exported = CliRunner().invoke(cli, ["export", "--cache", str(cache_builder.path), "-s", f"@{T0 - 600}", "-t", f"@{T0 + 200}", "-O", "-"],
                                  prog_name="kubectl sktrace")
    assert ("the trace starts there; what backfill --before-first-run filled before it is partial and not exported "
            "(kubectl sktrace get --at reads it)") in exported.stderr, exported.stderr


def test_a_copy_of_the_cache_keeps_what_the_log_filled(cache_builder: CacheBuilder, tmp_path: Path) -> None:
    from kubectl_sktrace.store.copying import copy_cache

    offline_deletion(cache_builder)
    log = tmp_path / "audit.log"
    log.write_text(delete_line(T0 + 42.5) + "\n")
    assert backfill(cache_builder.path, "--audit-log", str(log)).exit_code == 0  # type: ignore[arg-type]
    copy = tmp_path / "copy.db"
    copy_cache(str(cache_builder.path), str(copy))
    assert history(copy) == history(cache_builder.path)  # type: ignore[arg-type]


def _fill(**overrides: Any) -> Any:
    from kubectl_sktrace.store.backfill import Fill

    values: dict[str, Any] = dict(id=1, run_id=2, since=100.0, until=200.0, covered_since=50.0, covered_until=180.0,
                                  levels=("RequestResponse",), events=4, replaced=1, kept=0, partial=False)
    values.update(overrides)
    return Fill(**values)


@pytest.mark.parametrize(("fill", "end", "final"), [
    (_fill(), 150, 150),  # the log reached past the window's end: the record is final there
    (_fill(covered_until=120.0), 150, 120),  # as far as the log reached
    (_fill(levels=("Metadata", "RequestResponse")), 150, 100),  # a level without bodies: changes stand reconstructed
    (_fill(covered_since=110.0), 150, 100),  # the log starts after the gap does: the time between is unknown
    (_fill(partial=True), 150, 100),
    (_fill(gvk="v1.Pod"), 150, 100),  # a kind's outage: the run was recording, known is its own
    (_fill(), 250, 100),  # the end is past this gap
], ids=["covered", "covered-in-part", "metadata", "starts-late", "before-first-run", "outage", "another-gap"])
def test_a_window_ending_in_a_gap_is_final_as_far_as_a_request_response_log_filled_it(fill: Any, end: float, final: float) -> None:
    from kubectl_sktrace.store.backfill import final_until

    assert final_until(100.0, end=end, fills=[fill]) == final


def _deletion_logged_at(cache_builder: CacheBuilder, tmp_path: Path, at: float) -> Result:
    """``offline_deletion``, then a backfill from a log of one line: that deletion, at ``at``."""
    offline_deletion(cache_builder)
    log = tmp_path / "audit.log"
    log.write_text(delete_line(at) + "\n")
    filled = backfill(cache_builder.path, "--audit-log", str(log))  # type: ignore[arg-type]
    assert filled.exit_code == 0, filled.output
    return filled


def test_a_log_of_one_line_in_a_gap_covers_its_instant(cache_builder: CacheBuilder, tmp_path: Path) -> None:
    filled = _deletion_logged_at(cache_builder, tmp_path, T0 + 50)
    assert "  the log covers 2027-01-15T08:00:50Z of it; the rest stays reconstructed" in filled.output.splitlines(), filled.output


def test_what_a_log_filled_stays_in_the_restart_s_report_and_its_deletions_count_as_offline(cache_builder: CacheBuilder,
                                                                                           tmp_path: Path) -> None:
    """The report said what the restart found; once a log replaced it, the report says what the log recorded."""
    _deletion_logged_at(cache_builder, tmp_path, T0 + 50)
    status = CliRunner().invoke(cli, ["status", "--cache", str(cache_builder.path)]).output
    assert "  apps/v1.Deployment: 1 deleted while offline" in status.splitlines(), status
    kinds = status.split("Kinds:\n", 1)[1].splitlines()
    assert kinds[2].split() == ["apps/v1.Deployment", "0", "1", "0", "0", "1", "1"], kinds


def write_line(ts: float, verb: str, body: dict[str, Any], *, audit_id: str) -> str:
    meta = body["metadata"]
    return json.dumps({
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse", "auditID": audit_id, "stage": "ResponseComplete",
        "requestURI": "/apis/apps/v1/namespaces/app/deployments", "verb": verb, "user": {"username": "alice"},
        "objectRef": {"resource": "deployments", "namespace": "app", "name": meta["name"], "apiGroup": "apps", "apiVersion": "v1"},
        "responseStatus": {"metadata": {}, "code": 201 if verb == "create" else 200}, "responseObject": body,
        "requestReceivedTimestamp": stamp(ts), "stageTimestamp": stamp(ts)}, separators=(",", ":"))


def test_a_log_that_ends_before_an_objects_end_keeps_what_it_shows_and_names_the_end_reconstructed(cache_builder: CacheBuilder,
                                                                                                   tmp_path: Path) -> None:
    """Deployment x created and scaled inside the log, deleted after its last line, gone at the restart: its creation and
    scale at their logged times, its end at the restart's, inferred, and the command names it."""
    offline_deletion(cache_builder)
    x = {"kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"name": "x", "namespace": "app", "uid": "uid-x"}, "spec": SPEC}
    scaled = {**x, "spec": {**SPEC, "replicas": 3}}
    log = tmp_path / "audit.log"
    log.write_text("\n".join([delete_line(T0 + 20.5), write_line(T0 + 30.5, "create", x, audit_id="c1"),
                              write_line(T0 + 34.5, "patch", scaled, audit_id="p1")]) + "\n")
    done = backfill(cache_builder.path, "--audit-log", str(log))  # type: ignore[arg-type]
    assert done.exit_code == 0, done.output
    assert ("  1 object written from the log with its end reconstructed at the restart (the log ends before it): "
            "apps/v1.Deployment app/x") in done.output.splitlines(), done.output
    rows = [r[1:] for r in events_of(cache_builder.path) if r[5] == "x"]
    assert rows == [(T0 + 30, T0 + 30.5, "apps/v1.Deployment", "app", "x", "uid-x", 0, 0),
                    (T0 + 34, T0 + 34.5, "apps/v1.Deployment", "app", "x", "uid-x", 0, 0),
                    (T0 + 100, T0 + 100, "apps/v1.Deployment", "app", "x", "uid-x", 1, 1)]  # the restart's time, inferred
    again = backfill(cache_builder.path, "--audit-log", str(log))  # type: ignore[arg-type]
    assert again.exit_code == 0 and [r[1:] for r in events_of(cache_builder.path) if r[5] == "x"] == rows
    status = CliRunner().invoke(cli, ["status", "--cache", str(cache_builder.path)], prog_name="kubectl sktrace").output
    # the log's 14 s of the 90 s gap are exact; the rest of the gap stays reconstructed, each part told once
    assert "Coverage from the first run shown to the last: 18.1% observed live, 12.7% exact from the audit log, 69.0% not observed" in status, status
    assert ("reconstructed, then from 08:00:20Z exact from the audit log, then from 08:00:34Z reconstructed"
            in status.split("Gaps (", 1)[1]), status


def pod_line(ts: float, verb: str, pod: dict[str, Any], *, audit_id: str, subresource: str = "") -> str:
    meta = pod["metadata"]
    ref = {"resource": "pods", "namespace": "app", "name": meta["name"], "apiVersion": "v1", **({"subresource": subresource} if subresource else {})}
    return json.dumps({
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse", "auditID": audit_id, "stage": "ResponseComplete",
        "requestURI": "/api/v1/namespaces/app/pods", "verb": verb, "user": {"username": "system:node:n1"}, "objectRef": ref,
        "responseStatus": {"metadata": {}, "code": 201 if verb == "create" else 200}, "responseObject": pod,
        "requestReceivedTimestamp": stamp(ts), "stageTimestamp": stamp(ts)}, separators=(",", ":"))


def test_a_pod_the_log_shows_running_when_it_ends_ends_at_the_restart_marked_inferred(cache_builder: CacheBuilder, tmp_path: Path) -> None:
    offline_deletion(cache_builder)
    pending = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p", "namespace": "app", "uid": "uid-p"},
               "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]}, "status": {"phase": "Pending"}}
    running = {**pending, "status": {"phase": "Running", "startTime": stamp(T0 + 31)[:19] + "Z", "containerStatuses": [
        {"name": "c", "state": {"running": {"startedAt": stamp(T0 + 31)[:19] + "Z"}}}]}}
    log = tmp_path / "audit.log"
    log.write_text("\n".join([delete_line(T0 + 20.5), pod_line(T0 + 30.5, "create", pending, audit_id="c1"),
                              pod_line(T0 + 31.5, "patch", running, audit_id="s1", subresource="status")]) + "\n")
    done = backfill(cache_builder.path, "--audit-log", str(log))  # type: ignore[arg-type]
    assert done.exit_code == 0, done.output
    assert "end reconstructed at the restart (the log ends before it): v1.Pod app/p" in done.output, done.output
    conn = sqlite3.connect(cache_builder.path)
    try:
        assert conn.execute("SELECT start_ts, end_ts, end_inferred, live FROM pods WHERE uid = 'uid-p'").fetchall() == [(T0 + 31, T0 + 100, 1, 0)]
    finally:
        conn.close()


def test_a_write_between_a_runs_start_and_its_lists_is_filled_too(cache_builder: CacheBuilder, tmp_path: Path) -> None:
    """Run 2 starts at T0+100 and lists the Deployments at T0+101.5 (synced T0+102): a scale logged at T0+100.6, after the
    start, is what its list found (stamped at the list, inferred); it moves to its logged time, not inferred."""
    cache_builder.run(started=T0, stopped=T0 + 10)
    cache_builder.apply(T0, obj("Deployment", "web", spec=SPEC))
    cache_builder.run(started=T0 + 100, stopped=T0 + 110, synced=T0 + 102)
    cache_builder.apply(T0 + 101, obj("Deployment", "web", spec={**SPEC, "replicas": 3}), inferred=True, recv=T0 + 101.5)
    scaled = {"kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"name": "web", "namespace": "app", "uid": "uid-web"},
              "spec": {**SPEC, "replicas": 3}}
    log = tmp_path / "audit.log"
    log.write_text(write_line(T0 + 100.6, "patch", scaled, audit_id="p1") + "\n")
    done = backfill(cache_builder.path, "--audit-log", str(log))  # type: ignore[arg-type]
    assert done.exit_code == 0, done.output
    assert [r[1:] for r in events_of(cache_builder.path)] == [
        (T0, T0 + 0.25, "apps/v1.Deployment", "app", "web", "uid-web", 0, 0),
        (T0 + 100, T0 + 100.6, "apps/v1.Deployment", "app", "web", "uid-web", 0, 0)], done.output


def test_a_pod_deleted_in_the_second_a_gap_began_ends_in_that_second(cache_builder) -> None:  # type: ignore[no-untyped-def]
    """The recorder stopped at …31.006 and the pod went at …31.75: its logged deletion lies in the gap, and its end is the
    whole second 31, before the gap's exact start, not the restart's inferred end."""
    from kubectl_sktrace.store import backfill as store

    builder = cache_builder
    builder.pod("web-1", owner=None, stable_hash=1, start_ts=10, end_ts=None, uid="u1")
    builder.cache.write("UPDATE pods SET end_ts = 34, end_inferred = 1, live = 0 WHERE uid = 'u1'")
    assert store.end_pod(builder.cache, uid="u1", ts=31, since=31.006, until=34.1)
    assert builder.cache.conn.execute("SELECT end_ts, end_inferred FROM pods WHERE uid = 'u1'").fetchone() == (31, 0)
    assert not store.end_pod(builder.cache, uid="u1", ts=30, since=31.006, until=34.1)  # ended already: nothing to move
