import json
import os

import msgpack
import pytest
from click.testing import CliRunner
from conftest import obj

from kubectl_sktrace.cli import cli
from kubectl_sktrace.export.options import DEFAULT_EXCLUDED_NAMESPACES

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
        "window 2027-01-15T07:30:00Z .. 2027-01-15T07:58:20Z (28m20s, first to last event as inspect shows it; "
        "exported up to 2027-01-15T08:00:00Z).\n"
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


def test_export_namespace_flag_with_no_object_there_is_an_error_and_writes_nothing(recorded):
    result = invoke(["export", "--cache", str(recorded.path), "-s", f"@{NOW - 1800}", "-t", f"@{NOW}", "-n", "other", "-O", "-"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == ("Error: the trace would hold no objects: all 2 objects are outside namespace other (in app); "
                             "pass -n app, or pass --allow-empty to write it anyway\n")


def test_empty_window_still_writes_a_valid_trace_with_allow_empty_and_says_so(recorded, tmp_path):
    out = tmp_path / "empty.sktrace"
    result = invoke(["export", "--cache", str(recorded.path), "-s", f"@{NOW - 3600}", "-t", f"@{NOW - 3500}", "-O", str(out), "--allow-empty"])
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
    flat = " ".join(result.stdout.split())
    assert f"[default: {','.join(DEFAULT_EXCLUDED_NAMESPACES)}]" in flat.replace("- ", "-")
    assert "when given, --excluded-namespaces is ignored" in flat
    assert "json and yaml are for people, do not load in SimKube, and go to stdout unless -O says where" in flat
    assert "Example:" in flat


def test_prune_command(recorded):
    result = invoke(["prune", "--cache", str(recorded.path), "--before", f"@{NOW - 200}", "-o", "json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["eventsRemoved"], report["eventsKeptBefore"], report["before"]) == (1, 2, "2027-01-15T07:56:40Z")


def test_prunes_table_speaks_words_not_python_or_camel_case(recorded):
    dry = invoke(["prune", "--cache", str(recorded.path), "--before", f"@{NOW - 200}", "--dry-run"])
    assert dry.exit_code == 0, dry.stderr
    keys = [line.split("  ")[0] for line in dry.stdout.splitlines()]
    assert keys == ["cache", "before", "dry run", "events removed", "events kept before", "pods removed", "bytes before"]
    assert "dry run             yes" in dry.stdout
    done = invoke(["prune", "--cache", str(recorded.path), "--before", f"@{NOW - 200}"])
    assert done.exit_code == 0, done.stderr
    assert "vacuumed            no" in done.stdout or "vacuumed            yes" in done.stdout
    for word in ("True", "False", "bytesFreed", "eventsRemoved", "dryRun"):
        assert word not in dry.stdout + done.stdout


def test_prune_before_a_time_to_come_is_refused_and_the_cache_untouched(recorded):
    """A cut in the future would remove what a recorder writes next too, and no window could be exported until then."""
    before = recorded.path.read_bytes()
    for when in ("+1000d", "2999-01-01T00:00:00Z"):  # past the history recorded (it ends in 2027) and now
        for dry in ([], ["--dry-run"]):
            result = invoke(["prune", "--cache", str(recorded.path), "--before", when, *dry])
            assert result.exit_code == 1 and result.stdout == ""
            assert result.stderr.startswith("Error: --before ") and "is in the future (it is " in result.stderr
            assert result.stderr.endswith("prune cuts the past: pass a time before now, like -7d\n") and result.stderr.count("\n") == 1
    assert recorded.path.read_bytes() == before


def test_prune_needs_before(recorded):
    result = invoke(["prune", "--cache", str(recorded.path)])
    assert result.exit_code == 2
    assert "Missing option '--before'" in result.stderr


# --- exports that say when they are useless ----------------------------------------------------------


def test_a_window_starting_before_the_cache_starts_where_the_cache_does(recorded, tmp_path):
    out = tmp_path / "t.sktrace"
    result = invoke(["export", "--cache", str(recorded.path), "-s", f"@{NOW - 7200}", "-t", f"@{NOW}", "-O", str(out)])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == (
        "Note: the cache starts at 2027-01-15T07:00:00Z, after the window start 2027-01-15T06:00:00Z; the trace starts there\n"
        f"Wrote {out}: 5 events (3 applied, 1 deleted after the start state), 2 objects in the index, 0 pod lifecycles, "
        "window 2027-01-15T07:00:00Z .. 2027-01-15T07:58:20Z (58m20s, first to last event as inspect shows it; "
        "exported up to 2027-01-15T08:00:00Z).\n"
    )
    trace = msgpack.unpackb(out.read_bytes(), raw=False, strict_map_key=False, use_list=False)
    assert trace["events"][0]["ts"] == NOW - 3600


def test_a_window_before_the_history_is_an_error_that_leaves_the_old_file_alone(recorded, tmp_path):
    out = tmp_path / "t.sktrace"
    out.write_bytes(b"the old trace")
    result = invoke(["export", "--cache", str(recorded.path), "-s", f"@{NOW - 9000}", "-t", f"@{NOW - 8000}", "-O", str(out)])
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: the trace would hold no objects: the window ends at 2027-01-15T05:46:40Z, before the cache's first recording had "
        "listed the cluster (2027-01-15T07:00:00Z); pass an --end-time after 2027-01-15T07:00:00Z, or pass --allow-empty to write it "
        "anyway\n"
    )
    assert out.read_bytes() == b"the old trace"
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("cache.db")) == ["t.sktrace"]


@pytest.fixture
def in_default(cache_builder):
    b = cache_builder
    b.run(started=NOW - 3600, stopped=NOW)
    for i in range(12):
        b.apply(NOW - 3000 + i, obj("Deployment", f"web-{i}", namespace="default", spec={"replicas": 1}))
    b.apply(NOW - 2000, obj("Deployment", "dns", namespace="kube-system", spec={"replicas": 1}))
    return b


def test_everything_in_excluded_namespaces_is_an_error_with_the_flag_that_keeps_them(in_default, tmp_path):
    out = tmp_path / "t.sktrace"
    result = invoke(["export", "--cache", str(in_default.path), "-s", f"@{NOW - 1800}", "-t", f"@{NOW}", "-O", str(out)])
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: the trace would hold no objects: all 13 objects are in excluded namespaces (default, kube-system); "
        "pass --include-namespaces default, or pass --allow-empty to write it anyway\n"
    )
    assert not out.exists()
    kept = invoke(["export", "--cache", str(in_default.path), "-s", f"@{NOW - 1800}", "-t", f"@{NOW}", "-O", str(out),
                   "--include-namespaces", "default"])
    assert kept.exit_code == 0, kept.stderr
    assert "12 objects in the index" in kept.stderr


def test_objects_left_out_in_namespace_default_are_counted_with_the_flag_that_keeps_them(in_default, tmp_path):
    in_default.apply(NOW - 1000, obj("Deployment", "shop", namespace="app", spec={"replicas": 1}))
    out = tmp_path / "t.sktrace"
    result = invoke(["export", "--cache", str(in_default.path), "-s", f"@{NOW - 1800}", "-t", f"@{NOW}", "-O", str(out)])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines()[0] == (
        "Note: left out 12 objects in namespace default (SimKube's excluded namespaces include it); "
        "to keep them, pass --include-namespaces app,default"
    )
    explicit = invoke(["export", "--cache", str(in_default.path), "-s", f"@{NOW - 1800}", "-t", f"@{NOW}", "-O", str(out),
                       "--excluded-namespaces", "default,kube-system"])
    assert "namespace default" not in explicit.stderr


def _with_configmap_volume(name):
    template = {"spec": {"containers": [{"name": "c", "image": "nginx"}], "volumes": [{"name": "v", "configMap": {"name": "settings"}}]}}
    return obj("Deployment", name, spec={"replicas": 1, "template": template})


CONFIG_WITHOUT_CONFIGMAPS = "trackedObjects:\n  apps/v1.Deployment:\n    trackLifecycle: true\n"


SANITIZE_FIRST = "to make it valid, export again with --transform sanitize, which removes those references (as SimKube's sanitize example does); "


@pytest.mark.parametrize(
    "config, fix",
    [
        (CONFIG_WITHOUT_CONFIGMAPS,
         SANITIZE_FIRST + "to have the objects in the traces of later windows, add v1.ConfigMap to trackedObjects in the tracer config "
         "('kubectl sktrace start --config FILE')"),
        (None, SANITIZE_FIRST + "'kubectl sktrace validate' on the trace lists the objects they name (not recorded before them, "
                                "or left out by the filters)"),
    ],
    ids=["kind-untracked", "kind-tracked"],
)
def test_a_trace_that_would_fail_validate_says_so_and_its_first_advice_makes_it_valid(cache_builder, tmp_path, config, fix):
    b = cache_builder
    b.run(started=NOW - 3600, stopped=NOW, **({"config": config} if config else {}))
    b.apply(NOW - 3000, _with_configmap_volume("web"))
    b.apply(NOW - 600, _with_configmap_volume("api"))
    out = tmp_path / "t.sktrace"
    window = ["export", "--cache", str(b.path), "-s", f"@{NOW - 1800}", "-t", f"@{NOW}", "-O", str(out)]
    result = invoke(window)
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines()[0] == (
        f"Warning: the trace would fail 'kubectl sktrace validate' with 2 errors (2 E0005 volume configmap missing): {fix}"
    )
    assert "2 errors" in invoke(["validate", str(out)]).stdout
    advised = invoke([*window, "--transform", "sanitize"])  # the window already recorded, made valid
    assert advised.exit_code == 0 and "Warning" not in advised.stderr, advised.stderr
    assert invoke(["validate", str(out)]).stdout == f"{out}: valid, 0 errors, 0 warnings\n"


def test_inspect_shows_the_window_export_reported_and_every_kind_in_the_trace(recorded, tmp_path):
    recorded.apply(NOW - 400, obj("ConfigMap", "settings"))
    out = tmp_path / "t.sktrace"
    exported = invoke(["export", "--cache", str(recorded.path), "-s", f"@{NOW - 1800}", "-t", f"@{NOW}", "-O", str(out)])
    assert "window 2027-01-15T07:30:00Z .. 2027-01-15T07:58:20Z (28m20s," in exported.stderr
    inspected = invoke(["inspect", str(out)])
    assert inspected.exit_code == 0
    lines = inspected.stdout.splitlines()
    assert [line for line in lines if line.startswith(("Window", "Tracked kinds"))] == [
        "Window           2027-01-15T07:30:00Z .. 2027-01-15T07:58:20Z (28m20s)",
        "Tracked kinds    apps/v1.Deployment, apps/v1.ReplicaSet, batch/v1.Job, v1.ConfigMap",
    ]


def test_quiet_leaves_out_the_coverage_block_and_the_summary_but_not_errors(recorded, tmp_path):
    recorded.run(started=NOW + 60, stopped=NOW + 120)  # a stop: the window has a gap
    args = ["export", "--cache", str(recorded.path), "-s", f"@{NOW - 1800}", "-t", f"@{NOW + 120}", "-O", str(tmp_path / "t.sktrace")]
    loud = invoke(args)
    assert loud.exit_code == 0, loud.stderr
    assert loud.stderr.splitlines()[:2] == [
        "Warning: coverage: 96.8% of the window (32m00s) observed live; not observed:",
        "  2027-01-15T08:00:00Z–08:01:00Z (1m00s, no recorder ran)",
    ]
    quiet = invoke([*args, "--quiet"])
    assert (quiet.exit_code, quiet.stdout, quiet.stderr) == (0, "", "")
    refused = invoke([*args[:-2], "-O", "-", "-n", "other", "--quiet"])
    assert refused.exit_code == 1 and refused.stderr.startswith("Error: the trace would hold no objects: ")


@pytest.mark.parametrize("command", ["start", "status", "export", "prune", "inspect", "validate"])
def test_every_command_that_can_warn_takes_quiet(command):
    result = invoke([command, "--help"])
    assert "--quiet No warnings, notes or progress on stderr; errors only (and what --anonymize asks to review before sharing)." in " ".join(result.stdout.split()), result.stdout


def test_a_window_after_the_history_is_refused_as_one_before_it(recorded, tmp_path):
    out = tmp_path / "t.sktrace"
    out.write_bytes(b"the old trace")
    result = invoke(["export", "--cache", str(recorded.path), "-s", f"@{NOW + 10}", "-t", f"@{NOW + 600}", "-O", str(out)])
    assert (result.exit_code, result.stderr) == (1, (
        "Error: the window 2027-01-15T08:00:10Z to 2027-01-15T08:10:00Z starts after the cache's record ends (its last recording "
        "stopped at 2027-01-15T08:00:00Z): nothing in it was recorded; pass a --start-time before 2027-01-15T08:00:00Z (or record "
        "that time with 'kubectl sktrace start'), or pass --allow-empty to write it anyway\n"))
    assert out.read_bytes() == b"the old trace"
    forced = invoke(["export", "--cache", str(recorded.path), "-s", f"@{NOW + 10}", "-t", f"@{NOW + 600}", "-O", str(out), "--allow-empty"])
    assert forced.exit_code == 0 and out.read_bytes() != b"the old trace"


def test_a_window_in_the_future_is_refused(cache_builder, tmp_path):
    import time

    stopped = int(time.time()) - 60
    cache_builder.run(started=stopped - 3600, stopped=stopped)
    cache_builder.apply(stopped - 3000, obj("Deployment", "web", spec={"replicas": 1}))
    result = invoke(["export", "--cache", str(cache_builder.path), "-s", "+1h", "-t", "+2h", "-O", str(tmp_path / "t.sktrace")])
    assert result.exit_code == 1 and " starts after the cache's record ends (its last recording stopped at " in result.stderr
    assert not (tmp_path / "t.sktrace").exists()
