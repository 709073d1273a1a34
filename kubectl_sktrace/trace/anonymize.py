"""Keyed anonymization of a SimKube trace, so that a trace of a production cluster can be shared. Pure, no I/O.

Streaming: an ``Anonymizer`` takes the trace's parts in file order, ``config`` (kept as it is: it names kinds
and JSON pointers only), each event in turn (``event``, or ``applied``/``deleted`` per object), then ``index``
and ``pod_lifecycles``, which need what the events taught it. It holds one pair of spec hashes per object
applied, one entry per distinct pod spec and a bounded memo of pseudonyms, never the events themselves.

Guarantees. Every string that names something is replaced by its keyed pseudonym (``pseudonyms``), the same
string by the same pseudonym everywhere, so that the trace replays the same: namespaces; names of objects
(``metadata.name``, ``generateName``), of containers, volumes and volume mounts; label and annotation
values and every selector's values (``matchLabels``, ``matchExpressions``, a Service's ``selector``), so
Deployments still select their pods; the names a pod spec refers to (ServiceAccount, ConfigMaps and
Secrets of env, envFrom and volumes, claim names, image pull secrets), so SimKube's rules E0001-E0005 meet
the same references; ``ownerReferences`` and any ``{kind, name}`` reference (HPA targets, role bindings),
uids alike; hostnames (``nodeName``, ``hostname``, ``subdomain``, ``serviceName``, hosts, DNS searches,
the ``kubernetes.io/hostname`` node label in node selectors and affinities); images (repository and tag;
``latest`` and the lack of a tag kept); env values, commands and arguments; file and URL paths
(``mountPath``, ``subPath``, ``workingDir``, any ``path``: volume items, ``hostPath``, probes, Ingress
rules), which name applications as often as images do; ConfigMap data. The keys of ``index``
(``ns/name``) and ``pod_lifecycles`` (``[owner_gvk, "ns/name"]``) are renamed to match. The same key
gives identical output, so two exports with one key line up; a different key, other names.

Kept unchanged: kinds and apiVersions, event timestamps, order and counts, resource requests and limits,
replica counts, schedules, label and annotation keys, ConfigMap data keys, env variable names, ports,
probes' other fields, tolerations, node labels other than the hostname, priority and scheduler names,
finalizers. A custom resource's own fields are kept, except where they use the field
names above. Read these before sharing: they are kept because the simulation needs them or they rarely
name anything, not because they cannot.

Dropped, because they only repeat what is replaced or describe the source cluster: ``status`` (SimKube
drops it on import), ``metadata.managedFields`` and ``selfLink``, the annotations the recorder drops too
(``kubectl.kubernetes.io/last-applied-configuration``, a JSON copy of the whole object, and
``deployment.kubernetes.io/revision``). Secret ``data``/``stringData`` and ConfigMap ``binaryData`` values
become ``""`` (they must stay valid base64; the recorder stores Secrets so anyway).

Hashes are recomputed over the new specs, so that the simulator finds the lifecycles of the pods it creates:

- an ``index`` value equal to the spec hash (docs/spec.md §8.3) of its object's last applied spec becomes
  the hash of the new spec; any other (an object that is not in the events, a trace transformed after
  export) cannot be recomputed and becomes a keyed u64 (``Pseudonyms.opaque_hash``);
- a ``pod_lifecycles`` inner key becomes the stable pod spec hash (§8.4) of the new spec when it is the hash
  of a pod spec in the trace, as stored (a Pod) or, for a template, as the API server admits it. That second
  form is a guess at the defaults of the admission plugins (``enableServiceLinks: true``,
  ``preemptionPolicy: PreemptLowerPriority``, ``priority: 0``, the not-ready and unreachable tolerations of
  300 s); it reproduces the hashes of SimKube's fixtures. Other inner keys become keyed u64s. ``rehashed``
  counts both outcomes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.model import GVK, NAMESPACE
from kubectl_sktrace.trace import hashing, sanitize
from kubectl_sktrace.trace.pseudonyms import Pseudonyms, new_key

__all__ = ["Anonymizer", "Rehashed", "new_key"]

Index = dict[str, dict[str, int]]
Lifecycles = dict[tuple[str, str], dict[int, list[dict[str, Any]]]]
PodSpecs = list[tuple[dict[str, Any], dict[str, Any]]]

_DROPPED_TOP = frozenset({"status"})
_DROPPED_METADATA = frozenset({"managedFields", "selfLink"})
_DROPPED_ANNOTATIONS = frozenset(sanitize.DROPPED_ANNOTATIONS)
_DATA_FIELDS = frozenset({"data", "stringData", "binaryData"})
_HOSTNAME_LABEL = "kubernetes.io/hostname"
_SCALARS = frozenset({str, int, float, bool, type(None)})
_ADMISSION_DEFAULTS = {"enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority", "priority": 0}
_ADMISSION_TOLERATIONS = tuple(
    {"effect": "NoExecute", "key": f"node.kubernetes.io/{taint}", "operator": "Exists", "tolerationSeconds": 300}
    for taint in ("not-ready", "unreachable")
)


class _Walker:
    """Anonymizes one object by its field names (the rule tables below); collects the pod specs it met, as
    they were and as they became, for the hashes of ``pod_lifecycles``."""

    def __init__(self, names: Pseudonyms) -> None:
        self.names = names
        self.pod_specs: PodSpecs = []

    def object(self, obj: dict[str, Any]) -> dict[str, Any]:
        kind = obj.get("kind")
        out: dict[str, Any] = {}
        for key, value in obj.items():
            if key in _DROPPED_TOP:
                continue
            if key == "metadata":
                out[key] = self.metadata(value, namespace_kind=kind == NAMESPACE.kind and obj.get("apiVersion") == "v1")
            elif key in _DATA_FIELDS and kind in ("ConfigMap", "Secret") and isinstance(value, dict):
                out[key] = self.data(value, keep_text=kind == "ConfigMap" and key == "data")
            elif key in ("apiVersion", "kind"):
                out[key] = value
            else:
                out[key] = self.walk(value)
        return out

    def walk(self, value: Any) -> Any:
        if isinstance(value, dict):
            return self.walk_dict(value, _RULES)
        if isinstance(value, (list, tuple)):
            return [self.walk(item) for item in value]
        return value

    def walk_dict(self, value: dict[str, Any], rules: dict[str, _Rule]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, item in value.items():
            rule = rules.get(key)
            if rule is not None:
                out[key] = rule(self, item)
            elif type(item) in _SCALARS:  # most fields: returned as they are, without a call
                out[key] = item
            else:
                out[key] = self.walk(item)
        kind, name = value.get("kind"), value.get("name")
        if isinstance(kind, str) and isinstance(name, str):  # a reference: {apiVersion, kind, name, ...}
            out["name"] = self.names.namespace(name) if kind == NAMESPACE.kind else self.names.name(name)
        if isinstance(value.get("containers"), list):
            self.pod_specs.append((value, out))
        return out

    def metadata(self, meta: Any, *, namespace_kind: bool) -> Any:
        if not isinstance(meta, dict):
            return self.walk(meta)
        kept = {key: value for key, value in meta.items() if key not in _DROPPED_METADATA}
        out = self.walk_dict(kept, _METADATA_RULES)
        if namespace_kind and isinstance(meta.get("name"), str):
            out["name"] = self.names.namespace(meta["name"])
        return out

    def data(self, values: dict[str, Any], *, keep_text: bool) -> dict[str, Any]:
        """ConfigMap data as text pseudonyms; base64 values (Secrets, binaryData) as ``""``."""
        return {key: (self.names.text(v) if keep_text else "") if isinstance(v, str) else v for key, v in values.items()}

    def labels(self, values: Any) -> Any:
        if not isinstance(values, dict):
            return self.walk(values)
        return {key: self.names.label_value(key, v) if isinstance(v, str) else v for key, v in values.items()}

    def requirements(self, values: Any, rename: Callable[[str, str], str]) -> Any:
        """``[{key, operator, values}]`` of a label or node selector, each value renamed by ``rename(key, value)``."""
        if not isinstance(values, list):
            return self.walk(values)
        out = []
        for requirement in values:
            if isinstance(requirement, dict) and isinstance(requirement.get("key"), str) and isinstance(requirement.get("values"), list):
                key = requirement["key"]
                requirement = {**requirement, "values": [rename(key, v) if isinstance(v, str) else v for v in requirement["values"]]}
            out.append(requirement)
        return out


_Rule = Callable[[_Walker, Any], Any]


def _name(walker: _Walker, value: Any) -> Any:
    return walker.names.name(value) if isinstance(value, str) else walker.walk(value)


def _names(walker: _Walker, value: Any) -> Any:
    return [_name(walker, item) for item in value] if isinstance(value, list) else walker.walk(value)


def _namespace(walker: _Walker, value: Any) -> Any:
    return walker.names.namespace(value) if isinstance(value, str) else walker.walk(value)


def _namespaces(walker: _Walker, value: Any) -> Any:
    return [_namespace(walker, item) for item in value] if isinstance(value, list) else walker.walk(value)


def _texts(walker: _Walker, value: Any) -> Any:
    if not isinstance(value, list):
        return walker.walk(value)
    return [walker.names.text(item) if isinstance(item, str) else item for item in value]


def _named(walker: _Walker, value: Any) -> Any:
    """A dict whose ``name`` is a name: a container, a volume, ``configMapKeyRef``, ``{name}`` of a list."""
    if not isinstance(value, dict):
        return walker.walk(value)
    out = walker.walk_dict(value, _RULES)
    if isinstance(value.get("name"), str):
        out["name"] = walker.names.name(value["name"])
    return out


def _named_list(walker: _Walker, value: Any) -> Any:
    return [_named(walker, item) for item in value] if isinstance(value, list) else walker.walk(value)


def _env(walker: _Walker, value: Any) -> Any:
    """``env``: names kept, values replaced, ``valueFrom`` references renamed."""
    if not isinstance(value, list):
        return walker.walk(value)
    out = []
    for item in value:
        renamed = walker.walk(item)
        if isinstance(item, dict) and isinstance(item.get("value"), str):
            renamed["value"] = walker.names.text(item["value"])
        out.append(renamed)
    return out


def _simple(method: Callable[[Pseudonyms, str], str]) -> _Rule:
    def rule(walker: _Walker, value: Any) -> Any:
        return method(walker.names, value) if isinstance(value, str) else walker.walk(value)

    return rule


def _with_rules(rules: dict[str, _Rule]) -> _Rule:
    """The rule of a dict whose own fields follow ``rules`` (the general rules apply below them)."""

    def rule(walker: _Walker, value: Any) -> Any:
        return walker.walk_dict(value, rules) if isinstance(value, dict) else walker.walk(value)

    return rule


def _hostnames(label: str) -> _Rule:
    """The requirements of a node selector term: node labels select the simulated cluster's nodes, so only the
    values of ``label`` (a hostname) are renamed."""

    def rule(walker: _Walker, value: Any) -> Any:
        return walker.requirements(value, lambda key, v: walker.names.name(v) if key == label else v)

    return rule


_LABEL_SELECTOR = _with_rules({
    "matchLabels": lambda walker, value: walker.labels(value),
    "matchExpressions": lambda walker, value: walker.requirements(value, walker.names.label_value),
})
_NODE_TERM = _with_rules({"matchExpressions": _hostnames(_HOSTNAME_LABEL), "matchFields": _hostnames("metadata.name")})


def _selector(walker: _Walker, value: Any) -> Any:
    """A LabelSelector (Deployment, Job, PodDisruptionBudget) or a plain map of labels (Service)."""
    if isinstance(value, dict) and ("matchLabels" in value or "matchExpressions" in value):
        return _LABEL_SELECTOR(walker, value)
    return walker.labels(value)


def _node_selector(walker: _Walker, value: Any) -> Any:
    """A pod's ``nodeSelector``: node labels, kept but for the hostname (see ``_hostnames``)."""
    if not isinstance(value, dict):
        return walker.walk(value)
    return {key: walker.names.name(v) if key == _HOSTNAME_LABEL and isinstance(v, str) else v for key, v in value.items()}


