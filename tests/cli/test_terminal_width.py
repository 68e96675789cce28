"""The report in a real terminal (a pseudo-terminal of a set size, as tmux or a console gives): the
--compare table and the coverage statement fit 80 columns without a word cut by the terminal, and a wide
terminal gets the table."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_models" / "conforming" / "small_cnn.onnx"
CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _in_terminal(columns: int, *args: str) -> list[str]:
    """sonnx-check's stdout as a terminal of ``columns`` shows it, one entry per physical line."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 100, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR")}
    env["TERM"] = "xterm-256color"
    process = subprocess.Popen(
        [sys.executable, "-m", "sonnx_check", *args],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=env,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    process.wait(timeout=300)
    os.close(leader)
    text = CSI.sub("", b"".join(chunks).decode("utf-8", "replace")).replace("\r", "")
    return text.split("\n")


@pytest.mark.process
def test_the_comparison_fits_80_columns_without_a_cut_word() -> None:
    lines = _in_terminal(80, "--compare", "--no-node-edges", str(SAMPLE.relative_to(ROOT)))
    assert any("pool1.indices" in line for line in lines)  # the comparison is there
    too_long = [line for line in lines if len(line) > 80]
    assert not too_long, too_long  # the terminal wrapped nothing, so it cut nothing
    words = " ".join(lines).split()
    for word in ("random", "match", "pool1.indices", "error/bound", "onnxruntime", "(onnxruntime"):
        assert word in words, word
    (coverage,) = [line for line in lines if "coverage:" in line]
    assert coverage.strip() == "coverage: 7 operator rules, 1 draft rules"


@pytest.mark.process
def test_a_wide_terminal_gets_the_table_on_one_line_per_row() -> None:
    lines = _in_terminal(200, "--compare", "--no-node-edges", str(SAMPLE.relative_to(ROOT)))
    assert not [line for line in lines if len(line) > 200]
    (header,) = [line for line in lines if "error/bound" in line]
    assert "node" in header and "dataset" in header and "status" in header
    rows = [line for line in lines if line.lstrip().startswith("#2 MaxPool")]
    assert len(rows) == 2 and any("pool1.indices" in row for row in rows)
