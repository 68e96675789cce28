"""A damaged weight met while the sizes a dataset decides are learnt (compare/revealed_sizes.py runs the
reference over part of the graph) is a reason the reference cannot run, never an internal error. The fuzzer
found it: residual_cnn with its first weight cut short and its first node turned into a Flatten."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest
from click.testing import CliRunner

from sonnx_check.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "sample_models" / "conforming" / "residual_cnn.onnx"


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
