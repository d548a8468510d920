"""The import graph of a package, read from its source with ``ast`` (no third-party tool), and
the package's layers: which folder may import which.

Every ``import`` and ``from ... import`` counts, wherever it stands (module level, inside a
function, under ``TYPE_CHECKING``): a lazy import is still a dependency. Imports written inside
docstrings (doctest examples) are text and do not count.

Run as a script to print the folder graph and any import that runs back up::

    python tests/support/import_graph.py [PACKAGE_DIR]
"""
from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

#: rmqlab's layers, lowest first: a module may import its own layer and the layers below it.
#: Data flows one way: bytes -> formats -> store engine -> analysis -> figures, widgets, reports.
#: "_native" is the C accelerators (rmqlab._jhash, ...); "errors" and "extras" are face modules
#: every layer may raise or check; "face" is the package root (rmqlab/__init__.py).
LAYERS: list[tuple[str, ...]] = [
    ("_native", "errors", "extras"),
    ("jvm", "tables"),
    ("rules",),
    ("formats",),
    ("kafka",),
    ("store",),
    ("verify",),
    ("lab",),
    ("analysis",),
    ("capacity",),
    ("spark",),
    ("viz",),
    ("commands",),
    ("cli", "__main__", "face"),
]
#: The modules allowed at the top of the package: the face.
FACE_MODULES = {"__init__", "__main__", "cli", "errors", "extras"}


@dataclass(frozen=True)
class Edge:
    """One import: `source` (dotted module) imports `target` (dotted module) at `path`:`line`."""
    source: str
    target: str
    path: str
    line: int


def module_name(root: Path, path: Path) -> str:
    """The dotted name of the module at `path` in the package folder `root`."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(root: Path) -> list[Edge]:
    """Every import of the package `root` (a folder with ``__init__.py``) that names the package
    itself, one edge a name imported (``from pkg import a, b`` is two edges when ``a`` and ``b``
    are modules). Cost: one parse of every file."""
    pkg = root.name
    edges = []
    for path in sorted(root.rglob("*.py")):
        mod = module_name(root, path)
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    origin = ".".join(base + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                # `from pkg import sub` imports the submodule pkg.sub; `from pkg.m import name`, pkg.m
                targets = [f"{origin}.{a.name}" if _is_module(root, f"{origin}.{a.name}") else origin
                           for a in node.names]
            for t in targets:
                if t == pkg or t.startswith(pkg + "."):
                    edges.append(Edge(mod, t, str(path), node.lineno))
    return edges


def _is_module(root: Path, dotted: str) -> bool:
    parts = dotted.split(".")[1:]
    if not parts:
        return False
    base = root.joinpath(*parts)
    return (base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()
            or any(base.parent.glob(f"{base.name}.*.so")))


def unit(dotted: str) -> str:
    """The layer unit a module belongs to: its first folder under the package, the face module's
    own name at the top, "_native" for a C accelerator, "face" for the package root."""
    parts = dotted.split(".")
    if len(parts) == 1:
        return "face"
    if parts[1].startswith("_") and parts[1] not in ("__init__", "__main__"):
        return "_native"
    return parts[1]


def folder_graph(edges: list[Edge]) -> dict[str, set[str]]:
    """unit -> the units it imports (itself left out)."""
    g: dict[str, set[str]] = {}
    for e in edges:
        a, b = unit(e.source), unit(e.target)
        g.setdefault(a, set())
        if a != b:
            g[a].add(b)
    return dict(g)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one unit (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def rank(layers: list[tuple[str, ...]] = LAYERS) -> dict[str, int]:
    return {u: i for i, group in enumerate(layers) for u in group}


def upward(edges: list[Edge], layers: list[tuple[str, ...]] = LAYERS) -> list[Edge]:
    """The imports that run from a lower layer to a higher one (or touch a unit no layer names)."""
    r = rank(layers)
    return [e for e in edges
            if unit(e.source) != unit(e.target)
            and r.get(unit(e.target), len(r)) > r.get(unit(e.source), -1)]


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parents[2] / "rmqlab"
    edges = imports(root)
    for a, bs in sorted(folder_graph(edges).items()):
        print(f"{a:10} -> {', '.join(sorted(bs)) or '-'}")
    bad = upward(edges)
    for e in bad:
        print(f"up: {e.path}:{e.line}: {e.source} imports {e.target}")
    for c in cycles(folder_graph(edges)):
        print("cycle:", " <-> ".join(c))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
