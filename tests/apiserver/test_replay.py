"""``serve --replay-speed``'s replay (``apiserver/replay``): a read the cache refuses is said once and tried again, the
state served left as it was; the clock waits for the first watch."""

from __future__ import annotations

import threading
from pathlib import Path

from kubectl_sktrace.apiserver.replay import replay
from kubectl_sktrace.apiserver.state import Served
from kubectl_sktrace.model import GVK
from kubectl_sktrace.past.kinds import Kind

DEPLOY = Kind(GVK("apps", "v1", "Deployment"), "deployments", True)


def test_a_cache_that_cannot_be_read_is_said_once_and_tried_again(tmp_path: Path) -> None:
    state = Served([DEPLOY], at=100.0)
    state.watched.set()
    said: list[str] = []
    stop = threading.Event()

    def warn(line: str) -> None:
        said.append(line)
        if len(said) == 1:
            threading.Timer(2.5, stop.set).start()  # two more tries of the same refusal meanwhile: said no more

    thread = threading.Thread(target=replay, args=(str(tmp_path / "gone.db"), state), kwargs={"at": 100.0, "speed": 10.0, "stop": stop, "warn": warn})
    thread.start()
    thread.join(30)
    assert not thread.is_alive()
    assert len(said) == 1 and said[0].startswith("the replay could not read the cache (") and said[0].endswith("); trying again")
    assert state.log == [] and state.objects == {DEPLOY.gvk: {}}


def test_the_clock_waits_for_the_first_watch(tmp_path: Path) -> None:
    state = Served([DEPLOY], at=100.0)
    stop = threading.Event()
    said: list[str] = []
    thread = threading.Thread(target=replay, args=(str(tmp_path / "gone.db"), state), kwargs={"at": 100.0, "speed": 10.0, "stop": stop,
                                                                                            "warn": said.append})
    thread.start()
    thread.join(0.5)
    assert said == [] and state.now == 100.0  # nothing read, the history's clock at T
    stop.set()
    thread.join(30)
    assert not thread.is_alive()
