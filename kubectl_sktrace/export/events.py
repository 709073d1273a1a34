"""The events of an exported trace: stored rows grouped into events, and one event written at a time (docs/spec.md §7).

SimKube's reference rules (``validation.ReferenceRules``) see each event as ``validate`` will, so that an export
warns about a trace SimKube would refuse. They need only each object's pod-template references, which the
recorder stores beside the row (``events.refs``, schema 0006) under its run's template paths: where the row's run
had the paths the trace's config has for that kind, the stored references are used; elsewhere (rows recorded
before 0006, or under other paths) the body is decoded, as before. Both give the same verdicts, so the same bytes
and warnings.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Container, Iterable, Iterator, Mapping

import yaml

from kubectl_sktrace import safeyaml
from kubectl_sktrace.errors import ConfigError
from kubectl_sktrace.model import (
    CONFIG_MAP,
    GVK,
    NAMESPACE,
    SECRET,
    SERVICE_ACCOUNT,
    ObjKey,
)
from kubectl_sktrace.store import history
from kubectl_sktrace.store.bodies import packed_body, refs_from_json
from kubectl_sktrace.trace.reports import validation
from kubectl_sktrace.trace.files.format import loads
from kubectl_sktrace.trace.sanitize import deleted_stub
from kubectl_sktrace.tracerconfig import parse_config

EventWriter = Callable[[int, list[history.StoredEvent]], int]


def stored_refs_usable(all_runs: Iterable[history.Run], rules: validation.ReferenceRules) -> dict[int, frozenset[GVK]]:
    """Per run, the kinds whose stored references hold what the rules would find in the bodies: the run recorded
    them under the template paths the rules use (a path into ``status`` excepted: the stored body has none)."""
    usable: dict[int, frozenset[GVK]] = {}
    for run in all_runs:
        try:
            config = parse_config(safeyaml.load(run.config), source="a run's config")
        except (ConfigError, yaml.YAMLError):
            continue  # the bodies say it
        kinds = []
        for gvk in rules.checked_kinds():
            opts = config.get(gvk)
            paths = rules.paths(gvk)
            if opts is not None and opts.pod_spec_template_paths == paths and not any(p.startswith("/status") for p in paths):
                kinds.append(gvk)
        usable[run.id] = frozenset(kinds)
    return usable


def event_writer(
    writer: Any, *, packed: bool, keep_status: bool, rules: validation.ReferenceRules | None, usable: Mapping[int, frozenset[GVK]],
    errors: Counter[str],
) -> EventWriter:
    """A function writing one event of stored rows, returning how many objects it applied. Without status in a
    msgpack trace, the stored bytes are copied as they are (``store/bodies.py``). ``rules`` see each event as
    ``validate`` will, from the stored references where ``usable`` says so, else from the decoded bodies of kinds
    with pod templates; their errors are counted per rule in ``errors``."""
    # many rows share their references (the versions of one object): prepared once per stored text and namespace
    prepared: dict[str, dict[str, tuple[tuple[str, tuple[str, str, str, str, str]], ...]]] = {}
    checked: dict[GVK, bool] = {}

    def check(row: history.StoredEvent, blob: bytes | None, obj: dict[str, Any] | None) -> list[str]:
        assert rules is not None
        gvk = row.key.gvk
        checks = checked.get(gvk)
        if checks is None:
            checks = checked[gvk] = rules.checks(gvk)
        if not checks:
            return rules.missing_codes(None, key=row.key)
        text = row.refs
        if text is not None and gvk in usable.get(row.run_id, ()):
            namespace = row.key.namespace
            of_text = prepared.get(text)
            if of_text is None:
                of_text = prepared[text] = {}
            refs = of_text.get(namespace)
            if refs is None:
                refs = of_text[namespace] = rules.prepare(refs_from_json(text), namespace=namespace)
            return rules.missing_stored(refs, key=row.key)
        return rules.missing_codes(obj if blob is None else loads(blob), key=row.key)

    def write(ts: int, rows: list[history.StoredEvent]) -> int:
        applied = sorted((r for r in rows if not r.deleted), key=apply_order)
        deleted = [r for r in rows if r.deleted]
        deleted_objs = [deleted_stub(r.key) for r in deleted]
        if packed:
            blobs: list[bytes | None] = [packed_body(r.body_blob) for r in applied if r.body_blob is not None]
            writer.write_packed_event(ts=ts, applied=blobs, deleted=deleted_objs)
            objs: list[dict[str, Any] | None] = [None] * len(applied)
        else:
            objs = [(r.body if keep_status else r.without_status()) or {} for r in applied]
            blobs = [None] * len(applied)
            writer.write_event(ts=ts, applied=objs, deleted=deleted_objs)
        if rules is not None:
            for row, blob, obj in zip(applied, blobs, objs):
                for code in check(row, blob, obj):
                    errors[code] += 1  # Counter.update would first ask whether a list is a Mapping (slow, per object)
            for row in deleted:
                rules.deleted(row.key)
        return len(applied)

    return write


# Objects that pods reference by name: applied first within an event, so that a Deployment listed in the
# same second as its ConfigMap does not come before it (SimKube's validation counts only earlier objects).
_REFERENCED_FIRST = frozenset({NAMESPACE, SERVICE_ACCOUNT, CONFIG_MAP, SECRET})


def apply_order(row: history.StoredEvent) -> int:
    """Sort key within one event (``sorted`` is stable: recorded order otherwise)."""
    return 0 if row.key.gvk in _REFERENCED_FIRST else 1


@dataclass
class GroupCount:
    """What the counting pass finds: the trace's events, and the reconstructed rows among theirs."""

    groups: int = 0
    inferred: int = 0
    inferred_deleted: int = 0


