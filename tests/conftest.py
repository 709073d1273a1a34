"""Shared pytest fixtures. Each area keeps its fixtures together in one block."""

from __future__ import annotations

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
