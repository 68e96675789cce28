"""onnx's checker runs in a forked child: a crash of its native code on one model is that model's finding,
and the run goes on with the next model."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import onnx
import pytest
from builders import maxpool_model, save
from click.testing import CliRunner

from sonnx_check.cli import main
from sonnx_check.isolation import Crashed, TimedOut, call_isolated

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this system: checked in process")


def test_the_childs_text_comes_back() -> None:
    assert call_isolated(lambda: "verdict \u00e9") == "verdict \u00e9"


def test_a_child_killed_by_a_signal_is_a_crash_naming_it() -> None:
    assert call_isolated(lambda: os.kill(os.getpid(), signal.SIGFPE) or "never") == Crashed(
        "killed by SIGFPE"
    )


def test_a_child_still_running_at_the_time_limit_is_killed() -> None:
    started = time.monotonic()
    assert call_isolated(lambda: time.sleep(60) or "never", timeout=0.3) == TimedOut(0.3)
    assert time.monotonic() - started < 10
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # reaped: no zombie left behind


def test_a_child_within_the_time_limit_answers() -> None:
    assert call_isolated(lambda: "x" * 3_000_000, timeout=60) == "x" * 3_000_000
    assert call_isolated(lambda: "ok", timeout=float("inf")) == "ok"


def test_without_a_process_to_spare_the_call_runs_here(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    assert call_isolated(lambda: str(os.getpid())) == str(os.getpid())


def test_a_child_that_raises_is_a_crash_not_an_exception_here() -> None:
    def boom() -> str:
        raise MemoryError

    assert call_isolated(boom) == Crashed("exited with code 70")


def test_an_interrupted_wait_leaves_no_child(tmp_path: Path) -> None:
    """Ctrl-C or SIGTERM while onnx checks a model: the run stops, and the child is killed and reaped."""
    pid_file = tmp_path / "pid"

    def slow() -> str:
        pid_file.write_text(str(os.getpid()))
        time.sleep(60)
        return "too late"

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            call_isolated(slow)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - started < 10
    child = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)  # gone, and reaped (a zombie would still accept signal 0)


def test_a_crash_of_onnx_checker_is_a_finding_and_the_next_model_is_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hostile = maxpool_model()
    hostile.graph.name = "crashes-onnx"
    crashing, fine = (
        save(hostile, tmp_path, "a_crashing.onnx"),
        save(maxpool_model(), tmp_path, "b_fine.onnx"),
    )
    real_check = onnx.checker.check_model

    def check(model, **options):  # type: ignore[no-untyped-def]
        data = Path(model).read_bytes() if isinstance(model, str) else model
        if isinstance(data, bytes) and b"crashes-onnx" in data:
            os.kill(os.getpid(), signal.SIGFPE)  # what onnx 1.21 did on a Conv with a zero stride
        return real_check(model, **options)

    monkeypatch.setattr(onnx.checker, "check_model", check)
    result = CliRunner().invoke(main, ["--isolated", "--format", "json", str(crashing), str(fine)])
    assert result.exit_code == 1, result.output
    models = {Path(m["path"]).name: m for m in json.loads(result.stdout)["models"]}
    (crash,) = [f for f in models["a_crashing.onnx"]["findings"] if f["rule"] == "MODEL.onnx"]
    assert crash["severity"] == "error" and "crashed" in crash["message"] and "SIGFPE" in crash["message"]
    assert [f for f in models["b_fine.onnx"]["findings"] if f["rule"] == "MODEL.onnx"] == []
