"""Small typed records shared by every layer. Standard library only.

GVK strings follow SimKube: ``<group>/<version>.<Kind>``, core kinds ``<version>.<Kind>``. A group may
contain dots, a version and a kind may not. Readers accept a leading ``/`` (written by old SimKube
versions) and reject more than one ``/``. This module is the one place that parses and formats them.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple
from dataclasses import dataclass, field

from kubectl_sktrace.errors import UsageError


@dataclass(frozen=True, order=True)
class GVK:
    group: str
    version: str
    kind: str
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.group, self.version, self.kind)))

    def __hash__(self) -> int:
        # computed once: the recorder looks a GVK up in several dicts for every watch event
        return self._hash

    def __eq__(self, other: object) -> bool:
        # the same object first: a history's few kinds are parsed once and met in every row (dataclass keeps this one)
        if self is other:
            return True
        if not isinstance(other, GVK):
            return NotImplemented
        return self._hash == other._hash and self.group == other.group and self.version == other.version and self.kind == other.kind

    def __reduce__(self) -> tuple[type[GVK], tuple[str, str, str]]:
        return GVK, (self.group, self.version, self.kind)  # the hash is per process: rebuild, never copy it

    @classmethod
    def parse(cls, text: str) -> GVK:
        """Parse ``apps/v1.Deployment`` or ``v1.Pod``; raise UsageError with the expected form."""
        hint = f"invalid GVK {text!r}: expected '<group>/<version>.<Kind>' (e.g. 'apps/v1.Deployment') or '<version>.<Kind>' for core kinds (e.g. 'v1.Pod')"
        if not isinstance(text, str):
            raise UsageError(hint)
        text = text[1:] if text.startswith("/") else text  # old SimKube wrote core kinds as '/v1.Pod'
        group, _, rest = text.rpartition("/")
        parts = rest.split(".")
        if "/" in group or text.startswith("/") or len(parts) != 2 or not all(parts) or text.split() != [text]:
            raise UsageError(hint)
        return cls(group=group, version=parts[0], kind=parts[1])

    @classmethod
    def canonical(cls, text: str) -> str:
        """A GVK string as ``str(GVK.parse(text))`` writes it (``/v1.Pod`` is ``v1.Pod``); the text itself when it
        is no GVK (a hand-made or damaged trace's key, compared as written)."""
        try:
            return str(cls.parse(text))
        except UsageError:
            return text

    @classmethod
    def from_api_version(cls, api_version: str, kind: str) -> GVK:
        """Build from an object's ``apiVersion`` (``apps/v1`` or ``v1``) and ``kind``."""
        return _from_api_version(api_version, kind)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        """Alias of ``api_version``: the discovery path component (``apps/v1``, ``v1``)."""
        return self.api_version

    def __str__(self) -> str:
        return f"{self.api_version}.{self.kind}"


@functools.lru_cache(maxsize=1024)
def _from_api_version(api_version: str, kind: str) -> GVK:
    """Memoized: the owner references of every pod event name the same few kinds."""
    group, _, version = api_version.rpartition("/")
    return GVK(group=group, version=version, kind=kind)


# Well-known kinds, defined once: the rules, the recorder, export and validation name them.
POD = GVK("", "v1", "Pod")
NAMESPACE = GVK("", "v1", "Namespace")
SERVICE_ACCOUNT = GVK("", "v1", "ServiceAccount")
CONFIG_MAP = GVK("", "v1", "ConfigMap")
SECRET = GVK("", "v1", "Secret")
REPLICASET = GVK("apps", "v1", "ReplicaSet")
DEPLOYMENT = GVK("apps", "v1", "Deployment")
STATEFULSET = GVK("apps", "v1", "StatefulSet")
DAEMONSET = GVK("apps", "v1", "DaemonSet")
JOB = GVK("batch", "v1", "Job")
CRONJOB = GVK("batch", "v1", "CronJob")

OWNER_KINDS: dict[GVK, GVK] = {DEPLOYMENT: REPLICASET, CRONJOB: JOB}
"""A tracked kind with lifecycles -> the intermediate kind between it and its pods, which the recorder watches
too, for the pods' owner chains."""

# Why a run did not record a kind for a while, besides its outages (``coverage_gaps.cause``, docs/coverage.md):
CAUSE_FORBIDDEN = "forbidden"
"""The API server refused the kind's list or watch (403): blind time, until a list succeeds again."""
CAUSE_NOT_SERVED = "not served"
"""The API server did not serve the kind (404, or absent from discovery): no object of it could exist, no blind time."""
CAUSE_UNOBSERVED = "not yet observed"
"""From a run's start until the kind's first list (its detail: ``listing``, or ``throttled`` when the API server throttled
it meanwhile): blind time, but no outage (the run stays ``clean``). Kept when it lasts ``UNOBSERVED_MIN`` or more."""
UNOBSERVED_MIN = 1.0
"""A first list quicker than a second is within the resolution of a trace's times: no row."""


@dataclass(frozen=True, order=True)
class ObjKey:
    """Identity of an object in a trace: its kind, namespace ("" when cluster-scoped) and name."""

    gvk: GVK
    namespace: str
    name: str
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.gvk, self.namespace, self.name)))

    def __hash__(self) -> int:
        # computed once: an export looks every row's key up in per-object tables
        return self._hash

    def __reduce__(self) -> tuple[type[ObjKey], tuple[GVK, str, str]]:
        return ObjKey, (self.gvk, self.namespace, self.name)  # the hash is per process: rebuild, never copy it

    @property
    def ns_name(self) -> str:
        """SimKube's index key: ``ns/name``, or ``name`` for cluster-scoped objects."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def __str__(self) -> str:
        return f"{self.gvk} {self.ns_name}"


class OwnerRef(NamedTuple):
    """One ownerReference: the owner's kind, name and uid (``""`` when the reference has none). A named tuple, as
    ``ObjectHead``: read for every watch event, made in a third of a frozen dataclass's time."""

    gvk: GVK
    name: str
    uid: str

    def key(self, namespace: str) -> ObjKey:
        """The owner's key: owners live in their dependent's namespace (Kubernetes forbids any other)."""
        return ObjKey(gvk=self.gvk, namespace=namespace, name=self.name)


