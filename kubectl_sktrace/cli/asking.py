"""``get``, ``history``, ``diff``: the history asked with kubectl's words, read through ``past`` (the state at T).

Each command opens the cache read-only, asks ``past.state.Past`` one question and prints the answer as kubectl would;
what the history cannot say (status columns, a time in a gap) is said once on stderr, never guessed.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any, Iterator, Sequence

import click

from kubectl_sktrace.cli.completion import complete_files
from kubectl_sktrace.cli.options import SktraceCommand, cache_option, cache_path, kube_options, note, quiet_option, say, verbosity_option
from kubectl_sktrace.errors import UsageError

FORMS = "wide, json, yaml, name, jsonpath=TEMPLATE, custom-columns=SPEC"
POLL = 0.5  # seconds between two looks at what a running recorder wrote (--watch)


def _check_output(output: str | None) -> str | None:
    if output is None or output in ("wide", "json", "yaml", "name") or output.startswith(("jsonpath=", "custom-columns=")):
        return output
    raise UsageError(f"-o {output!r} is not an output this command prints; use one of: {FORMS}")


def _time(text: str, what: str) -> float:
    from kubectl_sktrace.timeparse import parse_time

    try:
        return parse_time(text, now=time.time())
    except UsageError as exc:
        raise UsageError(f"{what}: {exc}") from None


@contextlib.contextmanager
def _open(cache: str | None, kubeconfig: str | None, context: str | None) -> Iterator[Any]:
    """The cache, read-only, with the cyclic collector relaxed while its (acyclic) objects are decoded, and what they
    made left out of its walks after (``relaxed_gc``)."""
    from kubectl_sktrace.store import open_cache_readonly
    from kubectl_sktrace.trace.files.collector import relaxed_gc

    with relaxed_gc(command=True), open_cache_readonly(cache_path(cache=cache, kubeconfig=kubeconfig, context=context)) as opened:
        yield opened


def _namespace(namespace: str | None, all_namespaces: bool, *, kubeconfig: str | None, context: str | None, kind: Any) -> str | None:
    """The namespace asked: -n, else none with -A or for a cluster-scoped kind, else the context's (kubectl's rule)."""
    from kubectl_sktrace.cli.globalflags import namespace_scope

    chosen = namespace_scope(namespace=namespace, all_namespaces=all_namespaces)
    if chosen is not None or all_namespaces:
        return chosen if kind is None or kind.namespaced else None
    if kind is not None and not kind.namespaced:
        return None
    from kubectl_sktrace.kube.kubeconfig import context_namespace  # the kubeconfig read only when it is what says

    return context_namespace(kubeconfig=kubeconfig, context=context)


def _scope(namespace: str | None, names: Sequence[str], selector: str | None, field_selector: str | None) -> Any:
    from kubectl_sktrace.past.objects import MAX_SELECTOR, Scope, parse_field_selector
    from kubectl_sktrace.trace.selection.selectors import parse_selector

    if selector is not None and len(selector) > MAX_SELECTOR:
        raise UsageError(f"the label selector is {len(selector)} characters long; at most {MAX_SELECTOR} are read")
    return Scope(namespace=namespace, names=tuple(names), labels=None if selector is None else parse_selector(selector),
                 fields=() if field_selector is None else parse_field_selector(field_selector))


def _kind_and_names(words: Sequence[str]) -> tuple[str, list[str]]:
    """``KIND [NAME…]`` or ``KIND/NAME``, as kubectl takes them."""
    if not words:
        raise UsageError("give a kind, like 'kubectl sktrace get deploy --at -1h'")
    first, rest = words[0], list(words[1:])
    if "/" in first and first.count("/") == 1 and not first.split("/")[0].count(".") > 1 and not rest:
        kind, name = first.split("/")
        if kind and name:
            return kind, [name]
    return first, rest


def _say_knowledge(found: Sequence[Any], second: int) -> None:
    from kubectl_sktrace.past.state import UNKNOWN
    from kubectl_sktrace.plural import counted
    from kubectl_sktrace.timeparse import format_time

    counts: dict[str, int] = {}
    for item in found:
        counts[item.known.how] = counts.get(item.known.how, 0) + 1
    if counts:
        said = ", ".join(f"{n} {how}" for how, n in sorted(counts.items()))
        note(f"At {format_time(second)}: {counted(len(found), 'object')} known ({said}).")
    gaps = {str(item.known.gap) for item in found if item.known.how == UNKNOWN and item.known.gap is not None}
    for gap in sorted(gaps):
        note(f"Unknown at {format_time(second)}: it lies in a gap nobody observed ({gap}); shown: the last version known before it.")


def _sorted(found: list[Any], sort_by: str | None) -> list[Any]:
    if sort_by is None:
        return found
    from kubectl_sktrace.past import jsonpath, printing

    def key(item: Any) -> tuple[int, Any]:
        text = jsonpath.value(sort_by, printing.document(item))
        return (0, float(text)) if text.replace(".", "", 1).lstrip("-").isdigit() else (1, text)

    return sorted(found, key=key)


def _render(found: list[Any], kind: Any, *, output: str | None, second: int, namespace_column: bool, show_labels: bool,
            no_headers: bool, single: bool, qualified: bool = False) -> str:
    """The objects in the form ``-o`` asks: a document (json, yaml, jsonpath), names, or columns."""
    from kubectl_sktrace.past import printing

    if output in ("json", "yaml") or (output is not None and output.startswith("jsonpath=")):
        return _document(printing.document(found[0]) if single and len(found) == 1 else printing.as_list(found), output)
    if output == "name":
        return "\n".join(printing.name_line(o) for o in found)
    if not found:
        return ""  # kubectl prints no header over nothing
    if output is not None and output.startswith("custom-columns="):
        return printing.custom_columns(output.partition("=")[2], found, no_headers=no_headers)
    table = printing.table(found, kind.gvk.kind, second=second, namespace_column=namespace_column, wide=output == "wide",
                           show_labels=show_labels, no_headers=no_headers, qualified=qualified)
    _say_unknown(table.unknown, kind.gvk.kind, found, second)
    if kind.lifecycles:
        note("Pods: those of the tracked workloads running then, from their recorded lifecycles and status (v1.Pod is not "
             "tracked: no labels, spec or creation time; AGE shown <unknown>).")
    elif "AGE" in table.unknown:
        note("AGE: the creation time was not recorded for some objects (caches before schema 0015 learn it at their next start): shown <unknown>.")
    return table.text


def _say_unknown(columns: Sequence[str], kind: str, found: Sequence[Any], second: int) -> None:
    """Once, which columns print <unknown> and why: fields no status change keeps, or a status the history does not know."""
    from kubectl_sktrace.past.printing import never_kept

    kept = never_kept(kind)
    never = [name for name in columns if name in kept]
    unknown = [name for name in columns if name not in kept and name != "AGE"]
    if never:
        note(f"{', '.join(never)}: read from status fields the history does not keep: shown <unknown>.")
    if unknown:
        note(f"{', '.join(unknown)}: the status at {_when(second)} is not known for some objects (no status change was recorded "
             "then: a cache before schema 16, a time before they were first recorded, or time no recorder watched): shown <unknown>.")


def _document(data: Any, output: str) -> str:
    if output == "json":
        return json.dumps(data, indent=4)
    if output == "yaml":
        import yaml

        return str(yaml.safe_dump(data, sort_keys=True, default_flow_style=False)).rstrip("\n")
    from kubectl_sktrace.past import jsonpath

    return jsonpath.render(output.partition("=")[2], data)


def _watch_rows(opener: Any, kinds: list[Any], scope: Any, after: tuple[int, int]) -> Iterator[list[Any]]:
    """The objects a running recorder changes (their spec, labels... or their status), as they were then, a batch at a
    time in time order, the cache opened anew for each look (a PostgreSQL reader sees the snapshot it opened)."""
    from kubectl_sktrace.past.state import Past

    after_row, after_status = after
    while True:
        time.sleep(POLL)
        with opener() as opened:
            past = Past(opened)
            news, after_row = past.follow(kinds, scope, after_row=after_row)
            statuses, after_status = past.status_news(kinds, scope, after_status=after_status)
            batch = sorted([past.as_object(change) for change in news] + statuses, key=lambda o: o.second)
        if batch:
            yield batch


@click.command("get", cls=SktraceCommand)
@verbosity_option
@quiet_option
@kube_options
@cache_option
@click.option("--at", "at", metavar="T", default="now", show_default=True,
              help="The time to look at: '-2h', an RFC 3339 time, '@<unix seconds>' (every change stamped at that second or before).")
@click.option("-l", "--selector", "selector", metavar="SELECTOR", help="Label selector, as kubectl's (app=web,tier!=db).")
@click.option("--field-selector", "field_selector", metavar="SELECTOR", help="metadata.name=NAME or metadata.namespace=NS (= == !=).")
@click.option("-o", "--output", "output", metavar="FORMAT", callback=lambda c, p, v: _check_output(v), help=f"Output: {FORMS}.")
@click.option("--show-labels", "show_labels", is_flag=True, help="Add a LABELS column.")
@click.option("--sort-by", "sort_by", metavar="JSONPATH", help="Sort by this field, as kubectl's (.metadata.name).")
@click.option("--no-headers", "no_headers", is_flag=True, help="No header line in the table.")
@click.option("-w", "--watch", "watch", is_flag=True, help="After the state at T, print each change a running recorder commits.")
@click.option("--since", "since", metavar="DURATION", help="With --watch: first replay this much of the past (10m, 2h).")
@click.option("--trace", "trace", metavar="FILE", shell_complete=complete_files,
              help="Read a SimKube trace file (or '-', an s3:// URL) instead of the cache: no uid, no creation time, its window only.")
@click.argument("words", nargs=-1, metavar="KIND [NAME...]")
def get_command(kubeconfig: str | None, context: str | None, namespace: str | None, all_namespaces: bool, cache: str | None,
                at: str, selector: str | None, field_selector: str | None, output: str | None, show_labels: bool, sort_by: str | None,
                no_headers: bool, watch: bool, since: str | None, trace: str | None, words: tuple[str, ...]) -> None:
    """Print objects as they were at a time, as 'kubectl get' prints them now, from the cache (read-only).

    KIND as kubectl names it (deploy, deployments.apps, cm, apps/v1.Deployment). The objects are the versions in force
    at T with the uid and creation time the cluster gave them; what the history never keeps (status, managedFields,
    resourceVersion) is absent, and a column read from status prints <unknown>. Stderr says how the state at T is
    known: live, from the audit log, reconstructed at a restart, or unknown in a gap (then the last known version).

    \b
    Example:
      kubectl sktrace get deploy -n shop --at 2026-11-22T03:00:00Z
      kubectl sktrace get pods -A --at -2h -o wide
      kubectl sktrace get deploy web --at -30m -o yaml
      kubectl sktrace get cm -l app=web --at @1796655690 -o jsonpath='{.items[*].metadata.name}'
      kubectl sktrace get deploy -w --since 10m
      kubectl sktrace get deploy -A --at @1796655690 --trace incident.sktrace
    """
    if since is not None and not watch:
        raise UsageError("--since replays the past before following: it goes with -w/--watch")
    term, names = _kind_and_names(words)
    when = _time(at, "--at")
    shown = dict(output=output, show_labels=show_labels, sort_by=sort_by, no_headers=no_headers)
    if trace is not None:
        if watch:
            raise UsageError("--watch follows a running recorder's cache; a trace file does not change: leave out --trace or -w")
        _from_trace(trace, term, names, when, namespace=namespace, all_namespaces=all_namespaces, selector=selector,
                    field_selector=field_selector, **shown)  # type: ignore[arg-type]
        return
    opener = lambda: _open(cache, kubeconfig, context)  # noqa: E731
    asked = dict(namespace=namespace, all_namespaces=all_namespaces, kube=(kubeconfig, context), selector=selector, field_selector=field_selector)
    if "," in term or term == "all":
        if watch:
            raise UsageError("--watch follows one kind; give one, like 'kubectl sktrace get deploy -w'")
        _get_many(opener, term, names, when, **asked, **shown)  # type: ignore[arg-type]
        return
    _get_one(opener, term, names, when, since=since, watch=watch, **asked, **shown)  # type: ignore[arg-type]


def _get_one(opener: Any, term: str, names: list[str], when: float, *, since: str | None, watch: bool, namespace: str | None,
             all_namespaces: bool, kube: tuple[str | None, str | None], selector: str | None, field_selector: str | None,
             output: str | None, show_labels: bool, sort_by: str | None, no_headers: bool) -> None:
    """``get KIND [NAME...] --at T``, and with ``--watch`` the changes after it (``--since``: replayed from before T)."""
    from kubectl_sktrace.past.kinds import LIFECYCLES
    from kubectl_sktrace.past.state import Past
    from kubectl_sktrace.timeparse import parse_duration

    replay = None if since is None else parse_duration(since)
    with opener() as opened:
        past = Past(opened)
        kind = past.kind(term)
        if watch and kind.lifecycles:
            raise UsageError(f"--watch follows versions: {LIFECYCLES}")
        scope = _scope(_namespace(namespace, all_namespaces, kubeconfig=kube[0], context=kube[1], kind=kind), names, selector, field_selector)
        start = when if replay is None else max(when - replay, past.begins() or when)  # a replay from the beginning at most
        second = past.second(start)
        found = _sorted(list(past.objects_at(kind, scope, start)), sort_by)
        missing = [n for n in names if n not in {o.key.name for o in found}]
        options = dict(output=output, namespace_column=scope.namespace is None and kind.namespaced, show_labels=show_labels)
        text = _render(found, kind, second=second, no_headers=no_headers, single=len(names) == 1, **options)  # type: ignore[arg-type]
        _say_knowledge(found, second)
        if text:
            say(text)
        replayed = _replayed(past, kind, scope, start) if replay is not None else []
        after = (past.last_row(), past.last_status_row())
    for name in missing:
        say(f'Error: {kind.resource} "{name}" did not exist at {_when(second)}', err=True)
    if not watch:
        if missing or (not found and not names):
            _nothing(names, scope.namespace, second)
        return
    _follow(replayed, opener, kind, scope, after, **options)  # type: ignore[arg-type]


def _replayed(past: Any, kind: Any, scope: Any, start: float) -> list[Any]:
    """``--since``: the objects changed after ``start`` (their spec or their status), as they were then, in time order."""
    changed = [past.as_object(change) for change in past.changes([kind], scope, after=start, until=past.now)]
    statuses, _ = past.status_news([kind], scope, after=start, until=past.now)
    return sorted(changed + statuses, key=lambda o: o.second)


def _get_many(opener: Any, terms: str, names: list[str], when: float, *, namespace: str | None, all_namespaces: bool,
              kube: tuple[str | None, str | None], selector: str | None, field_selector: str | None, output: str | None,
              show_labels: bool, sort_by: str | None, no_headers: bool) -> None:
    """``get deploy,cm --at T`` and ``get all``: a table per kind, its names as ``deployment.apps/web``, a blank line
    between two; one List (``-o json|yaml``) or one line per object (``-o name``) of them all."""
    from kubectl_sktrace.past.state import Past

    with opener() as opened:
        past = Past(opened)
        kinds = past.kinds_named(terms)
        second = past.second(when)
        everything: list[Any] = []
        tables: list[str] = []
        missing: list[str] = []
        shown: str | None = None  # the namespace asked, as "No resources found in NS namespace" says it
        for kind in kinds:
            scope = _scope(_namespace(namespace, all_namespaces, kubeconfig=kube[0], context=kube[1], kind=kind), names, selector, field_selector)
            shown = scope.namespace if kind.namespaced else shown
            found = _sorted(list(past.objects_at(kind, scope, when)), sort_by)
            missing += [f'{kind.resource} "{n}"' for n in names if n not in {o.key.name for o in found}]
            everything += found
            if output in (None, "wide") or (output or "").startswith("custom-columns="):
                tables.append(_render(found, kind, output=output, second=second, namespace_column=scope.namespace is None and kind.namespaced,
                                      show_labels=show_labels, no_headers=no_headers, single=False, qualified=True))
        text = "\n\n".join(t for t in tables if t) if tables else _render(
            everything, kinds[0] if kinds else None, output=output, second=second, namespace_column=False, show_labels=show_labels,
            no_headers=no_headers, single=False)
        _say_knowledge(everything, second)
    if text:
        say(text)
    for what in missing:
        say(f"Error: {what} did not exist at {_when(second)}", err=True)
    if missing or (not everything and not names):
        _nothing(names, shown, second)


def _from_trace(path: str, term: str, names: list[str], when: float, *, namespace: str | None, all_namespaces: bool,
                selector: str | None, field_selector: str | None, output: str | None, show_labels: bool, sort_by: str | None,
                no_headers: bool) -> None:
    """``get --trace FILE``: the state at T replayed from a trace file's events."""
    import sys

    from kubectl_sktrace.cli.globalflags import namespace_scope
    from kubectl_sktrace.past.tracefile import objects_at
    from kubectl_sktrace.trace.files.textformat import read_any_trace

    loaded = read_any_trace(path, stdin=sys.stdin.buffer)
    chosen = namespace_scope(namespace=namespace, all_namespaces=all_namespaces)
    ns = chosen if chosen is not None or all_namespaces else "default"
    scope = _scope(ns, names, selector, field_selector)
    kind, second, found_iter = objects_at(loaded, term, scope, when, now=time.time())
    found = _sorted(list(found_iter), sort_by)
    text = _render(found, kind, output=output, second=second, namespace_column=scope.namespace is None, show_labels=show_labels,
                   no_headers=no_headers, single=len(names) == 1)
    note(f"At {_when(second)}: {len(found)} objects as the trace {path} holds them (no uid, creation time or status).")
    if text:
        say(text)
    if not found:
        _nothing(names, scope.namespace, second)


