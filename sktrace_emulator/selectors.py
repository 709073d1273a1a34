"""The ``Filter`` a list or watch asks with; its selectors parsed as the API server parses them (``sktrace_apiserver``).
"""

from __future__ import annotations

from dataclasses import dataclass

from sktrace_apiserver.selectors import FIELD_SELECTABLE as FIELD_SELECTABLE
from sktrace_apiserver.selectors import Requirement as Requirement
from sktrace_apiserver.selectors import parse_field_selector as parse_field_selector
from sktrace_apiserver.selectors import parse_label_selector as parse_label_selector
from sktrace_emulator.records import Stored


@dataclass(frozen=True)
class Filter:
    """What a list or watch asks for: a namespace (or all) and selectors."""

    namespace: str | None = None
    labels: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()

    def matches(self, stored: Stored) -> bool:
        if self.namespace is not None and stored.namespace != self.namespace:
            return False
        return all(r.matches(stored.labels) for r in self.labels) and all(r.matches(stored.fields) for r in self.fields)
