"""The packages (the product and its emulator) type-check under ``mypy --strict`` (configured in setup.cfg), as STYLE.md asks."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(300)
def test_mypy_strict_is_clean() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "setup.cfg"), str(ROOT / "kubectl_sktrace"), str(ROOT / "sktrace_apiserver"), str(ROOT / "sktrace_emulator")],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
