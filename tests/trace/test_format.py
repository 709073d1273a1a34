from __future__ import annotations

import io

import msgpack
import pytest

from kubectl_sktrace.errors import TraceFormatError
from kubectl_sktrace.trace.files import format as tf


def _write_streaming(trace: tf.Trace) -> bytes:
    out = io.BytesIO()
    writer = tf.TraceWriter(out, config=trace.config, event_count=len(trace.events))
    for event in trace.events:
        writer.write_event(ts=event["ts"], applied=event["applied_objs"], deleted=event["deleted_objs"])
    writer.finish(index=trace.index, pod_lifecycles=trace.pod_lifecycles)
    assert writer.events_written == len(trace.events)
    return out.getvalue()


def test_decode_encode_gives_identical_bytes(fixture_path) -> None:
    data = fixture_path.read_bytes()
    assert tf.encode_trace(tf.decode_trace(data)) == data


def test_streaming_writer_gives_identical_bytes(fixture_path) -> None:
    data = fixture_path.read_bytes()
    assert _write_streaming(tf.decode_trace(data)) == data


def test_packed_events_give_identical_bytes(fixture_path) -> None:
    """Objects given as their msgpack bytes (as export copies them from the cache) write the same trace."""
    data = fixture_path.read_bytes()
    trace = tf.decode_trace(data)
    out = io.BytesIO()
    writer = tf.TraceWriter(out, config=trace.config, event_count=len(trace.events))
    for event in trace.events:
        packed = [tf.dumps_object(obj) for obj in event["applied_objs"]]
        writer.write_packed_event(ts=event["ts"], applied=packed, deleted=event["deleted_objs"])
    writer.finish(index=trace.index, pod_lifecycles=trace.pod_lifecycles)
    assert out.getvalue() == data


