"""--runtime tract (issue 29, item 3): tract run in sonnx-check's worker process on the samples, its record in
every report, its one option (transform), and what it refuses (BatchNormalization with its parameters as
graph inputs) a not-compared "refused", never a crash or a finding on another node."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

pytest.importorskip("tract")

from runtime_samples import SAMPLES, assert_verdicts, compare, run_cli  # noqa: E402

SMALL_CNN = str(SAMPLES[0] / "small_cnn.onnx")


@pytest.mark.slow
def test_every_sample_compares_under_tract_with_a_verdict() -> None:
    _, models = compare("--runtime", "tract", *(str(folder) for folder in SAMPLES))
    assert len(models) >= 8
    assert_verdicts(models, "tract")


def test_the_record_names_tract_its_version_and_options() -> None:
    _, (model,) = compare("--runtime", "tract", "--no-node-edges", SMALL_CNN)
    runtime = model["comparison"]["runtime"]
    assert runtime["name"] == "tract" and runtime["version"].count(".") == 2
    assert runtime["options"]["device"] == "CPU" and runtime["options"]["threads"] == 1
    # the model's own run: every node's output named as in the graph (tract names them by node otherwise)
    assert {node["status"] for node in model["comparison"]["nodes"]} <= {"match", "within-bound"}


def test_a_transform_is_applied_and_recorded() -> None:
    _, (model,) = compare(
        "--runtime", "tract", "--runtime-option", "transform=f32_to_f16", "--no-node-edges", SMALL_CNN
    )
    options = model["comparison"]["runtime"]["options"]
    assert options["runtime_options"] == {"transform": "f32_to_f16"} and options["transform"] == "f32_to_f16"
    # f32_to_f16 makes the model's inputs float16 too: tract then refuses the float32 data, which shows the
    # transform was applied (a transform keeping the model's interface is compared like any run)
    (finding,) = [f for f in model["findings"] if f["rule"] == "RUNTIME.not-compared"]
    assert "expected to match fact 1,3,16,16,F16" in finding["message"]


def test_an_unknown_transform_is_a_not_compared_naming_it() -> None:
    _, (model,) = compare(
        "--runtime", "tract", "--runtime-option", "transform=nope", "--no-node-edges", SMALL_CNN
    )
    (finding,) = [f for f in model["findings"] if f["rule"] == "RUNTIME.not-compared"]
    assert "transform `nope' could not be found" in finding["message"]
    assert "Stack backtrace" not in finding["message"] and "\n" not in finding["message"]


def _refused_model(tmp_path: Path) -> Path:
    """BatchNormalization with its parameters as graph inputs: tract refuses to type it."""
    inputs = [h.make_tensor_value_info("X", T.FLOAT, [1, 2, 3, 3])]
    inputs += [h.make_tensor_value_info(name, T.FLOAT, [2]) for name in ("scale", "bias", "mean", "var")]
    node = h.make_node("BatchNormalization", ["X", "scale", "bias", "mean", "var"], ["Y"], name="bn")
    output = h.make_tensor_value_info("Y", T.FLOAT, [1, 2, 3, 3])
    model = h.make_model(h.make_graph([node], "g", inputs, [output]), opset_imports=[h.make_opsetid("", 15)])
    model.ir_version = 8
    path = tmp_path / "bn_inputs.onnx"
    onnx.save(model, path)
    return path


def test_a_model_tract_refuses_is_not_compared_as_refused(tmp_path: Path) -> None:
    _, (record,) = compare("--runtime", "tract", str(_refused_model(tmp_path)))
    (finding,) = [f for f in record["findings"] if f["rule"] == "RUNTIME.not-compared"]
    assert finding["data"]["failure"] == "refused"
    assert "tract refused the model" in finding["message"] and "Params are not const" in finding["message"]
    assert not [
        f for f in record["findings"] if f["rule"] == "RUNTIME.divergence"
    ]  # nothing pinned elsewhere


def test_a_refusal_is_called_one_in_the_table_the_finding_and_the_json(tmp_path: Path) -> None:
    path = str(_refused_model(tmp_path))
    _, (record,) = compare("--runtime", "tract", "--no-node-edges", path)
    (finding,) = [f for f in record["findings"] if f["rule"] == "RUNTIME.not-compared"]
    assert finding["message"].startswith("tract refused the model on every dataset")
    (node,) = record["comparison"]["nodes"]
    assert node["reason"] == "tract refused the model on every dataset"
    assert [(d["status"], d["failure"]) for d in record["comparison"]["datasets"]] == [("failed", "refused")]
    table = run_cli(["--isolated", "--compare", "--runtime", "tract", "--no-node-edges", path]).stdout
    assert "tract refused the model on every dataset" in table and "tract refused the model on 1" in table
    assert "failed at run time" not in table and "tract failed on" not in table
