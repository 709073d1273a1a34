"""Check a krew plugin manifest as krew-index's validator does, and install an archive as krew does.

    python krew/validate.py plugin.yaml [--archive FILE] [--package-version X.Y.Z] [--krew-root DIR]

krew itself is not needed. The rules are those of krew's ``validation.ValidatePlugin`` and its
``validate-krew-manifest`` command, which krew-index runs on every pull request:

- ``apiVersion`` ``krew.googlecontainertools.github.com/v1alpha2``, ``kind: Plugin``;
- ``metadata.name`` matches ``^[\\w-]+$`` and is not a reserved Windows file name;
- ``shortDescription`` set and on one line; ``version`` semver with a leading ``v``;
- every platform has ``uri``, a lowercase 64-hex ``sha256``, ``bin``, ``files`` unset or each with
  ``from`` and ``to``, and a selector that uses only ``os``/``arch``, is not empty, matches at least one
  os/arch pair krew supports, and never matches a pair another platform matches;
- installing each platform's archive succeeds and leaves a ``LICENSE`` file in the installed tree.

Added for this project (krew-index reviewers ask for them): ``homepage`` and ``description`` set,
``caveats`` naming the python3 needed and where the cache lives, ``version`` equal to the package's.
krew's line-length limits (shortDescription 70, description and caveats 80) are warnings, as there.

Installing follows ``kubectl krew install --manifest=M --archive=A``: pick the platform whose selector
matches this os/arch, check the archive's sha256, extract it into a staging directory (refusing paths
that escape it), apply ``files`` (a ``from`` naming one file moves it to ``to``; otherwise ``from`` is a
glob and every match moves into the directory ``to``; default ``from: "*"``, ``to: "."``), move the
result to ``<root>/store/<name>/<version>``, check that ``bin`` lies inside it, link it as
``<root>/bin/kubectl-<name>`` (dashes in the name become underscores) and store a receipt.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import os
import platform as host_platform
import re
import shutil
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

API_VERSION = "krew.googlecontainertools.github.com/v1alpha2"
SAFE_NAME = re.compile(r"^[\w-]+$")
WINDOWS_FORBIDDEN = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}
SHA256 = re.compile(r"^[a-f0-9]{64}$")
SEMVER = re.compile(r"^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                    r"(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$")
CHANGELOG_RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\]", re.M)
# the <os, arch> pairs krew-index checks selectors against
SUPPORTED_PLATFORMS = (
    ("darwin", "386"), ("darwin", "amd64"), ("darwin", "arm64"),
    ("linux", "386"), ("linux", "amd64"), ("linux", "arm"), ("linux", "arm64"), ("linux", "ppc64le"),
    ("windows", "386"), ("windows", "amd64"), ("windows", "arm64"),
)
LINE_LIMITS = (("shortDescription", 70), ("description", 80), ("caveats", 80))
DEFAULT_FILES = ({"from": "*", "to": "."},)


class InstallError(Exception):
    """Installing the archive failed the way krew would fail; the message says why."""


@dataclass(frozen=True)
class Findings:
    errors: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.errors


def load_manifest(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a YAML mapping")
    return data


def selector_matches(selector: dict[str, Any], os_name: str, arch: str) -> bool:
    """A Kubernetes label selector (matchLabels and matchExpressions) against the labels os and arch."""
    labels = {"os": os_name, "arch": arch}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != str(value):
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), [str(v) for v in expr.get("values") or []]
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def _selector_errors(selector: Any) -> list[str]:
    if not isinstance(selector, dict):
        return ["nil selector is not supported"]
    labels, exprs = selector.get("matchLabels"), selector.get("matchExpressions")
    if labels is None and not exprs:
        return ["empty selector is not supported"]
    errors = [f"selector key {key!r} not supported (only os and arch)"
              for key in [*(labels or {}), *(e.get("key") for e in exprs or [])] if key not in ("os", "arch")]
    if labels is not None and len(labels) == 0:
        errors.append("`matchLabels` specified but empty")
    if exprs is not None and len(exprs) == 0:
        errors.append("`matchExpressions` specified but empty")
    for expr in exprs or []:
        if expr.get("operator") not in ("In", "NotIn", "Exists", "DoesNotExist"):
            errors.append(f"selector operator {expr.get('operator')!r} not supported")
    return errors


def _brings_license(files: Any) -> bool:
    ops = DEFAULT_FILES if files is None else files
    return any(fnmatch.fnmatchcase("LICENSE", os.path.basename(str(op.get("from", "")))) for op in ops)


def _platform_errors(index: int, plat: dict[str, Any]) -> list[str]:
    where = f"spec.platforms[{index}]"
    errors = []
    if not plat.get("uri"):
        errors.append(f"{where}: `uri` has to be set")
    sha = plat.get("sha256")
    if not sha:
        errors.append(f"{where}: `sha256` sum has to be set")
    elif not SHA256.match(str(sha)):
        errors.append(f"{where}: `sha256` value {sha} is not valid, must match pattern {SHA256.pattern}")
    if not plat.get("bin"):
        errors.append(f"{where}: `bin` has to be set")
    files = plat.get("files")
    if files is not None:
        if not files:
            errors.append(f"{where}: `files` has to be unspecified or non-empty")
        for op in files or []:
            if not op.get("from"):
                errors.append(f"{where}: `files`: `from` field has to be set")
            elif not op.get("to"):
                errors.append(f"{where}: `files`: `to` field has to be set")
    if not _brings_license(files):
        errors.append(f"{where}: no `files` entry brings LICENSE into the installed tree")
    selector_errors = _selector_errors(plat.get("selector"))
    errors += [f"{where}: invalid platform selector: {e}" for e in selector_errors]
    if not selector_errors and not any(selector_matches(plat["selector"], o, a) for o, a in SUPPORTED_PLATFORMS):
        errors.append(f"{where}: selector {plat['selector']} doesn't match any supported platform")
    return errors


def changelog_version(text: str) -> str | None:
    """The newest release CHANGELOG.md names: its first ``## [X.Y.Z]`` heading, or None."""
    found = CHANGELOG_RELEASE.search(text)
    return found.group(1) if found else None


