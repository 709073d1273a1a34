"""progress: the lines a person sees on stderr, on a terminal and in a log."""

from __future__ import annotations

import io
import logging

from kubectl_sktrace.model import GVK, POD
from kubectl_sktrace.reconciliation import Reconciliation
from kubectl_sktrace.record.ingest import KindStats
from kubectl_sktrace.record.progress import LOG_EVERY, Progress, routed_logs

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
        "initial sync done: 13,200 objects in 3.2s; recording changes (SIGINT or SIGTERM stops it)\n"
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
        "\r\x1b[Ksyncing: Deployment 800 ✓, Pod 0 forbidden"
        "\r\x1b[Kinitial sync done: 800 objects in 1.0s; recording changes (Ctrl-C to stop)\n"
        "\r\x1b[Krecording: 5 events, 7 pods tracked, 1.5 events/s (watch: 3 updates/s)"
        "\r\x1b[K"
    )


def test_a_warning_clears_the_status_line_and_the_status_is_drawn_again_below_it() -> None:
    out = io.StringIO()
    view = Progress(stream=out, tty=True, quiet=False, clock=Clock())
    view.live(events=5, pods=7, rate=1.5, updates_rate=3.0, left=None)
    view.warn("API unreachable")
    view.note("API unreachable since 10:46:31Z: recovered")
    view.close()
    status = "recording: 5 events, 7 pods tracked, 1.5 events/s (watch: 3 updates/s)"
    assert out.getvalue() == (
        f"\r\x1b[K{status}"
        f"\r\x1b[KWarning: API unreachable\n{status}"
        f"\r\x1b[KAPI unreachable since 10:46:31Z: recovered\n{status}"
        "\r\x1b[K"
    )


def test_the_status_line_is_cut_to_the_terminal_width() -> None:
    out = io.StringIO()
    view = Progress(stream=out, tty=True, quiet=False, clock=Clock(), columns=lambda: 40)
    view.live(events=12345, pods=7, rate=1.5, updates_rate=3.0, left=None)
    assert out.getvalue() == "\r\x1b[Krecording: 12,345 events, 7 pods track…"
    assert len(out.getvalue()) - len("\r\x1b[K") == 39


def test_quiet_leaves_out_everything() -> None:
    out = io.StringIO()
    view = Progress(stream=out, tty=True, quiet=True, clock=Clock())
    view.kind_progress(DEPLOY, KindStats(listed=1, initial_done=True))
    view.synced(1.0)
    view.live(events=5, pods=7, rate=1.5, updates_rate=3.0, left=3)
    view.warn("something")
    view.note("something else")
    view.close()
    assert out.getvalue() == ""


def test_log_records_go_above_the_status_line_while_routed() -> None:
    out = io.StringIO()
    view = Progress(stream=out, tty=True, quiet=False, clock=Clock())
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("Warning: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        view.live(events=5, pods=7, rate=1.5, updates_rate=3.0, left=None)
        with routed_logs(view):
            logging.getLogger("kubectl_sktrace.somewhere").warning("retrying in %.1fs", 1.6)
        view.close()
    finally:
        root.removeHandler(handler)
    status = "recording: 5 events, 7 pods tracked, 1.5 events/s (watch: 3 updates/s)"
    assert out.getvalue() == f"\r\x1b[K{status}\r\x1b[KWarning: retrying in 1.6s\n{status}\r\x1b[K"
    assert handler.stream is out


def _report() -> Reconciliation:
    from kubectl_sktrace.model import ObjKey
    from kubectl_sktrace.reconciliation import DELETED, OfflineChange, summarize

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
    assert out.getvalue() == "initial sync done: 0 objects in 1.0s; recording changes (SIGINT or SIGTERM stops it)\n" + REPORT_LINES


def test_on_a_terminal_the_report_goes_above_the_status_line() -> None:
    out = io.StringIO()
    view = Progress(stream=out, tty=True, quiet=False, clock=Clock())
    view.live(events=5, pods=7, rate=1.5, updates_rate=3.0, left=None)
    view.reconciled(_report())
    status = "recording: 5 events, 7 pods tracked, 1.5 events/s (watch: 3 updates/s)"
    assert out.getvalue() == f"\r\x1b[K{status}\r\x1b[K" + REPORT_LINES + status


def test_quiet_shows_no_report() -> None:
    out = io.StringIO()
    Progress(stream=out, tty=False, quiet=True, clock=Clock()).reconciled(_report())
    assert out.getvalue() == ""


# -- the live rates: over the last window, as of each redraw ----------------------------------------------------

import pytest  # noqa: E402

from kubectl_sktrace.record.progress import Rates  # noqa: E402


def test_a_burst_shows_at_the_next_redraw_not_after_a_whole_window() -> None:
    rates = Rates(window=2.0, now=0.0)
    assert rates.sample(0.5, 0, 0) == (0.0, 0.0)
    assert rates.sample(1.0, 6, 12) == (6.0, 12.0)  # 6 events in the first second: 6/s at once, not 0.0 until 2 s passed


def test_the_rate_is_taken_over_the_window_and_falls_as_a_quiet_spell_goes_on() -> None:
    rates = Rates(window=2.0, now=0.0)
    for t in range(1, 11):
        rates.sample(float(t), 10 * t, 0)  # 10 events/s
    assert rates.sample(11.0, 110, 0)[0] == pytest.approx(10.0)
    assert rates.sample(12.0, 110, 0)[0] == pytest.approx(5.0)  # one quiet second of two
    assert rates.sample(13.0, 110, 0)[0] == pytest.approx(0.0)


# -- the end of a run: an outage the run did not outlive was not caught up ----------------------------------------

from kubectl_sktrace.record.summary import Summary, coverage_lines  # noqa: E402
from kubectl_sktrace.store.history import CoverageGap  # noqa: E402


def test_an_outage_the_run_did_not_outlive_is_not_said_to_be_caught_up() -> None:
    t0 = 1_800_000_000.0
    summary = Summary(cache="c.db", run_id=1, started=t0, stopped=t0 + 60, synced=t0 + 1, events=3, rows=(), warnings=(),
                      outages=(CoverageGap(1, t0 + 10, t0 + 20, "API unreachable", ("apps/v1.Deployment",)),
                               CoverageGap(1, t0 + 40, t0 + 60, "API unreachable", ("apps/v1.Deployment",))))
    first, last = coverage_lines(summary)
    assert first.endswith(": changes made then were caught up afterwards, not seen live.")
    assert last.startswith("Outage: API unreachable 2027-01-15T08:00:40Z–08:01:00Z (20s; apps/v1.Deployment): not over when the run ended")
    assert "changes made then were not recorded (the next start reconciles them from its lists)." in last
    assert "caught up" not in last
