"""``kubectl sktrace validate``: the checks SimKube makes when it loads a trace, and its validation rules (docs/spec.md §8.2, §9).

Two kinds of problems, reported differently:

- A file that cannot be decoded as a v2 trace at all (empty, truncated, not msgpack, JSON, pre-v2 array
  shape, unknown version, a missing or wrong-typed top-level key) raises TraceFormatError: there is nothing
  to report on, so the CLI prints one ``Error:`` line and exits 1.
- A decodable trace that SimKube would still refuse to load is reported as error findings, so that every
  problem shows at once: ``L0001`` the config does not normalize (§3), ``L0002`` an ``ownerReferences``
  entry lacks ``apiVersion``, ``kind``, ``name`` or ``uid``, ``L0003`` a label or annotation value is not a
  string. These codes are ours; SimKube only says "cannot load".

Then SimKube's rules, over the events in order: ``W0000`` an applied object carries a non-empty
``status``; ``E0001`` a pod template uses a ServiceAccount, ``E0002``/``E0003`` takes env from a
Secret/ConfigMap, ``E0004``/``E0005`` mounts a volume from a Secret/ConfigMap that was not applied earlier
in the trace (in the same namespace, and not deleted since). Pod templates are found through the trace's
own config (``podSpecTemplatePaths``); kinds it does not list are not checked. References marked
``optional: true`` are skipped: the pod starts without them.

Then ours, as warnings (SimKube loads such a trace, but its simulation goes wrong): ``W0101`` an ``index`` key and
``W0102`` a ``pod_lifecycles`` owner that name no object applied in the trace (a program moved or deleted it and
the tables did not follow: the simulator finds no lifecycle for its pods). ``W0101`` only where the trace applies no
object of that kind in that namespace at all (one finding per kind and namespace): SimKube's exports also index the
objects that existed before their window, beside those in it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import IO, Any, Iterable, Iterator

from kubectl_sktrace import render
from kubectl_sktrace.errors import ConfigError
from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.plural import counted
from kubectl_sktrace.timeparse import format_time
from kubectl_sktrace.trace.files.format import Trace, source_name
from kubectl_sktrace.trace.references import REFERENCED_KIND, Reference, references
from kubectl_sktrace.trace.sanitize import object_key
from kubectl_sktrace.trace.files.textformat import read_any_trace
from kubectl_sktrace.tracerconfig import TracerConfig, config_from_trace

RULES = {
    "W0000": "status field present",
    "W0101": "index names objects of a namespace without any",
    "W0102": "pod lifecycle owner names no object",
    "E0001": "service account missing",
    "E0002": "env secret missing",
    "E0003": "env configmap missing",
    "E0004": "volume secret missing",
    "E0005": "volume configmap missing",
    "L0001": "config does not load",
    "L0002": "incomplete ownerReference",
    "L0003": "label or annotation value is not a string",
}


@dataclass(frozen=True)
class Finding:
    """One problem: its rule code, a one-line message, the event it was found in and the object."""

    code: str
    message: str
    ts: int | None = None
    object: ObjKey | None = None

    @property
    def is_error(self) -> bool:
        return not self.code.startswith("W")


@dataclass(frozen=True)
class ValidationReport:
    path: str
    findings: tuple[Finding, ...]

    @property
    def has_errors(self) -> bool:
        return any(f.is_error for f in self.findings)

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.is_error)

    @property
    def warnings(self) -> int:
        return sum(1 for f in self.findings if not f.is_error)


def validate_trace(path: str, *, stdin: IO[bytes] | None = None) -> ValidationReport:
    """Validate the trace at ``path`` (``-``: ``stdin``); TraceFormatError when it cannot be decoded at all."""
    return ValidationReport(path=source_name(path), findings=tuple(check_trace(read_any_trace(path, stdin=stdin))))


def check_trace(trace: Trace) -> Iterator[Finding]:
    config: TracerConfig | None
    try:
        config = config_from_trace(trace.config)
    except ConfigError as exc:
        config = None
        yield Finding(code="L0001", message=f"SimKube cannot load this config: {exc}")
    references = ReferenceRules(config) if config is not None else None
    applied: set[tuple[str, str]] = set()
    for event in trace.events:
        ts = event["ts"]
        for obj in event["applied_objs"]:
            key = object_key(obj)
            if key is not None:
                applied.add((str(key.gvk), key.ns_name))
            yield from _load_checks(obj, ts=ts, key=key)
            status = obj.get("status")
            if status not in (None, {}):
                yield Finding(code="W0000", message="status is present (SimKube drops it; export without --keep-status)", ts=ts, object=key)
            if references is not None and key is not None:
                yield from references.applied(obj, key=key, ts=ts)
        for obj in event["deleted_objs"]:
            key = object_key(obj)
            yield from _load_checks(obj, ts=ts, key=key)
            if key is not None and references is not None:
                references.deleted(key)
    yield from _dangling_keys(trace, applied)


def _dangling_keys(trace: Trace, applied: set[tuple[str, str]]) -> Iterator[Finding]:
    """``W0101``/``W0102``: ``index`` keys and ``pod_lifecycles`` owners that name no object applied in the trace (module docstring)."""
    namespaces = {(gvk, ns_name.rpartition("/")[0]) for gvk, ns_name in applied}
    for gvk, entries in trace.index.items():
        dangling = Counter(ns_name.rpartition("/")[0] for ns_name in entries if (GVK.canonical(gvk), ns_name) not in applied)
        for namespace, count in dangling.items():
            if (GVK.canonical(gvk), namespace) not in namespaces:
                where = f"namespace {namespace}" if namespace else "the cluster scope"
                yield Finding(code="W0101", message=f"index names {counted(count, f'{gvk} object')} in {where}, where no event applies any")
    for gvk, ns_name in trace.pod_lifecycles:
        if (GVK.canonical(gvk), ns_name) not in applied:
            yield Finding(code="W0102", message=f"pod_lifecycles names the owner {gvk} {ns_name}, which no event applies; "
                                                "the simulator finds no lifecycle for its pods")


class ReferenceRules:
    """SimKube's rules E0001-E0005 over a trace's objects, fed one at a time in trace order, so that a
    writer can check a trace while it streams it. Holds the keys of the objects in the trace so far."""

    def __init__(self, config: TracerConfig) -> None:
        self._config = config
        # plain strings rather than ObjKeys or GVKs: looked up for every reference of every object, and a tuple of
        # strings hashes and compares without calling back into Python
        self._existing: set[_Id] = set()

    def checks(self, gvk: GVK) -> bool:
        """Whether objects of this kind hold pod templates the rules look into (others need no body)."""
        opts = self._config.get(gvk)
        return opts is not None and bool(opts.pod_spec_template_paths)

    def paths(self, gvk: GVK) -> tuple[str, ...]:
        """The template paths the rules look into for a kind (none: not checked)."""
        opts = self._config.get(gvk)
        return () if opts is None else opts.pod_spec_template_paths

    def checked_kinds(self) -> list[GVK]:
        return [gvk for gvk in self._config.tracked if self.checks(gvk)]

    def applied(self, obj: dict[str, Any] | None, *, key: ObjKey, ts: int) -> Iterator[Finding]:
        """The findings of an applied object (``obj`` may be None for a kind that ``checks`` refuses)."""
        for code, name, what in self._missing(obj, key=key):
            yield Finding(code=code, message=f"{what} {key.namespace}/{name} is not in the trace before this event", ts=ts, object=key)

    def missing_codes(self, obj: dict[str, Any] | None, *, key: ObjKey) -> list[str]:
        """The codes of ``applied``'s findings, without their messages (what an export counts)."""
        return [code for code, _, _ in self._missing(obj, key=key)]

    @staticmethod
    def prepare(refs: Iterable[tuple[str, str]], *, namespace: str) -> tuple[tuple[str, _Id], ...]:
        """``(code, name)`` references of an object of ``namespace``, as the recorder stored them
        (``references.distinct_references`` under the same template paths), made ready for ``missing_stored``
        (an export prepares each stored list once: the versions of one object share it)."""
        return tuple((code, _id(REFERENCED_KIND[code], namespace, name)) for code, name in dict.fromkeys(refs))

    def missing_stored(self, prepared: tuple[tuple[str, _Id], ...], *, key: ObjKey) -> list[str]:
        """``missing_codes`` of an object of a checked kind from its ``prepare``d references, without its body."""
        existing = self._existing
        missing = [code for code, ref in prepared if ref not in existing] if prepared else []
        gvk = key.gvk
        existing.add((gvk.group, gvk.version, gvk.kind, key.namespace, key.name))
        return missing

    def deleted(self, key: ObjKey) -> None:
        self._existing.discard(_id(key.gvk, key.namespace, key.name))

    def _missing(self, obj: dict[str, Any] | None, *, key: ObjKey) -> list[tuple[str, str, str]]:
        """``(code, name, what)`` of each reference of ``obj`` not applied before it, once per code and name;
        then ``obj`` counts as applied."""
        opts = self._config.get(key.gvk)
        found = references(obj, opts.pod_spec_template_paths) if obj is not None and opts is not None else []
        return self._check(found, key=key)

    def _check(self, found: Iterable[Reference], *, key: ObjKey) -> list[tuple[str, str, str]]:
        missing: list[tuple[str, str, str]] = []
        reported: set[tuple[str, str]] = set()
        for code, gvk, name, what in found:
            if (code, name) not in reported and _id(gvk, key.namespace, name) not in self._existing:
                reported.add((code, name))
                missing.append((code, name, what))
        self._existing.add(_id(key.gvk, key.namespace, key.name))
        return missing


