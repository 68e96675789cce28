"""Colour follows the community conventions whatever stdout is: FORCE_COLOR gives colour in a piped CI
log (still never wrapped), NO_COLOR removes it, and NO_COLOR wins over FORCE_COLOR."""

from __future__ import annotations

from pathlib import Path

import pytest
from clikit import maxpool_r2, run_cli, save

ESC = "\x1b["


@pytest.fixture()
def model(tmp_path: Path) -> Path:
    return save(maxpool_r2("/a/very/long/node/name/" * 8), tmp_path / "m.onnx")


def _run(model: Path, **env: str | None) -> str:
    variables: dict[str, str | None] = {"FORCE_COLOR": None, "NO_COLOR": None, **env}
    return run_cli(["--isolated", model.name], cwd=model.parent, env=variables).stdout


def test_piped_output_is_plain_by_default(model: Path) -> None:
    assert ESC not in _run(model)


def test_force_color_colours_a_piped_log_without_wrapping_it(model: Path) -> None:
    text = _run(model, FORCE_COLOR="1")
    assert ESC in text
    (line,) = [line for line in text.splitlines() if "MaxPool.R2" in line]
    assert "/a/very/long/node/name/" * 8 in line  # one line, however long


@pytest.mark.parametrize("force", [None, "1"])
def test_no_color_wins(model: Path, force: str | None) -> None:
    assert ESC not in _run(model, NO_COLOR="1", FORCE_COLOR=force)


def test_an_empty_variable_is_unset(model: Path) -> None:
    assert ESC not in _run(model, FORCE_COLOR="")
    assert ESC in _run(model, FORCE_COLOR="1", NO_COLOR="")
