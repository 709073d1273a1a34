"""``view/diff``: a version against the one before, as difflib writes it, in time linear in what the versions share."""

from __future__ import annotations

import difflib
import random
import resource
from typing import Any

import pytest

from kubectl_sktrace.view.diff import as_yaml, unified


def _difflib(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str:
    lines = difflib.unified_diff(as_yaml(before).splitlines(keepends=True), as_yaml(after).splitlines(keepends=True),
                                 fromfile="before", tofile="after", n=3)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _versions(seed: int) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    rng = random.Random(seed)
    before = {f"k{i}": rng.choice("abc") for i in range(rng.randrange(0, 40))}
    after = dict(before)
    for _ in range(rng.randrange(0, 5)):
        if after and rng.random() < 0.3:
            after.pop(rng.choice(list(after)))
        else:
            after[f"k{rng.randrange(0, 50)}"] = rng.choice("abd")
    return (None if seed % 17 == 0 else before), (None if seed % 19 == 0 else after)


@pytest.mark.parametrize("seed", range(200))
def test_the_diff_is_difflib_s_own(seed: int) -> None:
    before, after = _versions(seed)
    assert unified(before, after, before_name="before", after_name="after") == _difflib(before, after)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@pytest.mark.parametrize("before, after", [
    pytest.param([str(i) for i in range(20_000)], [str(i * 7 % 20_000) for i in range(20_000)], id="20k-lines-reordered"),  # 14 s before
    pytest.param([f"line {i}" for i in range(20_000)], [f"LINE {i}" for i in range(20_000)], id="20k-lines-changed"),
])
def test_a_huge_value_is_summarized_in_bounded_work(before: list[str], after: list[str]) -> None:
    before_object = {"kind": "ConfigMap", "data": {"env": "\n".join(before)}, "z": 1}
    after_object = {"kind": "ConfigMap", "data": {"env": "\n".join(after)}, "z": 2}
    started = _cpu()
    diff = unified(before_object, after_object, before_name="before", after_name="after")
    assert _cpu() - started < 5, "a guard against quadratic work, with a wide margin (about 1 s here)"
    assert diff.startswith("--- before\n+++ after\n@@ -") and "too many lines to compare here: " in diff
    assert diff.count("\n") == 3


@pytest.mark.slow  # diffs a huge value: a second of CPU
def test_a_small_change_in_a_huge_value_is_still_shown_line_by_line() -> None:
    value = "\n".join(f"line {i}" for i in range(20_000))
    before, after = {"data": {"env": value}}, {"data": {"env": value.replace("line 12345\n", "line 12345 changed\n")}}
    diff = unified(before, after, before_name="before", after_name="after")
    assert diff == _difflib(before, after)
