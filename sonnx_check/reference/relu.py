"""Relu reference kernel (SONNX, based on Relu-14), written from ops/relu/relu.md. Exact.

Y[i] = 0 if X[i] < 0, else X[i] (float section: NaN gives NaN). Taken literally, which the kernel does:
a NaN is not < 0 and is returned as it is (payload kept); -0 is not < 0 either (IEEE comparison), so
Relu(-0) = -0, the input itself; a negative X gives +0. Types: float16, float, double, int8 to int64.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.elementwise_common import FLOATS, SIGNED, new_output, operands, require_types


def relu(x: np.ndarray, *, max_elements: int | None = None) -> np.ndarray:
    x = np.asarray(x)
    dtype = require_types("Relu", {"X": x}, FLOATS + SIGNED, "Relu.types")
    y = new_output("Relu", "Y", x.shape, dtype, max_elements)
    np.copyto(y, x)
    with np.errstate(invalid="ignore"):
        y[x < 0] = 0
    return y


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    (x,) = operands("Relu", inputs, ["X"])
    return [relu(x, max_elements=max_elements)]
