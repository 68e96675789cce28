"""compare/ by purpose: onnxruntime lives with its runner. No module of the comparison outside
``compare/runtimes/onnxruntime/`` imports onnxruntime or any module of that runner (the runners' two doors
do, when asked: the factory, ``compare/runtimes/__init__.py``, and the check of the runners' options before
any model, ``compare/runtimes/startup.py``), so the judging, the edge battery, the inputs and the suite are
the same code for every runtime. The worker process every runtime runs in (``compare/runtimes/worker/``),
the runner on it (``in_worker.py``) and the other runtimes' sessions do not even name onnxruntime in their
code (comments and docstrings aside): the runtimes' declaration (``engines.py``) and the doors alone do,
and the rest of compare/ does not either."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

COMPARE = Path(__file__).resolve().parents[2] / "sonnx_check" / "compare"
RUNTIMES = COMPARE / "runtimes"
RUNNER = "sonnx_check.compare.runtimes.onnxruntime"
DOORS = {RUNTIMES / "__init__.py", RUNTIMES / "startup.py"}
DECLARATION = RUNTIMES / "engines.py"  # each runtime's package, distributions and session module, by name
# The edge battery (compare/edges/, another room) imports the default capabilities under this name.
KNOWN_NAMES = {"ONNXRUNTIME_LIKE"}
_ORT = re.compile(r"(ort|Ort|ORT)($|_|\.|[A-Z])")  # ort, OrtSession, ort_worker, ORT_ENABLE_ALL


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
    runner = RUNTIMES / "onnxruntime"
    return sorted(p for p in COMPARE.rglob("*.py") if runner not in p.parents and p not in DOORS)


def _onnxruntime_imports(source: str) -> list[tuple[int, str]]:
    return [
        (line, name)
        for line, name in imported(source)
        if name == "onnxruntime" or name.startswith(("onnxruntime.", RUNNER))
    ]


def _named_in_code(source: str) -> list[tuple[int, str]]:
    """(line, token) of every name or string that says onnxruntime (or ort), docstrings and comments aside."""
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                docstrings.add(body[0].value.lineno)
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.STRING and token.start[0] in docstrings:
            continue
        if token.type in (tokenize.NAME, tokenize.STRING) and (
            "onnxruntime" in token.string.lower() or _ORT.match(token.string.strip("'\"")) is not None
        ):
            found.append((token.start[0], token.string))
    return found


def _runtime_neutral() -> list[Path]:
    runner = RUNTIMES / "onnxruntime"
    return sorted(
        p for p in RUNTIMES.rglob("*.py") if runner not in p.parents and p not in DOORS and p != DECLARATION
    )


@pytest.mark.parametrize("path", _outside_the_runner(), ids=lambda p: p.relative_to(COMPARE).as_posix())
def test_no_module_outside_the_onnxruntime_runner_imports_it(path: Path) -> None:
    found = _onnxruntime_imports(path.read_text(encoding="utf-8"))
    assert not found, f"{path.relative_to(COMPARE)} imports onnxruntime or its runner: {found}"


@pytest.mark.parametrize("path", _runtime_neutral(), ids=lambda p: p.relative_to(COMPARE).as_posix())
def test_the_runtime_machinery_does_not_name_onnxruntime_in_code(path: Path) -> None:
    found = [
        (n, name) for n, name in _named_in_code(path.read_text(encoding="utf-8")) if name not in KNOWN_NAMES
    ]
    assert not found, f"{path.relative_to(COMPARE)} names onnxruntime in its code: {found}"


# The deprecated JSON keys ("onnxruntime", "onnxruntime_bits", "onnxruntime_error") are written from
# results/deprecated_keys.py alone (test below). onnxruntime's own flags (--ort-opt-level, --ort-provider)
# reach the comparison as its runtime options (settings_handover.compare_arguments): CompareOptions names no
# runtime.


def _rest_of_the_comparison() -> list[Path]:
    return [p for p in _outside_the_runner() if p != DECLARATION and RUNTIMES not in p.parents]


@pytest.mark.parametrize("path", _rest_of_the_comparison(), ids=lambda p: p.relative_to(COMPARE).as_posix())
def test_the_rest_of_the_comparison_does_not_name_onnxruntime_in_code(path: Path) -> None:
    """The judging, the edge battery, the inputs, the suite, the survey, the options and the operators'
    facts: the same code for every runtime, so none names onnxruntime in code."""
    found = [
        (n, name) for n, name in _named_in_code(path.read_text(encoding="utf-8")) if name not in KNOWN_NAMES
    ]
    assert not found, f"{path.relative_to(COMPARE)} names onnxruntime in its code: {found}"


def test_the_checks_see_imports_at_any_depth_and_names_in_code_only() -> None:
    old_judge = "def f():\n    from sonnx_check.compare.runtimes.onnxruntime.session import PROVIDER\n"
    assert _onnxruntime_imports(old_judge) and _onnxruntime_imports("import onnxruntime as ort\n")
    assert not _onnxruntime_imports("from sonnx_check.compare.runtimes.worker.host import STAGES\n")
    assert _named_in_code('engine = "onnxruntime"\n') and _named_in_code("class OrtSession: pass\n")
    assert not _named_in_code('"""Runs onnxruntime."""\nx = 1  # as onnxruntime does\n')


def test_the_worker_is_the_runners_own() -> None:
    """The worker's host code (runtimes/worker/) is reached through the runners only: the rest of compare/
    sees a runtime through runtimes.base, a reply streamed from the worker included (base.StreamedOutputs)."""
    worker = "sonnx_check.compare.runtimes.worker"
    reaching = {
        path.relative_to(COMPARE).as_posix(): [name for _, name in imported(path.read_text(encoding="utf-8"))
                                               if name == worker or name.startswith(worker + ".")]
        for path in COMPARE.rglob("*.py")
        if RUNTIMES not in path.parents
    }  # fmt: skip
    assert {path: names for path, names in reaching.items() if names} == {}


def test_the_rooms_are_the_purposes() -> None:
    """Sub-packages for inputs, runtimes (the worker every runtime runs in, onnxruntime's runner and session
    beside OpenVINO's and tract's), judging, the edge battery, the suite and the per-operator facts; no
    near-synonym modules left at the top."""
    rooms = {p.name for p in COMPARE.iterdir() if (p / "__init__.py").exists()}
    assert rooms == {"inputs", "runtimes", "judging", "edges", "suite", "ops", "survey"}
    assert {p.name for p in (RUNTIMES / "worker").glob("*.py")} >= {
        "host.py",
        "process.py",
        "shared_arrays.py",
        "model_bytes.py",
    }
    assert {p.name for p in (RUNTIMES / "onnxruntime").glob("*.py")} == {
        "__init__.py",
        "runner.py",
        "session.py",
    }
    top = {p.stem for p in COMPARE.glob("*.py")}
    assert not top & {"judge", "judging", "outcomes", "battery", "battery_model", "runtime", "ort_worker"}


PACKAGE = COMPARE.parent
DEPRECATED_KEYS = PACKAGE / "results" / "deprecated_keys.py"
# The one other place a string is exactly "onnxruntime": the distribution's name among the libraries the
# evidence record lists (evidence/environment.py), which is not a key of the comparison's results.
LIBRARY_NAMES = PACKAGE / "evidence" / "environment.py"


def _writers_of_results() -> list[Path]:
    rooms = [*_rest_of_the_comparison(), *(PACKAGE / "results").glob("*.py")]
    rooms += [*(PACKAGE / "report").glob("*.py"), *(PACKAGE / "evidence").glob("*.py")]
    return sorted(p for p in rooms if p not in (DEPRECATED_KEYS, LIBRARY_NAMES))


@pytest.mark.parametrize("path", _writers_of_results(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_the_deprecated_onnxruntime_keys_are_written_from_one_module(path: Path) -> None:
    """The keys kept for one release beside their runtime-neutral names: one module spells them, so a
    reader cannot drift from the writer and dropping them is one edit."""
    keys = {"onnxruntime", "onnxruntime_bits", "onnxruntime_error"}
    found = [
        (n, name)
        for n, name in _named_in_code(path.read_text(encoding="utf-8"))
        if name[:1] in "'\"" and name.strip("'\"") in keys
    ]
    assert not found, f"{path.relative_to(PACKAGE)} spells a deprecated key: {found}"


def test_the_deprecated_keys_module_declares_exactly_the_three_keys() -> None:
    source = DEPRECATED_KEYS.read_text(encoding="utf-8")
    assert sorted(name.strip("'\"") for _, name in _named_in_code(source)) == [
        "onnxruntime",
        "onnxruntime_bits",
        "onnxruntime_error",
    ]
    assert {name.split(".")[0] for _, name in imported(source)} <= {"__future__"}  # anyone may import it
