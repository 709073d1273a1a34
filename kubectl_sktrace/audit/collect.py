"""A log's lines gathered into what backfill plans from: each tracked object's writes, pods' deletions, the time each
source covers, and the lines that gave nothing, counted (bad ones with their line number).

Memory follows what the log changed of the tracked kinds (their writes, with the objects the level shows), never the
log's length: lines are read one at a time (``sources``), and the lines of reads and of kinds not tracked are dropped
before they are parsed (``lines``). The same line met twice (overlapping rotated files) is taken once, by its
``auditID``. A source's time range is read from the first and last ``stageTimestamp`` of its lines, as strings (the
API server writes them in one form, which sorts as the times do).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from kubectl_sktrace.audit import forms
from kubectl_sktrace.audit.lines import MAX_LINE_BYTES, BadLine, Logged, Wanted, parse_time, read_line
from kubectl_sktrace.audit.sources import TOO_LONG, Source, read_lines
from kubectl_sktrace.model import POD, ObjKey

MAX_BAD_SHOWN = 10
_STAGE_AT = re.compile(rb'"stageTimestamp":"([0-9T:.+Z-]+)"')


@dataclass
class Collected:
    """What the log gives, gathered."""

    writes: dict[ObjKey, list[Logged]] = field(default_factory=dict)  # per object, in the order read
    pod_deletions: list[Logged] = field(default_factory=list)
    lines: int = 0
    read_bytes: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    bad: int = 0
    bad_shown: list[tuple[str, int, str]] = field(default_factory=list)  # (source, line, reason) of the first bad lines
    spans: list[tuple[float, float]] = field(default_factory=list)  # each source's first and last time
    _seen: set[tuple[str, ObjKey]] = field(default_factory=set)

    def add(self, record: Logged) -> None:
        if record.audit_id:
            if (record.audit_id, record.key) in self._seen:
                self.skipped["repeated lines"] += 1
                return
            self._seen.add((record.audit_id, record.key))
        if record.key.gvk == POD:
            if record.verb == "delete":
                self.pod_deletions.append(record)
            return
        self.writes.setdefault(record.key, []).append(record)

    def in_order(self) -> Iterator[tuple[ObjKey, list[Logged]]]:
        """Each object's writes in time order (ties kept in the order read)."""
        for key in sorted(self.writes):
            yield key, sorted(self.writes[key], key=lambda r: r.at)

    def bad_line(self, source: str, bad: BadLine) -> None:
        self.bad += 1
        if len(self.bad_shown) < MAX_BAD_SHOWN:
            self.bad_shown.append((source, bad.line, bad.reason))


def collect(sources: Iterable[Source], *, wanted: Wanted, lines_of: Callable[[Source], Iterator[tuple[int, bytes]]] = read_lines) -> Collected:
    """Every source read, line by line, into one ``Collected``."""
    out = Collected()
    for source in sources:
        first: bytes | None = None
        last: bytes | None = None
        for number, raw in lines_of(source):
            out.lines += 1
            out.read_bytes += len(raw) + 1
            if raw is TOO_LONG:
                out.bad_line(source.name, BadLine(number, f"longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB"))
                continue
            for event in forms.unwrap(raw):
                stamp = _STAGE_AT.search(event, max(0, len(event) - 400)) or _STAGE_AT.search(event)
                if stamp is not None:
                    at = stamp.group(1)
                    first = at if first is None or at < first else first
                    last = at if last is None or at > last else last
                _take(out, source.name, read_line(event, wanted=wanted, line=number))
        _span(out, first, last)
    return out


def _take(out: Collected, source: str, given: tuple[Logged, ...] | str | BadLine) -> None:
    if isinstance(given, BadLine):
        out.bad_line(source, given)
    elif isinstance(given, str):
        out.skipped[given] += 1
    else:
        for record in given:
            out.add(record)


def _span(out: Collected, first: bytes | None, last: bytes | None) -> None:
    if first is None or last is None:
        return
    try:
        out.spans.append((parse_time(first.decode()), parse_time(last.decode())))
    except ValueError:
        pass
