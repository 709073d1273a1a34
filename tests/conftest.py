"""Shared pytest fixtures. Each area keeps its fixtures together in one block."""

from __future__ import annotations

from pathlib import Path

import pytest

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

import json
import zlib
from pathlib import Path
from typing import Any

import pytest


def assert_valid_trace(data: bytes, tmp_path: Path) -> None:
    """Every export must pass ``validate`` (SPEC §8.2 and SimKube's rules)."""
    from kubectl_sktrace.validation import validate_trace

    path = tmp_path / "check.sktrace"
    path.write_bytes(data)
    report = validate_trace(str(path))
    assert not report.has_errors, report.findings

from kubectl_sktrace.hashing import spec_hash  # noqa: E402
from kubectl_sktrace.model import GVK, ObjKey  # noqa: E402
from kubectl_sktrace.store import open_cache, to_db_hash  # noqa: E402

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


class CacheBuilder:
    """Writes runs, events and pods straight into a real cache file, as the recorder would."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cache = open_cache(path, create=True)
        self.run_id = 0

    def run(self, *, started: float, stopped: float, config: str = DEFAULT_CONFIG_YAML, clean: bool = True) -> int:
        with self.cache.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO runs (started, synced, stopped, clean, pid, config) VALUES (?, ?, ?, ?, 1, ?)",
                (started, started, stopped, int(clean), config),
            )
        self.run_id = int(cur.lastrowid)
        return self.run_id

    def apply(self, ts: int, body: dict[str, Any], *, inferred: bool = False, owner_chain: list[ObjKey] | None = None,
              uid: str | None = None) -> int:
        key = key_of(body)
        chain = json.dumps([[str(k.gvk), k.namespace, k.name] for k in owner_chain]) if owner_chain else None
        with self.cache.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO events (ts, recv, run_id, gvk, namespace, name, uid, op, inferred, spec_hash, owner_chain, body) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)",
                (ts, ts + 0.25, self.run_id, str(key.gvk), key.namespace, key.name, uid or f"uid-{key.name}", int(inferred),
                 to_db_hash(spec_hash(body.get("spec"))), chain, zlib.compress(json.dumps(body).encode(), 1)),
            )
        return int(cur.lastrowid)

    def delete(self, ts: int, body: dict[str, Any], *, inferred: bool = False, uid: str | None = None) -> int:
        key = key_of(body)
        with self.cache.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO events (ts, recv, run_id, gvk, namespace, name, uid, op, inferred) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?)",
                (ts, ts + 0.25, self.run_id, str(key.gvk), key.namespace, key.name, uid or f"uid-{key.name}", int(inferred)),
            )
        return int(cur.lastrowid)

    def pod(self, name: str, *, owner: ObjKey | None, stable_hash: int, start_ts: int | None, end_ts: int | None = None,
            namespace: str = "app", uid: str | None = None) -> None:
        with self.cache.transaction() as conn:
            conn.execute(
                "INSERT INTO pods (uid, namespace, name, owner_gvk, owner_namespace, owner_name, stable_hash, start_ts, end_ts, "
                "live, first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0)",
                (uid or f"uid-{name}", namespace, name, str(owner.gvk) if owner else None, owner.namespace if owner else None,
                 owner.name if owner else None, to_db_hash(stable_hash), start_ts, end_ts, int(end_ts is None)),
            )

    def close(self) -> None:
        self.cache.close()


@pytest.fixture
def cache_builder(tmp_path: Path):
    builder = CacheBuilder(tmp_path / "cache.db")
    yield builder
    builder.close()
# --- end export / prune ---------------------------------------------------------------------------------


# --- emulator (local API server) ---------------------------------------------------------------------

from typing import TYPE_CHECKING, Iterator

import pytest

if TYPE_CHECKING:
    from kubectl_sktrace.emulator import Emulator


@pytest.fixture
def emulator() -> Iterator["Emulator"]:
    """A running emulator (https on 127.0.0.1, token ``test-token``, bookmarks every 0.2 s), stopped after."""
    from kubectl_sktrace.emulator import Emulator

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
