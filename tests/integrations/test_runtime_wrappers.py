"""The example wrappers of integrations/ (issue 29, item 3): OpenVINO and tract behind the --runtime-command
contract, giving the verdict the built-in runtime gives, declaring themselves in runtime.json, and exiting 3
with their chosen reason on a model they refuse."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import onnx
import pytest
from clikit import run_cli
from onnx import TensorProto as T
from onnx import helper as h

ROOT = Path(__file__).resolve().parents[2]
SMALL_CNN = str(ROOT / "sample_models" / "conforming" / "small_cnn.onnx")


def _command(script: str, *flags: str) -> str:
    return shlex.join([sys.executable, str(ROOT / "integrations" / script), *flags])


def _model(args: list[str]) -> dict:
    run = run_cli(["--isolated", "--format", "json", *args])
    assert run.code in (0, 1), run.stderr
    return json.loads(run.stdout)["models"][0]


def _statuses(model: dict) -> list[tuple[str, str]]:
    return [(node["name"], node["status"]) for node in model["comparison"]["nodes"]]


@pytest.mark.parametrize(
    ("script", "module", "flags", "builtin"),
    [
        (
            "openvino_command.py",
            "openvino",
            ["--precision", "f32"],
            ["--runtime-option", "INFERENCE_PRECISION_HINT=f32"],
        ),
        ("tract_command.py", "tract", [], []),
    ],
)
def test_a_wrapper_gives_the_built_in_verdict_and_declares_itself(
    script: str, module: str, flags: list[str], builtin: list[str]
) -> None:
    pytest.importorskip(module)
    wrapped = _model(["--no-node-edges", "--runtime-command", _command(script, *flags), SMALL_CNN])
    inside = _model(["--no-node-edges", "--runtime", module, *builtin, SMALL_CNN])
    assert _statuses(wrapped) == _statuses(inside)
    runtime = wrapped["comparison"]["runtime"]
    assert runtime["name"] == "command" and runtime["options"]["runtime_name"] == module
    assert runtime["version"]


def _bn_with_input_parameters(folder: Path) -> str:
    inputs = [h.make_tensor_value_info("X", T.FLOAT, [1, 2, 3, 3])]
    inputs += [h.make_tensor_value_info(name, T.FLOAT, [2]) for name in ("scale", "bias", "mean", "var")]
    node = h.make_node("BatchNormalization", ["X", "scale", "bias", "mean", "var"], ["Y"], name="bn")
    graph = h.make_graph([node], "g", inputs, [h.make_tensor_value_info("Y", T.FLOAT, [1, 2, 3, 3])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 15)])
    model.ir_version = 8
    onnx.save(model, folder / "bn.onnx")
    return str(folder / "bn.onnx")


def test_the_tract_wrapper_refuses_with_exit_3_and_its_reason(tmp_path: Path) -> None:
    pytest.importorskip("tract")
    model = _model(
        [
            "--no-node-edges",
            "--runtime-command",
            _command("tract_command.py"),
            _bn_with_input_parameters(tmp_path),
        ]
    )
    (finding,) = [f for f in model["findings"] if f["rule"] == "RUNTIME.not-compared"]
    assert finding["data"]["failure"] == "refused"
    assert "exit status 3 (refused): tract refused the model" in finding["message"]
    assert "Params are not const" in finding["message"] and "backtrace" not in finding["message"]


@pytest.mark.parametrize(
    ("script", "module"), [("openvino_command.py", "openvino"), ("tract_command.py", "tract")]
)
def test_a_wrapper_compares_every_node_when_outputs_share_a_constant(script: str, module: str) -> None:
    """Three Identity nodes of one initializer, each exposed as a graph output: OpenVINO's compiled model
    merges them under one name (the wrapper exited with a KeyError and left 16 nodes not compared)."""
    pytest.importorskip(module)
    residual = str(ROOT / "sample_models" / "torch" / "torchscript_residual_cnn.onnx")
    wrapped = _model(["--no-node-edges", "--runtime-command", _command(script), residual])
    inside = _model(["--no-node-edges", "--runtime", module, residual])
    assert _statuses(wrapped) == _statuses(inside)
    assert "not-compared" not in {status for _, status in _statuses(wrapped)}