_Id = tuple[str, str, str, str, str]


def _id(gvk: GVK, namespace: str, name: str) -> _Id:
    return gvk.group, gvk.version, gvk.kind, namespace, name


def _load_checks(obj: dict[str, Any], *, ts: int, key: ObjKey | None) -> Iterator[Finding]:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return
    refs = metadata.get("ownerReferences") or []
    if not isinstance(refs, list):
        yield Finding(code="L0002", message="ownerReferences is not a list; SimKube cannot load it", ts=ts, object=key)
        refs = []
    for i, ref in enumerate(refs):
        missing = [f for f in ("apiVersion", "kind", "name", "uid") if not isinstance(ref, dict) or not isinstance(ref.get(f), str)]
        if missing:
            yield Finding(code="L0002", message=f"ownerReferences[{i}] has no {', '.join(missing)}; SimKube cannot load it", ts=ts, object=key)
    for field in ("labels", "annotations"):
        values = metadata.get(field) or {}
        if isinstance(values, dict):
            bad = [k for k, v in values.items() if not isinstance(v, str)]
            if bad:
                yield Finding(code="L0003", message=f"{field} {', '.join(map(str, bad))}: the value is not a string; SimKube cannot load it", ts=ts, object=key)


def validation_to_dict(report: ValidationReport) -> dict[str, Any]:
    """A ValidationReport as plain data (JSON/YAML output)."""
    return {
        "file": report.path,
        "valid": not report.has_errors,
        "errors": report.errors,
        "warnings": report.warnings,
        "findings": [
            {
                "code": f.code,
                "severity": "error" if f.is_error else "warning",
                "ts": f.ts,
                "time": None if f.ts is None else format_time(f.ts),
                "object": _object_fields(f.object),
                "message": f.message,
            }
            for f in report.findings
        ],
    }


