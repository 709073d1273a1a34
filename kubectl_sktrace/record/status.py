"""``kubectl sktrace status``: what a cache holds, for a person (table) or a program (JSON/YAML).

Offline: reads only the cache, read-only (never imports ``kubernetes``); safe while a recorder is writing to it.
Times are printed in RFC 3339 UTC (``timeparse.format_time``) in every format, so JSON and tables agree.

The last ``DEFAULT_RUNS`` runs are shown (with the gaps and outages among them) unless ``--runs`` asks for
more: a cache recorded every day for a year would otherwise print hundreds of lines. ``-n NS`` narrows the
counts of kinds, pods and events to one namespace; runs belong to the whole recording. With nothing that
names a cluster (no ``--cache``, ``--context``, ``--kubeconfig``, ``KUBECONFIG`` or ``~/.kube/config``),
status lists the caches in the state directory instead of failing: one line each, read-only.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from kubectl_sktrace import render
from kubectl_sktrace.errors import CacheError, UsageError
from kubectl_sktrace.plural import counted
from kubectl_sktrace.reconciliation import reconciliation_brief, reconciliation_to_dict, workload_lines
from kubectl_sktrace.store import open_cache_readonly
from kubectl_sktrace.store.connection import disk_size
from kubectl_sktrace.store.status import (
    CacheOverview,
    CacheStatus,
    RunInfo,
    cache_overview,
    cache_status,
)
from kubectl_sktrace.timeparse import (
    format_duration,
    format_duration_flag,
    format_span,
    format_time,
)
from kubectl_sktrace.trace import observation

DEFAULT_RUNS = 10


def parse_runs(text: str) -> int | None:
    """``--runs N|all``: how many of the last runs to show (None: all)."""
    if text.strip().lower() == "all":
        return None
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise UsageError(f"--runs {text}: pass a number of runs (1 or more) or 'all'")
    return count


def status_text(*, cache: str | None, kubeconfig: str | None, context: str | None, namespace: str | None, runs: int | None, fmt: str,
                environ: Mapping[str, str] = os.environ) -> str:
    """What ``status`` prints: the cache of the context (or ``--cache``), or the list of caches when nothing
    names a cluster."""
    from kubectl_sktrace.kube.kubeconfig import names_no_cluster, state_dir

    if not cache and not context and names_no_cluster(kubeconfig=kubeconfig, environ=environ):
        if namespace is not None:
            raise UsageError("-n/--namespace needs one cache, and no kubeconfig names one; pass --cache FILE or --context NAME")
        directory = state_dir(environ)
        return render_cache_list(list_caches(directory), fmt, directory=directory)
    status = load_status(cache=cache, kubeconfig=kubeconfig, context=context, namespace=namespace, environ=environ)
    return render_status(status, fmt, namespace=namespace, runs=runs)


def load_status(*, cache: str | None, kubeconfig: str | None, context: str | None, namespace: str | None = None,
                environ: Mapping[str, str] = os.environ) -> CacheStatus:
    from kubectl_sktrace.kube.kubeconfig import resolve_cache_path

    path = resolve_cache_path(cache=cache, kubeconfig=kubeconfig, context=context, environ=environ)
    with open_cache_readonly(path) as opened:
        scope = opened.get_meta("scope.namespace")
        if namespace is not None and scope and scope != namespace:
            raise UsageError(f"cache {path} records only namespace {scope}; pass -n {scope}, or leave -n out")
        return cache_status(opened, namespace=namespace)


def list_caches(directory: Path) -> list[CacheOverview | tuple[Path, str]]:
    """Every ``*.db`` file in ``directory``, read-only: its overview, or (path, why it cannot be read)."""
    found: list[CacheOverview | tuple[Path, str]] = []
    for path in sorted(directory.glob("*.db")) if directory.is_dir() else []:
        try:
            with open_cache_readonly(path) as opened:
                found.append(cache_overview(opened))
        except CacheError as exc:
            found.append((path, str(exc)))
    return found


def _run_span(run: RunInfo, now: float) -> str:
    start = format_time(run.started)
    if run_state(run, now) == UNRESPONSIVE:
        return f"{start}– (not responding since {format_time(run.stopped)})"
    if run.state == "running":
        return f"{start}– (running)"
    end = format_time(run.stopped)
    return f"{start}–{end[11:] if end[:10] == start[:10] else end} ({run.state})"


def caches_to_list(caches: list[CacheOverview | tuple[Path, str]], *, now: float) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for entry in caches:
        if isinstance(entry, tuple):
            rows.append({"cache": str(entry[0]), "context": None, "cluster": None, "namespace": None,
                         "sizeBytes": disk_size(entry[0]), "lastRun": None, "error": entry[1]})
            continue
        run = entry.last_run
        rows.append({
            "cache": entry.path, "context": entry.context, "cluster": entry.server, "namespace": entry.namespace or None,
            "sizeBytes": entry.size_bytes,
            "lastRun": None if run is None else {"run": run.id, "started": _time(run.started),
                                                 "stopped": None if run.state == "running" else _time(run.stopped),
                                                 "state": run_state(run, now)},
            "error": None,
        })
    return rows


def render_cache_list(caches: list[CacheOverview | tuple[Path, str]], fmt: str, *, directory: Path) -> str:
    """The caches of the state directory, for a user with no kubeconfig."""
    now = time.time()
    rows = caches_to_list(caches, now=now)
    if fmt != "table":
        return render.render_mapping({"stateDirectory": str(directory), "caches": rows}, fmt)
    why = "No kubeconfig (no --kubeconfig, no KUBECONFIG, no ~/.kube/config)"
    if not rows:
        return f"{why}, and no cache in {directory}. Record one with 'kubectl sktrace start --kubeconfig FILE'."
    readable = [entry for entry in caches if isinstance(entry, CacheOverview)]
    table = render.render_table([
        {"context": entry.context, "cluster": entry.server, "size": _size(entry.size_bytes),
         "last run": "-" if entry.last_run is None else _run_span(entry.last_run, now), "cache": Path(entry.path).name}
        for entry in readable
    ], "table") if readable else "(none readable)"
    unreadable = "".join(f"\nNot listed: {entry[1]}" for entry in caches if isinstance(entry, tuple))
    return (f"{why}; the caches in {directory}:\n{table}{unreadable}\n\n"
            "Show one with 'kubectl sktrace status --context CONTEXT' or 'kubectl sktrace status --cache FILE'.")


def _time(ts: float | None) -> str | None:
    return None if ts is None else format_time(ts)


def config_history(status: CacheStatus) -> list[dict[str, Any]]:
    """The runs whose tracer config differs from the run before: what each tracked from its start on."""
    from kubectl_sktrace.tracerconfig import config_change, stored_config

    history: list[dict[str, Any]] = []
    previous = None
    for run in status.runs:
        config = stored_config(run.config)
        if config is None:
            continue
        change = None if previous is None else config_change(previous, config)
        if previous is None or change:
            history.append({"run": run.id, "from": _time(run.started), "tracked": [str(g) for g in sorted(config.tracked, key=str)],
                            "change": "first run" if change is None else change.describe()})
        previous = config
    return history


UNRESPONSIVE = "unresponsive"
"""The state of a run whose process still holds the cache but whose heartbeat is older than ``STALE_AFTER``: it
records nothing (a recorder commits at least every second), whatever its pid says."""


def run_state(run: RunInfo, now: float) -> str:
    """The run's state as a person should read it: ``running`` only while its heartbeat moves."""
    from kubectl_sktrace.record.health import STALE_AFTER

    if run.state == "running" and now - run.stopped >= STALE_AFTER:
        return UNRESPONSIVE
    return run.state