def _release_errors(version: str, platforms: list[dict[str, Any]], *, changelog: str | None) -> list[str]:
    """This project's own: each platform downloads the archive of ``version``, and the changelog's newest release
    is that version, so that the package, the manifest, the archive and the notes move together."""
    archive = f"/download/{version}/kubectl-sktrace_{version}.tar.gz"
    errors = [f"spec.platforms[{i}]: uri {p.get('uri')!r} is not the archive of {version} (…{archive})"
              for i, p in enumerate(platforms) if not str(p.get("uri") or "").endswith(archive)]
    if changelog is not None and f"v{changelog_version(changelog)}" != version:
        errors.append(f"CHANGELOG.md's newest release is {changelog_version(changelog)}, not {version[1:]}: "
                      "add its section before the release")
    return errors


def validate_manifest(manifest: dict[str, Any], *, package_version: str | None = None,
                      changelog: str | None = None) -> Findings:
    """Every rule of krew-index's validator that needs no archive, plus this project's own (with
    ``package_version``: the version, the archive's name and, given its text, CHANGELOG.md agree)."""
    errors: list[str] = []
    warnings: list[str] = []
    if manifest.get("apiVersion") != API_VERSION:
        errors.append(f"apiVersion is {manifest.get('apiVersion')!r}, must be {API_VERSION!r}")
    if manifest.get("kind") != "Plugin":
        errors.append(f"kind is {manifest.get('kind')!r}, must be 'Plugin'")
    name = str((manifest.get("metadata") or {}).get("name") or "")
    if not SAFE_NAME.match(name) or name.upper() in WINDOWS_FORBIDDEN:
        errors.append(f"the plugin name {name!r} is not allowed, must match {SAFE_NAME.pattern}")
    spec = manifest.get("spec") or {}
    short = spec.get("shortDescription") or ""
    if not short:
        errors.append("should have a short description")
    elif "\n" in short.rstrip("\n") or "\r" in short:
        errors.append("should not have line breaks in short description")
    for field in ("description", "homepage"):
        if not spec.get(field):
            errors.append(f"should have a {field}")
    caveats = spec.get("caveats") or ""
    if "python3" not in caveats or "cache" not in caveats:
        errors.append("caveats must say which python3 is needed and where the cache lives")
    version = str(spec.get("version") or "")
    if not version:
        errors.append("should have a version specified")
    elif not SEMVER.match(version):
        errors.append(f"version {version!r} is not semver with a leading 'v' (like v1.2.3)")
    elif package_version is not None and version != f"v{package_version}":
        errors.append(f"version {version} does not match the package version {package_version}")
    platforms = spec.get("platforms") or []
    if package_version is not None and version == f"v{package_version}":
        errors += _release_errors(version, platforms, changelog=changelog)
    if not platforms:
        errors.append("should have a platform specified")
    for i, plat in enumerate(platforms):
        errors += _platform_errors(i, plat)
    for os_name, arch in SUPPORTED_PLATFORMS:
        matching = [i for i, p in enumerate(platforms)
                    if isinstance(p.get("selector"), dict) and selector_matches(p["selector"], os_name, arch)]
        if len(matching) > 1:
            errors.append(f"overlapping platform selectors: spec.platforms at indexes {matching} "
                          f"all select os={os_name}/arch={arch}")
    for field, limit in LINE_LIMITS:
        if any(len(line) > limit and " " in line.strip() for line in str(spec.get(field) or "").split("\n")):
            warnings.append(f"line length in `{field}` exceeds {limit} characters")
    return Findings(errors=tuple(errors), warnings=tuple(warnings))