def _object_fields(key: ObjKey | None) -> dict[str, str] | None:
    """A finding's object as a program reads it: a field each, as in an object's own ``apiVersion``, ``kind`` and metadata."""
    if key is None:
        return None
    return {"apiVersion": key.gvk.api_version, "kind": key.gvk.kind, "namespace": key.namespace, "name": key.name}


def render_unreadable(path: str, error: str, fmt: str) -> str:
    """``validate -o json|yaml`` of a file that is no trace at all: the error in the format asked for, shaped
    like a report (``valid: false``) so that a program reads one shape either way."""
    return render.dump({"file": source_name(path), "valid": False, "error": error, "errors": 1, "warnings": 0, "findings": []}, fmt)


def render_validation(report: ValidationReport, fmt: str) -> str:
    """``kubectl sktrace validate``: the findings, then one verdict line."""
    data = validation_to_dict(report)
    if fmt != "table":
        return render.dump(data, fmt)
    verdict = (
        f"{report.path}: {'invalid' if report.has_errors else 'valid'}, "
        f"{counted(report.errors, 'error')}, {counted(report.warnings, 'warning')}"
    )
    if not data["findings"]:
        return verdict
    rows = [{**f, "object": None if finding.object is None else str(finding.object)} for f, finding in zip(data["findings"], report.findings)]
    table = render.render_table(rows, "table", columns=["code", "time", "object", "message"])
    return f"{table}\n\n{verdict}"
