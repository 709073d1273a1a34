"""``transform``: a trace rewritten by a SKEL program, anonymized, or both, one event at a time (docs/spec.md §14).

The pipeline: ``format.TraceReader`` reads the trace event by event; ``Rewriter`` applies the program
(``skel.Transformer``, ``@t`` counted from the first event) and then the anonymizer (``anonymize.Anonymizer``:
the program's selectors see the names as recorded); each event that keeps an object goes to a
``format.EventSpool``; after the events, the anonymizer renames ``index`` and ``pod_lifecycles``, and the trace is
written to ``-O`` (``output.write_output``: a file is replaced whole or not at all, a URL is an object).

Why a spool. The msgpack array of events starts with its length, and the program drops the events it empties,
so the count is known only after the last event. The output cannot be patched afterwards (``-O -``, a FIFO and an
object in a store do not seek), and holding the events would hold the trace. So the events are packed into a
temporary file (in ``$TMPDIR``, about the output's size) as they come, then copied after the header. It also
means that nothing reaches ``-O`` until every event transformed: a program that cannot apply, or a damaged
trace, leaves the old file, the pipe's reader and the object as they were.

Memory: one event at a time, plus what the anonymizer keeps (a pair of hashes per object, a bounded memo) and
the ``index`` and ``pod_lifecycles`` tables, read after the events. A trace given as a URL of an object store is
fetched whole first (``objectstore.read_object``); a file and standard input are read as they stream.
"""

from __future__ import annotations

import binascii
import json
from dataclasses import dataclass
from time import perf_counter
from typing import IO, Any

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.plural import counted
from kubectl_sktrace.trace.anonymizing.anonymize import Anonymizer
from kubectl_sktrace.trace.selection.filtering import RuleFilter, filter_spool
from kubectl_sktrace.trace.files.collector import relaxed_gc
from kubectl_sktrace.trace.files.format import STDIN, EventSpool, Lifecycles, Trace, open_source, source_name
from kubectl_sktrace.trace.sanitize import object_key
from kubectl_sktrace.trace.files.output import write_output, write_private
from kubectl_sktrace.trace.skel import BUILTINS, Program, Transformer, builtin, parse
from kubectl_sktrace.trace.files.textformat import trace_reader, write_spooled

KEY_ENV = "SKTRACE_ANONYMIZE_KEY"
_MIN_KEY_BYTES = 16


def load_program(spec: str) -> Program:
    """The program of ``--transform``/``SKEL_FILE``: a built-in by name (``sanitize``; a file of that name is
    ``./sanitize``), else the SKEL file at that path. UsageError, one line, when the file cannot be read;
    SkelSyntaxError (``FILE:LINE:COL: …``) when it does not parse."""
    if spec in BUILTINS:
        return builtin(spec)
    builtins = " or ".join(f"'{name}'" for name in BUILTINS)
    try:
        with open(spec, encoding="utf-8") as file:
            text = file.read()
    except FileNotFoundError:
        raise UsageError(f"cannot read the SKEL file {spec}: no such file; check the path, or pass {builtins} for the built-in") from None
    except IsADirectoryError:
        raise UsageError(f"cannot read the SKEL file {spec}: it is a directory; pass a SKEL file's path") from None
    except UnicodeDecodeError:
        raise UsageError(f"cannot read the SKEL file {spec}: it is not UTF-8 text; pass a SKEL file") from None
    except OSError as exc:
        raise UsageError(f"cannot read the SKEL file {spec} ({exc.strerror or exc}); pass a readable SKEL file") from None
    return parse(text, source=spec)


def parse_key(text: str) -> bytes:
    """An anonymization key as ``--anonymize-key`` or ``$SKTRACE_ANONYMIZE_KEY`` give it: hex digits (at least 32,
    as ``format_key`` prints them). The message never repeats the value: it is a secret."""
    digits = text.strip()
    try:
        key = bytes.fromhex(digits)
    except ValueError:
        key = b""
    if len(key) < _MIN_KEY_BYTES:
        hexadecimal = all(c in "0123456789abcdefABCDEF" for c in digits)
        got = f"{len(digits)} hex digits" if hexadecimal else f"{len(digits)} characters, not all of them hex digits"
        raise UsageError(f"the anonymization key (--anonymize-key or ${KEY_ENV}) must be at least {2 * _MIN_KEY_BYTES} hex digits, "
                         f"as a run of --anonymize printed it; got {got}")
    return key


