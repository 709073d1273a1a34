"""How an object is stored in ``events.body`` and ``events.status``, and an owner chain in ``owner_chain``.

The sanitized object is split in two: its ``status`` (``events.status``, NULL when it has none) and the
rest (``events.body``), each msgpack packed exactly as inside a trace, and stored in one of three forms that the
first bytes tell apart (schema 0012):

- zlib level 1 with the preset dictionary of ``vocabulary.py`` (the zlib header's ``FDICT`` flag and its id): what
  the recorder writes for a body over ``RAW_LIMIT`` bytes. The dictionary holds the API's field names and
  defaults that every body would otherwise spell out again: measured on the objects of three real SimKube traces,
  bodies come out at 52 % of plain zlib's size;
- plain zlib level 1 (no ``FDICT``): what caches before 0012 hold, read as ever;
- the msgpack bytes themselves (a map: first byte ``0x80``-``0x8f``, ``0xde`` or ``0xdf``, never zlib's ``0x78``):
  a body of at most ``RAW_LIMIT`` bytes (a revision's labels and annotations, a small status), where compressing
  costs more time than it saves bytes.

Export drops ``status`` by default (docs/spec.md §7 step 7), so the body's msgpack bytes are spliced into the
trace as they are, without decoding and re-encoding: that keeps an export close to the speed of writing the file.

Owner chains are compact JSON ``[[gvk, namespace, name], ...]``, direct owners first; an object's pod-template
references (``events.refs``) compact JSON ``[[code, name], ...]``.
"""

from __future__ import annotations

import json
import zlib
from typing import Any, Iterable, Mapping

from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.store import vocabulary
from kubectl_sktrace.trace.files.format import dumps_object, loads, members


RAW_LIMIT = 160
"""Bodies of at most this many msgpack bytes are stored as they are (zlib's header, checksum and dictionary setup
cost more than such a body saves)."""
_FDICT = 0x20  # the flag of the zlib header's second byte: a preset dictionary, named by the next four bytes
_PRIMED = zlib.compressobj(1, zlib.DEFLATED, 13, 4, zdict=vocabulary.DICTIONARY)
"""Copied for each body, so the dictionary is loaded once. An 8 KiB window (the dictionary fits it) and a small hash
table (memLevel 4) make the state a copy duplicates small: measured with callgrind on pod-template bodies of ~2 KB,
190 k instructions a body against 272 k for plain ``zlib.compress(level=1)`` and 400 k for zlib's default sizes,
for 5 % more bytes than those sizes would give."""


def _pack(value: Any) -> bytes:
    packed = dumps_object(value)
    if len(packed) <= RAW_LIMIT:
        return packed
    deflate = _PRIMED.copy()
    return deflate.compress(packed) + deflate.flush()


def _unpack(blob: bytes) -> bytes:
    """The msgpack bytes of a stored blob, whichever of the three forms it has."""
    if not _is_zlib(blob):
        return blob
    if len(blob) < 6 or not blob[1] & _FDICT:
        return zlib.decompress(blob)
    if int.from_bytes(blob[2:6], "big") != vocabulary.ID:
        raise zlib.error("a body compressed with a dictionary this kubectl-sktrace does not know")
    inflate = zlib.decompressobj(zdict=vocabulary.DICTIONARY)
    packed = inflate.decompress(blob)
    if not inflate.eof:
        raise zlib.error("a truncated body")
    return packed


def _is_zlib(blob: bytes) -> bool:
    """zlib's header: deflate with a window of at most 32 KiB, a check that divides by 31. A msgpack map starts at
    0x80 or above, never with deflate's low nibble 8 and a window size below 8."""
    return len(blob) >= 2 and blob[0] & 0x0F == 8 and blob[0] >> 4 <= 7 and (blob[0] << 8 | blob[1]) % 31 == 0


def encode_body(obj: Mapping[str, Any]) -> tuple[bytes, bytes | None]:
    """``(body, status)`` blobs of one sanitized object."""
    status = obj.get("status")
    rest = {k: v for k, v in obj.items() if k != "status"} if "status" in obj else obj
    return _pack(rest), None if status is None else _pack(status)


def packed_body(body: bytes) -> bytes:
    """The msgpack bytes of the object without its status, ready to be written into a trace."""
    return _unpack(body)


def decode_body(body: bytes, status: bytes | None = None) -> dict[str, Any]:
    """The object back as a dict, with its status when one was stored and is passed."""
    obj: dict[str, Any] = loads(_unpack(body))
    if status is not None:
        obj["status"] = loads(_unpack(status))
    return obj


class VersionDecoder:
    """Decodes the bodies of one object's versions, one after another, sharing what did not change: a member of the
    body, or a member of one of its members (``spec.template``), whose msgpack bytes equal the version before's is that
    version's value, not decoded again (a body read is never changed, so versions may share). Ten thousand versions
    of a Deployment whose replicas changed each time decode in a third of the time, and compare in less (equal
    members are the same object). A body stored again as it was is decoded once."""

    def __init__(self) -> None:
        self._last: dict[Any, tuple[bytes, Any, dict[Any, tuple[bytes, Any]]]] = {}
        self._whole: dict[bytes, dict[str, Any]] = {}

    def __call__(self, body: bytes) -> dict[str, Any]:
        found = self._whole.get(body)
        if found is None:
            found = self._whole[body] = self._decode(_unpack(body))
        return found

    def _decode(self, packed: bytes) -> dict[str, Any]:
        split = members(packed)
        if split is None:
            obj: dict[str, Any] = loads(packed)
            return obj
        last, self._last = self._last, {}
        out: dict[str, Any] = {}
        for key, blob in split:
            before = last.get(key)
            if before is not None and before[0] == blob:
                out[key], inner = before[1], before[2]
            else:
                out[key], inner = _member(blob, before[2] if before is not None else None)
            self._last[key] = (blob, out[key], inner)
        return out


def _member(blob: bytes, before: dict[Any, tuple[bytes, Any]] | None) -> tuple[Any, dict[Any, tuple[bytes, Any]]]:
    """A member's value, and when it is a map its own members by their bytes: shared with ``before`` (the previous
    version's) where the bytes are equal."""
    split = members(blob)
    if split is None:
        return loads(blob), {}
    known = before or {}
    inner: dict[Any, tuple[bytes, Any]] = {}
    for key, part in split:
        same = known.get(key)
        inner[key] = same if same is not None and same[0] == part else (part, loads(part))
    return {key: value for key, (_, value) in inner.items()}, inner


def chain_to_json(chain: Iterable[ObjKey]) -> str:
    return json.dumps([[str(k.gvk), k.namespace, k.name] for k in chain], separators=(",", ":"), ensure_ascii=False)


def chain_from_json(text: str) -> tuple[ObjKey, ...]:
    return tuple(ObjKey(GVK.parse(g), ns, name) for g, ns, name in json.loads(text))


_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def refs_to_json(refs: Iterable[tuple[str, str]]) -> str:
    return _COMPACT(list(refs))  # tuples encode as lists; the recorder writes one per applied object


def refs_from_json(text: str) -> tuple[tuple[str, str], ...]:
    return tuple((code, name) for code, name in json.loads(text))
