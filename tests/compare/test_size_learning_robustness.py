"""What the reference meets while the sizes a dataset decides are learnt (compare/revealed_sizes.py runs it
over part of the graph before any runtime has refused a malformed model) is a reason it cannot run, never an
internal error. The fuzzer found both: a weight cut short, and an attribute of another type than declared."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import helper

from sonnx_check import reference
from sonnx_check.cli import main
from sonnx_check.reference import execute

SAMPLES = Path(__file__).resolve().parents[2] / "sample_models"
SAMPLE = SAMPLES / "conforming" / "residual_cnn.onnx"


@pytest.mark.live_ort
def test_a_short_weight_met_while_learning_sizes_is_not_an_internal_error(
    tmp_path: Path,
) -> None:
    model = onnx.load(SAMPLE)
    weight = model.graph.initializer[0]
    weight.raw_data = weight.raw_data[: len(weight.raw_data) // 2]
    model.graph.node[0].op_type = "Flatten"  # its output's size is then unknown before running
    path = tmp_path / "damaged.onnx"
    onnx.save(model, path)
    result = CliRunner().invoke(
        main, ["--format", "json", "--isolated", "--compare", "--no-node-edges", str(path)]
    )
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    rules = {f["rule"] for m in report["models"] for f in m["findings"]}
    assert "MODEL.internal-error" not in rules and "MODEL.onnx" in rules


def test_an_attribute_of_another_type_than_declared_is_refused_before_the_kernel_reads_it() -> None:
    node = helper.make_node("MaxPool", ["X"], ["Y"], kernel_shape=[2, 2], dilations=2)  # INT, not INTS
    with pytest.raises(reference.ReferenceError, match="'dilations' is INT, the operator declares INTS"):
        reference.run_node(node, [np.zeros((1, 1, 4, 4), np.float32)])


@pytest.mark.live_ort
@pytest.mark.parametrize("guarded", [True, False], ids=["attribute-check", "kernel-failure"])
def test_a_retyped_attribute_met_while_learning_sizes_is_not_an_internal_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, guarded: bool
) -> None:
    if (
        not guarded
    ):  # a kernel failing on a malformed node leaves the sizes past it unknown, as a refusal does
        monkeypatch.setattr(execute, "_check_attribute_types", lambda node: None)
    model = onnx.load(SAMPLES / "violating" / "maxpool_auto_pad_same.onnx")
    node = model.graph.node[0]
    kept = [a for a in node.attribute if a.name not in ("auto_pad", "ceil_mode")]
    del node.attribute[:]
    node.attribute.extend(kept)
    dilations = next(a for a in node.attribute if a.name == "dilations")
    dilations.ClearField("ints")
    dilations.type, dilations.i = onnx.AttributeProto.INT, 2  # shape inference gives up: the size is learnt
    path = tmp_path / "retyped.onnx"
    onnx.save(model, path)
    result = CliRunner().invoke(main, ["--format", "json", "--isolated", "--compare", str(path)])
    assert result.exit_code == 1, result.output
    rules = {f["rule"] for m in json.loads(result.stdout)["models"] for f in m["findings"]}
    assert "MODEL.internal-error" not in rules


def test_an_infinite_batchnormalization_epsilon_is_a_reason_not_a_crash() -> None:
    node = helper.make_node("BatchNormalization", ["X", "s", "b", "m", "v"], ["Y"], epsilon=float("inf"))
    ones = np.ones(2, np.float32)
    with pytest.raises(reference.ReferenceError, match="finite epsilon"):
        reference.run_node(node, [np.ones((1, 2, 2, 2), np.float32), ones, ones, ones, ones])
