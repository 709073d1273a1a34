"""Keyed pseudonyms for the strings of a trace: one function per role a string plays. Pure, no I/O.

A pseudonym is a readable prefix and the first 80 bits of HMAC-SHA256(key, original), written as 16 lowercase
base32 characters: ``ns-`` for namespaces, ``obj-`` for names (objects, containers, volumes, hosts, label and
annotation values), ``val-`` for free text (env values, commands, paths), ``img-`` for image repositories. The digest
depends on the original string only, never on its role, so that a string met in two roles (a label value
that is also a Deployment's name) shows the same 16 characters in both. Every result is a DNS-1123 label
that starts with a letter (so also a DNS-1035 label, a DNS-1123 subdomain and a valid label value).

The same key gives the same pseudonyms in every run and process; without the key, a pseudonym cannot be
turned back into its original or confirmed against a guess. 80 bits make a collision between two originals
of one trace unlikely beyond concern (about 1 in 10^12 for a million distinct strings).

Kept as they are, because they identify nothing and a simulated cluster creates them itself: the
namespaces ``default``, ``kube-system``, ``kube-public`` and ``kube-node-lease``; the names ``default``
(every namespace's ServiceAccount) and ``kube-root-ca.crt`` (every namespace's CA ConfigMap) and the
``kube-api-access-*`` volumes (which the stable pod spec, docs/spec.md §8.4, recognizes by that prefix);
the values ``""``, ``true`` and ``false``; the image tag ``latest`` and the absence of a tag (both decide the
default ``imagePullPolicy``); a port given by its number (``port``: a numeric string in an int-or-string port). A
string that looks like a number, a quantity or a timestamp is replaced like any other in every role here (a name
``1`` and a label value ``1`` get the same pseudonym, so they stay equal): only the fields whose type says they hold
one keep it (``NUMBER_FORMAT``, read by ``allowlist`` for resource quantities, ``maxSurge`` and the like).

Shapes, each valid where Kubernetes validates its role: a label or annotation key is kept when it is one of
Kubernetes' well-known keys (``wellknown``); another key under one of Kubernetes' prefixes keeps that prefix and
gets its name replaced (``kubernetes.io/obj-…``); any other key becomes ``obj-…`` or ``obj-…/obj-…`` (a qualified
name); env variable names ``E_…`` (a C identifier); port names ``p-`` and 13 characters (an IANA service name, at most
15); IP addresses a keyed address of the same family in 10.0.0.0/8 or fd00::/8.

``replaced`` counts the strings replaced per kind of place, ``review`` the kept values a reviewer should look at
(each a list appended to as strings are met, ``tally`` and ``reviewed``, counted when read: an append costs half a
Counter's increment, and a walk that must count nothing cuts the lists back); ``record`` (for ``--anonymize-map``)
keeps every original with its pseudonym. Each role remembers its pseudonyms (``Role``, all of them together bounded),
so that a string met again costs a lookup.
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import re
import secrets
import uuid
from collections import Counter
from typing import Any, Callable

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.trace.anonymizing.wellknown import (KUBERNETES_PREFIXES, NODE_LABEL_VALUES, REVIEWED_NODE_LABELS,
                                                          WELL_KNOWN_KEYS)

KEY_BYTES = 32
KEPT_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
KEPT_NAMES = frozenset({"default", "kube-root-ca.crt"})
KEPT_NAME_PREFIX = "kube-api-access-"
KEPT_VALUES = frozenset({"", "true", "false"})
KEPT_TAGS = frozenset({"latest"})
NAMESPACE_LABEL = "kubernetes.io/metadata.name"  # the API server sets it to the namespace's own name
_DIGEST_BYTES = 10  # 80 bits, 16 base32 characters
_SHA256_BLOCK = 64
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
_MEMO_LIMIT = 1 << 18  # the pseudonyms remembered, every role's and the digests together
_BASE32 = "abcdefghijklmnopqrstuvwxyz234567"
_BASE32_PAIRS = [_BASE32[i >> 5] + _BASE32[i & 31] for i in range(1024)]
# what a field typed as a quantity, an int-or-string or a duration may hold and keep: numbers, quantities,
# percentages, durations, timestamps. Never applied to a free-text field (``allowlist`` decides by the field's type).
NUMBER_FORMAT = re.compile(
    r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[numkMGTPE]|[KMGTPE]i|%)?"  # numbers, quantities, percentages
    r"|(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+"  # durations
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)"  # timestamps
)
_PORT_NUMBER = re.compile(r"[0-9]{1,5}")
FIELD_KEYS = frozenset({"metadata.name", "metadata.namespace", "spec.nodeName"})  # a node selector's matchFields


def new_key() -> bytes:
    """A fresh random key, for a caller given none (it should print it, so that a later run can line up)."""
    return secrets.token_bytes(KEY_BYTES)


Hit = tuple[str, str | None, str | None]  # a pseudonym, the place it counts as a string replaced in (None: kept), a review


class Role(dict[Any, Hit]):
    """The pseudonyms of one role, remembered: an original -> its ``Hit``, computed on first use (``role[value]``,
    in C for a value met before). A caller on a hot path indexes it itself and counts the hit (``Pseudonyms.count``)."""

    __slots__ = ("_compute", "_owner")

    def __init__(self, compute: Callable[[Any], Hit], owner: Pseudonyms) -> None:
        super().__init__()
        self._compute = compute
        self._owner = owner

    def __missing__(self, value: Any) -> Hit:
        hit = self._compute(value)
        owner = self._owner
        owner.remembered += 1
        if owner.remembered > _MEMO_LIMIT:
            owner.forget()  # bounded memory on long traces; a pseudonym is recomputed identically
        self[value] = hit
        return hit


class Pseudonyms:
    """The pseudonym of a string in each role, under one key; remembers the most recent results (``Role``)."""

    def __init__(self, key: bytes, *, keep_label_values: frozenset[str] = frozenset(), record: bool = False) -> None:
        if not isinstance(key, bytes) or not key:
            raise UsageError("the anonymization key is empty: pass one, or let a fresh random key be made")
        block = (hashlib.sha256(key).digest() if len(key) > _SHA256_BLOCK else key).ljust(_SHA256_BLOCK, b"\0")
        self._inner = hashlib.sha256(bytes(b ^ 0x36 for b in block))
        self._outer = hashlib.sha256(bytes(b ^ 0x5C for b in block))
        self._digests: dict[str, str] = {}  # an original -> its digest ("" when kept as it is), whatever its role
        self._kept_keys = REVIEWED_NODE_LABELS | keep_label_values  # every value kept, and reported
        # the values kept of a node label the scheduler reads (Go's names of systems and processors), reported too
        self._kept_values = {key: values for key, values in NODE_LABEL_VALUES.items() if key not in keep_label_values}
        self.tally: list[str] = []  # the place of each string replaced since ``replaced`` was read
        self.reviewed: list[str] = []  # each kept value to review since ``review`` was read
        self._replaced: Counter[str] = Counter()
        self._review: Counter[str] = Counter()
        self.record: dict[tuple[str, str], str] | None = {} if record else None
        self.remembered = 0  # entries in every role's cache and in _digests
        self._roles: dict[tuple[str, str | None], Role] = {}
        self._namespace = self.role("namespace")
        self._name = self.role("name", "names")
        self._label_key = self.role("label_key", "label and annotation keys")
        self._label_value = self.role("label_value")  # by (key, value)

    # -- the roles, remembered -------------------------------------------------------------------------------------

    def role(self, kind: str, place: str | None = None) -> Role:
        """The remembered pseudonyms of a role (a method's name below: ``name``, ``text``, …), counted in ``place``
        where the role takes one (``name``, ``label_key``)."""
        found = self._roles.get((kind, place))
        if found is None:
            compute = getattr(self, f"_{kind}_hit")
            found = self._roles[(kind, place)] = Role(compute if place is None else functools.partial(compute, place=place), self)
        return found

    def custom(self, compute: Callable[[Any], Hit]) -> Role:
        """A role of the caller's (a cron schedule kept when it is one, else a name), remembered under the same bound."""
        found = Role(compute, self)
        self._roles[("custom", str(len(self._roles)))] = found
        return found

    def forget(self) -> None:
        """Forget every remembered pseudonym (the bound is reached); each is recomputed identically when met again."""
        for role in self._roles.values():
            role.clear()
        self._digests.clear()
        self.remembered = 0

    @property
    def replaced(self) -> Counter[str]:
        """The strings replaced, per kind of place."""
        self.fold()
        return self._replaced

    @property
    def review(self) -> Counter[str]:
        """The kept values a reviewer should look at, and how often each was met."""
        self.fold()
        return self._review

    def fold(self) -> None:
        """Count what ``tally`` and ``reviewed`` list, and empty them."""
        if self.tally:
            self._replaced.update(self.tally)
            self.tally.clear()
        if self.reviewed:
            self._review.update(self.reviewed)
            self.reviewed.clear()

    def count(self, hit: Hit) -> str:
        """The pseudonym of a hit, counted in the report."""
        if hit[1] is not None:
            self.tally.append(hit[1])
        if hit[2] is not None:
            self.reviewed.append(hit[2])
        return hit[0]

    def _use(self, role: Role, value: Any) -> str:
        return self.count(role[value])

    # -- the public roles: each a string in, its pseudonym out, counted ----------------------------------------------

    def namespace(self, value: str) -> str:
        """A namespace; ``""`` (a cluster-scoped object's) stays ``""``."""
        return self._use(self._namespace, value)

    def name(self, value: str, place: str = "names") -> str:
        """An object's, container's, volume's or host's name; any string of no other role."""
        return self._use(self._name if place == "names" else self.role("name", place), value)

    def label_key(self, value: str, place: str = "label and annotation keys") -> str:
        """A label's or annotation's key (also a selector's, a toleration's, a ``topologyKey``): a well-known one kept,
        another ``obj-…`` or, with a prefix, ``obj-…/obj-…``."""
        return self._use(self._label_key if place == "label and annotation keys" else self.role("label_key", place), value)

    def label_value(self, key: str, value: str) -> str:
        """A label's or annotation's value, and a selector's: the same value gives the same pseudonym, so that
        selectors still select. A uid keeps its shape and maps as ``uid`` does (a Job's ``controller-uid``)."""
        return self._use(self._label_value, (key, value))

    def env_name(self, value: str) -> str:
        """An env variable's name (or an ``envFrom`` prefix): a C identifier."""
        return self._use(self.role("env_name"), value)

    def port_name(self, value: str) -> str:
        """A port's name, or a port named by a Service or a probe: an IANA service name (15 characters at most)."""
        return self._use(self.role("port_name"), value)

    def port(self, value: str) -> str:
        """An int-or-string port (``targetPort``, a probe's ``port``): a number kept, a name as ``port_name``."""
        return self._use(self.role("port"), value)

    def ip(self, value: str) -> str:
        """An IP address: a keyed one of the same family (``None`` and ``""``, a headless Service's, kept)."""
        return self._use(self.role("ip"), value)

    def generate_name(self, value: str) -> str:
        """``metadata.generateName``: the name it is the prefix of (often the owner's, ``web-7d9f-``), trailing
        dash kept, so that it reads as the owner's pseudonym followed by a dash."""
        return self._use(self.role("generate_name"), value)

    def text(self, value: str) -> str:
        """Free text: an env value, a command's argument, a ConfigMap's data."""
        return self._use(self.role("text"), value)

    def path(self, value: str) -> str:
        """A file or URL path, as one ``val-`` pseudonym of everything after its leading ``/`` (kept, so that an
        absolute path stays absolute and a relative one relative)."""
        return self._use(self.role("path"), value)

    def uid(self, value: str) -> str:
        """A uid, as a version-4-shaped UUID."""
        return self._use(self.role("uid"), value)

    def image(self, value: str) -> str:
        """``[registry/]repository[:tag][@algorithm:hex]``: the repository becomes one ``img-`` component, a
        tag other than ``latest`` a ``t-`` pseudonym, a digest a keyed hex string of the same length."""
        return self._use(self.role("image"), value)

    def opaque_hash(self, value: int) -> int:
        """A u64 hash that cannot be recomputed over the new specs (its spec is not in the trace): replaced by a
        keyed u64, so that equal hashes stay equal and the original cannot be confirmed against a guess."""
        return int.from_bytes(self._mac(b"\x00u64" + (value & (2**64 - 1)).to_bytes(8, "little"))[:8], "little")

    # -- what each role computes: its Hit, without counting it -------------------------------------------------------

    def _mac(self, data: bytes) -> bytes:
        """HMAC-SHA256(key, data) (RFC 2104), from the key's inner and outer states computed once: the same bytes as
        ``hmac.digest``, in half its time (it sets the key up on every call)."""
        inner = self._inner.copy()
        inner.update(data)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()

    def _digest(self, value: str) -> str:
        """The first 80 bits of the HMAC in lowercase base32 (RFC 4648's alphabet), two characters per 10 bits,
        remembered; whatever the value looks like (a number too)."""
        digest = self._digests.get(value)
        if digest is None:
            digest = self._keyed(value)
            self.remembered += 1
            self._digests[value] = digest
        return digest

    def _keyed(self, value: str) -> str:
        """The digest of ``_digest``, computed."""
        n, pairs = int.from_bytes(self._mac(value.encode())[:_DIGEST_BYTES], "big"), _BASE32_PAIRS
        return (pairs[n >> 70] + pairs[(n >> 60) & 1023] + pairs[(n >> 50) & 1023] + pairs[(n >> 40) & 1023]
                + pairs[(n >> 30) & 1023] + pairs[(n >> 20) & 1023] + pairs[(n >> 10) & 1023] + pairs[n & 1023])

    def _pseudonym(self, prefix: str, value: str, shape: Callable[[str], str] | None = None) -> str:
        """``prefix`` and the digest of ``value`` (in ``shape``); recorded."""
        digest = self._digest(value)
        result = prefix + digest if shape is None else shape(prefix + digest)
        if self.record is not None:
            self.record[(value, prefix)] = result
        return result

    @staticmethod
    def _counted(place: str, value: str, result: str) -> Hit:
        return (result, place if result != value else None, None)

    def _namespace_hit(self, value: str) -> Hit:
        if not value or value in KEPT_NAMESPACES:
            return (value, None, None)
        return self._counted("namespaces", value, self._pseudonym("ns-", value))

    def _name_hit(self, value: str, place: str) -> Hit:
        if not value or value in KEPT_NAMES or value.startswith(KEPT_NAME_PREFIX):
            return (value, None, None)
        return self._counted(place, value, self._pseudonym("obj-", value))

    def _label_key_hit(self, value: str, place: str) -> Hit:
        if not value or value in WELL_KNOWN_KEYS or value in FIELD_KEYS:
            return (value, None, None)
        prefix, slash, rest = value.rpartition("/")
        if not slash:
            return self._counted(place, value, self._pseudonym("obj-", value))
        # a prefix of Kubernetes' own is public vocabulary, the name after it an owner's choice; any other prefix
        # (team.kubernetes.io too) may name the company, and is replaced with the name
        head = prefix if prefix in KUBERNETES_PREFIXES else self._pseudonym("obj-", prefix)
        return self._counted(place, value, f"{head}/{self._pseudonym('obj-', rest)}")

    def _label_value_hit(self, pair: tuple[str, str]) -> Hit:
        key, value = pair
        if value in KEPT_VALUES:
            return (value, None, None)
        if key in self._kept_keys:
            return (value, None, f"values of the label {key} kept")
        kept_values = self._kept_values.get(key)
        if kept_values is not None and value in kept_values:
            return (value, None, f"values of the label {key} kept")
        if key == NAMESPACE_LABEL:
            return self._namespace[value]
        if _UUID.match(value):
            return self.role("uid")[value]
        return self.role("name", "label and annotation values")[value]

    def _env_name_hit(self, value: str) -> Hit:
        if not value:
            return (value, None, None)
        return self._counted("env variable names", value, self._pseudonym("E_", value, str.upper))

    def _port_name_hit(self, value: str) -> Hit:
        if not value:
            return (value, None, None)
        return self._counted("port names", value, self._pseudonym("p-", value, lambda name: name[:15]))

    def _port_hit(self, value: str) -> Hit:
        if _PORT_NUMBER.fullmatch(value):
            return (value, None, None)
        return self._port_name_hit(value)

    def _ip_hit(self, value: str) -> Hit:
        try:
            address = ipaddress.ip_address(value)
        except ValueError:
            return (value, None, None) if value in ("", "None") else self._name[value]
        mac = self._mac(b"\x00ip" + value.encode())
        if address.version == 4:
            return (str(ipaddress.IPv4Address(bytes([10]) + mac[:3])), "IP addresses", None)
        return (str(ipaddress.IPv6Address(bytes([0xFD]) + mac[:15])), "IP addresses", None)

    def _generate_name_hit(self, value: str) -> Hit:
        stem = value.rstrip("-")
        if not stem:
            return (value, None, None)
        name, place, _ = self._name[stem]
        return (name + value[len(stem):], place, None)

    def _text_hit(self, value: str) -> Hit:
        if value in KEPT_VALUES:
            return (value, None, None)
        return self._counted("free text", value, self._pseudonym("val-", value))

    def _path_hit(self, value: str) -> Hit:
        rest = value.lstrip("/")
        if not rest:
            return (value, None, None)
        text, place, _ = self.role("text")[rest]
        return (value[:len(value) - len(rest)] + text, place, None)

    def _uid_hit(self, value: str) -> Hit:
        if not value:
            return (value, None, None)
        return (str(uuid.UUID(bytes=self._mac(value.encode())[:16], version=4)), "uids", None)

    def _image_hit(self, value: str) -> Hit:
        rest, at, digest = value.partition("@")
        colon = rest.rfind(":")
        repository, tag = (rest[:colon], rest[colon + 1:]) if colon > rest.rfind("/") else (rest, None)
        out = self._pseudonym("img-", repository) if repository else repository
        if tag is not None:
            # a tag that looks like a number (7.0, 3) is replaced too: a version names a product's release
            out += ":" + (tag if tag in KEPT_TAGS else self._pseudonym("t-", tag))
        if at:
            algorithm, _, hex_digest = digest.partition(":")
            out += f"@{algorithm}:{(self._mac(digest.encode()).hex() * 4)[:len(hex_digest)]}"
        return (out, "images", None)
