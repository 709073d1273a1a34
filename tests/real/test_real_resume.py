"""A restart that resumes its watches on a real kube-apiserver v1.28 (the real tier): after a short stop the server
still holds every change since the last run (its watch cache), and the restart asks for those changes only, with no
list; after the API server itself restarted (its watch cache begins anew, so the last run's version is too old for
it: 410), the restart lists, as before, walking only what changed since the last clean stop. What each run asked of the server is read from its own request log (``-v 6``:
every request it made, one line each), since the audit log of the shared policy leaves reads out.

A private control plane: restarting the API server would break every other test of the run.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Callable

import pytest

from kubectl_sktrace.record.resuming import RESUME_AT_LEAST
from kubectl_sktrace.store.versions import APPLIED, DATA, DELETED
from realk8s import ControlPlane, configmap
from reliability_support import query, run_cli

pytestmark = [pytest.mark.timeout(300)]

CM = "v1.ConfigMap"
CONFIG = "trackedObjects:\n  v1.ConfigMap: {}\n"


def _start(plane: ControlPlane, cache: Path, home: Path, config: Path, ns: str) -> str:
    run = run_cli(["start", "--kubeconfig", str(plane.kubeconfig), "--cache", str(cache), "--config", str(config), "-n", ns,
                   "--duration", "5s", "-v", "6"], home=home, timeout=120)
    assert run.code == 0, run.describe()
    assert "initial sync done" in run.stderr, run.describe()
    return run.stderr


def _lists(said: str) -> list[str]:
    """The requests of a run that listed config maps page by page (a list's first page asks for 500)."""
    return re.findall(r"GET \S*/configmaps\?limit=500\S*", said)


def test_a_short_stop_resumes_and_a_forgotten_one_lists(private_plane: Callable[..., ControlPlane], tmp_path: Path) -> None:
    plane = private_plane()
    home, cache, config = tmp_path / "home", tmp_path / "cache.db", tmp_path / "config.yaml"
    home.mkdir()
    config.write_text(CONFIG)
    ns = plane.namespace("resume")
    plane.apply({"apiVersion": "v1", "kind": "List",
                 "items": [configmap(ns, f"c{i}", {"n": str(i)}) for i in range(RESUME_AT_LEAST)]})
    first = _start(plane, cache, home, config, ns)
    assert _lists(first), first

    for i in range(5):  # a short stop: 1 % changed, one deleted, one created
        plane.kubectl("-n", ns, "patch", "configmap", f"c{i}", "--type=merge", "-p", json.dumps({"data": {"n": "changed"}}))
    plane.kubectl("-n", ns, "delete", "configmap", "c9")
    plane.apply(configmap(ns, "fresh", {"n": "new"}))
    time.sleep(1.1)  # the restart begins in a later second than the changes
    second = _start(plane, cache, home, config, ns)
    assert "resuming the watches of 1 kind where the last run left them (no list): v1.ConfigMap" in second, second
    assert not _lists(second), second  # the changes came from a watch resumed at the last run's version
    assert re.search(r"GET \S*/configmaps\?allowWatchBookmarks=true&resourceVersion=\d+&timeoutSeconds=1&watch=true 200", second), second
    run2 = query(cache, "SELECT max(id) FROM runs")[0][0]
    rows = query(cache, "SELECT name, op, inferred FROM events WHERE run_id = ? AND gvk = ? ORDER BY name", run2, CM)
    assert rows == [*((f"c{i}", DATA, 1) for i in range(5)), ("c9", DELETED, 1), ("fresh", APPLIED, 1)], rows
    # each version at its managedFields time, inside the gap, not at the restart (a list's only choice)
    ((stopped, started),) = query(cache, "SELECT (SELECT stopped FROM runs WHERE id = ?), started FROM runs WHERE id = ?", run2 - 1, run2)
    stamps = query(cache, "SELECT ts FROM events WHERE run_id = ? AND gvk = ? AND op = ?", run2, CM, DATA)
    assert all(int(stopped) <= ts < int(started) for (ts,) in stamps), (stamps, stopped, started)

    # a change after the last run's version, then the API server restarts: its new watch cache begins at the version
    # it lists then, later than the last run's, and forgets the history before it. (Were nothing written between the
    # last run's version and the restart, the new cache would begin at that very version and serve the watch: a
    # resume that loses nothing, and no 410.)
    plane.kubectl("-n", ns, "patch", "configmap", "c10", "--type=merge", "-p", json.dumps({"data": {"n": "later"}}))
    apiserver = plane.pid("kube-apiserver")
    assert apiserver is not None
    os.kill(apiserver, signal.SIGKILL)
    time.sleep(1)
    plane.up()
    third = _start(plane, cache, home, config, ns)
    assert "resuming the watches of 1 kind" in third, third
    assert _lists(third), third  # 410: too old for the new watch cache; the kind listed
    # what the resumed run never saw change is as the first run's clean stop left it, carried forward by the second's:
    # the list walks only c10 (501 config maps live: the namespace's kube-root-ca.crt, one deleted, one created)
    assert f"{RESUME_AT_LEAST} listed objects as the last run's clean stop left them: not walked again" in third, third
    run3 = query(cache, "SELECT max(id) FROM runs")[0][0]
    assert query(cache, "SELECT name, op, inferred FROM events WHERE run_id = ? AND gvk = ?", run3, CM) == [("c10", DATA, 1)]
    status = run_cli(["status", "--cache", str(cache), "-o", "json"], home=home)
    assert [r["state"] for r in json.loads(status.stdout)["runs"]] == ["clean", "clean", "clean"], status.stdout
