"""Shared pytest fixtures, and the test tiers. Each area keeps its fixtures together in one block.

Two tiers: ``pytest -m "not slow"`` is the inner loop (the rules, the formats, the store on sqlite, the
command line in process: no subprocess of the product, no PostgreSQL, no S3 server, no terminal, no emulator
and no sleep), and the README's command runs everything, in parallel. A test is ``slow`` when it asks for
one of ``SLOW_FIXTURES`` (marked here, so nobody forgets), lives in a module of ``SLOW_MODULES``, or says so
itself with ``@pytest.mark.slow``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from kubectl_sktrace.errors import ConfigError
from kubectl_sktrace.model import GVK, CacheUrl, ObjKey
from kubectl_sktrace.store import open_cache, to_db_hash
from kubectl_sktrace.store.bodies import encode_body, refs_to_json
from kubectl_sktrace.trace.hashing import spec_hash
from kubectl_sktrace.trace.references import distinct_references
from kubectl_sktrace.trace.sanitize import is_daemonset_owned
from kubectl_sktrace.tracerconfig import TracerConfig, parse_config

# --- the tiers ---------------------------------------------------------------------------------------------

# fixtures that start a server, a database or a process
SLOW_FIXTURES = {"emulator", "emulator_kubeconfig", "pg_server", "pg_url", "s3_server", "s3", "real_cluster", "private_plane"}
# fixtures of a real API server: their tests are the real tier (-m real)
REAL_FIXTURES = {"real_cluster", "private_plane"}
# modules whose every test runs the product or a server in a subprocess, or drives a terminal
SLOW_MODULES = {
    "test_crash", "test_faults", "test_outages", "test_concurrency", "test_resume",  # the reliability suites: kill, cut, race, restart
    "test_terminal",  # tmux
    "test_demo", "test_incluster", "test_security", "test_krew", "test_typing", "test_deploy",  # the real CLI or mypy
    "test_cli_start", "test_cli_timeline",  # start against the emulator
    "test_emulator_clients", "test_emulator_framing", "test_emulator_listcost", "test_emulator_main",  # real clients
    "test_hostile_inputs",  # each case runs the console script
    "test_export_closed_window",  # records a history in real time
    "test_serve_past", "test_serve_scripted",  # serve --at and kubectl against it
}


# the modules whose tests take longest (a real control plane stopped and started, a recorder killed and restarted,
# readers racing it, archives built and installed): run first, so that parallel workers share them and finish
# together rather than wait on one
LONGEST_MODULES = ("test_real_outages", "test_real_access", "test_real_differential", "test_crash", "test_concurrency", "test_krew",
                   "test_store_contract", "test_pg_identity", "test_objectstore", "test_faults", "test_outages", "test_demo",
                   "test_cli_start")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        param = getattr(item, "callspec", None)
        postgres = param is not None and param.params.get("engine") == "postgresql"
        if fixtures & SLOW_FIXTURES or postgres or item.path.stem in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
        if fixtures & REAL_FIXTURES:
            item.add_marker(pytest.mark.real)
    items.sort(key=_run_order)


def _run_order(item: pytest.Item) -> int:
    if item.path.stem in LONGEST_MODULES:
        return LONGEST_MODULES.index(item.path.stem)
    return len(LONGEST_MODULES) + (0 if item.get_closest_marker("slow") else 1)


@pytest.fixture(autouse=True)
def _fast_tier_starts_no_process(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """In the fast tier a test that starts a process fails at once, saying what to do: the tier stays what it says."""
    if request.config.option.markexpr != "not slow" or request.node.get_closest_marker("slow"):
        return
    import subprocess

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"{request.node.nodeid} starts a process: mark it @pytest.mark.slow")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)


# --- foundation: the SimKube trace fixtures (copied from ../shared/fixtures/simkube) ----------------------

DATA = Path(__file__).parent / "data"
FIXTURE_NAMES = ("dsb-scaling", "cronjob", "bare-pods")


@pytest.fixture(params=FIXTURE_NAMES)
def fixture_path(request: pytest.FixtureRequest) -> Path:
    """Each of the three SimKube v2 trace fixtures in turn."""
    return DATA / f"{request.param}.sktrace"


@pytest.fixture
def dsb_path() -> Path:
    return DATA / "dsb-scaling.sktrace"


@pytest.fixture
def cronjob_path() -> Path:
    return DATA / "cronjob.sktrace"


@pytest.fixture
def bare_pods_path() -> Path:
    return DATA / "bare-pods.sktrace"


# --- export / prune: a builder that writes cache rows directly, per the schema docstring -------------


def assert_valid_trace(data: bytes, tmp_path: Path) -> None:
    """Every export must pass ``validate`` (docs/spec.md §8.2 and SimKube's rules)."""
    from kubectl_sktrace.trace.reports.validation import validate_trace

    path = tmp_path / "check.sktrace"
    path.write_bytes(data)
    report = validate_trace(str(path))
    assert not report.has_errors, report.findings


DEFAULT_CONFIG_YAML = """\
trackedObjects:
  apps/v1.Deployment:
    trackLifecycle: true
  apps/v1.ReplicaSet: {}
  v1.ConfigMap: {}
  batch/v1.Job:
    trackLifecycle: true
"""


def obj(kind: str, name: str, namespace: str = "app", *, api_version: str | None = None, spec: Any = None,
        labels: dict[str, str] | None = None, owners: list[tuple[str, str]] | None = None, status: Any = None) -> dict[str, Any]:
    """A small sanitized object as the recorder stores it."""
    versions = {"Deployment": "apps/v1", "ReplicaSet": "apps/v1", "DaemonSet": "apps/v1", "Job": "batch/v1", "CronJob": "batch/v1"}
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "annotations": {}}
    if labels:
        metadata["labels"] = labels
    if owners:
        metadata["ownerReferences"] = [
            {"apiVersion": versions.get(k, "v1"), "kind": k, "name": n, "uid": f"uid-{n}", "controller": True} for k, n in owners
        ]
    body: dict[str, Any] = {"apiVersion": api_version or versions.get(kind, "v1"), "kind": kind, "metadata": metadata}
    if spec is not None:
        body["spec"] = spec
    if status is not None:
        body["status"] = status
    return body


