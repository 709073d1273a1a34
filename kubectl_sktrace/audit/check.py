"""``backfill --check``: an audit log compared with what the recorder recorded live. Reads only: the cache is opened
read-only, nothing is written, it runs beside a recorder.

Time observed live is each run's time from its initial sync to its last heartbeat, less its outages and refusals.
Each write the log saw succeed there, of a tracked kind, is asked of the recorder's own rule (``decide_applied``)
against the version the cache held just before it; a write that is a change by that rule must have its row in the
cache within ``SLACK`` seconds (a spec change: the same spec hash; a revision: the same op), and a removal a deletion
of that uid. What is missing is reported: a change the recorder missed, or a deletion recorded at another time. This is
a consistency test of the recorder on any real cluster whose audit log is at ``RequestResponse``; below that level
only deletions are checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_sktrace.audit.collect import Collected
from kubectl_sktrace.audit.lines import Logged
from kubectl_sktrace.audit.replay import Version, object_of
from kubectl_sktrace.model import ObjKey
from kubectl_sktrace.record.changes import decide_applied, is_skipped_owned
from kubectl_sktrace.store import backfill as store
from kubectl_sktrace.store import history
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.store.versions import DELETED, OP_OF_CHANGE
from kubectl_sktrace.timeparse import format_time
from kubectl_sktrace.trace import hashing, sanitize
from kubectl_sktrace.tracerconfig import TracerConfig

SLACK = 2.0  # a watch event is received within a second or two of its write; a commit within half a second


@dataclass(frozen=True)
class Disagreement:
    at: float
    key: ObjKey
    what: str

    def line(self) -> str:
        return f"{format_time(self.at)} {self.key.gvk} {self.key.namespace}/{self.key.name}: {self.what}"


def live_spans(cache: Cache) -> list[tuple[float, float]]:
    """The time runs observed live: from each run's sync to its last heartbeat, less its outages and refusals."""
    spans = []
    outages = history.coverage_gaps(cache)
    for run in history.runs(cache):
        if run.synced is None:
            continue
        cuts = sorted((g.since, g.until) for g in outages if g.run_id == run.id)
        start = run.synced
        for since, until in cuts:
            if since > start:
                spans.append((start, since))
            start = max(start, until)
        if run.stopped > start:
            spans.append((start, run.stopped))
    return spans


def check(cache: Cache, collected: Collected, *, spans: list[tuple[float, float]], configs: dict[int, TracerConfig]) -> tuple[int, list[Disagreement]]:
    """How many logged writes were checked, and where the log and the recording disagree, in time order. Each write is
    judged against the version the log showed last (the cache's, for an object's first write): one missing row is one
    disagreement, not one for every write after it."""
    cfg = configs[max(configs)] if configs else None
    checked, found = 0, []
    for key, logged in collected.in_order():
        options = None if cfg is None else cfg.get(key.gvk)
        if options is None:
            continue
        shown: Version | None = None
        seen = False  # whether the log showed the object (else the cache's version is the one before)
        for event in logged:
            if not any(a + SLACK < event.at < b - SLACK for a, b in spans):
                seen = False
                continue
            checked += 1
            known = shown if seen else _cached(cache, event)
            problem, shown, seen = _disagreement(cache, event, known, skip_owned=options.skip_owned)
            if problem is not None:
                found.append(Disagreement(event.at, key, problem))
    return checked, sorted(found, key=lambda d: (d.at, d.key))


def _cached(cache: Cache, event: Logged) -> Version | None:
    before = store.version_before(cache, event.key, recv=event.at)
    if before is None or before.op == DELETED or before.spec_hash is None:
        return None
    return Version.of(uid=before.uid, spec_hash=before.spec_hash, body=before.body)


def _disagreement(cache: Cache, event: Logged, known: Version | None, *, skip_owned: bool) -> tuple[str | None, Version | None, bool]:
    """What is wrong with the recording of one logged write (None: nothing), the version the log shows after it, and
    whether it shows one."""
    if event.verb == "delete":
        if event.removed is False or known is None:
            return None, known, True
        return _expect(cache, event, op=DELETED, spec_hash=None, what=f"the deletion of uid {known.live.uid}"), None, True
    obj = object_of(event, known)  # the object shown, or the last version with a Scale's replicas put in
    if obj is None:
        return None, None, False
    head = sanitize.read_head(obj, event.key.gvk)
    if is_skipped_owned(head, skip_owned=skip_owned):
        return None, known, True
    body = sanitize.sanitize(obj, gvk=event.key.gvk)
    spec_hash = hashing.spec_hash(obj.get("spec"))
    after = Version.of(uid=head.uid, spec_hash=spec_hash, body=body)
    decision = decide_applied(known=None if known is None else known.live, uid=head.uid, spec_hash=spec_hash,
                              meta_hash=after.live.meta_hash, data_hash=after.live.data_hash)
    if decision.change is None:
        return None, after, True
    op = OP_OF_CHANGE[decision.change]
    return _expect(cache, event, op=op, spec_hash=spec_hash if op == 0 else None, what=f"a {decision.change} change"), after, True


def _expect(cache: Cache, event: Logged, *, op: int, spec_hash: int | None, what: str) -> str | None:
    """None when the cache holds the row near the logged time; else what is wrong."""
    rows = store.rows_near(cache, event.key, op=op, since=event.at - SLACK, until=event.at + SLACK)
    if any(spec_hash is None or r.spec_hash == spec_hash for r in rows):
        return None
    later = store.rows_near(cache, event.key, op=op, since=event.at + SLACK, until=float("inf"))
    other = next((r for r in later if spec_hash is None or r.spec_hash == spec_hash), None)
    if other is not None and op == DELETED:
        return f"{what} was logged at {format_time(event.at)} and recorded at {format_time(other.ts)}"
    return f"{what} was logged (line {event.line}) and the recording has none within {SLACK:.0f}s: the recorder missed it"
