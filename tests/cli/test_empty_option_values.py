"""An empty value for an option that names a command or a folder is a usage error, never "not given": an
unset shell variable (``--runtime-command "$RUNTIME"``) must not turn a test of the user's runtime into a
static check or a test of onnxruntime."""

from __future__ import annotations

from pathlib import Path

import pytest
from clikit import run_cli

SAMPLE = Path(__file__).resolve().parents[2] / "sample_models" / "conforming" / "max_broadcast.onnx"


@pytest.mark.parametrize("option", ["--runtime-command", "--outputs", "--export-inputs", "--export-suite"])
@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_value_is_a_usage_error(option: str, value: str) -> None:
    run = run_cli(["--isolated", option, value, str(SAMPLE)])
    assert run.code == 2
    assert f"Invalid value for '{option}': must not be empty" in run.stderr
    assert "conforms" not in run.stdout
