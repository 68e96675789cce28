"""OpenVINO's LSTM (issue 29): OpenVINO drops the peephole input P and computes as if P were zero. The runner
feeds only the inputs its compiled model still has (P fed as a graph input used to fail the run: "no input"),
so LSTM is compared, and the divergence is the named departure LSTM-PEEPHOLES-IGNORED, not unexplained."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

pytest.importorskip("openvino")

from behaviours_lstm import lstm_inputs, lstm_model, without_peepholes  # noqa: E402
from runtime_samples import compare  # noqa: E402

from sonnx_check import reference  # noqa: E402
from sonnx_check.commands.survey import run_survey_command  # noqa: E402
from sonnx_check.compare import CompareOptions  # noqa: E402
from sonnx_check.compare.runtimes.base import RunFailure  # noqa: E402
from sonnx_check.compare.runtimes.openvino.session import InProcessSession  # noqa: E402

F32 = (("INFERENCE_PRECISION_HINT", "f32"),)


def _constant_model(tmp_path: Path) -> Path:
    """X the only graph input; W, R, B, sequence_lens, the initial state and P (random) initializers."""
    inputs = lstm_inputs()
    model = lstm_model(inputs)
    graph = model.graph
    for name, value in zip(list(graph.node[0].input)[1:], inputs[1:], strict=True):
        graph.initializer.append(onnx.numpy_helper.from_array(value, name))
    del graph.input[1:]
    path = tmp_path / "lstm_peepholes.onnx"
    onnx.save(model, path)
    return path


def test_p_removed_by_openvino_is_not_fed_and_the_run_is_the_recurrence_without_it() -> None:
    inputs = lstm_inputs()
    session = InProcessSession(lstm_model(inputs).SerializeToString(), options=F32)
    feeds = {f"i{k}": value for k, value in enumerate(inputs)}
    result = session.run(feeds, ["y", "y_h", "y_c"])
    assert session.unused_inputs == ("i7",)  # P: OpenVINO's compiled model has no such input
    node = lstm_model(inputs).graph.node[0]
    with_p = reference.run_node(node, inputs)
    for position, name in enumerate(("y", "y_h", "y_c")):
        assert np.allclose(result[name], without_peepholes(inputs, position), rtol=0, atol=1e-6)
        assert not np.allclose(result[name], with_p[position], rtol=0, atol=1e-3)


def test_an_input_the_compiled_model_has_but_is_not_fed_is_a_run_failure_naming_it() -> None:
    inputs = lstm_inputs()
    session = InProcessSession(lstm_model(inputs).SerializeToString(), options=F32)
    feeds = {f"i{k}": value for k, value in enumerate(inputs) if k != 0}
    with pytest.raises(RunFailure, match="no value fed for OpenVINO's input 'i0'"):
        session.run(feeds, ["y"])


def test_an_lstm_with_peepholes_diverges_under_its_named_departure(tmp_path: Path) -> None:
    _, (model,) = compare(
        "--runtime", "openvino", "--runtime-option", "INFERENCE_PRECISION_HINT=f32", "--no-node-edges",
        str(_constant_model(tmp_path)),
    )  # fmt: skip
    findings = [f for f in model["findings"] if f["rule"].startswith("RUNTIME.")]
    assert {f["rule"] for f in findings} == {"RUNTIME.divergence"} and len(findings) == 3  # Y, Y_h, Y_c
    for finding in findings:
        assert finding["class"] == "known-departure" and finding["data"]["unexplained"] == 0
        (known,) = finding["data"]["known_divergence"]
        assert known["id"] == "LSTM-PEEPHOLES-IGNORED" and known["seen_in_this_version"] is True
        assert "known openvino divergence LSTM-PEEPHOLES-IGNORED" in finding["message"]


def test_the_survey_compares_openvino_s_lstm(tmp_path: Path) -> None:
    folder = tmp_path / "survey"
    options = CompareOptions(runtime="openvino", runtime_options=F32)
    run_survey_command(options, str(folder), operators=["LSTM"], quiet=True)
    (lstm,) = json.loads((folder / "survey.json").read_text(encoding="utf-8"))["operators"]
    assert lstm["elements"] > 0 and not lstm["not_compared"] and not lstm["refusals"]
