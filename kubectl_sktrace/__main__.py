"""The executables' entry points (``python -m kubectl_sktrace``, and the console scripts of setup.cfg).

The command line is imported inside the same boundary for Ctrl-C as the commands run in: an interrupt that comes while
Python loads the program (its first tenth of a second or so) ends as one that comes later does, ``Interrupted.`` and
exit code 130, not a traceback of whichever import it fell in."""

from __future__ import annotations

import sys


def _interruptible(entry: str) -> None:
    try:
        from kubectl_sktrace import cli

        getattr(cli, entry)()
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted.\n")
        sys.exit(130)


def main() -> None:
    """``kubectl-sktrace``."""
    _interruptible("main")


def complete_main() -> None:
    """``kubectl_complete-sktrace``."""
    _interruptible("complete_main")


if __name__ == "__main__":
    main()