def host_os_arch() -> tuple[str, str]:
    """This machine as krew names it (KREW_OS/KREW_ARCH override, as in krew)."""
    machine = host_platform.machine().lower()
    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i386": "386",
            "i686": "386", "armv7l": "arm", "ppc64le": "ppc64le"}.get(machine, machine)
    return os.environ.get("KREW_OS") or sys.platform.replace("win32", "windows"), os.environ.get("KREW_ARCH") or arch


def matching_platform(manifest: dict[str, Any], os_name: str, arch: str) -> dict[str, Any]:
    platforms: list[dict[str, Any]] = manifest["spec"]["platforms"]
    for plat in platforms:
        if selector_matches(plat.get("selector") or {}, os_name, arch):
            return plat
    raise InstallError(f"plugin {manifest['metadata']['name']!r} does not offer installation for {os_name}/{arch}")


def _is_within(base: Path, path: Path) -> bool:
    base, path = Path(os.path.abspath(base)), Path(os.path.abspath(path))
    return path == base or base in path.parents


def _extract(archive: Path, dest: Path) -> None:
    try:
        tar = tarfile.open(archive, "r:gz")
    except tarfile.TarError as exc:
        raise InstallError(f"{archive} is not a .tar.gz archive: {exc}") from exc
    with tar:
        for member in tar.getmembers():
            target = dest / member.name
            if not _is_within(dest, target):
                raise InstallError(f"archive entry {member.name!r} points outside the extraction directory")
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
            elif member.isfile():
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                assert source is not None
                target.write_bytes(source.read())
                target.chmod(member.mode & 0o777)
            else:
                raise InstallError(f"archive entry {member.name!r} is neither a file nor a directory")


def _apply_file_op(src_dir: Path, dst_dir: Path, op: dict[str, str]) -> None:
    frm, to = str(op["from"]), str(op["to"])
    if to != os.path.normpath(to):
        raise InstallError(f"the provided path is not clean, {to!r} should be {os.path.normpath(to)!r}")
    direct = src_dir / frm
    if direct.exists() and _is_within(src_dir, direct):
        moves = [(direct, dst_dir / (direct.name if to == "." else to))]
    else:
        matches = sorted(src_dir.glob(frm))
        if not matches:
            raise InstallError(f"no files in the plugin archive matched the glob pattern={frm}")
        moves = [(m, dst_dir / to / m.name) for m in matches]
    for source, target in moves:
        if not (_is_within(src_dir, source) and _is_within(dst_dir, target)):
            raise InstallError(f"can't move {source} to {target}: out of bounds")
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_dir():
            shutil.rmtree(target)
        os.replace(source, target)


def bin_link_name(name: str) -> str:
    return "kubectl-" + name.replace("-", "_")


