"""A watch stream's framing, as a real API server sends it: an HTTP/1.1 chunked response of JSON lines, each event
(ADDED, MODIFIED, DELETED, BOOKMARK, ERROR) its own chunk, the stream ended by the terminating chunk."""

from __future__ import annotations

import json
from typing import Any

END = b"0\r\n\r\n"
"""The terminating chunk: the stream ended cleanly (``timeoutSeconds``, or nothing more to send)."""

_PREFIX = {t: b'{"type":"%s","object":' % t.encode() for t in ("ADDED", "MODIFIED", "DELETED")}


def chunk(data: bytes) -> bytes:
    """``data`` as one HTTP chunk."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def event_line(event_type: str, raw: bytes) -> bytes:
    """One event line whose object is ``raw`` (an object's JSON bytes, made once)."""
    return b"".join((_PREFIX[event_type], raw, b"}\n"))


def error_line(status: dict[str, Any]) -> bytes:
    """The ERROR event that carries a ``Status`` (a 410 Expired, say) on a 200 stream."""
    return json.dumps({"type": "ERROR", "object": status}, separators=(",", ":")).encode() + b"\n"


def bookmark_line(*, kind: str, api_version: str, rv: str) -> bytes:
    """A BOOKMARK: only the kind and the version the watch may resume from."""
    bookmark = {"type": "BOOKMARK", "object": {"kind": kind, "apiVersion": api_version, "metadata": {"resourceVersion": rv}}}
    return json.dumps(bookmark, separators=(",", ":")).encode() + b"\n"
