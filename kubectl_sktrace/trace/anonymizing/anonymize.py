"""Keyed anonymization of a SimKube trace, so that a trace of a production cluster can be shared. Pure, no I/O.

Streaming: an ``Anonymizer`` takes the trace's parts in file order, ``config`` (kept as it is: it names kinds
and JSON pointers only), each event in turn (``event``, or ``applied``/``deleted`` per object), then ``index``
and ``pod_lifecycles``, which need what the events taught it. It keeps the last spec of each object applied and
the distinct pod specs of each owner of lifecycles packed in a spool (``format.BytesSpool``: 16 MB in memory, then a
temporary file), and bounded memos of pseudonyms and pod specs (``allowlist``), never the events.

Guarantees. What is kept is Kubernetes' own vocabulary, by allow-list (``allowlist``, docs/anonymize.md): field
names, enum values, numbers, quantities and timestamps where the field's type holds one, apiVersions and kinds,
Kubernetes' well-known label keys. Every other string, and every key of a map an owner fills (labels, annotations,
node selectors, data, resources), is replaced by its keyed pseudonym (``pseudonyms``) in a shape valid in its place, the same string by the same
pseudonym everywhere, so that the trace replays the same: selectors still select, ``configMapKeyRef.key`` still
names a key of its ConfigMap, a toleration still matches its taint, owners and references still resolve. The keys
of ``index`` (``ns/name``) and ``pod_lifecycles`` (``[owner_gvk, "ns/name"]``) are renamed to match. The same key
gives identical output, so two exports with one key line up; a different key, other names.

``report`` says how many strings were replaced in each kind of place, and which kept values a reviewer should
look at (every label value kept: zone, region, instance type, os and arch; custom resources' kinds, label values kept
on request).

Dropped, because they only repeat what is replaced or describe the source cluster: ``status`` (SimKube
drops it on import), ``metadata.managedFields`` and ``selfLink``, the annotations the recorder drops too
(``kubectl.kubernetes.io/last-applied-configuration``, a JSON copy of the whole object, and
``deployment.kubernetes.io/revision``). Secret ``data``/``stringData`` and ConfigMap ``binaryData`` values
become ``""`` (they must stay valid base64; the recorder stores Secrets so anyway).

Hashes are recomputed over the new specs, so that the simulator finds the lifecycles of the pods it creates. They
are computed after the events, where ``index`` and ``pod_lifecycles`` say which are needed (the last spec of each
object, the pod specs of each owner of lifecycles), so the anonymizer spools those specs meanwhile: memory grows with
the objects (a reference to each spec, a digest of each distinct pod spec), never with the events. A spec is
anonymized again there with the same pseudonyms, uncounted (``Walker.uncounted``).

- an ``index`` value equal to the spec hash (docs/spec.md §8.3) of its object's last applied spec becomes
  the hash of the new spec; any other (an object that is not in the events, a trace transformed after
  export) cannot be recomputed and becomes a keyed u64 (``Pseudonyms.opaque_hash``);
- a ``pod_lifecycles`` inner key becomes the stable pod spec hash (§8.4) of the new spec when it is the hash
  of a pod spec its owner held in the trace: a Pod's own spec as stored, a template as the API server admits it. That second
  form is a guess at the defaults of the admission plugins (``enableServiceLinks: true``,
  ``preemptionPolicy: PreemptLowerPriority``, ``priority: 0``, the not-ready and unreachable tolerations of
  300 s); it reproduces the hashes of SimKube's fixtures. Other inner keys become keyed u64s. ``rehashed``
  counts both outcomes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Callable

from kubectl_sktrace.model import GVK, NAMESPACE
from kubectl_sktrace.trace import hashing, sanitize
from kubectl_sktrace.trace.anonymizing.allowlist import Walker
from kubectl_sktrace.trace.files.format import BytesSpool, loads, object_packer
from kubectl_sktrace.trace.anonymizing.pseudonyms import Pseudonyms, new_key

__all__ = ["Anonymizer", "Rehashed", "new_key"]

Index = dict[str, dict[str, int]]
Lifecycles = dict[tuple[str, str], dict[int, list[dict[str, Any]]]]
PodSpecs = list[tuple[dict[str, Any], dict[str, Any]]]

# the specs kept, packed, for the hashes of index and pod_lifecycles: in memory up to this, then in a temporary file
_SPOOL_MEMORY = 16 << 20
_ADMISSION_DEFAULTS = {"enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority", "priority": 0}
_ADMISSION_TOLERATIONS = tuple(
    {"effect": "NoExecute", "key": f"node.kubernetes.io/{taint}", "operator": "Exists", "tolerationSeconds": 300}
    for taint in ("not-ready", "unreachable")
)


def _as_stored(spec: dict[str, Any]) -> dict[str, Any]:
    return spec


def _as_admitted(spec: dict[str, Any]) -> dict[str, Any]:
    """A pod template's spec as the API server's admission plugins complete it for a pod (see the module
    docstring): what the recorder hashed for the pods of a Deployment or a CronJob."""
    tolerations = [t for t in spec.get("tolerations") or () if isinstance(t, dict)]
    tolerated = {t.get("key") or "" for t in tolerations}
    added = [] if "" in tolerated else [t for t in _ADMISSION_TOLERATIONS if t["key"] not in tolerated]
    return {**_ADMISSION_DEFAULTS, **spec, "tolerations": [*(spec.get("tolerations") or ()), *added]}


@dataclass
class Rehashed:
    """How many hashes were recomputed over the new specs, and how many replaced by keyed u64s (module docstring)."""

    index_recomputed: int = 0
    index_replaced: int = 0
    pod_specs_recomputed: int = 0
    pod_specs_replaced: int = 0


def _hash_or_none(hash_of: Callable[[Any], int], value: Callable[[], Any]) -> int | None:
    """``hash_of(value())``, or None where the value has a shape no hash is defined for (bytes, a null container: a
    damaged or hand-made trace): its hash is then replaced by a keyed u64, as an unknown one is."""
    try:
        return hash_of(value())
    except (TypeError, AttributeError, ValueError):
        return None


class Anonymizer:
    """The keyed anonymizer of one trace: feed it the trace's parts in order (module docstring)."""

    def __init__(self, key: bytes, *, keep_label_values: frozenset[str] = frozenset(), record: bool = False) -> None:
        self.names = Pseudonyms(key, keep_label_values=keep_label_values, record=record)
        self._walker = Walker(self.names)
        self.rehashed = Rehashed()
        self._spool = BytesSpool(_SPOOL_MEMORY)  # the specs below, packed
        self._pack = object_packer()
        # (gvk, ns/name) -> its last spec: ((apiVersion, kind), where the spec is in the spool); one pair per kind
        self._last_spec: dict[tuple[str, str], tuple[tuple[str, str], int]] = {}
        self._kinds: dict[tuple[str, str], tuple[str, str]] = {}
        # (gvk, ns/name) of an object of a kind that owns lifecycles -> each distinct pod spec it held, by a digest of its
        # packed bytes: where it is in the spool, negative where it is hashed as stored (a Pod's own)
        self._pod_specs: dict[tuple[str, str], dict[bytes, int]] = {}
        self._lifecycle_kinds: frozenset[str] | None = None  # None: the config is not known yet, every kind's pod specs count

    def config(self, config: dict[str, Any]) -> dict[str, Any]:
        """The trace's config, kept: it names kinds and JSON pointers, nothing of the cluster. Given before the events,
        it says which kinds own pod lifecycles (``trackLifecycle``): only their pod specs are hashed."""
        tracked = config.get("trackedObjects") if isinstance(config, dict) else None
        if isinstance(tracked, dict):
            self._lifecycle_kinds = frozenset(GVK.canonical(gvk) for gvk, opts in tracked.items()
                                              if isinstance(opts, dict) and opts.get("trackLifecycle"))
        return config

    def event(self, event: dict[str, Any]) -> dict[str, Any]:
        """An event with its objects anonymized; its time and any other field kept."""
        out = dict(event)
        out["applied_objs"] = [self.applied(obj) for obj in event["applied_objs"]]
        out["deleted_objs"] = [self.deleted(obj) for obj in event["deleted_objs"]]
        return out

    def applied(self, obj: dict[str, Any]) -> dict[str, Any]:
        """An applied object anonymized; its spec is remembered, packed, for ``index`` (only the last one matters, so
        it is hashed there, once per object rather than once per event)."""
        key = sanitize.object_key(obj)
        ident = (str(key.gvk), key.ns_name) if key is not None else None
        new = self._anonymize(obj, key=ident)
        if ident is not None:
            self._keep_spec(ident, obj)
        return new

    def _keep_spec(self, ident: tuple[str, str], obj: dict[str, Any]) -> None:
        kind = (obj["apiVersion"], obj["kind"])
        self._last_spec[ident] = (self._kinds.setdefault(kind, kind), self._spool.add(self._pack(obj.get("spec"))))

    def deleted(self, obj: dict[str, Any]) -> dict[str, Any]:
        """A deleted object (a stub, or a whole object in older traces) anonymized."""
        return self._anonymize(obj)

    def ns_name(self, gvk: str, ns_name: str) -> str:
        """A key of ``index`` or ``pod_lifecycles``, ``ns/name`` (``name`` when cluster-scoped), renamed."""
        namespace, slash, name = ns_name.partition("/")
        if not slash:
            return self.names.namespace(ns_name) if GVK.canonical(gvk) == str(NAMESPACE) else self.names.name(ns_name)
        return f"{self.names.namespace(namespace)}/{self.names.name(name)}"

    def index(self, index: Index) -> Index:
        """The index renamed, each hash recomputed over its object's new spec where it can be; after the events."""
        out: Index = {}
        for gvk, entries in index.items():
            canonical = GVK.canonical(gvk)
            out[gvk] = {self.ns_name(gvk, ns_name): self._index_hash(canonical, ns_name, value) for ns_name, value in entries.items()}
        return out

    def pod_lifecycles(self, lifecycles: Lifecycles) -> Lifecycles:
        """``pod_lifecycles`` with owners renamed and pod spec hashes recomputed where they can be; after the events."""
        out: Lifecycles = {}
        for (owner_gvk, ns_name), by_hash in lifecycles.items():
            renamed = out.setdefault((owner_gvk, self.ns_name(owner_gvk, ns_name)), {})
            owner = (GVK.canonical(owner_gvk), ns_name)
            new_hashes = self._new_pod_hashes(self._pod_specs.get(owner, {}), wanted=set(by_hash))
            for pod_hash, entries in by_hash.items():
                renamed.setdefault(self._pod_hash(pod_hash, new_hashes), []).extend(dict(entry) for entry in entries)
        return out

    def _new_pod_hashes(self, specs: dict[bytes, int], *, wanted: set[int]) -> dict[int, int]:
        """For each hash in ``wanted`` that is the hash of one of an owner's pod specs (a Pod's own as stored, a template
        as admitted: module docstring), the hash of that spec anonymized, in the same form."""
        found: dict[int, int] = {}
        for ref in specs.values():
            old = loads(self._spool.get(abs(ref)))
            form = _as_stored if ref < 0 else _as_admitted
            old_hash = _hash_or_none(hashing.pod_spec_hash, lambda: form(old))
            if old_hash is not None and old_hash in wanted and old_hash not in found:
                with self._walker.uncounted():
                    new = self._walker.model("V1PodSpec", old)
                new_hash = _hash_or_none(hashing.pod_spec_hash, lambda: form(new))
                if new_hash is not None:
                    found[old_hash] = new_hash
        return found

    def _anonymize(self, obj: dict[str, Any], *, key: tuple[str, str] | None = None) -> dict[str, Any]:
        """The object anonymized; the pod specs of an owner of lifecycles remembered (hashed in ``pod_lifecycles``,
        where the trace says which are needed: hashing them here, twice per event, cost more than the rest)."""
        walker = self._walker
        walker.pod_specs.clear()
        walker.packed.clear()
        new = walker.object(obj)
        if key is not None and walker.pod_specs and (self._lifecycle_kinds is None or key[0] in self._lifecycle_kinds):
            own = obj.get("spec") if obj.get("kind") == "Pod" else None
            for old_spec, _ in walker.pod_specs:
                self._keep_pod_spec(key, old_spec, stored=old_spec is own)
        walker.pod_specs.clear()
        walker.packed.clear()
        return new

    def _keep_pod_spec(self, key: tuple[str, str], old: dict[str, Any], *, stored: bool) -> None:
        packed = self._walker.packed.get(id(old)) or self._pack(old)
        digest = hashlib.blake2b(packed, digest_size=16).digest()
        specs = self._pod_specs.setdefault(key, {})
        if digest not in specs:
            ref = self._spool.add(packed)
            specs[digest] = -ref if stored else ref

    def report(self) -> dict[str, Any]:
        """What the anonymizer did, for the summary: strings replaced per kind of place, kept values to review."""
        return {"stringsReplaced": dict(sorted(self.names.replaced.items())), "keptForReview": dict(sorted(self.names.review.items())),
                "hashesRecomputed": self.rehashed.index_recomputed + self.rehashed.pod_specs_recomputed,
                "hashesReplaced": self.rehashed.index_replaced + self.rehashed.pod_specs_replaced}

    def pseudonym_map(self) -> list[dict[str, str]]:
        """Each original string with its pseudonym (``--anonymize-map``), when the anonymizer was made to ``record``."""
        record = self.names.record or {}
        return [{"original": original, "pseudonym": pseudonym} for (original, _), pseudonym in sorted(record.items())]

    def _index_hash(self, gvk: str, ns_name: str, value: int) -> int:
        last = self._last_spec.get((gvk, ns_name))
        if last is not None:
            (api_version, kind), ref = last
            spec = loads(self._spool.get(ref))
            if _hash_or_none(hashing.spec_hash, lambda: spec) == value:
                with self._walker.uncounted():
                    new_spec = self._walker.field(api_version, kind, "spec", spec)
                recomputed = _hash_or_none(hashing.spec_hash, lambda: new_spec)
                if recomputed is not None:
                    self.rehashed.index_recomputed += 1
                    return recomputed
        self.rehashed.index_replaced += 1
        return self.names.opaque_hash(value)

    def _pod_hash(self, value: int, new_hashes: dict[int, int]) -> int:
        new = new_hashes.get(value)
        if new is not None:
            self.rehashed.pod_specs_recomputed += 1
            return new
        self.rehashed.pod_specs_replaced += 1
        return self.names.opaque_hash(value)