def _run_to_dict(run: RunInfo, now: float) -> dict[str, Any]:
    """One run; a running one has no end yet but a heartbeat (its ``stopped``, moved at every commit) and its age."""
    live = run.state == "running"
    data: dict[str, Any] = {"run": run.id, "started": _time(run.started), "synced": _time(run.synced),
                            "stopped": None if live else _time(run.stopped),
                            "duration": format_duration(run.stopped - run.started), "state": run_state(run, now), "pid": run.pid}
    if live:
        data["heartbeat"] = _time(run.stopped)
        data["heartbeatAgeSeconds"] = round(max(0.0, now - run.stopped), 1)
    return data


def _state_cell(run: dict[str, Any]) -> str:
    """``running (heartbeat 1s ago)``; a heartbeat older than the health check allows: not responding since then."""
    age = run.get("heartbeatAgeSeconds")
    if age is None:
        return str(run["state"])
    if run["state"] == UNRESPONSIVE:
        return f"not responding since {run['heartbeat']} (no heartbeat for {format_duration(age)}; pid {run['pid']} still holds the cache)"
    return f"running (heartbeat {age:.0f}s ago)"


def status_to_dict(status: CacheStatus, *, namespace: str | None = None, runs: int | None = None,
                   now: float | None = None) -> dict[str, Any]:
    """The status as plain data; ``runs``: only the last so many runs, with the gaps and outages among them;
    ``now`` (default: the clock) dates a running recorder's heartbeat."""
    now = time.time() if now is None else now
    shown = status.runs if runs is None else status.runs[-runs:]
    since = shown[0].started if shown else 0.0
    ids = {r.id for r in shown}
    return {
        "cache": status.path,
        "sizeBytes": status.size_bytes,
        "schemaVersion": status.schema_version,
        "cluster": {"server": status.server, "kubeSystemUid": status.cluster_uid or None, "context": status.context,
                    "namespace": status.namespace or None},
        **({"historyNames": list(status.history_names)} if status.history_names else {}),
        "countsNamespace": namespace,
        "runsTotal": len(status.runs),
        "runs": [_run_to_dict(r, now) for r in shown],
        **gaps_to_dict(status, shown, since),
        "outages": [
            {"run": g.run_id, "cause": g.cause, "from": _time(g.since), "to": _time(g.until),
             "duration": format_duration(g.until - g.since), "kinds": list(g.kinds)}
            for g in status.outages if g.run_id in ids
        ],
        "notRecorded": [
            {"run": u.run_id, "kind": u.gvk, "cause": u.cause, "from": _time(u.since), "detail": u.detail}
            for u in status.unrecorded
        ],
        "notServed": [
            {"run": u.run_id, "kind": u.gvk, "from": _time(u.since), "to": _time(u.until),
             "duration": format_duration(u.until - u.since)}
            for u in status.unserved if u.run_id in ids
        ],
        "notYetObserved": [
            {"run": u.run_id, "kind": u.gvk, "cause": u.detail, "from": _time(u.since), "to": _time(u.until),
             "duration": format_duration(u.until - u.since)}
            for u in status.unobserved if u.run_id in ids
        ],
        "retention": retention_to_dict(status),
        "pruned": pruned_to_dict(status),
        **filled_to_dict(status, since),
        "configHistory": config_history(status),
        "kinds": [
            {"kind": k.gvk, "live": k.live, "applied": k.applied, "metadataChanges": k.metadata, "dataChanges": k.data,
             "deleted": k.deleted, "deletedWhileOffline": k.inferred, "watchResourceVersion": k.watch_resource_version, "watchUpdated": _time(k.watch_updated)}
            for k in status.kinds
        ],
        "pods": {"seen": status.pods.seen, "live": status.pods.live, "withLifecycleOwner": status.pods.with_owner,
                 "running": status.pods.running, "finished": status.pods.finished},
        "events": {"count": status.events, "first": _time(status.first_event), "last": _time(status.last_event)},
        "reconciliation": None if status.reconciliation is None else reconciliation_to_dict(status.reconciliation),
        "workloads": workloads_to_list(status.workloads),
    }


