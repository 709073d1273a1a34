"""The import directions of STYLE.md and docs/architecture.md, checked on the source: who may import what.

Every module's imports are read with ``ast`` (lazy imports inside functions and ``TYPE_CHECKING`` blocks
included). The package is in wings, one subpackage per stage, over a few shared root modules; a wing imports
only the root and the wings below it, and no module reaches itself through its imports. Each I/O package has
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

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "kubectl_sktrace"
EMULATOR = ROOT / "sktrace_emulator"
PROTOCOL = ROOT / "sktrace_apiserver"

# The wings, each with the wings it may import besides itself and the shared root (docs/architecture.md).
WINGS = {
    "trace": set(),
    "kube": set(),
    "store": {"trace"},
    "record": {"trace", "kube", "store"},
    "export": {"trace", "store"},
    "audit": {"trace", "store", "record"},
    "past": {"trace", "store"},
    "apiserver": {"trace", "store", "past"},
    "view": {"trace", "store", "export"},
    "cli": {"trace", "kube", "store", "record", "export", "view", "audit", "past", "apiserver"},
}
# The root keeps what every wing shares; it imports nothing but itself.
SHARED = {"errors", "model", "timeparse", "plural", "tracerconfig", "render", "reconciliation", "safeyaml", "terminal"}
MAX_ROOT_MODULES = 12

# third-party or stdlib package -> the modules allowed to import it
OWNERS = {
    "kubernetes": {"kubectl_sktrace.kube.client"},
    "sqlite3": {"kubectl_sktrace.store"},  # the store package and its modules
    "psycopg": {"kubectl_sktrace.store.pgconn"},  # lazily, so that sqlite users never load it
    "msgpack": {"kubectl_sktrace.trace.files.format"},
    "tabulate": {"kubectl_sktrace.render"},
    "prometheus_client": {"kubectl_sktrace.record.metrics"},  # /metrics: the exposition and the process's figures
    "click": {"kubectl_sktrace.cli", "kubectl_sktrace.cli.completion"},  # the command-line layer; the emulator's is argparse
    # object storage (the cloud extra): fsspec, and never its backends or their clients by name
    "fsspec": {"kubectl_sktrace.trace.files.objectstore"},
    "s3fs": set(),
    "gcsfs": set(),
    "adlfs": set(),
    "botocore": set(),
    "boto3": set(),
}
PURE = ["past.objects", "trace.hashing", "trace.revisions", "trace.sanitize", "trace.lifecycle", "record.owners", "trace.selection.selectors", "timeparse", "model", "tracerconfig",
        "errors", "export.advice", "cli.globalflags", "plural", "reconciliation", "export.options", "record.initialsync", "kube.rbac",
        "trace.references", "record.changes", "trace.selection.rules", "safeyaml", "trace.observation"]
# modules of ours a pure module may import
PURE_MAY_IMPORT = {"kubectl_sktrace.errors", "kubectl_sktrace.trace.revisions", "kubectl_sktrace.model", "kubectl_sktrace.timeparse", "kubectl_sktrace.trace.hashing",
                   "kubectl_sktrace.trace.selection.selectors", "kubectl_sktrace.tracerconfig", "kubectl_sktrace.trace.references",
                   "kubectl_sktrace.plural", "kubectl_sktrace.trace.selection.rules", "kubectl_sktrace.safeyaml",
                   "kubectl_sktrace.trace.observation"}
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


MODULES = {_module_name(p): _imports(p) for p in sorted([*PACKAGE.rglob("*.py"), *EMULATOR.rglob("*.py"), *PROTOCOL.rglob("*.py")])}



def _targets(path: Path) -> set[str]:
    """The modules of ours that ``path`` imports: ``from pkg import name`` is ``pkg.name`` when that is a module,
    else ``pkg``; ``import a.b.c`` is the longest module of the dotted name."""
    tree = ast.parse(path.read_text(), filename=str(path))
    module = _module_name(path)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(_longest_module(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            prefix = _absolute(node, module=module, is_package=path.name == "__init__.py")
            found.update(f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in MODULES else _longest_module(prefix) for a in node.names)
    return {m for m in found if m and m != module}


def _absolute(node: ast.ImportFrom, *, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _longest_module(name: str) -> str:
    parts = name.split(".")
    return next((".".join(parts[:k]) for k in range(len(parts), 0, -1) if ".".join(parts[:k]) in MODULES), "")


GRAPH = {name: _targets(path) for name, path in
         ((_module_name(p), p) for p in sorted([*PACKAGE.rglob("*.py"), *EMULATOR.rglob("*.py"), *PROTOCOL.rglob("*.py")]))}


def _wing(module: str) -> str:
    """``record`` for ``kubectl_sktrace.record.ingest``; ``""`` for the shared root and the package itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in WINGS) else ""


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_no_module_reaches_itself_through_its_imports() -> None:
    assert _circles(GRAPH) == []


