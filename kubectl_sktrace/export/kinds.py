"""The kinds an export's rules name, as kubectl names them: ``kind:deploy``, ``kind:deployments``,
``kind:Deployments.apps`` (any case) turned into the kind they name, from the discovery documents the cache keeps
(``store/status.kind_catalog``, the rules' ``trace/selection/rules.resolve_kinds``); and a warning, with the name meant, for a
kind no recorded object has (``kind:Deploymnet`` would match nothing, silently). Reads the cache only.
"""

from __future__ import annotations

from kubectl_sktrace.model import CacheUrl
from kubectl_sktrace.store import open_cache_readonly
from kubectl_sktrace.store.status import kind_catalog
from kubectl_sktrace.trace.selection.rules import Rule, resolve_kinds


def rule_kinds(cache_path: str | CacheUrl, rules: tuple[Rule, ...]) -> tuple[tuple[Rule, ...], list[str]]:
    """``rules`` with their kinds resolved against the cache at ``cache_path``, and the warnings of kinds never recorded."""
    if not any(rule.kinds for rule in rules):
        return rules, []
    with open_cache_readonly(cache_path) as opened:
        catalog, recorded = kind_catalog(opened)
    return resolve_kinds(rules, catalog=catalog, recorded=recorded)