def gaps_to_dict(status: CacheStatus, shown: Sequence[RunInfo], since: float) -> dict[str, Any]:
    """``gaps`` between the runs shown; once a log filled time, how each is told and the ``coverage`` line too."""
    filled = bool(status.filled)
    gaps = [{"from": _time(a), "to": _time(b), "duration": format_duration(b - a),
             **({"observed": observation.how_of(a, b, _exact(status))} if filled else {})} for a, b in status.gaps if a >= since]
    return {**({"coverage": coverage_of(status, shown)} if filled else {}), "gaps": gaps}


def _exact(status: CacheStatus) -> list[tuple[float, float]]:
    return observation.exact_spans(f for f in status.filled if not f.gvk and not f.partial)


def coverage_of(status: CacheStatus, shown: Sequence[RunInfo]) -> str | None:
    """The coverage line of the runs shown, from the first one's start to the last one's end, each stretch told one way
    (``trace/observation``): ``44.5% observed live, 38.0% exact from the audit log, 17.5% not observed``."""
    if not shown or shown[-1].stopped <= shown[0].started:
        return None
    start, end = shown[0].started, shown[-1].stopped
    blind = [(a, b) for a, b in status.gaps] + [(g.since, g.until) for g in status.outages]
    return observation.coverage_words(observation.tell(start=start, end=end, blind=blind, exact=_exact(status)))


def workloads_to_list(workloads: tuple[tuple[str, str], ...]) -> list[dict[str, str]]:
    """The live workloads' states at the end, as ``status -o json`` gives them."""
    return [{"object": name, "state": state} for name, state in workloads]