def test_the_circle_finder_sees_a_circle() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_every_subpackage_is_a_declared_wing() -> None:
    assert sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()) == sorted(WINGS)


def test_the_root_keeps_only_what_the_wings_share() -> None:
    root = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__"))
    assert root == sorted(SHARED)
    assert len(list(PACKAGE.glob("*.py"))) <= MAX_ROOT_MODULES


@pytest.mark.parametrize("wing", ["", *sorted(WINGS)], ids=lambda w: w or "root")
def test_each_wing_imports_only_the_root_and_the_wings_below_it(wing: str) -> None:
    allowed = {"", wing} | WINGS.get(wing, set())
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        if module.startswith("kubectl_sktrace.") and module != "kubectl_sktrace.__main__" and _wing(module) == wing
        for target in targets
        if target.startswith("kubectl_sktrace") and target != "kubectl_sktrace" and _wing(target) not in allowed
    )
    assert upward == []


def test_the_shared_root_imports_only_itself() -> None:
    shared = {f"kubectl_sktrace.{name}" for name in SHARED}
    assert {f"{m} -> {t}" for m in shared for t in GRAPH[m] if t.startswith("kubectl_sktrace") and t not in shared} == set()


def test_no_module_imports_its_own_package() -> None:
    """A package's ``__init__`` may gather its modules; a module imports its siblings, never the package above it
    (but a package's ``__main__``, which runs it)."""
    assert sorted(f"{m} -> {t}" for m, targets in GRAPH.items() for t in targets
                  if m.startswith(t + ".") and t != "kubectl_sktrace" and not m.endswith(".__main__")) == []

