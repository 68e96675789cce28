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
from clikit import run_cli

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_models" / "conforming" / "small_cnn.onnx"
CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run_in_terminal(columns: int, args: list[str], *, stream: str = "stdout") -> tuple[str, str]:
    """sonnx-check with ``stream`` (stdout or stderr) a terminal of ``columns``: (what the terminal received,
    the other stream, piped)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 100, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR")}
    env["TERM"] = "xterm-256color"
    process = subprocess.Popen(
        [sys.executable, "-m", "sonnx_check", *args],
        stdin=subprocess.DEVNULL,
        stdout=follower if stream == "stdout" else subprocess.PIPE,
        stderr=follower if stream == "stderr" else subprocess.PIPE,
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
    piped = process.communicate(timeout=300)[0 if stream == "stderr" else 1]
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace"), piped.decode("utf-8", "replace")


def _in_terminal(columns: int, *args: str) -> list[str]:
    """sonnx-check's stdout as a terminal of ``columns`` shows it, one entry per physical line."""
    text = CSI.sub("", run_in_terminal(columns, list(args))[0]).replace("\r", "")
    return text.split("\n")


@pytest.mark.slow
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


@pytest.mark.slow
@pytest.mark.process
def test_a_wide_terminal_gets_the_table_on_one_line_per_row() -> None:
    lines = _in_terminal(200, "--compare", "--no-node-edges", str(SAMPLE.relative_to(ROOT)))
    assert not [line for line in lines if len(line) > 200]
    (header,) = [line for line in lines if "error/bound" in line]
    assert "node" in header and "dataset" in header and "status" in header
    rows = [line for line in lines if line.lstrip().startswith("#2 MaxPool")]
    assert len(rows) == 2 and any("pool1.indices" in row for row in rows)


@pytest.mark.process
def test_help_fits_80_columns_without_a_cut_word() -> None:
    lines = _in_terminal(80, "--help")
    assert not [line for line in lines if len(line) > 80]
    text = " ".join(" ".join(lines).split())
    assert (
        "interrupted by SIGINT or SIGTERM" in text
    )  # the epilog wrapped between words, by the terminal's width
    assert "when a fix was written" in text
    assert any(
        "sonnx-check --format github --output-format sarif:sonnx-check.sarif models/" in x for x in lines
    )


@pytest.mark.process
@pytest.mark.parametrize("aliases", [False, True])
def test_the_rule_list_fits_80_columns_with_every_id_whole(aliases: bool) -> None:
    from sonnx_check.catalogue import catalogue

    lines = _in_terminal(80, "--list-rules", *(["--aliases"] if aliases else []))
    assert not [line for line in lines if len(line) > 80]
    words = {word.rstrip(",") for line in lines for word in line.split()}
    missing = [rule for rule in catalogue() if rule not in words]
    assert not missing, missing[:5]  # no ID split across lines
    assert ("E_ABS_REAL_CONSTR_X_010" in words) is aliases  # aliases on demand, each whole


def test_the_piped_rule_list_is_one_plain_row_per_rule() -> None:
    from sonnx_check.catalogue import catalogue

    rows = [line for line in run_cli(["--list-rules"]).stdout.splitlines() if line.strip()]
    assert [row.split()[0] for row in rows] == list(catalogue())
    assert max(len(row) for row in rows) < 160  # no 400-character rows of padded alias columns
    assert not any("E_ABS_REAL_CONSTR_X_010" in row for row in rows)
    with_aliases = run_cli(["--list-rules", "--aliases"]).stdout.splitlines()
    (abs_row,) = [row for row in with_aliases if row.startswith("Abs.X.C1 ")]
    assert abs_row.split()[1:4] == ["error", "Abs", "stable"]
    assert abs_row.endswith(
        "aliases: Abs.Y.C1, E_ABS_REAL_CONSTR_X_010, E_ABS_FLOAT_CONSTR_X_010, "
        "E_ABS_INT_CONSTR_X_010, E_ABS_REAL_CONSTR_Y_010, E_ABS_FLOAT_CONSTR_Y_010, "
        "E_ABS_INT_CONSTR_Y_010"
    )
    assert run_cli(["--aliases"]).stderr == "sonnx-check: error: --aliases needs --list-rules\n"


@pytest.mark.slow
@pytest.mark.process
def test_a_long_finding_wraps_between_words_with_a_hanging_indent() -> None:
    lines = _in_terminal(80, "--compare", str(SAMPLE.relative_to(ROOT)))
    assert not [line for line in lines if len(line) > 80]
    starts = [i for i, line in enumerate(lines) if line.startswith("  RUNTIME.divergence ")]
    assert starts
    first = starts[0]
    continued = []
    for line in lines[first + 1 :]:
        if not line.startswith("      "):
            break
        continued.append(line)
    assert len(continued) >= 3  # a 400-character finding on several lines, each under the first
    finding = " ".join(" ".join([lines[first], *continued]).split())
    # which departure comes first depends on the onnxruntime version; these words are in every one
    for word in ("RUNTIME.divergence", "'pool1'", "elements", "differ"):
        assert word in finding.split(), word
