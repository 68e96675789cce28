"""A link put where a report goes after the target was classified (between the check and the write) is still
neither followed nor replaced: the final open uses O_NOFOLLOW and checks what it opened, and the atomic
rename checks the target again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sonnx_check import output_target
from sonnx_check.errors import UsageError
from sonnx_check.output_target import Target, TargetKind
from sonnx_check.report import files


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    link = tmp_path / "report.sarif"
    link.symlink_to(victim.name)
    return link, victim


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in ("victim.txt", "report.sarif"))


def test_the_atomic_write_does_not_replace_a_link_put_there_since(planted):
    link, victim = planted
    with pytest.raises(OSError, match="no longer a regular file"):
        files.write_atomic_bytes(str(link), b"report")
    assert link.is_symlink() and victim.read_text() == "precious"
    assert _leftovers(link.parent) == []  # the temporary file is removed


def test_an_append_does_not_follow_a_link_put_there_since(planted, monkeypatch):
    link, victim = planted
    monkeypatch.setattr(output_target, "classify", lambda path: Target(TargetKind.REGULAR, path))
    with pytest.raises(UsageError, match="is a symbolic link"):
        output_target.write_output(str(link), "report", append=True)
    assert victim.read_text() == "precious"


def test_a_fifo_swapped_for_a_regular_file_is_not_written_into(tmp_path, monkeypatch):
    """Opening a "special" target without O_TRUNC would overwrite a regular file's first bytes in place."""
    regular = tmp_path / "was-a-fifo"
    regular.write_text("precious")
    monkeypatch.setattr(output_target, "classify", lambda path: Target(TargetKind.SPECIAL, path))
    with pytest.raises(UsageError, match="changed while the run was writing it"):
        output_target.write_output(str(regular), "XX")
    assert regular.read_text() == "precious"


def test_a_link_swapped_in_for_a_special_target_is_not_followed(planted, monkeypatch):
    link, victim = planted
    monkeypatch.setattr(output_target, "classify", lambda path: Target(TargetKind.SPECIAL, path))
    with pytest.raises(UsageError, match="is a symbolic link"):
        output_target.write_output(str(link), "XX")
    assert victim.read_text() == "precious"


def test_a_regular_report_is_written_as_before(tmp_path):
    target = tmp_path / "r.json"
    output_target.write_output(str(target), "{}")
    output_target.write_output(str(target), "\n", append=True)
    assert target.read_text() == "{}\n"
    assert os.listdir(tmp_path) == ["r.json"]
