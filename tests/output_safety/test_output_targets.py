"""Report targets that are not regular files are written into, never replaced: a FIFO, a character device, a
link to the process's own stdout (what /dev/stdout is) and bash's ``>(cmd)``; ``-`` is stdout. Any other
link (to a regular file, a FIFO, a device or nothing) is refused and left alone: a report never follows a
link it did not create. The real /dev/stdout is never touched: the links live in the test's own folder."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from clikit import maxpool_r2, run_cli, save

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return save(maxpool_r2(), tmp_path / "m.onnx")


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "sonnx_check", "--isolated", *args]


def _environment() -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    return {**environment, "PYTHONPATH": str(ROOT)}


class _Reader(threading.Thread):
    """Reads a FIFO to its end, as ``cat fifo`` would."""

    def __init__(self, fifo: Path) -> None:
        super().__init__(daemon=True)
        self.fifo = fifo
        self.data = b""

    def run(self) -> None:
        with open(self.fifo, "rb") as handle:
            self.data = handle.read()


def _fifo_run(
    fifo: Path, target: Path, model: Path, option: list[str]
) -> tuple[subprocess.CompletedProcess[str], bytes]:
    reader = _Reader(fifo)
    reader.start()
    try:
        done = subprocess.run(
            _command(*option, model.name), cwd=model.parent, env=_environment(),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        if reader.is_alive():  # the run never opened it: let the reader go
            with open(fifo, "wb"):
                pass
        reader.join(10)
    return done, reader.data


@pytest.mark.slow
@pytest.mark.parametrize("option", ["--output", "--output-format"])
def test_a_report_goes_into_a_fifo_in_place(model: Path, tmp_path: Path, option: str) -> None:
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    target = fifo
    args = ["--format", "json", "--output", str(target)]
    if option == "--output-format":
        args = ["--format", "text", "--output-format", f"json:{target}"]
    done, data = _fifo_run(fifo, target, model, args)
    assert done.returncode == 1, done.stderr
    assert json.loads(data)["models"][0]["path"] == "m.onnx"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", fifo.name]  # no temporary file left


@pytest.mark.slow
def test_a_link_to_stdout_is_written_through_not_replaced(model: Path, tmp_path: Path) -> None:
    """What /dev/stdout is: a link to /proc/self/fd/1. As root, it used to be replaced by a regular file."""
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    done = subprocess.run(
        _command("--format", "json", "--output", str(link), "m.onnx"),
        cwd=tmp_path, env=_environment(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["models"][0]["path"] == "m.onnx"
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"


def test_a_character_device_named_itself_is_written_into(model: Path, tmp_path: Path) -> None:
    result = run_cli(["--isolated", "--output-format", f"sarif:{os.devnull}", "m.onnx"], cwd=tmp_path)
    assert result.code == 1, result.stderr
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


@pytest.mark.parametrize("kind", ["character device", "FIFO"])
@pytest.mark.parametrize("option", ["--output", "--output-format", "--evidence"])
def test_a_planted_link_to_a_device_or_a_fifo_is_refused_and_not_written_into(
    model: Path, tmp_path: Path, kind: str, option: str
) -> None:
    """A repository can carry ``x.sarif -> /dev/sda1``: the report must not be written into the device."""
    if kind == "FIFO":
        device = tmp_path / "pipe"
        os.mkfifo(device)
    else:
        device = Path(os.devnull)
    link = tmp_path / "x.sarif"
    link.symlink_to(device)
    value = f"sarif:{link}" if option == "--output-format" else str(link)
    done = subprocess.run(
        _command(option, value, "m.onnx"),
        cwd=tmp_path,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip (a FIFO opened for writing would block the run: a hang fails by the timeout)
    assert done.returncode == 2, done.stderr
    shown = value
    assert done.stderr == (
        f"sonnx-check: error: {option} {shown}: is a symbolic link (reports never follow a link they did "
        "not create); name the file itself\n"
    )
    assert link.is_symlink() and os.readlink(link) == str(device)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_process_substitution_receives_the_report(model: Path, tmp_path: Path) -> None:
    """``--output >(cmd)``: bash passes /dev/fd/63, an inherited descriptor, which used to fail."""
    received = tmp_path / "received.json"
    command = " ".join(_command("--format", "json", "--output", f">(cat > {received})", "m.onnx"))
    done = subprocess.run(
        ["bash", "-c", f"{command}; code=$?; wait; exit $code"],
        cwd=tmp_path, env=_environment(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    for _ in range(100):  # bash does not wait for a process substitution; cat ends soon after
        if received.exists() and received.stat().st_size:
            break
        threading.Event().wait(0.05)
    assert json.loads(received.read_text())["models"][0]["path"] == "m.onnx"
    assert "/dev/fd/" in done.stderr  # the summary line names where the report went


def test_a_dash_means_stdout(model: Path, tmp_path: Path) -> None:
    result = run_cli(["--isolated", "--format", "json", "--output", "-", "m.onnx"], cwd=tmp_path)
    assert result.code == 1
    assert json.loads(result.stdout)["models"][0]["path"] == "m.onnx"
    assert not (tmp_path / "-").exists()
    extra = run_cli(["--isolated", "--output", "r.txt", "--output-format", "sarif:-", "m.onnx"], cwd=tmp_path)
    assert extra.code == 1
    assert json.loads(extra.stdout)["version"] == "2.1.0"
    assert not (tmp_path / "-").exists()
    both = run_cli(["--isolated", "--output-format", "sarif:-", "m.onnx"], cwd=tmp_path)
    assert both.code == 2
    assert both.stderr == (
        "sonnx-check: error: --output-format sarif:-: stdout already carries the main report (--format)\n"
    )


def test_a_link_to_a_regular_file_is_refused_and_left_alone(model: Path, tmp_path: Path) -> None:
    """A link planted where a report goes must not aim the report at another file, nor be replaced."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    link = tmp_path / "results.sarif"
    link.symlink_to(victim.name)
    result = run_cli(["--isolated", "--output-format", f"sarif:{link}", "m.onnx"], cwd=tmp_path)
    assert result.code == 2
    assert result.stderr.startswith(f"sonnx-check: error: --output-format sarif:{link}: is a symbolic link")
    assert len(result.stderr.splitlines()) == 1
    assert link.is_symlink() and victim.read_text() == "precious"


