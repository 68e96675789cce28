"""--export-inputs and --export-suite appear whole or not at all (export_folder.py): a full, read-only or
forbidden disk is one error line (exit 2, never "internal error: [Errno 28]", exit 3), a stop mid-write
leaves no folder and the same command then succeeds, a link as --export-inputs DIR is refused, and the
leftovers of a killed export are removed only when they are ours."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from sonnx_check import export_folder, stop
from sonnx_check.cli import main
from sonnx_check.compare.inputs import backend_layout

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "sample_models" / "conforming" / "maxpool_explicit.onnx"
OTHER = ROOT / "sample_models" / "conforming" / "max_broadcast.onnx"
EXPORTS = {
    "--export-inputs": lambda target: ["--export-inputs", str(target), str(MODEL), str(OTHER)],
    "--export-suite": lambda target: [
        "--export-suite",
        str(target),
        "--no-node-edges",
        str(MODEL),
        str(OTHER),
    ],
}


@pytest.fixture(autouse=True)
def _clean_stop():
    stop.reset()
    yield
    stop.reset()


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--isolated", "--quiet", "--format", "json", *args])
    return result.exit_code, result.stderr


def _everything(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _fail_after(monkeypatch, files: int, error: int) -> None:
    """The disk fails (``error``) once ``files`` files were written."""
    original = backend_layout.FolderWriter.write_file
    count = [0]

    def write_file(self, name, payload):
        count[0] += 1
        if count[0] > files:
            raise OSError(error, os.strerror(error))
        return original(self, name, payload)

    monkeypatch.setattr(backend_layout.FolderWriter, "write_file", write_file)


@pytest.mark.parametrize("option", sorted(EXPORTS))
@pytest.mark.parametrize(
    "error", [errno.ENOSPC, errno.EROFS, errno.EACCES], ids=["ENOSPC", "EROFS", "EACCES"]
)
def test_a_disk_error_is_one_line_and_leaves_nothing(tmp_path, monkeypatch, option, error):
    _fail_after(monkeypatch, 2, error)
    target = tmp_path / "export"
    code, stderr = _cli(*EXPORTS[option](target))
    assert code == 2, stderr
    assert "internal error" not in stderr and "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if "error:" in line]
    assert errors and all(os.strerror(error) in line and "nothing was written" in line for line in errors)
    if option == "--export-suite":
        assert not target.exists()
        assert len(errors) == 1
    else:
        assert _everything(target) == []  # the models' folders and their temporary siblings: gone
    assert _everything(tmp_path) in ([], ["export"])


@pytest.mark.parametrize("option", sorted(EXPORTS))
def test_a_read_only_parent_is_one_line(tmp_path, monkeypatch, option):
    def refuse(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(export_folder.tempfile, "mkdtemp", refuse)
    code, stderr = _cli(*EXPORTS[option](tmp_path / "export"))
    assert code == 2, stderr
    assert "Read-only file system" in stderr and "internal error" not in stderr


@pytest.mark.parametrize("option", sorted(EXPORTS))
def test_a_signal_mid_write_leaves_nothing_and_the_same_command_then_succeeds(tmp_path, monkeypatch, option):
    original = backend_layout.FolderWriter.write_file
    count = [0]

    def write_file(self, name, payload):
        count[0] += 1
        if count[0] == 3:
            stop.record(signal.SIGTERM)  # what the handler does when SIGTERM arrives here
        return original(self, name, payload)

    monkeypatch.setattr(backend_layout.FolderWriter, "write_file", write_file)
    target = tmp_path / "export"
    code, stderr = _cli(*EXPORTS[option](target))
    assert code == 2 and "interrupted (SIGTERM)" in stderr, stderr
    assert _everything(tmp_path) in ([], ["export"])
    monkeypatch.setattr(backend_layout.FolderWriter, "write_file", original)
    stop.reset()
    code, stderr = _cli(*EXPORTS[option](target))
    assert code == 0, stderr
    assert _everything(target)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="signals a real run")
def test_sigterm_to_a_real_export_suite_leaves_no_partial_folder(tmp_path):
    target = tmp_path / "suite"
    command = [sys.executable, "-m", "sonnx_check", "--isolated", "--quiet", "--export-suite", str(target)]
    command += [str(ROOT / "sample_models" / "conforming" / "residual_cnn.onnx")]
    process = subprocess.Popen(
        command, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        for _ in range(1500):  # files are being written (into the staging folder, or the old code's target)
            if sum(1 for _ in tmp_path.rglob("*.pb")) > 2 or process.poll() is not None:
                break
            time.sleep(0.02)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    if process.returncode == 0:  # finished before the signal: whole
        assert (target / "suite.json").exists()
    else:
        assert process.returncode == 2, stderr
        assert os.listdir(tmp_path) == []


def test_a_link_as_the_export_inputs_folder_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    code, stderr = _cli("--export-inputs", str(tmp_path / "link"), str(MODEL))
    assert code == 2
    assert stderr.strip().endswith("is a symbolic link; name a new folder"), stderr
    assert os.listdir(tmp_path / "elsewhere") == []


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_leftovers_of_a_killed_export_are_removed_only_when_ours(tmp_path):
    ours = tmp_path / ".suite.sonnx-partial-aaaa"
    ours.mkdir()
    (ours / export_folder.MARKER).write_text(str(_dead_pid()))
    (ours / "half.pb").write_bytes(b"x")
    running = tmp_path / ".suite.sonnx-partial-bbbb"  # another export still writing
    running.mkdir()
    (running / export_folder.MARKER).write_text(str(os.getpid()))
    unmarked = tmp_path / ".suite.sonnx-partial-cccc"  # not written by sonnx-check
    unmarked.mkdir()
    code, stderr = _cli(*EXPORTS["--export-suite"](tmp_path / "suite"))
    assert code == 0, stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["suite", running.name, unmarked.name])


def test_a_finished_export_is_private_no_more_and_carries_no_marker(tmp_path):
    code, stderr = _cli(*EXPORTS["--export-suite"](tmp_path / "suite"))
    assert code == 0, stderr
    mode = (tmp_path / "suite").stat().st_mode & 0o777
    assert mode == 0o755 & ~_umask()
    assert not list((tmp_path / "suite").rglob(export_folder.MARKER))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _mount_small_tmpfs(folder: Path) -> bool:
    if os.geteuid() != 0 or sys.platform != "linux":
        return False
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(folder)], capture_output=True, check=False
    )
    return done.returncode == 0


def test_a_really_full_disk_is_one_line(tmp_path):
    """A real ENOSPC where a small tmpfs can be mounted (root on Linux); else the injected tests above."""
    disk = tmp_path / "disk"
    if not _mount_small_tmpfs(disk):
        pytest.skip("cannot mount a small tmpfs here")
    try:
        code, stderr = _cli(
            "--export-inputs",
            str(disk / "export"),
            str(ROOT / "sample_models" / "conforming" / "small_cnn.onnx"),
        )
        assert code == 2, stderr
        assert "No space left on device" in stderr and "internal error" not in stderr
        assert _everything(disk) in ([], ["export"])
    finally:
        subprocess.run(["umount", str(disk)], check=False)
