"""What ``--anonymize`` keeps of an object, by allow-list: Kubernetes' own vocabulary, and nothing else. Pure, no I/O.

An object is walked with the types of its fields (``apischema``: the field names and types of every built-in API
type, as the ``kubernetes`` package's models declare them). Kept as they are:

- the field names of the built-in types, ``apiVersion`` and ``kind`` (a custom resource's too: they are reported
  for review), numbers, booleans and timestamps (typed so);
- a string that is a number, a quantity, a percentage or a duration only in a field typed to hold one (``vocabulary``:
  resource quantities, ``sizeLimit``, an HPA's target values, int-or-string fields such as ``maxSurge`` or a probe's
  ``port``; ``Gt``/``Lt`` selector values). In a free-text field (an env value, a command's argument, a hostname, a
  label's value, ConfigMap data, a custom resource's string) every string is replaced, whatever it looks like;
- the values of the fields whose values Kubernetes defines (``vocabulary.ENUMS``: ``restartPolicy``, ``imagePullPolicy``,
  ``protocol``, ``operator``, ``effect``, strategy and Service types, …), cron schedules, IANA time zones;
- Kubernetes' well-known label, annotation and taint keys (``wellknown``; their values replaced), the values of the
  node labels the scheduler reads (os and arch when they are Go's names; zone, region and instance type; all
  reported for review), the standard resource names (``cpu``, ``memory``, ``hugepages-2Mi``, …).

Every other string is replaced by its keyed pseudonym, in the shape its place needs (``pseudonyms``): values, and
the keys of every map an owner fills (labels, annotations, node selectors, ConfigMap and Secret data, resource
names, any ``dict(str, …)`` field). A field a built-in type does not declare (a newer API, a custom resource)
keeps its name when some built-in type has a field of that name, else its name is replaced too; its values are
walked the same way. Where a reference names something (``configMapKeyRef.key``, a selector, a toleration, a
port named by a probe), the same original gives the same pseudonym, so that it still resolves.
"""

from __future__ import annotations

import contextlib
import functools
import re
import zoneinfo
from collections import OrderedDict
from typing import Any, Callable, Iterator

from kubectl_sktrace.trace.anonymizing import apischema
from kubectl_sktrace.trace.files.format import strict_packer
from kubectl_sktrace.trace.anonymizing.pseudonyms import NUMBER_FORMAT, Hit, Pseudonyms, Role
from kubectl_sktrace.trace.anonymizing.vocabulary import ENUMS, TYPED
from kubectl_sktrace.trace.sanitize import DROPPED_ANNOTATIONS

Handler = Callable[[Any], Any]
FieldHandler = Handler | Role | None  # None: kept as it is; a Role: a string field, read in place
PodSpecs = list[tuple[dict[str, Any], dict[str, Any]]]

_CRON_FIELD = r"(?:[0-9*?/,#LW-]|JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC|SUN|MON|TUE|WED|THU|FRI|SAT)+"
_CRON = re.compile(rf"@(?:yearly|annually|monthly|weekly|daily|midnight|hourly)|{_CRON_FIELD}(?: +{_CRON_FIELD}){{4}}", re.I)
_STANDARD_RESOURCES = frozenset({"cpu", "memory", "storage", "ephemeral-storage", "pods", "services", "secrets", "configmaps",
                                 "persistentvolumeclaims", "replicationcontrollers", "resourcequotas", "services.loadbalancers",
                                 "services.nodeports"})

