"""``kubectl sktrace backfill``: the cache's offline gaps filled from the API server's audit log (docs/coverage.md).

Where it writes: only in time no recorder observed live, the gaps between runs (and, with ``before_first``, the time
before the cache's first run, marked partial). In each gap, per object the log wrote: the writes are walked by the
recorder's own rules (``replay``); when the walk accounts for what the restart reconstructed (it ends where the
restart found the object), the reconstructed rows go and the logged ones take their place: a deletion moves from
the restart to its real time, several offline changes appear one by one, an object created and deleted offline
appears. When it does not (a ``Metadata`` log shows no bodies, a log that misses writes), the reconstruction stands,
except that a deletion the log times is moved to that time; the object is counted as *kept*. A pod whose end the
restart inferred ends at its logged deletion.

Safe to run twice: a row already written by a log into the same gap is not written again, and what a restart
reconstructed is replaced once; the export is then byte-identical. A log that names no object the cache knows
(another cluster's) is refused unless ``force``.

All or nothing: the log is read whole first (bad lines counted, never fatal), then every write goes in one
transaction under the cache's writer lock; an error on the way (a file that cannot be read on, a broken gzip stream, a
recorder holding the cache) leaves the cache as it was.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from kubectl_sktrace.audit.collect import Collected
from kubectl_sktrace.audit.lines import Wanted
from kubectl_sktrace.audit.replay import Planned, Replayed, Version, accounts_for, replay
from kubectl_sktrace.audit.statusfill import fill_statuses
from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.model import GVK, POD, ObjectHead, ObjKey
from kubectl_sktrace.plural import counted
from kubectl_sktrace.record import owners as owner_rules
from kubectl_sktrace.record.changes import event_second, same_uid
from kubectl_sktrace.store import backfill as store
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.store.recording import EventRow, OwnerRecord, Recording
from kubectl_sktrace.store.versions import DELETED
from kubectl_sktrace.trace import lifecycle as lifecycles
from kubectl_sktrace.tracerconfig import TracerConfig, TrackedObject, stored_config, watched_owner_kinds

_NO_LIFECYCLE = TrackedObject()


@dataclass
class GapReport:
    """What one gap got from the log."""

    gap: store.Gap
    written: int = 0
    replaced: int = 0
    kept: int = 0
    pods_ended: int = 0
    statuses: int = 0  # status changes written from the log (``statusfill``)
    statuses_replaced: int = 0  # reconstructed status rows the log accounted for
    kept_keys: list[ObjKey] = field(default_factory=list)  # objects kept as reconstructed, named
    ends_reconstructed: list[ObjKey] = field(default_factory=list)  # written from the log, the end at the restart
    levels: set[str] = field(default_factory=set)
    covered: tuple[float, float] | None = None

    @property
    def filled(self) -> bool:
        """Whether the log changed the cache in this gap."""
        return bool(self.written or self.replaced or self.pods_ended or self.statuses or self.statuses_replaced)


@dataclass
class Outcome:
    gaps: list[GapReport]
    outside: Counter[str]  # logged writes not in any gap, by where they fell


def wanted_kinds(cache: Cache) -> tuple[Wanted, dict[int, TracerConfig]]:
    """The kinds any run tracked, by the log's ``(apiGroup, resource)``, and each run's config."""
    configs: dict[int, TracerConfig] = {}
    for run_id, text in cache.conn.execute("SELECT id, config FROM runs ORDER BY id"):
        cfg = stored_config(text)
        if cfg is not None:
            configs[int(run_id)] = cfg
    plurals = _plurals(Recording(cache).load_discovery())
    kinds: dict[tuple[str, str], GVK] = {(POD.group, "pods"): POD}
    for cfg in configs.values():
        for gvk in (*cfg.kinds, *owner_kinds(configs)):
            kinds[(gvk.group, plurals.get(gvk) or _plural(gvk.kind))] = gvk
    return Wanted(kinds), configs


def owner_kinds(configs: dict[int, TracerConfig]) -> frozenset[GVK]:
    """The kinds read only for pods' owner chains (ReplicaSets of Deployments): no run tracks them."""
    tracked = {gvk for cfg in configs.values() for gvk in cfg.kinds}
    return frozenset(g for cfg in configs.values() for g in watched_owner_kinds(cfg) if g not in tracked)


def _plurals(docs: dict[str, Any]) -> dict[GVK, str]:
    out: dict[GVK, str] = {}
    for gv, doc in docs.items():
        group, _, version = gv.rpartition("/")
        for resource in (doc or {}).get("resources") or ():
            name, kind = resource.get("name", ""), resource.get("kind", "")
            if name and kind and "/" not in name:
                out[GVK(group, version, kind)] = name
    return out


