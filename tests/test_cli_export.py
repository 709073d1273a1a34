import json
import os

import msgpack
import pytest
from click.testing import CliRunner

from conftest import obj
from kubectl_sktrace import cli as cli_module
from kubectl_sktrace.cli import cli
from kubectl_sktrace.export import DEFAULT_EXCLUDED_NAMESPACES

NOW = 1_800_000_000


@pytest.fixture
def recorded(cache_builder):
    b = cache_builder
    b.run(started=NOW - 3600, stopped=NOW)
    b.apply(NOW - 3000, obj("Deployment", "web", spec={"replicas": 1}))
    b.apply(NOW - 600, obj("Deployment", "web", spec={"replicas": 2}))
    b.apply(NOW - 500, obj("Deployment", "canary", spec={"replicas": 1}, labels={"track": "canary"}))
    b.delete(NOW - 100, obj("Deployment", "web"))
    return b


def invoke(args):
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def test_export_writes_a_trace_and_a_summary(recorded, tmp_path):
    out = tmp_path / "t.sktrace"
    result = invoke(["export", "--cache", str(recorded.path), "-s", f"@{NOW - 1800}", "-t", f"@{NOW}", "-O", str(out)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr == (
        "Wrote " + str(out) + ": 4 events (2 applied, 1 deleted after the start state), 2 objects in the index, 0 pod lifecycles, "
        "window 2027-01-15T07:30:00Z to 2027-01-15T08:00:00Z.\n"
    )
    trace = msgpack.unpackb(out.read_bytes(), raw=False, strict_map_key=False, use_list=False)
    assert [e["ts"] for e in trace["events"]] == [NOW - 1800, NOW - 600, NOW - 500, NOW - 100]
    assert oct(os.stat(out).st_mode & 0o777) != "0o600"


def test_export_selector_and_stdout(recorded):
    result = invoke(["export", "--cache", str(recorded.path), "-s", f"@{NOW - 1800}", "-t", f"@{NOW}",
                     "--exclude-labels", "track=canary", "--format", "json", "-O", "-"])
    assert result.exit_code == 0, result.stderr
    trace = json.loads(result.stdout)
    assert list(trace["index"]["apps/v1.Deployment"]) == ["app/web"]
    assert "Wrote stdout: 3 events" in result.stderr


def test_export_namespace_flag(recorded):
    result = invoke(["export", "--cache", str(recorded.path), "-s", f"@{NOW - 1800}", "-t", f"@{NOW}", "-n", "other", "-O", "-"])
    assert result.exit_code == 0
    assert result.stderr.startswith("Note: no events in the window 2027-01-15T07:30:00Z to 2027-01-15T08:00:00Z: the trace holds only")


def test_empty_window_still_writes_a_valid_trace_and_says_so(recorded, tmp_path):
    out = tmp_path / "empty.sktrace"
    result = invoke(["export", "--cache", str(recorded.path), "-s", f"@{NOW - 3600}", "-t", f"@{NOW - 3500}", "-O", str(out)])
    assert result.exit_code == 0
    assert "Note: no events in the window" in result.stderr
    trace = msgpack.unpackb(out.read_bytes(), raw=False, strict_map_key=False, use_list=False)
    assert trace["events"] == ({"ts": NOW - 3600, "applied_objs": (), "deleted_objs": ()},)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--exclude-labels", "app in ("], "invalid label selector 'app in (': '(' without ')'; use kubectl syntax like 'a=b,c!=d,e in (x,y),f notin (z),g,!h'"),
        (["--exclude-labels", "=x"], "invalid label selector '=x': a requirement has an empty key; use kubectl syntax like 'a=b,c!=d,e in (x,y),f notin (z),g,!h'"),
        (["--exclude-labels", "a==b==c"], "invalid label selector 'a==b==c': 'b==c' is not a valid label value; use kubectl syntax like 'a=b,c!=d,e in (x,y),f notin (z),g,!h'"),
        (["-s", "-3x"], "invalid time '-3x': use 'now', a relative time like '-30m', '-2h', '-1d', an RFC 3339 time like '2026-11-22T10:00:00Z', or '@<unix seconds>'"),
        (["-t", "yesterday-ish"], "invalid time 'yesterday-ish': use 'now', a relative time like '-30m', '-2h', '-1d', an RFC 3339 time like '2026-11-22T10:00:00Z', or '@<unix seconds>'"),
        (["-s", "@200", "-t", "@100"], "the end time '@100' (1970-01-01T00:01:40Z) is before the start time '@200' (1970-01-01T00:03:20Z); swap them or pass a later --end-time"),
    ],
    ids=["selector-paren", "selector-empty-key", "selector-double-eq", "time-unit", "time-words", "end-before-start"],
)
def test_bad_input_is_one_error_line_and_no_file(recorded, tmp_path, args, message):
    out = tmp_path / "t.sktrace"
    result = invoke(["export", "--cache", str(recorded.path), "-O", str(out), *args])
    assert result.exit_code == 1
    assert result.stderr == f"Error: {message}\n"
    assert not out.exists()
    assert not [p.name for p in tmp_path.iterdir() if not p.name.startswith("cache.db")]


def test_missing_cache(tmp_path):
    out = tmp_path / "t.sktrace"
    result = invoke(["export", "--cache", str(tmp_path / "nope.db"), "-O", str(out)])
    assert result.exit_code == 1
    assert result.stderr == f"Error: no cache at {tmp_path}/nope.db; record one first with 'kubectl sktrace start' or pass --cache FILE\n"
    assert list(tmp_path.iterdir()) == []


def test_empty_cache_file(tmp_path):
    (tmp_path / "empty.db").write_bytes(b"")
    out = tmp_path / "t.sktrace"
    result = invoke(["export", "--cache", str(tmp_path / "empty.db"), "-O", str(out)])
    assert result.exit_code == 1
    assert result.stderr == (f"Error: cache {tmp_path}/empty.db is an empty file, not a recording; record into it with "
                             f"'kubectl sktrace start --cache {tmp_path}/empty.db' or pass another --cache FILE\n")
    assert [(p.name, p.read_bytes()) for p in tmp_path.iterdir()] == [("empty.db", b"")], "read, never written"


def test_output_in_a_missing_directory(recorded, tmp_path):
    result = invoke(["export", "--cache", str(recorded.path), "-O", str(tmp_path / "no" / "t.sktrace")])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: cannot write {tmp_path}/no/t.sktrace: the directory {tmp_path}/no does not exist; create it or pass another -O/--output-file\n"
    )


def test_help_lists_simkubes_excluded_namespaces_and_formats():
    result = invoke(["export", "--help"])
    assert result.exit_code == 0
    assert cli_module._SIMKUBE_EXCLUDED_NAMESPACES == ",".join(DEFAULT_EXCLUDED_NAMESPACES)
    flat = " ".join(result.stdout.split())
    assert "when given, --excluded-namespaces is ignored" in flat
    assert "json and yaml are for people and do not load in SimKube" in flat
    assert "Example:" in flat


def test_prune_command(recorded):
    result = invoke(["prune", "--cache", str(recorded.path), "--before", f"@{NOW - 200}", "-o", "json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["eventsRemoved"], report["eventsKeptBefore"], report["before"]) == (1, 2, "2027-01-15T07:56:40Z")


def test_prune_needs_before(recorded):
    result = invoke(["prune", "--cache", str(recorded.path)])
    assert result.exit_code == 2
    assert "Missing option '--before'" in result.stderr