def test_every_yaml_read_goes_through_the_one_bounded_loader() -> None:
    """``safeyaml.load`` alone calls PyYAML's loaders: no other module reads YAML without its bounds."""
    import re

    reads = re.compile(r"\byaml\.(?:safe_load|load|full_load|unsafe_load|compose|load_all|safe_load_all)\b")
    offenders = sorted(str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*.py") if p.name != "safeyaml.py" and reads.search(p.read_text()))
    assert offenders == []


# where text reaches a terminal: click's and Python's own ways to print
_PRINTS = r"\bclick\.(?:echo|secho)\(|(?<![.\w])print\(|\bsys\.(?:stdout|stderr)\.write\("
# each place allowed, and why: the one door (escaping), what Ctrl-C prints before anything is loaded, and the writers
# that escape what they write (the view's log line, the progress line, the completion's answer)
_PRINTERS = {"cli/options.py": 1, "__main__.py": 1, "view/server.py": 1, "apiserver/server.py": 1, "record/progress.py": 0, "cli/__init__.py": 1}


def test_every_printed_line_goes_through_the_one_escaping_door() -> None:
    """``cli.options.say`` prints the commands' text, escaped (``terminal.escape``): a name or a message a cluster or a
    trace chose never reaches a terminal as a command to it. Any other print is an offender."""
    import re

    prints = re.compile(_PRINTS)
    found = {str(p.relative_to(PACKAGE)): len(prints.findall(p.read_text())) for p in PACKAGE.rglob("*.py")}
    assert {name: n for name, n in found.items() if n and name not in _PRINTERS} == {}
    assert {name: found.get(name, 0) for name in _PRINTERS} == _PRINTERS
    assert prints.search("    click.echo(text)") and prints.search("print(x)") and not prints.search("self.print(x)")


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
    imports = MODULES[f"kubectl_sktrace.{name}"]
    top_level = {i.split(".")[0] for i in imports}
    assert top_level & (IO_MODULES | set(OWNERS)) == set()
    ours = {i for i in imports if i.startswith("kubectl_sktrace.")}
    assert {i for i in ours if not any(i == m or i.startswith(m + ".") for m in PURE_MAY_IMPORT)} == set()


# The recording side's rooms, lowest first: a room may import those before it, never those after it.
RECORDER_ROOMS = ["kubectl_sktrace.record.ingest", "kubectl_sktrace.record.writer", "kubectl_sktrace.record.session",
                  "kubectl_sktrace.record.starting"]
# who may import the recorder's rooms: the session wires them, the CLI starts it; progress, the outage notices and
# the metrics only read its records
ROOM_IMPORTERS = {
    "kubectl_sktrace.record.ingest": {"kubectl_sktrace.record.writer", "kubectl_sktrace.record.session",
                                      "kubectl_sktrace.record.progress", "kubectl_sktrace.record.notices",
                                      "kubectl_sktrace.record.metrics"},
    "kubectl_sktrace.record.writer": {"kubectl_sktrace.record.session"},
    "kubectl_sktrace.record.session": {"kubectl_sktrace.record.starting"},
    "kubectl_sktrace.record.starting": {"kubectl_sktrace.cli.recording"},
}


@pytest.mark.parametrize("room", RECORDER_ROOMS)
def test_recorder_rooms_import_downwards(room) -> None:
    later = RECORDER_ROOMS[RECORDER_ROOMS.index(room) + 1:]
    assert {i for i in MODULES[room] if any(i == m or i.startswith(m + ".") for m in later)} == set()


def test_ingest_is_single_threaded() -> None:
    assert "threading" not in {i.split(".")[0] for i in MODULES["kubectl_sktrace.record.ingest"]}  # the writer serializes it


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
    assert _importers("sktrace_emulator", among="kubectl_sktrace") == ["kubectl_sktrace.cli.demo", "kubectl_sktrace.cli.serving"]


def test_the_emulator_imports_nothing_of_the_product() -> None:
    assert "sktrace_emulator.server" in MODULES
    assert _importers("kubectl_sktrace", among="sktrace_emulator") == []


def test_the_protocol_imports_neither_server() -> None:
    """``sktrace_apiserver`` is what the emulator and ``serve --at`` both speak: the lowest package, below both, importing
    neither, and nothing but the standard library."""
    assert "sktrace_apiserver.tls" in MODULES
    assert _importers("kubectl_sktrace", among="sktrace_apiserver") == []
    assert _importers("sktrace_emulator", among="sktrace_apiserver") == []
    imported = {name.split(".")[0] for module, names in MODULES.items() if module.startswith("sktrace_apiserver") for name in names}
    assert imported - {"sktrace_apiserver", "__future__"} <= set(sys.stdlib_module_names)


def test_the_walker_sees_lazy_and_relative_imports(tmp_path) -> None:
    assert "tabulate" in MODULES["kubectl_sktrace.render"]
    assert "fsspec" in MODULES["kubectl_sktrace.trace.files.objectstore"]  # imported inside a function
    assert "kubectl_sktrace.trace.reports.inspection" in MODULES["kubectl_sktrace.cli.traces"]  # imported inside a command
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
@pytest.mark.slow
def test_offline_commands_never_import_kubernetes(args, dsb_path) -> None:
    argv = [a.format(dsb=dsb_path) for a in args]
    code = "import json\n" + PROBE.format(commands=[argv])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.splitlines()[-1]) == []


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_the_probe_would_see_kubernetes() -> None:
    code = "import json, kubernetes.client\n" + PROBE.format(commands=[["version"]])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "kubernetes.client" in json.loads(out.splitlines()[-1])


@pytest.mark.slow
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
    ours = {i for i in MODULES["kubectl_sktrace.record.health"] if i.startswith("kubectl_sktrace.")}
    assert ours and {i for i in ours if not (i == "kubectl_sktrace.errors" or i.startswith("kubectl_sktrace.errors."))} == set()


MAX_TRACE_MODULES = 8


def test_the_trace_wing_is_grouped_by_concern() -> None:
    """``trace/`` grew to 21 modules side by side; it is grouped as ``skel/`` is: files, selection, reports, anonymizing,
    each a sub-package, and a few modules every concern shares (docs/architecture.md)."""
    trace = PACKAGE / "trace"
    modules = sorted(p.stem for p in trace.glob("*.py") if p.stem != "__init__")
    packages = sorted(p.parent.name for p in trace.glob("*/__init__.py"))
    assert len(modules) <= MAX_TRACE_MODULES, f"trace/ holds {len(modules)} modules side by side: {modules}; group them by concern"
    assert packages == ["anonymizing", "files", "reports", "selection", "skel"], packages
    documented = (ROOT / "docs" / "architecture.md").read_text()
    for package in packages:
        assert f"    {package}/" in documented, f"docs/architecture.md does not place trace/{package}/"
