"""How an object is stored in ``events.body`` and ``events.status``, and an owner chain in ``owner_chain``.

The sanitized object is split in two: its ``status`` (``events.status``, NULL when it has none) and the
rest (``events.body``), each as zlib level-1 compressed msgpack, packed exactly as inside a trace. Export
drops ``status`` by default (docs/spec.md §7 step 7), so the decompressed body bytes are spliced into the trace as
they are, without decoding and re-encoding: that keeps an export close to the speed of writing the file.
zlib level 1 cuts pod-sized bodies about threefold and costs less than it saves in writes.

Owner chains are compact JSON ``[[gvk, namespace, name], ...]``, direct owners first; an object's pod-template
references (``events.refs``) compact JSON ``[[code, name], ...]``.
"""

from __future__ import annotations

import json
import zlib
from typing import Any, Iterable, Mapping

from kubectl_sktrace.model import GVK, ObjKey
from kubectl_sktrace.trace.files.format import dumps_object, loads


def encode_body(obj: Mapping[str, Any]) -> tuple[bytes, bytes | None]:
    """``(body, status)`` blobs of one sanitized object."""
    status = obj.get("status")
    rest = {k: v for k, v in obj.items() if k != "status"} if "status" in obj else obj
    status_blob = None if status is None else zlib.compress(dumps_object(status), 1)
    return zlib.compress(dumps_object(rest), 1), status_blob


def packed_body(body: bytes) -> bytes:
    """The msgpack bytes of the object without its status, ready to be written into a trace."""
    return zlib.decompress(body)


def decode_body(body: bytes, status: bytes | None = None) -> dict[str, Any]:
    """The object back as a dict, with its status when one was stored and is passed."""
    obj: dict[str, Any] = loads(zlib.decompress(body))
    if status is not None:
        obj["status"] = loads(zlib.decompress(status))
    return obj


def chain_to_json(chain: Iterable[ObjKey]) -> str:
    return json.dumps([[str(k.gvk), k.namespace, k.name] for k in chain], separators=(",", ":"), ensure_ascii=False)


def chain_from_json(text: str) -> tuple[ObjKey, ...]:
    return tuple(ObjKey(GVK.parse(g), ns, name) for g, ns, name in json.loads(text))


_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def refs_to_json(refs: Iterable[tuple[str, str]]) -> str:
    return _COMPACT(list(refs))  # tuples encode as lists; the recorder writes one per applied object


def refs_from_json(text: str) -> tuple[tuple[str, str], ...]:
    return tuple((code, name) for code, name in json.loads(text))
