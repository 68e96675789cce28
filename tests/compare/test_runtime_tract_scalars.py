"""tract and 0-d inputs (issue 29): a scalar graph input (Clip's min and max) is fed 0-d, as declared; fed as
[1] tract refused it against its fact ("got 1,F32"), so Clip with its bounds as inputs was never compared.
Compared now, tract's Clip shows only its known departures (NaN -> the lower bound, the bound's zero)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

pytest.importorskip("tract")

from runtime_samples import compare  # noqa: E402

from sonnx_check.compare.runtimes.tract.session import InProcessSession  # noqa: E402


def _clip() -> onnx.ModelProto:
    inputs = [
        h.make_tensor_value_info("x", T.FLOAT, [2, 4]),
        h.make_tensor_value_info("low", T.FLOAT, []),
        h.make_tensor_value_info("high", T.FLOAT, []),
    ]
    node = h.make_node("Clip", ["x", "low", "high"], ["y"], name="clip")
    graph = h.make_graph([node], "g", inputs, [h.make_tensor_value_info("y", T.FLOAT, [2, 4])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 22)])
    model.ir_version = 10
    return model


X = np.array([[np.nan, -0.0, 0.0, 0.5], [-2.0, 3.0, np.nan, 0.25]], np.float32)


def test_a_scalar_input_is_fed_0_d() -> None:
    session = InProcessSession(_clip().SerializeToString())
    try:
        feeds = {"x": X, "low": np.array(-1.0, np.float32), "high": np.array(1.0, np.float32)}
        (y,) = session.run(feeds, ["y"]).values()
    finally:
        session.close()
    assert np.array_equal(y[~np.isnan(X)], np.clip(X, -1, 1)[~np.isnan(X)])


def test_clip_with_its_bounds_as_inputs_is_compared_with_its_known_departures(tmp_path: Path) -> None:
    path = tmp_path / "clip.onnx"
    onnx.save(_clip(), path)
    data = tmp_path / "data.npz"
    np.savez(data, x=X, low=np.array(0.0, np.float32), high=np.array(1.0, np.float32))
    _, (model,) = compare("--runtime", "tract", "--no-node-edges", "--inputs", str(data), str(path))
    assert not [f for f in model["findings"] if f["rule"] == "RUNTIME.not-compared"]
    (finding,) = [f for f in model["findings"] if f["rule"] == "RUNTIME.divergence"]
    counts = {k["id"]: k["explained"] for k in finding["data"]["known_divergence"]}
    # NaN -> min (+0) at the two NaN; Clip(-0, min = +0) = +0
    assert counts == {"CLIP-NAN-TO-LOWER-BOUND": 2, "CLIP-ZERO-BOUND-SIGN": 1}
    assert finding["data"]["unexplained"] == 0