def key_of(body: dict[str, Any]) -> ObjKey:
    return ObjKey(GVK.from_api_version(body["apiVersion"], body["kind"]), body["metadata"].get("namespace", ""), body["metadata"]["name"])


def _run_config(text: str) -> TracerConfig | None:
    """A run's config as the recorder knew it (None for the placeholder text some tests store: no references then)."""
    try:
        return parse_config(yaml.safe_load(text), source="a test run's config")
    except (ConfigError, yaml.YAMLError):
        return None


class CacheBuilder:
    """Writes runs, events and pods straight into a real cache file, as the recorder would."""

    def __init__(self, path: Path | CacheUrl) -> None:
        self.path = path
        self.cache = open_cache(path, create=True)
        self.run_id = 0
        self.config = _run_config(DEFAULT_CONFIG_YAML)

    def run(self, *, started: float, stopped: float, config: str = DEFAULT_CONFIG_YAML, clean: bool = True,
            synced: float | None | str = "at start") -> int:
        """A recording run; it finished its initial lists when it started unless ``synced`` says otherwise
        (None: never)."""
        with self.cache.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO runs (started, synced, stopped, clean, pid, config) VALUES (?, ?, ?, ?, 1, ?) RETURNING id",
                (started, started if synced == "at start" else synced, stopped, int(clean), config),
            )
            self.run_id = int(cur.fetchone()[0])
        self.config = _run_config(config)
        return self.run_id

    def apply(self, ts: int, body: dict[str, Any], *, inferred: bool = False, owner_chain: list[ObjKey] | None = None,
              uid: str | None = None, recv: float | None = None) -> int:
        """An applied event stamped ``ts``, received a quarter second into it unless ``recv`` says otherwise
        (a restart stamps an offline creation back to its creation time)."""
        key = key_of(body)
        chain = json.dumps([[str(k.gvk), k.namespace, k.name] for k in owner_chain]) if owner_chain else None
        row = (ts, ts + 0.25 if recv is None else recv, self.run_id, str(key.gvk), key.namespace, key.name, uid or f"uid-{key.name}",
               int(inferred), to_db_hash(spec_hash(body.get("spec"))), chain, *encode_body(body))
        columns = "ts, recv, run_id, gvk, namespace, name, uid, inferred, spec_hash, owner_chain, body, status"
        if self.cache.has_column("events", "refs"):  # as the recorder stores them (schema 0006)
            options = self.config.get(key.gvk) if self.config is not None else None
            paths = options.pod_spec_template_paths if options is not None else ()
            row += (refs_to_json(distinct_references(body, paths)) if paths else None, int(is_daemonset_owned(body)))
            columns += ", refs, daemonset"
        with self.cache.transaction() as conn:
            cur = conn.execute(f"INSERT INTO events ({columns}, op) VALUES ({', '.join('?' * len(row))}, 0) RETURNING id", row)
            return int(cur.fetchone()[0])

    def delete(self, ts: int, body: dict[str, Any], *, inferred: bool = False, uid: str | None = None, recv: float | None = None) -> int:
        key = key_of(body)
        with self.cache.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO events (ts, recv, run_id, gvk, namespace, name, uid, op, inferred) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?) "
                "RETURNING id",
                (ts, ts + 0.25 if recv is None else recv, self.run_id, str(key.gvk), key.namespace, key.name, uid or f"uid-{key.name}",
                 int(inferred)),
            )
            return int(cur.fetchone()[0])

    def pod(self, name: str, *, owner: ObjKey | None, stable_hash: int, start_ts: int | None, end_ts: int | None = None,
            namespace: str = "app", uid: str | None = None, first_seen: float = 0) -> None:
        with self.cache.transaction() as conn:
            conn.execute(
                "INSERT INTO pods (uid, namespace, name, owner_gvk, owner_namespace, owner_name, stable_hash, start_ts, end_ts, "
                "live, first_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (uid or f"uid-{name}", namespace, name, str(owner.gvk) if owner else None, owner.namespace if owner else None,
                 owner.name if owner else None, to_db_hash(stable_hash), start_ts, end_ts, int(end_ts is None), first_seen),
            )

    def close(self) -> None:
        self.cache.close()


