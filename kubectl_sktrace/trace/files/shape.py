"""The shape SimKube's deserializer requires of a decoded trace (docs/spec.md §8.1, §8.2), and the one-line
messages that say what is wrong: the checks ``format``'s decoder and streaming reader share. Pure.

Each check takes a decoded value (arrays as lists, but ``pod_lifecycles``' values as tuples, as ``format`` reads
them) and raises TraceFormatError naming the first problem; ``check_lifecycles`` also returns the table with its
entries in the form the writers pack.
"""

from __future__ import annotations

import reprlib
from typing import Any

from kubectl_sktrace.errors import TraceFormatError
from kubectl_sktrace.timeparse import is_printable_time

FORMAT_VERSION = 2
U64_MAX = (1 << 64) - 1
PRE_V2 = "written by SimKube before format v2; re-export it with a current tracer"

Lifecycles = dict[tuple[str, str], dict[int, list[dict[str, Any]]]]


def type_name(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bytes):
        return "binary data"
    if isinstance(value, dict):
        return "a map"
    if isinstance(value, (list, tuple)):
        return "an array"
    if value is None:
        return "nil"
    return type(value).__name__


def not_a_trace(detail: str) -> TraceFormatError:
    return TraceFormatError(f"not a SimKube trace: {detail}")


def damaged(detail: str) -> TraceFormatError:
    """A wrong shape inside a msgpack map: most likely damage, or a file some other program wrote."""
    return not_a_trace(f"{detail}; the file is damaged or not a trace")


KEYS = ("version", "config", "events", "index", "pod_lifecycles")


def check_tables(values: dict[str, Any]) -> None:
    """A decoded trace's top-level keys all there, and its version, config, events and index of the shape SimKube requires;
    its lifecycles are the caller's to check (msgpack holds their keys as arrays, text as strings)."""
    for key in KEYS:
        if key not in values:
            raise damaged(f"the key {key!r} is missing")
    check_version(values["version"])
    check_config(values["config"])
    check_events(values["events"])
    check_index(values["index"])


def check_version(version: object) -> None:
    if not isinstance(version, int) or isinstance(version, bool):
        raise damaged(f"'version' must be an integer, found {type_name(version)}")
    if version < FORMAT_VERSION:
        raise TraceFormatError(f"format version {version} was {PRE_V2}")
    if version > FORMAT_VERSION:
        raise TraceFormatError(
            f"format version {version} is newer than this plugin reads ({FORMAT_VERSION}); upgrade kubectl-sktrace"
        )


def require(cond: bool, what: str, value: object, expected: str) -> None:
    if not cond:
        raise damaged(f"{what} must be {expected}, found {type_name(value)}")


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_config(config: object) -> None:
    require(isinstance(config, dict), "'config'", config, "a map")
    assert isinstance(config, dict)
    tracked = config.get("trackedObjects")
    require(isinstance(tracked, dict), "'config.trackedObjects'", tracked, "a map")


def check_events(events: object) -> None:
    require(isinstance(events, list), "'events'", events, "an array")
    assert isinstance(events, list)
    for i, event in enumerate(events):
        check_event(i, event)


def check_event(i: int, event: object) -> None:
    require(isinstance(event, dict), f"'events[{i}]'", event, "a map")
    assert isinstance(event, dict)
    for key in ("ts", "applied_objs", "deleted_objs"):
        if key not in event:
            raise damaged(f"'events[{i}]' has no key {key!r}")
    require(is_int(event["ts"]), f"'events[{i}].ts'", event["ts"], "an integer")
    if not is_printable_time(event["ts"]):
        raise damaged(f"'events[{i}].ts' is {reprlib.repr(event['ts'])}, not a time between the years 2 and 9998")
    for key in ("applied_objs", "deleted_objs"):
        objs = event[key]
        require(isinstance(objs, list), f"'events[{i}].{key}'", objs, "an array")
        for j, obj in enumerate(objs):
            require(isinstance(obj, dict), f"'events[{i}].{key}[{j}]'", obj, "a map (a Kubernetes object)")


def check_index(index: object) -> None:
    require(isinstance(index, dict), "'index'", index, "a map")
    assert isinstance(index, dict)
    for gvk, entries in index.items():
        require(isinstance(gvk, str), "a key of 'index'", gvk, "a GVK string")
        require(isinstance(entries, dict), f"'index.{gvk}'", entries, "a map")
        for name, value in entries.items():
            require(isinstance(name, str), f"a key of 'index.{gvk}'", name, "a 'ns/name' string")
            require(is_int(value) and 0 <= value <= U64_MAX, f"'index.{gvk}.{name}'", value, "an unsigned 64-bit hash")


def check_lifecycles(raw: object) -> Lifecycles:
    require(isinstance(raw, dict), "'pod_lifecycles'", raw, "a map")
    assert isinstance(raw, dict)
    result: Lifecycles = {}
    for owner, by_hash in raw.items():
        ok_key = isinstance(owner, tuple) and len(owner) == 2 and all(isinstance(p, str) for p in owner)
        require(ok_key, "a key of 'pod_lifecycles'", owner, "an array [owner_gvk, 'ns/name']")
        where = f"'pod_lifecycles[{owner[0]} {owner[1]}]'"
        require(isinstance(by_hash, dict), where, by_hash, "a map")
        entries: dict[int, list[dict[str, Any]]] = {}
        for pod_hash, lifecycles in by_hash.items():
            require(is_int(pod_hash) and 0 <= pod_hash <= U64_MAX, f"a key of {where}", pod_hash, "an unsigned 64-bit hash")
            require(isinstance(lifecycles, tuple), f"{where}[{pod_hash}]", lifecycles, "an array")
            entries[pod_hash] = [lifecycle_entry(entry, where) for entry in lifecycles]
        result[owner] = entries
    return result


def lifecycle_entry(entry: object, where: str) -> dict[str, Any]:
    if isinstance(entry, dict) and len(entry) == 1:
        ((state, value),) = entry.items()
        if state == "Running" and is_int(value) and is_printable_time(value):
            return {"Running": value}
        if state == "Finished" and isinstance(value, tuple) and len(value) == 2 and all(is_int(v) and is_printable_time(v) for v in value):
            return {"Finished": list(value)}
    raise damaged(f"a lifecycle in {where} is not {{'Running': start}} or {{'Finished': [start, end]}}: {reprlib.repr(entry)}")
