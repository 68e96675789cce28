"""A runtime command (--runtime-command) and saved outputs (--outputs) are other programs' work: whatever
they start ends with the run, however it ends, and whatever they write is read within bounds.

The command is hostile_command.py: it starts a child in a session of its own and a double-forked orphan
(the two ways out of a process group), or plants a FIFO, a link to /dev/zero or a sparse file where
sonnx-check reads. Each test asserts what a user observes: the exit code and its promptness, one line of
reason naming the file, no process left (by pid, and by the run's marker in /proc), no temporary folder
left.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper
from procs import ROOT, Run, start

pytestmark = [
    pytest.mark.slow,  # real processes signalled and fuzzed: CI runs them (-m ""), the README command not
    pytest.mark.process,
    pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux's /proc"),
]

COMMAND = Path(__file__).with_name("hostile_command.py")
# The requirement is a second; the margin is for a loaded CI machine (today's main took 27 s to 98 s).
PROMPT = 2.0
RUN_TIMEOUT = 60  # seconds: a run that hangs fails the test instead of hanging the suite


def command(*flags: object) -> str:
    return shlex.join([sys.executable, str(COMMAND), *map(str, flags)])


@pytest.fixture
def model(tmp_path: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g", [x], [y])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)]), path)
    return path


@pytest.fixture
def temp(tmp_path: Path) -> Path:
    """The runs' TMPDIR: where the command's temporary folder is made (and must not stay)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    return folder


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _spawned(pidfile: Path) -> list[int]:
    return [int(line) for line in pidfile.read_text().split()]


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _compare(folder: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict, str]:
    """A whole run as a user starts it; its exit code, JSON report and stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "sonnx_check", "--isolated", "--format", "json", "--no-node-edges", *args],
        cwd=folder, env={**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=RUN_TIMEOUT,
    )  # fmt: skip
    report = json.loads(done.stdout) if done.stdout.startswith("{") else {}
    return done.returncode, report, done.stderr


def _not_compared(report: dict) -> str:
    (finding,) = [f for f in report["models"][0]["findings"] if f["rule"] == "RUNTIME.not-compared"]
    return finding["message"]


# -- every process the command started ends with the run -------------------------------------------------


def _running_with_children(model: Path, temp: Path, runs: list[Run]) -> tuple[Run, list[int]]:
    """sonnx-check running a command that has started its two children and sleeps; the children's pids."""
    pidfile = model.parent / "pids"
    args = ["--isolated", "--compare", "--no-node-edges", "--timeout", "30"]
    cmd = command("--spawn", pidfile, "--sleep", 60)
    run = start([*args, "--runtime-command", cmd, model.name], cwd=model.parent, env={"TMPDIR": str(temp)})
    runs.append(run)
    run.wait_for("the command's children", pidfile.exists)
    return run, _spawned(pidfile)


def test_sigterm_while_the_command_runs_ends_the_run_and_everything_the_command_started(
    model: Path, temp: Path, runs: list[Run]
) -> None:
    run, spawned = _running_with_children(model, temp, runs)
    try:
        seconds, code, stderr = run.stop(signal.SIGTERM)

        assert code == 2, stderr
        assert seconds < PROMPT, stderr
        assert stderr.strip() == "sonnx-check: interrupted (SIGTERM)"
        assert [pid for pid in spawned if _alive(pid)] == []
        assert run.survivors() == []
        assert list(temp.iterdir()) == []
    finally:
        _kill(spawned)


def test_a_normal_run_leaves_no_process_the_command_started(model: Path, temp: Path) -> None:
    pidfile = model.parent / "pids"
    code, report, stderr = _compare(
        model.parent, "--runtime-command", command("--spawn", pidfile), model.name, env={"TMPDIR": str(temp)}
    )
    spawned = _spawned(pidfile)
    try:
        assert code == 1, stderr  # it wrote no output: not compared
        assert "output_0.pb (tensor 'y'): missing" in _not_compared(report)
        assert [pid for pid in spawned if _alive(pid)] == []
        assert list(temp.iterdir()) == []
    finally:
        _kill(spawned)