@pytest.fixture
def cache_builder(tmp_path: Path):
    builder = CacheBuilder(tmp_path / "cache.db")
    yield builder
    builder.close()


# --- PostgreSQL: a real server for the session, a fresh database per test ----------------------------------

from pgserver import PgServer, find_bindir  # noqa: E402


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A PostgreSQL server of Debian's binaries, started once; the tests that need it skip without them."""
    bindir = find_bindir()
    if bindir is None:
        pytest.skip("no PostgreSQL server binaries (apt-get install postgresql; .ci/run does)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed (pip install -e '.[test]')")
    server = PgServer(bindir).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    """The URL of a new, empty database of the test role (password included)."""
    return pg_server.new_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each engine in turn: the ``--cache`` value of a new cache, a file path or a database URL."""
    if request.param == "sqlite":
        return str(tmp_path / "cache.db")
    return str(request.getfixturevalue("pg_url"))


def location(cache: str, history: str = "test") -> Path | CacheUrl:
    """What the store opens for ``--cache cache`` recorded from context ``history``."""
    return CacheUrl(cache, history) if cache.startswith("postgresql://") else Path(cache)
# --- end export / prune ---------------------------------------------------------------------------------


# --- emulator (local API server) ---------------------------------------------------------------------


if TYPE_CHECKING:
    from sktrace_emulator import Emulator


@pytest.fixture
def emulator() -> Iterator["Emulator"]:
    """A running emulator (https on 127.0.0.1, token ``test-token``, bookmarks every 0.2 s), stopped after."""
    from sktrace_emulator import Emulator

    emu = Emulator(token="test-token", bookmark_interval=0.2, seed=1)
    emu.start()
    try:
        yield emu
    finally:
        emu.stop()


@pytest.fixture
def emulator_kubeconfig(emulator: "Emulator", tmp_path) -> str:  # type: ignore[no-untyped-def]
    """Path of a kubeconfig file for the ``emulator`` fixture."""
    return emulator.write_kubeconfig(tmp_path / "kubeconfig")


# --- end emulator ------------------------------------------------------------------------------------


# --- kube: a scripted local HTTP API server and kubeconfig files for it ---------------------------------


@dataclass
class Reply:
    """What the scripted server answers: a status and a JSON body, or a chunked stream of lines.

    ``lines`` items are dicts (one JSON line each), bytes (sent raw), floats (pause that many seconds) or
    ``HANG`` (keep the connection open, silent, until the server stops) or ``CUT`` (close the connection
    without ending the chunked body, as a dropped connection does).
    """

    status: int = 200
    body: Any = None
    lines: Iterable[Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)


HANG = "__hang__"  # strs, so that equality holds across the two imports of this module
CUT = "__cut__"


@dataclass
class Seen:
    path: str
    query: dict[str, str]
    headers: dict[str, str]


class ScriptedApiServer:
    """A tiny HTTP/1.1 server on 127.0.0.1 whose answers a test scripts with ``route``."""

    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.routes: list[tuple[Callable[[Seen], bool], Callable[[Seen], Reply]]] = []
        self.stopping = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                seen = Seen(parts.path, {k: v[-1] for k, v in parse_qs(parts.query).items()}, dict(self.headers))
                outer.requests.append(seen)
                for match, answer in reversed(outer.routes):
                    if match(seen):
                        reply = answer(seen)
                        break
                else:
                    reply = Reply(404, {"kind": "Status", "code": 404, "message": "not found"})
                self.send(reply)

            def send(self, reply: Reply) -> None:
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                if reply.lines is None:
                    data = json.dumps(reply.body).encode() if reply.body is not None else b""
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for item in reply.lines:
                        if isinstance(item, str) and item == HANG:
                            while not outer.stopping.wait(0.05):
                                pass
                            return
                        if isinstance(item, str) and item == CUT:
                            self.close_connection = True
                            return
                        if isinstance(item, (int, float)):
                            time.sleep(item)
                            continue
                        data = item if isinstance(item, bytes) else json.dumps(item).encode() + b"\n"
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def route(self, path: str, answer: Reply | Callable[[Seen], Reply], *, when: Callable[[Seen], bool] | None = None) -> None:
        """Answer GETs of ``path`` (later routes win); ``answer`` may be a function of the request."""
        fn = answer if callable(answer) else (lambda seen, reply=answer: reply)
        self.routes.append((lambda seen: seen.path == path and (when is None or when(seen)), fn))

    def start(self) -> ScriptedApiServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def write_kubeconfig(path: Path, *, server: str, token: str | None = "t0k3n", context: str = "test",
                     namespace: str | None = None, user: dict[str, Any] | None = None) -> Path:
    ctx: dict[str, Any] = {"cluster": f"{context}-cluster", "user": f"{context}-user"}
    if namespace:
        ctx["namespace"] = namespace
    doc = {
        "apiVersion": "v1", "kind": "Config", "current-context": context,
        "clusters": [{"name": f"{context}-cluster", "cluster": {"server": server}}],
        "contexts": [{"name": context, "context": ctx}],
        "users": [{"name": f"{context}-user", "user": user if user is not None else ({"token": token} if token else {})}],
    }
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def api_server() -> Iterable[ScriptedApiServer]:
    server = ScriptedApiServer().start()
    yield server
    server.stop()

# --- end kube -------------------------------------------------------------------------------------------


# --- object storage: a real S3 API on loopback (moto's server) --------------------------------------------


@dataclass
class S3Store:
    """moto's S3 server on 127.0.0.1, and the environment that points botocore at it: fake keys, no profile
    files, no instance metadata service (which botocore would otherwise ask, off this machine)."""

    endpoint: str
    env: dict[str, str]

    def client(self, **env: str) -> Any:
        import boto3

        merged = {**self.env, **env}
        return boto3.session.Session(aws_access_key_id=merged["AWS_ACCESS_KEY_ID"], aws_secret_access_key=merged["AWS_SECRET_ACCESS_KEY"],
                                     region_name=merged["AWS_DEFAULT_REGION"]).client("s3", endpoint_url=self.endpoint)

    def require_signatures(self, required: bool) -> None:
        """Make the server check every request's credentials and IAM permissions (or stop checking)."""
        import urllib.request

        body = b"0" if required else b"inf"
        urllib.request.urlopen(urllib.request.Request(f"{self.endpoint}/moto-api/reset-auth", data=body, method="POST",
                                                       headers={"Content-Type": "text/plain"}), timeout=10).read()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Store]:
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one log line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    nowhere = tmp_path_factory.mktemp("aws")
    env = {
        "AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "test-key-id", "AWS_SECRET_ACCESS_KEY": "test-secret-key",
        "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(nowhere / "config"), "AWS_SHARED_CREDENTIALS_FILE": str(nowhere / "credentials"),
    }
    try:
        yield S3Store(endpoint=env["AWS_ENDPOINT_URL"], env=env)
    finally:
        server.stop()