def test_a_regular_file_is_still_replaced_atomically(model: Path, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    report.write_text("old")
    before = report.stat().st_ino
    result = run_cli(["--isolated", "--format", "json", "--output", str(report), "m.onnx"], cwd=tmp_path)
    assert result.code == 1
    assert json.loads(report.read_text())["models"]
    assert report.stat().st_ino != before  # a new file renamed over the old one


@pytest.mark.slow
def test_the_step_summary_goes_into_a_fifo(model: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "summary.fifo"
    os.mkfifo(fifo)
    reader = _Reader(fifo)
    reader.start()
    done = subprocess.run(
        _command("--format", "json", "m.onnx"), cwd=tmp_path,
        env={**_environment(), "GITHUB_STEP_SUMMARY": str(fifo)}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    reader.join(10)
    assert done.returncode == 1, done.stderr
    assert b"sonnx-check" in reader.data
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_socket_is_refused_and_left_alone(model: Path, tmp_path: Path) -> None:
    """A socket (like a block device) is never a report's place: it is neither replaced nor waited on."""
    import socket

    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = tmp_path / "report.sock"
    try:
        server.bind(str(path))
        result = run_cli(["--isolated", "--output", str(path), "m.onnx"], cwd=tmp_path)
    finally:
        server.close()
    assert result.code == 2
    assert result.stderr == f"sonnx-check: error: --output {path}: is a block device or a socket\n"
    assert stat.S_ISSOCK(os.lstat(path).st_mode)