def filled_to_dict(status: CacheStatus, since: float) -> dict[str, Any]:
    """``filled``: the gaps the audit log filled (``backfill``), of the runs shown: per gap, from which levels, how many
    events; nothing when none was."""
    return {"filled": [{"run": f.run_id, "kind": f.gvk or "(no recorder ran)", "from": None if f.partial else _time(f.since), "to": _time(f.until),
             "filled": f"from the audit log ({', '.join(f.levels) or 'no write'}, {counted(f.events, 'event')})",
             "logCovers": None if f.covered_since is None else f"{_time(f.covered_since)} .. {_time(f.covered_until)}",
             "keptReconstructed": f.kept, "partial": f.partial}
            for f in status.filled if f.until >= since]} if status.filled else {}


def retention_to_dict(status: CacheStatus) -> dict[str, Any] | None:
    """The last run's ``--retain``: what a running recorder prunes (None: the last run pruned nothing)."""
    last = status.runs[-1] if status.runs else None
    if last is None or last.retain is None:
        return None
    return {"run": last.id, "retain": format_duration_flag(last.retain), "retainSeconds": last.retain}


def pruned_to_dict(status: CacheStatus) -> dict[str, Any] | None:
    """Where the history was cut (None: never pruned): before ``before`` it is incomplete, by whom and how much."""
    if not status.pruned:
        return None
    return {"before": _time(status.pruned[0].cutoff),
            "by": [{"source": p.source, "before": _time(p.cutoff), "at": _time(p.at), "eventsRemoved": p.events_removed,
                    "podsRemoved": p.pods_removed} for p in status.pruned]}


def _pruned_cell(pruned: dict[str, Any]) -> str:
    """``history before T is gone (prune at …: N events, M pods; --retain at …: …)``."""
    by = "; ".join(f"{'--retain' if p['source'] == 'retain' else 'prune'} at {p['at']} removed {counted(p['eventsRemoved'], 'event')} "
                   f"and {counted(p['podsRemoved'], 'pod')}" for p in pruned["by"])
    return f"history before {pruned['before']} is gone ({by})"


def _retention_cell(status: CacheStatus, retention: dict[str, Any]) -> str:
    if status.runs[-1].state == "running":
        return f"{retention['retain']} (run {retention['run']} prunes what is older while it records)"
    return f"{retention['retain']} (the last run, {retention['run']}, pruned what was older while it recorded)"


def outage_span(cause: str, since: float, until: float) -> str:
    """``API unreachable 2026-11-23T10:46:31Z–10:46:51Z``."""
    return f"{cause} {format_span(since, until)}"


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def render_status(status: CacheStatus, fmt: str, *, namespace: str | None = None, runs: int | None = DEFAULT_RUNS,
                  now: float | None = None) -> str:
    data = status_to_dict(status, namespace=namespace, runs=runs, now=now)
    if fmt != "table":
        return render.render_mapping(data, fmt)
    parts = [render.render_mapping(_head(status, data, namespace=namespace), "table"), "", _runs_table(status, data)]
    if data.get("coverage"):  # once a log filled time: how much of it is exact, told apart from live and reconstructed
        parts.append(f"Coverage from the first run shown to the last: {data['coverage']}")
    parts += _blind_time(status, data)
    if len(data["configHistory"]) > 1:
        parts += ["", "Config history (what each run tracked from its start on; history recorded before a change is kept):",
                  render.render_table(data["configHistory"], "table", columns=["run", "from", "change", "tracked"])]
    parts += ["", "Kinds:\n" + render.render_table(
        [{"kind": k["kind"], "live": k["live"], "applied": k["applied"], "metadata": k["metadataChanges"], "data": k["dataChanges"],
          "deleted": k["deleted"], "deleted while offline": k["deletedWhileOffline"]}
         for k in data["kinds"]], "table") if data["kinds"] else "Kinds: none recorded"]
    if status.workloads:
        parts += ["", *workload_lines("Workloads at the end (their last status recorded):", status.workloads)]
    if status.reconciliation is not None:
        parts += ["", "Reconciliation of the latest run (-o json names the objects):",
                  *reconciliation_brief(status.reconciliation)]
    return "\n".join(parts)


