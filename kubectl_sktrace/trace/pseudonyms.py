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
default ``imagePullPolicy``); a string that is a number, a quantity (``250m``, ``1Gi``), a percentage, a duration
(``1h30m``) or an RFC 3339 timestamp, in every role alike (so that a name ``1`` and a label value ``1`` stay equal).

Shapes, each valid where Kubernetes validates its role: label and annotation keys keep a well-known prefix
(``kubernetes.io/``, ``k8s.io/`` and their subdomains) whole, else become ``obj-…`` or ``obj-…/obj-…`` (a
qualified name); env variable names ``E_…`` (a C identifier); port names ``p-`` and 13 characters (an IANA service
name, at most 15); IP addresses a keyed address of the same family in 10.0.0.0/8 or fd00::/8.

``replaced`` counts the strings replaced per kind of place, ``review`` the kept values a reviewer should look at;
``record`` (for ``--anonymize-map``) keeps every original with its pseudonym.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import secrets
import uuid
from collections import Counter

from kubectl_sktrace.errors import UsageError

KEY_BYTES = 32
KEPT_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
KEPT_NAMES = frozenset({"default", "kube-root-ca.crt"})
KEPT_NAME_PREFIX = "kube-api-access-"
KEPT_VALUES = frozenset({"", "true", "false"})
KEPT_TAGS = frozenset({"latest"})
NAMESPACE_LABEL = "kubernetes.io/metadata.name"  # the API server sets it to the namespace's own name
_DIGEST_BYTES = 10  # 80 bits, 16 base32 characters
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
_MEMO_LIMIT = 1 << 16
_BASE32 = "abcdefghijklmnopqrstuvwxyz234567"
_BASE32_PAIRS = [_BASE32[i >> 5] + _BASE32[i & 31] for i in range(1024)]
_KEPT_FORMAT = re.compile(
    r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[numkMGTPE]|[KMGTPE]i|%)?"  # numbers, quantities, percentages
    r"|(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+"  # durations
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)"  # timestamps
)
WELL_KNOWN_PREFIXES = ("kubernetes.io", "k8s.io")
# node labels that the scheduler reads and simulated nodes carry: their values are kept
NODE_LABELS = frozenset({"kubernetes.io/os", "kubernetes.io/arch", "beta.kubernetes.io/os", "beta.kubernetes.io/arch"})
# kept too, and reported for review: they describe the source cluster's cloud
REVIEWED_NODE_LABELS = frozenset({
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region", "node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type",
})
FIELD_KEYS = frozenset({"metadata.name", "metadata.namespace", "spec.nodeName"})  # a node selector's matchFields


def new_key() -> bytes:
    """A fresh random key, for a caller given none (it should print it, so that a later run can line up)."""
    return secrets.token_bytes(KEY_BYTES)


