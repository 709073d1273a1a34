"""``serve --at T``: kubectl itself on the past, through a read-only API server over the cache (``apiserver``)."""

from __future__ import annotations

import click

from kubectl_sktrace.cli.completion import complete_contexts, complete_files
from kubectl_sktrace.cli.options import SktraceCommand, cache_option, cache_path, quiet_option, say, verbosity_option, warn
from kubectl_sktrace.errors import UsageError


@click.command("serve", cls=SktraceCommand)
@verbosity_option
@quiet_option
@click.option("--kubeconfig", "kubeconfig", metavar="FILE", shell_complete=complete_files,
              help="Path to the kubeconfig file (else $KUBECONFIG, else ~/.kube/config): its context names the default cache.")
@click.option("--context", "context", metavar="NAME", shell_complete=complete_contexts, help="The kubeconfig context whose cache to serve.")
@cache_option
@click.option("--at", "at", required=True, metavar="TIME",
              help="The second to serve: -2h, an RFC 3339 time (2026-05-01T03:00:00Z), @UNIX-SECONDS, now.")
@click.option("--replay-speed", "replay_speed", type=click.FloatRange(min=0, min_open=True, max=1_000_000), metavar="N",
              help="After T, replay the recorded changes at N times their pace, from the first watch on (watches see "
                   "them come); else the state at T stays as it is.")
@click.option("--kubeconfig-out", "kubeconfig_out", metavar="FILE", shell_complete=complete_files,
              help="Write the server's kubeconfig (its certificate and token; mode 0600) to FILE instead of printing it.")
@click.option("--port", "port", type=click.IntRange(0, 65535), default=0, show_default=True, metavar="PORT",
              help="The port on 127.0.0.1 to listen on; 0 picks a free one.")
def serve_command(kubeconfig: str | None, context: str | None, cache: str | None, at: str, replay_speed: float | None,
                  kubeconfig_out: str | None, port: int) -> None:
    """Serve the cluster as it was at a past second to kubectl or any client: a read-only API server.

    Listens on 127.0.0.1 with TLS (a certificate made at start) and a random bearer token, both in the
    kubeconfig it prints (or writes with --kubeconfig-out). Discovery, get, list, label and field
    selectors, kubectl's table columns and watch are served from the cache as it was at --at; every
    write is refused (405). The cache is only read, and a recorder may keep writing it. Until Ctrl-C.

    \b
    Example:
      kubectl sktrace serve --at -2h --kubeconfig-out past.kubeconfig &
      kubectl --kubeconfig past.kubeconfig get pods -A
      kubectl --kubeconfig past.kubeconfig describe deploy web -n shop
      kubectl sktrace serve --at 2026-05-01T03:00:00Z --replay-speed 60 --kubeconfig-out past.kubeconfig
      kubectl --kubeconfig past.kubeconfig get pods -A -w
    """
    import signal
    import threading
    import time

    from kubectl_sktrace.apiserver.server import Settings, run
    from kubectl_sktrace.timeparse import parse_time

    if kubeconfig_out == "-":
        raise UsageError("--kubeconfig-out takes a file; leave it out to print the kubeconfig")
    location = cache_path(cache=cache, kubeconfig=kubeconfig, context=context)
    settings = Settings(location=location, at=parse_time(at, now=time.time()), replay_speed=replay_speed or 0.0, port=port)
    def interrupted(*_: object) -> None:
        # no lock taken here: the main thread waits on the stop event, and may hold its lock when the signal comes
        raise KeyboardInterrupt

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, interrupted)
    try:
        run(settings, kubeconfig_out=kubeconfig_out, say=say, warn=warn, stop=threading.Event())
    except KeyboardInterrupt:
        pass  # ``run`` stopped the server on its way out
    say("Stopped.", err=True)
