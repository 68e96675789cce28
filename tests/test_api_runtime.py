"""sonnx_check.api.compare takes the runtime under test as the command line does (``runtime``,
``runtime_options``: --runtime, --runtime-option), with the command line's errors as InputError before the
model is read."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sonnx_check import api

CNN = Path(__file__).resolve().parents[1] / "sample_models" / "conforming" / "small_cnn.onnx"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"runtime": "nope"}, "runtime 'nope': expected one of onnxruntime, openvino, tract"),
        ({"runtime": 3}, "runtime: expected a runtime's name, got int 3"),
        ({"runtime": "tract", "runtime_options": {"x": "1"}}, "runtime_options x=1: tract takes transform"),
        ({"runtime_options": {"nodot": "1"}}, "runtime_options nodot=1: not a session configuration entry"),
        ({"runtime_options": [("a", "b")]}, "runtime_options: expected a mapping of option to value"),
        ({"runtime_options": {"session.x": True}}, "runtime_options: 'session.x': expected a text or number"),
    ],
)
def test_a_bad_runtime_choice_is_an_input_error_in_the_apis_words(arguments: dict, message: str) -> None:
    # a model that does not exist: the choice is refused before the model is read, as the command line does
    with pytest.raises(api.InputError) as caught:
        api.compare("nothere.onnx", **arguments)
    assert str(caught.value).startswith(message), str(caught.value)
    assert "--runtime" not in str(caught.value)
    assert isinstance(caught.value, api.UsageError)


def test_a_runtime_not_installed_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tract", None)  # Python's convention for an import that cannot succeed
    with pytest.raises(
        api.InputError, match=r'runtime tract: tract is not installed \(pip install "sonnx-check\[tract\]"\)'
    ):
        api.compare(CNN, runtime="tract")


def test_onnxruntime_takes_its_options_and_records_them() -> None:
    result = api.compare(CNN, node_edges=False, runtime_options={"intra_op_num_threads": 2})
    assert result.comparison is not None
    runtime = result.comparison.runtime
    assert runtime.name == "onnxruntime" and runtime.options["runtime_options"] == {
        "intra_op_num_threads": "2"
    }
    assert runtime.options["intra_op_threads"] == 2


def test_openvino_runs_with_its_options() -> None:
    pytest.importorskip("openvino")
    result = api.compare(
        CNN, node_edges=False, runtime="openvino", runtime_options={"INFERENCE_NUM_THREADS": 1}
    )
    # compared (OpenVINO's CPU plugin may infer in bfloat16 here: a divergence is a verdict too)
    assert result.comparison is not None and result.comparison.status in ("match", "within-bound", "diverges")
    runtime = result.comparison.runtime
    assert runtime.name == "openvino" and runtime.options["runtime_options"] == {"INFERENCE_NUM_THREADS": "1"}
    assert runtime.options["inference_num_threads"] == 1
    with pytest.raises(api.InputError, match="runtime_options: OpenVINO's CPU plugin refuses it"):
        api.compare(CNN, runtime="openvino", runtime_options={"INFERENCE_PRECISION_HINT": "nope"})


def test_tract_runs_as_on_the_command_line() -> None:
    pytest.importorskip("tract")
    result = api.compare(CNN, node_edges=False, runtime="tract")
    assert result.comparison is not None and result.comparison.runtime.name == "tract"
    assert not [f for f in result.findings if f.rule.startswith("RUNTIME.")]
