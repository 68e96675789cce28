"""What a comparison reads of its runner comes in one record (``Runner.facts``), the runner is closed however
the comparison ends, an unknown onnxruntime level is refused before a worker starts, and "seen in this runtime
at this version" is decided against the runtime that ran, for a comparison and a survey alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import onnx
import pytest
from models import chain

from sonnx_check.compare import CompareOptions, compare_loaded
from sonnx_check.compare.judging.divergence_findings import DivergenceFindings
from sonnx_check.compare.judging.known_departures import RunningRuntime
from sonnx_check.compare.runtimes import base
from sonnx_check.compare.runtimes.base import Capabilities, Runner, RunnerDescription, Session
from sonnx_check.compare.runtimes.onnxruntime import runner as ort_runner
from sonnx_check.results.models import RuntimeRecord
from sonnx_check.view import ModelView


class _Described(Runner):
    """A runner that tells who it is, refuses every model, and counts its closes."""

    shares_constants = True
    closed = 0

    @property
    def description(self) -> RunnerDescription:
        return RunnerDescription(name="command", subject="the runtime command 'x'", version="1.2", label="x")

    def runtime_record(self) -> dict[str, Any]:
        return {"own": "record"}

    def open(self, model: onnx.ModelProto | None, outputs: Sequence[str] | None = None) -> Session:
        raise base.RunFailure("session", "no model today")

    def close(self) -> None:
        self.closed += 1


def test_facts_hold_the_description_the_record_and_the_capabilities() -> None:
    facts = _Described().facts()
    assert facts.runtime == RuntimeRecord("command", "1.2", (), {}, label="x")
    assert facts.runtime_record == {"own": "record"}
    assert facts.capabilities == Capabilities(
        "the runtime command 'x'", prunes_outputs=False, shares_constants=True, label="x"
    )
    assert _Described().capabilities == facts.capabilities  # the property and the record agree


def test_a_runner_used_as_a_context_is_closed_once_even_on_an_error() -> None:
    runner = _Described()
    with pytest.raises(RuntimeError), runner:
        raise RuntimeError("boom")
    assert runner.closed == 1


def test_a_comparison_the_runtime_refuses_closes_its_runner_and_names_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[_Described] = []

    def make(*args: Any, **kwargs: Any) -> _Described:
        made.append(_Described())
        return made[-1]

    monkeypatch.setattr("sonnx_check.compare.make_runner", make)
    result = compare_loaded(chain("Relu", 2, (2, 3)), CompareOptions(node_edges=False))
    assert [r.closed for r in made] == [1]
    (finding,) = result.findings
    assert finding.message == "the runtime command 'x' refused the model: no model today"
    assert result.outcome.runtime.label == "x" and result.outcome.runtime_record == {"own": "record"}


def test_an_unknown_onnxruntime_level_is_refused_before_a_worker_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_worker(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a worker was started")

    monkeypatch.setattr(ort_runner.WorkerRunner, "__init__", no_worker)
    with pytest.raises(ValueError, match="unknown optimisation level 'fastest'"):
        ort_runner.OrtRunner(options=(("graph_optimization_level", "fastest"),))


@pytest.mark.parametrize(
    ("record", "seen"),
    [
        (RuntimeRecord("tract", "0.23.9", (), {}), RunningRuntime("tract", "0.23.9")),
        (RuntimeRecord("openvino", "2026.4.1", (), {}), RunningRuntime("openvino", "2026.4.1")),
        (RuntimeRecord("command", "3", (), {"runtime_name": "mine"}), RunningRuntime("mine", "3")),
        (RuntimeRecord("saved-outputs", None, (), {}), RunningRuntime(None, None)),
    ],
)
def test_the_runtime_seen_is_the_one_that_ran(record: RuntimeRecord, seen: RunningRuntime) -> None:
    """A survey of tract used to judge "seen at this version" as onnxruntime at tract's version."""
    view = ModelView(chain("Relu", 1, (2,)))
    assert DivergenceFindings(view, "it", {}, record).seen == seen
