"""Progress of a long run on stderr: when stderr is a terminal, which model of how many and how far the node
battery is, on one line redrawn in place and erased at the end; nothing when stderr is piped or with -q."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_terminal_width import run_in_terminal

ROOT = Path(__file__).resolve().parents[2]
CONFORMING = ROOT / "sample_models" / "conforming"
MODELS = [str((CONFORMING / name).relative_to(ROOT)) for name in ("small_cnn.onnx", "residual_cnn.onnx")]


def _stderr_in_terminal(*args: str, columns: int = 100) -> tuple[str, str]:
    """(stderr as the terminal received it, stdout piped)."""
    return run_in_terminal(columns, ["--isolated", *args], stream="stderr")


@pytest.mark.slow
@pytest.mark.process
def test_progress_on_a_terminal_counts_models_and_the_node_battery() -> None:
    stderr, stdout = _stderr_in_terminal("--compare", *MODELS)
    assert "sonnx-check: [1/2] sample_models/conforming/small_cnn.onnx" in stderr
    assert "sonnx-check: [2/2] sample_models/conforming/residual_cnn.onnx" in stderr
    assert "node battery: configuration(s) 1-" in stderr
    assert stderr.endswith("\r\x1b[K")  # erased at the end: nothing left on the terminal's line
    assert not [line for line in stderr.split("\r") if len(line.removeprefix("\x1b[K")) > 99]
    assert "[1/2]" not in stdout and "verdict:" in stdout  # the report is unchanged on stdout


@pytest.mark.slow
@pytest.mark.process
def test_no_progress_with_quiet() -> None:
    stderr, _ = _stderr_in_terminal("-q", *MODELS)
    assert stderr == ""


@pytest.mark.slow
@pytest.mark.process
def test_no_progress_when_stderr_is_piped() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sonnx_check", "--isolated", *MODELS, "missing.onnx"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert done.stderr == (
        "sonnx-check: error: missing.onnx: cannot read the model: no such file or folder\n"
    )


@pytest.mark.slow
@pytest.mark.process
def test_a_message_during_the_run_erases_the_progress_line_first() -> None:
    stderr, _ = _stderr_in_terminal(*MODELS, "missing.onnx")
    assert "\r\x1b[Ksonnx-check: error: missing.onnx: cannot read the model" in stderr
