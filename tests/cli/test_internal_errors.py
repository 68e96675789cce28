"""A crash inside sonnx-check is a bug: exit 3, one paragraph that names the rule and the model (the
traceback only on request), the other models of the run are still checked, and the crashed model stays in
every report as a MODEL.internal-error finding."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from builders import maxpool_model, save
from click.testing import CliRunner

from sonnx_check.cli import main
from sonnx_check.registry import CHECKS


@pytest.fixture
def crashing_r4(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(view, index):  # type: ignore[no-untyped-def]
        raise ZeroDivisionError("synthetic bug")
        yield  # a generator, like every check

    monkeypatch.setitem(CHECKS, "MaxPool.R4", dataclasses.replace(CHECKS["MaxPool.R4"], func=boom))


def test_a_crashing_rule_is_exit_3_with_one_paragraph_and_the_other_models_are_checked(
    crashing_r4: None, tmp_path: Path
) -> None:
    pool = save(maxpool_model(), tmp_path, "pool.onnx")
    other = tmp_path / "other.onnx"
    other.write_bytes(b"")
    result = CliRunner().invoke(main, ["--format", "json", str(pool), str(other)])
    assert result.exit_code == 3
    assert "Traceback" not in result.output + result.stderr
    (line,) = [line for line in result.stderr.splitlines() if "internal error" in line]
    assert "rule MaxPool.R4 crashed on" in line and "ZeroDivisionError: synthetic bug" in line
    assert "--show-traceback" in line
    models = json.loads(result.stdout)["models"]
    assert [m["path"] for m in models] == [str(pool), str(other)]
    (finding,) = models[0]["findings"]
    assert finding["rule"] == "MODEL.internal-error" and finding["severity"] == "error"
    assert "rule MaxPool.R4 crashed" in finding["message"] and "synthetic bug" in finding["message"]
    assert json.loads(result.stdout)["summary"]["internal_errors"] == 1


def test_the_traceback_is_shown_on_request(crashing_r4: None, tmp_path: Path) -> None:
    pool = save(maxpool_model(), tmp_path, "pool.onnx")
    result = CliRunner().invoke(main, ["--show-traceback", str(pool)])
    assert result.exit_code == 3
    assert "Traceback (most recent call last)" in result.stderr and "synthetic bug" in result.stderr
