"""Every public function, class and method documents itself in one order: a summary first, then
units and cost, then a runnable example, then what it takes, returns and raises. Read from the
source (no imports), so a module that needs an extra is checked too."""
from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "rmqlab"
# A paragraph that states parameters, the return value or the errors, as a heading or a sentence.
CONTRACT = re.compile(r"^(Parameters|Returns|Raises|Args|Arguments|Yields)\b", re.M)
COST = re.compile(r"\bCost\b")


def public_docstrings():
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) \
                    and not node.name.startswith("_"):
                doc = ast.get_docstring(node)
                if doc:
                    yield f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}", doc


def order_problems(doc: str) -> list[str]:
    problems = []
    first = doc.lstrip().splitlines()[0]
    if first.startswith(">>>") or CONTRACT.match(first):
        problems.append("does not begin with a summary")
    example = doc.find(">>>")
    if example >= 0:
        contract = [m.start() for m in CONTRACT.finditer(doc)]
        if contract and min(contract) < example:
            problems.append("parameters/returns/raises before the example")
        cost = [m.start() for m in COST.finditer(doc)]
        if cost and max(cost) > example:
            problems.append("cost after the example")
    return problems


def test_the_checker_sees_each_kind_of_disorder():
    assert order_problems("Summary.\n\nCost: O(n).\n\n>>> 1\n1\n\nReturns one.") == []
    assert order_problems("Returns one.\n\nMore.") == ["does not begin with a summary"]
    assert order_problems("Summary.\n\nRaises ValueError.\n\n>>> 1\n1") == \
        ["parameters/returns/raises before the example"]
    assert order_problems("Summary.\n\n>>> 1\n1\n\nCost: O(1).") == ["cost after the example"]


def test_public_docstrings_follow_the_house_order():
    seen, bad = 0, []
    for where, doc in public_docstrings():
        seen += 1
        bad += [f"{where}: {p}" for p in order_problems(doc)]
    assert seen > 400
    assert bad == [], "\n".join(bad)
