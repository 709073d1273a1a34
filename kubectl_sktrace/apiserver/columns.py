"""kubectl's columns of the past in the Table form: the cells ``get --at`` prints (``past.printing.COLUMNS``: one
definition of each kind's columns, read from what the history keeps, ``<unknown>`` for what only a status says), in
the protocol's envelope (``sktrace_apiserver.tables``), ``-o wide``'s columns at priority 1. A kind without columns of
its own has NAME and AGE. Pure."""

from __future__ import annotations

from typing import Any, Sequence

from kubectl_sktrace.apiserver.state import Item
from kubectl_sktrace.model import ObjKey
from kubectl_sktrace.past.kinds import Kind
from kubectl_sktrace.past.printing import COLUMNS
from kubectl_sktrace.past.state import LIVE, Knowledge, PastObject
from sktrace_apiserver.tables import column, envelope

Obj = dict[str, Any]
_PLAIN = [(name, cell) for name, cell in COLUMNS["ConfigMap"][0] if name in ("NAME", "AGE")]
_KNOWN = Knowledge(LIVE)


def table(kind: Kind, items: Sequence[Item], *, second: int, rv: str, cont: str = "", remaining: int = 0) -> Obj:
    """The Table of ``items`` (of ``kind``) as they were at ``second``."""
    base, wide = COLUMNS.get(kind.gvk.kind, (_PLAIN, []))
    cells = [*base, *wide]
    definitions = [column(name, format="name" if name == "NAME" else "", priority=0 if i < len(base) else 1)
                   for i, (name, _) in enumerate(cells)]
    rows = []
    for item in items:
        obj = item.obj()
        found = PastObject(kind, ObjKey(kind.gvk, item.namespace, item.name), item.uid, obj, second, 0, 0, _KNOWN, item.pod, item.status)
        rows.append(([cell(found, second) for _, cell in cells], obj.get("metadata") or {}))
    return envelope(definitions, rows, rv=rv, cont=cont, remaining=remaining)
