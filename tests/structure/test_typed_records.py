"""The comparison's results reach every reader as typed records (``sonnx_check.results``): no report, no
part of the evidence record and not the verdict class reads them by string key, so a renamed field fails at
import or in mypy instead of reading a default."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "sonnx_check"
# Readers of the evidence *document* (the JSON file format, validated against schemas/evidence.schema.json),
# not of the comparison's results: none since the HTML report and its plots read the typed records.
EVIDENCE_DOCUMENT_READERS: set[str] = set()
# Reads of other data that share a key with a record (a Counter of severities: counts["error"]).
NOT_RESULTS = {("report/step_summary.py", "error")}


def _record_keys() -> set[str]:
    """Every key the records' ``to_json`` write: a string-key read of one of them is a read of a result."""
    keys: set[str] = set()
    for path in (PACKAGE / "results").glob("*.py"):
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, ast.FunctionDef) or not function.name.endswith("json"):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Dict):
                    keys |= {
                        k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
                    }
                elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
                    if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                        keys.add(node.slice.value)
    return keys


def _readers() -> list[Path]:
    paths = [
        PACKAGE / "findings.py",
        *(PACKAGE / "report").glob("*.py"),
        *(PACKAGE / "evidence").glob("*.py"),
    ]
    return [p for p in paths if p.relative_to(PACKAGE).as_posix() not in EVIDENCE_DOCUMENT_READERS]


def string_key_reads(source: str, keys: set[str]) -> list[tuple[int, str]]:
    """(line, key) of every ``x["key"]`` load and ``x.get("key")`` call whose key a record writes."""
    found = []
    for node in ast.walk(ast.parse(source)):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            if isinstance(node.slice, ast.Constant):
                key = node.slice.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            if node.args and isinstance(node.args[0], ast.Constant):
                key = node.args[0].value
        if isinstance(key, str) and key in keys:
            found.append((node.lineno, key))
    return found


def test_the_records_write_the_keys_this_test_looks_for() -> None:
    keys = _record_keys()
    assert {
        "status",
        "mismatches",
        "unexplained",
        "explained_by",
        "known_divergence",
        "first_mismatch",
    } <= keys
    assert {"nodes", "outputs", "node_edges", "configurations", "summary", "margin"} <= keys


@pytest.mark.parametrize("path", _readers(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_reader_reads_a_comparison_result_by_string_key(path: Path) -> None:
    name = path.relative_to(PACKAGE).as_posix()
    reads = string_key_reads(path.read_text(encoding="utf-8"), _record_keys())
    reads = [(line, key) for line, key in reads if (name, key) not in NOT_RESULTS]
    assert not reads, f"{path.name} reads comparison results by key (read the record's attributes): {reads}"


def test_the_check_finds_the_reads_it_forbids() -> None:
    """The old readers' idioms are caught (this check would have failed on findings.py before the records)."""
    old = 'def f(data, c):\n    return data.get("unexplained"), c["nodes"], data.get("explained_by", ())\n'
    found = sorted(k for _, k in string_key_reads(old, _record_keys()))
    assert found == ["explained_by", "nodes", "unexplained"]
