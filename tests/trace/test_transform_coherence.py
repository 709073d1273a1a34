"""A program that moves or deletes objects takes their ``index`` and ``pod_lifecycles`` keys along (SimKube keeps
them as they were), and ``validate`` reports the keys that name no object."""

from __future__ import annotations

import copy
import io

import pytest
from conftest import DATA

from kubectl_sktrace.trace.files import format as traceformat
from kubectl_sktrace.trace.skel import parse
from kubectl_sktrace.trace.transform import Rewriter, transform_stream
from kubectl_sktrace.trace.reports.validation import check_trace

KEY = b"a fixed key for tests, 32 bytes."


def rewrite(name: str, program: str, *, key: bytes | None = None) -> traceformat.Trace:
    data = (DATA / f"{name}.sktrace").read_bytes()
    with traceformat.EventSpool() as spool:
        _, rest = transform_stream(io.BytesIO(data), spool, name=name, rewriter=Rewriter(parse(program, source="t.skel"), key=key))
        out = io.BytesIO()
        spool.write_trace(out, version=rest.version, config=rest.config, index=rest.index, pod_lifecycles=rest.pod_lifecycles)
    return traceformat.decode_trace(out.getvalue())


def objects(trace: traceformat.Trace) -> set[tuple[str, str]]:
    keys = set()
    for event in trace.events:
        for obj in event["applied_objs"]:
            meta = obj["metadata"]
            keys.add((f"{obj['apiVersion']}.{obj['kind']}", f"{meta.get('namespace', '')}/{meta['name']}"))
    return keys


@pytest.mark.parametrize("name", ["cronjob", "dsb-scaling"])
def test_a_namespace_move_takes_the_index_and_the_lifecycles_along(name: str) -> None:
    before = traceformat.read_trace(DATA / f"{name}.sktrace")
    namespace = next(iter(next(iter(before.index.values())))).split("/")[0]
    after = rewrite(name, f'modify(metadata.namespace == "{namespace}", metadata.namespace = "sim");')
    assert {k for keys in after.index.values() for k in keys} == {
        k.replace(f"{namespace}/", "sim/", 1) for keys in before.index.values() for k in keys}
    assert set(after.pod_lifecycles) == {(gvk, k.replace(f"{namespace}/", "sim/", 1)) for gvk, k in before.pod_lifecycles}
    assert set(after.pod_lifecycles) <= objects(after)
    assert list(after.pod_lifecycles.values()) == list(before.pod_lifecycles.values())
    assert [f.code for f in check_trace(after)] == [f.code for f in check_trace(before)]


def test_a_move_and_an_anonymization_line_up() -> None:
    after = rewrite("cronjob", 'modify(metadata.namespace == "default", metadata.namespace = "sim");', key=KEY)
    assert set(after.pod_lifecycles) <= objects(after) and len(after.pod_lifecycles) == 1
    assert [f.code for f in check_trace(after)] == []


def test_a_deleted_object_takes_its_keys_along() -> None:
    after = rewrite("cronjob", 'delete(metadata.name == "hello-simkube");')
    assert after.pod_lifecycles == {} and all(not keys for keys in after.index.values())


def test_validate_reports_keys_that_name_no_object() -> None:
    trace = traceformat.read_trace(DATA / "cronjob.sktrace")
    moved = copy.deepcopy(trace)
    for event in moved.events:
        for obj in event["applied_objs"] + event["deleted_objs"]:
            obj["metadata"]["namespace"] = "sim"
    findings = [(f.code, f.message) for f in check_trace(moved) if f.code.startswith("W01")]
    assert findings == [
        ("W0101", "index names 1 batch/v1.CronJob object in namespace default, where no event applies any"),
        ("W0102", "pod_lifecycles names the owner batch/v1.CronJob default/hello-simkube, which no event applies; "
                  "the simulator finds no lifecycle for its pods"),
    ]
    assert not [f for f in check_trace(trace) if f.code.startswith("W01")]