def format_key(key: bytes) -> str:
    """The key as ``parse_key`` reads it back."""
    return binascii.hexlify(key).decode()


class Rewriter:
    """One trace's program and anonymizer, applied to its events in order: ``event`` each, then ``tables``.
    ``@t`` counts from ``start_ts``, or from the first event's time when it is None."""

    def __init__(self, program: Program | None, *, key: bytes | None, start_ts: int | None = None,
                 keep_label_values: frozenset[str] = frozenset(), record: bool = False) -> None:
        self.program = program
        self.anonymizer = Anonymizer(key, keep_label_values=keep_label_values, record=record) if key is not None else None
        self.transformer = None if program is None or start_ts is None else Transformer(program, start_ts=start_ts)
        self.keys = KeyTracker()

    @property
    def active(self) -> bool:
        """Whether it changes anything: a program, or a key to anonymize with."""
        return self.program is not None or self.anonymizer is not None

    @property
    def events_matched(self) -> int:
        return self.transformer.events_matched if self.transformer else 0

    @property
    def resources_modified(self) -> int:
        return self.transformer.resources_modified if self.transformer else 0

    def transform(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """The program applied to an event, in place; None when it leaves no object. Without a program, the event."""
        if self.program is None:
            return event
        if self.transformer is None:
            self.transformer = Transformer(self.program, start_ts=event["ts"])
        before = [(obj, object_key(obj)) for obj in event["applied_objs"]]
        out = self.transformer.apply(event)
        self.keys.applied(before, kept={id(obj) for obj in out["applied_objs"]} if out is not None else set())
        return out

    def start(self, config: Any) -> None:
        """The trace's config, when it is known before the events: the anonymizer hashes only the pod specs of the
        kinds that own lifecycles."""
        if self.anonymizer is not None and isinstance(config, dict):
            self.anonymizer.config(config)

    def anonymize(self, event: dict[str, Any]) -> dict[str, Any]:
        return event if self.anonymizer is None else self.anonymizer.event(event)

    def event(self, event: dict[str, Any]) -> dict[str, Any] | None:
        out = self.transform(event)
        return None if out is None else self.anonymize(out)

    def rest(self, trace: Trace) -> Trace:
        """What follows the events (read after them), without them: ``index`` and ``pod_lifecycles`` kept, or renamed
        by the anonymizer with what the events taught it; ``config`` and ``version`` kept."""
        index, lifecycles = self.keys.index(trace.index), self.keys.pod_lifecycles(trace.pod_lifecycles)
        if self.anonymizer is None:
            return Trace(version=trace.version, config=trace.config, events=[], index=index, pod_lifecycles=lifecycles)
        return Trace(version=trace.version, config=self.anonymizer.config(trace.config), events=[],
                     index=self.anonymizer.index(index), pod_lifecycles=self.anonymizer.pod_lifecycles(lifecycles))


class KeyTracker:
    """Where a program moved or deleted objects, so that ``index`` and ``pod_lifecycles`` keys follow them: SimKube keeps
    both as they were, and a simulator then finds no lifecycle for a moved object's pods (docs/spec.md). Remembers
    only the objects a program renamed or deleted: their key as recorded and their key as written last (None:
    deleted and never written), and the keys of the objects written as they were (a key per object, as the
    anonymizer holds)."""

    def __init__(self) -> None:
        self._moved: dict[tuple[str, str], tuple[str, str] | None] = {}
        self._unmoved: set[tuple[str, str]] = set()

    def applied(self, before: list[tuple[dict[str, Any], ObjKey | None]], *, kept: set[int]) -> None:
        """The applied objects of one event as they were (with their keys), and the ids of those the program kept."""
        for obj, old in before:
            if old is None:
                continue
            old_id = (str(old.gvk), old.ns_name)
            new = object_key(obj) if id(obj) in kept else None
            new_id = None if new is None else (str(new.gvk), new.ns_name)
            if new_id == old_id:
                self._unmoved.add(old_id)
                self._moved.pop(old_id, None)  # written under its own key again
            elif new_id is not None:
                self._moved[old_id] = new_id
            elif old_id not in self._unmoved and self._moved.get(old_id) is None:
                self._moved[old_id] = None  # deleted, and never written

    def _follow(self, gvk: str, ns_name: str) -> tuple[str, str] | None:
        key = (GVK.canonical(gvk), ns_name)
        if key not in self._moved:
            return gvk, ns_name
        return self._moved[key]

    def index(self, index: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
        if not self._moved:
            return index
        out: dict[str, dict[str, int]] = {}
        for gvk, entries in index.items():
            for ns_name, value in entries.items():
                new = self._follow(gvk, ns_name)
                if new is not None:
                    out.setdefault(new[0], {})[new[1]] = value
        return out

    def pod_lifecycles(self, lifecycles: Lifecycles) -> Lifecycles:
        if not self._moved:
            return lifecycles
        out: Lifecycles = {}
        for (gvk, ns_name), by_hash in lifecycles.items():
            new = self._follow(gvk, ns_name)
            if new is not None:
                merged = out.setdefault(new, {})
                for pod_hash, entries in by_hash.items():
                    merged.setdefault(pod_hash, []).extend(entries)
        return out


@dataclass(frozen=True)
class AnonymizeOptions:
    """``--anonymize-keep-label-values`` and ``--anonymize-map``: label keys whose values are kept (never by default),
    and where to write the original -> pseudonym table (mode 0600)."""

    keep_label_values: frozenset[str] = frozenset()
    map_file: str | None = None


def make_rewriter(program: Program | None, *, key: bytes | None, options: AnonymizeOptions, start_ts: int | None = None) -> Rewriter:
    return Rewriter(program, key=key, start_ts=start_ts, keep_label_values=options.keep_label_values, record=options.map_file is not None)


def anonymization_report(rewriter: Rewriter, options: AnonymizeOptions) -> dict[str, Any] | None:
    """What the anonymizer did (``Anonymizer.report``), after writing the pseudonym map when asked; None without one."""
    if rewriter.anonymizer is None:
        return None
    if options.map_file is not None:
        write_pseudonym_map(options.map_file, rewriter.anonymizer.pseudonym_map())
    return rewriter.anonymizer.report()


def write_pseudonym_map(path: str, rows: list[dict[str, str]]) -> None:
    """The original -> pseudonym table as JSON, readable by its owner alone: a new file of mode 0600 renamed over a
    regular file or into a new path (``output.write_private``: a symlink or a device is refused)."""
    text = json.dumps({"pseudonyms": rows}, indent=1) + "\n"
    write_private(path, text.encode(), what="the pseudonym map", flag="--anonymize-map path")


def anonymization_sentence(report: dict[str, Any]) -> str:
    """The report in one line: the strings replaced per place."""
    replaced = report["stringsReplaced"]
    places = ", ".join(f"{place} {count}" for place, count in sorted(replaced.items(), key=lambda item: -item[1]))
    return f"Anonymized: {counted(sum(replaced.values()), 'string')} replaced ({places or 'none'})."


def review_sentence(report: dict[str, Any] | None) -> str | None:
    """What a reviewer should look at before sharing the trace, in one line (None: nothing kept for review). The CLI
    prints it even with ``--quiet``: it is what a person must read before the file leaves their hands."""
    review = report["keptForReview"] if report is not None else None
    if not review:
        return None
    return "Review before sharing: " + "; ".join(f"{what} ({count})" for what, count in review.items()) + "."


@dataclass(frozen=True)
class TransformReport:
    """What ``transform`` did: the counters as SimKube counts them, and the time it took (read, transform, write)."""

    trace: str
    output: str
    program: str | None
    anonymized: bool
    events_read: int
    events_written: int
    events_matched: int
    resources_modified: int
    seconds: float
    anonymization: dict[str, Any] | None = None  # ``Anonymizer.report``

    def as_mapping(self) -> dict[str, Any]:
        return {
            "trace": self.trace, "output": self.output, "transform": self.program, "anonymized": self.anonymized,
            "eventsRead": self.events_read, "eventsWritten": self.events_written, "traceEventsMatched": self.events_matched,
            "traceResourcesModified": self.resources_modified, "totalEvaluationSeconds": round(self.seconds, 6),
            **({"anonymization": self.anonymization} if self.anonymization is not None else {}),
        }


def transform_stream(source: IO[bytes], spool: EventSpool, *, name: str, rewriter: Rewriter) -> tuple[int, Trace]:
    """Read the trace from ``source`` and spool its events through ``rewriter``: the number of events read, and the
    rest of the trace (``Rewriter.rest``) to write after them."""
    reader = trace_reader(source, name=name)
    rewriter.start(reader.config)
    read = 0
    for event in reader.events():
        read += 1
        out = rewriter.event(event)
        if out is not None:
            spool.add(out)
    return read, rewriter.rest(reader.finish())


def transform_to(trace: str, output_file: str, *, program: Program | None, key: bytes | None, stdin: IO[bytes],
                 stdout: IO[bytes], fmt: str = "sktrace", rule_filter: RuleFilter | None = None,
                 options: AnonymizeOptions = AnonymizeOptions()) -> TransformReport:
    """``transform``: the trace at ``trace`` (``-``: ``stdin``; a URL: an object) rewritten into ``output_file``
    (``output.write_output``: ``-`` is ``stdout``). Nothing is written there unless every event transformed."""
    started = perf_counter()
    rewriter = make_rewriter(program, key=key if rule_filter is None else None, options=options)  # with rules, anonymized after them
    anonymizer = rewriter
    with EventSpool() as spool, EventSpool() as kept, relaxed_gc():
        if trace == STDIN:
            read, rest = transform_stream(stdin, spool, name=source_name(trace), rewriter=rewriter)
        else:
            with open_source(trace) as source:
                read, rest = transform_stream(source, spool, name=trace, rewriter=rewriter)
        if rule_filter is not None:  # --allow, --deny...: each object decided on its last version (``trace/selection/filtering``)
            anonymizer = make_rewriter(None, key=key, options=options)
            anonymizer.start(rest.config)
            filter_spool(spool, kept, rule_filter, then=anonymizer.anonymize)
            spool, rest = kept, anonymizer.rest(rule_filter.rest(rest))

        def write(stream: IO[bytes]) -> dict[str, Any] | None:
            """The trace, then the pseudonym map, before the trace replaces anything (as export's): both or neither."""
            write_spooled(spool, stream, fmt=fmt, version=rest.version, config=rest.config, index=rest.index,
                          pod_lifecycles=rest.pod_lifecycles)
            return anonymization_report(anonymizer, options)

        anonymization = write_output(output_file, write, binary=fmt == "sktrace", stdout=stdout)
        written = spool.count
    return TransformReport(
        trace=source_name(trace), output=output_file, program=program.source if program else None, anonymized=key is not None,
        events_read=read, events_written=written, events_matched=rewriter.events_matched,
        resources_modified=rewriter.resources_modified, seconds=perf_counter() - started, anonymization=anonymization,
    )


def human_duration(seconds: float) -> str:
    """``1m 5s 250ms``: a duration as skctl prints its evaluation time (humantime, to the millisecond)."""
    left = int(round(seconds * 1000))
    parts = []
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        amount, left = divmod(left, size)
        if amount:
            parts.append(f"{amount}{unit}")
    return " ".join(parts) or "0s"


def transform_summary(report: TransformReport) -> str:
    """The summary skctl transform prints, line for line."""
    rule = "-" * 80
    return "\n".join([
        "Summary of changes:", rule, f"  Trace events matched: {report.events_matched}",
        f"  Trace resources modified: {report.resources_modified}", f"  Total evaluation time: {human_duration(report.seconds)}", rule,
    ])


def transform_sentence(report: TransformReport) -> str:
    """The one line ``transform`` ends with: where the trace went, and how many events it kept."""
    where = "stdout" if report.output == STDIN else report.output
    dropped = report.events_read - report.events_written
    kept = counted(report.events_written, "event")
    if dropped:
        kept += f" of the {report.events_read} read ({dropped} left without objects, dropped)"
    sentence = f"Wrote {where}: {kept}{', anonymized' if report.anonymized else ''}."
    return sentence if report.anonymization is None else f"{sentence}\n{anonymization_sentence(report.anonymization)}"


def transform_note(source: str, *, events_matched: int, resources_modified: int) -> str:
    """What an export says of its --transform: SimKube's two counters, over the objects it exported."""
    return (f"Transformed by {source}: {events_matched} trace events matched, {resources_modified} trace resources modified "
            "(SimKube's counts, over the exported objects).")
