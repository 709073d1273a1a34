"""Traces on object storage: ``export -O s3://...`` writes an object whole or not at all; ``inspect`` and
``validate`` read one; every failure a user meets is one line with its fix. Against moto's S3 server on
loopback, through the real console script (and real kubectl), with the store's settings in the environment."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import S3Store, obj
from reliability_support import EXE, assert_one_error, private_env, run_cli

from kubectl_sktrace.errors import CacheError, TraceFormatError, UsageError
from kubectl_sktrace.trace.files import objectstore
from kubectl_sktrace.trace.files.output import write_output

pytestmark = pytest.mark.timeout(120)

NOW = 1_800_000_000
WINDOW = ["-s", f"@{NOW - 1800}", "-t", f"@{NOW}"]
MIB = 2**20


@pytest.fixture
def cache(cache_builder: Any) -> Path:
    b = cache_builder
    b.run(started=NOW - 3600, stopped=NOW)
    b.apply(NOW - 3000, obj("Deployment", "web", spec={"replicas": 1}))
    b.apply(NOW - 600, obj("Deployment", "web", spec={"replicas": 2}))
    return Path(b.path)


def _cli(s3: S3Store, args: list[str], home: Path, **env: str) -> Any:
    return run_cli(args, home=home, env={**s3.env, **env})


def _object(s3: S3Store, key: str, bucket: str = "traces") -> bytes:
    return s3.client().get_object(Bucket=bucket, Key=key)["Body"].read()  # type: ignore[no-any-return]


def _keys(s3: S3Store, bucket: str = "traces") -> list[str]:
    return [item["Key"] for item in s3.client().list_objects_v2(Bucket=bucket).get("Contents", [])]


def _uploads(s3: S3Store, bucket: str = "traces") -> list[str]:
    return [u["Key"] for u in s3.client().list_multipart_uploads(Bucket=bucket).get("Uploads", [])]


# --- URLs, pure --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, protocol, remote, local",
    [
        ("s3://traces/t.sktrace", "s3", True, None),
        ("GS://b/t", "gs", True, None),
        ("az://container/t", "az", True, None),
        ("file:///tmp/t.sktrace", "file", False, "/tmp/t.sktrace"),
        ("file://t.sktrace", "file", False, "t.sktrace"),
        ("t.sktrace", None, False, None),
        ("./s3:/t", None, False, None),
        ("-", None, False, None),
    ],
    ids=["s3", "uppercase", "az", "file-absolute", "file-relative", "local", "colon-in-a-path", "stdout"],
)
def test_what_a_path_names(path: str, protocol: str | None, remote: bool, local: str | None) -> None:
    assert objectstore.protocol_of(path) == protocol
    assert objectstore.is_remote(path) is remote
    assert objectstore.file_url_path(path) == local


# --- writing: whole or not at all --------------------------------------------------------------------------


def test_a_writer_that_fails_mid_write_leaves_no_object_and_no_upload(s3: S3Store, monkeypatch: pytest.MonkeyPatch) -> None:
    import fsspec

    monkeypatch.setattr(fsspec.get_filesystem_class("s3"), "default_block_size", 5 * MIB)  # S3's smallest part
    s3.client().put_object(Bucket="traces", Key="old.sktrace", Body=b"old trace")
    written: list[int] = []
    in_flight: list[list[str]] = []

    def fail(stream: Any) -> None:
        for _ in range(12):  # two parts go up before the failure
            written.append(stream.write(b"x" * MIB))
        in_flight.append(_uploads(s3))
        raise CacheError("the cache changed while it was read")

    with pytest.raises(CacheError):
        write_output("s3://traces/old.sktrace", fail, binary=True, stdout=None)  # type: ignore[arg-type]
    with pytest.raises(CacheError):
        write_output("s3://traces/new.sktrace", fail, binary=True, stdout=None)  # type: ignore[arg-type]
    assert sum(written) == 24 * MIB
    assert in_flight == [["old.sktrace"], ["new.sktrace"]], "the failures came mid-upload"
    assert _object(s3, "old.sktrace") == b"old trace"
    assert _keys(s3) == ["old.sktrace"]
    assert _uploads(s3) == [], "the multipart uploads were aborted"


def test_a_large_object_goes_up_in_parts_and_appears_whole(s3: S3Store, monkeypatch: pytest.MonkeyPatch) -> None:
    import fsspec

    monkeypatch.setattr(fsspec.get_filesystem_class("s3"), "default_block_size", 5 * MIB)
    data = bytes(range(256)) * (48 * 1024)  # 12 MiB: three parts

    def write(stream: Any) -> str:
        for i in range(0, len(data), MIB):
            stream.write(data[i:i + MIB])
        return "done"

    assert write_output("s3://traces/big.sktrace", write, binary=True, stdout=None) == "done"  # type: ignore[arg-type]
    assert _object(s3, "big.sktrace") == data
    assert _uploads(s3) == []


def test_a_failing_small_write_leaves_no_object(s3: S3Store) -> None:
    def fail(stream: Any) -> None:
        stream.write(b"partial")
        raise CacheError("boom")

    with pytest.raises(CacheError):
        write_output("s3://traces/t.sktrace", fail, binary=True, stdout=None)  # type: ignore[arg-type]
    assert _keys(s3) == [] and _uploads(s3) == []


# --- the CLI, as a user runs it ----------------------------------------------------------------------------


def test_export_to_s3_then_inspect_and_validate_it(s3: S3Store, cache: Path, tmp_path: Path) -> None:
    local = tmp_path / "local.sktrace"
    assert _cli(s3, ["export", "--cache", str(cache), *WINDOW, "-O", str(local)], tmp_path).code == 0
    s3.client().put_object(Bucket="traces", Key="runs/t.sktrace", Body=b"an older trace")
    url = "s3://traces/runs/t.sktrace"
    run = _cli(s3, ["export", "--cache", str(cache), *WINDOW, "-O", url], tmp_path)
    assert run.code == 0, run.describe()
    assert run.stderr.startswith(f"Wrote {url}: 2 events")
    assert _object(s3, "runs/t.sktrace") == local.read_bytes(), "an existing object is replaced, as a file is"
    for command in (["inspect", "-o", "json"], ["validate", "-o", "json"], ["inspect", "--events"]):
        remote, here = _cli(s3, [*command, url], tmp_path), _cli(s3, [*command, str(local)], tmp_path)
        assert (remote.code, remote.stderr) == (0, ""), remote.describe()
        assert remote.stdout == here.stdout.replace(str(local), url)
    assert json.loads(_cli(s3, ["inspect", "-o", "json", url], tmp_path).stdout)["file"] == url


@pytest.mark.slow
def test_file_urls_are_local_files(cache: Path, tmp_path: Path) -> None:
    local = tmp_path / "local.sktrace"
    assert run_cli(["export", "--cache", str(cache), *WINDOW, "-O", str(local)], home=tmp_path).code == 0
    target = tmp_path / "url.sktrace"
    target.write_bytes(b"old")
    target.chmod(0o640)
    url = f"file://{target}"
    run = run_cli(["export", "--cache", str(cache), *WINDOW, "-O", url], home=tmp_path)
    assert run.code == 0, run.describe()
    assert target.read_bytes() == local.read_bytes() and (target.stat().st_mode & 0o777) == 0o640
    inspected = run_cli(["inspect", "-o", "json", url], home=tmp_path)
    assert (inspected.code, json.loads(inspected.stdout)["file"]) == (0, url)
    assert run_cli(["validate", url], home=tmp_path).code == 0
    missing = run_cli(["inspect", f"file://{tmp_path}/nope.sktrace"], home=tmp_path)
    assert assert_one_error(missing) == (f"Error: file://{tmp_path}/nope.sktrace: no such file; check the path, or write a trace with "
                                         "'kubectl sktrace export -O FILE'")


def test_a_failed_export_leaves_the_old_object(s3: S3Store, cache: Path, tmp_path: Path) -> None:
    s3.client().put_object(Bucket="traces", Key="t.sktrace", Body=b"old trace")
    run = _cli(s3, ["export", "--cache", str(cache), *WINDOW, "-n", "elsewhere", "-O", "s3://traces/t.sktrace"], tmp_path)
    assert_one_error(run, "the trace would hold no objects")
    assert _object(s3, "t.sktrace") == b"old trace" and _uploads(s3) == []


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_export_errors_are_one_line_with_the_fix_and_never_the_secret(s3: S3Store, cache: Path, tmp_path: Path) -> None:
    export = ["export", "--cache", str(cache), *WINDOW, "-O"]
    cases = {
        "no bucket": (_cli(s3, [*export, "s3://no-such-bucket/t.sktrace"], tmp_path),
                      "Error: cannot write s3://no-such-bucket/t.sktrace: the bucket no-such-bucket does not exist; create it, "
                      "or check the URL and the endpoint (AWS_ENDPOINT_URL)"),
        "a bucket": (_cli(s3, [*export, "s3://traces"], tmp_path),
                     "Error: cannot write s3://traces: it names no object (a bucket or a folder); pass a URL like "
                     "s3://bucket/trace.sktrace with -O/--output-file"),
        "a folder": (_cli(s3, [*export, "s3://traces/runs/"], tmp_path),
                     "Error: cannot write s3://traces/runs/: it names no object (a bucket or a folder); pass a URL like "
                     "s3://bucket/trace.sktrace with -O/--output-file"),
        "no credentials": (_cli(s3, [*export, "s3://traces/t.sktrace"], tmp_path, AWS_ACCESS_KEY_ID="", AWS_SECRET_ACCESS_KEY=""),
                           "Error: cannot write s3://traces/t.sktrace: no credentials found; set AWS_PROFILE or "
                           "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"),
        "unreachable": (_cli(s3, [*export, "s3://traces/t.sktrace"], tmp_path, AWS_ENDPOINT_URL=f"http://127.0.0.1:{_closed_port()}",
                             AWS_MAX_ATTEMPTS="1"), None),
        "unknown protocol": (_cli(s3, [*export, "nosuch://traces/t.sktrace"], tmp_path),
                             "Error: cannot write nosuch://traces/t.sktrace: unknown protocol nosuch://; use s3://, gs://, az://, "
                             "file:// or a local path"),
    }
    for name, (run, expected) in cases.items():
        line = assert_one_error(run)
        assert s3.env["AWS_SECRET_ACCESS_KEY"] not in run.stderr, name
        if expected is not None:
            assert line == expected, name
    unreachable = cases["unreachable"][0].error_lines()[0]
    assert unreachable.startswith("Error: cannot write s3://traces/t.sktrace: cannot reach the store (Could not connect to the endpoint URL")
    assert unreachable.endswith("); check the network and AWS_ENDPOINT_URL")
    assert _keys(s3) == [] and _uploads(s3) == []


def test_bad_credentials_and_denied_access_are_one_line_with_the_fix(s3: S3Store, cache: Path, tmp_path: Path) -> None:
    s3.client().put_object(Bucket="traces", Key="t.sktrace", Body=b"old trace")
    iam = s3.client().meta  # the endpoint serves IAM too: a user with no permission at all
    import boto3

    admin = boto3.session.Session(aws_access_key_id="test-key-id", aws_secret_access_key="test-secret-key", region_name="us-east-1")
    users = admin.client("iam", endpoint_url=iam.endpoint_url)
    users.create_user(UserName="reader-of-nothing")
    key = users.create_access_key(UserName="reader-of-nothing")["AccessKey"]
    s3.require_signatures(True)
    nobody = {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}
    wrong = {"AWS_SECRET_ACCESS_KEY": "not-the-secret"}
    export = ["export", "--cache", str(cache), *WINDOW, "-O", "s3://traces/t.sktrace"]
    runs = [_cli(s3, export, tmp_path, **wrong), _cli(s3, export, tmp_path, **nobody),
            _cli(s3, ["inspect", "s3://traces/t.sktrace"], tmp_path, **nobody)]
    s3.require_signatures(False)
    fix = "check the credentials (AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) and that they may use traces"
    assert [assert_one_error(run) for run in runs] == [
        f"Error: cannot write s3://traces/t.sktrace: access denied (The AWS Access Key Id you provided does not exist in our records); {fix}",
        f"Error: cannot write s3://traces/t.sktrace: access denied (Access Denied); {fix}",
        f"Error: s3://traces/t.sktrace: access denied (Forbidden); {fix}",
    ]
    assert not any(secret in run.stderr for run in runs for secret in ("not-the-secret", key["SecretAccessKey"]))
    assert _object(s3, "t.sktrace") == b"old trace"


def test_reading_errors_are_one_line_with_the_fix(s3: S3Store, tmp_path: Path) -> None:
    missing = _cli(s3, ["inspect", "s3://traces/nope.sktrace"], tmp_path)
    assert assert_one_error(missing) == ("Error: s3://traces/nope.sktrace: no such object; check the URL, or write a trace with "
                                         "'kubectl sktrace export -O s3://traces/nope.sktrace'")
    no_bucket = _cli(s3, ["validate", "s3://no-such-bucket/t.sktrace"], tmp_path)
    assert assert_one_error(no_bucket) == ("Error: s3://no-such-bucket/t.sktrace: the bucket no-such-bucket does not exist; check the URL "
                                           "and the endpoint (AWS_ENDPOINT_URL)")
    as_json = _cli(s3, ["validate", "-o", "json", "s3://traces/nope.sktrace"], tmp_path)
    assert as_json.code == 1 and json.loads(as_json.stdout)["file"] == "s3://traces/nope.sktrace"
    s3.client().put_object(Bucket="traces", Key="junk.sktrace", Body=b"\x00not a trace")
    junk = _cli(s3, ["inspect", "s3://traces/junk.sktrace"], tmp_path)
    assert assert_one_error(junk).startswith("Error: s3://traces/junk.sktrace: ")
    unreachable = _cli(s3, ["inspect", "s3://traces/t.sktrace"], tmp_path, AWS_ENDPOINT_URL=f"http://127.0.0.1:{_closed_port()}",
                       AWS_MAX_ATTEMPTS="1")
    assert assert_one_error(unreachable, "cannot reach the store", "check the network and AWS_ENDPOINT_URL")


# --- what is missing: the extra, a protocol's backend ------------------------------------------------------

BLOCKED = """
import sys
for name in {blocked!r}:
    sys.modules[name] = None  # as if not installed: importing it raises ImportError
