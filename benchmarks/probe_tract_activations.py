"""Measure tract's activations beyond float32: float16 Sigmoid and Tanh over all 65 536 float16 inputs against
tract's float32 result rounded to float16 (SIGMOID-CLAMPED-RATIONAL and TANH-CLAMPED-RATIONAL's float16
reading) and against its float16 kernels as sonnx-check evaluates them (SIGMOID- and TANH-FLOAT16-RATIONAL,
compare/ops/float16_rational.py): which one a CPU runs; and LeakyRelu at +0 and -0 for NaN, infinite and
negative alpha (LEAKYRELU-ZERO-TIMES-ALPHA: x > 0 ? x : alpha * x).

    python benchmarks/probe_tract_activations.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

TYPES = {np.dtype(np.float16): TensorProto.FLOAT16, np.dtype(np.float32): TensorProto.FLOAT}
KERNELS: dict[str, Any] = {}  # op type -> its float16 kernel's evaluation (filled by main)


def run(tract, folder: Path, op_type: str, x: np.ndarray, **attributes: float) -> np.ndarray:
    element = TYPES[x.dtype]
    graph = helper.make_graph(
        [helper.make_node(op_type, ["x"], ["y"], **attributes)],
        "g",
        [helper.make_tensor_value_info("x", element, list(x.shape))],
        [helper.make_tensor_value_info("y", element, list(x.shape))],
    )
    path = folder / "model.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)]), path)
    return np.asarray(tract.onnx().load(str(path)).into_model().into_runnable().run([x])[0].to_numpy())


def main() -> None:
    import tract

    from sonnx_check.compare.ops import sigmoid, tanh

    KERNELS.update(Sigmoid=sigmoid.FLOAT16_KERNEL, Tanh=tanh.FLOAT16_KERNEL)

    print(f"tract {tract.version()}")
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for op_type in ("Sigmoid", "Tanh"):
            half = run(tract, folder, op_type, every.copy())
            rounded = run(tract, folder, op_type, every.astype(np.float32)).astype(np.float16)
            same = (half.view(np.uint16) == rounded.view(np.uint16)) | (np.isnan(half) & np.isnan(rounded))
            kernel = KERNELS[op_type](every)
            own = (half.view(np.uint16) == kernel.view(np.uint16)) | (np.isnan(half) & np.isnan(kernel))
            specials = {
                str(v): float(run(tract, folder, op_type, np.array([v], np.float16))[0])
                for v in (np.inf, -np.inf, np.nan)
            }
            print(
                f"{op_type} float16: {int(same.sum())} of {every.size} inputs give the float32 result"
                f" rounded, {int(own.sum())} the float16 kernel's; {specials}"
            )
        x = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan], np.float32)
        for dtype in (np.float32, np.float16):
            for alpha in (float("nan"), float("-inf"), float("inf"), -0.5, -2.0, 0.5):
                y = run(tract, folder, "LeakyRelu", x.astype(dtype), alpha=alpha)
                zeros = ", ".join(
                    f"{'-' if np.signbit(v) else '+'}0 -> {y[k]!r}" for k, v in enumerate(x[:2])
                )
                print(f"LeakyRelu {np.dtype(dtype).name} alpha={alpha}: {zeros}")


if __name__ == "__main__":
    main()
