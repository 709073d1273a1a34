"""The executables' entry points (``python -m kubectl_sktrace``, and the console scripts of setup.cfg).

The command line is imported inside the same boundary for Ctrl-C as the commands run in: an interrupt that comes while
Python loads the program (its first tenth of a second or so) ends as one that comes later does, ``Interrupted.`` and
exit code 130, not a traceback of whichever import it fell in.

A shell starts a background job (``kubectl sktrace view &``, ``start &`` in a script) with SIGINT ignored, and Python
then leaves it ignored: the first thing done is to honour it again, so that ``kill -INT`` stops the program whenever it
comes, as Ctrl-C does (kubectl does the same)."""

from __future__ import annotations

import signal
import sys


def _interruptible(entry: str) -> None:
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
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
