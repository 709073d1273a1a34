"""The size limits of the house, measured on the source: a newcomer reads any product module in one sitting.

No product module over 500 lines, no function over 60 lines, no function whose cyclomatic complexity (McCabe,
as ``flake8 --max-complexity`` counts it) is over 15, nor over 20 as radon counts it (radon adds each boolean
operator and comprehension, so it sees the tangles McCabe's graph does not). The emulator (``sktrace_emulator``) is a test and demo
server beside the product and is held to the module limit only.
"""

from __future__ import annotations

import ast
from pathlib import Path

import mccabe
import pytest
from radon.complexity import cc_visit

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = sorted([*(ROOT / "kubectl_sktrace").rglob("*.py"), *(ROOT / "sktrace_apiserver").rglob("*.py")])  # and the protocol it speaks
EMULATOR = sorted((ROOT / "sktrace_emulator").rglob("*.py"))

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60
MAX_COMPLEXITY = 15
MAX_RADON_COMPLEXITY = 20


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _complexities(tree: ast.AST) -> list[tuple[str, int, int]]:
    visitor = mccabe.PathGraphingAstVisitor()
    visitor.preorder(tree, visitor)
    return [(graph.entity, graph.lineno, graph.complexity()) for graph in visitor.graphs.values()]


def test_the_measures_see_what_they_measure() -> None:
    source = "def f(x):\n" + "".join(f"    if x == {n}:\n        return {n}\n" for n in range(20)) + "    return -1\n"
    tree = ast.parse(source)
    assert _complexities(tree) == [("f", 1, 21)]
    (function,) = _functions(tree)
    assert function.end_lineno == 42


@pytest.mark.parametrize("path", PRODUCT + EMULATOR, ids=_rel)
def test_no_module_over_the_limit(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{_rel(path)} has {lines} lines (limit {MAX_MODULE_LINES}): split it by concern"


@pytest.mark.parametrize("path", PRODUCT, ids=_rel)
def test_no_function_over_the_limits(path: Path) -> None:
    tree = ast.parse(path.read_text(), filename=str(path))
    long = [
        f"{node.name} (line {node.lineno}): {node.end_lineno - node.lineno + 1} lines"
        for node in _functions(tree)
        if node.end_lineno is not None and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    tangled = [f"{name} (line {line}): complexity {value}" for name, line, value in _complexities(tree) if value > MAX_COMPLEXITY]
    assert long == [] and tangled == [], f"{_rel(path)}: " + "; ".join(long + tangled)


def test_radon_sees_what_it_measures() -> None:
    source = "def f(x):\n" + "".join(f"    if x == {n} and x:\n        return {n}\n" for n in range(10)) + "    return -1\n"
    assert [(block.name, block.complexity) for block in cc_visit(source)] == [("f", 21)]


@pytest.mark.parametrize("path", PRODUCT, ids=_rel)
def test_no_function_radon_scores_over_the_limit(path: Path) -> None:
    tangled = [f"{block.fullname} (line {block.lineno}): {block.complexity}" for block in cc_visit(path.read_text())
               if block.letter in ("F", "M") and block.complexity > MAX_RADON_COMPLEXITY]
    assert tangled == [], f"{_rel(path)}: " + "; ".join(tangled)
