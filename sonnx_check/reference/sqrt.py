"""Sqrt reference kernel (SONNX, based on Sqrt-13), written from ops/sqrt/sqrt.md.

Float section (float16, float, double): IEEE 754 square root, correctly rounded: binary64 sqrt for double;
for float16 and float, binary64 sqrt rounded once, which is correctly rounded because binary64 has at least
2p + 2 bits (p = 11, 24). Its own error is at most half an ulp. Special values as the section lists them:
NaN gives NaN, a negative X (-inf included) gives NaN, -0 gives -0, +inf gives +inf. The real section's domain
X >= 0 (C2) is not a constraint of the float section, which defines every input: nothing is refused for it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.elementwise_common import FLOATS, chunked, new_output, operands, require_types


def sqrt(x: np.ndarray, *, max_elements: int | None = None) -> np.ndarray:
    x = np.asarray(x)
    dtype = require_types("Sqrt", {"X": x}, FLOATS, "Sqrt.types")
    y = new_output("Sqrt", "Y", x.shape, dtype, max_elements)
    if dtype == np.float64:
        with np.errstate(invalid="ignore"):
            return np.sqrt(x, out=y)
    return chunked(y, lambda v: np.sqrt(v.astype(np.float64)).astype(dtype), x)


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    (x,) = operands("Sqrt", inputs, ["X"])
    return [sqrt(x, max_elements=max_elements)]
