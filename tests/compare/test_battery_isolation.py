"""The edge battery isolates a runtime's failure within the batch it ran in (issue 29, item 5): a runtime
command that cannot load one configuration (tract refusing BatchNormalization with its parameters as
inputs) is charged with that configuration alone, never with a node that shared its batch, and costs a
bounded number of starts (halving the batch, not one start per configuration and dataset).

The runtime is ort_command.py (onnxruntime as a command) with --refuse-op: it exits 3 (the contract's
"refused", docs/runtime-contract.md) on any model holding that operator, except the model under comparison
(--spare-input names its graph input). A refused configuration is not compared, for itself alone."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto as T
from onnx import helper as h

from sonnx_check.cli import main

ROOT = Path(__file__).resolve().parents[2]
SMALL_CNN = ROOT / "sample_models" / "conforming" / "small_cnn.onnx"  # graph input "image"
SCRIPT = Path(__file__).with_name("ort_command.py")


def relu_softmax(path: Path) -> Path:
    """x -> Relu -> Softmax: Softmax has edge datasets of its own, which concern no other configuration."""
    nodes = [
        h.make_node("Relu", ["x"], ["r"], name="relu"),
        h.make_node("Softmax", ["r"], ["y"], name="softmax", axis=1),
    ]
    typed = [h.make_tensor_value_info(n, T.FLOAT, [2, 8]) for n in ("x", "r", "y")]
    graph = h.make_graph(nodes, "g", [typed[0]], [typed[2]], value_info=[typed[1]])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def run(model: Path, refuse: str, spare: str, starts: Path, *flags: str) -> tuple[int, dict]:
    command = shlex.join(
        [sys.executable, str(SCRIPT), "--starts", str(starts), "--refuse-op", refuse, "--spare-input", spare]
        + list(flags)
    )
    result = CliRunner().invoke(
        main, ["--isolated", "--format", "json", "--runtime-command", command, str(model)]
    )
    return result.exit_code, json.loads(result.stdout)["models"][0]


def crashes(model: dict) -> dict[str, str]:
    """Op type -> the message of each "did not finish" finding."""
    return {
        f["node"]["op_type"]: f["message"]
        for f in model["findings"]
        if f["rule"] == "RUNTIME.divergence" and " did not finish on dataset " in f["message"]
    }


def configurations(model: dict) -> dict[str, dict]:
    return {c["op_type"]: c for c in model["comparison"]["node_edges"]["configurations"]}


def refused_alone(model: dict, op_type: str) -> None:
    """``op_type``'s configuration is not compared, with the reason the command chose; no finding."""
    config = configurations(model)[op_type]
    assert config["status"] == "not-compared"
    assert config["reason"] == (
        f"the runtime command 'ort_command.py' refused the node alone: exit status 3 (refused): "
        f"cannot load {op_type}"
    )
    assert crashes(model) == {}


@pytest.mark.slow  # a command started per batch and bisection step: ~10 s each
@pytest.mark.parametrize("status", [3, 1])  # refused (the contract's status), or a crash
def test_a_failing_configuration_is_never_pinned_on_a_node_that_shared_its_batch(
    tmp_path: Path, status: int
) -> None:
    starts = tmp_path / "starts.txt"
    _, model = run(relu_softmax(tmp_path / "m.onnx"), "Relu", "x", starts, "--refuse-exit", str(status))
    if status == 3:
        refused_alone(model, "Relu")
    else:  # the old code also charged Softmax, on its own datasets
        assert set(crashes(model)) == {"Relu"}
    softmax = [c for c in model["comparison"]["node_edges"]["configurations"] if c["op_type"] == "Softmax"]
    (config,) = softmax
    assert config["status"] != "not-compared" and not config.get("crashes")
    # the model (twice: plain, then intermediates exposed), its batch, each half once: the old code, 22
    assert len(starts.read_text().splitlines()) <= 5


@pytest.mark.slow  # counts the starts of a real command over the whole battery: ~15 s
def test_a_refused_configuration_costs_a_bounded_number_of_starts(tmp_path: Path) -> None:
    starts = tmp_path / "starts.txt"
    _, model = run(SMALL_CNN, "MaxPool", "image", starts)
    refused_alone(model, "MaxPool")
    others = [c for c in configurations(model).values() if c["status"] != "not-compared"]
    assert len(others) >= 5  # every other configuration was compared
    # 3 runs of the model and 2 log2(8) halvings of the one battery batch: the old code started it 113 times
    assert len(starts.read_text().splitlines()) <= 3 + 1 + 2 * 3


@pytest.mark.slow
def test_the_battery_runs_when_the_models_own_run_fails(tmp_path: Path) -> None:
    # the runtime cannot load Relu: the model fails on every dataset, Softmax alone still runs
    code, model = run(relu_softmax(tmp_path / "m.onnx"), "Relu", "no-such-input", tmp_path / "starts.txt")
    assert code == 1
    messages = [f["message"] for f in model["findings"] if f["rule"] == "RUNTIME.not-compared"]
    assert any("refused the model on every dataset" in m for m in messages), messages
    refused_alone(model, "Relu")
    assert configurations(model)["Softmax"]["status"] in ("match", "diverges")  # the old code ran none
