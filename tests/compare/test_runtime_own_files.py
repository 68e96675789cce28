"""onnxruntime writes files of its own when it is imported (1.32: ``$TMPDIR/.ses``, a telemetry database and a
device id under ``~/.cache/Microsoft/DeveloperTools``): under sonnx-check they stay in the worker's private
folder, which goes with the worker, so a comparison leaves nothing in the user's home or temporary folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parents[2] / "sample_models" / "conforming" / "small_cnn.onnx"

pytestmark = pytest.mark.live_ort


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.slow
def test_a_comparison_leaves_no_runtime_file_in_home_or_tmp(tmp_path: Path) -> None:
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    env = dict(os.environ, HOME=str(home), TMPDIR=str(tmp), XDG_CACHE_HOME=str(home / ".cache"))
    done = subprocess.run(
        [sys.executable, "-m", "sonnx_check", "--compare", "--no-node-edges", "-q", str(SAMPLE)],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _files(tmp) == set(), "onnxruntime's or sonnx-check's temporary files were left in TMPDIR"
    assert not any("Microsoft" in name for name in _files(home)), _files(home)


@pytest.mark.slow
def test_the_private_folder_of_a_killed_run_is_swept_by_the_next(tmp_path: Path) -> None:
    from sonnx_check.compare.runtimes import run_folder

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    pid = int(dead.stdout)  # a process that has ended: its folder is abandoned
    leftover = tmp / f"{run_folder.PREFIX}{run_folder._host()}-{pid}-1-x"
    (leftover / ".cache").mkdir(parents=True)
    env = dict(os.environ, HOME=str(tmp_path), TMPDIR=str(tmp))
    done = subprocess.run(
        [sys.executable, "-m", "sonnx_check", "--compare", "--no-node-edges", "-q", str(SAMPLE)],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not leftover.exists()