# the role of a string field, by its name wherever it is, then by (model, field) where the name alone is ambiguous
_FIELD_ROLES = {
    "namespace": "namespace", "namespaces": "namespace", "uid": "uid", "image": "image", "generateName": "generate_name",
    **dict.fromkeys(("path", "mountPath", "subPath", "subPathExpr", "workingDir"), "path"),
    **dict.fromkeys(("command", "args"), "text"),
    **dict.fromkeys(("topologyKey", "matchLabelKeys", "mismatchLabelKeys", "finalizers", "loadBalancerClass", "appProtocol"),
                    "label_key"),
    **dict.fromkeys(("clusterIP", "clusterIPs", "loadBalancerIP", "externalIPs", "podIP", "hostIP", "ip", "nameservers"), "ip"),
    **dict.fromkeys(("port", "targetPort"), "port_name"),
    "schedule": "cron", "timeZone": "time_zone", "fieldPath": "field_path",
    **dict.fromkeys(("apiVersion", "kind", "apiGroup", "apiGroups", "resources", "verbs"), "keep"),  # API groups, kinds, verbs
}
_MODEL_ROLES = {
    ("V1EnvVar", "name"): "env_name", ("V1EnvVar", "value"): "text", ("V1EnvFromSource", "prefix"): "env_name",
    **{(model, "name"): "port_name" for model in ("V1ContainerPort", "V1ServicePort", "CoreV1EndpointPort",
                                                  "DiscoveryV1EndpointPort", "V1ServiceBackendPort")},
    **{(model, "key"): "label_key" for model in ("V1Toleration", "V1LabelSelectorRequirement", "V1NodeSelectorRequirement",
                                                 "V1TopologySelectorLabelRequirement")},
    **{(model, "key"): "data_key" for model in ("V1KeyToPath", "V1ConfigMapKeySelector", "V1SecretKeySelector")},
    ("V1Toleration", "value"): "label_value", ("V1Taint", "key"): "label_key", ("V1Taint", "value"): "label_value",
    ("V1ResourceFieldSelector", "resource"): "resource_field",
    ("V2ResourceMetricSource", "name"): "resource_name", ("V2ContainerResourceMetricSource", "name"): "resource_name",
}
_VERSION = re.compile(r"V[0-9]+(?:alpha[0-9]+|beta[0-9]+)?(?=[A-Z])")
_INDEXES = re.compile(r"[0-9]+(?:-[0-9]+)?(?:,[0-9]+(?:-[0-9]+)?)*")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_LABEL_MAPS = frozenset({"labels", "annotations", "nodeSelector", "matchLabels", "selector"})
_RESOURCE_MAPS = frozenset({"limits", "requests", "capacity", "allocatable", "hard", "used", "overhead", "default",
                            "defaultRequest", "max", "min", "maxLimitRequestRatio", "allocatedResources", "podFixed",
                            "consumedCapacity"})
_DATA_MAPS = {("V1ConfigMap", "data"): True, ("V1ConfigMap", "binaryData"): False, ("V1Secret", "data"): False,
              ("V1Secret", "stringData"): False}  # True: text values get pseudonyms; False: base64 values become ""
# what a downward-API env variable or volume may read (``fieldRef.fieldPath``, ``resourceFieldRef.resource``)
_FIELD_PATHS = frozenset({"metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels", "metadata.annotations",
                          "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"})
_SUBSCRIPTED_FIELD = re.compile(r"(metadata\.(?:labels|annotations))\['(.*)'\]")
_RESOURCE_FIELD = re.compile(r"(?:limits|requests)\.(?:cpu|memory|ephemeral-storage|hugepages-[0-9A-Za-z]+)")
_REQUIREMENTS = frozenset({"V1LabelSelectorRequirement", "V1NodeSelectorRequirement", "V1TopologySelectorLabelRequirement"})
_DROPPED = {"V1ObjectMeta": frozenset({"managedFields", "selfLink"})}
# the types whose values repeat from event to event (a template on each scale, each pod of a ReplicaSet): each one's
# result is remembered by its packed bytes, the last _SUBTREE_BYTES of them (packed). Where fewer than _MEMO_MIN_HITS
# of _MEMO_WINDOW values were met before (each template new), the memo costs more than it saves: the next _MEMO_PAUSE
# values of that type are walked without it, then it is tried again.
_MEMO_MODELS = frozenset({"V1PodSpec"})
_SUBTREE_BYTES = 1 << 20
_MEMO_WINDOW, _MEMO_MIN_HITS, _MEMO_PAUSE = 256, 32, 4096
_TALLY_FOLD = 1 << 16  # the places of strings replaced, listed, then counted at the end of an object past this many
_KEPT_TYPES = frozenset({"int", "bool", "float", "datetime", "list[int]", "dict(str, datetime)"})


@functools.lru_cache(maxsize=1)
def _time_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def _kept(value: Any) -> Hit:
    return (value, None, None)


def _typed(model: str | None, field: str) -> str | None:
    """The role of a string field typed to hold a number (``TYPED``), else None."""
    return TYPED.get((_VERSION.sub("", model, count=1), field)) if model else None


