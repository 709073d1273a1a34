"""``config``, ``rbac``, ``inspect``, ``validate`` and ``demo``: the commands that need no cache of the user's."""

from __future__ import annotations

import sys

import click

from kubectl_sktrace.cli.charts import inspect_timeline
from kubectl_sktrace.cli.completion import complete_files
from kubectl_sktrace.cli.options import (
    SktraceCommand,
    _local_cache,
    _state,
    kube_options,
    output_option,
    quiet_option,
    say,
    verbosity_option,
)
from kubectl_sktrace.errors import UsageError


@click.command("config", cls=SktraceCommand, short_help="Print the default tracer config to start from.")
@verbosity_option
def config_command() -> None:
    """Print the default tracer config (SimKube's TracerConfig YAML) to start from.

    \b
    Example:
      kubectl sktrace config > tracer.yaml
      kubectl sktrace start --config tracer.yaml
    """
    from kubectl_sktrace import tracerconfig

    say(tracerconfig.config_to_yaml(tracerconfig.default_config()), nl=False)


@click.command("rbac", cls=SktraceCommand, short_help="Print the Role or ClusterRole and binding that start needs.")
@kube_options
@click.option("--config", "config_path", metavar="FILE", shell_complete=complete_files,
              help="The tracer config start will use (default: Deployments, StatefulSets, Jobs, CronJobs).")
@click.option("--service-account", "service_account", metavar="[NS:]NAME",
              help="Bind to this ServiceAccount (default: sktrace, in -n's namespace, else in sktrace).")
@click.option("--user", "user", metavar="NAME", help="Bind to this user instead (as the API server names it).")
@verbosity_option
def rbac_command(kubeconfig: str | None, context: str | None, namespace: str | None, all_namespaces: bool,
                 config_path: str | None, service_account: str | None, user: str | None) -> None:
    """Print the minimal RBAC that 'start' needs with a config, for a cluster admin to apply.

    A ClusterRole and ClusterRoleBinding by default (recording every namespace); with -n NS, a Role and
    RoleBinding in NS (recording that namespace: 'start -n NS'). The rules: list and watch on the tracked
    kinds, pods and the owner kinds watched for them; get on those kinds but pods (owners fetched by name);
    with a ClusterRole, get on the namespace kube-system (the cluster's identity). Built-in kinds need no
    cluster; a custom resource is looked up in the cluster of your kubeconfig.

    \b
    Example:
      kubectl sktrace rbac | kubectl apply -f -
      kubectl sktrace rbac -n team-a --config tracer.yaml --service-account team-a:recorder
      kubectl sktrace rbac --user alice@example.com | kubectl apply -f -
    """
    from kubectl_sktrace.cli.globalflags import namespace_scope
    from kubectl_sktrace.kube.permissions import RbacOptions, rbac_manifest

    options = RbacOptions(config_path=config_path, namespace=namespace_scope(namespace=namespace, all_namespaces=all_namespaces),
                          service_account=service_account, user=user, kubeconfig=kubeconfig, context=context)
    say(rbac_manifest(options), nl=False)


@click.command("inspect", cls=SktraceCommand, short_help="Summarize a SimKube v2 trace file.")
@verbosity_option
@quiet_option
@output_option
@click.option("--events", "with_events", is_flag=True, help="Also list every event (+ applied, - deleted).")
@inspect_timeline
@click.argument("trace", metavar="TRACE", type=click.Path())
def inspect_command(trace: str, with_events: bool, output: str) -> None:
    """Summarize a SimKube v2 trace file: window, events, objects per kind, pod lifecycles.

    Works on any v2 trace, written by kubectl sktrace or by SimKube's tracer. TRACE '-' reads standard input;
    an s3://, gs:// or az:// URL reads an object (the cloud extra).

    \b
    Example:
      kubectl sktrace inspect incident.sktrace --events
      kubectl sktrace export -s -1h -O - | kubectl sktrace inspect -
    """
    from kubectl_sktrace.trace.reports import inspection

    say(inspection.render_inspection(inspection.inspect_trace(trace, with_events=with_events, stdin=sys.stdin.buffer), output))


