"""``kubectl sktrace transform`` and ``export --transform``/``--anonymize`` as a user sees them: the exact lines they print,
the errors (one line, exit 1, nothing written), and what validate and inspect say of the results."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner
from conftest import DATA, FIXTURE_NAMES, CacheBuilder, obj

from kubectl_sktrace.cli import cli
from kubectl_sktrace.trace.files import format as traceformat
from kubectl_sktrace.trace import transform as transform_module
from kubectl_sktrace.trace.reports.inspection import inspect_trace
from kubectl_sktrace.trace.reports.validation import validate_trace

KEY = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
RULE = "-" * 80


def run(*args: str, env: dict[str, str | None] | None = None, input: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), prog_name="kubectl sktrace", env=env, input=input)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def run_bytes(*args: str, input: bytes | None = None) -> tuple[int, bytes, str]:
    result = CliRunner().invoke(cli, list(args), prog_name="kubectl sktrace", input=input)
    return result.exit_code, result.stdout_bytes, result.stderr


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each transform takes 1.234 s, so that the summary's time is exact."""
    ticks: Iterator[float] = iter(x * 1.234 for x in range(1000))
    monkeypatch.setattr(transform_module, "perf_counter", lambda: next(ticks))


def pod_template(name: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": name}}, "spec": {
        "serviceAccountName": "robot",
        "containers": [
            {"name": "app", "image": "shop/app:1", "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "conf", "key": "a"}}},
                                                             {"name": "B", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "b"}}}],
             "volumeMounts": [{"name": "c", "mountPath": "/c"}, {"name": "s", "mountPath": "/s"}]},
            {"name": "sidecar", "image": "shop/proxy:2"},
        ],
        "volumes": [{"name": "c", "configMap": {"name": "conf"}}, {"name": "s", "secret": {"secretName": "creds"}}],
    }}


@pytest.fixture
def shop_trace(tmp_path: Path) -> Path:
    """Two Deployments whose pods use a ServiceAccount, a ConfigMap and a Secret the trace lacks, with status."""
    deployments = [obj("Deployment", name, "shop", spec={"replicas": 2, "template": pod_template(name)}, status={"replicas": 2})
                   for name in ("cart", "pay")]
    trace = traceformat.Trace(
        version=2, config={"trackedObjects": {"apps/v1.Deployment": {"podSpecTemplatePaths": ["/spec/template"], "trackLifecycle": True}}},
        events=[{"ts": 100, "applied_objs": deployments, "deleted_objs": []},
                {"ts": 160, "applied_objs": [], "deleted_objs": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                                                 "metadata": {"name": "pay", "namespace": "shop"}}]}],
        index={"apps/v1.Deployment": {"shop/cart": 1, "shop/pay": 2}},
        pod_lifecycles={("apps/v1.Deployment", "shop/cart"): {7: [{"Running": 110}]}},
    )
    path = tmp_path / "shop.sktrace"
    path.write_bytes(traceformat.encode_trace(trace))
    return path


def codes(path: Path) -> list[str]:
    return sorted({finding.code for finding in validate_trace(str(path)).findings})


# --- transform: what it prints --------------------------------------------------------------------------------


