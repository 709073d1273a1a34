"""The reliability suites' judge, judged: ``reliability_support.compare`` on small made-up histories.

Each case builds what ``compare`` reads in the suites — the truth (``Change``), the cache's run rows and
committed event rows, and a trace as ``traceformat.read_trace`` returns it — for one Deployment name or two,
and checks that a right recording gets no problem (however its lifetimes line up with the truth's) and that
a wrong one gets exactly the problem it has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reliability_support import Change, Recorded, RunRow, compare

from kubectl_sktrace.trace.hashing import spec_hash

GVK = "apps/v1.Deployment"
NS = "shop"
SPECS = {n: {"replicas": n} for n in range(1, 6)}
H = {n: spec_hash(spec) for n, spec in SPECS.items()}


def _obj(name: str, spec: int | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS}}
    if spec is not None:
        obj["spec"] = SPECS[spec]
    return obj


@dataclass
class History:
    """A made-up cluster and what a recorder made of it."""

    runs: list[RunRow] = field(default_factory=list)
    truth: list[Change] = field(default_factory=list)
    rows: list[Recorded] = field(default_factory=list)
    exported: list[tuple[int, str, str, int | None]] = field(default_factory=list)  # (ts, op, name, spec)

    def run(self, started: float, synced: float | None, stopped: float, *, clean: bool = True) -> int:
        self.runs.append(RunRow(started, synced, stopped, clean, len(self.runs) + 1))
        return len(self.runs)

    def change(self, t: float, kind: str, name: str, uid: str, spec: int | None, *, created: float | None = None) -> None:
        self.truth.append(Change(t, kind, GVK, NS, name, uid, None if spec is None else H[spec], created))

    def record(self, run: int, ts: int, recv: float, op: str, name: str, uid: str, spec: int | None = None, *,
               inferred: bool = False, row: bool = True) -> None:
        """One change as the recorder committed it (``row``) and exported it."""
        if row:
            self.rows.append(Recorded(run, ts, recv, GVK, NS, name, uid, op == "deleted", inferred,
                                      None if spec is None else H[spec]))
        self.exported.append((ts, op, name, spec))

    def trace(self) -> Any:
        """One event per change, in time order (a deletion and a re-creation in one second stay in order)."""
        events: list[dict[str, Any]] = []
        index: dict[str, dict[str, int]] = {}
        for ts, op, name, spec in sorted(self.exported, key=lambda e: e[0]):
            if spec is not None:
                events.append({"ts": ts, "applied_objs": [_obj(name, spec)], "deleted_objs": []})
                index.setdefault(GVK, {})[f"{NS}/{name}"] = H[spec]
            else:
                events.append({"ts": ts, "applied_objs": [], "deleted_objs": [_obj(name)]})
        return Trace(events, index, {})

    def problems(self) -> list[str]:
        return compare(self.truth, self.trace(), self.runs, rows=self.rows, namespaces=frozenset([NS])).problems


@dataclass
class Trace:
    events: list[dict[str, Any]]
    index: dict[str, dict[str, int]]
    pod_lifecycles: dict[Any, Any]


WEB = f"('{GVK}', '{NS}', 'web')"


# --- a right recording gets no problem ------------------------------------------------------------------


def test_an_object_that_lived_and_died_offline_does_not_take_its_successors_history() -> None:
    """A killed run, an offline gap in which ``web`` is made and deleted (no recorder could see it) and made
    again, a restart that lists the successor (stamped at its creationTimestamp) and watches it go."""
    h = History()
    h.run(100.0, 100.2, 103.0, clean=False)
    h.run(110.0, 110.3, 115.0)
    h.change(105.0, "ADDED", "web", "uid-a", 1, created=105.0)
    h.change(106.0, "DELETED", "web", "uid-a", 1, created=105.0)
    h.change(107.0, "ADDED", "web", "uid-b", 2, created=107.0)
    h.change(113.5, "DELETED", "web", "uid-b", 2, created=107.0)
    h.record(2, 107, 110.05, "applied", "web", "uid-b", 2, inferred=True)
    h.record(2, 113, 113.52, "deleted", "web", "uid-b")
    # (the old checker gave uid-a the export's lifetime: "deleted at 106.00 but exported at 113" and
    # "the object made at 107.00 ... is missing from the export")
    assert h.problems() == []


def test_a_successor_made_in_the_same_second_is_told_apart_by_its_spec() -> None:
    """Both lifetimes observable (the recorder was watching), deleted and re-made within one second: the
    export's two lifetimes go to the true ones whose specs they carry."""
    h = History()
    h.run(100.0, 100.2, 110.0)
    h.change(101.3, "ADDED", "web", "uid-a", 1, created=101.0)
    h.change(104.1, "DELETED", "web", "uid-a", 1, created=101.0)
    h.change(104.2, "ADDED", "web", "uid-b", 2, created=104.0)
    h.record(1, 101, 101.31, "applied", "web", "uid-a", 1)
    h.record(1, 104, 104.11, "deleted", "web", "uid-a")
    h.record(1, 104, 104.21, "applied", "web", "uid-b", 2)
    assert h.problems() == []


def test_what_a_killed_run_may_have_lost_is_not_required() -> None:
    """A spec version made just before a kill, no later change of the kind committed by that run, replaced
    before the next run listed: no recorder surely had it, so its absence is no defect."""
    h = History()
    h.run(100.0, 100.2, 104.8, clean=False)
    h.run(110.0, 110.3, 115.0)
    h.change(101.2, "ADDED", "web", "uid-a", 1, created=101.0)
    h.change(104.5, "MODIFIED", "web", "uid-a", 2, created=101.0)
    h.change(107.0, "MODIFIED", "web", "uid-a", 3, created=101.0)
    h.record(1, 101, 101.21, "applied", "web", "uid-a", 1)
    h.record(2, 110, 110.05, "applied", "web", "uid-a", 3, inferred=True)
    assert h.problems() == []


