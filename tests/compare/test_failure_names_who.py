"""A node not compared because the runtime under test failed with the intermediate tensors exposed says so:
the reason names the runtime command, not the reference (which never ran) (issue 29)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import onnx
import pytest
from click.testing import CliRunner

from sonnx_check.cli import main

ROOT = Path(__file__).resolve().parents[2]
SMALL_CNN = ROOT / "sample_models" / "conforming" / "small_cnn.onnx"
ORT_COMMAND = Path(__file__).with_name("ort_command.py")

# runs the model with ort_command.py, but exits 1 as a Python error would when more outputs than the model's
# own are asked (the intermediates exposed)
FAILS_WHEN_EXPOSED = """
import runpy, sys
import onnx
if len(onnx.load(sys.argv[1], load_external_data=False).graph.output) > {outputs}:
    sys.exit("KeyError: 'onnx::Conv_40'")
sys.argv = [{ort_command!r}, *sys.argv[1:]]
runpy.run_path({ort_command!r}, run_name="__main__")
"""


@pytest.mark.slow
def test_a_command_failing_with_intermediates_exposed_is_named_as_the_one_that_failed(tmp_path: Path) -> None:
    script = tmp_path / "fails_when_exposed.py"
    outputs = len(onnx.load(SMALL_CNN, load_external_data=False).graph.output)
    script.write_text(
        FAILS_WHEN_EXPOSED.format(outputs=outputs, ort_command=str(ORT_COMMAND)), encoding="utf-8"
    )
    command = shlex.join([sys.executable, str(script)])
    args = ["--isolated", "--format", "json", "--no-node-edges", "--runtime-command", command, str(SMALL_CNN)]
    model = json.loads(CliRunner().invoke(main, args).stdout)["models"][0]
    reasons = {node["reason"] for node in model["comparison"]["nodes"] if node["status"] == "not-compared"}
    assert reasons, model["comparison"]["nodes"]
    for reason in reasons:
        assert "reference" not in reason
        assert "'fails_when_exposed.py' failed with intermediates exposed" in reason
        assert "KeyError" in reason
    (finding,) = [f for f in model["findings"] if f["rule"] == "RUNTIME.not-compared"]
    assert "the reference could not run it" not in finding["message"]
    assert "failed with intermediates exposed" in finding["message"]