class ObjectHead(NamedTuple):
    """What the recorder reads of a raw object's metadata, once per watch event or listed item
    (``sanitize.read_head``), then passes down to every rule instead of the metadata itself."""

    key: ObjKey
    uid: str  # "" when the object has none: identity then falls back to the key
    resource_version: str  # "" when the object has none
    created: float | None  # creationTimestamp as Unix seconds; None when missing or malformed
    owners: tuple[OwnerRef, ...]  # ownerReferences in listed order, malformed entries skipped


@dataclass(frozen=True)
class LiveObject:
    """What the live index holds for an object key: the object's uid and the spec hash last recorded, and the
    fingerprints of its metadata and data last recorded (``trace/revisions``; None: not known, a cache recorded
    before schema 0011); kept in the cache's ``objects`` table and in the recorder's memory alike. ``spec_fp``, in
    memory only, is the fingerprint of the spec that hash was taken of (``changes.spec_hash``; None: not known):
    a spec with the same fingerprint has the same hash, so the recorder walks a spec only when it changed;
    ``meta_fp`` the same for the metadata fingerprint (``changes.metadata_hash``)."""

    uid: str
    spec_hash: int
    meta_hash: int | None = None
    data_hash: int | None = None
    spec_fp: int | None = None
    meta_fp: int | None = None


# the password of the user info, to the URL's last "@" (a password may hold an unencoded "@" or "/": more is masked,
# never less), and secret-looking query values
_URL_PASSWORD = re.compile(r"^([^:/?#]+://[^:/?#@]*):.*@")
_URL_SECRET_PARAM = re.compile(r"([?&][^=&#]*(?:pass|pwd|secret|token|key|sig|credential)[^=&#]*=)[^&#]*", re.IGNORECASE)
_DATABASE_URL = re.compile(r"^postgres(?:ql)?://", re.IGNORECASE)


def mask_url(url: str) -> str:
    """``url`` fit to print: ``user:****@host``, and ``****`` for query values such as ``password=``."""
    return _URL_SECRET_PARAM.sub(r"\1****", _URL_PASSWORD.sub(r"\1:****@", url))


def is_database_url(text: str) -> bool:
    """Whether ``--cache`` names a PostgreSQL database (``postgresql://…`` or libpq's ``postgres://…``)."""
    return bool(_DATABASE_URL.match(text))


@dataclass(frozen=True)
class ClusterId:
    """Which cluster a recorder talks to: the uid of its ``kube-system`` namespace ('' when it cannot be read)
    and its server URL (which differs between a laptop's kubeconfig and a pod inside the cluster)."""

    uid: str
    server: str
    namespace: str = ""  # the scope recorded: '' = all namespaces (two scopes of one cluster are two histories)


@dataclass(frozen=True)
class CacheUrl:
    """A cache in a PostgreSQL database: the libpq URL (credentials included: never print it, print
    ``masked``) and the name of the history in it (a kubeconfig context's; None: the database's only one)."""

    url: str
    history: str | None = None

    @property
    def masked(self) -> str:
        return mask_url(self.url)

    def __repr__(self) -> str:
        return f"CacheUrl({self.masked!r}, history={self.history!r})"

    def __str__(self) -> str:
        return self.masked if self.history is None else f"{self.masked} (history {self.history})"
