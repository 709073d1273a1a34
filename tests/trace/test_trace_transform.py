"""The streaming pipeline under ``transform``: the reader yields events lazily with ``decode_trace``'s checks, the spool
writes what ``encode_trace`` writes, and the pipeline equals the library applied to a whole trace."""

from __future__ import annotations

import copy
import io
from pathlib import Path
from typing import IO, Any, Iterator

import msgpack
import pytest
from conftest import DATA, FIXTURE_NAMES

from kubectl_sktrace.errors import TraceFormatError, UsageError
from kubectl_sktrace.trace.files import format as traceformat
from kubectl_sktrace.trace.anonymizing.anonymize import Anonymizer
from kubectl_sktrace.trace.skel import Transformer, builtin, parse
from kubectl_sktrace.trace.transform import Rewriter, format_key, human_duration, load_program, parse_key, transform_stream


def deployment(i: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"d{i}", "namespace": "ns"},
            "spec": {"replicas": i % 5, "template": {"spec": {"containers": [{"name": "c", "image": f"img:{i}"}]}}}, "status": {"x": i}}


def big_trace(events: int) -> bytes:
    return traceformat.encode_trace(traceformat.Trace(
        version=2, config={"trackedObjects": {}},
        events=[{"ts": 100 + n, "applied_objs": [deployment(n)], "deleted_objs": []} for n in range(events)],
        index={"apps/v1.Deployment": {f"ns/d{n}": n for n in range(events)}}, pod_lifecycles={("apps/v1.Deployment", "ns/d1"): {5: [{"Running": 101}]}},
    ))


class Chunks:
    """A stream fed by a generator of chunks, which remembers how many it handed out."""

    def __init__(self, data: bytes, size: int) -> None:
        self.handed = 0
        self._chunks: Iterator[bytes] = (data[i:i + size] for i in range(0, len(data), size))
        self._buffer = b""

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._buffer) < size:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            self.handed += len(chunk)
            self._buffer += chunk
        out, self._buffer = (self._buffer, b"") if size < 0 else (self._buffer[:size], self._buffer[size:])
        return out


def test_the_reader_yields_each_event_before_reading_the_rest_of_the_stream() -> None:
    data = big_trace(5000)
    stream = Chunks(data, 4096)
    reader = traceformat.TraceReader(stream, name="big")  # type: ignore[arg-type]
    events = reader.events()
    first = next(events)
    assert first["ts"] == 100
    assert stream.handed < 200_000 < len(data)  # about the first chunks only
    assert sum(1 for _ in events) == 4999
    rest = reader.finish()
    assert stream.handed == len(data)
    assert rest.events == [] and len(rest.index["apps/v1.Deployment"]) == 5000
    assert rest.pod_lifecycles == {("apps/v1.Deployment", "ns/d1"): {5: [{"Running": 101}]}}


def test_transform_holds_one_event_at_a_time(tmp_path: Path) -> None:
    """The pipeline pulls the next event only once the previous one is spooled."""
    data = big_trace(3000)
    stream = Chunks(data, 512)
    seen: list[int] = []

    class Spy(Rewriter):
        def event(self, event: dict[str, Any]) -> dict[str, Any] | None:
            seen.append(stream.handed)
            return super().event(event)

    with traceformat.EventSpool() as spool:
        read, _ = transform_stream(stream, spool, name="t", rewriter=Spy(builtin("sanitize"), key=None))  # type: ignore[arg-type]
        assert (read, spool.count) == (3000, 3000)
    assert seen == sorted(seen) and seen[0] < 100_000 < 500_000 < len(data)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_the_reader_reads_what_decode_trace_reads(name: str) -> None:
    data = (DATA / f"{name}.sktrace").read_bytes()
    reader = traceformat.TraceReader(io.BytesIO(data), name=name)
    events = list(reader.events())
    whole = traceformat.decode_trace(data)
    assert events == whole.events
    assert reader.finish() == traceformat.Trace(version=2, config=whole.config, events=[], index=whole.index, pod_lifecycles=whole.pod_lifecycles)