def test_deletions_found_at_a_restart_are_stamped_at_the_run_start() -> None:
    """A deletion made while the restart's first lists ran is stamped at the run's start, before it happened."""
    h = History()
    h.run(100.0, 100.2, 103.0)
    h.run(108.9, 109.6, 115.0)
    h.change(101.2, "ADDED", "web", "uid-a", 1, created=101.0)
    h.change(109.3, "DELETED", "web", "uid-a", 1, created=101.0)
    h.record(1, 101, 101.21, "applied", "web", "uid-a", 1)
    h.record(2, 108, 109.5, "deleted", "web", "uid-a", inferred=True)
    assert h.problems() == []


# --- a wrong recording gets its problem ---------------------------------------------------------------------


def _watched() -> History:
    """One run watching throughout: ``web`` made, changed twice, deleted; ``api`` made and changed."""
    h = History()
    h.run(100.0, 100.3, 120.0)
    h.change(101.2, "ADDED", "web", "uid-w", 1, created=101.0)
    h.change(102.3, "ADDED", "api", "uid-a", 1, created=102.0)
    h.change(104.5, "MODIFIED", "web", "uid-w", 2, created=101.0)
    h.change(108.1, "MODIFIED", "web", "uid-w", 3, created=101.0)
    h.change(112.4, "DELETED", "web", "uid-w", 3, created=101.0)
    h.change(113.3, "MODIFIED", "api", "uid-a", 2, created=102.0)
    return h


def _record_watched(h: History, *, skip: tuple[float, ...] = (), late: dict[float, int] | None = None) -> History:
    """What a right recorder records of ``_watched()``, minus the changes made at ``skip``; ``late`` restamps."""
    for c in h.truth:
        if c.t in skip:
            continue
        ts = (late or {}).get(c.t, int(c.t))
        spec = next(n for n, v in H.items() if v == c.spec_hash)
        if c.type == "DELETED":
            h.record(1, ts, c.t + 0.01, "deleted", c.name, c.uid)
        else:
            h.record(1, ts, c.t + 0.01, "applied", c.name, c.uid, spec)
    return h


def test_a_right_recording_of_a_watched_history_has_no_problem() -> None:
    assert _record_watched(_watched()).problems() == []


def test_a_missed_deletion_is_caught() -> None:
    assert _record_watched(_watched(), skip=(112.4,)).problems() == [
        f"{WEB}: deletion at 112.40 missed",
        f"{WEB}: at the end it is live in the export but gone from the cluster",
    ]


def test_a_deletion_stamped_after_a_later_watched_change_is_caught() -> None:
    """``api``'s change of 113.3 was committed at 113: the watch had delivered ``web``'s deletion before it."""
    assert _record_watched(_watched(), late={112.4: 114}).problems() == [
        f"{WEB}: deleted at 112.40 but exported at 114 (bounds 112..113)",
    ]


def test_an_invented_deletion_is_caught() -> None:
    h = _record_watched(_watched())
    h.record(1, 115, 115.0, "deleted", "api", "uid-a")
    assert h.problems() == [
        f"('{GVK}', '{NS}', 'api'): deletion at 115 invented (the object still exists)",
        f"('{GVK}', '{NS}', 'api'): at the end it exists in the cluster but not in the export",
    ]


def test_a_lost_spec_version_is_caught() -> None:
    assert _record_watched(_watched(), skip=(104.5,)).problems() == [
        f"{WEB}: the spec version of 104.50 (hash {H[2]}) was lost",
    ]


def test_an_invented_object_is_caught() -> None:
    h = _record_watched(_watched())
    h.record(1, 106, 106.0, "applied", "ghost", "uid-g", 4)
    assert h.problems() == [
        f"('{GVK}', '{NS}', 'ghost'): exported as applied at 106 but no such object existed then",
        f"('{GVK}', '{NS}', 'ghost'): at the end it is live in the export but gone from the cluster",
    ]


def test_an_invented_spec_is_caught() -> None:
    h = _record_watched(_watched())
    h.record(1, 110, 110.0, "applied", "web", "uid-w", 5)
    assert h.problems() == [f"{WEB}: spec hash {H[5]} exported at 110, a spec the object never had"]


def test_an_object_no_recorder_could_see_is_never_offered_to_the_export() -> None:
    """The export shows ``web`` made in an offline gap and gone before the next start: only an object that
    lived and died in that gap has that name, so the export invented it."""
    h = History()
    h.run(100.0, 100.2, 103.0)
    h.run(110.0, 110.3, 115.0)
    h.change(105.0, "ADDED", "web", "uid-a", 1, created=105.0)
    h.change(106.0, "DELETED", "web", "uid-a", 1, created=105.0)
    h.record(2, 105, 110.05, "applied", "web", "uid-a", 1, inferred=True)
    h.record(2, 110, 110.05, "deleted", "web", "uid-a", inferred=True)
    assert h.problems() == [f"{WEB}: exported as applied at 105 but no such object existed then"]


def test_an_object_listed_at_a_restart_must_be_exported() -> None:
    h = History()
    h.run(100.0, 100.2, 103.0)
    h.run(110.0, 110.3, 115.0)
    h.change(105.0, "ADDED", "web", "uid-a", 1, created=105.0)
    assert h.problems() == [
        f"{WEB}: the object made at 105.00 (never deleted) is missing from the export",
        f"{WEB}: at the end it exists in the cluster but not in the export",
    ]
