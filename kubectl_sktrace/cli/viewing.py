"""``view``: the history as a local web page."""

from __future__ import annotations

import urllib.parse

import click

from kubectl_sktrace.cli.options import SktraceCommand, cache_option, cache_path, verbosity_option, warn
from kubectl_sktrace.cli.completion import complete_contexts, complete_files

LOOPBACK = "127.0.0.1"


def _without_password(location: str) -> str:
    """A database URL as the page may show it in a command: the password left out (``$SKTRACE_CACHE`` or ~/.pgpass has it)."""
    parts = urllib.parse.urlsplit(location)
    if parts.password is None:
        return location
    netloc = (parts.username or "") + "@" + parts.netloc.rsplit("@", 1)[-1]
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def command_base(*, cache: str | None, kubeconfig: str | None, context: str | None) -> tuple[str, ...]:
    """The flags that name this cache again on ``export``'s command line."""
    base: list[str] = []
    if kubeconfig:
        base += ["--kubeconfig", kubeconfig]
    if context:
        base += ["--context", context]
    if cache:
        base += ["--cache", _without_password(cache)]
    return tuple(base)


@click.command("view", cls=SktraceCommand)
@verbosity_option
@click.option("--kubeconfig", "kubeconfig", metavar="FILE", shell_complete=complete_files,
              help="Path to the kubeconfig file (else $KUBECONFIG, else ~/.kube/config): its context names the default cache.")
@click.option("--context", "context", metavar="NAME", shell_complete=complete_contexts, help="The kubeconfig context whose cache to view.")
@cache_option
@click.option("--address", "address", default=LOOPBACK, show_default=True, metavar="ADDRESS",
              help="Where to listen. Another address than 127.0.0.1 lets other machines ask (they still need the token); "
                   "prefer SSH port forwarding.")
@click.option("--port", "port", type=click.IntRange(0, 65535), default=0, show_default=True, metavar="PORT",
              help="The port to listen on; 0 picks a free one.")
@click.option("--no-browser", "no_browser", is_flag=True, help="Print the address only; do not open a browser.")
def view_command(kubeconfig: str | None, context: str | None, cache: str | None, address: str, port: int, no_browser: bool) -> None:
    """Show the cache's history as a web page on this machine: runs, gaps, rates, objects; pick a window to export.

    Read-only: the cache is never written, and a recorder may run beside it. The page is served on
    127.0.0.1 with a random token in the printed address (needed by every request), until Ctrl-C.

    \b
    Example:
      kubectl sktrace view
      kubectl sktrace view --cache postgresql://sktrace@db.example/traces --context prod --no-browser
      ssh -L 8750:127.0.0.1:8750 recorder-host kubectl sktrace view --port 8750 --no-browser
    """
    import signal

    import threading

    from kubectl_sktrace.view.app import cache_api, check_cache, rate_index, serve
    from kubectl_sktrace.view.server import ViewServer

    location = cache_path(cache=cache, kubeconfig=kubeconfig, context=context)
    check_cache(location)
    if address != LOOPBACK:
        warn(f"listening on {address}, not {LOOPBACK}: whoever reaches it and learns the address's token reads the whole history; "
             "prefer the default with 'ssh -L' or 'kubectl port-forward'")
    index = rate_index(location)
    api = cache_api(location, title=str(location), command_base=command_base(cache=cache, kubeconfig=kubeconfig, context=context),
                    index=index)
    server = ViewServer(api=api, address=address, port=port)
    if index is not None:
        threading.Thread(target=index.fill, name="rates", daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: server.stop())
    try:
        serve(server, what=f"the cache {location}", open_browser=not no_browser)
    except KeyboardInterrupt:
        pass
    click.echo("Stopped.")