def _node_terms(walker: _Walker, value: Any) -> Any:
    return [_NODE_TERM(walker, item) for item in value] if isinstance(value, list) else walker.walk(value)


def _metadata(walker: _Walker, value: Any) -> Any:
    return walker.metadata(value, namespace_kind=False)


def _annotations(walker: _Walker, value: Any) -> Any:
    if not isinstance(value, dict):
        return walker.walk(value)
    return walker.labels({key: v for key, v in value.items() if key not in _DROPPED_ANNOTATIONS})


_NAME_FIELDS = ("hostname", "subdomain", "nodeName", "serviceAccountName", "serviceAccount", "serviceName", "claimName",
                "secretName", "containerName", "targetContainerName", "host", "externalName")
_NAMED_FIELDS = ("configMap", "secret", "configMapKeyRef", "secretKeyRef", "configMapRef", "secretRef", "service")
_NAMED_LIST_FIELDS = ("containers", "initContainers", "ephemeralContainers", "volumes", "volumeMounts", "volumeDevices",
                      "imagePullSecrets", "secrets")
_RULES: dict[str, _Rule] = {
    **{field: _name for field in _NAME_FIELDS},
    **{field: _names for field in ("hosts", "hostnames", "searches", "resourceNames")},
    **{field: _named for field in _NAMED_FIELDS},
    **{field: _named_list for field in _NAMED_LIST_FIELDS},
    **{field: _texts for field in ("command", "args")},
    **{field: _LABEL_SELECTOR for field in ("labelSelector", "namespaceSelector", "podSelector")},
    "preference": _NODE_TERM,
    "nodeSelectorTerms": _node_terms,
    "nodeSelector": _node_selector,
    "selector": _selector,
    "namespace": _namespace,
    "namespaces": _namespaces,
    "uid": _simple(Pseudonyms.uid),
    "image": _simple(Pseudonyms.image),
    **{field: _simple(Pseudonyms.path) for field in ("path", "mountPath", "subPath", "subPathExpr", "workingDir")},
    "env": _env,
    "metadata": _metadata,
}
_METADATA_RULES: dict[str, _Rule] = {
    **_RULES,
    "name": _name,
    "generateName": _simple(Pseudonyms.generate_name),
    "labels": lambda walker, value: walker.labels(value),
    "annotations": _annotations,
}


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


