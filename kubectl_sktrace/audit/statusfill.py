"""What a gap's logged status writes mean, and their rows (``backfill``; docs/spec.md "What a status change is").

A real API server logs at ``RequestResponse`` each write's answer: the kubelet's ``pods/status`` patches, the
controllers' ``*/status`` updates, and every other write of the object, each showing its status (``collect`` keeps
what a person reads of it, ``trace/statuses.reduce``). ``walk`` (pure) takes them in time order from the state the
recorder had written before the gap, by the recorder's own rule (``record/statuses``): a state that differs from the last
is a change (a new uid is a new object, which first met with nothing to read is no change). Each change is written at
its logged second, received then, under ``status_objects`` rows of the gap's fill (told "audit log").

The restart that ended the gap found each object's state by its lists and wrote it reconstructed (``inferred``). When
the walk ends in that state, the log accounts for it and the reconstructed row goes (the changes that led there are
now in their seconds); so does one the walk left unchanged when the log covers the whole gap (nothing changed: a
recorder that stayed up wrote nothing). Otherwise (the log misses writes, its level hides answers) it stays.

Safe twice: a change a fill already wrote is not written again, and a reconstructed row goes once.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from kubectl_sktrace.audit.collect import Collected, StatusLogged
from kubectl_sktrace.model import POD, ObjKey
from kubectl_sktrace.store import backfill as store
from kubectl_sktrace.store import statuses as stored
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.trace import statuses
from kubectl_sktrace.tracerconfig import TracerConfig



def walk(prior: StatusLogged | None, logged: Sequence[StatusLogged]) -> list[StatusLogged]:
    """The logged states a recorder that stayed up would have written, in time order (ties as read), from ``prior``. A
    scale write the log showed nothing before (``scaled``) is the state before it with the replicas it asked for; with
    no state before it of the same object that has a status, it tells nothing."""
    out: list[StatusLogged] = []
    last = prior
    for each in sorted(logged, key=lambda s: s.at):
        if each.scaled:
            if last is None or last.uid != each.uid or not last.reduced:
                continue
            each = StatusLogged(each.at, each.uid, {**last.reduced, **each.reduced})
        if last is not None and last.uid == each.uid and last.reduced == each.reduced:
            continue
        if (last is None or last.uid != each.uid) and not each.reduced:
            last = each  # first met with nothing to read
            continue
        out.append(each)
        last = each
    return out


def fill_statuses(cache: Cache, gap: store.Gap, collected: Collected, cfg: TracerConfig, *, fill_id: int) -> tuple[int, int]:
    """The gap's status changes from the log; ``(written, reconstructed rows replaced)``. Only a gap between two runs."""
    if gap.gvk or gap.partial or not stored.has_statuses(cache):
        return 0, 0
    found = stored.found_at_restart(cache, gap.run_id, mark=gap.reach)
    already = stored.filled(cache, fill_id)
    writer = stored.FillWriter(cache, fill_id, gap.run_id)
    replaced: list[int] = []
    for key, logged in sorted(collected.statuses.items()):
        if key.gvk != POD and cfg.get(key.gvk) is None:
            continue
        restart = found.get(key)
        until = restart.ts + 1 if restart is not None else gap.until  # a write before its list is what the list found
        inside = [s for s in logged if gap.since < s.at < max(gap.until, until)]
        if not inside:
            continue
        before = stored.recorded_before(cache, key, at=gap.since)
        prior = None if before is None else StatusLogged(gap.since, before.uid, before.reduced)
        changes = walk(prior, inside)
        for change in changes:
            if (key, int(change.at // 1), change.uid, statuses.packed(change.reduced)) not in already:
                writer.write(key, change.uid, at=change.at, reduced=change.reduced)
        end = changes[-1] if changes else prior
        if restart is not None and end is not None and (end.uid, end.reduced) == (restart.uid, restart.reduced):
            replaced.append(restart.id)
    replaced += _unchanged(cache, gap, collected, found, cfg)
    return writer.written, stored.remove(cache, replaced)


def _unchanged(cache: Cache, gap: store.Gap, collected: Collected, found: dict[ObjKey, stored.StatusRow], cfg: TracerConfig) -> Iterable[int]:
    """The reconstructed rows of objects the log wrote nothing of in the gap, when it covers the gap whole and the state
    found is the one recorded before it."""
    if not any(first <= gap.since and last >= gap.until for first, last in collected.spans):
        return []
    out = []
    for key, row in found.items():
        if any(gap.since < s.at < row.ts + 1 for s in collected.statuses.get(key, ())):
            continue
        before = stored.recorded_before(cache, key, at=gap.since)
        if before is not None and (before.uid, before.reduced) == (row.uid, row.reduced):
            out.append(row.id)
    return out