def _plural(kind: str) -> str:
    """A kind's resource name as the API server makes it when discovery is not cached (rare)."""
    lower = kind.lower()
    if lower.endswith(("s", "x", "ch", "sh")):
        return lower + "es"
    if lower.endswith("y") and lower[-2:-1] not in "aeiou":
        return lower[:-1] + "ies"
    return lower + "s"


def check_same_cluster(cache: Cache, collected: Collected, *, force: bool) -> None:
    """Refuse a log that names no object the cache knows (another cluster's), unless ``force``."""
    uids = {r.uid for records in collected.writes.values() for r in records if r.uid}
    uids |= set(collected.pods)
    if force or not uids or store.shares_objects(cache, sorted(uids)[:5000]):
        return
    raise UsageError(f"the audit log names {counted(len(uids), 'object')} and none of them is in cache {cache.path}: it is another "
                     "cluster's log (or another cache's); pass the log of the cluster this cache records, or --force to "
                     "backfill it anyway")


def fill(cache: Cache, collected: Collected, *, configs: dict[int, TracerConfig], before_first: bool, now: float | None = None) -> Outcome:
    """Every gap filled from ``collected``, in one transaction (the caller holds the writer lock)."""
    at = time.time() if now is None else now
    gaps = store.gaps(cache, before_first=True)
    last_stop = cache.conn.execute("SELECT MAX(stopped) FROM runs").fetchone()[0]
    outside = _outside(collected, gaps, before_first=before_first, last_stop=last_stop)
    reports = []
    with cache.transaction():
        for gap in gaps:
            if gap.partial and not before_first:
                continue
            cfg = configs.get(gap.run_id)
            if cfg is None:
                continue
            reports.append(_fill_gap(cache, gap, collected, cfg, at=at))
    return Outcome([r for r in reports if r.filled or r.kept or r.covered], outside)


def _outside(collected: Collected, gaps: list[store.Gap], *, before_first: bool, last_stop: float | None) -> Counter[str]:
    """Where the logged writes that fill no gap fell: in time observed live, after the last run, before the first."""
    out: Counter[str] = Counter()
    first = next((g for g in gaps if g.partial), None)
    for records in collected.writes.values():
        for record in records:
            if any(g.since < record.at < g.reach for g in gaps if before_first or not g.partial):
                continue
            if last_stop is not None and record.at > last_stop:
                out["after the cache's last run"] += 1
            elif first is not None and record.at < first.until:
                out["before the cache's first run"] += 1
            else:
                out["in time observed live"] += 1
    return out


def _in_gap(at: float, gap: store.Gap) -> bool:
    return gap.since < at < gap.until


def _before_its_list(at: float, gap: store.Gap, restart_rows: list[store.Row]) -> bool:
    """A write after the next run began and before its list reconstructed the object (received at that row's ``recv``):
    what that list found, stamped at the list, inferred; a later write was watched live."""
    return gap.until <= at < gap.reach and any(at < row.recv for row in restart_rows)


def _fill_gap(cache: Cache, gap: store.Gap, collected: Collected, cfg: TracerConfig, *, at: float) -> GapReport:
    report = GapReport(gap, covered=_covered(collected.spans, gap))
    found = _by_key(store.reconstructed(cache, gap))
    record = store.fill_of(cache, gap, at=at)
    already = store.filled_rows(cache, record.id)
    lookup = _owner_lookup(_owner_records(Recording(cache).load_owners(), collected), cfg)
    rows: list[tuple[Planned, ...]] = []
    for key, logged in collected.in_order():
        inside = [r for r in logged if _in_gap(r.at, gap) or _before_its_list(r.at, gap, found.get(key, []))]
        options = cfg.get(key.gvk)
        if not inside or options is None or (gap.gvk and str(key.gvk) != gap.gvk):
            continue
        report.levels |= {r.level for r in inside}
        prior = None if gap.partial else _version(store.version_before(cache, key, recv=gap.since))
        walked = replay(prior, inside, options=options, chain=lambda head: tuple(owner_rules.resolve_chain(head, lookup=lookup)))
        restart_rows = found.get(key, [])
        planned = _decide(cache, gap, key, walked, restart_rows, report, sweeps=collected.sweeps.get((key.gvk, key.namespace), []))
        rows.append(tuple(p for p in planned if _identity(p) not in already))
    rows += [tuple(p for p in group if _identity(p) not in already) for group in _swept_only(cache, gap, collected, found, report)]
    if gap.gvk in ("", str(POD)):
        _pods(cache, gap, collected, lookup, cfg, report)
        _pods_by_name(cache, gap, collected, report)
    after = store.last_event_id(cache)
    recording = Recording(cache)
    for planned_row in sorted((p for group in rows for p in group), key=lambda p: p.at):
        recording.append_event(gap.run_id, _event_row(planned_row))
        report.written += 1
    store.mark_filled(cache, record.id, after=after)
    report.statuses, report.statuses_replaced = fill_statuses(cache, gap, collected, cfg, fill_id=record.id)
    store.update_fill(cache, record, covered=report.covered, levels=report.levels, replaced=report.replaced, kept=report.kept, at=at)
    return report