def _unknown(value: Any) -> Any:  # marks a field the model does not declare
    return value


def _dropped(value: Any) -> Any:  # marks a field left out of the output
    return value


class Walker:
    """Anonymizes objects by the allow-list (module docstring), under one ``Pseudonyms``; ``pod_specs`` collects the
    pod specs it met, as they were and as they became, for the hashes of ``pod_lifecycles``.

    Each model is walked by a function made for it once (``_compile``: a handler per field), each string by its
    role's remembered pseudonyms (``Role``), read and counted in place: a string met again costs a lookup."""

    def __init__(self, names: Pseudonyms) -> None:
        self.names = names
        self.schema = apischema.schema()
        self.pod_specs: PodSpecs = []
        self.packed: dict[int, bytes] = {}  # id of a pod spec in pod_specs -> its packed bytes, where the memo packed it
        # model -> (its field handlers, its walk)
        self._models: dict[str, tuple[dict[str, FieldHandler], Handler]] = {}
        self._strings: dict[tuple[str | None, str], Handler] = {}
        self._untyped_maps: dict[str, Handler] = {}
        self._pack = strict_packer()
        # (model, packed value) -> (its result, the strings it replaced per place, the kept values it reported)
        self._subtrees: OrderedDict[tuple[str, bytes], tuple[Any, list[str] | None, list[str] | None]] = OrderedDict()
        self._uncounted = 0  # walks in ``uncounted``, which cuts the tallies back: they are not folded meanwhile
        self._subtree_bytes = 0
        self._memo_stats: dict[str, list[int]] = {}  # model -> [values looked up, found, to walk without the memo]
        name = names.role("name", "names")
        self._name = name
        self._roles: dict[str, Role] = {
            "name": name, "namespace": names.role("namespace"), "uid": names.role("uid"), "image": names.role("image"),
            "path": names.role("path"), "text": names.role("text"), "generate_name": names.role("generate_name"),
            "label_key": names.role("label_key", "label and annotation keys"), "env_name": names.role("env_name"),
            "port_name": names.role("port_name"), "port": names.role("port"), "ip": names.role("ip"), "keep": names.custom(_kept),
            "data_key": names.role("name", "ConfigMap and Secret keys"),
            "label_value": names.role("name", "label and annotation values"),
            "cron": names.custom(lambda v: _kept(v) if _CRON.fullmatch(v) else name[v]),
            "time_zone": names.custom(lambda v: _kept(v) if v in _time_zones() else name[v]),
            "field_path": names.custom(self._field_path), "resource_name": names.custom(self._resource_name),
            "resource_field": names.custom(lambda v: _kept(v) if _RESOURCE_FIELD.fullmatch(v) else name[v]),
            "quantity": names.custom(lambda v: _kept(v) if NUMBER_FORMAT.fullmatch(v) else name[v]),
            "indexes": names.custom(lambda v: _kept(v) if _INDEXES.fullmatch(v) else name[v]),
        }

    def object(self, obj: dict[str, Any]) -> dict[str, Any]:
        """An object of a trace anonymized, without its ``status``."""
        body = {key: value for key, value in obj.items() if key != "status"} if "status" in obj else obj
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        model = self.schema.model_of(api_version, kind)
        if model is None:
            self.names.reviewed.append(f"apiVersion and kind of the custom resources {api_version}.{kind} kept")
            out: dict[str, Any] = self.untyped(body)
        else:
            out = self.model(model, body)
        meta, new_meta = obj.get("metadata"), out.get("metadata")
        if model == "V1Namespace" and isinstance(meta, dict) and isinstance(new_meta, dict) and isinstance(meta.get("name"), str):
            new_meta["name"] = self.names.namespace(meta["name"])
        if len(self.names.tally) > _TALLY_FOLD and not self._uncounted:
            self.names.fold()  # bounded memory
        return out

    @contextlib.contextmanager
    def uncounted(self) -> Iterator[None]:
        """Walks that count nothing in the report and collect no pod specs (a spec walked again for its hash), with
        the same pseudonyms."""
        tally, reviewed = self.names.tally, self.names.reviewed
        counted, saved = (len(tally), len(reviewed)), (self.pod_specs, self.packed)
        self.pod_specs, self.packed = [], {}
        self._uncounted += 1
        try:
            yield
        finally:
            self._uncounted -= 1
            del tally[counted[0]:], reviewed[counted[1]:]
            self.pod_specs, self.packed = saved

    def field(self, api_version: str, kind: str, field: str, value: Any) -> Any:
        """One top-level field of an object of that kind (``spec``), as ``object`` would give it."""
        model = self.schema.model_of(api_version, kind)
        if model is None:
            return self._untyped_field(field, value)
        handler = (self._models.get(model) or self._compile(model))[0].get(field, _unknown)
        if isinstance(handler, Role):
            handler = self._string(model, field)
        return value if handler is None else self._untyped_field(field, value) if handler is _unknown else handler(value)

    def model(self, name: str, value: Any) -> Any:
        return (self._models.get(name) or self._compile(name))[1](value)

    def remembered(self, name: str, value: Any) -> Any:
        """``model``, its result remembered by the value's packed bytes: the same result, counts and pod specs
        met, without the walk, for a value met again (a bounded LRU, ``_SUBTREE_BYTES``; paused where it seldom finds
        anything: ``_MEMO_PAUSE``)."""
        stats = self._memo_stats.get(name) or self._memo_stats.setdefault(name, [0, 0, 0])
        if stats[2]:
            stats[2] -= 1
            return self.model(name, value)
        try:
            key = (name, self._pack(value)) if type(value) is dict else None
        except (TypeError, ValueError, OverflowError):  # a tuple, a subclass, an int past 64 bits: walked each time
            key = None
        if key is None:
            return self.model(name, value)
        if name == "V1PodSpec":
            self.packed[id(value)] = key[1]
        found = self._subtrees.get(key)
        stats[0] += 1
        stats[1] += found is not None
        if stats[0] == _MEMO_WINDOW:
            stats[:] = [0, 0, _MEMO_PAUSE if stats[1] < _MEMO_MIN_HITS else 0]
        if found is not None:
            self._subtrees.move_to_end(key)
            out, replaced, review = found
            if replaced:
                self.names.tally.extend(replaced)
            if review:
                self.names.reviewed.extend(review)
            if name == "V1PodSpec":
                self.pod_specs.append((value, out))
            return out
        return self._walk_and_remember(key, value)

    def _walk_and_remember(self, key: tuple[str, bytes], value: dict[str, Any]) -> Any:
        tally, reviewed, met = self.names.tally, self.names.reviewed, len(self.pod_specs)
        counted = (len(tally), len(reviewed))
        out = self.model(key[0], value)
        # remembered only when the pod specs it met are the ones a hit appends again (its own, if a pod spec)
        if len(self.pod_specs) - met == (key[0] == "V1PodSpec"):
            self._subtrees[key] = (out, tally[counted[0]:] or None, reviewed[counted[1]:] or None)
            self._subtree_bytes += len(key[1])
            while self._subtree_bytes > _SUBTREE_BYTES:
                self._subtree_bytes -= len(self._subtrees.popitem(last=False)[0][1])
        return out

    def untyped(self, value: Any, field: str | None = None) -> Any:
        """A value whose type is not declared (``object``, a custom resource, a field of a newer API)."""
        if isinstance(value, dict):
            if isinstance(value.get("containers"), list):
                return self.model("V1PodSpec", value)
            if "key" in value and "operator" in value:  # a selector's requirement, a toleration: keys as labels' keys
                return self.model("V1LabelSelectorRequirement", value)
            if "matchLabels" in value or "matchExpressions" in value:
                return self.model("V1LabelSelector", value)
            if field in _LABEL_MAPS:  # labels, a selector: as a built-in type's, so that selectors still select
                found = self._untyped_maps.get(field) or self._untyped_maps.setdefault(field, self._map("", field, "str"))
                return found(value)
            out = {self._field_name(key): self._untyped_field(key, item) for key, item in value.items()}
            self._namespace_reference(value, out)
            return out
        if isinstance(value, list):
            return [self.untyped(item, field) for item in value]
        if isinstance(value, str):
            return self._string(None, field)(value) if field is not None else self.names.name(value)
        return value

    def _untyped_field(self, key: str, value: Any) -> Any:
        if key == "metadata" and isinstance(value, dict):
            return self.model("V1ObjectMeta", value)
        if isinstance(value, str):
            return self._string(None, key)(value)
        return self.untyped(value, key)

    def _field_name(self, key: Any) -> Any:
        if type(key) is not str or key in self.schema.vocabulary:  # a number names nothing (msgpack allows them as keys)
            return key
        if "/" in key:  # a label's key in a map of labels under another name: renamed as labels' keys are
            return self.names.label_key(key, "field names of custom resources")
        return self.names.name(key, "field names of custom resources")

    def _namespace_reference(self, value: dict[str, Any], out: dict[str, Any]) -> None:
        """``{kind: Namespace, name}``: the name is a namespace's."""
        if value.get("kind") == "Namespace" and isinstance(value.get("name"), str):
            out["name"] = self.names.namespace(value["name"])

    def _compile(self, name: str) -> tuple[dict[str, FieldHandler], Handler]:
        """The walk of a model: each declared field by its handler (None: kept as it is), any other field untyped."""
        fields = self.schema.types.get(name, {})
        handlers: dict[str, FieldHandler] = {}
        post: Callable[[dict[str, Any], dict[str, Any]], None] | None = None
        if name == "V1PodSpec":
            post = lambda value, out: self.pod_specs.append((value, out))  # noqa: E731
        elif name in _REQUIREMENTS:
            post = self._requirement
        elif "kind" in fields and "name" in fields:
            post = self._namespace_reference
        get, untyped, untyped_field, field_name, count = handlers.get, self.untyped, self._untyped_field, self._field_name, self.names.tally.append

        def walk(value: Any) -> Any:
            if type(value) is not dict:
                return untyped(value)
            out: dict[str, Any] = {}
            for key, item in value.items():
                handler = get(key, _unknown)
                if handler is None:
                    out[key] = item
                elif type(handler) is Role:  # a string field of no enum: its role's pseudonym, read here (a field's
                    # role never asks for review: only a label's value does, in _label_map)
                    if type(item) is str:
                        hit = handler[item]
                        if hit[1] is not None:
                            count(hit[1])
                        out[key] = hit[0]
                    else:
                        out[key] = untyped(item, key)
                elif handler is _unknown:
                    out[field_name(key)] = untyped_field(key, item)
                elif handler is not _dropped:
                    out[key] = handler(item)  # type: ignore[operator]  # not a Role: ``type(handler) is Role`` was checked
            if post is not None:
                post(value, out)
            return out

        self._models[name] = (handlers, walk)  # before the fields' handlers: a model may hold itself (JSONSchemaProps)
        for field, type_ in fields.items():
            inline = (type_ == "str" or type_ == "object" and _typed(name, field) is not None) and field not in ENUMS
            handlers[field] = self._string_role(name, field) if inline else self._handler(name, field, type_)
        handlers.update(dict.fromkeys(_DROPPED.get(name, ()), _dropped))
        return handlers, walk

    def _requirement(self, value: dict[str, Any], out: dict[str, Any]) -> None:
        """A selector's requirement: its values renamed as the values of its key's labels (so that it still selects);
        the integer a ``Gt`` or ``Lt`` compares with kept (the API reads it as a number)."""
        key, values = value.get("key"), value.get("values")
        if isinstance(key, str) and isinstance(values, list):
            compared = value.get("operator") in ("Gt", "Lt")
            out["values"] = [v if compared and isinstance(v, str) and _INTEGER.fullmatch(v) else
                             self.names.label_value(key, v) if isinstance(v, str) else v for v in values]

    def _handler(self, model: str, field: str, type_: str) -> Handler | None:
        if type_ in _KEPT_TYPES:
            return None
        if type_ == "str":
            return self._string(model, field)
        if type_ == "object":
            return lambda value: self._untyped_field(field, value)
        if type_.startswith("list["):
            item = self._handler(model, field, type_[5:-1])
            if item is None:
                return None
            untyped = self.untyped
            return lambda value: [item(v) for v in value] if type(value) is list else untyped(value, field)
        if type_.startswith("dict(str, "):
            return self._map(model, field, type_[10:-1])
        if type_ in _MEMO_MODELS:
            return functools.partial(self.remembered, type_)
        return (self._models.get(type_) or self._compile(type_))[1]  # compiled now: a model holding itself finds its walk

    def _string(self, model: str | None, field: str) -> Handler:
        """The handler of a string field: kept when it is an enum's value, else renamed in the field's role."""
        found = self._strings.get((model, field))
        if found is None:
            found = self._strings[(model, field)] = self._role_handler(self._string_role(model, field), field, ENUMS.get(field))
        return found

    def _string_role(self, model: str | None, field: str) -> Role:
        """The role of a string field: by its type where it holds a number, by the model's field where the name alone is
        ambiguous, else by its name."""
        role = _typed(model, field) or _MODEL_ROLES.get((model or "", field)) or _FIELD_ROLES.get(field, "name")
        return self._roles[role]

    def _role_handler(self, role: Role, field: str | None, enum: frozenset[str] | None = None) -> Handler:
        """A string by its role's remembered pseudonym, counted; anything else untyped."""
        untyped, count = self.untyped, self.names.count

        def handler(value: Any) -> Any:
            if not isinstance(value, str):
                return untyped(value, field)
            if enum is not None and value in enum:
                return value
            return count(role[value])

        return handler

    def _map(self, model: str, field: str, item_type: str) -> Handler:
        """A map whose keys an owner chooses: labels (keys and values as labels'), data, resources, any other."""
        names = self.names
        text = _DATA_MAPS.get((model, field))
        if text is not None:  # text values get pseudonyms, base64 ones become "" (and are never remembered)
            untyped = self.untyped
            blank: Handler = lambda value: "" if isinstance(value, str) else untyped(value, field)  # noqa: E731
            return self._keyed_map(self._roles["data_key"], self._role_handler(self._roles["text"], field) if text else blank)
        if field in _LABEL_MAPS and item_type == "str":
            return self._label_map(DROPPED_ANNOTATIONS if field == "annotations" else ())
        if field in _RESOURCE_MAPS:  # resource names, each with its quantity
            quantities = self._role_handler(self._roles["quantity"], field) if item_type == "str" else self._handler(model, field, item_type)
            return self._keyed_map(self._roles["resource_name"], quantities)
        return self._keyed_map(names.role("name", "map keys"), self._handler(model, field, item_type))

    def _keyed_map(self, key_role: Role, item: Handler | None) -> Handler:
        """A map: each key by its role's pseudonym, each value by ``item`` (None: kept as it is)."""
        return self._map_by(key_role, (lambda key, value: value) if item is None else (lambda key, value: item(value)))

    def _label_map(self, dropped: tuple[str, ...]) -> Handler:
        """Labels or annotations: keys as labels' keys, each value by its key (``Pseudonyms.label_value``)."""
        names, untyped = self.names, self.untyped
        values, count = names.role("label_value"), names.count
        return self._map_by(names.role("label_key", "label and annotation keys"),
                            lambda key, item: count(values[(key, item)]) if isinstance(item, str) else untyped(item), dropped)

    def _map_by(self, key_role: Role, value_of: Callable[[str, Any], Any], dropped: tuple[str, ...] = ()) -> Handler:
        """A map whose keys an owner chooses: each string key by its role's pseudonym (those in ``dropped`` left out),
        its value by ``value_of(key, value)``; a key that is not a string is kept, its value walked untyped."""
        untyped, count = self.untyped, self.names.count

        def handler(value: Any) -> Any:
            if type(value) is not dict:
                return untyped(value)
            out: dict[Any, Any] = {}
            for key, item in value.items():
                if type(key) is not str:
                    out[key] = untyped(item)
                elif key not in dropped:
                    out[count(key_role[key])] = value_of(key, item)
            return out

        return handler

    def _field_path(self, path: str) -> Hit:
        """A downward-API field path: the pod's own fields kept, a label's or annotation's key renamed as its key is."""
        if path in _FIELD_PATHS:
            return _kept(path)
        subscripted = _SUBSCRIPTED_FIELD.fullmatch(path)
        if subscripted is None:
            return self._name[path]
        key, place, _ = self._roles["label_key"][subscripted[2]]
        return (f"{subscripted[1]}['{key}']", place, None)

    def _resource_name(self, key: str) -> Hit:
        """A resource's name (``cpu``, ``nvidia.com/gpu``): a standard one kept, an extended one renamed as a qualified name."""
        bare = key.removeprefix("requests.").removeprefix("limits.")
        if bare in _STANDARD_RESOURCES or bare.startswith("hugepages-"):
            return _kept(key)
        return self.names.role("label_key", "resource names")[key]
