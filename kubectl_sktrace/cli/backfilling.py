"""``backfill``: the cache's offline gaps filled from the API server's audit log (``audit/``)."""

from __future__ import annotations

import sys

import click

from kubectl_sktrace.cli.completion import complete_contexts, complete_files
from kubectl_sktrace.cli.options import (
    SktraceCommand,
    cache_option,
    cache_path,
    note,
    quiet_option,
    say,
    verbosity_option,
)


@click.command("backfill", cls=SktraceCommand)
@verbosity_option
@quiet_option
@click.option("--kubeconfig", "kubeconfig", metavar="FILE", shell_complete=complete_files, help="Path to the kubeconfig file (locates the default cache).")
@click.option("--context", "context", metavar="NAME", shell_complete=complete_contexts, help="The kubeconfig context whose default cache to fill.")
@cache_option
@click.option("--audit-log", "audit_logs", metavar="FILE", multiple=True, required=True, shell_complete=complete_files,
              help="The API server's audit log (JSON lines, gzip or not): files, a folder of rotated files, '-' for stdin, "
                   "or s3://, gs://, az:// URLs. Repeat for several.")
@click.option("--before-first-run", "before_first", is_flag=True,
              help="Also fill the time before the cache's first run (marked partial: objects that never changed in the log are not known).")
@click.option("--force", "force", is_flag=True, help="Fill from a log that names no object the cache knows (another cluster's, as it seems).")
@click.option("--check", "check", is_flag=True,
              help="Write nothing: compare the log with the time the recorder observed live, and report where they disagree.")
def backfill_command(kubeconfig: str | None, context: str | None, cache: str | None, audit_logs: tuple[str, ...], before_first: bool,
                     force: bool, check: bool) -> None:
    """Fill the cache's offline gaps from the cluster's own audit log.

    Only time no recorder observed is filled: a deletion found at a restart moves to its logged time, the changes made
    while offline appear one by one, objects created and deleted offline appear, and so do the status changes the
    kubelet's and the controllers' status writes show (at RequestResponse); at the Metadata level only deletion
    times move. It cannot run while a recorder writes to the same cache. Running it again with the same log changes
    nothing. Every write goes in one transaction: an error leaves the cache as it was.

    \b
    Example:
      kubectl sktrace backfill --audit-log /var/log/kubernetes/audit/
      zcat audit-2026-11-28.log.gz | kubectl sktrace backfill --audit-log -
      kubectl sktrace backfill --check --audit-log s3://logs/audit/2026-11-28.log.gz
    """
    from kubectl_sktrace.audit.running import bad_lines, check_lines, run, run_check, summary_lines
    from kubectl_sktrace.trace.files.objectstore import open_object, protocol_of

    location = cache_path(cache=cache, kubeconfig=kubeconfig, context=context)
    if check:
        collected, checked, found = run_check(location, paths=audit_logs, stdin=sys.stdin.buffer, open_url=open_object,
                                              is_url=lambda path: protocol_of(path) is not None)
        for line in bad_lines(collected):
            note(line)
        for line in check_lines(collected, checked, found):
            say(line)
        return
    result = run(location, paths=audit_logs, before_first=before_first, force=force, stdin=sys.stdin.buffer,
                 open_url=open_object, is_url=lambda path: protocol_of(path) is not None)
    for line in bad_lines(result.collected):  # a warning: --quiet leaves it out
        note(line)
    for line in summary_lines(result):
        say(line)
