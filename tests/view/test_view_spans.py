"""The time axis's spans say what an audit log filled of a blind stretch, in export's words (``advice.filled_words``)."""

from __future__ import annotations

from kubectl_sktrace.export.advice import Filled
from kubectl_sktrace.store.history import CoverageGap, Run
from kubectl_sktrace.view.spans import timeline_spans

T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z
RUNS = [Run(id=1, started=T0, synced=T0 + 1, stopped=T0 + 600, clean=True, config=""),
        Run(id=2, started=T0 + 1200, synced=T0 + 1201, stopped=T0 + 1800, clean=True, config="")]
OUTAGE = CoverageGap(run_id=2, since=T0 + 1300, until=T0 + 1360, cause="API unreachable", kinds=("apps/v1.Deployment",))


def _named(fills: list[Filled]) -> dict[str, str]:
    spans = timeline_spans(runs=RUNS, gaps=[OUTAGE], unrecorded=[], running=False, fills=fills)
    return {s.category: s.name for s in spans if s.category != "run"}


def test_a_stretch_no_log_filled_is_named_as_before() -> None:
    assert _named([]) == {"offline": "no recorder ran: 2027-01-15T08:10:00Z–08:20:00Z (10m00s)",
                          "outage": "API unreachable 2027-01-15T08:21:40Z–08:22:40Z (1m00s): apps/v1.Deployment"}


def test_the_time_between_runs_and_a_kind_s_outage_say_what_the_log_filled() -> None:
    between = Filled(T0 + 600, T0 + 1200, T0 + 600, T0 + 1100, ("RequestResponse",), 4, 1)
    outage = Filled(T0 + 1300, T0 + 1360, None, None, ("Metadata",), 0, 0, "apps/v1.Deployment")
    other_kind = Filled(T0 + 1300, T0 + 1360, T0 + 1300, T0 + 1360, ("RequestResponse",), 9, 0, "v1.ConfigMap")
    named = _named([between, outage, other_kind])
    assert named["offline"] == ("no recorder ran: 2027-01-15T08:10:00Z–08:20:00Z (10m00s); filled from the audit log "
                                "(RequestResponse, 4 events); 2027-01-15T08:18:20Z–08:20:00Z not in the log: reconstructed; "
                                "1 object the log does not account for: reconstructed")
    assert named["outage"] == ("API unreachable 2027-01-15T08:21:40Z–08:22:40Z (1m00s): apps/v1.Deployment; filled from the "
                               "audit log (Metadata, 0 events); the log covers none of it: reconstructed")
