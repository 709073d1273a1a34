"""progress: the lines a person sees on stderr, on a terminal and in a log."""

from __future__ import annotations

import io

from kubectl_sktrace.model import GVK, POD
from kubectl_sktrace.progress import LOG_EVERY, Progress
from kubectl_sktrace.ingest import KindStats
from kubectl_sktrace.reconciliation import Reconciliation

DEPLOY = GVK("apps", "v1", "Deployment")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_without_a_terminal() -> None:
    out, clock = io.StringIO(), Clock()
    view = Progress(stream=out, tty=False, quiet=False, clock=clock)
    view.kind_progress(DEPLOY, KindStats(listed=500))
    view.kind_progress(DEPLOY, KindStats(listed=1200, initial_done=True))
    view.kind_progress(DEPLOY, KindStats(listed=1200, initial_done=True))
    view.kind_progress(POD, KindStats(listed=12000, initial_done=True))
    view.synced(3.25)
    view.live(events=10, pods=12000, rate=2.5, updates_rate=900.0, left=None)  # too soon after the start for a log line
    clock.now = LOG_EVERY
    view.live(events=1234, pods=12001, rate=41.0, updates_rate=14950.4, left=95)
    view.warn("kind v1.Foo is not served")
    view.close()
    assert out.getvalue() == (
        "listed apps/v1.Deployment: 1,200 objects\n"
        "listed v1.Pod: 12,000 objects\n"
        "initial sync done: 13,200 objects in 3.2s; recording changes (Ctrl-C to stop)\n"
        "recording: 1,234 events, 12,001 pods tracked, 41.0 events/s (watch: 14,950 updates/s), 1m35s left\n"
        "Warning: kind v1.Foo is not served\n"
    )


def test_one_line_rewritten_on_a_terminal() -> None:
    out = io.StringIO()
    view = Progress(stream=out, tty=True, quiet=False, clock=Clock())
    view.kind_progress(DEPLOY, KindStats(listed=500))
    view.kind_progress(POD, KindStats(listed=0, failed="forbidden"))
    view.kind_progress(DEPLOY, KindStats(listed=800, initial_done=True))
    view.synced(1.0)
    view.live(events=5, pods=7, rate=1.5, updates_rate=3.0, left=None)
    view.close()
    assert out.getvalue() == (
        "\r\x1b[Ksyncing: Deployment 500…"
        "\r\x1b[Ksyncing: Deployment 500…, Pod 0 forbidden"
        "\r\x1b[Ksyncing: Deployment 800 ✓, Pod 0 forbidden\n"
        "initial sync done: 800 objects in 1.0s; recording changes (Ctrl-C to stop)\n"
        "\r\x1b[Krecording: 5 events, 7 pods tracked, 1.5 events/s (watch: 3 updates/s)\n"
    )


def test_quiet_keeps_only_warnings() -> None:
    out = io.StringIO()
    view = Progress(stream=out, tty=True, quiet=True, clock=Clock())
    view.kind_progress(DEPLOY, KindStats(listed=1, initial_done=True))
    view.synced(1.0)
    view.live(events=5, pods=7, rate=1.5, updates_rate=3.0, left=3)
    view.warn("something")
    view.close()
    assert out.getvalue() == "Warning: something\n"


def _report() -> Reconciliation:
    from kubectl_sktrace.reconciliation import DELETED, OfflineChange, summarize
    from kubectl_sktrace.model import ObjKey

    gone = OfflineChange(ObjKey(DEPLOY, "web", "old"), found=1_800_000_100.0, before=1_800_000_000.0)
    return summarize(run_id=2, offline_since=1_800_000_000.0, offline_until=1_800_000_100.0, synced=1_800_000_101.0,
                     changes=[(DELETED, gone)], pods=[])


REPORT_LINES = (
    "Offline 2027-01-15T08:00:00Z → 08:01:40 (1m40s); found by this run's initial lists:\n"
    "  apps/v1.Deployment deleted while offline (1):\n"
    "    web/old  last seen 08:00:00 → found gone 08:01:40\n"
)


def test_the_reconciliation_is_a_block_of_lines_after_the_sync() -> None:
    out = io.StringIO()
    view = Progress(stream=out, tty=False, quiet=False, clock=Clock())
    view.synced(1.0)
    view.reconciled(_report())
    assert out.getvalue() == "initial sync done: 0 objects in 1.0s; recording changes (Ctrl-C to stop)\n" + REPORT_LINES


def test_on_a_terminal_the_open_line_ends_before_the_report() -> None:
    out = io.StringIO()
    view = Progress(stream=out, tty=True, quiet=False, clock=Clock())
    view.live(events=5, pods=7, rate=1.5, updates_rate=3.0, left=None)
    view.reconciled(_report())
    assert out.getvalue() == "\r\x1b[Krecording: 5 events, 7 pods tracked, 1.5 events/s (watch: 3 updates/s)\n" + REPORT_LINES


def test_quiet_shows_no_report() -> None:
    out = io.StringIO()
    Progress(stream=out, tty=False, quiet=True, clock=Clock()).reconciled(_report())
    assert out.getvalue() == ""
