"""``cache copy``: a history moved between caches, either engine to either."""

from __future__ import annotations

import click

from kubectl_sktrace.cli.completion import complete_contexts, complete_files
from kubectl_sktrace.cli.options import SktraceCommand, output_option, say, verbosity_option


@click.group("cache")
def cache_group() -> None:
    """Manage caches: copy a history between a sqlite file and a PostgreSQL database.

    \b
    Example:
      kubectl sktrace cache copy ~/.local/state/kubectl-sktrace/prod.db postgresql://alice@db.example/sktrace
    """


@cache_group.command("copy", cls=SktraceCommand)
@verbosity_option
@output_option
@click.option("--context", "context", metavar="NAME", shell_complete=complete_contexts,
              help="The history to copy when SRC is a database, and its name in DST (default: the context it recorded).")
@click.argument("source", metavar="SRC", shell_complete=complete_files)
@click.argument("destination", metavar="DST", shell_complete=complete_files)
def copy_command(source: str, destination: str, context: str | None, output: str) -> None:
    """Copy the history of SRC into a new cache DST (a file path or a postgresql:// URL).

    Every row is copied as it is, so DST exports the same trace as SRC for any window. SRC is only read (stop
    its recorder first: a run still recording reads 'crashed' in the copy); DST must not hold a history yet, and
    is written in one transaction. In a database, the history is
    registered under its context and its cluster's identity, so that a recorder of the same cluster (the
    in-cluster one, say) continues it whatever its context's name.

    \b
    Example:
      kubectl sktrace cache copy prod.db postgresql://alice@db.example:5432/sktrace
      kubectl sktrace cache copy postgresql://alice@db.example/sktrace --context prod laptop.db
    """
    from kubectl_sktrace import render
    from kubectl_sktrace.kube.kubeconfig import check_cache_location
    from kubectl_sktrace.model import CacheUrl, is_database_url
    from kubectl_sktrace.store.copying import copy_cache

    source, destination = source.strip(), destination.strip()  # as --cache: a URL pasted with a space or a newline
    check_cache_location(source)
    check_cache_location(destination)
    result = copy_cache(CacheUrl(source, context) if is_database_url(source) else source, destination, context=context)
    rows: object = result.rows if output != "table" else ", ".join(f"{table} {n}" for table, n in result.rows.items() if n) or "none"
    say(render.render_mapping({"source": result.source, "destination": result.destination, "rows": rows}, output))
