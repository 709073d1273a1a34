"""``start`` and ``status``: recording into the cache, and what it holds."""

from __future__ import annotations

import sys

import click

from kubectl_sktrace.cli.charts import status_timeline
from kubectl_sktrace.cli.completion import complete_files
from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.cli.options import (
    SktraceCommand,
    _state,
    cache_option,
    kube_options,
    output_option,
    quiet_option,
    say,
    verbosity_option,
)


@click.command(cls=SktraceCommand)
@kube_options
@cache_option
@click.option("--config", "config_path", metavar="FILE", shell_complete=complete_files,
              help="SimKube TracerConfig YAML (default: the config of the cache's last run, else Deployments, StatefulSets, Jobs, "
                   "CronJobs).")
@click.option("--drop-kinds", "drop_kinds", is_flag=True,
              help="Let --config stop tracking kinds the cache's last run tracked (their history so far is kept); without it, "
                   "such a config is refused.")
@click.option("--duration", metavar="DUR", help="Stop after this long, e.g. 90s, 10m, 2h (default: until Ctrl-C or SIGTERM).")
@click.option("--health-port", "health_port", type=click.IntRange(0, 65535), metavar="PORT",
              help="Serve /healthz (200 while committing), /readyz (200 once synced, every kind watched) and /metrics "
                   "(Prometheus) on this port, on every interface: for a Deployment's probes and a scraper.")
@click.option("--retain", metavar="DUR", help="Prune history older than this (with its unit: 30d, 12h) while recording, every hour; an export of "
                                              "the retained time reads all it did before (as 'prune' keeps it).")
@quiet_option
@output_option
@verbosity_option
def start(kubeconfig: str | None, context: str | None, namespace: str | None, all_namespaces: bool, cache: str | None,
          config_path: str | None, drop_kinds: bool, duration: str | None, health_port: int | None, retain: str | None,
          output: str) -> None:
    """Record the cluster into the local cache until --duration elapses, Ctrl-C or SIGTERM.

    On every start the cluster is listed and compared with the cache, so what changed while no recorder
    ran is recorded too (deletions inferred at the start time); once the lists are done, a report on stderr
    names what was deleted, created and changed while offline and which pods finished meanwhile. Ends with a
    summary per kind; -o json|yaml prints it, with the outages and that report, as one document on stdout.
    Inside a pod, with no kubeconfig, it records with the pod's service account (see 'kubectl sktrace rbac').

    \b
    Example:
      kubectl sktrace start --duration 10m
      kubectl sktrace start --config tracer.yaml -n team-a --cache team-a.db
      kubectl sktrace start --duration 1m -o json | jq .reconciliation
      kubectl sktrace start --cache /data/cache.db --health-port 8080 --retain 30d
    """
    from kubectl_sktrace import render
    from kubectl_sktrace.cli.globalflags import namespace_scope
    from kubectl_sktrace.plural import counted
    from kubectl_sktrace.record import progress
    from kubectl_sktrace.record import starting as recorder
    from kubectl_sktrace.record import summary as runsummary
    from kubectl_sktrace.record.retention import retention_policy
    from kubectl_sktrace.timeparse import format_duration, parse_duration

    namespace = namespace_scope(namespace=namespace, all_namespaces=all_namespaces)
    seconds = parse_duration(duration) if duration is not None else None
    quiet = bool(_state["quiet"])
    view = progress.Progress(stream=sys.stderr, tty=sys.stderr.isatty(), quiet=quiet, columns=progress.stream_columns(sys.stderr))
    options = recorder.StartOptions(kubeconfig=kubeconfig, context=context, namespace=namespace, cache=cache,
                                    config_path=config_path, duration=seconds, quiet=quiet,
                                    health_port=health_port, retention=retention_policy(retain), drop_kinds=drop_kinds)
    with progress.routed_logs(view):
        summary = recorder.start(options, progress=view)
    if output != "table":
        say(render.render_mapping(runsummary.summary_to_dict(summary), output))
    else:  # the summary is what start is asked for: --quiet silences stderr only
        synced = "" if summary.synced is not None else " (stopped before the initial sync finished)"
        say(f"Recorded {counted(summary.events, 'event')} in {format_duration(summary.stopped - summary.started)} "
                   f"into {summary.cache} (run {summary.run_id}){synced}.")
        say(render.render_table(list(runsummary.iter_rows(summary)), "table"))
        for line in runsummary.coverage_lines(summary):
            say(line)


@click.command(cls=SktraceCommand)
@kube_options
@cache_option
@output_option
@click.option("--runs", "runs", default="10", show_default=True, metavar="N|all", help="Show the last N recording runs, or all of them.")
@click.option("--run", "run_id", type=click.IntRange(min=1), default=None, metavar="N",
              help="Show run N alone: its time, the offline time before it, its blind time and its reconciliation report.")
@quiet_option
@verbosity_option
@status_timeline
def status(kubeconfig: str | None, context: str | None, namespace: str | None, all_namespaces: bool, cache: str | None,
           output: str, runs: str, run_id: int | None) -> None:
    """Show what the cache holds: cluster, recording runs and gaps, counts per kind, pods, size.

    Needs no cluster, and works while a recorder is writing to the cache. -n NS counts only the kinds, events
    and pods of that namespace. With no kubeconfig at all (and no --cache or --context), lists the caches
    kept in ${XDG_STATE_HOME:-~/.local/state}/kubectl-sktrace/ instead.

    \b
    Example:
      kubectl sktrace status
      kubectl sktrace status -n shop --runs all
      kubectl sktrace status --cache team-a.db -o json
      kubectl sktrace status --run 3
      kubectl sktrace status --timeline -s -1h
    """
    from kubectl_sktrace.cli.globalflags import namespace_scope
    from kubectl_sktrace.record import status as status_module

    namespace = namespace_scope(namespace=namespace, all_namespaces=all_namespaces)
    if run_id is not None:
        from kubectl_sktrace.record import runreport

        if namespace is not None:
            raise UsageError(f"--run {run_id} reports a run of the whole recording; leave -n/--namespace out")
        say(runreport.render_run(*runreport.load_run(cache=cache, kubeconfig=kubeconfig, context=context, run_id=run_id), output))
        return
    say(status_module.status_text(cache=cache, kubeconfig=kubeconfig, context=context, namespace=namespace,
                                         runs=status_module.parse_runs(runs), fmt=output))