def pack(value: Any) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


GOOD = {"version": 2, "config": {"trackedObjects": {}}, "events": [{"ts": 1, "applied_objs": [], "deleted_objs": []}], "index": {},
        "pod_lifecycles": {}}
DAMAGED = {
    "empty": b"",
    "json": b'{"version": 2}',
    "array": pack([1, 2]),
    "not-a-map": pack(5),
    "truncated": pack(GOOD)[:-3],
    "old-version": pack({**GOOD, "version": 1}),
    "future-version": pack({**GOOD, "version": 3}),
    "missing-index": pack({k: v for k, v in GOOD.items() if k != "index"}),
    "missing-events": pack({k: v for k, v in GOOD.items() if k != "events"}),
    "events-not-array": pack({**GOOD, "events": {"a": 1}}),
    "event-without-ts": pack({**GOOD, "events": [{"applied_objs": [], "deleted_objs": []}]}),
    "object-not-map": pack({**GOOD, "events": [{"ts": 1, "applied_objs": [3], "deleted_objs": []}]}),
    "config-not-map": pack({**GOOD, "config": []}),
    "index-negative": pack({**GOOD, "index": {"v1.Pod": {"a/b": -1}}}),
    "lifecycles-not-map": pack({**GOOD, "pod_lifecycles": [1]}),
    "lifecycle-key-string": pack({**GOOD, "pod_lifecycles": {"x": {}}}),
    "lifecycle-entry": pack({**GOOD, "pod_lifecycles": {("v1.Pod", "a/b"): {1: [{"Pending": 3}]}}}),
    "trailing": pack(GOOD) + b"\x01\x02",
    "key-not-string": pack({1: 2}),
    "not-utf8": b"\x81\xa3\xff\xfe\xfd\x01",
}


@pytest.mark.parametrize("data", DAMAGED.values(), ids=DAMAGED.keys())
def test_the_reader_refuses_what_decode_trace_refuses_with_the_same_line(data: bytes, tmp_path: Path) -> None:
    path = tmp_path / "t.sktrace"
    path.write_bytes(data)
    with pytest.raises(TraceFormatError) as whole:
        traceformat.read_trace(path)
    with pytest.raises(TraceFormatError) as streamed:
        reader = traceformat.TraceReader(io.BytesIO(data), name=str(path))
        list(reader.events())
        reader.finish()
    assert str(streamed.value) == str(whole.value)


def test_the_spool_writes_what_encode_trace_writes() -> None:
    data = (DATA / "bare-pods.sktrace").read_bytes()
    trace = traceformat.decode_trace(data)
    out = io.BytesIO()
    with traceformat.EventSpool() as spool:
        for event in trace.events:
            spool.add(event)
        spool.write_trace(out, version=2, config=trace.config, index=trace.index, pod_lifecycles=trace.pod_lifecycles)
    assert out.getvalue() == data


def pipeline(data: bytes, rewriter: Rewriter) -> bytes:
    out = io.BytesIO()
    with traceformat.EventSpool() as spool:
        _, rest = transform_stream(io.BytesIO(data), spool, name="t", rewriter=rewriter)
        spool.write_trace(out, version=rest.version, config=rest.config, index=rest.index, pod_lifecycles=rest.pod_lifecycles)
    return out.getvalue()


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_the_pipeline_equals_the_library_on_a_whole_trace(name: str) -> None:
    data = (DATA / f"{name}.sktrace").read_bytes()
    trace = traceformat.decode_trace(data)
    key = bytes(range(32))
    transformer, anonymizer = Transformer(builtin("sanitize"), start_ts=trace.events[0]["ts"]), Anonymizer(key)
    events = [anonymizer.event(e) for e in (transformer.apply(copy.deepcopy(e)) for e in trace.events) if e is not None]
    expected = traceformat.encode_trace(traceformat.Trace(version=2, config=trace.config, events=events, index=anonymizer.index(trace.index),
                                                          pod_lifecycles=anonymizer.pod_lifecycles(trace.pod_lifecycles)))
    assert pipeline(data, Rewriter(builtin("sanitize"), key=key)) == expected
    assert pipeline(data, Rewriter(None, key=None)) == data  # nothing asked, nothing changed, not even the empty first event