def _head(status: CacheStatus, data: dict[str, Any], *, namespace: str | None) -> dict[str, Any]:
    cluster = data["cluster"]
    head: dict[str, Any] = {
        "cache": status.path,
        "size": _size(status.size_bytes),
        "cluster": cluster["server"] or "- (nothing recorded yet)",
        "kube-system uid": cluster["kubeSystemUid"],
        "context": cluster["context"],
        **({"history names": ", ".join(status.history_names)} if status.history_names else {}),
        "scope": f"namespace {status.namespace}" if status.namespace else "all namespaces",
    }
    if namespace is not None:
        head["counts of"] = f"namespace {namespace} (kinds, events and pods below; runs are the whole recording's)"
    head["events"] = f"{status.events} ({data['events']['first']} .. {data['events']['last']})" if status.events else "0"
    if data["retention"] is not None:
        head["retention"] = _retention_cell(status, data["retention"])
    if data["pruned"] is not None:
        head["pruned"] = _pruned_cell(data["pruned"])
    head["pods"] = (f"{status.pods.seen} seen, {status.pods.live} live, {status.pods.running} running, {status.pods.finished} finished, "
                    f"{status.pods.with_owner} with a lifecycle owner")
    return head


def _runs_table(status: CacheStatus, data: dict[str, Any]) -> str:
    if not data["runs"]:
        return "Runs: none"
    hidden = len(status.runs) - len(data["runs"])
    title = f"Runs (the last {len(data['runs'])} of {len(status.runs)}; --runs all shows every run):" if hidden else "Runs:"
    rows = [{**r, "state": _state_cell(r)} for r in data["runs"]]
    return title + "\n" + render.render_table(rows, "table", columns=["run", "started", "synced", "stopped", "duration", "state"])


def _filled_part(data: dict[str, Any]) -> list[str]:
    if not data.get("filled"):
        return []
    rows = [{**f, "log covers": f["logCovers"], "kept reconstructed": f["keptReconstructed"]} for f in data["filled"]]
    return ["", "Filled from the audit log (kubectl sktrace backfill; the rest of a gap stays reconstructed):",
            render.render_table(rows, "table", columns=["run", "kind", "from", "to", "filled", "log covers", "kept reconstructed"])]


def _gaps_title(data: dict[str, Any]) -> str:
    how = "the next run's relist, or exact from the audit log where backfill filled them: below" if data.get("filled") else "the next run's relist"
    return f"Gaps (not observed live; reconstructed by {how}):"


def _blind_time(status: CacheStatus, data: dict[str, Any]) -> list[str]:
    """The gaps between runs, the outages and kinds not served of the runs shown, and what the latest run did not record."""
    parts: list[str] = []
    if data["gaps"]:
        parts += ["", _gaps_title(data),
                  render.render_table(data["gaps"], "table", columns=list(data["gaps"][0]))]
    parts += _filled_part(data)
    shown = {r["run"] for r in data["runs"]}
    outages = [g for g in status.outages if g.run_id in shown]
    if outages:
        ends = {r.id: r.stopped for r in status.runs if r.state != "running"}
        parts += ["", "Outages during runs (kinds not watched; changes then were caught up afterwards, not seen live, "
                      "unless the run ended first):",
                  render.render_table([{"run": g.run_id, "outage": outage_span(g.cause, g.since, g.until)
                                        + (" (the run ended first: not caught up)" if g.until >= ends.get(g.run_id, float("inf")) else ""),
                                        "duration": format_duration(g.until - g.since), "kinds": ", ".join(g.kinds)}
                                       for g in outages], "table")]
    unserved = [u for u in status.unserved if u.run_id in shown]
    if unserved:
        parts += ["", "Not served during runs (none of their objects could exist then: nothing is missing):",
                  render.render_table([{"run": u.run_id, "kind": u.gvk, "not served": format_span(u.since, u.until),
                                        "duration": format_duration(u.until - u.since)} for u in unserved], "table")]
    unobserved = [u for u in data["notYetObserved"] if u["run"] in shown]
    if unobserved:
        parts += ["", "Not yet observed at a run's start (until the kind's first list: blind time, no outage):",
                  render.render_table(unobserved, "table", columns=["run", "kind", "cause", "from", "to", "duration"])]
    if status.unrecorded:
        parts += ["", f"Not recorded at the end of the latest run ({status.unrecorded[0].run_id}):",
                  *(f"  {u.gvk} since {format_time(u.since)}: {u.detail if u.detail.startswith(u.cause) else f'{u.cause}: {u.detail}'}"
                    for u in status.unrecorded)]
    return parts
