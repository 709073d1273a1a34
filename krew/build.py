"""Build the krew release archive and write its version and sha256 into ``plugin.yaml``.

    python krew/build.py [--out-dir dist] [--manifest plugin.yaml]

The archive (``kubectl-sktrace_vX.Y.Z.tar.gz``) holds two files: ``LICENSE`` and ``kubectl-sktrace``, a
zipapp with a ``#!/usr/bin/env python3`` line that needs nothing but python3 >= 3.10. One archive serves
every platform krew lists for us, because nothing inside is compiled:

- the dependencies are resolved by pip from ``setup.cfg``'s ``install_requires`` for the oldest Python we
  support (so version markers such as ``python_version < "3.11"`` are honoured), then fetched as pure
  ``py3-none-any`` wheels at the resolved versions;
- ``msgpack`` and ``pyyaml`` publish only compiled wheels, but both fall back to pure Python when their
  extension is missing, so their wheel is taken for the build machine and the extension files dropped;
- ``siphash24`` has no fallback of its own; the package's ``hashing`` module carries a pure-Python SipHash
  used when it is absent, so it is left out.

Before writing anything the build imports every module of the package and of the emulator beside it, the ``kubernetes`` client and the
fallbacks from the staged tree in a fresh interpreter, and fails if anything compiled slipped in. The
launcher (``krew/bootstrap.py``) unpacks the payload once per build id into the user's cache; see there.
The output is reproducible for fixed dependency versions: sorted entries, fixed timestamps and owners.
"""

from __future__ import annotations

import argparse
import configparser
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = "kubectl_sktrace"
PACKAGES = (PACKAGE, "sktrace_apiserver", "sktrace_emulator")  # the product, the protocol both servers speak, the emulator `demo` runs
EXECUTABLE = "kubectl-sktrace"
MIN_PYTHON = "3.10"
RELEASE_URL = "https://github.com/kubectl-sktrace/kubectl-sktrace/releases/download/v{version}/{archive}"

# distribution name -> why it is not bundled
EXCLUDED = {
    "siphash24": "compiled; kubectl_sktrace.trace.hashing falls back to pure-Python SipHash",
    "orjson": "compiled; kubectl_sktrace.kube.stream falls back to the standard json module",
}
# distribution name -> import names whose compiled extension is dropped in favour of the pure fallback
PURE_FALLBACK = {"msgpack": ("msgpack",), "pyyaml": ("yaml", "_yaml")}
COMPILED_SUFFIXES = (".so", ".pyd", ".dylib", ".dll")
FIXED_DATE_TIME = (2020, 1, 1, 0, 0, 0)
FIXED_MTIME = 1577836800  # FIXED_DATE_TIME as a unix time


class BuildError(Exception):
    """A step of the build failed; the message says which and why."""


@dataclass(frozen=True)
class Release:
    version: str
    archive: Path
    sha256: str
    bundled: tuple[str, ...]  # "name==version" of every bundled distribution


def canonical(name: str) -> str:
    """PEP 503 normalised distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def package_version() -> str:
    text = (REPO / PACKAGE / "__init__.py").read_text()
    match = re.search(r'^__version__ = "([^"]+)"', text, re.M)
    if not match:
        raise BuildError(f"no __version__ in {PACKAGE}/__init__.py")
    return match.group(1)


def install_requires() -> list[str]:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    lines = [line.strip() for line in cfg["options"]["install_requires"].splitlines()]
    return [line for line in lines if line and canonical(re.split(r"[<>=!~;\[ ]", line)[0]) not in EXCLUDED]


def _pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"pip failed: {' '.join(cmd)}\n{proc.stderr.strip()}")


def resolve(requirements: list[str], work: Path) -> dict[str, str]:
    """Pin the whole dependency tree (canonical name -> version) as pip resolves it for MIN_PYTHON."""
    report = work / "resolve.json"
    _pip("install", "--dry-run", "--ignore-installed", "--only-binary=:all:", "--python-version", MIN_PYTHON,
         "--target", str(work / "unused"), "--report", str(report), *requirements)
    pins = {canonical(item["metadata"]["name"]): item["metadata"]["version"]
            for item in json.loads(report.read_text())["install"]}
    excluded = sorted(set(pins) & set(EXCLUDED))
    if excluded:
        raise BuildError(f"{', '.join(excluded)} is required by a bundled dependency but cannot be bundled")
    return pins


def stage_dependencies(pins: dict[str, str], stage: Path) -> None:
    pure = [f"{name}=={version}" for name, version in sorted(pins.items()) if name not in PURE_FALLBACK]
    _pip("install", "--no-deps", "--no-compile", "--target", str(stage), "--only-binary=:all:",
         "--platform", "any", "--implementation", "py", "--abi", "none", "--python-version", MIN_PYTHON, *pure)
    fallback = [f"{name}=={version}" for name, version in sorted(pins.items()) if name in PURE_FALLBACK]
    if fallback:
        _pip("install", "--no-deps", "--no-compile", "--target", str(stage), "--only-binary=:all:",
             "--python-version", MIN_PYTHON, *fallback)
    for modules in PURE_FALLBACK.values():
        for module in modules:
            for path in (stage / module).rglob("*") if (stage / module).is_dir() else ():
                if path.name.endswith(COMPILED_SUFFIXES):
                    path.unlink()
    shutil.rmtree(stage / "bin", ignore_errors=True)


def stage_package(stage: Path) -> None:
    for package in PACKAGES:
        shutil.copytree(REPO / package, stage / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def check_stage(stage: Path) -> None:
    """Fail unless the staged tree is pure Python and imports on its own, fallbacks included."""
    for path in stage.rglob("*"):
        if path.name.endswith(COMPILED_SUFFIXES):
            raise BuildError(f"compiled file in the archive payload: {path.relative_to(stage)}")
    for cache in list(stage.rglob("__pycache__")):
        shutil.rmtree(cache)
    probe = f"""
