from __future__ import annotations

import json

import msgpack
import pytest
import yaml
from click.testing import CliRunner

from kubectl_sktrace import __version__
from kubectl_sktrace.cli import cli
from kubectl_sktrace.tracerconfig import config_to_yaml, default_config


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), prog_name="kubectl sktrace")
    return result.exit_code, result.stdout, result.stderr


def test_version_table_and_json() -> None:
    code, out, _ = run("version")
    assert code == 0
    assert out == f"plugin       {__version__}\ntraceFormat  2\ncacheSchema  19\n"
    code, out, _ = run("version", "-o", "json")
    assert json.loads(out) == {"plugin": __version__, "traceFormat": 2, "cacheSchema": 19}


def test_config_prints_the_default() -> None:
    code, out, _ = run("config")
    assert code == 0
    assert out == config_to_yaml(default_config())


def test_help_lists_commands_with_examples() -> None:
    code, out, _ = run("--help")
    assert code == 0
    for line in (
        "  config     Print the default tracer config to start from.",
        "  inspect    Summarize a SimKube v2 trace file.",
        "  transform  Rewrite a trace with a SKEL program, or anonymize it.",
        "  validate   Check a trace as SimKube would; exit 1 on errors.",
    ):
        assert line in out
    for command in ("config", "inspect", "transform", "validate", "version"):
        code, out, _ = run(command, "-h")
        assert code == 0 and "Example:\n    kubectl sktrace " + command in out


DSB_TABLE = """\
File             {path}
Format version   2
Window           2024-03-19T23:48:58Z .. 2024-03-20T00:07:52Z (18m54s)
Events           19
Applied objects  46
Deleted objects  0
Tracked kinds    apps/v1.Deployment
Observed         not told in a trace file (kubectl sktrace status --timeline on its cache tells it)

Objects per kind:
KIND                NAMESPACE    OBJECTS
------------------  -----------  ---------
apps/v1.Deployment  dsb          27

Index:
KIND                OBJECTS
------------------  ---------
apps/v1.Deployment  27

Pod lifecycles: none
"""


def test_inspect_table(dsb_path) -> None:
    code, out, _ = run("inspect", str(dsb_path))
    assert code == 0
    assert out == DSB_TABLE.format(path=dsb_path)


def test_inspect_events_table(cronjob_path) -> None:
    code, out, _ = run("inspect", "--events", str(cronjob_path))
    assert code == 0
    assert out.endswith(
        """\
Pod lifecycles:
OWNER             OBJECT                 PODSPECS    RUNNING    FINISHED
----------------  ---------------------  ----------  ---------  ----------
batch/v1.CronJob  default/hello-simkube  1           0          3

Events:
TS          TIME                  CHANGE
----------  --------------------  -------------------------------
1743286823  2025-03-29T22:20:23Z  (no changes)
1743286823  2025-03-29T22:20:23Z  + CronJob default/hello-simkube
1743287028  2025-03-29T22:23:48Z  - CronJob default/hello-simkube
"""
    )


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_inspect_machine_output(dsb_path, fmt) -> None:
    code, out, _ = run("inspect", str(dsb_path), "-o", fmt)
    data = json.loads(out) if fmt == "json" else yaml.safe_load(out)
    assert code == 0
    assert data["events"] == 19 and data["objects"] == [{"kind": "apps/v1.Deployment", "namespace": "dsb", "objects": 27}]
    assert list(data)[:3] == ["file", "formatVersion", "window"]


def test_validate_clean_fixture(fixture_path) -> None:
    code, out, err = run("validate", str(fixture_path))
    assert (code, out, err) == (0, f"{fixture_path}: valid, 0 errors, 0 warnings\n", "")


def test_validate_errors_exit_1(tmp_path) -> None:
    trace = {
        "version": 2,
        "config": {"trackedObjects": {"apps/v1.Deployment": {}}},
        "events": [
            {
                "ts": 7,
                "applied_objs": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "metadata": {"name": "web", "namespace": "ns"},
                        "spec": {"template": {"spec": {"serviceAccountName": "sa", "containers": []}}},
                        "status": {"replicas": 1},
                    }
                ],
                "deleted_objs": [],
            }
        ],
        "index": {},
        "pod_lifecycles": {},
    }
    path = tmp_path / "bad.sktrace"
    path.write_bytes(msgpack.packb(trace))
    code, out, _ = run("validate", str(path))
    assert code == 1
    assert out == f"""\
CODE    TIME                  OBJECT                     MESSAGE
------  --------------------  -------------------------  {'-' * 66}
W0000   1970-01-01T00:00:07Z  apps/v1.Deployment ns/web  status is present (SimKube drops it; export without --keep-status)
E0001   1970-01-01T00:00:07Z  apps/v1.Deployment ns/web  ServiceAccount ns/sa is not in the trace before this event

{path}: invalid, 1 error, 1 warning
"""
    code, out, _ = run("validate", str(path), "-o", "json")
    assert code == 1
    assert json.loads(out)["findings"][1] == {
        "code": "E0001",
        "severity": "error",
        "ts": 7,
        "time": "1970-01-01T00:00:07Z",
        "object": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "web"},
        "message": "ServiceAccount ns/sa is not in the trace before this event",
    }


def _bad_files(tmp_path, dsb_path):
    data = dsb_path.read_bytes()
    files = {
        "truncated": (data[: len(data) // 2], "the trace is truncated (the data ends in the middle); copy or export it again"),
        "empty": (b"", "the file is empty, not a SimKube trace; export it again"),
        "json": (json.dumps({"version": 2}).encode(), "not a SimKube trace: the key 'config' is missing; the file is damaged or not a trace"),
        "pre-v2": (msgpack.packb([{"trackedObjects": {}}, [], {}]), "this is an array-shaped trace, written by SimKube before format v2; re-export it with a current tracer"),
    }
    for name, (content, message) in files.items():
        path = tmp_path / f"{name}.sktrace"
        path.write_bytes(content)
        yield name, path, message


@pytest.mark.parametrize("command", ["validate", "inspect"])
def test_unreadable_traces_give_one_error_line(tmp_path, dsb_path, command) -> None:
    for _, path, message in _bad_files(tmp_path, dsb_path):
        code, out, err = run(command, str(path))
        assert (code, out, err) == (1, "", f"Error: {path}: {message}\n")


def test_missing_file_is_one_error_line(tmp_path) -> None:
    code, out, err = run("inspect", str(tmp_path / "nope.sktrace"))
    assert (code, out, err) == (1, "", f"Error: {tmp_path}/nope.sktrace: no such file; check the path, or write a trace with 'kubectl sktrace export -O FILE'\n")


def test_bad_output_format_is_a_usage_error(dsb_path) -> None:
    code, _, err = run("inspect", str(dsb_path), "-o", "xml")
    assert code == 2 and "Invalid value for '-o' / '--output'" in err
