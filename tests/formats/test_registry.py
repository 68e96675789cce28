"""Reports as a registry of formats: every format the command line accepts is one module of
``report/formats/`` with one ``render(report, console=None)``, and ``render_report`` has no branch of its
own."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from sonnx_check.config import FORMATS as ACCEPTED
from sonnx_check.report import dispatch
from sonnx_check.report.formats import FORMATS, format_module
from sonnx_check.report.outputs import EVIDENCE, HTML

PACKAGE = Path(__file__).resolve().parents[2] / "sonnx_check" / "report" / "formats"


def test_every_accepted_format_has_its_module() -> None:
    assert set(FORMATS) == {*ACCEPTED, HTML, EVIDENCE}
    for name in FORMATS:
        module = format_module(name)
        public = [
            n for n, v in vars(module).items() if inspect.isfunction(v) and v.__module__ == module.__name__
        ]
        assert public == ["render"], (name, public)
        assert list(inspect.signature(module.render).parameters) == ["report", "console"]


def test_render_report_looks_the_format_up() -> None:
    """The 8-branch chain is gone: no comparison of the format name in render_report."""
    tree = ast.parse(inspect.getsource(dispatch.render_report))
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.If, ast.Compare))]