@pytest.fixture
def s3(s3_server: S3Store, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Store]:
    """The S3 server with this process's environment pointing at it and an empty bucket ``traces``; every bucket
    is removed after the test."""
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name, value in s3_server.env.items():
        monkeypatch.setenv(name, value)
    import fsspec

    fsspec.get_filesystem_class("s3").clear_instance_cache()  # one made under another test's environment
    client = s3_server.client()
    client.create_bucket(Bucket="traces")
    try:
        yield s3_server
    finally:
        s3_server.require_signatures(False)
        for bucket in client.list_buckets()["Buckets"]:
            name = bucket["Name"]
            for upload in client.list_multipart_uploads(Bucket=name).get("Uploads", []):
                client.abort_multipart_upload(Bucket=name, Key=upload["Key"], UploadId=upload["UploadId"])
            for item in client.list_objects_v2(Bucket=name).get("Contents", []):
                client.delete_object(Bucket=name, Key=item["Key"])
            client.delete_bucket(Bucket=name)


# --- end object storage -----------------------------------------------------------------------------------


# --- a real API server (the real tier: ``@pytest.mark.real``, tests/realk8s.py) -------------------------------

import realk8s  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    """The run's controller (or the one process of a run without workers) makes the directory in which the first
    worker that needs it starts the shared control plane; workers inherit its path through the environment."""
    if hasattr(config, "workerinput") or realk8s.SHARED_ENV in os.environ:
        return
    import tempfile

    os.environ[realk8s.SHARED_ENV] = tempfile.mkdtemp(prefix="sktrace-real-")
    config.stash[_REAL_OWNER] = True