class Pseudonyms:
    """The pseudonym of a string in each role, under one key; remembers the most recent results."""

    def __init__(self, key: bytes, *, keep_label_values: frozenset[str] = frozenset(), record: bool = False) -> None:
        if not isinstance(key, bytes) or not key:
            raise UsageError("the anonymization key is empty: pass one, or let a fresh random key be made")
        self._key = key
        self._memo: dict[tuple[str, str], str] = {}  # uids
        self._digests: dict[str, str] = {}  # an original -> its digest ("" when kept as it is), whatever its role
        self._kept_keys = NODE_LABELS | REVIEWED_NODE_LABELS | keep_label_values
        self._reviewed_keys = REVIEWED_NODE_LABELS | keep_label_values
        self.replaced: Counter[str] = Counter()
        self.review: Counter[str] = Counter()
        self.record: dict[tuple[str, str], str] | None = {} if record else None

    def _mac(self, data: bytes) -> bytes:
        return hmac.digest(self._key, data, "sha256")

    def _pseudonym(self, prefix: str, value: str, place: str | None = None) -> str:
        """``prefix`` and the digest of ``value`` (``value`` itself when it is kept: a number, a quantity, …); counted as
        a string replaced in ``place`` when it is."""
        digest = self._digests.get(value)
        if digest is None:
            digest = "" if _KEPT_FORMAT.fullmatch(value) else self._digest(value)
            if len(self._digests) >= _MEMO_LIMIT:
                self._digests.clear()  # bounded memory on long traces; a digest is recomputed identically
            self._digests[value] = digest
        if not digest:
            return value
        if place is not None:
            self.replaced[place] += 1
        if self.record is not None:
            self.record[(value, prefix)] = prefix + digest
        return prefix + digest

    def _digest(self, value: str) -> str:
        """The first 80 bits of the HMAC in lowercase base32 (RFC 4648's alphabet), two characters per 10 bits."""
        n = int.from_bytes(self._mac(value.encode())[:_DIGEST_BYTES], "big")
        return "".join([_BASE32_PAIRS[(n >> shift) & 1023] for shift in (70, 60, 50, 40, 30, 20, 10, 0)])

    def _remember(self, memo_key: tuple[str, str], result: str) -> str:
        if len(self._memo) >= _MEMO_LIMIT:
            self._memo.clear()  # bounded memory on long traces; a result is recomputed identically
        self._memo[memo_key] = result
        return result

    def _counted(self, place: str, value: str, result: str) -> str:
        if result != value:  # not a number, a quantity or a timestamp, kept
            self.replaced[place] += 1
        return result

    def namespace(self, value: str) -> str:
        """A namespace; ``""`` (a cluster-scoped object's) stays ``""``."""
        if not value or value in KEPT_NAMESPACES:
            return value
        return self._pseudonym("ns-", value, "namespaces")

    def name(self, value: str, place: str = "names") -> str:
        """An object's, container's, volume's or host's name; any string of no other role."""
        if not value or value in KEPT_NAMES or value.startswith(KEPT_NAME_PREFIX):
            return value
        return self._pseudonym("obj-", value, place)

    def label_key(self, value: str, place: str = "label and annotation keys") -> str:
        """A label's or annotation's key (also a selector's, a toleration's, a ``topologyKey``): a well-known one kept,
        another ``obj-…`` or, with a prefix, ``obj-…/obj-…``."""
        prefix, slash, rest = value.rpartition("/")
        if slash and (prefix in WELL_KNOWN_PREFIXES or prefix.endswith((".kubernetes.io", ".k8s.io"))) or value in FIELD_KEYS:
            return value
        if not value:
            return value
        renamed = f"{self._pseudonym('obj-', prefix)}/{self._pseudonym('obj-', rest)}" if slash else self._pseudonym("obj-", value)
        return self._counted(place, value, renamed)

    def env_name(self, value: str) -> str:
        """An env variable's name (or an ``envFrom`` prefix): a C identifier."""
        if not value:
            return value
        return self._counted("env variable names", value, self._pseudonym("E_", value).upper())

    def port_name(self, value: str) -> str:
        """A port's name, or a port named by a Service or a probe: an IANA service name (15 characters at most)."""
        if not value or _KEPT_FORMAT.fullmatch(value):
            return value
        return self._counted("port names", value, self._pseudonym("p-", value)[:15])

    def ip(self, value: str) -> str:
        """An IP address: a keyed one of the same family (``None`` and ``""``, a headless Service's, kept)."""
        try:
            address = ipaddress.ip_address(value)
        except ValueError:
            return value if value in ("", "None") else self.name(value)
        self.replaced["IP addresses"] += 1
        mac = self._mac(b"\x00ip" + value.encode())
        if address.version == 4:
            return str(ipaddress.IPv4Address(bytes([10]) + mac[:3]))
        return str(ipaddress.IPv6Address(bytes([0xFD]) + mac[:15]))

    def generate_name(self, value: str) -> str:
        """``metadata.generateName``: the name it is the prefix of (often the owner's, ``web-7d9f-``), trailing
        dash kept, so that it reads as the owner's pseudonym followed by a dash."""
        stem = value.rstrip("-")
        return self.name(stem) + value[len(stem):] if stem else value

    def label_value(self, key: str, value: str) -> str:
        """A label's or annotation's value, and a selector's: the same value gives the same pseudonym, so that
        selectors still select. A uid keeps its shape and maps as ``uid`` does (a Job's ``controller-uid``)."""
        if value in KEPT_VALUES:
            return value
        if key in self._kept_keys:
            if key in self._reviewed_keys:
                self.review[f"values of the label {key} kept"] += 1
            return value
        if key == NAMESPACE_LABEL:
            return self.namespace(value)
        if _UUID.match(value):
            return self.uid(value)
        return self.name(value, "label and annotation values")

    def text(self, value: str) -> str:
        """Free text: an env value, a command's argument, a ConfigMap's data."""
        if value in KEPT_VALUES:
            return value
        return self._pseudonym("val-", value, "free text")

    def path(self, value: str) -> str:
        """A file or URL path, as one ``val-`` pseudonym of everything after its leading ``/`` (kept, so that an
        absolute path stays absolute and a relative one relative)."""
        rest = value.lstrip("/")
        return value[:len(value) - len(rest)] + self.text(rest) if rest else value

    def uid(self, value: str) -> str:
        """A uid, as a version-4-shaped UUID."""
        if not value:
            return value
        self.replaced["uids"] += 1
        found = self._memo.get(("uid", value))
        if found is None:
            found = self._remember(("uid", value), str(uuid.UUID(bytes=self._mac(value.encode())[:16], version=4)))
        return found

    def image(self, value: str) -> str:
        """``[registry/]repository[:tag][@algorithm:hex]``: the repository becomes one ``img-`` component, a
        tag other than ``latest`` a ``t-`` pseudonym, a digest a keyed hex string of the same length."""
        self.replaced["images"] += 1
        rest, at, digest = value.partition("@")
        colon = rest.rfind(":")
        repository, tag = (rest[:colon], rest[colon + 1:]) if colon > rest.rfind("/") else (rest, None)
        out = self._pseudonym("img-", repository) if repository else repository
        if tag is not None:
            out += ":" + (tag if tag in KEPT_TAGS else self._pseudonym("t-", tag))
        if at:
            algorithm, _, hex_digest = digest.partition(":")
            out += f"@{algorithm}:{(self._mac(digest.encode()).hex() * 4)[:len(hex_digest)]}"
        return out

    def opaque_hash(self, value: int) -> int:
        """A u64 hash that cannot be recomputed over the new specs (its spec is not in the trace): replaced by a
        keyed u64, so that equal hashes stay equal and the original cannot be confirmed against a guess."""
        return int.from_bytes(self._mac(b"\x00u64" + (value & (2**64 - 1)).to_bytes(8, "little"))[:8], "little")