def install_archive(*, manifest: dict[str, Any], archive: Path, krew_root: Path,
                    os_name: str | None = None, arch: str | None = None) -> Path:
    """Install like ``kubectl krew install --manifest --archive`` into krew_root; return the bin link."""
    host_os, host_arch = host_os_arch()
    plat = matching_platform(manifest, os_name or host_os, arch or host_arch)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != plat["sha256"]:
        raise InstallError(f"checksum does not match, want: {plat['sha256']}, got {digest}")
    name, version = manifest["metadata"]["name"], manifest["spec"]["version"]
    install_dir = krew_root / "store" / name / version
    receipt = krew_root / "receipts" / f"{name}.yaml"
    if receipt.exists():
        raise InstallError(f"can't install, {name} is already installed in {krew_root}")
    with tempfile.TemporaryDirectory(prefix="krew-downloads") as staging, \
            tempfile.TemporaryDirectory(prefix="krew-temp-move") as moved:
        _extract(archive, Path(staging))
        for op in plat.get("files") or DEFAULT_FILES:
            _apply_file_op(Path(staging), Path(moved), op)
        os.chmod(moved, 0o755)
        install_dir.parent.mkdir(parents=True, exist_ok=True)
        if install_dir.exists():
            shutil.rmtree(install_dir)
        shutil.copytree(moved, install_dir)
    binary = install_dir / plat["bin"]
    if not _is_within(install_dir, binary):
        raise InstallError(f"bin {plat['bin']!r} is not inside the installation directory {install_dir}")
    if not binary.is_file():
        raise InstallError(f"can't create symbolic link, source binary ({binary}) cannot be found in extracted archive")
    bin_dir = krew_root / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    link = bin_dir / bin_link_name(name)
    if link.is_symlink():
        link.unlink()
    link.symlink_to(os.path.relpath(binary, bin_dir))
    receipt.parent.mkdir(parents=True, exist_ok=True)
    receipt.write_text(yaml.safe_dump({**manifest, "status": {"source": {"name": "default"}}}, sort_keys=False))
    return link


def installed_tree_errors(install_dir: Path, binary: Path) -> list[str]:
    """What krew-index checks after installing: a LICENSE file in the tree; plus an executable bin."""
    errors = []
    if not any(p.is_file() and p.name.startswith("LICENSE") for p in install_dir.rglob("*")):
        errors.append(f"no LICENSE file in the installed tree {install_dir}")
    if not os.access(binary, os.X_OK):
        errors.append(f"bin {binary} is not executable")
    return errors


def check_install_all_platforms(manifest: dict[str, Any], archive: Path) -> list[str]:
    """Install the archive once per platform entry into a throwaway root, as krew-index's CI does."""
    errors = []
    for i, plat in enumerate(manifest["spec"]["platforms"]):
        os_name, arch = next(((o, a) for o, a in SUPPORTED_PLATFORMS if selector_matches(plat["selector"], o, a)),
                             ("", ""))
        with tempfile.TemporaryDirectory(prefix="krew-test") as root:
            try:
                link = install_archive(manifest=manifest, archive=archive, krew_root=Path(root),
                                       os_name=os_name, arch=arch)
            except InstallError as exc:
                errors.append(f"spec.platforms[{i}] failed to install: {exc}")
                continue
            install_dir = Path(root) / "store" / manifest["metadata"]["name"] / manifest["spec"]["version"]
            errors += [f"spec.platforms[{i}]: {e}" for e in installed_tree_errors(install_dir, link.resolve())]
    return errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Validate a krew manifest; optionally install its archive.")
    parser.add_argument("manifest", type=Path)
    parser.add_argument("--archive", type=Path, help="also install this archive for every platform entry")
    parser.add_argument("--package-version", help="the version spec.version must carry (without the v)")
    parser.add_argument("--krew-root", type=Path, help="install the archive for this machine into this root")
    parser.add_argument("--changelog", type=Path, help="CHANGELOG.md, whose newest release must be --package-version")
    args = parser.parse_args(argv)
    manifest = load_manifest(args.manifest)
    changelog = args.changelog.read_text() if args.changelog else None
    findings = validate_manifest(manifest, package_version=args.package_version, changelog=changelog)
    errors = list(findings.errors)
    if args.archive and findings.ok:
        errors += check_install_all_platforms(manifest, args.archive)
    for warning in findings.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    if errors:
        return 1
    if args.krew_root and args.archive:
        try:
            link = install_archive(manifest=manifest, archive=args.archive, krew_root=args.krew_root)
        except InstallError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"installed: {link} -> {os.readlink(link)}")
    print(f"{args.manifest}: valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
