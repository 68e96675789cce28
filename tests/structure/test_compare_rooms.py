"""compare/ by purpose: onnxruntime lives with its runner. No module of the comparison outside
``compare/runtimes/onnxruntime/`` imports onnxruntime or any module of that runner (the runners' two doors
do, when asked: the factory, ``compare/runtimes/__init__.py``, and the check of the runners' options before
any model, ``compare/runtimes/startup.py``), so the judging, the edge battery, the inputs and the
suite are the same code for every runtime."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

COMPARE = Path(__file__).resolve().parents[2] / "sonnx_check" / "compare"
RUNNER = "sonnx_check.compare.runtimes.onnxruntime"
DOORS = {COMPARE / "runtimes" / "__init__.py", COMPARE / "runtimes" / "startup.py"}
# The other runtimes run in onnxruntime's worker process (--runtime openvino, tract): their runner and
# sessions may use the worker, its host and its model edits, never onnxruntime's session or runner.
WORKER_SHARERS = {
    COMPARE / "runtimes" / "in_worker.py",
    COMPARE / "runtimes" / "openvino",
    COMPARE / "runtimes" / "tract",
}
SHARED = (f"{RUNNER}.host", f"{RUNNER}.model_bytes", f"{RUNNER}.worker")


def imported(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import, at any depth (function-level ones too)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out += [(node.lineno, node.module)]
            out += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return out


def _outside_the_runner() -> list[Path]:
    runner = COMPARE / "runtimes" / "onnxruntime"
    return sorted(p for p in COMPARE.rglob("*.py") if runner not in p.parents and p not in DOORS)


def _onnxruntime_imports(source: str) -> list[tuple[int, str]]:
    return [
        (line, name)
        for line, name in imported(source)
        if name == "onnxruntime" or name.startswith(("onnxruntime.", RUNNER))
    ]


@pytest.mark.parametrize("path", _outside_the_runner(), ids=lambda p: p.relative_to(COMPARE).as_posix())
def test_no_module_outside_the_onnxruntime_runner_imports_it(path: Path) -> None:
    found = _onnxruntime_imports(path.read_text(encoding="utf-8"))
    if path in WORKER_SHARERS or path.parent in WORKER_SHARERS:
        # ``from ...onnxruntime import host`` names the package too
        found = [
            (n, name)
            for n, name in found
            if name not in (*SHARED, RUNNER) and not name.startswith(f"{RUNNER}.host.")
        ]
    assert not found, f"{path.relative_to(COMPARE)} imports onnxruntime or its runner: {found}"


def test_the_check_sees_imports_at_any_depth() -> None:
    old_judge = "def f():\n    from sonnx_check.compare.runtimes.onnxruntime.host import STAGES\n"
    assert _onnxruntime_imports(old_judge) and _onnxruntime_imports("import onnxruntime as ort\n")
    assert not _onnxruntime_imports("from sonnx_check.compare.runtimes.base import STAGES\n")


def test_the_rooms_are_the_purposes() -> None:
    """Sub-packages for inputs, runtimes (onnxruntime's host code with its runner), judging, the edge
    battery, the suite and the per-operator facts; no near-synonym modules left at the top."""
    rooms = {p.name for p in COMPARE.iterdir() if (p / "__init__.py").exists()}
    assert rooms == {"inputs", "runtimes", "judging", "edges", "suite", "ops", "survey"}
    assert {p.name for p in (COMPARE / "runtimes" / "onnxruntime").glob("*.py")} >= {
        "runner.py",
        "host.py",
        "session.py",
        "worker.py",
        "shared_arrays.py",
        "model_bytes.py",
    }
    top = {p.stem for p in COMPARE.glob("*.py")}
    assert not top & {"judge", "judging", "outcomes", "battery", "battery_model", "runtime", "ort_worker"}