def _pods(cache: Cache, gap: store.Gap, collected: Collected, lookup: Any, cfg: TracerConfig, report: GapReport) -> None:
    """Pods removed in the gap: an end the restart inferred moves to the logged deletion; a pod created and deleted
    in the gap (the restart never saw it) gets its lifecycle, under the owner its chain gives, as the recorder would."""
    recording = Recording(cache)
    for uid, trail in sorted(collected.pods.items(), key=lambda item: (item[1].first_at or 0.0, item[0])):
        removed = trail.removed_at is not None and _in_gap(trail.removed_at, gap)
        if removed and store.end_pod(cache, uid=uid, ts=event_second(trail.removed_at or 0.0), since=gap.since, until=gap.until):
            report.pods_ended += 1
            continue
        if trail.first_at is None or not _in_gap(trail.first_at, gap) or store.has_pod(cache, uid):
            continue
        if not removed and (trail.removed_at is not None or collected.covers(gap.until)):
            continue  # removed after the gap (the restart found it), or the log saw to the end of the gap
        # created in the gap and gone by the restart: at its logged removal, else (the log ends first) at the restart
        second = event_second(trail.removed_at if removed else gap.until)  # type: ignore[arg-type]
        head = ObjectHead(key=trail.key, uid=uid, resource_version="", created=None, owners=trail.owners)
        chain = owner_rules.resolve_chain(head, lookup=lookup) if trail.owners else []
        owner = owner_rules.lifecycle_owner(pod_key=trail.key, chain=chain,
                                            is_tracked_lifecycle_owner=lambda key: bool((cfg.get(key.gvk) or _NO_LIFECYCLE).track_lifecycle))
        ended = lifecycles.on_pod_gone(trail.life, ts=second)
        recording.insert_pod(uid=uid, namespace=trail.key.namespace, name=trail.key.name, owner=owner,
                             stable_hash=trail.stable_hash if owner is not None else None, start_ts=ended.start, end_ts=ended.end,
                             first_seen=trail.first_at)
        inferred = not removed and trail.life.end is None
        recording.update_pod(uid, start_ts=ended.start, end_ts=ended.end, end_inferred=inferred, live=False)
        report.pods_ended += 1
        if inferred:
            report.ends_reconstructed.append(trail.key)


def _pods_by_name(cache: Cache, gap: store.Gap, collected: Collected, report: GapReport) -> None:
    """Pods whose deletes the log names without a uid (``Metadata``, ``Request``): the one pod of that name whose end the
    restart inferred ends at the name's last logged delete in the gap (its final one)."""
    for (namespace, name), at in sorted(collected.unnamed_pod_deletes.items()):
        uid = store.inferred_pod(cache, namespace=namespace, name=name) if _in_gap(at, gap) else None
        if uid is not None and store.end_pod(cache, uid=uid, ts=event_second(at), since=gap.since, until=gap.until):
            report.pods_ended += 1


def _owner_records(table: dict[ObjKey, OwnerRecord], collected: Collected) -> dict[ObjKey, OwnerRecord]:
    """The owners the cache met, and those the log shows (what was created offline), the log's last word first."""
    out = dict(table)
    for key, (_, uid, refs) in collected.owners.items():
        out[key] = OwnerRecord(uid, refs)
    return out


def _decide(cache: Cache, gap: store.Gap, key: ObjKey, walked: Replayed, restart_rows: list[store.Row],
            report: GapReport, *, sweeps: Sequence[float] = ()) -> tuple[Planned, ...]:
    """The rows to write for one object, and the reconstructed rows they replace (deleted here)."""
    end_found = _version(restart_rows[-1]) if restart_rows else _version(store.version_before(cache, key, recv=gap.mark + 1.0))
    if accounts_for(walked, end_found):
        report.replaced += store.delete_rows(cache, [r.id for r in restart_rows])
        return walked.rows
    deletion = next((r for r in reversed(restart_rows) if r.op == DELETED), None)
    moved = _removal_for(walked, deletion) or _swept(walked, deletion, gap, sweeps)
    if deletion is not None and moved is not None:
        report.replaced += store.delete_rows(cache, [deletion.id])
        _kept(report, key, int(len(restart_rows) > 1))
        return (Planned(moved, key, deletion.uid, DELETED),)
    if walked.complete and walked.rows and end_found is None and all(r.op == DELETED for r in restart_rows):
        return _end_reconstructed(gap, key, walked, restart_rows, report)
    _kept(report, key, int(bool(restart_rows)))
    return ()