def test_streaming_writer_equals_encode_for_new_content() -> None:
    trace = tf.Trace(
        version=2,
        config={"trackedObjects": {"v1.Pod": {"podSpecTemplatePaths": [""], "trackLifecycle": True}}},
        events=[
            {"ts": 10, "applied_objs": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"}, "spec": {"x": -5, "f": 0.5}}], "deleted_objs": []},
            {"ts": 70000, "applied_objs": [], "deleted_objs": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"}}]},
        ],
        index={"v1.Pod": {"n/p": (1 << 64) - 1}},
        pod_lifecycles={("v1.Pod", "n/p"): {(1 << 63) + 5: [{"Finished": [10, 70000]}], 7: [{"Running": 12}]}},
    )
    data = tf.encode_trace(trace)
    assert _write_streaming(trace) == data
    assert tf.decode_trace(data) == trace


def test_decoded_fixture_shapes(cronjob_path) -> None:
    trace = tf.read_trace(cronjob_path)
    assert trace.version == tf.FORMAT_VERSION == 2
    assert isinstance(trace.events, list) and isinstance(trace.events[1]["applied_objs"], list)
    assert trace.index == {"batch/v1.CronJob": {"default/hello-simkube": 17156035354639895998}}
    assert trace.pod_lifecycles == {
        ("batch/v1.CronJob", "default/hello-simkube"): {
            10855072724872030168: [
                {"Finished": [1743286861, 1743286891]},
                {"Finished": [1743286921, 1743286951]},
                {"Finished": [1743286981, 1743287011]},
            ]
        }
    }


def test_writer_refuses_a_wrong_event_count() -> None:
    writer = tf.TraceWriter(io.BytesIO(), config={"trackedObjects": {}}, event_count=2)
    writer.write_event(ts=1, applied=[], deleted=[])
    with pytest.raises(RuntimeError, match="1 events written but 2 announced"):
        writer.finish(index={}, pod_lifecycles={})
    writer.write_event(ts=2, applied=[], deleted=[])
    with pytest.raises(RuntimeError, match="more events written than the 2 announced"):
        writer.write_event(ts=3, applied=[], deleted=[])


def _pack(obj: object) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


GOOD = {"version": 2, "config": {"trackedObjects": {}}, "events": [], "index": {}, "pod_lifecycles": {}}


def _with(**changes: object) -> bytes:
    doc = {**GOOD, **changes}
    return _pack({k: v for k, v in doc.items() if v is not _MISSING})


_MISSING = object()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(b"", "the file is empty, not a SimKube trace; export it again", id="empty"),
        pytest.param(b'{"version": 2}', "not a SimKube trace: it looks like JSON text; SimKube loads msgpack traces (export with --format sktrace)", id="json"),
        pytest.param(_pack([2, {}, [], {}, {}]), "this is an array-shaped trace, written by SimKube before format v2; re-export it with a current tracer", id="pre-v2-array"),
        pytest.param(_with(version=1), "format version 1 was written by SimKube before format v2; re-export it with a current tracer", id="version-1"),
        pytest.param(_with(version=3), "format version 3 is newer than this plugin reads (2); upgrade kubectl-sktrace", id="future"),
        pytest.param(_pack(42), "not a SimKube trace: the file does not start with a msgpack map; is it a .sktrace file?", id="not-a-map"),
        pytest.param(_with(events=_MISSING), "not a SimKube trace: the key 'events' is missing; the file is damaged or not a trace", id="missing-key"),
        pytest.param(_with(version="2"), "not a SimKube trace: 'version' must be an integer, found a string; the file is damaged or not a trace", id="version-type"),
        pytest.param(_with(events={}), "not a SimKube trace: 'events' must be an array, found a map; the file is damaged or not a trace", id="events-type"),
        pytest.param(_with(config=[]), "not a SimKube trace: 'config' must be a map, found an array; the file is damaged or not a trace", id="config-type"),
        pytest.param(_with(events=[{"ts": 1, "applied_objs": []}]), "not a SimKube trace: 'events[0]' has no key 'deleted_objs'; the file is damaged or not a trace", id="event-key"),
        pytest.param(_with(events=[{"ts": 1.5, "applied_objs": [], "deleted_objs": []}]), "not a SimKube trace: 'events[0].ts' must be an integer, found a float; the file is damaged or not a trace", id="event-ts"),
        pytest.param(_with(index={"v1.Pod": {"a/b": -1}}), "not a SimKube trace: 'index.v1.Pod.a/b' must be an unsigned 64-bit hash, found an integer; the file is damaged or not a trace", id="index-value"),
        pytest.param(_with(pod_lifecycles={"v1.Pod": {}}), "not a SimKube trace: a key of 'pod_lifecycles' must be an array [owner_gvk, 'ns/name'], found a string; the file is damaged or not a trace", id="lifecycle-key"),
        pytest.param(_with(pod_lifecycles={("v1.Pod", "a/b"): {1: [{"Started": 3}]}}), "not a SimKube trace: a lifecycle in 'pod_lifecycles[v1.Pod a/b]' is not {'Running': start} or {'Finished': [start, end]}: {'Started': 3}; the file is damaged or not a trace", id="lifecycle-entry"),
        pytest.param(_pack(GOOD) + b"\x01", "not a SimKube trace: 1 bytes follow the trace; the file is damaged or not a trace", id="trailing"),
        pytest.param(b"\x85\xa7version\xc1", "not a SimKube trace: the data is not valid msgpack; the file is damaged or not a trace", id="invalid-byte"),
    ],
)
def test_decode_rejects_with_one_line(data, message) -> None:
    with pytest.raises(TraceFormatError) as info:
        tf.decode_trace(data)
    assert str(info.value) == message


def test_truncated_fixture_at_every_cut(dsb_path) -> None:
    data = dsb_path.read_bytes()
    for cut in range(1, len(data), 997):
        with pytest.raises(TraceFormatError, match="truncated|not a SimKube trace"):
            tf.decode_trace(data[:cut])
    with pytest.raises(TraceFormatError, match=r"^the trace is truncated \(the data ends in the middle\); copy or export it again$"):
        tf.decode_trace(data[:-1])


def test_read_trace_names_the_file(tmp_path) -> None:
    path = tmp_path / "empty.sktrace"
    path.write_bytes(b"")
    with pytest.raises(TraceFormatError, match=f"^{path}: the file is empty"):
        tf.read_trace(path)
    with pytest.raises(TraceFormatError, match=f"^{tmp_path}/nope.sktrace: no such file; check the path"):
        tf.read_trace(tmp_path / "nope.sktrace")
    with pytest.raises(TraceFormatError, match="is a directory"):
        tf.read_trace(tmp_path)


def test_extra_top_level_keys_are_ignored() -> None:
    trace = tf.decode_trace(_pack({**GOOD, "extra": 1}))
    assert trace.events == []


def test_dumps_and_loads_round_trip() -> None:
    obj = {"a": [1, -2, 3.5, None, True], "b": "x"}
    assert tf.loads(tf.dumps_object(obj)) == obj
