"""The field names and types of Kubernetes' built-in API types, for ``--anonymize``'s allow-list. Pure, no I/O
beyond reading the package's own data file once.

``apifields.json`` is generated from the installed ``kubernetes`` package's models (``openapi_types`` and
``attribute_map``) by ``tools/gen_apifields.py``; ``tests/trace/test_apischema.py`` checks that it matches the
package. Reading a 100 KB JSON file costs a few milliseconds and happens only when a trace is anonymized; the models
themselves are never imported (only ``kube/client.py`` imports ``kubernetes``, and the recorder's start stays fast).

A type is written as the package writes it: ``str``, ``int``, ``bool``, ``float``, ``datetime``, ``object`` (any
JSON: int-or-string fields, raw extensions), ``list[T]``, ``dict(str, T)`` (a map whose keys the owner chooses) or
a model's class name (``V1PodSpec``).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources

_BUILTIN_GROUP_SUFFIXES = (".k8s.io", ".kubernetes.io")


@dataclass(frozen=True)
class ApiSchema:
    kinds: dict[str, str]  # "v1.Deployment" (version, kind; the group left out) -> "V1Deployment"
    types: dict[str, dict[str, str]]  # model -> {JSON field name -> type}
    vocabulary: frozenset[str]  # every field name of every model

    def model_of(self, api_version: object, kind: object) -> str | None:
        """The model of a built-in kind; None for a custom resource (a group that is not Kubernetes' own)."""
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return None
        group, slash, version = api_version.rpartition("/")
        if slash and "." in group and not group.endswith(_BUILTIN_GROUP_SUFFIXES):
            return None
        return self.kinds.get(f"{version}.{kind}")


@functools.lru_cache(maxsize=1)
def schema() -> ApiSchema:
    data = json.loads(resources.files(__package__).joinpath("apifields.json").read_text(encoding="utf-8"))
    types: dict[str, dict[str, str]] = data["types"]
    return ApiSchema(kinds=data["kinds"], types=types, vocabulary=frozenset(f for fields in types.values() for f in fields))
