"""Measure the MaxPool Indices OpenVINO and tract keep for a window with no element above their start value
(no sonnx-check here): a (1, 4, 8, 8) X of -inf, of NaN, of the type's lowest finite value, for float and
the 8-bit integers, 2x2 windows of stride 2. Each window's index is printed as its plane's first element
(c*H*W) or not: MAXPOOL-INDEX-ZERO-FOR-EMPTY-WINDOW and MAXPOOL-INDEX-ZERO-FOR-LOWEST-WINDOW.

    python benchmarks/probe_maxpool_indices.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

SHAPE = (1, 4, 8, 8)
CASES = [
    (np.float32, -np.inf), (np.float32, np.nan), (np.float32, np.finfo(np.float32).min),
    (np.int8, -128), (np.uint8, 0),
]  # fmt: skip
TYPES = {np.float32: TensorProto.FLOAT, np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8}


def model(dtype) -> onnx.ModelProto:
    node = helper.make_node(
        "MaxPool",
        ["x"],
        ["y", "i"],
        auto_pad="NOTSET",
        ceil_mode=0,
        dilations=[1, 1],
        kernel_shape=[2, 2],
        pads=[0, 0, 0, 0],
        storage_order=0,
        strides=[2, 2],
    )
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TYPES[dtype], list(SHAPE))],
        [
            helper.make_tensor_value_info("y", TYPES[dtype], None),
            helper.make_tensor_value_info("i", TensorProto.INT64, None),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])


def runners(folder: Path):
    try:
        import openvino as ov

        core = ov.Core()

        def openvino(m: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
            compiled = core.compile_model(
                core.read_model(m.SerializeToString(), b""), "CPU", {"INFERENCE_PRECISION_HINT": "f32"}
            )
            return np.asarray(compiled([x])[compiled.outputs[1]])

        yield f"openvino {ov.get_version()}", openvino
    except ImportError:
        pass
    try:
        import tract

        def run_tract(m: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
            onnx.save(m, folder / "model.onnx")
            runnable = tract.onnx().load(str(folder / "model.onnx")).into_model().into_runnable()
            return np.asarray(runnable.run([x])[1].to_numpy())

        yield f"tract {tract.version()}", run_tract
    except ImportError:
        pass


def main() -> None:
    plane = SHAPE[2] * SHAPE[3]
    starts = (np.arange(SHAPE[1]) * plane).reshape(1, SHAPE[1], 1, 1)
    with tempfile.TemporaryDirectory() as name:
        for label, run in runners(Path(name)):
            for dtype, value in CASES:
                indices = run(model(dtype), np.full(SHAPE, value, dtype))
                at_start = int((indices == starts).sum())
                firsts = sorted(set(indices.reshape(SHAPE[1], -1)[:, 0].tolist()))
                print(
                    f"{label}: {np.dtype(dtype).name} X of {value}: {at_start} of {indices.size} windows give"
                    f" their plane's first element; first window per channel {firsts}"
                )


if __name__ == "__main__":
    main()