def test_an_empty_program_keeps_the_events_that_come_without_objects() -> None:
    """SimKube drops them; the first is the window's start, which must not move (issue 38)."""
    data = (DATA / "dsb-scaling.sktrace").read_bytes()
    events = traceformat.decode_trace(pipeline(data, Rewriter(parse("# nothing\n", source="e"), key=None))).events
    assert events == traceformat.decode_trace(data).events
    assert [e for e in events if not e["applied_objs"] and not e["deleted_objs"]]


def test_at_t_counts_from_the_first_event_read() -> None:
    data = big_trace(10)
    events = traceformat.decode_trace(pipeline(data, Rewriter(parse("delete(@t >= 5s);", source="t"), key=None))).events
    assert [e["ts"] for e in events] == [100, 101, 102, 103, 104]


@pytest.mark.parametrize(("text", "key"), [(format_key(bytes(range(32))), bytes(range(32))), ("  " + "ab" * 16 + "\n", b"\xab" * 16)])
def test_keys_read_back_as_printed(text: str, key: bytes) -> None:
    assert parse_key(text) == key


@pytest.mark.parametrize("text", ["", "abc", "ab" * 15, "zz" * 32, "secret passphrase that is long enough"])
def test_a_bad_key_is_one_line_that_does_not_repeat_it(text: str) -> None:
    with pytest.raises(UsageError) as error:
        parse_key(text)
    assert str(error.value).startswith("the anonymization key (--anonymize-key or $SKTRACE_ANONYMIZE_KEY) must be at least 32 hex digits")
    assert text.strip() == "" or text.strip() not in str(error.value)


def test_load_program_by_name_or_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sanitize").write_text("remove(status);\n")
    assert load_program("sanitize").source == "sanitize" and len(load_program("sanitize").commands) > 1
    assert [c.text for c in load_program("./sanitize").commands] == ["remove(status)"]
    (tmp_path / "latin1.skel").write_bytes(b"# caf\xe9\n")
    with pytest.raises(UsageError, match="^cannot read the SKEL file latin1.skel: it is not UTF-8 text; pass a SKEL file$"):
        load_program("latin1.skel")


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (0.0004, "0s"), (0.015, "15ms"), (1.234, "1s 234ms"), (75.5, "1m 15s 500ms"),
                                               (3600, "1h"), (3725.001, "1h 2m 5s 1ms")])
def test_durations_as_skctl_prints_them(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


def test_source_is_read_in_chunks_not_whole(tmp_path: Path) -> None:
    """A file is opened and streamed (never ``read()`` whole): what ``transform`` gives the reader."""
    path = tmp_path / "t.sktrace"
    path.write_bytes(big_trace(12000))
    sizes: list[int] = []

    with traceformat.open_source(str(path)) as source:
        original = source.read

        def read(size: int = -1) -> bytes:
            sizes.append(size)
            return original(size)

        spied: IO[bytes] = source
        spied.read = read  # type: ignore[method-assign]
        reader = traceformat.TraceReader(spied, name=str(path))
        assert sum(1 for _ in reader.events()) == 12000
        reader.finish()
    assert len(sizes) > 3 and all(0 < size <= 1 << 20 for size in sizes) and path.stat().st_size > 2 << 20


def test_the_spec_says_what_the_pipeline_does_with_an_event_that_comes_without_objects() -> None:
    """One rule, as the test above holds the code to it: every sentence of docs/spec.md about an event that comes
    without objects says it is kept (the program's leaving one without objects is another rule: dropped)."""
    import re

    spec = (Path(__file__).resolve().parents[2] / "docs" / "spec.md").read_text()
    text = re.sub(r"\s+", " ", spec)
    said = [s for s in re.split(r"(?<=[.)])\s", text) if re.search(r"event (that )?(comes|came) (with no object|without objects?)", s)]
    assert said and all("kept" in s and "dropped, even" not in s for s in said), said
