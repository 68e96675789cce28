"""The package's structure, as issues 19 and 28 require it: no import circle between its modules, no module
over 600 lines (small modules with one purpose), and no class over about 250 lines (split, not trimmed)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from import_graph import ROOT, cycles, graph, modules

MAX_LINES = 600
MAX_CLASS_LINES = 250


@pytest.mark.slow
def test_the_package_has_no_import_circle() -> None:
    found = cycles(graph())
    assert found == [], "import circles (each a set of modules importing one another): " + "; ".join(
        " <-> ".join(component) for component in found
    )


def test_a_circle_is_found_through_a_lazy_or_type_checking_import(tmp_path: Path) -> None:
    """The graph counts the imports that hide a circle from the interpreter."""
    package = tmp_path / "sonnx_check"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import b\n"
    )
    (package / "b.py").write_text("def f():\n    from sonnx_check.a import x\n")
    (package / "c.py").write_text("import sonnx_check.a\n")
    assert cycles(graph(package)) == [["sonnx_check.a", "sonnx_check.b"]]


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_is_over_600_lines() -> None:
    over = {
        path.relative_to(ROOT).as_posix(): _lines(path)
        for path in modules().values()
        if _lines(path) > MAX_LINES
    }
    assert over == {}, "modules over 600 lines (split them by purpose)"


def _class_lengths(path: Path) -> dict[str, int]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    where = path.relative_to(ROOT).as_posix()
    return {
        f"{where}:{node.name}": (node.end_lineno or node.lineno) - node.lineno + 1
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    }


@pytest.mark.slow
def test_no_class_is_over_250_lines() -> None:
    lengths = {name: n for path in modules().values() for name, n in _class_lengths(path).items()}
    over = {name: n for name, n in lengths.items() if n > MAX_CLASS_LINES}
    assert over == {}, "classes over ~250 lines (split them by purpose, do not trim their comments)"
