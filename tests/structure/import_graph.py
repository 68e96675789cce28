"""The import graph of the sonnx_check package, read from the source with ast (nothing is imported).

An edge A -> B means module A imports module B anywhere: at module level, inside ``if TYPE_CHECKING:``,
or inside a function. A lazy or type-checking-only import hides a circle from the interpreter but not from
the reader: the two modules still cannot be understood, tested or moved one without the other, which is
what issue 19 counts as an import circle (``vocabulary``<->``checks/general`` was one through a lazy
import). ``from P import name`` is an edge to ``P.name`` when that is a module of the package, else to
``P``; importing a submodule is not counted as importing its parent package's ``__init__``.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "sonnx_check"
ROOT = Path(__file__).resolve().parents[2] / PACKAGE


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> source file, for every .py file of the package."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``name`` imports, wherever the import statement is."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for statement in ast.walk(tree):
        if not isinstance(statement, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(statement, ast.Import):
            targets = [alias.name for alias in statement.names]
        else:
            base = statement.module or ""
            if statement.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (statement.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in statement.names
            ]
        out.update(t for t in targets if t in known and t != name)
    return out


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    found = modules(root)
    known = set(found)
    return {name: imports(name, path, known) for name, path in found.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:  # the package has a few hundred modules: recursion depth is fine
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


if __name__ == "__main__":
    for component in cycles(graph()):
        print(" <-> ".join(component))