def _when(second: int) -> str:
    from kubectl_sktrace.timeparse import format_time

    return format_time(second)


def _nothing(names: Sequence[str], namespace: str | None, second: int) -> None:
    if names:
        raise SystemExit(1)
    where = "" if namespace is None else f" in {namespace} namespace"
    say(f"No resources found{where} at {_when(second)}.", err=True)


def _follow(replayed: list[Any], opener: Any, kind: Any, scope: Any, after: tuple[int, int], *, output: str | None,
            namespace_column: bool, show_labels: bool) -> None:
    """--watch: the replayed objects, then what a running recorder commits, a line (or an object) each."""

    def printed(items: list[Any]) -> None:
        for item in items:
            say(_render([item], kind, output=output, second=item.second, namespace_column=namespace_column, show_labels=show_labels,
                        no_headers=True, single=True))

    printed(replayed)
    for batch in _watch_rows(opener, [kind], scope, after):
        printed(batch)


@click.command("history", cls=SktraceCommand)
@verbosity_option
@quiet_option
@kube_options
@cache_option
@click.option("--diff", "show_diff", is_flag=True, help="Show each change as a diff of the object's YAML (key order ignored).")
@click.option("--pods", "pods", is_flag=True, help="Add the lifecycles of the object's pods.")
@click.option("--status", "status", is_flag=True,
              help="Add its status changes among its versions (ready replicas, conditions, a pod's containers' states).")