def count_groups(heads: Iterable[tuple[int, str, str, str, int, int]], exported: Container[tuple[str, str, str]]) -> GroupCount:
    """``groups`` counted from ``history.window_heads`` rows, the objects named as stored (``(gvk, namespace, name)``
    text): the same events, without making an object per row (a long window has millions)."""
    count, inferred_rows, inferred_deleted = 0, 0, 0
    current_ts: int | None = None
    deleted: set[tuple[str, str, str]] = set()
    deletion = history.DELETED
    for ts, gvk, namespace, name, op, inferred in heads:
        raw = (gvk, namespace, name)
        if raw not in exported:
            continue
        is_deleted = op == deletion
        if ts != current_ts or not count or (not is_deleted and raw in deleted):
            count += 1
            current_ts = ts
            deleted.clear()
        if is_deleted:
            deleted.add(raw)
        if inferred:
            inferred_rows += 1
            inferred_deleted += is_deleted
    return GroupCount(groups=count, inferred=inferred_rows, inferred_deleted=inferred_deleted)


def groups(events: Iterable[history.StoredEvent], exported: Mapping[ObjKey, int]) -> Iterator[tuple[int, list[history.StoredEvent]]]:
    """The trace's events as ``(ts, rows)``: consecutive exported rows of one second, seconds with no
    exported row skipped.

    SimKube's driver applies an event's applied objects before its deleted ones, so an object deleted and
    re-created within one second would end deleted. A row applying an object already deleted in the
    current event therefore starts a new event with the same timestamp (timestamps stay non-decreasing).
    ``count_groups`` counts the same events for the count that goes first in the file (a test holds them to it)."""
    current_ts: int | None = None
    rows: list[history.StoredEvent] = []
    deleted: set[ObjKey] = set()
    for event in events:
        if event.key not in exported:
            continue
        if event.ts != current_ts or (not event.deleted and event.key in deleted):
            if rows:
                yield current_ts, rows  # type: ignore[misc]
            current_ts, rows, deleted = event.ts, [], set()
        rows.append(event)
        if event.deleted:
            deleted.add(event.key)
    if rows:
        yield current_ts, rows  # type: ignore[misc]
