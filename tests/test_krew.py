"""The krew packaging: manifest rules, the krew-like installer, and the release archive run through kubectl.

The end-to-end test builds the real archive (pip fetches the pure wheels; its cache makes reruns quick),
installs it into a temporary krew root and runs it through the real ``kubectl`` with a PATH that holds
only that bin directory, a python3 from outside any virtualenv, and kubectl itself.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"krew_{name}", REPO / "krew" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


build = _load("build")
validate = _load("validate")

from kubectl_sktrace import __version__  # noqa: E402


def _manifest() -> dict[str, Any]:
    manifest: dict[str, Any] = validate.load_manifest(REPO / "plugin.yaml")
    return manifest


def _tarball(path: Path, entries: dict[str, tuple[bytes, int]]) -> str:
    with tarfile.open(path, "w:gz") as tar:
        for name, (data, mode) in entries.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _with_sha(manifest: dict[str, Any], sha: str) -> dict[str, Any]:
    manifest = copy.deepcopy(manifest)
    for plat in manifest["spec"]["platforms"]:
        plat["sha256"] = sha
    return manifest


# --- the committed manifest -------------------------------------------------------------------------------

def test_committed_manifest_passes_every_rule_and_matches_the_package_version() -> None:
    findings = validate.validate_manifest(_manifest(), package_version=__version__, changelog=(REPO / "CHANGELOG.md").read_text())
    assert findings.errors == ()
    assert findings.warnings == ()


def test_committed_manifest_covers_linux_and_macos_on_both_architectures_once_each() -> None:
    platforms = _manifest()["spec"]["platforms"]
    for os_name, arch in [("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64"), ("darwin", "arm64")]:
        assert sum(validate.selector_matches(p["selector"], os_name, arch) for p in platforms) == 1
    assert not any(validate.selector_matches(p["selector"], "windows", "amd64") for p in platforms)
    assert len({(p["uri"], p["sha256"]) for p in platforms}) == 1
    assert "pipx install kubectl-sktrace" in _manifest()["spec"]["caveats"]


# --- the validator's rules ----------------------------------------------------------------------------------

def _broken(change: str) -> dict[str, Any]:
    m = _manifest()
    spec, plat0 = m["spec"], m["spec"]["platforms"][0]
    if change == "uppercase sha256":
        plat0["sha256"] = plat0["sha256"].upper().replace("0", "A")
    elif change == "overlapping selectors":
        plat0["selector"] = {"matchLabels": {"os": "linux"}}
    elif change == "missing LICENSE":
        plat0["files"] = [{"from": "kubectl-sktrace", "to": "."}]
    elif change == "bad name":
        m["metadata"]["name"] = "sk trace"
    elif change == "reserved name":
        m["metadata"]["name"] = "con"
    elif change == "version without v":
        spec["version"] = "0.1.0"
    elif change == "two-line short description":
        spec["shortDescription"] = "Record a trace\nand export it"
    elif change == "selector on another key":
        plat0["selector"] = {"matchLabels": {"os": "linux", "arch": "amd64", "distro": "debian"}}
    elif change == "selector matching nothing supported":
        plat0["selector"] = {"matchLabels": {"os": "plan9", "arch": "amd64"}}
    elif change == "no bin":
        del plat0["bin"]
    elif change == "empty files":
        plat0["files"] = []
    elif change == "caveats without python3":
        spec["caveats"] = "Enjoy.\n"
    return m


REJECTIONS = [
    ("uppercase sha256", "spec.platforms[0]: `sha256` value {sha} is not valid, must match pattern ^[a-f0-9]{64}$"),
    ("overlapping selectors",
     "overlapping platform selectors: spec.platforms at indexes [0, 1] all select os=linux/arch=arm64"),
    ("missing LICENSE", "spec.platforms[0]: no `files` entry brings LICENSE into the installed tree"),
    ("bad name", "the plugin name 'sk trace' is not allowed, must match ^[\\w-]+$"),
    ("reserved name", "the plugin name 'con' is not allowed, must match ^[\\w-]+$"),
    ("version without v", "version '0.1.0' is not semver with a leading 'v' (like v1.2.3)"),
    ("two-line short description", "should not have line breaks in short description"),
    ("selector on another key",
     "spec.platforms[0]: invalid platform selector: selector key 'distro' not supported (only os and arch)"),
    ("selector matching nothing supported",
     "spec.platforms[0]: selector {'matchLabels': {'os': 'plan9', 'arch': 'amd64'}} doesn't match any supported platform"),
    ("no bin", "spec.platforms[0]: `bin` has to be set"),
    ("empty files", "spec.platforms[0]: `files` has to be unspecified or non-empty"),
    ("caveats without python3", "caveats must say which python3 is needed and where the cache lives"),
]


@pytest.mark.parametrize(("change", "expected"), REJECTIONS, ids=[change for change, _ in REJECTIONS])
def test_validator_rejects(change: str, expected: str) -> None:
    manifest = _broken(change)
    sha = manifest["spec"]["platforms"][0].get("sha256", "")
    findings = validate.validate_manifest(manifest)
    assert expected.replace("{sha}", sha) in findings.errors


def test_validator_checks_the_version_against_the_package() -> None:
    findings = validate.validate_manifest(_manifest(), package_version="9.9.9")
    assert findings.errors == (f"version v{__version__} does not match the package version 9.9.9",)


def test_validator_keeps_the_archive_and_the_changelog_in_step_with_the_package() -> None:
    manifest = _manifest()
    manifest["spec"]["platforms"][1]["uri"] = manifest["spec"]["platforms"][1]["uri"].replace(__version__, "0.0.9")
    changelog = "# Changelog\n\n## [Unreleased]\n\n## [0.0.9] - 2026-01-01\n"
    findings = validate.validate_manifest(manifest, package_version=__version__, changelog=changelog)
    assert findings.errors == (
        f"spec.platforms[1]: uri {manifest['spec']['platforms'][1]['uri']!r} is not the archive of v{__version__} "
        f"(…/download/v{__version__}/kubectl-sktrace_v{__version__}.tar.gz)",
        f"CHANGELOG.md's newest release is 0.0.9, not {__version__}: add its section before the release",
    )
    assert validate.changelog_version((REPO / "CHANGELOG.md").read_text()) == __version__


def test_long_description_lines_are_warnings_not_errors() -> None:
    m = _manifest()
    m["spec"]["description"] = "word " * 20 + "\n"
    findings = validate.validate_manifest(m)
    assert findings.errors == ()
    assert findings.warnings == ("line length in `description` exceeds 80 characters",)


@pytest.mark.parametrize(("selector", "os_name", "arch", "expected"), [
    ({"matchLabels": {"os": "linux", "arch": "amd64"}}, "linux", "amd64", True),
    ({"matchLabels": {"os": "linux", "arch": "amd64"}}, "linux", "arm64", False),
    ({"matchLabels": {"os": "darwin"}}, "darwin", "arm64", True),
    ({"matchExpressions": [{"key": "os", "operator": "In", "values": ["linux", "darwin"]}]}, "darwin", "amd64", True),
    ({"matchExpressions": [{"key": "os", "operator": "NotIn", "values": ["windows"]}]}, "windows", "amd64", False),
    ({"matchExpressions": [{"key": "arch", "operator": "Exists"}]}, "linux", "arm", True),
    ({"matchExpressions": [{"key": "arch", "operator": "DoesNotExist"}]}, "linux", "arm", False),
    ({"matchLabels": {"os": "linux"}, "matchExpressions": [{"key": "arch", "operator": "In", "values": ["arm64"]}]},
     "linux", "amd64", False),
], ids=["labels", "labels-other-arch", "os-only", "in", "notin", "exists", "doesnotexist", "labels-and-expr"])
def test_selector_matches(selector: dict[str, Any], os_name: str, arch: str, expected: bool) -> None:
    assert validate.selector_matches(selector, os_name, arch) is expected


# --- the krew-like installer -----------------------------------------------------------------------------

@pytest.mark.timeout(30)
def test_install_extracts_applies_files_and_links_bin(tmp_path: Path) -> None:
    archive = tmp_path / "a.tar.gz"
    sha = _tarball(archive, {"kubectl-sktrace": (b"#!/bin/sh\necho hi\n", 0o755), "LICENSE": (b"MIT", 0o644),
                             "README.md": (b"not copied", 0o644)})
    root = tmp_path / "root"
    link = validate.install_archive(manifest=_with_sha(_manifest(), sha), archive=archive, krew_root=root,
                                    os_name="darwin", arch="arm64")
    install_dir = root / "store" / "sktrace" / f"v{__version__}"
    assert link == root / "bin" / "kubectl-sktrace"
    assert os.readlink(link) == f"../store/sktrace/v{__version__}/kubectl-sktrace"
    assert sorted(p.name for p in install_dir.iterdir()) == ["LICENSE", "kubectl-sktrace"]
    assert (root / "receipts" / "sktrace.yaml").is_file()
    assert validate.installed_tree_errors(install_dir, link.resolve()) == []
    assert subprocess.run([str(link)], capture_output=True, text=True).stdout == "hi\n"


@pytest.mark.timeout(30)
def test_install_refuses_a_wrong_checksum_and_a_bin_outside_the_install_dir(tmp_path: Path) -> None:
    archive = tmp_path / "a.tar.gz"
    sha = _tarball(archive, {"kubectl-sktrace": (b"x", 0o755), "LICENSE": (b"MIT", 0o644)})
    with pytest.raises(validate.InstallError, match="checksum does not match"):
        validate.install_archive(manifest=_with_sha(_manifest(), "0" * 64), archive=archive,
                                 krew_root=tmp_path / "r1", os_name="linux", arch="amd64")
    escaping = _with_sha(_manifest(), sha)
    escaping["spec"]["platforms"][0]["bin"] = "../../../../kubectl-sktrace"
    with pytest.raises(validate.InstallError, match="is not inside the installation directory"):
        validate.install_archive(manifest=escaping, archive=archive, krew_root=tmp_path / "r2",
                                 os_name="linux", arch="amd64")
    with pytest.raises(validate.InstallError, match="does not offer installation for windows/amd64"):
        validate.install_archive(manifest=_with_sha(_manifest(), sha), archive=archive,
                                 krew_root=tmp_path / "r3", os_name="windows", arch="amd64")


@pytest.mark.timeout(30)
def test_install_refuses_archive_entries_escaping_the_staging_dir(tmp_path: Path) -> None:
    archive = tmp_path / "a.tar.gz"
    sha = _tarball(archive, {"../evil": (b"x", 0o755), "LICENSE": (b"MIT", 0o644)})
    with pytest.raises(validate.InstallError, match="archive entry '../evil' points outside"):
        validate.install_archive(manifest=_with_sha(_manifest(), sha), archive=archive,
                                 krew_root=tmp_path / "r", os_name="linux", arch="amd64")


@pytest.mark.timeout(30)
def test_installing_every_platform_finds_an_archive_without_license(tmp_path: Path) -> None:
    archive = tmp_path / "a.tar.gz"
    sha = _tarball(archive, {"kubectl-sktrace": (b"x", 0o755), "LICENSE.txt": (b"MIT", 0o644)})
    manifest = _with_sha(_manifest(), sha)
    for plat in manifest["spec"]["platforms"]:
        plat["files"] = [{"from": "*", "to": "."}]
    assert validate.check_install_all_platforms(manifest, archive) == []
    sha = _tarball(archive, {"kubectl-sktrace": (b"x", 0o755), "COPYING": (b"MIT", 0o644)})
    errors = validate.check_install_all_platforms(_with_sha(manifest, sha), archive)
    assert len(errors) == 4
    assert errors[0].startswith("spec.platforms[0]: no LICENSE file in the installed tree ")


# --- the real archive, through kubectl --------------------------------------------------------------------

def _python_outside_venvs() -> str:
    """The first python3 >= 3.10 on PATH that belongs to no virtualenv, resolved to the real interpreter."""
    for entry in os.environ.get("PATH", "").split(os.pathsep) + ["/usr/bin", "/usr/local/bin"]:
        candidate = Path(entry) / "python3"
        if not entry or not candidate.is_file() or (Path(entry).parent / "pyvenv.cfg").exists():
            continue
        probe = subprocess.run([str(candidate), "-c", "import sys; print(sys.prefix != sys.base_prefix, "
                                "sys.version_info >= (3, 10), sys.executable)"],
                               capture_output=True, text=True, env={"PATH": entry})
        in_venv, new_enough, executable = (probe.stdout.split() + ["", "", ""])[:3]
        if probe.returncode == 0 and in_venv == "False" and new_enough == "True":
            return executable
    pytest.skip("no python3 >= 3.10 outside a virtualenv on this machine")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not on PATH")
    tmp = tmp_path_factory.mktemp("krew")
    manifest_path = tmp / "plugin.yaml"
    shutil.copy(REPO / "plugin.yaml", manifest_path)
    release = build.build_release(out_dir=tmp / "dist", manifest=manifest_path)
    pybin = tmp / "pybin"
    pybin.mkdir()
    (pybin / "python3").symlink_to(_python_outside_venvs())
    root = tmp / "krew-root"
    link = validate.install_archive(manifest=validate.load_manifest(manifest_path), archive=release.archive,
                                    krew_root=root)
    env = {
        "HOME": str(tmp / "home"),
        "XDG_CACHE_HOME": str(tmp / "cache"),
        "XDG_STATE_HOME": str(tmp / "state"),
        "PATH": os.pathsep.join([str(root / "bin"), str(pybin), str(Path(kubectl).parent)]),
        "LANG": "C.UTF-8",
    }
    return {"release": release, "manifest": manifest_path, "link": link, "env": env, "root": root, "tmp": tmp}


def _kubectl(installed: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", *args], capture_output=True, text=True, env=installed["env"], timeout=60)


@pytest.mark.timeout(180)
def test_built_archive_holds_only_the_executable_and_license_and_passes_the_validator(installed: dict[str, Any]) -> None:
    release = installed["release"]
    with tarfile.open(release.archive) as tar:
        assert sorted((m.name, m.mode) for m in tar.getmembers()) == [("LICENSE", 0o644), ("kubectl-sktrace", 0o755)]
        head = tar.extractfile("kubectl-sktrace").read(64)  # type: ignore[union-attr]
    assert head.startswith(b"#!/usr/bin/env python3\n")
    assert release.sha256 == hashlib.sha256(release.archive.read_bytes()).hexdigest()
    manifest = validate.load_manifest(installed["manifest"])
    assert {p["sha256"] for p in manifest["spec"]["platforms"]} == {release.sha256}
    assert validate.validate_manifest(manifest, package_version=__version__).errors == ()
    assert validate.check_install_all_platforms(manifest, release.archive) == []
    names = {b.split("==")[0] for b in release.bundled}
    assert {"click", "kubernetes", "msgpack", "pyyaml", "tabulate", "urllib3", "requests"} <= names
    assert not names & {"siphash24", "google-auth"}
    kubernetes = [b.split("==")[1] for b in release.bundled if b.startswith("kubernetes==")]
    assert len(kubernetes) == 1 and 30 <= int(kubernetes[0].split(".")[0]) < 36


@pytest.mark.timeout(180)
def test_kubectl_finds_the_installed_plugin_and_runs_it_with_the_system_python(installed: dict[str, Any]) -> None:
    listing = _kubectl(installed, "plugin", "list")
    assert listing.returncode == 0, listing.stderr
    assert f"{installed['root']}/bin/kubectl-sktrace" in listing.stdout.splitlines()
    first = _kubectl(installed, "sktrace", "--version")
    assert (first.returncode, first.stdout, first.stderr) == (0, f"kubectl-sktrace {__version__}\n", "")
    unpacked = list((installed["tmp"] / "cache" / "kubectl-sktrace").iterdir())
    assert len(unpacked) == 1 and len(unpacked[0].name) == 16
    helped = _kubectl(installed, "sktrace", "--help")
    assert helped.returncode == 0 and helped.stdout.startswith("Usage: kubectl sktrace [OPTIONS] COMMAND")


@pytest.mark.timeout(180)
def test_kubectl_sktrace_version_from_the_archive(installed: dict[str, Any]) -> None:
    shown = _kubectl(installed, "sktrace", "version", "-o", "json")
    assert shown.returncode == 0, shown.stderr
    assert f'"plugin": "{__version__}"' in shown.stdout


@pytest.mark.timeout(180)
@pytest.mark.parametrize("trace", ["dsb-scaling.sktrace", "bare-pods.sktrace"])
def test_archive_reads_traces_with_pure_python_msgpack_exactly_as_the_pip_install(installed: dict[str, Any],
                                                                                   trace: str) -> None:
    if not (REPO / "tests" / "data" / trace).exists():
        pytest.skip(f"tests/data/{trace} is not there")
    path = str(REPO / "tests" / "data" / trace)
    for command in (["inspect", path, "-o", "json"], ["validate", path]):
        from_archive = _kubectl(installed, "sktrace", *command)
        from_pip = subprocess.run([sys.executable, "-m", "kubectl_sktrace", *command], capture_output=True, text=True)
        assert from_archive.returncode == from_pip.returncode == 0, from_archive.stderr
        assert from_archive.stdout == from_pip.stdout


@pytest.mark.timeout(300)
@pytest.mark.skipif(os.environ.get("SKTRACE_SLOW") != "1", reason="installs pipx from PyPI (~30 s); SKTRACE_SLOW=1")
def test_pipx_install_puts_kubectl_sktrace_on_path(tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not on PATH")
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "tools")], check=True)
    subprocess.run([str(tmp_path / "tools" / "bin" / "pip"), "install", "-q", "pipx"], check=True, capture_output=True)
    env = {**os.environ, "PIPX_HOME": str(tmp_path / "pipx"), "PIPX_BIN_DIR": str(tmp_path / "bin"),
           "PIPX_MAN_DIR": str(tmp_path / "man")}
    env.pop("VIRTUAL_ENV", None)
    subprocess.run([str(tmp_path / "tools" / "bin" / "pipx"), "install", str(REPO)], check=True, capture_output=True,
                   env=env)
    env["PATH"] = os.pathsep.join([str(tmp_path / "bin"), str(Path(kubectl).parent)])
    listing = subprocess.run(["kubectl", "plugin", "list"], capture_output=True, text=True, env=env)
    assert f"{tmp_path}/bin/kubectl-sktrace" in listing.stdout.splitlines()
    shown = subprocess.run(["kubectl", "sktrace", "--version"], capture_output=True, text=True, env=env)
    assert shown.stdout == f"kubectl-sktrace {__version__}\n"


@pytest.mark.timeout(180)
def test_shell_completion_as_the_readme_documents_it_from_the_archive(installed: dict[str, Any]) -> None:
    env = {**installed["env"], "_KUBECTL_SKTRACE_COMPLETE": "bash_source"}
    script = subprocess.run(["kubectl-sktrace"], capture_output=True, text=True, env=env, timeout=60)
    assert script.returncode == 0, script.stderr
    assert "complete -o nosort -F _kubectl_sktrace_completion kubectl-sktrace" in script.stdout
    env.update({"_KUBECTL_SKTRACE_COMPLETE": "bash_complete", "COMP_WORDS": "kubectl-sktrace ver", "COMP_CWORD": "1"})
    completed = subprocess.run(["kubectl-sktrace"], capture_output=True, text=True, env=env, timeout=60)
    assert completed.stdout == "plain,version\n"


@pytest.mark.timeout(180)
def test_kubectl_completes_the_plugin_through_the_link_the_readme_documents(installed: dict[str, Any]) -> None:
    """krew installs one executable: the README's one-line link under kubectl's completion name does the rest."""
    link = installed["root"] / "bin" / "kubectl_complete-sktrace"
    link.symlink_to(installed["root"] / "bin" / "kubectl-sktrace")
    try:
        completed = _kubectl(installed, "__complete", "sktrace", "ver")
    finally:
        link.unlink()
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == ["version\tPrint the versions of the plugin, the...", ":4"]


@pytest.mark.timeout(300)
def test_kubectl_sktrace_demo_runs_end_to_end_from_the_archive(installed: dict[str, Any], tmp_path: Path) -> None:
    demo = subprocess.run(["kubectl", "sktrace", "demo"], capture_output=True, text=True, env=installed["env"],
                          cwd=tmp_path, timeout=240)
    assert demo.returncode == 0, demo.stderr
    assert "Error:" not in demo.stderr


def _interpreter(minor: int) -> str | None:
    """python3.<minor> from PATH or from a pyenv installation, if this machine has it."""
    found = shutil.which(f"python3.{minor}")
    candidates = [found] if found and "shims" not in found else []
    candidates += sorted(str(p) for p in (Path.home() / ".pyenv" / "versions").glob(f"3.{minor}.*/bin/python3"))
    for candidate in candidates:
        probe = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[1])"], capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip() == str(minor):
            return candidate
    return None


@pytest.mark.timeout(180)
@pytest.mark.parametrize("minor", range(6, 14), ids=[f"python3.{m}" for m in range(6, 14)])
def test_archive_runs_on_every_supported_python_and_explains_older_ones(installed: dict[str, Any],
                                                                          minor: int) -> None:
    python = _interpreter(minor)
    if python is None:
        pytest.skip(f"python3.{minor} is not installed here")
    ran = subprocess.run([python, str(installed["link"]), "--version"], capture_output=True, text=True,
                         env=installed["env"], timeout=120)
    if minor >= 10:
        assert (ran.returncode, ran.stdout, ran.stderr) == (0, f"kubectl-sktrace {__version__}\n", "")
        trace = REPO / "tests" / "data" / "cronjob.sktrace"
        checked = subprocess.run([python, str(installed["link"]), "validate", str(trace)], capture_output=True,
                                 text=True, env=installed["env"], timeout=120)
        assert (checked.returncode, checked.stdout) == (0, f"{trace}: valid, 0 errors, 0 warnings\n"), checked.stderr
    else:
        assert ran.returncode == 1 and ran.stdout == ""
        assert ran.stderr == (f"Error: kubectl-sktrace needs Python 3.10 or newer, but python3 is 3.{minor} ({python}); "
                              "install a newer python3 or use 'pipx install kubectl-sktrace'\n")


@pytest.mark.timeout(180)
def test_first_run_of_a_build_prunes_builds_not_started_for_two_weeks(installed: dict[str, Any],
                                                                       tmp_path: Path) -> None:
    root = tmp_path / "cache" / "kubectl-sktrace"
    old, recent, leftover, other = root / "0123456789abcdef", root / "fedcba9876543210", root / ".unpack-x", root / "notes"
    for path in (old, recent, leftover, other):
        path.mkdir(parents=True)
    month_ago = time.time() - 30 * 24 * 3600
    for path in (old, leftover, other):
        os.utime(path, (month_ago, month_ago))
    env = {**installed["env"], "XDG_CACHE_HOME": str(tmp_path / "cache")}
    ran = subprocess.run(["kubectl", "sktrace", "--version"], capture_output=True, text=True, env=env, timeout=60)
    assert ran.returncode == 0, ran.stderr
    left = sorted(p.name for p in root.iterdir())
    assert len(left) == 3 and "fedcba9876543210" in left and "notes" in left


def test_the_payload_stages_the_product_and_the_emulator_its_demo_runs(tmp_path: Path) -> None:
    build.stage_package(tmp_path)
    staged = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("__init__.py"))
    assert "kubectl_sktrace/__init__.py" in staged and "sktrace_emulator/__init__.py" in staged
    assert not list(tmp_path.rglob("__pycache__"))
    page = sorted(p.name for p in (tmp_path / "kubectl_sktrace" / "view" / "static").iterdir())
    assert page == sorted(p.name for p in (REPO / "kubectl_sktrace" / "view" / "static").iterdir())  # the view's page, as package data
    assert {"index.html", "view.css", "view.js"} <= set(page)