def test_after_a_sigkill_no_process_is_left_and_the_next_run_removes_only_the_dead_runs_folder(
    model: Path, temp: Path, runs: list[Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sonnx_check.compare.runtimes import run_folder

    run, spawned = _running_with_children(model, temp, runs)
    try:
        run.process.kill()
        run.process.wait()

        assert run.survivors(within=5.0) == []
        assert [pid for pid in spawned if _alive(pid)] == []
        (left,) = temp.iterdir()  # SIGKILL: nothing could remove it
        monkeypatch.setattr(tempfile, "tempdir", str(temp))
        live = run_folder.create()  # this test process's: a live run's folder
        code, _, stderr = _compare(
            model.parent, "--runtime-command", command(), model.name, env={"TMPDIR": str(temp)}
        )
        assert code == 1, stderr
        assert list(temp.iterdir()) == [live]
        assert left.name.startswith("sonnx-check-runtime-")
    finally:
        _kill(spawned)


def test_a_sigterm_after_the_exit_code_is_decided_does_not_change_it(model: Path) -> None:
    """Python puts the default action of SIGTERM back while it finalises: a SIGTERM in the last moments
    ended a run that had passed with 143. Here an object finalised last holds the process there."""
    flag = model.parent / "finalising"
    script = (
        "import os, sys, time\n"
        "class Late:\n"
        "    def __del__(self, _open=open, _sleep=time.sleep, _flag=os.environ['FLAG']):\n"
        "        _open(_flag, 'w').close()\n"
        "        _sleep(3)\n"
        "import sonnx_check\n"
        "sonnx_check.late = Late()\n"
        "sys.argv = ['sonnx-check', '--isolated', 'm.onnx']\n"
        "from sonnx_check.entry import main\n"
        "main()\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script], cwd=model.parent,
        env={**os.environ, "PYTHONPATH": str(ROOT), "FLAG": str(flag)},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        while not flag.exists():
            assert process.poll() is None, process.communicate()[1]
            subprocess.run(["sleep", "0.02"], check=True)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=RUN_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr


# -- every read bounded ----------------------------------------------------------------------------------

SPARSE = 512 * 2**20  # bytes, sparse: nothing on disk, but a read of it would hold them all
CHANGED = "it changed its input files (test_data_set_0)"
UNUSABLE = "a saved input cannot be used"


@pytest.mark.parametrize(
    ("flags", "reason"),
    [
        (("--output", "fifo"), "output_0.pb (tensor 'y'): is not a regular file (a FIFO, device or socket)"),
        (("--output", "zero"), "output_0.pb (tensor 'y'): is a symbolic link (not followed)"),
        (("--output", f"sparse:{SPARSE}"), f"output_0.pb (tensor 'y'): is {SPARSE} bytes, more than the"),
        (("--input", "fifo"), f"{CHANGED}: input_0.pb: is not a regular file"),
        (("--input", "zero"), f"{CHANGED}: input_0.pb: is a symbolic link"),
    ],
    ids=["output FIFO", "output link to /dev/zero", "sparse output", "input FIFO", "input link to /dev/zero"],
)
def test_what_the_command_leaves_is_read_within_bounds(
    model: Path, temp: Path, flags: tuple[str, str], reason: str
) -> None:
    code, report, stderr = _compare(
        model.parent, "--max-memory", "64MiB", "--runtime-command", command(*flags), model.name,
        env={"TMPDIR": str(temp)},
    )  # fmt: skip
    assert code == 1, stderr
    message = _not_compared(report)
    assert reason in message and "\n" not in message
    assert "Traceback" not in stderr and "internal error" not in stderr
    assert list(temp.iterdir()) == []


def _export(model: Path) -> Path:
    out = model.parent / "export"
    code, _, stderr = _compare(model.parent, "--export-inputs", str(out), model.name)
    assert code == 0, stderr
    return out / model.stem


@pytest.mark.parametrize(
    ("planted", "kind", "reason"),
    [
        ("model.onnx", "fifo", "model.onnx is not a regular file (a FIFO, device or socket)"),
        ("model.onnx", "zero", "model.onnx is a symbolic link (not followed)"),
        ("model.onnx", f"sparse:{3 * 2**30}", f"model.onnx is {3 * 2**30} bytes, more than the"),
        ("test_data_set_0/output_0.pb", "fifo", "output_0.pb (tensor 'y'): is not a regular file"),
        ("test_data_set_0/output_0.pb", "zero", "output_0.pb (tensor 'y'): is a symbolic link"),
        ("test_data_set_0/output_0.pb", f"sparse:{SPARSE}", f"output_0.pb (tensor 'y'): is {SPARSE} bytes"),
        ("test_data_set_0/input_0.pb", "fifo", f"{UNUSABLE}: input_0.pb (tensor 'x'): is not a regular"),
        ("test_data_set_0/input_0.pb", "zero", f"{UNUSABLE}: input_0.pb (tensor 'x'): is a symbolic link"),
    ],
)
def test_saved_outputs_are_read_within_bounds(model: Path, planted: str, kind: str, reason: str) -> None:
    saved = _export(model)
    path = saved / planted
    if path.exists():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path.symlink_to("/dev/zero")
    else:
        with open(path, "wb") as handle:
            handle.truncate(int(kind.split(":")[1]))
    code, report, stderr = _compare(
        model.parent, "--compare", "--max-memory", "64MiB", "--outputs", str(saved.parent), model.name
    )
    assert code == 1, stderr
    message = _not_compared(report)
    assert reason in message and "\n" not in message, message
    assert "Traceback" not in stderr and "internal error" not in stderr


def test_a_signalling_nan_output_prints_no_numpy_warning(model: Path, temp: Path) -> None:
    code, report, stderr = _compare(
        model.parent, "--runtime-command", command("--output", "snan"), model.name, env={"TMPDIR": str(temp)}
    )
    assert code == 1, stderr  # NaN where the reference has numbers: a divergence
    assert report["models"][0]["comparison"]["status"] != "not-compared"
    assert stderr == ""
