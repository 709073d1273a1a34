"""``kubectl get -o json`` through ``serve --at T`` equals what real kubectl showed at T, on the history
``tests/cli/test_cli_past.py`` scripts on the emulator (creates, scales, re-images, labels, a ConfigMap's data,
deletions, a re-created name, pods' lives, a recorder stopped while changes go on, a backfill from the audit log), on
sqlite and on PostgreSQL: the same answer ``get --at`` gives, through the same layer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.apiserver.test_serve_past import serve
from tests.cli.test_cli_past import CONFIG, KINDS, NS, OFFLINE, script
from tests.cli.test_cli_start import sktrace

from sktrace_emulator import Emulator

pytestmark = pytest.mark.timeout(400)


def through(cache: str, second: int, tmp_path: Path) -> dict[str, dict[str, Any]]:
    """What kubectl shows through ``serve --at second``, per kind then name."""
    for served in serve(cache, tmp_path, "--at", f"@{second}"):
        items = json.loads(served.kubectl("get", ",".join(KINDS), "-n", NS, "-o", "json").stdout)["items"]
    plural = {"Deployment": "deployments", "ConfigMap": "configmaps", "Pod": "pods"}
    found: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
    for obj in items:
        found[plural[obj["kind"]]][obj["metadata"]["name"]] = {k: v for k, v in obj.items() if k != "status"}  # the reduced status aside
    return found


def test_kubectl_through_serve_equals_what_kubectl_showed_at_each_second(emulator: Emulator, emulator_kubeconfig: str, tmp_path: Path,
                                                                        pg_url: str) -> None:
    cache = str(tmp_path / "cache.db")
    (tmp_path / "tracer.yaml").write_text(CONFIG)
    shots, _ = script(emulator, emulator_kubeconfig, cache, tmp_path / "audit.log")
    assert sktrace("backfill", "--cache", cache, "--audit-log", str(tmp_path / "audit.log"), check=False).returncode == 0
    sktrace("cache", "copy", cache, pg_url)
    offline = {second for second, _ in shots[OFFLINE]}  # a log fills pods' lifecycles, not their objects (test_cli_past)
    for second, seen in shots:
        for where in (cache, pg_url):
            shown = through(where, second, tmp_path)
            for kind in KINDS:
                if kind == "pods" and second in offline:
                    continue
                assert shown[kind] == seen[kind], (second, kind, where)
