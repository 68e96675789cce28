"""onnxruntime runs in a worker process: its results are the in-process ones, and a crash (onnxruntime is
native code) becomes RUNTIME.not-compared for that model while sonnx-check and the other models go on."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from models import finish, maxpool
from onnx import TensorProto as T
from onnx import helper as h

from sonnx_check.cli import main
from sonnx_check.compare import runtime


def _crash_worker(session: runtime.OrtSession) -> None:
    worker = session._worker
    assert worker is not None
    os.kill(worker._process.pid, signal.SIGSEGV)
    worker._process.wait()


def test_the_worker_computes_what_onnxruntime_computes_in_process():
    model = maxpool((1, 2, 6, 6), kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))
    x = np.random.default_rng(0).standard_normal((1, 2, 6, 6)).astype(np.float32)
    with runtime.OrtSession(model) as isolated:
        apart = isolated.run({"X": x})
        assert isolated.info.version == isolated.version and "CPUExecutionProvider" in isolated.info.providers
    here = runtime.InProcessSession(model.SerializeToString()).run({"X": x}, list(apart))
    assert apart.keys() == here.keys()
    for name in apart:
        assert apart[name].tobytes() == here[name].tobytes() and apart[name].dtype == here[name].dtype


def test_a_refusal_carries_onnxruntimes_own_message():
    model = maxpool((1, 1, 4, 4), kernel=(2, 2), pads=(2, 2, 2, 2))
    with pytest.raises(runtime.RuntimeRefusal) as refused:
        runtime.OrtSession(model)
    assert refused.value.stage == "session" and not refused.value.crashed
    assert "Pad should be smaller than kernel" in refused.value.reason


def test_a_crashed_worker_is_reported_and_the_next_run_starts_a_new_one():
    model = maxpool((1, 1, 4, 4), kernel=(2, 2))
    x = np.ones((1, 1, 4, 4), np.float32)
    with runtime.OrtSession(model) as session:
        _crash_worker(session)
        with pytest.raises(runtime.RuntimeRefusal) as crashed:
            session.run({"X": x})
        assert crashed.value.crashed and crashed.value.stage == "run"
        assert crashed.value.reason == (
            "onnxruntime crashed while running the model (signal SIGSEGV); only its worker process ended"
        )
        assert session.run({"X": x})["Y"].shape == (1, 1, 3, 3)


def test_a_crash_in_onnxruntime_is_a_finding_and_the_next_model_is_still_compared(tmp_path: Path):
    """Found by the fuzzer: onnxruntime 1.32.0 crashes (SIGSEGV) running Max-6 with an empty input name.
    Other versions may refuse or run it; in every case the run goes on and the good model is compared."""
    node = h.make_node("Max", ["A", "A", ""], ["Y"], name="max")
    graph = h.make_graph(
        [node],
        "g",
        [h.make_tensor_value_info("A", T.FLOAT, [3])],
        [h.make_tensor_value_info("Y", T.FLOAT, [3])],
    )
    crashing = tmp_path / "crashing.onnx"
    onnx.save(finish(graph, opset=7), crashing)
    good = tmp_path / "good.onnx"
    onnx.save(maxpool((1, 1, 4, 4), kernel=(2, 2)), good)

    result = CliRunner().invoke(
        main,
        ["--format", "json", "--compare", "--inputs", "random", "--no-node-edges", str(crashing), str(good)],
    )

    assert result.exit_code == 1, result.output
    first, second = json.loads(result.stdout)["models"]
    assert first["comparison"]["status"] != "match"
    assert any(f["rule"] == "RUNTIME.not-compared" for f in first["findings"])
    assert second["comparison"]["status"] == "match"
