"""The README a new user follows: its version strings and its install line."""

import re
from pathlib import Path

from kubectl_sktrace import __version__

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()
VERSION = re.compile(r"(?<![\d.])v?(\d+\.\d+\.\d+)(?![\d.]*\d)")
UPGRADE_NOTE = re.compile(r"\*\*Moving from [^*]*\*\*.*?```.*?```", re.S)  # where older releases are named on purpose


def test_every_version_string_in_the_readme_is_the_packages() -> None:
    text = UPGRADE_NOTE.sub("", README)
    found = {m.group(1) for m in VERSION.finditer(text) if not text[m.start():m.end() + 4].startswith(("127.", "10."))}
    assert found <= {__version__}, f"the README names {sorted(found - {__version__})}; the package is {__version__}"
    assert f"kubectl-sktrace_v{__version__}.tar.gz" in README


def test_the_one_line_install_sets_path_for_the_whole_quickstart() -> None:
    line = next(line for line in README.splitlines() if "pip install ." in line and "demo" in line)
    assert 'export PATH="$PWD/.venv/bin:$PATH"' in line
