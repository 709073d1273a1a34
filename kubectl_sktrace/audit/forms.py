"""The forms managed clusters hand audit events out in, unwrapped to the API server's own line. Pure.

- the log backend's own line (self-managed clusters, ``--audit-log-path``): an ``audit.k8s.io/v1`` Event, as it is;
- anything else is passed on as it is, and read (or counted bad) as an Event.
"""

from __future__ import annotations


def unwrap(raw: bytes) -> tuple[bytes, ...]:
    """The Event lines one line of a log holds."""
    return (raw,)
