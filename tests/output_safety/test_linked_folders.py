"""A report path whose folder is a symbolic link (``-o link/report.json``, ``link -> elsewhere``): the
folders on the way are the user's and are followed, as a shell's redirection follows them; the last
component is still never a link that is followed, and nothing that is not a regular file is replaced. The
path is what the kernel resolves: ``link/../x`` is beside the link's target (docs/untrusted.md, report
targets)."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest
from clikit import maxpool_r2, run_cli, save

from sonnx_check import output_target
from sonnx_check.output_target import TargetKind

pytestmark = pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """work/ (the model, the current folder) with work/link -> ../elsewhere/sub."""
    work, sub = tmp_path / "work", tmp_path / "elsewhere" / "sub"
    work.mkdir()
    sub.mkdir(parents=True)
    save(maxpool_r2(), work / "m.onnx")
    (work / "link").symlink_to(Path("..") / "elsewhere" / "sub")
    return work, sub


def _json_report(work: Path, target: str, env: dict[str, str | None] | None = None):
    return run_cli(["--isolated", "--format", "json", "--output", target, "m.onnx"], cwd=work, env=env)


def _nothing_left(*folders: Path) -> None:
    for folder in folders:
        assert not [p.name for p in folder.iterdir() if ".tmp" in p.name or "partial" in p.name]


def test_a_report_goes_through_a_linked_folder(tree):
    work, sub = tree
    result = _json_report(work, "link/report.json")
    assert result.code == 1, result.stderr
    assert json.loads((sub / "report.json").read_text())["models"]
    assert (work / "link").is_symlink() and not (work / "report.json").exists()
    _nothing_left(work, sub)


def test_a_link_at_the_last_component_behind_a_linked_folder_is_refused_and_left_alone(tree):
    work, sub = tree
    victim = sub.parent.parent / "victim.txt"
    victim.write_text("precious")
    (sub / "planted.json").symlink_to(victim)
    for target in ("link/planted.json", "link/../sub/planted.json"):
        result = _json_report(work, target)
        assert result.code == 2
        assert result.stderr == (
            f"sonnx-check: error: --output {target}: is a symbolic link (reports never follow a link they "
            "did not create); name the file itself\n"
        )
        assert (sub / "planted.json").is_symlink() and victim.read_text() == "precious"


def test_dot_dot_after_a_linked_folder_is_what_the_kernel_resolves(tree):
    """link/../new.json is elsewhere/new.json: judged there, its temporary file made there (a rename across
    folders, or file systems, would fail), nothing written beside the link."""
    work, sub = tree
    result = _json_report(work, "link/../new.json")
    assert result.code == 1, result.stderr
    assert json.loads((sub.parent / "new.json").read_text())["models"]
    assert not (work / "new.json").exists()
    _nothing_left(work, sub.parent)
    assert output_target.resolved(f"{work}/link/../new.json") == str(sub.parent.resolve() / "new.json")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_behind_a_linked_folder_is_written_into_not_replaced(tree):
    work, sub = tree
    fifo = sub.parent / "report.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = _json_report(work, "link/../report.fifo")
    reader.join(10)
    assert result.code == 1, result.stderr
    assert json.loads(received[0])["models"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_folder_behind_a_link_is_a_folder(tree):
    work, _ = tree
    for target in ("link", "link/", "link/.."):
        result = _json_report(work, target)
        assert result.code == 2 and ("is a folder" in result.stderr or "is a directory" in result.stderr)


def test_the_step_summary_appends_through_a_linked_folder_and_never_through_a_last_link(tree):
    work, sub = tree
    result = run_cli(["--isolated", "m.onnx"], cwd=work, env={"GITHUB_STEP_SUMMARY": "link/summary.md"})
    assert result.code == 1, result.stderr
    assert "sonnx-check" in (sub / "summary.md").read_text()
    victim = sub.parent / "victim.md"
    victim.write_text("precious")
    (sub / "planted.md").symlink_to(victim)
    result = run_cli(["--isolated", "m.onnx"], cwd=work, env={"GITHUB_STEP_SUMMARY": "link/planted.md"})
    assert victim.read_text() == "precious" and (sub / "planted.md").is_symlink()
    assert result.code == 1  # a warning, the run's own verdict unchanged
    assert "warning: GITHUB_STEP_SUMMARY link/planted.md: is a symbolic link" in result.stderr


def test_the_process_descriptors_are_still_recognised_through_their_linked_folders():
    """/dev/fd is a link to /proc/self/fd: resolving the folder keeps the descriptor."""
    assert output_target.classify("/dev/stdout").kind is TargetKind.DESCRIPTOR
    if os.path.isdir("/proc/self/fd"):
        target = output_target.classify("/dev/fd/2")
        assert (target.kind, target.descriptor) == (TargetKind.DESCRIPTOR, 2)
        assert output_target.classify("/proc/self/fd/1").descriptor == 1