@click.option("-o", "--output", "output", type=click.Choice(["table", "json", "yaml"]), default="table", show_default=True, help="Output format.")
@click.argument("target", metavar="KIND/NAME")
def history_command(kubeconfig: str | None, context: str | None, namespace: str | None, all_namespaces: bool, cache: str | None,
                    show_diff: bool, pods: bool, status: bool, output: str, target: str) -> None:
    """List every recorded version of one object, one line each, as 'kubectl rollout history' lists revisions.

    Each line: when, what changed (spec, labels, annotations, owners, data, deleted), how it is known, the run that
    recorded it. Objects are told apart by uid: a name deleted and created again shows as two lives, one after the other.
    As 'kubectl rollout history', the versions only; --status adds what a person reads of its status as it changed (of
    a pod known by its lifecycle only, v1.Pod not tracked: its status changes alone).

    \b
    Example:
      kubectl sktrace history deploy/web -n demo
      kubectl sktrace history cm/settings -n shop --diff
      kubectl sktrace history deployments.apps/web -n demo --pods -o json
      kubectl sktrace history deploy/web -n shop --status
      kubectl sktrace history pod/web-7d4-x2x9q -n shop --status
    """
    from kubectl_sktrace.past.state import Life, Past

    term, names = _kind_and_names([target])
    if len(names) != 1:
        raise UsageError(f"give one object as KIND/NAME, like 'deploy/web', not {target!r}")
    with _open(cache, kubeconfig, context) as opened:
        past = Past(opened)
        kind = past.kind(term)
        ns = _namespace(namespace, all_namespaces, kubeconfig=kubeconfig, context=context, kind=kind) or ""
        if all_namespaces:
            raise UsageError("history shows one object: give its namespace with -n, not -A")
        if kind.lifecycles and not status:
            from kubectl_sktrace.past.kinds import LIFECYCLES

            raise UsageError(f"{LIFECYCLES}; --status prints a pod's status changes")
        changed = past.status_changes(kind, ns, names[0]) if status else []
        if kind.lifecycles and status:  # no versions: each life's status changes alone
            lives = [Life(uid, ()) for uid in dict.fromkeys(change.uid for change in changed)]
        else:
            lives = past.lives(kind, ns, names[0])
        owned = past.pods(kind, ns, names[0]) if pods else []
    if not lives:
        raise UsageError(f"the history has no {kind.resource} {names[0]!r}{f' in namespace {ns}' if ns else ''}; "
                         f"'kubectl sktrace get {kind.plural} -A' lists what it has")
    from kubectl_sktrace.cli.pastviews import history_text

    say(history_text(lives, owned, output=output, show_diff=show_diff, statuses=changed))


