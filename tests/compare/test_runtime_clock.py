"""--timeout bounds the runtime under test, not sonnx-check's own work (issue 31 item 3): a comparison whose
reference kernels are slow (a loaded machine, a large model) is not cut short, while a runtime that hangs is
still stopped at the limit."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from models import chain, matmul_chain, save

from sonnx_check import reference
from sonnx_check.cli import main
from sonnx_check.compare.run import RuntimeClock
from sonnx_check.compare.runtimes.base import DatasetRun, Feeds, Runner, RunnerDescription, Session
from sonnx_check.compare.runtimes.worker import process as ort_worker


def _compare(path: Path, *options: str) -> dict[str, Any]:
    result = CliRunner().invoke(
        main,
        ["--isolated", "--format", "json", "--compare", "--inputs", "random", "--no-node-edges", *options,
         str(path)],
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.output
    model: dict[str, Any] = json.loads(result.stdout)["models"][0]
    return model


@pytest.mark.slow
def test_slow_reference_work_does_not_use_up_the_runtimes_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each reference kernel takes over a second (as on a loaded machine): the comparison of 4 Relus spends
    about 5 s in the reference's end-to-end run, beyond --timeout 4, before onnxruntime runs the model again
    with its intermediates exposed, and still compares every node and the output."""
    pytest.importorskip("onnxruntime")
    path = save(chain("Relu", 4, (2, 3)), tmp_path)
    by_node, whole = reference.run_node_with_abs, reference.run_node

    def slow_node(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.1)
        return by_node(*args, **kwargs)

    def slow_whole(*args: Any, **kwargs: Any) -> Any:
        time.sleep(1.2)
        return whole(*args, **kwargs)

    monkeypatch.setattr(reference, "run_node_with_abs", slow_node)
    monkeypatch.setattr(reference, "run_node", slow_whole)
    started = time.monotonic()
    model = _compare(path, "--timeout", "4")
    assert time.monotonic() - started > 4  # the reference's own work alone ran past the limit
    assert not [f for f in model["findings"] if "--timeout" in f["message"]]
    comparison = model["comparison"]
    assert comparison["status"] == "match"
    assert [n["status"] for n in comparison["nodes"]] == ["match"] * 4
    assert ort_worker._LIVE == {}


@pytest.mark.slow
def test_a_runtime_that_runs_on_is_still_stopped(tmp_path: Path) -> None:
    """The limit still ends a runtime that runs for far longer than it (a hang, as far as the comparison
    can tell): the worker is killed and the model is not compared, naming the limit."""
    pytest.importorskip("onnxruntime")
    path = save(matmul_chain(), tmp_path)
    started = time.monotonic()
    model = _compare(path, "--timeout", "3")
    assert time.monotonic() - started < 30
    messages = [f["message"] for f in model["findings"] if f["rule"] == "RUNTIME.not-compared"]
    assert any("stopped at the --timeout of 3 s" in m for m in messages), messages
    assert ort_worker._LIVE == {}


# -- the clock alone, on a runner that records how far its deadline moved ---------------------------------


class _Recording(Runner):
    def __init__(self, seconds_per_run: float) -> None:
        self.moved = 0.0
        self.seconds_per_run = seconds_per_run

    @property
    def description(self) -> RunnerDescription:
        return RunnerDescription(name="recording", subject="recording")

    def postpone(self, seconds: float) -> None:
        self.moved += seconds

    def open(self, model: onnx.ModelProto | None, outputs: Sequence[str] | None = None) -> Session:
        return _Sleeping(self.seconds_per_run)


class _Sleeping(Session):
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def run_datasets(self, datasets: Iterable[Feeds]) -> Iterator[DatasetRun]:
        for feeds in datasets:
            time.sleep(self.seconds)  # the runtime's own time
            yield DatasetRun(feeds.dataset, feeds.values, outputs={})


def _built_slowly(count: int, seconds: float) -> Iterator[Feeds]:
    for i in range(count):
        time.sleep(seconds)  # building a dataset: sonnx-check's time
        yield Feeds(f"d{i}", {"x": np.zeros(1, np.float32)}, None)


def test_the_deadline_moves_by_sonnx_checks_own_time_only() -> None:
    """Between the runtime's calls (judging a run) and while a dataset is built, the deadline moves by
    as much; while the runtime runs, it does not."""
    runner = _Recording(seconds_per_run=0.2)
    clock = RuntimeClock(runner)
    session = clock.session(runner.open(None))
    for _ in session.run_datasets(_built_slowly(3, 0.1)):
        time.sleep(0.15)  # judging the run
    session.close()
    own = 3 * 0.1 + 3 * 0.15
    assert own <= runner.moved < own + 0.2  # the runtime's 0.6 s are not in it
    assert runner.moved == pytest.approx(clock.own_seconds)
