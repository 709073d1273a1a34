"""Launcher of the krew release executable: the ``__main__.py`` of the ``kubectl-sktrace`` zipapp.

Why not run straight from the zip: Python cannot write ``.pyc`` files into a zip, so every run would
recompile the ``kubernetes`` client (5-7 s). Instead the payload (``lib/`` in the zip: the package and its
pure-Python dependencies) is unpacked once into ``${XDG_CACHE_HOME:-~/.cache}/kubectl-sktrace/<build id>/``,
where Python then caches bytecode as in a normal install. The build id is the sha256 of the payload,
written in below by ``krew/build.py``, so a new release unpacks beside the old one and never mixes files.

Unpacking is atomic: into a temporary directory beside the target, then one ``rename``. Two first runs at
once both unpack; one rename wins, the other sees the directory and uses it. A half-finished unpack
(killed process) leaves only a ``.unpack-*`` directory that is never used. Each run touches its
directory; the first run of a new build removes other builds and leftovers not started for two weeks.

This file must stay parseable by old ``python3`` versions so that they get a clear message, not a
SyntaxError: no syntax newer than Python 3.6 here.
"""

import os
import sys
from typing import Iterator

BUILD_ID = "@BUILD_ID@"
PAYLOAD_PREFIX = "lib/"
MIN_PYTHON = (3, 10)
STALE_SECONDS = 14 * 24 * 3600


def _cache_roots() -> Iterator[str]:
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    yield os.path.join(xdg, "kubectl-sktrace")
    # a read-only home (some CI containers): fall back to a per-user temporary directory
    import tempfile

    uid = getattr(os, "getuid", lambda: "user")()
    yield os.path.join(tempfile.gettempdir(), "kubectl-sktrace-%s" % uid)


def _unpack(archive: str, target: str) -> None:
    import shutil
    import tempfile
    import zipfile

    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".unpack-", dir=parent)
    try:
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(tmp, members=[n for n in zf.namelist() if n.startswith(PAYLOAD_PREFIX)])
        try:
            os.rename(os.path.join(tmp, PAYLOAD_PREFIX.rstrip("/")), target)
        except OSError:
            if not os.path.isdir(target):  # not a lost race: a real failure
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _prune(root: str) -> None:
    """Drop other builds (an upgrade leaves the old one behind) not started for STALE_SECONDS."""
    import shutil
    import time

    for name in os.listdir(root):
        path = os.path.join(root, name)
        is_build = len(name) == len(BUILD_ID) and all(c in "0123456789abcdef" for c in name)
        try:
            stale = time.time() - os.stat(path).st_mtime > STALE_SECONDS
        except OSError:
            continue
        if name != BUILD_ID and stale and (is_build or name.startswith(".unpack-")):
            shutil.rmtree(path, ignore_errors=True)


def _payload_dir(archive: str) -> str:
    error = None  # type: OSError | None
    for root in _cache_roots():
        target = os.path.join(root, BUILD_ID)
        if os.path.isdir(target):
            try:
                os.utime(target)  # "last started", for _prune
            except OSError:
                pass
            return target
        try:
            _unpack(archive, target)
            _prune(root)
            return target
        except OSError as exc:
            error = exc
    sys.stderr.write("Error: cannot unpack kubectl-sktrace into its cache directory (%s); "
                     "set XDG_CACHE_HOME to a writable directory\n" % error)
    sys.exit(1)


def main() -> None:
    if sys.version_info < MIN_PYTHON:
        sys.stderr.write("Error: kubectl-sktrace needs Python %d.%d or newer, but python3 is %d.%d (%s); "
                         "install a newer python3 or use 'pipx install kubectl-sktrace'\n"
                         % (MIN_PYTHON + sys.version_info[:2] + (sys.executable,)))
        sys.exit(1)
    archive = os.path.dirname(os.path.abspath(__file__))
    payload = _payload_dir(archive)
    sys.path[:] = [payload] + [p for p in sys.path if os.path.abspath(p or ".") != archive]
    # The payload directory is our own cache: keep its bytecode even under PYTHONDONTWRITEBYTECODE,
    # or every run recompiles the kubernetes client.
    sys.dont_write_bytecode = False
    from kubectl_sktrace.__main__ import main as cli_main

    cli_main()


main()
