"""The one YAML loader of every YAML the product reads (tracer configs, rule files, kubeconfigs, the config a run
stored): PyYAML's safe loader behind three bounds checked first, in one pass over the parser's events.

- **Size**: at most ``MAX_CHARS`` characters of text, and a caller reads no more than one past it (a kubeconfig of
  many clusters with their certificates is well under it).
- **Depth**: at most ``MAX_DEPTH`` nested maps and lists; PyYAML builds nodes recursively, so deeper text would end
  in a RecursionError (or worse, in the C loader).
- **Aliases**: the document expanded (each ``*alias`` counted as the whole of what its ``&anchor`` holds) is at most
  ``MAX_VALUES`` values. A "billion laughs" file is a few hundred bytes whose aliases expand to 10^9 values; the
  loader shares them, but whatever walks the result then takes minutes and gigabytes.

The pass counts without building anything and without recursion, in time linear in the text; a document within
the bounds is then loaded as ``yaml.safe_load`` would (the C loader when PyYAML has it). Past a bound, ``YamlLimit``:
a ``yaml.YAMLError`` with ``problem`` and ``problem_mark`` as PyYAML's own errors have, so that each caller says it in
its one line, naming its file, as it says a syntax error.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_CHARS = 16 << 20
MAX_DEPTH = 100
MAX_VALUES = 1_000_000

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlLimit(yaml.YAMLError):
    """A document past one of the bounds: ``problem`` says which, ``problem_mark`` where (None for the size)."""

    def __init__(self, problem: str, mark: Any = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark


def load(text: str, *, max_chars: int = MAX_CHARS, max_values: int = MAX_VALUES) -> Any:
    """The document in ``text``, as ``yaml.safe_load`` reads it; ``yaml.YAMLError`` (``YamlLimit`` past a bound). A
    document that is data rather than configuration (a trace read back) passes bounds of its own size."""
    if len(text) > max_chars:
        raise YamlLimit(f"it is longer than {max_chars >> 20} M characters")
    check_bounds(text, max_values=max_values)
    return yaml.load(text, Loader=_LOADER)


def check_bounds(text: str, *, max_values: int = MAX_VALUES) -> None:
    """``YamlLimit`` when the text nests deeper than ``MAX_DEPTH`` or expands past ``max_values`` values."""
    open_sizes: list[tuple[int, str | None]] = []  # per open map or list: values counted in it so far, its anchor
    anchored: dict[str, int] = {}
    total = 0
    for event in yaml.parse(text, Loader=_LOADER):
        size = None
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if len(open_sizes) >= MAX_DEPTH:
                raise YamlLimit(f"it nests maps and lists more than {MAX_DEPTH} deep", event.start_mark)
            open_sizes.append((1, event.anchor))
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            size, anchor = open_sizes.pop()
            if anchor is not None:
                anchored[anchor] = size
        elif isinstance(event, yaml.ScalarEvent):
            size = 1
            if event.anchor is not None:
                anchored[event.anchor] = 1
        elif isinstance(event, yaml.AliasEvent):
            size = anchored.get(event.anchor or "", 1)  # an unknown anchor: the loader's own error follows
        if size is None:
            continue
        if open_sizes:  # a value of the innermost open map or list: counted in it, and so in the document
            count, anchor = open_sizes[-1]
            size = count + size
            open_sizes[-1] = (size, anchor)
        else:
            total = size = total + size
        if size > max_values:
            raise YamlLimit(f"its aliases (*name) expand it to more than {max_values:,} values", event.start_mark)