@click.command("diff", cls=SktraceCommand)
@verbosity_option
@quiet_option
@kube_options
@cache_option
@click.option("--from", "start", metavar="T1", required=True, help="The earlier time ('-2h', an RFC 3339 time, '@<unix seconds>').")
@click.option("--to", "end", metavar="T2", default="now", show_default=True, help="The later time.")
@click.option("-l", "--selector", "selector", metavar="SELECTOR", help="Label selector, as kubectl's.")
@click.option("-o", "--output", "output", type=click.Choice(["diff", "name"]), default="diff", show_default=True,
              help="diff: each change as a diff; name: one line per object changed.")
@click.argument("kinds", nargs=-1, metavar="[KIND...]")
def diff_command(kubeconfig: str | None, context: str | None, namespace: str | None, all_namespaces: bool, cache: str | None,
                 start: str, end: str, selector: str | None, output: str, kinds: tuple[str, ...]) -> None:
    """Show what was added, deleted and changed between two times; exit code 1 when something changed, as 'kubectl diff'.

    Every recorded kind unless KIND is given; every namespace unless -n. A name deleted and created again is a deletion
    and an addition.

    \b
    Example:
      kubectl sktrace diff --from -2h --to -1h
      kubectl sktrace diff --from 2026-11-22T02:00:00Z --to 2026-11-22T03:00:00Z deploy -n shop
      kubectl sktrace diff --from -1d -o name || echo changed
    """
    from kubectl_sktrace.cli.pastviews import difference_text
    from kubectl_sktrace.past.state import Past

    first, last = _time(start, "--from"), _time(end, "--to")
    if last < first:
        raise UsageError("--to is before --from; give the earlier time to --from")
    with _open(cache, kubeconfig, context) as opened:
        past = Past(opened)
        chosen = [past.kind(term) for term in kinds] if kinds else past.kinds()
        from kubectl_sktrace.cli.globalflags import namespace_scope

        scope = _scope(namespace_scope(namespace=namespace, all_namespaces=all_namespaces), (), selector, None)
        past.second(first)
        found = list(past.differences(chosen, scope, start=first, end=last))
    if found:
        say(difference_text(found, output=output))
        raise SystemExit(1)