import importlib, pkgutil, sys
sys.path[:] = [{str(stage)!r}] + [p for p in sys.path if 'site-packages' not in p and 'dist-packages' not in p]
for package in {PACKAGES!r}:
    for mod in pkgutil.walk_packages(importlib.import_module(package).__path__, package + '.'):
        if not mod.name.endswith('__main__'):
            importlib.import_module(mod.name)
import kubernetes.client, kubernetes.config, msgpack, msgpack.fallback, yaml, tabulate, click
assert msgpack.Packer is msgpack.fallback.Packer, 'msgpack is not using its pure fallback'
assert not yaml.__with_libyaml__, 'yaml is using libyaml'
bad = [m.__name__ for m in list(sys.modules.values())
       if (getattr(m, '__file__', None) or '').startswith({str(stage)!r}) and not m.__file__.endswith('.py')]
assert not bad, bad
"""
    proc = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1"})
    if proc.returncode != 0:
        raise BuildError(f"the staged payload does not import on its own:\n{proc.stderr.strip()}")


def payload_files(stage: Path) -> list[tuple[str, bytes]]:
    return [(path.relative_to(stage).as_posix(), path.read_bytes())
            for path in sorted(stage.rglob("*")) if path.is_file()]


def build_zipapp(files: list[tuple[str, bytes]]) -> bytes:
    digest = hashlib.sha256()
    for name, data in files:
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    bootstrap = (Path(__file__).parent / "bootstrap.py").read_text().replace("@BUILD_ID@", digest.hexdigest()[:16])
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name, data in [("__main__.py", bootstrap.encode())] + [("lib/" + n, d) for n, d in files]:
            info = zipfile.ZipInfo(name, FIXED_DATE_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return b"#!/usr/bin/env python3\n" + buf.getvalue()


def build_tarball(executable: bytes, license_text: bytes, dest: Path) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data, mode in ((EXECUTABLE, executable, 0o755), ("LICENSE", license_text, 0o644)):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, FIXED_MTIME
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            tar.addfile(info, io.BytesIO(data))
    with open(dest, "wb") as out, gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as gz:
        gz.write(raw.getvalue())


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def update_manifest(manifest: Path, *, version: str, archive_name: str, sha256: str) -> None:
    """Write version, uri and sha256 into the manifest text, keeping its comments and layout."""
    text = manifest.read_text()
    text, n_version = re.subn(r"^(  version: ).*$", rf"\g<1>v{version}", text, flags=re.M)
    uri = RELEASE_URL.format(version=version, archive=archive_name)
    text, n_uri = re.subn(r"^(\s+uri: ).*$", lambda m: m.group(1) + uri, text, flags=re.M)
    text, n_sha = re.subn(r"^(\s+sha256: ).*$", lambda m: m.group(1) + sha256, text, flags=re.M)
    if n_version != 1 or n_uri == 0 or n_uri != n_sha:
        raise BuildError(f"{manifest}: expected one spec.version and a uri and sha256 per platform")
    manifest.write_text(text)


def build_release(*, out_dir: Path, manifest: Path | None) -> Release:
    version = package_version()
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sktrace-build-") as tmp:
        work = Path(tmp)
        pins = resolve(install_requires(), work)
        stage = work / "stage"
        stage_dependencies(pins, stage)
        stage_package(stage)
        check_stage(stage)
        executable = build_zipapp(payload_files(stage))
    archive = out_dir / f"{EXECUTABLE}_v{version}.tar.gz"
    build_tarball(executable, (REPO / "LICENSE").read_bytes(), archive)
    digest = sha256_file(archive)
    if manifest is not None:
        update_manifest(manifest, version=version, archive_name=archive.name, sha256=digest)
    return Release(version=version, archive=archive, sha256=digest,
                   bundled=tuple(f"{n}=={v}" for n, v in sorted(pins.items())))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the krew release archive and update plugin.yaml.")
    parser.add_argument("--out-dir", type=Path, default=REPO / "dist")
    parser.add_argument("--manifest", type=Path, default=REPO / "plugin.yaml")
    parser.add_argument("--no-manifest", action="store_true", help="do not touch the manifest")
    args = parser.parse_args(argv)
    try:
        release = build_release(out_dir=args.out_dir, manifest=None if args.no_manifest else args.manifest)
    except BuildError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    print(f"archive: {release.archive}\nsha256:  {release.sha256}\nversion: v{release.version}")
    print("bundled: " + ", ".join(release.bundled))
    return 0


if __name__ == "__main__":
    sys.exit(main())
