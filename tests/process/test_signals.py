"""Ctrl-C and SIGTERM stop a comparison promptly, end every process sonnx-check started and leave no file
behind; a SIGKILLed sonnx-check leaves no process behind either.

Each test starts sonnx-check on models that keep onnxruntime busy for tens of seconds, waits until the
onnxruntime worker(s) run, signals, and asserts what a user sees: the exit within 5 seconds, exit code 2
with one line on stderr, no process carrying the run's marker (procs.py), the folder as it was.
"""

from __future__ import annotations

import os
import signal
import stat
import time
from pathlib import Path

import onnx
import pytest
from models import matmul_chain
from procs import Run, _cpu_seconds, start

pytestmark = [
    pytest.mark.slow,
    pytest.mark.process,
    pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux's /proc"),
]

PROMPT = 5.0  # seconds from the signal to the exit
BUSY = 1.0  # CPU seconds a worker has spent when it is surely running the model (its start takes ~0.4 s)


@pytest.fixture
def models(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "models"
    folder.mkdir()
    first = folder / "chain0.onnx"
    onnx.save(matmul_chain(), first)
    others = []
    for i in range(1, 4):
        copy = folder / f"chain{i}.onnx"
        copy.write_bytes(first.read_bytes())
        others.append(copy)
    return [first, *others]


def _snapshot(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.mark.parametrize(
    ("signum", "group"),
    [(signal.SIGINT, True), (signal.SIGTERM, False)],
    ids=["Ctrl-C to the process group", "SIGTERM to sonnx-check"],
)
def test_a_signal_stops_a_comparison(models: list[Path], runs: list[Run], signum: int, group: bool) -> None:
    folder = models[0].parent
    before = _snapshot(folder)
    run = start(["--compare", "--fix", str(models[0])], cwd=folder)
    runs.append(run)
    run.wait_for("onnxruntime running the model", lambda: len(run.workers(busy=BUSY)) == 1)

    seconds, code, stderr = run.stop(signum, group=group)

    name = signal.Signals(signum).name
    assert seconds < PROMPT, stderr
    assert code == 2, stderr
    assert stderr.strip() == f"sonnx-check: interrupted ({name})"
    assert run.survivors() == []
    assert _snapshot(folder) == before  # no report, no fixed model, no temporary file


@pytest.mark.parametrize(
    ("signum", "group"),
    [(signal.SIGINT, True), (signal.SIGTERM, False)],
    ids=["Ctrl-C to the process group", "SIGTERM to sonnx-check"],
)
def test_a_signal_stops_a_parallel_comparison(
    models: list[Path], runs: list[Run], signum: int, group: bool
) -> None:
    folder = models[0].parent
    before = _snapshot(folder)
    run = start(["--jobs", "4", "--compare", "--fix", *map(str, models)], cwd=folder)
    runs.append(run)
    run.wait_for("onnxruntime running models", lambda: len(run.workers()) >= 2 and run.workers(busy=BUSY))

    seconds, code, stderr = run.stop(signum, group=group)

    assert seconds < PROMPT, stderr
    assert code == 2, stderr
    assert stderr.strip() == f"sonnx-check: interrupted ({signal.Signals(signum).name})"
    assert run.survivors() == []
    assert _snapshot(folder) == before


@pytest.mark.parametrize("jobs", ["1", "4"])
def test_a_killed_sonnx_check_leaves_no_process_behind(
    models: list[Path], runs: list[Run], jobs: str
) -> None:
    """SIGKILL cannot be handled: the children end because the kernel signals them when their parent dies
    (PR_SET_PDEATHSIG), the onnxruntime workers of pool processes included."""
    run = start(["--jobs", jobs, "--compare", *map(str, models)], cwd=models[0].parent)
    runs.append(run)
    run.wait_for("onnxruntime running the model", lambda: run.workers(busy=BUSY))

    run.stop(signal.SIGKILL)

    assert run.survivors() == []


# -- the handler records; ordinary code stops -------------------------------------------------------------


def _handler_installed(pid: int) -> bool:
    """Whether the process catches SIGTERM (its SigCgt mask in /proc): Python itself never does."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    return False


def _idle(pid: int) -> bool:
    """Whether the process has used almost no CPU for a second (done checking, waiting on something)."""
    before = _cpu_seconds(pid)
    time.sleep(1.0)
    return before > 0.1 and _cpu_seconds(pid) - before < 0.1


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_while_the_command_starts_is_an_interrupted_run(
    models: list[Path], runs: list[Run], signum: int
) -> None:
    """The handler is in place before onnx and numpy are imported (it used to come with the first model,
    most of a second in: a SIGTERM before that was exit 143, a Ctrl-C a KeyboardInterrupt traceback), and a
    signal at that very moment is exit 2 with the usual line."""
    run = start(["--compare", str(models[0])], cwd=models[0].parent)
    runs.append(run)
    run.wait_for("the stop handler", lambda: _handler_installed(run.process.pid), timeout=30)
    maps = Path(f"/proc/{run.process.pid}/maps").read_text()

    seconds, code, stderr = run.stop(signum)

    assert "onnx_cpp2py_export" not in maps and "numpy" not in maps
    assert code == 2, stderr
    assert stderr.strip() == f"sonnx-check: interrupted ({signal.Signals(signum).name})"
    assert run.survivors() == []


def test_a_signal_during_a_finaliser_still_stops_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """A handler that raises raised inside whatever ran, a finaliser included, where Python only prints
    "Exception ignored" and the run went on to the next model."""
    from sonnx_check import runner
    from sonnx_check.config import Settings
    from sonnx_check.discovery import Target
    from sonnx_check.errors import RunInterrupted

    class Finalised:
        def __del__(self) -> None:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)  # the handler runs here, inside the finaliser

    processed: list[str] = []

    def process(target: Target, settings: Settings) -> runner.ModelOutcome:
        processed.append(target.path)
        Finalised()  # dropped at once: its finaliser runs
        return runner.ModelOutcome(None)

    monkeypatch.setattr(runner, "process", process)
    previous = signal.getsignal(signal.SIGTERM)
    with pytest.raises(RunInterrupted, match="SIGTERM"):
        runner.run_all([Target("a.onnx"), Target("b.onnx")], Settings(selected=frozenset(), root="."))
    assert processed == ["a.onnx"]
    assert signal.getsignal(signal.SIGTERM) is previous  # the caller's handling is back


def test_a_signal_while_waiting_for_a_fifo_reader_stops_the_run(tmp_path: Path, runs: list[Run]) -> None:
    """A report into a FIFO nobody reads waits for a reader, as ``echo > fifo`` does, but a signal ends
    the wait and the FIFO stays a FIFO."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)]), tmp_path / "m.onnx")
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    run = start(["--isolated", "--output", str(fifo), "m.onnx"], cwd=tmp_path)
    runs.append(run)
    run.wait_for("the run waiting for a reader", lambda: _idle(run.process.pid), timeout=60)

    seconds, code, stderr = run.stop(signal.SIGTERM)

    assert seconds < PROMPT, stderr
    assert code == 2, stderr
    assert stderr.strip() == "sonnx-check: interrupted (SIGTERM)"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
