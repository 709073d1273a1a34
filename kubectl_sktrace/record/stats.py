"""The counters of one kind that the progress line and the end-of-run summary show."""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_sktrace.trace import revisions


@dataclass
class KindStats:
    """Counters per kind for the progress line and the end-of-run summary."""

    listed: int = 0
    applied: int = 0  # new objects and spec changes
    metadata: int = 0  # label, annotation, owner-reference changes (the spec unchanged)
    data: int = 0  # data changes of spec-less kinds
    deleted_live: int = 0
    deleted_offline: int = 0
    caught_up: int = 0  # changes found after an API outage (applied or deleted), not seen live
    lifecycles: int = 0
    pages: int = 0
    initial_done: bool = False
    failed: str | None = None

    def count(self, change: str | None) -> None:
        """One version recorded, of this kind of change (``trace/revisions``)."""
        if change == revisions.METADATA:
            self.metadata += 1
        elif change == revisions.DATA:
            self.data += 1
        else:
            self.applied += 1

    def count_deleted(self, *, caught_up: bool, offline: bool) -> None:
        """One deletion recorded: found after an outage, made while offline, or seen live."""
        if caught_up:
            self.caught_up += 1
        elif offline:
            self.deleted_offline += 1
        else:
            self.deleted_live += 1