def _canonical_gvk(text: str) -> str:
    try:
        return str(GVK.parse(text))
    except UsageError:
        return text


class Anonymizer:
    """The keyed anonymizer of one trace: feed it the trace's parts in order (module docstring)."""

    def __init__(self, key: bytes) -> None:
        self.names = Pseudonyms(key)
        self.rehashed = Rehashed()
        self._last_spec: dict[tuple[str, str], tuple[int, int]] = {}  # (gvk, ns/name) -> its spec hashes, old and new
        self._pod_hashes: dict[int, int] = {}  # a pod spec's stable hash -> the new spec's

    def config(self, config: dict[str, Any]) -> dict[str, Any]:
        """The trace's config, kept: it names kinds and JSON pointers, nothing of the cluster."""
        return config

    def event(self, event: dict[str, Any]) -> dict[str, Any]:
        """An event with its objects anonymized; its time and any other field kept."""
        out = dict(event)
        out["applied_objs"] = [self.applied(obj) for obj in event["applied_objs"]]
        out["deleted_objs"] = [self.deleted(obj) for obj in event["deleted_objs"]]
        return out

    def applied(self, obj: dict[str, Any]) -> dict[str, Any]:
        """An applied object anonymized; its spec hashes are remembered for ``index``."""
        new = self._anonymize(obj)
        key = sanitize.object_key(obj)
        if key is not None:
            self._last_spec[(str(key.gvk), key.ns_name)] = (hashing.spec_hash(obj.get("spec")), hashing.spec_hash(new.get("spec")))
        return new

    def deleted(self, obj: dict[str, Any]) -> dict[str, Any]:
        """A deleted object (a stub, or a whole object in older traces) anonymized."""
        return self._anonymize(obj)

    def ns_name(self, gvk: str, ns_name: str) -> str:
        """A key of ``index`` or ``pod_lifecycles``, ``ns/name`` (``name`` when cluster-scoped), renamed."""
        namespace, slash, name = ns_name.partition("/")
        if not slash:
            return self.names.namespace(ns_name) if _canonical_gvk(gvk) == str(NAMESPACE) else self.names.name(ns_name)
        return f"{self.names.namespace(namespace)}/{self.names.name(name)}"

    def index(self, index: Index) -> Index:
        """The index renamed, each hash recomputed over its object's new spec where it can be; after the events."""
        out: Index = {}
        for gvk, entries in index.items():
            canonical = _canonical_gvk(gvk)
            out[gvk] = {self.ns_name(gvk, ns_name): self._index_hash(canonical, ns_name, value) for ns_name, value in entries.items()}
        return out

    def pod_lifecycles(self, lifecycles: Lifecycles) -> Lifecycles:
        """``pod_lifecycles`` with owners renamed and pod spec hashes recomputed where they can be; after the events."""
        out: Lifecycles = {}
        for (owner_gvk, ns_name), by_hash in lifecycles.items():
            renamed = out.setdefault((owner_gvk, self.ns_name(owner_gvk, ns_name)), {})
            for pod_hash, entries in by_hash.items():
                renamed.setdefault(self._pod_hash(pod_hash), []).extend(dict(entry) for entry in entries)
        return out

    def _anonymize(self, obj: dict[str, Any]) -> dict[str, Any]:
        walker = _Walker(self.names)
        new = walker.object(obj)
        for old_spec, new_spec in walker.pod_specs:
            self._learn_pod_spec(old_spec, new_spec)
        return new

    def _learn_pod_spec(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        for form in (_as_stored, _as_admitted):
            old_hash = hashing.pod_spec_hash(form(old))
            if old_hash not in self._pod_hashes:
                self._pod_hashes[old_hash] = hashing.pod_spec_hash(form(new))

    def _index_hash(self, gvk: str, ns_name: str, value: int) -> int:
        hashes = self._last_spec.get((gvk, ns_name))
        if hashes is not None and hashes[0] == value:
            self.rehashed.index_recomputed += 1
            return hashes[1]
        self.rehashed.index_replaced += 1
        return self.names.opaque_hash(value)

    def _pod_hash(self, value: int) -> int:
        new = self._pod_hashes.get(value)
        if new is not None:
            self.rehashed.pod_specs_recomputed += 1
            return new
        self.rehashed.pod_specs_replaced += 1
        return self.names.opaque_hash(value)