sys.argv = ["kubectl-sktrace", *{args!r}]
from kubectl_sktrace.cli import main
main()
"""


def _without(blocked: list[str], args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    code = BLOCKED.format(blocked=blocked, args=args)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=private_env(home), timeout=60,
                          stdin=subprocess.DEVNULL, check=False)


@pytest.mark.parametrize(
    "blocked, args, line",
    [
        (["fsspec"], ["inspect", "s3://traces/t.sktrace"],
         "Error: cannot read s3://traces/t.sktrace: s3:// URLs need the cloud extra; pip install 'kubectl-sktrace[cloud]'"),
        (["s3fs"], ["validate", "s3://traces/t.sktrace"],
         "Error: cannot read s3://traces/t.sktrace: s3:// URLs need the package s3fs, which is not installed; "
         "pip install 'kubectl-sktrace[cloud]'"),
        (["gcsfs"], ["inspect", "gs://traces/t.sktrace"],
         "Error: cannot read gs://traces/t.sktrace: gs:// URLs need the package gcsfs, which is not installed; pip install gcsfs"),
        (["adlfs"], ["inspect", "az://traces/t.sktrace"],
         "Error: cannot read az://traces/t.sktrace: az:// URLs need the package adlfs, which is not installed; pip install adlfs"),
    ],
    ids=["no-extra", "no-s3fs", "no-gcsfs", "no-adlfs"],
)
@pytest.mark.slow
def test_a_missing_package_is_named(blocked: list[str], args: list[str], line: str, tmp_path: Path) -> None:
    done = _without(blocked, args, tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", line + "\n")


@pytest.mark.slow
def test_export_without_the_extra_names_it_and_writes_nothing(cache: Path, tmp_path: Path) -> None:
    done = _without(["fsspec"], ["export", "--cache", str(cache), *WINDOW, "-O", "s3://traces/t.sktrace"], tmp_path)
    assert (done.returncode, done.stderr) == (
        1, "Error: cannot write s3://traces/t.sktrace: s3:// URLs need the cloud extra; pip install 'kubectl-sktrace[cloud]'\n")
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("cache.db")) == []


# --- from a recording of the emulator, through kubectl --------------------------------------------------------


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")
def test_kubectl_sktrace_exports_a_recording_to_s3(s3: S3Store, emulator: Any, emulator_kubeconfig: str, tmp_path: Path) -> None:
    labels = {"app": "web"}
    emulator.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "report", "namespace": "shop"},
                     "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}}})
    emulator.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"},
                     "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                              "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    env = {**private_env(tmp_path, s3.env), "PATH": os.pathsep.join([str(Path(EXE).parent), os.environ.get("PATH", "")])}
    cache = str(tmp_path / "cache.db")

    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["kubectl", "sktrace", *args], capture_output=True, text=True, env=env, timeout=90, stdin=subprocess.DEVNULL,
                              check=False)

    began = int(time.time()) - 60
    recorded = kubectl("start", "--kubeconfig", emulator_kubeconfig, "--cache", cache, "--duration", "2s", "--quiet")
    assert recorded.returncode == 0, recorded.stderr
    window = ["--cache", cache, "-s", f"@{began}", "-t", f"@{int(time.time())}"]  # one window for both exports
    local = tmp_path / "local.sktrace"
    assert kubectl("export", *window, "-O", str(local)).returncode == 0
    exported = kubectl("export", *window, "-O", "s3://traces/shop.sktrace")
    assert exported.returncode == 0, exported.stderr
    assert "Wrote s3://traces/shop.sktrace: " in exported.stderr
    assert _object(s3, "shop.sktrace") == local.read_bytes()
    inspected = kubectl("inspect", "-o", "json", "s3://traces/shop.sktrace")
    assert inspected.returncode == 0, inspected.stderr
    summary = json.loads(inspected.stdout)
    assert {(row["kind"], row["namespace"]) for row in summary["objects"]} == {("apps/v1.Deployment", "shop"), ("batch/v1.Job", "shop")}
    validated = kubectl("validate", "s3://traces/shop.sktrace")
    assert validated.returncode == 0, validated.stdout + validated.stderr


def test_read_object_and_write_object_errors_are_ours(s3: S3Store) -> None:
    with pytest.raises(TraceFormatError):
        objectstore.read_object("s3://traces/none")
    with pytest.raises(UsageError):
        objectstore.write_object("s3://no-such-bucket/t", lambda stream: stream.write(b"x"))


@pytest.mark.slow
def test_local_traces_never_import_fsspec(dsb_path: Path, tmp_path: Path) -> None:
    """The cloud packages cost ~0.4 s of CPU and ~45 MB to import: only a URL pays for them."""
    code = ("import sys\nfrom click.testing import CliRunner\nfrom kubectl_sktrace.cli import cli\n"
            f"for args in ({['inspect', str(dsb_path)]!r}, {['validate', f'file://{dsb_path}']!r}):\n"
            "    CliRunner().invoke(cli, args)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('fsspec', 's3fs', 'botocore')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=private_env(tmp_path), timeout=60, check=True)
    assert done.stdout.splitlines()[-1] == "[]"