_REAL_OWNER = pytest.StashKey[bool]()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After every worker finished: stop the shared control plane, and fail the run if a process or port is left."""
    if not session.config.stash.get(_REAL_OWNER, False):
        return
    left = realk8s.tear_down_shared(Path(os.environ[realk8s.SHARED_ENV]))
    if left:
        session.config.stash[_REAL_LEFT] = left
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_REAL_LEFT = pytest.StashKey[list]()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    why = realk8s.unavailable()
    skipped = terminalreporter.stats.get("skipped", [])
    if why is not None and any(why in str(getattr(report, "longrepr", "")) for report in skipped):
        terminalreporter.write_line(f"real tier: {why}")
    for line in config.stash.get(_REAL_LEFT, []):
        terminalreporter.write_line(f"real tier: left behind after the run: {line}", red=True)


@pytest.fixture(scope="session")
def real_cluster() -> realk8s.ControlPlane:
    """The run's real control plane (kube-apiserver v1.28, its controller manager, etcd, a fake kubelet; the audit
    log on at RequestResponse for writes), shared by every test and worker: isolate by namespace."""
    why = realk8s.unavailable()
    if why is not None:
        pytest.skip(why)
    return realk8s.shared(Path(os.environ[realk8s.SHARED_ENV]))


@pytest.fixture
def private_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., realk8s.ControlPlane]]:
    """Make a control plane of the test's own (for what would disturb others: an outage), stopped after it; the
    test fails if a process or port of it is left behind."""
    why = realk8s.unavailable()
    if why is not None:
        pytest.skip(why)
    planes: list[realk8s.ControlPlane] = []

    def make(**env: str) -> realk8s.ControlPlane:
        plane = realk8s.ControlPlane.create(tmp_path_factory.mktemp("plane"))
        planes.append(plane)
        plane.up(**env)
        return plane

    yield make
    left = [line for plane in planes for line in plane.down()]
    assert not left, f"left behind by a private control plane: {left}"


# --- end a real API server ------------------------------------------------------------------------------------
