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
