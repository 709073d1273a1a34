"""``view``: the history as a local web page."""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Any, Callable

import click

from kubectl_sktrace.cli.options import (
    SktraceCommand,
    cache_option,
    cache_path,
    quiet_option,
    say,
    verbosity_option,
    warn,
)
from kubectl_sktrace.cli.completion import complete_contexts, complete_files
from kubectl_sktrace.errors import UsageError

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
@quiet_option
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
@click.argument("trace", required=False, metavar="[TRACE]", shell_complete=complete_files)
def view_command(kubeconfig: str | None, context: str | None, cache: str | None, address: str, port: int, no_browser: bool,
                 trace: str | None) -> None:
    """Show the cache's history as a web page on this machine: runs, gaps, rates, objects; pick a window to export.

    Read-only: the cache is never written, and a recorder may run beside it. With TRACE (a file, '-' for
    stdin, or an s3://, gs://, az:// URL) the page shows that trace instead, with validate's findings beside
    their objects. The page is served on 127.0.0.1 with a random token in the printed address (needed by
    every request for data), until Ctrl-C.

    \b
    Example:
      kubectl sktrace view
      kubectl sktrace view incident.sktrace
      kubectl sktrace view --cache postgresql://sktrace@db.example/traces --context prod --no-browser
      ssh -L 8750:127.0.0.1:8750 recorder-host kubectl sktrace view --port 8750 --no-browser
    """
    import ipaddress
    import signal
    import threading

    from kubectl_sktrace.view.app import serve
    from kubectl_sktrace.view.server import ViewServer

    if trace is not None and (cache or context or kubeconfig):
        raise UsageError("TRACE and --cache/--context/--kubeconfig each name what to view; pass one of them")
    if trace is None:
        api, what, fill = _cache_view(cache=cache, kubeconfig=kubeconfig, context=context)
    else:
        api, what, fill = _trace_view(trace)
    server = ViewServer(api=api, address=address, port=port)
    if not ipaddress.ip_address(server.address.split("%")[0]).is_loopback:  # as bound: 'localhost' is this machine's alone
        warn(f"listening on {address}, not {LOOPBACK}: whoever reaches it and learns the address's token reads the whole history; "
             "prefer the default with 'ssh -L' or 'kubectl port-forward'")
    if fill is not None:
        threading.Thread(target=fill, name="rates", daemon=True).start()
    for stop in (signal.SIGINT, signal.SIGTERM):  # Ctrl-C, or a service manager: a clean stop, even where SIGINT was ignored
        signal.signal(stop, lambda *_: server.stop())
    try:
        serve(server, what=what, open_browser=not no_browser)
    except KeyboardInterrupt:
        pass
    say("Stopped.")


def _cache_view(*, cache: str | None, kubeconfig: str | None, context: str | None) -> tuple[dict[str, Any], str, Callable[[], None] | None]:
    from kubectl_sktrace.view.app import cache_api, check_cache, rate_index

    if not cache and not context:
        _offer_caches(kubeconfig)
    location = cache_path(cache=cache, kubeconfig=kubeconfig, context=context)
    check_cache(location)
    index = rate_index(location)
    api = cache_api(location, title=str(location), command_base=command_base(cache=cache, kubeconfig=kubeconfig, context=context),
                    index=index)
    return dict(api), f"the cache {location}", None if index is None else index.fill


def _trace_view(trace: str) -> tuple[dict[str, Any], str, None]:
    import sys

    from kubectl_sktrace.trace.files.format import source_name
    from kubectl_sktrace.trace.files.textformat import read_any_trace
    from kubectl_sktrace.view.tracefile import TraceIndex, trace_api

    name = source_name(trace)
    return trace_api(TraceIndex.of(read_any_trace(trace, stdin=sys.stdin.buffer), name=name)), f"the trace {name}", None


OFFERED = 5
"""Caches named in the error of a ``view`` that no kubeconfig points at a cache (the newest first)."""


def _offer_caches(kubeconfig: str | None) -> None:
    """With no kubeconfig to name the default cache, say which caches there are, as ``status`` lists them (one line)."""
    from kubectl_sktrace.kube.kubeconfig import names_no_cluster, state_dir
    from kubectl_sktrace.record.status import list_caches
    from kubectl_sktrace.store.status import CacheOverview

    if not names_no_cluster(kubeconfig=kubeconfig):
        return
    directory = state_dir()
    found = [c for c in list_caches(directory) if isinstance(c, CacheOverview)]
    if not found:
        raise UsageError(f"no kubeconfig names a cache to view (no --kubeconfig, no KUBECONFIG, no ~/.kube/config), and {directory} "
                         "holds none; record one with 'kubectl sktrace start --kubeconfig FILE', or view a trace: kubectl sktrace view TRACE")
    found.sort(key=lambda c: -(c.last_run.stopped if c.last_run is not None else 0.0))
    listed = ", ".join(f"{Path(c.path).name} ({'context ' + c.context if c.context else 'no context'})" for c in found[:OFFERED])
    more = f" and {len(found) - OFFERED} more ('kubectl sktrace status' lists them)" if len(found) > OFFERED else ""
    raise UsageError(f"no kubeconfig names a cache to view; {directory} holds {listed}{more}: "
                     f"pass one, e.g. kubectl sktrace view --cache {found[0].path}")

