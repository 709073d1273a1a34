"""``export --transform`` and ``export --anonymize`` as skctl's export transforms (``sk-tracer``'s ``collect_events``):
the program before the filters, ``@t`` from the export's start, the start state kept when emptied; one key lines up."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path
from typing import Any

import msgpack
import pytest
from conftest import assert_valid_trace, obj

from kubectl_sktrace.errors import EmptyTraceError
from kubectl_sktrace.export.options import ExportFilters
from kubectl_sktrace.trace.selection.selectors import parse_selector
from kubectl_sktrace.export.window import export_trace
from kubectl_sktrace.trace.files import format as traceformat
from kubectl_sktrace.trace.reports.inspection import inspect_trace
from kubectl_sktrace.trace.skel import SkelTransformError, parse

START = 1000
KEY = bytes(range(32))


def export(builder: Any, program: str | None = None, *, start_ts: int = START, end_ts: int = START + 600,
           filters: ExportFilters = ExportFilters(), key: bytes | None = None, fmt: str = "sktrace") -> tuple[Any, bytes]:
    out = io.BytesIO()
    report = export_trace(builder.cache, start_ts=start_ts, end_ts=end_ts, filters=filters, keep_status=False, fmt=fmt, stream=out,
                          program=parse(program, source="t.skel") if program is not None else None, anonymize_key=key)
    if fmt == "sktrace":
        with tempfile.TemporaryDirectory() as scratch:
            assert_valid_trace(out.getvalue(), Path(scratch))
    return report, out.getvalue()


def events(data: bytes) -> list[dict[str, Any]]:
    return traceformat.decode_trace(data).events


def names(event: dict[str, Any]) -> list[str]:
    return [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in event["applied_objs"]]


def dep(name: str, namespace: str = "app", replicas: int = 1, **kw: Any) -> dict[str, Any]:
    return obj("Deployment", name, namespace, spec={"replicas": replicas}, **kw)


@pytest.fixture
def history(cache_builder: Any) -> Any:
    """web (app) and cart (shop) before the start; pay (shop) at +10 s, web scaled at +90 s, cart deleted at +120 s."""
    b = cache_builder
    b.run(started=START - 100, stopped=START + 600)
    b.apply(START - 50, dep("web", labels={"tier": "front"}))
    b.apply(START - 40, dep("cart", "shop", labels={"tier": "back"}))
    b.apply(START + 10, dep("pay", "shop", labels={"tier": "back"}))
    b.apply(START + 90, dep("web", replicas=3, labels={"tier": "front"}))
    b.delete(START + 120, dep("cart", "shop"))
    return b


def test_without_a_program_the_export_is_unchanged(history: Any) -> None:
    """An empty program drops nothing: no event of an export comes without objects, and the first is always written."""
    assert export(history, "# nothing\n")[1] == export(history)[1]


def test_the_namespace_filter_sees_the_namespace_the_program_wrote(history: Any) -> None:
    program = 'modify(metadata.namespace == "shop", metadata.namespace = "kept");'
    assert pytest.raises(EmptyTraceError, export, history, filters=ExportFilters(include_namespaces=frozenset({"kept"})))
    report, data = export(history, program, filters=ExportFilters(include_namespaces=frozenset({"kept"})))
    trace = events(data)
    assert [(e["ts"], names(e), [o["metadata"]["namespace"] for o in e["deleted_objs"]]) for e in trace] == [
        (START, ["kept/cart"], []), (START + 10, ["kept/pay"], []), (START + 120, [], ["kept"]),
    ]
    assert (report.events_matched, report.resources_modified) == (3, 3)  # cart, pay and cart's deletion; web is filtered out


def test_the_label_filter_sees_the_labels_the_program_wrote_and_removed(history: Any) -> None:
    filters = ExportFilters(excluded_namespaces=frozenset(), exclude_labels=(parse_selector("tier=back"),))
    _, data = export(history, filters=filters)
    assert [names(e) for e in events(data)] == [["app/web"], ["app/web"]]
    _, data = export(history, 'remove(metadata.labels.tier); modify(metadata.name == "web", metadata.labels.tier = "back");', filters=filters)
    assert [names(e) for e in events(data)] == [["shop/cart"], ["shop/pay"], []]  # the last: cart's deletion


def test_at_t_counts_from_the_exports_start_and_the_state_is_transformed_at_its_own_times(history: Any) -> None:
    _, data = export(history, 'modify(@t >= 60s, metadata.labels.late = "yes"); modify(@t < 0, metadata.labels.before = "yes");',
                     start_ts=START)
    seen = [(e["ts"], [(o["metadata"]["name"], sorted(o["metadata"].get("labels", {}))) for o in e["applied_objs"]]) for e in events(data)]
    assert seen == [
        (START, [("web", ["tier"]), ("cart", ["tier"])]),  # recorded at -50 s and -40 s: neither late nor before 0 (unix 0)
        (START + 10, [("pay", ["tier"])]),
        (START + 90, [("web", ["late", "tier"])]),
        (START + 120, []),
    ]
    _, later = export(history, 'modify(@t >= 60s, metadata.labels.late = "yes");', start_ts=START + 40)
    assert [(e["ts"], ["late" in o["metadata"]["labels"] for o in e["applied_objs"]]) for e in events(later)][:2] == [
        (START + 40, [False, False, False]), (START + 90, [False]),  # 50 s after this export's start
    ]


def test_the_start_state_is_kept_when_the_program_empties_it_and_other_emptied_events_are_dropped(history: Any) -> None:
    report, data = export(history, f'delete(@t < {START}); delete(metadata.name == "pay");')
    assert [(e["ts"], names(e), len(e["deleted_objs"])) for e in events(data)] == [(START, [], 0), (START + 90, ["app/web"], 0)]
    assert report.events == 2 and (report.applied, report.deleted) == (1, 0)
    assert report.notes[-1] == "left out 2 objects whose last version before the window's end --transform deletes"
    assert sorted(traceformat.decode_trace(data).index["apps/v1.Deployment"]) == ["app/web"]  # cart and pay are out whole


def test_json_and_yaml_are_transformed_too(history: Any) -> None:
    _, data = export(history, 'delete(metadata.name == "pay"); remove(spec.replicas);', fmt="yaml")
    assert b"pay" not in data and b"replicas" not in data and data.count(b"name: web") == 2


def test_a_command_that_cannot_apply_names_itself_and_the_object(history: Any) -> None:
    with pytest.raises(SkelTransformError) as error:
        export(history, "modify(spec.replicas = spec.replicas.x);")
    assert str(error.value) == (
        "t.skel:1: modify(spec.replicas = spec.replicas.x) cannot apply to Deployment shop/cart: its right side spec.replicas.x "
        "gives 0 values, and modify needs exactly one"
    )


def packed_events(data: bytes) -> list[bytes]:
    return [msgpack.packb(e) for e in events(data)]


def test_anonymized_exports_with_one_key_line_up_byte_for_byte_in_their_common_events(history: Any) -> None:
    _, whole = export(history, key=KEY, filters=ExportFilters(excluded_namespaces=frozenset()))
    _, later = export(history, key=KEY, filters=ExportFilters(excluded_namespaces=frozenset()), start_ts=START + 60)
    assert packed_events(later)[1:] == packed_events(whole)[-2:]  # web's scaling and cart's deletion
    assert b"web" not in whole and b"shop" not in whole and b"cart" not in whole
    _, other = export(history, key=bytes(32), filters=ExportFilters(excluded_namespaces=frozenset()))
    assert packed_events(other)[-1] != packed_events(whole)[-1]


def modulo_names(result: dict[str, Any]) -> dict[str, Any]:
    """What ``inspect`` reports of a trace, but the names anonymization replaces."""
    counts = {key: value for key, value in result.items() if key != "file"}
    counts["objects"] = sorted((row["kind"], row["objects"]) for row in result["objects"])
    counts["podLifecycles"] = sorted((row["owner"], row["podSpecs"], row["running"], row["finished"]) for row in result["podLifecycles"])
    return counts


def test_anonymizing_keeps_what_inspect_counts(history: Any, tmp_path: Path) -> None:
    def inspected(data: bytes) -> dict[str, Any]:
        path = tmp_path / "t.sktrace"
        path.write_bytes(data)
        return modulo_names(inspect_trace(str(path), with_events=False))

    filters = ExportFilters(excluded_namespaces=frozenset())
    assert inspected(export(history, key=KEY, filters=filters)[1]) == inspected(export(history, filters=filters)[1])


def test_a_namespace_move_takes_the_index_along(history: Any) -> None:
    """SimKube's export keeps the index as recorded; here its keys follow the objects the program moved."""
    _, data = export(history, 'modify(metadata.namespace == "shop", metadata.namespace = "sim");',
                     filters=ExportFilters(excluded_namespaces=frozenset()))
    index = traceformat.decode_trace(data).index
    assert sorted(index["apps/v1.Deployment"]) == ["app/web", "sim/cart", "sim/pay"]
    _, anonymized = export(history, 'modify(metadata.namespace == "shop", metadata.namespace = "sim");',
                           filters=ExportFilters(excluded_namespaces=frozenset()), key=KEY)
    trace = traceformat.decode_trace(anonymized)
    applied = {f"{o['metadata']['namespace']}/{o['metadata']['name']}" for e in trace.events for o in e["applied_objs"]}
    assert set(trace.index["apps/v1.Deployment"]) == applied