@click.command("validate", cls=SktraceCommand, short_help="Check a trace as SimKube would; exit 1 on errors.")
@verbosity_option
@quiet_option
@output_option
@click.argument("trace", metavar="TRACE", type=click.Path())
def validate_command(trace: str, output: str) -> None:
    """Check a trace the way SimKube loads it, plus its rules W0000 and E0001-E0005; exit 1 on errors.

    A file that is not a v2 trace at all is one Error: line. Otherwise every finding is listed: L0001-L0003
    (SimKube would refuse to load the trace), W0000 (status present), E0001-E0005 (a ServiceAccount,
    Secret or ConfigMap used by a pod template is not in the trace before it). TRACE '-' reads standard
    input; an s3://, gs:// or az:// URL reads an object (the cloud extra). With -o json or yaml, a file that
    is no trace is reported in that format too (on stdout, exit 1); each finding's time is there in seconds (ts) and
    RFC 3339 (time), its object as fields (apiVersion, kind, namespace, name).

    \b
    Example:
      kubectl sktrace validate incident.sktrace -o json
      kubectl sktrace export -s -1h -O - | kubectl sktrace validate -
      kubectl sktrace validate s3://my-bucket/incident.sktrace
    """
    from kubectl_sktrace.errors import TraceFormatError
    from kubectl_sktrace.trace.reports import validation

    try:
        report = validation.validate_trace(trace, stdin=sys.stdin.buffer)
    except TraceFormatError as exc:
        if output == "table":
            raise
        say(validation.render_unreadable(trace, str(exc), output))
        sys.exit(1)
    say(validation.render_validation(report, output))
    if report.has_errors:
        sys.exit(1)


def _demo_cache(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """The demo records a made-up cluster: into a new local file, never into a shared database."""
    from kubectl_sktrace.model import is_database_url, mask_url

    if value and is_database_url(value):
        raise UsageError(f"--cache {mask_url(value)}: the demo records a made-up cluster into a new local file, "
                         "never into a database; pass a file path")
    return _local_cache(ctx, param, value)


@click.command("demo", cls=SktraceCommand, short_help="Record, export and check a scripted workload on a built-in API server.")
@verbosity_option
@click.option("--cache", "cache", metavar="FILE", callback=_demo_cache, shell_complete=complete_files,
              help="Keep the recording cache here (default: a temporary directory, removed at the end).")
@click.option("-O", "--output-file", "output_file", default="demo.sktrace", show_default=True, metavar="PATH", help="Where to write the trace.")
@click.option("--record-seconds", "record_seconds", type=int, default=20, show_default=True, metavar="N",
              help="Seconds of recording in all (at least 4: two recordings of 2 seconds), split about 70/30 between the two recordings.")
@click.option("--serve", "serve", is_flag=True,
              help="Instead, keep the built-in API server running as a cluster to try kubectl and the plugin on, until Ctrl-C; "
                   "prints its kubeconfig's path.")
@click.option("--workload", "workload", type=click.Choice(["none", "demo", "load"]), default="demo", show_default=True,
              help="With --serve: an empty cluster (none), the demo's Deployments and CronJob (demo), or those and a change "
                   "every second (load). Its controllers and kubelet run in each.")
@click.option("--kubeconfig-out", "kubeconfig_out", metavar="FILE", shell_complete=complete_files,
              help="With --serve: where to write its kubeconfig (default: emulator.kubeconfig beside the caches).")
def demo_command(cache: str | None, output_file: str, record_seconds: int, serve: bool, workload: str, kubeconfig_out: str | None) -> None:
    """Run the whole flow on a built-in local API server, narrated: no cluster needed, under a minute.

    Starts the server with a scripted workload, records it, changes it while nothing records, records again
    (the restart reconciles what happened offline), exports the window, inspects and validates the trace.
    Leaves only the trace (and the cache, if --cache is given). With --serve, only starts the server and
    keeps it running, for you to use as a cluster.

    \b
    Example:
      kubectl sktrace demo
      kubectl sktrace demo --cache demo.db -O /tmp/demo.sktrace
      kubectl sktrace demo --serve --workload none       # then: export KUBECONFIG=<the path it prints>
    """
    from kubectl_sktrace.cli import demo

    def narrate(text: str) -> None:
        say(text)
        sys.stdout.flush()

    if serve:
        from kubectl_sktrace.cli import serving

        sys.exit(serving.serve(kubeconfig_out=kubeconfig_out, workload=workload, say=narrate))
    options = demo.DemoOptions(output_file=output_file, cache=cache, record_seconds=record_seconds, verbosity=_state["verbosity"])
    result = demo.run_demo(options, say=narrate)
    narrate(demo.closing_words(result, output_file=output_file))
