"""Outages of a real kube-apiserver v1.28 (the real tier): the server stopped (SIGSTOP), then killed and started
again, as a control plane that hangs and is restarted does. Its watch cache starts afresh, so the recorder's
resourceVersions are too old for it (410) and the recorder must list again (docs/coverage.md, outages).

A private control plane: stopping the shared one would break every other test of the run.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Callable

import pytest

from kubectl_sktrace.store.versions import APPLIED, DELETED
from realk8s import CONFIG, ControlPlane, DEPLOY, deployment, wait_for_op
from reliability_support import Recorder, query, run_cli, wait_rows

pytestmark = [pytest.mark.timeout(300)]


def test_a_hung_then_restarted_api_server_is_an_outage_the_recorder_lists_its_way_out_of(private_plane: Callable[..., ControlPlane],
                                                                                         tmp_path: Path) -> None:
    plane = private_plane()
    home, cache = tmp_path / "home", tmp_path / "cache.db"
    home.mkdir()
    ns = plane.namespace("outage")
    plane.apply(deployment(ns, "web"))
    plane.apply(deployment(ns, "doomed"))
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    recorder = Recorder(kubeconfig=plane.kubeconfig, cache=cache, home=home, log=tmp_path / "recorder.log",
                        args=["--config", str(config), "--duration", "200"])
    try:
        assert recorder.wait_for("recording changes", timeout=90), recorder.output()
        apiserver = plane.pid("kube-apiserver")
        assert apiserver is not None
        os.kill(apiserver, signal.SIGSTOP)  # hung: connections open, nothing answers
        time.sleep(3)
        os.kill(apiserver, signal.SIGKILL)  # then gone: every connection reset
        broken = time.time()
        assert recorder.wait_for("API unreachable since", timeout=60), recorder.output()
        plane.up()  # the API server again, on the same port and etcd, with a new (empty) watch cache
        plane.kubectl("-n", ns, "delete", "deployment", "doomed", "--wait=true")
        plane.kubectl("-n", ns, "set", "image", "deployment/web", "main=nginx:1.26")
        assert recorder.wait_for("every kind is watched again", timeout=90), recorder.output()
        wait_for_op(cache, DEPLOY, ns, "doomed", DELETED, timeout=90)
        wait_for_op(cache, DEPLOY, ns, "web", APPLIED, count=2, timeout=90)
    finally:
        assert recorder.stop() == 0, recorder.output()

    gaps = query(cache, "SELECT gvk, since, until, cause FROM coverage_gaps WHERE gvk = ?", DEPLOY)
    assert gaps, recorder.output()
    assert all(until is not None and since <= broken + 1 and until > broken for _, since, until, _ in gaps), (gaps, broken)
    status = run_cli(["status", "--cache", str(cache), "--kubeconfig", str(plane.kubeconfig), "-o", "json"], home=home)
    assert status.code == 0, status.describe()
    document = json.loads(status.stdout)
    assert document["runs"][-1]["state"] == "interrupted", document["runs"]
    assert document["outages"], document
    # the deployment deleted and re-imaged after the restart: each recorded once, as what it is
    assert [op for (op,) in query(cache, "SELECT op FROM events WHERE namespace = ? AND name = 'doomed' ORDER BY id", ns)] == [APPLIED, DELETED]
