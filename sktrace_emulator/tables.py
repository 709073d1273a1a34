"""Table output (``Accept: ...;as=Table``) of the store's objects, in the form every server of the distribution
shares (``sktrace_apiserver.tables``)."""

from __future__ import annotations

from sktrace_apiserver import tables
from sktrace_emulator.records import Obj, ResourceType, Stored


def table(rtype: ResourceType, items: list[Stored], *, rv: int, cont: str, remaining: int) -> Obj:
    """A Table of ``items`` as the list (or watch event) at ``rv`` would carry it."""
    return tables.table(rtype.kind, [stored.obj() for stored in items], rv=str(rv), cont=cont, remaining=remaining)


def table_event(rtype: ResourceType, event_type: str, stored: Stored) -> bytes:
    """One watch event line whose object is a one-row Table (``kubectl get -w``)."""
    return tables.event_line(event_type, table(rtype, [stored], rv=stored.rv, cont="", remaining=0))