def _end_reconstructed(gap: store.Gap, key: ObjKey, walked: Replayed, restart_rows: list[store.Row],
                       report: GapReport) -> tuple[Planned, ...]:
    """A log that ends before the object's end (it shows the object at its last line, the restart found it gone): what
    the log shows is written, and its end is the restart's (its deletion, or one made at the restart's time, inferred)."""
    report.ends_reconstructed.append(key)
    if restart_rows or walked.end is None:
        return walked.rows
    return (*walked.rows, Planned(gap.until, key, walked.end.live.uid, DELETED, inferred=True))


def _kept(report: GapReport, key: ObjKey, kept: int) -> None:
    report.kept += kept
    if kept:
        report.kept_keys.append(key)


def _removal_for(walked: Replayed, deletion: store.Row | None) -> float | None:
    """The logged time of the removal the restart found (the last logged delete of that uid, or of the name when the
    line names no uid and no later write re-created it)."""
    if deletion is None:
        return None
    times = [t for t, uid in walked.removals if same_uid(uid, deletion.uid) and t <= deletion.recv]
    return times[-1] if times else None


def _swept_only(cache: Cache, gap: store.Gap, collected: Collected, found: dict[ObjKey, list[store.Row]],
                report: GapReport) -> list[tuple[Planned, ...]]:
    """The deletions the restart found of objects the log wrote nothing of, moved to a deletecollection that removed them."""
    out = []
    empty = Replayed((), None, False, ())
    for key, restart_rows in found.items():
        sweeps = collected.sweeps.get((key.gvk, key.namespace), [])
        deletion = next((r for r in reversed(restart_rows) if r.op == DELETED), None)
        written = any(_in_gap(r.at, gap) for r in collected.writes.get(key, ()))  # those were walked above
        if not written and _swept(empty, deletion, gap, sweeps) is not None:
            out.append(_decide(cache, gap, key, empty, restart_rows, report, sweeps=sweeps))
    return out


def _swept(walked: Replayed, deletion: store.Row | None, gap: store.Gap, sweeps: Sequence[float]) -> float | None:
    """The time of a deletecollection without a selector (the namespace controller's, at a level that names nothing) that
    removed the object the restart found deleted: the first one in the gap after its last logged write."""
    if deletion is None or walked.rows or walked.removals:
        return None
    times = [t for t in sweeps if gap.since < t <= deletion.recv]
    return min(times) if times else None


def _version(row: store.Row | None) -> Version | None:
    if row is None or row.op == DELETED or row.spec_hash is None:
        return None
    return Version.of(uid=row.uid, spec_hash=row.spec_hash, body=row.body)


def _by_key(rows: Iterable[store.Row]) -> dict[ObjKey, list[store.Row]]:
    out: dict[ObjKey, list[store.Row]] = {}
    for row in rows:
        if row.op in (0, 1, 3, 4):
            out.setdefault(row.key, []).append(row)
    return out


def _covered(spans: list[tuple[float, float]], gap: store.Gap) -> tuple[float, float] | None:
    # a source of one line (or of lines in one instant) covers that instant: a span of no length, inside the gap
    inside = [(max(a, gap.since), min(b, gap.until)) for a, b in spans if min(b, gap.until) >= max(a, gap.since)]
    if not inside:
        return None
    return min(a for a, _ in inside), max(b for _, b in inside)


def _owner_lookup(records: dict[ObjKey, OwnerRecord], cfg: TracerConfig) -> Any:
    def lookup(ref: Any, namespace: str) -> Any:
        key = ref.key(namespace)
        record = records.get(key)
        if record is not None and same_uid(ref.uid, record.uid):
            return record.refs
        return () if key.gvk in cfg else None
    return lookup


def _identity(p: Planned) -> tuple[str, str, str, int, int, str, int | None]:
    return (str(p.key.gvk), p.key.namespace, p.key.name, event_second(p.at), p.op, p.uid, p.spec_hash)


def _event_row(p: Planned) -> EventRow:
    return EventRow(ts=event_second(p.at), recv=p.at, key=p.key, uid=p.uid, op=p.op, inferred=p.inferred, spec_hash=p.spec_hash,
                    owner_chain=p.chain or None, body=p.body, refs=p.refs, daemonset=p.daemonset)
