"""Start-up time of ``kubectl sktrace``: a pip install beside the krew archive, with kubectl's own as reference.

    .venv/bin/python benchmarks/bench_startup.py [--runs 7]

Builds the release archive (krew/build.py) and installs it the krew way (krew/validate.py) into a temporary
root, makes a fresh virtualenv with ``pip install .``, and times each command through the real ``kubectl``
with only the relevant bin directory on PATH. The archive's first run (empty cache: unpack) is timed
separately from later runs (bytecode cached). Targets: under 0.3 s installed, under 1.5 s from the archive
after its first run.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _load(name: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(f"krew_{name}", REPO / "krew" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.strip()}")
    return elapsed


def median_of(runs: int, cmd: list[str], env: dict[str, str]) -> float:
    return statistics.median(timed(cmd, env) for _ in range(runs))


def env_with(path_dirs: list[Path | str], cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(str(d) for d in path_dirs)
    env["XDG_CACHE_HOME"] = str(cache)
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise SystemExit("kubectl is not on PATH")
    build, validate = _load("build"), _load("validate")
    python_dir = Path(shutil.which("python3", path="/usr/bin:/usr/local/bin") or sys.executable).parent
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp_name:
        tmp = Path(tmp_name)
        manifest = tmp / "plugin.yaml"
        shutil.copy(REPO / "plugin.yaml", manifest)
        print("building the archive ...", file=sys.stderr)
        release = build.build_release(out_dir=tmp / "dist", manifest=manifest)
        root = tmp / "krew"
        validate.install_archive(manifest=validate.load_manifest(manifest), archive=release.archive, krew_root=root)
        print("pip install . into a fresh virtualenv ...", file=sys.stderr)
        venv = tmp / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(REPO)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        kubectl_dir = Path(kubectl).parent
        pip_env = env_with([venv / "bin", kubectl_dir], tmp / "cache-pip")
        krew_env = env_with([root / "bin", python_dir, kubectl_dir], tmp / "cache-krew")
        help_cmd = ["kubectl", "sktrace", "--help"]

        rows: list[tuple[str, float]] = [
            ("kubectl version --client (reference)", median_of(args.runs, ["kubectl", "version", "--client"], pip_env)),
            ("kubectl sktrace --help, pip install", median_of(args.runs, help_cmd, pip_env)),
            ("kubectl sktrace --help, archive first run (unpack)", timed(help_cmd, krew_env)),
            ("kubectl sktrace --help, archive later runs", median_of(args.runs, help_cmd, krew_env)),
        ]
        version_cmd = ["kubectl", "sktrace", "version"]
        rows.append(("kubectl sktrace version, pip install", median_of(args.runs, version_cmd, pip_env)))
        rows.append(("kubectl sktrace version, archive later runs", median_of(args.runs, version_cmd, krew_env)))
        payload = next((tmp / "cache-krew" / "kubectl-sktrace").iterdir())
        import_cmd = ["python3", "-c", f"import sys; sys.path.insert(0, {str(payload)!r}); import kubernetes.client"]
        site = subprocess.run([str(venv / "bin" / "python"), "-c", "import kubernetes, os; "
                               "print(os.path.dirname(os.path.dirname(kubernetes.__file__)))"],
                              capture_output=True, text=True, check=True).stdout.strip()
        site_cmd = ["python3", "-c", f"import sys; sys.path.insert(0, {site!r}); import kubernetes.client"]
        no_b = {**krew_env}
        no_b.pop("PYTHONDONTWRITEBYTECODE", None)
        rows.append(("import kubernetes.client (start needs it), pip install", median_of(args.runs, site_cmd, no_b)))
        rows.append(("import kubernetes.client, archive cache, first time", timed(import_cmd, no_b)))
        rows.append(("import kubernetes.client, archive cache, later", median_of(args.runs, import_cmd, no_b)))
        size_mb = release.archive.stat().st_size / 1e6

    width = max(len(label) for label, _ in rows)
    print(f"{'command':<{width}}  seconds  (median of {args.runs}; first run once)")
    for label, seconds in rows:
        print(f"{label:<{width}}  {seconds:7.3f}")
    print(f"archive: {release.archive.name}, {size_mb:.1f} MB; "
          "targets: pip install < 0.3 s, archive after first run < 1.5 s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
