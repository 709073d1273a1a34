"""The import directions of STYLE.md, checked on the source: who may import what.

Every module's imports are read with ``ast`` (lazy imports inside functions included). Each I/O package has
one owner module; pure modules import no I/O package and no module of ours that does I/O. A subprocess run
then checks that the offline commands really never load ``kubernetes``.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "kubectl_sktrace"
EMULATOR = ROOT / "sktrace_emulator"

# third-party or stdlib package -> the modules allowed to import it
OWNERS = {
    "kubernetes": {"kubectl_sktrace.kube.client"},
    "sqlite3": {"kubectl_sktrace.store"},  # the store package and its modules
    "psycopg": {"kubectl_sktrace.store.pgconn"},  # lazily, so that sqlite users never load it
    "msgpack": {"kubectl_sktrace.traceformat"},
    "tabulate": {"kubectl_sktrace.render"},
    "click": {"kubectl_sktrace.cli", "kubectl_sktrace.completion"},  # the command-line layer; the emulator's is argparse
    # object storage (the cloud extra): fsspec, and never its backends or their clients by name
    "fsspec": {"kubectl_sktrace.objectstore"},
    "s3fs": set(),
    "gcsfs": set(),
    "adlfs": set(),
    "botocore": set(),
    "boto3": set(),
}
PURE = ["hashing", "sanitize", "lifecycle", "owners", "selectors", "timeparse", "model", "tracerconfig", "errors", "exportadvice",
        "globalflags", "plural", "reconciliation", "exportoptions", "initialsync", "rbac", "podrefs"]
# modules of ours a pure module may import
PURE_MAY_IMPORT = {"kubectl_sktrace.errors", "kubectl_sktrace.model", "kubectl_sktrace.timeparse", "kubectl_sktrace.hashing",
                   "kubectl_sktrace.selectors", "kubectl_sktrace.tracerconfig", "kubectl_sktrace.podrefs"}
IO_MODULES = {"os", "io", "socket", "subprocess", "sqlite3", "urllib", "http", "requests", "shutil", "tempfile", "fcntl", "threading"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    module = _module_name(path)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if path.name != "__init__.py":
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            names.add(prefix)
            names.update(f"{prefix}.{alias.name}" for alias in node.names)
    return names


MODULES = {_module_name(p): _imports(p) for p in sorted([*PACKAGE.rglob("*.py"), *EMULATOR.rglob("*.py")])}


def _owner_allows(package: str, module: str) -> bool:
    return any(module == owner or module.startswith(owner + ".") for owner in OWNERS[package])


@pytest.mark.parametrize("package", sorted(OWNERS))
def test_each_io_package_has_one_owner(package) -> None:
    offenders = sorted(
        module
        for module, imports in MODULES.items()
        if any(name == package or name.startswith(package + ".") for name in imports) and not _owner_allows(package, module)
    )
    assert offenders == [], f"only {sorted(OWNERS[package])} may import {package}"


@pytest.mark.parametrize("name", PURE)
def test_pure_modules_do_no_io(name) -> None:
    module = f"kubectl_sktrace.{name}"
    if module not in MODULES:
        pytest.skip(f"{module} does not exist yet")
    imports = MODULES[module]
    top_level = {i.split(".")[0] for i in imports}
    assert top_level & (IO_MODULES | set(OWNERS)) == set()
    ours = {i for i in imports if i.startswith("kubectl_sktrace.")}
    assert {i for i in ours if not any(i == m or i.startswith(m + ".") for m in PURE_MAY_IMPORT)} == set()


# The recording side's rooms, lowest first: a room may import those before it, never those after it.
RECORDER_ROOMS = ["kubectl_sktrace.ingest", "kubectl_sktrace.writer", "kubectl_sktrace.recorder"]
# who may import the recorder's rooms: the session wires them, the CLI starts it; progress and the outage notices
# only read its records
ROOM_IMPORTERS = {
    "kubectl_sktrace.ingest": {"kubectl_sktrace.writer", "kubectl_sktrace.recorder", "kubectl_sktrace.progress",
                               "kubectl_sktrace.outagenotice"},
    "kubectl_sktrace.writer": {"kubectl_sktrace.recorder"},
    "kubectl_sktrace.recorder": {"kubectl_sktrace.cli.recording"},
}


@pytest.mark.parametrize("room", RECORDER_ROOMS)
def test_recorder_rooms_import_downwards(room) -> None:
    later = RECORDER_ROOMS[RECORDER_ROOMS.index(room) + 1:]
    assert {i for i in MODULES[room] if any(i == m or i.startswith(m + ".") for m in later)} == set()


def test_ingest_is_single_threaded() -> None:
    assert "threading" not in {i.split(".")[0] for i in MODULES["kubectl_sktrace.ingest"]}  # the writer serializes it


@pytest.mark.parametrize("room", RECORDER_ROOMS)
def test_recorder_rooms_have_known_importers(room) -> None:
    importers = {m for m, imports in MODULES.items() if m != room and any(i == room or i.startswith(room + ".") for i in imports)}
    assert importers <= ROOM_IMPORTERS[room]


def _importers(prefix: str, *, among: str) -> list[str]:
    return sorted(
        module
        for module, imports in MODULES.items()
        if module.split(".")[0] == among and any(name == prefix or name.startswith(prefix + ".") for name in imports)
    )


def test_only_the_demo_imports_the_emulator() -> None:
    assert _importers("sktrace_emulator", among="kubectl_sktrace") == ["kubectl_sktrace.demo"]


def test_the_emulator_imports_nothing_of_the_product() -> None:
    assert "sktrace_emulator.server" in MODULES
    assert _importers("kubectl_sktrace", among="sktrace_emulator") == []


def test_the_walker_sees_lazy_and_relative_imports(tmp_path) -> None:
    assert "tabulate" in MODULES["kubectl_sktrace.render"]
    assert "fsspec" in MODULES["kubectl_sktrace.objectstore"]  # imported inside a function
    assert "kubectl_sktrace.inspection" in MODULES["kubectl_sktrace.cli.traces"]  # imported inside a command
    assert "kubectl_sktrace.store.connection" in MODULES["kubectl_sktrace.store"]


PROBE = """
import sys
from click.testing import CliRunner
from kubectl_sktrace.cli import cli
for args in {commands!r}:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, (args, result.output)
print(json.dumps(sorted(m for m in sys.modules if m == "kubernetes" or m.startswith("kubernetes."))))
"""


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "args",
    [["--help"], ["version"], ["config"], ["inspect", "{dsb}"], ["inspect", "--events", "{dsb}", "-o", "yaml"], ["validate", "{dsb}"],
     ["inspect", "--timeline", "{dsb}"]],
    ids=["help", "version", "config", "inspect", "inspect-events", "validate", "inspect-timeline"],
)
def test_offline_commands_never_import_kubernetes(args, dsb_path) -> None:
    argv = [a.format(dsb=dsb_path) for a in args]
    code = "import json\n" + PROBE.format(commands=[argv])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.splitlines()[-1]) == []


@pytest.mark.timeout(60)
def test_the_probe_would_see_kubernetes() -> None:
    code = "import json, kubernetes.client\n" + PROBE.format(commands=[["version"]])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "kubernetes.client" in json.loads(out.splitlines()[-1])


@pytest.mark.timeout(60)
def test_console_script_help_does_not_import_kubernetes() -> None:
    script = Path(sys.executable).parent / "kubectl-sktrace"
    if not script.exists():
        pytest.skip("the console script is not installed next to this interpreter")
    result = subprocess.run(
        [sys.executable, "-X", "importtime", str(script), "--help"], capture_output=True, text=True, check=True
    )
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    assert "click" in imported
    assert not {m for m in imported if m.split(".")[0] == "kubernetes"}


def test_the_health_server_reads_only_what_the_loop_posts() -> None:
    """A probe's thread never touches the cache or the recorder's state: health imports none of our modules but errors."""
    ours = {i for i in MODULES["kubectl_sktrace.health"] if i.startswith("kubectl_sktrace.")}
    assert ours and {i for i in ours if not (i == "kubectl_sktrace.errors" or i.startswith("kubectl_sktrace.errors."))} == set()
