"""``export --transform`` and ``export --anonymize``: an export's objects rewritten as skctl's export rewrites them.

SimKube's tracer (``sk-tracer``'s ``TraceStore::collect_events``) applies the program to every event of its
history before it filters, ``@t`` counting from the export's start: the filters then see the objects as the
program left them, the start state is made of the objects before the start as transformed at their own times,
and the synthetic first event is written even when the program emptied it. Here:

- The filters decide per object, as export always does, on the object's last version before the window's end,
  now as the program leaves it (``ProgramView``, applied at that version's time): its namespace, labels and
  owners after the program. An object whose last version the program deletes is left out of the trace whole.
- Each event's objects are decoded, the program applied (the start state's objects each at its own time, as
  SimKube does; the first event kept even when emptied; any other event it empties dropped), SimKube's
  reference rules checked on what remains, then the anonymizer applied (``RewritingWriter``), so that the
  program's selectors and the filters see the names as recorded.
- ``index`` and ``pod_lifecycles`` are export's own, then renamed by the anonymizer: as ``transform`` keeps them.

Bounded as export is: one event at a time. A msgpack trace needs its event count first, and the program may drop
events, so the events are spooled to a temporary file (``format.EventSpool``) and written after the count.
"""

from __future__ import annotations

from collections import Counter
from typing import IO, Any

from kubectl_sktrace.export.events import apply_order
from kubectl_sktrace.store import history
from kubectl_sktrace.trace.reports import validation
from kubectl_sktrace.trace.files.format import FORMAT_VERSION, EventSpool, Trace
from kubectl_sktrace.trace.files.textformat import TextTraceWriter
from kubectl_sktrace.trace.sanitize import deleted_stub, object_key
from kubectl_sktrace.trace.skel import Program, Transformer
from kubectl_sktrace.trace.transform import Rewriter


def _decoded(row: history.StoredEvent, *, keep_status: bool) -> dict[str, Any]:
    return (row.body if keep_status else row.without_status()) or {}


class ProgramView:
    """An object's stored version as the program leaves it, at that version's time: what the filters judge.
    Counts nothing: the counters are those of the events written."""

    def __init__(self, program: Program, *, start_ts: int, keep_status: bool) -> None:
        self._transformer = Transformer(program, start_ts=start_ts)
        self._keep_status = keep_status

    def body(self, row: history.StoredEvent) -> dict[str, Any] | None:
        """The object transformed; None when the program deletes it."""
        event = self._transformer.apply({"ts": row.ts, "applied_objs": [_decoded(row, keep_status=self._keep_status)], "deleted_objs": []})
        return None if event is None else event["applied_objs"][0]


def namespace_of(body: dict[str, Any]) -> str:
    """The namespace an object names (``""``: none, cluster-scoped)."""
    metadata = body.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    return namespace if isinstance(namespace, str) else ""


class RewritingWriter:
    """The events of an export through the program and the anonymizer (module docstring), one at a time, in ``fmt``;
    counts what it wrote. ``state`` first, then ``event`` for each later one, then ``finish``."""

    def __init__(self, rewriter: Rewriter, *, fmt: str, stream: IO[bytes], config: dict[str, Any], keep_status: bool,
                 rules: validation.ReferenceRules | None, errors: Counter[str]) -> None:
        self.rewriter = rewriter
        rewriter.start(config)
        self._stream = stream
        self._config = config
        self._spool = EventSpool() if fmt == "sktrace" else None
        self._text = None if self._spool is not None else TextTraceWriter(stream, fmt=fmt, config=config)
        self._keep_status = keep_status
        self._rules = rules
        self._errors = errors
        self.groups = self.applied = self.deleted = 0
        self.last_ts: int | None = None

    def state(self, ts: int, rows: list[history.StoredEvent]) -> int:
        """The synthetic first event: each object transformed at its own time; written even when left empty."""
        applied = []
        for row in sorted(rows, key=apply_order):
            event = self.rewriter.transform({"ts": row.ts, "applied_objs": [_decoded(row, keep_status=self._keep_status)], "deleted_objs": []})
            if event is not None:
                applied.extend(event["applied_objs"])
        self._write({"ts": ts, "applied_objs": applied, "deleted_objs": []})
        return len(applied)

    def event(self, ts: int, rows: list[history.StoredEvent]) -> int:
        """A later event; nothing when the program leaves it no object. The number of objects it applies."""
        ordered = sorted((r for r in rows if not r.deleted), key=apply_order)
        event = self.rewriter.transform({
            "ts": ts, "applied_objs": [_decoded(r, keep_status=self._keep_status) for r in ordered],
            "deleted_objs": [deleted_stub(r.key) for r in rows if r.deleted],
        })
        if event is None:
            return 0
        self.groups += 1
        self.applied += len(event["applied_objs"])
        self.deleted += len(event["deleted_objs"])
        self.last_ts = ts
        self._write(event)
        return len(event["applied_objs"])

    def _write(self, event: dict[str, Any]) -> None:
        if self._rules is not None:
            for obj in event["applied_objs"]:
                key = object_key(obj)
                if key is not None:
                    for code in self._rules.missing_codes(obj, key=key):
                        self._errors[code] += 1
            for obj in event["deleted_objs"]:
                key = object_key(obj)
                if key is not None:
                    self._rules.deleted(key)
        event = self.rewriter.anonymize(event)
        if self._spool is not None:
            self._spool.add(event)
        else:
            assert self._text is not None
            self._text.write_event(ts=event["ts"], applied=event["applied_objs"], deleted=event["deleted_objs"])

    def finish(self, *, index: dict[str, dict[str, int]], pod_lifecycles: Any) -> None:
        rest = self.rewriter.rest(Trace(version=FORMAT_VERSION, config=self._config, events=[], index=index, pod_lifecycles=pod_lifecycles))
        if self._spool is None:
            assert self._text is not None
            self._text.finish(index=rest.index, pod_lifecycles=rest.pod_lifecycles)
            return
        with self._spool:
            self._spool.write_trace(self._stream, version=rest.version, config=rest.config, index=rest.index,
                                    pod_lifecycles=rest.pod_lifecycles)