def test_transform_prints_skctls_summary_on_stderr_and_writes_the_trace(shop_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.sktrace"
    assert codes(shop_trace) == ["E0001", "E0002", "E0003", "E0004", "E0005", "W0000"]
    assert run("transform", str(shop_trace), "sanitize", "-O", str(out)) == (0, "", f"""\
Summary of changes:
{RULE}
  Trace events matched: 16
  Trace resources modified: 16
  Total evaluation time: 1s 234ms
{RULE}
Wrote {out}: 2 events.
""")
    assert codes(out) == []
    (cart, pay) = traceformat.read_trace(out).events[0]["applied_objs"]
    assert "status" not in cart and "serviceAccountName" not in cart["spec"]["template"]["spec"]


def test_transform_summary_json_is_a_document_for_programs_on_stdout(shop_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.sktrace"
    code, stdout, stderr = run("transform", str(shop_trace), "sanitize", "-O", str(out), "--summary", "json")
    assert (code, stderr) == (0, f"Wrote {out}: 2 events.\n")
    assert json.loads(stdout) == {
        "trace": str(shop_trace), "output": str(out), "transform": "sanitize", "anonymized": False, "eventsRead": 2, "eventsWritten": 2,
        "traceEventsMatched": 16, "traceResourcesModified": 16, "totalEvaluationSeconds": 1.234,
    }
    assert run("transform", str(shop_trace), "sanitize", "-O", str(out), "--summary", "yaml", "--quiet")[1].startswith(f"trace: {shop_trace}\n")


def test_transform_o_is_the_traces_format_as_exports_and_o_table_the_old_summary(shop_trace: Path, tmp_path: Path) -> None:
    code, stdout, stderr = run("transform", str(shop_trace), "sanitize", "-O", "-", "-o", "json")
    assert code == 0, stderr
    trace = json.loads(stdout)
    assert [e["ts"] for e in trace["events"]] == [e["ts"] for e in traceformat.read_trace(shop_trace).events]
    assert "status" not in trace["events"][0]["applied_objs"][0]
    out = tmp_path / "out.sktrace"
    code, stdout, stderr = run("transform", str(shop_trace), "sanitize", "-O", str(out), "-o", "table")
    assert (code, stdout) == (0, "")
    assert stderr.startswith("Summary of changes:\n")
    assert traceformat.read_trace(out).events


def test_a_program_file_and_the_events_it_empties(shop_trace: Path, tmp_path: Path) -> None:
    program = tmp_path / "drop-pay.skel"
    program.write_text('# pay is not simulated\ndelete(metadata.name == "pay");\nremove(status);\n')
    out = tmp_path / "out.sktrace"
    code, _, stderr = run("transform", str(shop_trace), str(program), "-O", str(out))
    assert code == 0
    assert stderr.splitlines()[2:4] == ["  Trace events matched: 3", "  Trace resources modified: 1"]
    assert stderr.splitlines()[-1] == f"Wrote {out}: 1 event of the 2 read (1 left without objects, dropped)."
    trace = traceformat.read_trace(out)
    assert [[o["metadata"]["name"] for o in e["applied_objs"]] for e in trace.events] == [["cart"]]
    assert trace.index == {"apps/v1.Deployment": {"shop/cart": 1}}  # the deleted object's key goes with it (skctl keeps it)


def test_standard_input_to_standard_output(shop_trace: Path) -> None:
    code, data, stderr = run_bytes("transform", "-", "sanitize", "-O", "-", input=shop_trace.read_bytes())
    assert (code, stderr.splitlines()[-1]) == (0, "Wrote stdout: 2 events.")
    assert len(traceformat.decode_trace(data).events) == 2


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_sanitize_on_simkubes_fixtures_leaves_nothing_for_validate(name: str, tmp_path: Path) -> None:
    out = tmp_path / "s.sktrace"
    code, _, stderr = run("transform", str(DATA / f"{name}.sktrace"), "sanitize", "-O", str(out), "--quiet")
    assert (code, stderr) == (0, "")
    report = validate_trace(str(out))
    assert [f for f in report.findings if f.code in ("W0000", "E0001", "E0002", "E0003", "E0004", "E0005")] == []
    assert not report.has_errors


# --- anonymize -------------------------------------------------------------------------------------------------


def modulo_names(result: dict[str, Any]) -> dict[str, Any]:
    counts = {key: value for key, value in result.items() if key != "file"}
    counts["objects"] = sorted((row["kind"], row["objects"]) for row in result["objects"])
    counts["podLifecycles"] = sorted((row["owner"], row["podSpecs"], row["running"], row["finished"]) for row in result["podLifecycles"])
    return counts


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_anonymize_keeps_inspects_counts_validates_and_one_key_gives_the_same_bytes(name: str, tmp_path: Path) -> None:
    trace = DATA / f"{name}.sktrace"
    first, second = tmp_path / "a.sktrace", tmp_path / "b.sktrace"
    assert run("transform", str(trace), "--anonymize", "--anonymize-key", KEY, "-O", str(first))[:2] == (0, "")
    assert run("transform", str(trace), "--anonymize", "-O", str(second), env={"SKTRACE_ANONYMIZE_KEY": KEY})[:2] == (0, "")
    assert first.read_bytes() == second.read_bytes()
    assert modulo_names(inspect_trace(str(first), with_events=False)) == modulo_names(inspect_trace(str(trace), with_events=False))
    assert not validate_trace(str(first)).has_errors


def test_a_fresh_key_is_printed_once_and_lines_up_a_second_run(shop_trace: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "a.sktrace", tmp_path / "b.sktrace"
    code, _, stderr = run("transform", str(shop_trace), "--anonymize", "-O", str(first), "--quiet")
    assert code == 0
    (line,) = stderr.splitlines()
    match = re.fullmatch(r"Note: anonymized with a fresh random key; to line up another export or transform with this trace, "
                         r"pass it as --anonymize-key \(or set \$SKTRACE_ANONYMIZE_KEY\): ([0-9a-f]{64})", line)
    assert match is not None
    assert run("transform", str(shop_trace), "--anonymize", "--anonymize-key", match.group(1), "-O", str(second))[2] == (
        f"Wrote {second}: 2 events, anonymized.\n"
        "Anonymized: 54 strings replaced (names 28, namespaces 6, ConfigMap and Secret keys 4, env variable names 4, free text 4, "
        "images 4, label and annotation keys 2, label and annotation values 2).\n")
    assert first.read_bytes() == second.read_bytes()
    assert b"cart" not in first.read_bytes() and b"shop" not in first.read_bytes()


def test_sanitize_then_anonymize(shop_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.sktrace"
    code, _, stderr = run("transform", str(shop_trace), "sanitize", "--anonymize", "--anonymize-key", KEY, "-O", str(out))
    assert code == 0 and stderr.splitlines()[-2:] == [
        f"Wrote {out}: 2 events, anonymized.",
        "Anonymized: 24 strings replaced (names 10, namespaces 6, images 4, label and annotation keys 2, label and annotation values 2)."]
    assert codes(out) == [] and b"robot" not in out.read_bytes() and b"cart" not in out.read_bytes()


def test_the_report_in_json_the_pseudonym_map_and_kept_label_values(shop_trace: Path, tmp_path: Path) -> None:
    out, table = tmp_path / "out.sktrace", tmp_path / "map.json"
    table.write_text("an older map, readable by others")
    table.chmod(0o644)
    code, stdout, _ = run("transform", str(shop_trace), "--anonymize", "--anonymize-key", KEY, "-O", str(out), "--summary", "json",
                          "--anonymize-map", str(table), "--anonymize-keep-label-values", "app")
    assert code == 0
    report = json.loads(stdout)["anonymization"]
    assert report["keptForReview"] == {"values of the label app kept": 2}
    assert report["stringsReplaced"]["namespaces"] == 6 and "label and annotation values" not in report["stringsReplaced"]
    assert table.stat().st_mode & 0o777 == 0o600
    rows = json.loads(table.read_text())["pseudonyms"]
    assert {"original": "shop", "pseudonym": traceformat.read_trace(out).events[0]["applied_objs"][0]["metadata"]["namespace"]} in rows
    assert traceformat.dumps_object("cart") in out.read_bytes()  # the value of the label app, kept on request; the Deployment's name is not
    assert traceformat.read_trace(out).events[0]["applied_objs"][0]["metadata"]["name"] != "cart"


def test_the_anonymize_options_need_anonymize(shop_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.sktrace"
    for flag in (("--anonymize-map", str(tmp_path / "m.json")), ("--anonymize-keep-label-values", "app")):
        assert run("transform", str(shop_trace), "sanitize", "-O", str(out), *flag) == (
            1, "", "Error: --anonymize-keep-label-values and --anonymize-map need --anonymize; add it, or leave them out\n")
        assert not out.exists()


# --- errors: one line, exit 1, nothing written -------------------------------------------------------------------


SYNTAX_ERRORS = [
    ("remove(status;", "1:14: expected ')' but found ';' in \"remove(status;\""),
    ("remove(status)", "1:15: expected ';' after the command but found end of file in \"remove(status)\""),
    ("remove(status)\n\n", "1:15: expected ';' after the command but found end of file in \"remove(status)\""),
    ("# strip\nremove(status);\nrmove(spec.template.spec.serviceAccount);",
     "3:1: expected a command (delete, modify or remove) but found 'rmove' in \"rmove(spec.template.spec.serviceAccount);\""),
    ("modify(metadata.labels.x == 1);", "1:30: expected ',' but found ')' in \"modify(metadata.labels.x == 1);\""),
    ("delete(@t > 5d);", "1:13: expected a time (unix seconds, or 30s, 5m, 2h after the trace's start) but found '5d' in \"delete(@t > 5d);\""),
    ('delete(metadata.name < "m");', "1:24: '<' compares numbers but found '\"m\"' in \"delete(metadata.name < \"m\");\""),
    ("remove(exists(a), $z);", "1:19: $z is not defined (define it in the selector: $z := PATH | TEST) in \"remove(exists(a), $z);\""),
    ("remove(spec.containers[ 0 ]);", "1:25: expected a list index or '*' right after '[' but found '0' in \"remove(spec.containers[ 0 ]);\""),
    ("delete(a == 99999999999999999999);", "1:13: integer out of range (64-bit integers) in \"delete(a == 99999999999999999999);\""),
    ("delete(* && a == 1);", "1:10: '*' selects every object: it cannot be joined with '&&' in \"delete(* && a == 1);\""),
    ("delete();", "1:8: expected a test: a path, exists(...), !exists(...), $x := ..., or @t but found ')' in \"delete();\""),
    ('remove(metadata.labels."simkube.dev/foo, x);',
     "1:24: expected a field name right after '.' but found a string with no closing '\"' in \"remove(metadata.labels.\"simkube.dev/foo, x);\""),
    ("modify(spec.replicas = 1, 2);", "1:25: expected ')' but found ',' in \"modify(spec.replicas = 1, 2);\""),
    ('remove(\n  metadata.labels."a" == "b",\n\tspec.template..spec);', "3:16: expected a field name right after '.' but found '.' in \"spec.template..spec);\""),
]


@pytest.mark.parametrize(("text", "where"), SYNTAX_ERRORS, ids=[f"syntax-{n}" for n in range(len(SYNTAX_ERRORS))])
def test_a_syntax_error_is_one_error_line_and_nothing_is_written(text: str, where: str, shop_trace: Path, tmp_path: Path) -> None:
    program = tmp_path / "bad.skel"
    program.write_text(text)
    out = tmp_path / "out.sktrace"
    out.write_bytes(b"the old trace")
    assert run("transform", str(shop_trace), str(program), "-O", str(out)) == (1, "", f"Error: {program}:{where}\n")
    assert out.read_bytes() == b"the old trace"
    cache = tmp_path / "never.db"  # export parses the program before it opens the cache
    assert run("export", "--cache", str(cache), "--transform", str(program), "-O", str(out)) == (1, "", f"Error: {program}:{where}\n")
    assert out.read_bytes() == b"the old trace" and not cache.exists()


def test_a_command_that_cannot_apply_names_itself_and_the_object_and_writes_nothing(shop_trace: Path, tmp_path: Path) -> None:
    program = tmp_path / "image.skel"
    program.write_text("remove(status);\nmodify(metadata.annotations.image = spec.template.spec.containers[*].image);\n")
    out = tmp_path / "out.sktrace"
    out.write_bytes(b"the old trace")
    assert run("transform", str(shop_trace), str(program), "-O", str(out)) == (1, "", (
        f"Error: {program}:2: modify(metadata.annotations.image = spec.template.spec.containers[*].image) cannot apply to "
        "Deployment shop/cart: its right side spec.template.spec.containers[*].image gives 2 values, and modify needs exactly one\n"))
    assert out.read_bytes() == b"the old trace"
    assert run_bytes("transform", str(shop_trace), str(program), "-O", "-")[:2] == (1, b"")  # a pipe gets nothing either


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["missing.skel"], "cannot read the SKEL file missing.skel: no such file; check the path, or pass 'sanitize' for the built-in",
                     id="no-such-skel-file"),
        pytest.param(["--anonymize", "--anonymize-key", "abc"],
                     "the anonymization key (--anonymize-key or $SKTRACE_ANONYMIZE_KEY) must be at least 32 hex digits, as a run of "
                     "--anonymize printed it; got 3 hex digits", id="bad-key"),
        pytest.param(["--anonymize", "--anonymize-key", "not-a-key"],
                     "the anonymization key (--anonymize-key or $SKTRACE_ANONYMIZE_KEY) must be at least 32 hex digits, as a run of "
                     "--anonymize printed it; got 9 characters, not all of them hex digits", id="not-hex-key"),
        pytest.param(["sanitize", "--anonymize-key", KEY], "--anonymize-key is given without --anonymize; add --anonymize, or leave the key out",
                     id="key-without-anonymize"),
        pytest.param(["sanitize", "-o", "out.sktrace"],
                     "did you mean -O out.sktrace? (-o is the output format, as in kubectl: sktrace, json, yaml)", id="skctl-o"),
        pytest.param(["sanitize", "--summary", "json", "-O", "-"],
                     "--summary json prints the summary on stdout, where the trace goes too; pass -O FILE, or leave --summary out",
                     id="json-to-stdout"),
        pytest.param(["sanitize", "-n", "shop"], "transform does not take -n (--namespace): it reads only the trace file; leave the flag out",
                     id="namespace"),
    ],
)
def test_bad_arguments_are_one_line(args: list[str], message: str, shop_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.sktrace"
    if "-O" not in args:
        args = [*args, "-O", str(out)]
    assert run("transform", str(shop_trace), *args, env={"SKTRACE_ANONYMIZE_KEY": None}) == (1, "", f"Error: {message}\n")
    assert not out.exists()


def test_a_missing_trace_and_a_directory_as_program(shop_trace: Path, tmp_path: Path) -> None:
    out = str(tmp_path / "out.sktrace")
    assert run("transform", str(tmp_path / "none.sktrace"), "sanitize", "-O", out) == (
        1, "", f"Error: {tmp_path / 'none.sktrace'}: no such file; check the path, or write a trace with 'kubectl sktrace export -O FILE'\n")
    assert run("transform", str(tmp_path / "none.sktrace"), "sanitize") == (  # the trace that is not there first, then -O
        1, "", f"Error: {tmp_path / 'none.sktrace'}: no such file; check the path, or write a trace with 'kubectl sktrace export -O FILE'\n")
    assert run("transform", str(shop_trace), str(tmp_path), "-O", out) == (
        1, "", f"Error: cannot read the SKEL file {tmp_path}: it is a directory; pass a SKEL file's path\n")
    assert run("transform", "-", "sanitize", "-O", out, input=b'{"version": 2}') == (
        1, "", "Error: standard input: not a SimKube trace: the key 'config' is missing; the file is damaged or not a trace\n")


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_with_nothing_to_change_transform_converts_and_every_command_reads_the_text_back(shop_trace: Path, tmp_path: Path, fmt: str) -> None:
    """A plain way to read a trace as text, and back (issue 38): inspect, validate and transform read -o json|yaml's traces."""
    code, text, stderr = run("transform", str(shop_trace), "-o", fmt)
    assert (code, stderr) == (0, f"Nothing to change (no SKEL_FILE, rules or --anonymize): the trace is written as it is, in {fmt}.\n"
                                 "Wrote stdout: 2 events.\n")
    path = tmp_path / f"shop.{fmt}"
    path.write_text(text)
    assert inspect_trace(str(path), with_events=True) == {**inspect_trace(str(shop_trace), with_events=True), "file": str(path)}
    assert run("validate", str(path))[0] == run("validate", str(shop_trace))[0]
    assert run("inspect", "-", input=text.encode())[1] == run("inspect", str(shop_trace))[1].replace(str(shop_trace), "standard input")
    back = tmp_path / "back.sktrace"
    assert run("transform", str(path), "-O", str(back), "--quiet") == (0, "", "")
    assert back.read_bytes() == shop_trace.read_bytes()
    assert run("transform", "-", "--deny", "name:pay", "-o", fmt, input=text.encode())[1] == run("transform", str(shop_trace), "--deny", "name:pay", "-o", fmt)[1]


def test_a_text_file_that_is_no_trace_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "notes.yaml"
    path.write_text("- just\n- a list\n")
    assert run("inspect", str(path)) == (
        1, "", f"Error: {path}: not a SimKube trace: the file is text, but not the JSON or YAML of a trace (-o json|yaml writes a map); "
               "pass a trace file\n")
    path.write_text("version: [2\n")
    code, _, stderr = run("transform", str(path), "-o", "json")
    assert code == 1 and stderr.startswith(f"Error: {path}: not a SimKube trace: the file is text, but neither the JSON nor the YAML of "
                                           "a trace (line 2: ")  # the words are the YAML parser's (libyaml's or PyYAML's)
    assert stderr.endswith("; pass a trace written by 'kubectl sktrace export' (-o sktrace, json or yaml)\n") and stderr.count("\n") == 1


def test_help_has_a_summary_and_examples() -> None:
    code, out, _ = run("transform", "--help")
    assert code == 0 and out.startswith("Usage: kubectl sktrace transform [OPTIONS] TRACE [SKEL_FILE]\n")
    assert "Example:\n    kubectl sktrace transform incident.sktrace sanitize -O incident-sanitized.sktrace\n" in out


# --- export --transform, export --anonymize --------------------------------------------------------------------------


NOW = 1_800_000_000


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    path = tmp_path / "c.db"
    builder = CacheBuilder(path)
    builder.run(started=NOW - 3600, stopped=NOW)
    builder.apply(NOW - 3000, obj("Deployment", "cart", "shop", spec={"replicas": 2, "template": pod_template("cart")}, status={"replicas": 2}))
    builder.apply(NOW - 2000, obj("Deployment", "pay", "shop", spec={"replicas": 1, "template": pod_template("pay")}))
    builder.close()
    return path


def test_export_transform_sanitize_says_what_it_did_and_leaves_nothing_for_validate(cache: Path, tmp_path: Path) -> None:
    window = ["--cache", str(cache), "-s", f"@{NOW - 2500}", "-t", f"@{NOW}"]
    plain, sanitized = tmp_path / "plain.sktrace", tmp_path / "sanitized.sktrace"
    code, _, stderr = run("export", *window, "-O", str(plain))
    assert code == 0 and "Warning: the trace would fail 'kubectl sktrace validate' with 10 errors" in stderr
    assert codes(plain) == ["E0001", "E0002", "E0003", "E0004", "E0005"]
    code, _, stderr = run("export", *window, "--transform", "sanitize", "-O", str(sanitized))
    assert (code, stderr.splitlines()[-2:]) == (0, [
        "Transformed by sanitize: 14 trace events matched, 14 trace resources modified (SimKube's counts, over the exported objects).",
        f"Wrote {sanitized}: 2 events (1 applied, 0 deleted after the start state), 2 objects in the index, 0 pod lifecycles, "
        "window 2027-01-15T07:18:20Z .. 2027-01-15T07:26:40Z (8m20s, first to last event as inspect shows it; "
        "exported up to 2027-01-15T08:00:00Z).",
    ])
    assert codes(sanitized) == []


def test_export_anonymize_prints_a_fresh_key_once_and_two_exports_line_up(cache: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "a.sktrace", tmp_path / "b.sktrace"
    code, _, stderr = run("export", "--cache", str(cache), "-s", f"@{NOW - 3600}", "-t", f"@{NOW}", "--anonymize", "-O", str(first))
    assert code == 0
    key = stderr.splitlines()[-1].rpartition(": ")[2]
    assert stderr.count(key) == 1 and len(key) == 64
    code, _, stderr = run("export", "--cache", str(cache), "-s", f"@{NOW - 2500}", "-t", f"@{NOW}", "--anonymize", "--anonymize-key", key,
                          "-O", str(second))
    assert code == 0 and key not in stderr
    whole, later = traceformat.read_trace(first), traceformat.read_trace(second)
    assert later.events[1:] == whole.events[-1:] and later.events[0]["applied_objs"] == whole.events[1]["applied_objs"][:1]
    assert b"cart" not in first.read_bytes()


def test_in_place_and_file_urls(shop_trace: Path, tmp_path: Path) -> None:
    """The trace is read whole (into the spool) before -O replaces anything, so a trace may be transformed in place."""
    assert run("transform", str(shop_trace), "sanitize", "-O", str(shop_trace), "--quiet") == (0, "", "")
    assert codes(shop_trace) == []
    out = tmp_path / "url.sktrace"
    assert run("transform", f"file://{shop_trace}", "sanitize", "-O", f"file://{out}", "--quiet") == (0, "", "")
    assert out.read_bytes() == shop_trace.read_bytes()  # sanitize finds nothing left to remove


def test_a_key_in_the_environment_waits_for_anonymize(shop_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.sktrace"
    assert run("transform", str(shop_trace), "sanitize", "-O", str(out), "--quiet", env={"SKTRACE_ANONYMIZE_KEY": KEY}) == (0, "", "")
    assert b"cart" in out.read_bytes()


# --- transform: the rules, as export's ------------------------------------------------------------------------


def test_transform_rules_keep_or_leave_out_whole_objects_index_and_lifecycles_included(shop_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.sktrace"
    code, stdout, stderr = run("transform", str(shop_trace), "--deny", "name:pay", "-O", str(out), "--summary", "json")
    assert code == 0, stderr
    trace = traceformat.read_trace(out)
    assert [(e["ts"], [o["metadata"]["name"] for o in e["applied_objs"]], e["deleted_objs"]) for e in trace.events] == [(100, ["cart"], [])]
    assert trace.index == {"apps/v1.Deployment": {"shop/cart": 1}}
    assert trace.pod_lifecycles == {("apps/v1.Deployment", "shop/cart"): {7: [{"Running": 110}]}}
    assert json.loads(stdout)["rules"] == [
        {"rule": "name:pay", "action": "deny", "from": "--deny", "objects": 1},
        {"rule": "everything else", "action": "allow", "from": "default", "objects": 1},
    ]
    assert json.loads(stdout)["eventsWritten"] == 1


@pytest.mark.parametrize("args, kept", [
    pytest.param(["--allow", "name:cart", "--deny", "namespace:shop"], ["cart"], id="name-first"),
    pytest.param(["--deny", "namespace:shop", "--allow", "name:cart"], [], id="namespace-first"),
    pytest.param(["-l", "app in (pay)"], [], id="selector-the-deployments-have-no-labels"),
    pytest.param(["-l", "!app"], ["cart", "pay"], id="selector-no-label"),
    pytest.param(["--allow", "kind:apps/v1.Deployment", "--default", "deny"], ["cart", "pay"], id="kind"),
])
def test_transform_rules_in_order(shop_trace: Path, tmp_path: Path, args: list[str], kept: list[str]) -> None:
    out = tmp_path / "out.sktrace"
    code, _, stderr = run("transform", str(shop_trace), *args, "-O", str(out))
    assert code == 0, stderr
    assert sorted({o["metadata"]["name"] for e in traceformat.read_trace(out).events for o in e["applied_objs"]}) == kept


def test_transform_rules_see_the_names_before_anonymize(shop_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.sktrace"
    code, _, stderr = run("transform", str(shop_trace), "--deny", "name:pay", "--anonymize", "--anonymize-key", "0" * 32, "-O", str(out))
    assert code == 0, stderr
    trace = traceformat.read_trace(out)
    assert len(trace.index["apps/v1.Deployment"]) == 1 and "shop/cart" not in trace.index["apps/v1.Deployment"]


def test_transform_help_skel_prints_the_language_every_install_has() -> None:
    code, stdout, _ = run("transform", "--help-skel")
    assert code == 0
    assert stdout.startswith("SKEL: SimKube's trace transformation language")
    assert "remove($v := spec.template.spec.volumes[*] | exists($v.configMap), $v);" in stdout
    code, stdout, _ = run("transform", "--help")
    assert "delete(SELECTOR);" in stdout and "kubectl sktrace transform --help-skel" in stdout


def test_transform_o_yaml_without_O_prints_the_trace_and_sktrace_asks_where(shop_trace: Path) -> None:
    import yaml

    code, stdout, stderr = run("transform", str(shop_trace), "--deny", "name:pay", "-o", "yaml")
    assert code == 0, stderr
    assert list(yaml.safe_load(stdout)["index"]["apps/v1.Deployment"]) == ["shop/cart"]
    assert run("transform", str(shop_trace), "sanitize") == (
        1, "", "Error: where should the trace go? pass -O PATH (or -O - for stdout, or -o json|yaml to print it)\n")


def test_quiet_never_hides_what_to_review_before_sharing(shop_trace: Path, cache: Path, tmp_path: Path) -> None:
    """--quiet leaves out notes and warnings, never the line a person must read before sharing the file (issue 38)."""
    review = "Review before sharing: values of the label app kept (2).\n"
    code, _, stderr = run("transform", str(shop_trace), "--anonymize", "--anonymize-key", KEY, "--anonymize-keep-label-values", "app",
                          "-O", str(tmp_path / "t.sktrace"), "--quiet")
    assert (code, stderr) == (0, review)
    code, stdout, stderr = run("transform", str(shop_trace), "--anonymize", "--anonymize-key", KEY, "--anonymize-keep-label-values", "app",
                               "-O", str(tmp_path / "t.sktrace"), "--quiet", "--summary", "json")
    assert (code, stderr) == (0, review) and json.loads(stdout)["anonymization"]["keptForReview"]
    code, _, stderr = run("export", "--cache", str(cache), "-s", f"@{NOW - 3600}", "-t", f"@{NOW}", "--anonymize", "--anonymize-key", KEY,
                          "--anonymize-keep-label-values", "app", "-O", str(tmp_path / "e.sktrace"), "--quiet")
    assert (code, stderr) == (0, review)
    code, _, stderr = run("export", "--cache", str(cache), "-s", f"@{NOW - 3600}", "-t", f"@{NOW}", "--anonymize", "--anonymize-key", KEY,
                          "--anonymize-keep-label-values", "app", "-O", str(tmp_path / "e.sktrace"))
    assert code == 0 and review.strip() in stderr.splitlines() and stderr.count("Review before sharing") == 1


@pytest.mark.parametrize("args", [["--deny", "namespace:elsewhere"], ["PROGRAM"]], ids=["only-rules", "program-matching-nothing"])
def test_transform_keeps_the_windows_empty_start(cache: Path, tmp_path: Path, args: list[str]) -> None:
    """An export whose window starts before its first object begins with an empty event: the window's start (issue 38)."""
    exported, out, program = tmp_path / "e.sktrace", tmp_path / "t.sktrace", tmp_path / "p.skel"
    program.write_text('delete(metadata.name == "nothing-is-named-so");\n')
    assert run("export", "--cache", str(cache), "-s", f"@{NOW - 3500}", "-t", f"@{NOW}", "-O", str(exported))[0] == 0
    assert traceformat.read_trace(exported).events[0] == {"ts": NOW - 3500, "applied_objs": [], "deleted_objs": []}
    code, _, stderr = run("transform", str(exported), *[str(program) if a == "PROGRAM" else a for a in args], "-O", str(out))
    assert code == 0, stderr
    assert [e["ts"] for e in traceformat.read_trace(out).events] == [e["ts"] for e in traceformat.read_trace(exported).events]
    assert inspect_trace(str(out), with_events=False)["window"] == inspect_trace(str(exported), with_events=False)["window"]


def test_skel_mistakes_are_warned_of_and_the_program_runs_as_written(shop_trace: Path, tmp_path: Path) -> None:
    program, out = tmp_path / "p.skel", tmp_path / "out.sktrace"
    program.write_text('# quotes forgotten, a string for an integer, a dotted key\n'
                       'modify(metadata.namespace == shop, spec.replicas = "3");\nmodify(metadata.labels.quokkasoft.io = "x");\n')
    code, _, stderr = run("transform", str(shop_trace), str(program), "-O", str(out))
    assert code == 0
    assert stderr.splitlines()[:3] == [
        f"Warning: {program}:2: shop is read as a path (the object's field 'shop'), and no object has such a field; to compare with "
        'the text, quote it: "shop"',
        f'Warning: {program}:2: spec.replicas is an integer in the API, and "3" is not: SimKube compares and writes it as given; '
        "write 3 (no quotes)",
        f"Warning: {program}:3: metadata.labels.quokkasoft.io builds nested maps under labels (quokkasoft: {{io: …}}); a key with dots "
        'is one step: quote it: metadata.labels."quokkasoft.io"',
    ]
    cart = traceformat.read_trace(out).events[0]["applied_objs"][0]
    assert cart["spec"]["replicas"] == 2 and cart["metadata"]["labels"]["quokkasoft"] == {"io": "x"}  # SimKube's semantics
    assert run("transform", str(shop_trace), str(program), "-O", str(out), "--quiet")[2] == ""


def test_transform_warns_of_a_kind_no_object_of_the_trace_has(shop_trace: Path) -> None:
    code, _, stderr = run("transform", str(shop_trace), "--deny", "kind:Deploymnet", "-o", "json")
    assert code == 0 and stderr.splitlines()[0] == (
        "Warning: --deny 'kind:Deploymnet': no recorded object is of kind 'Deploymnet', so it matches nothing; did you mean kind:Deployment?")
    assert "Warning" not in run("transform", str(shop_trace), "--deny", "kind:deployment", "-o", "json")[2]
