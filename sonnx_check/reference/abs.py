"""Abs reference kernel (SONNX, based on Abs-13), written from ops/abs/abs.md.

Exact (accuracy class "exact"): no rounding happens.

* float section (float16, float, double): Y = |X| by clearing the sign bit, which is the text's case list bit
  for bit: NaN stays NaN, +-inf gives +inf, +-0 gives +0, a negative X gives -X.
* int section (int8 to int64): -X for X < 0. X = minimum integer is outside the section's domain (its
  absolute value is not representable): constraint E_ABS_INT_CONSTR_X_020, rule Abs.X.C2, raised as
  ``DataConstraintError`` before anything is computed.
* uint section (uint8 to uint64): the real section, Y = X.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.elementwise_common import (
    FLOATS,
    INTEGERS,
    SIGNED,
    float_bits,
    new_output,
    operands,
    raise_if_any,
    require_types,
)


def absolute(x: np.ndarray, *, max_elements: int | None = None) -> np.ndarray:
    x = np.asarray(x)
    dtype = require_types("Abs", {"X": x}, FLOATS + INTEGERS, "Abs.types")
    y = new_output("Abs", "Y", x.shape, dtype, max_elements)
    if dtype in SIGNED:
        raise_if_any(
            x == np.iinfo(dtype).min, op="Abs", rule="Abs.X.C2", role="X",
            what=f"are the minimum of {dtype} ({np.iinfo(dtype).min})", shape=x.shape,
        )  # fmt: skip
    if dtype in FLOATS:
        sign = np.array(1 << (8 * dtype.itemsize - 1), dtype=f"u{dtype.itemsize}")
        np.bitwise_and(float_bits(np.asarray(x, order="C")), ~sign, out=float_bits(y))
    elif dtype in SIGNED:
        np.negative(x, out=y, where=x < 0)
        np.copyto(y, x, where=x >= 0)
    else:
        y[...] = x
    return y


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    (x,) = operands("Abs", inputs, ["X"])
    return [absolute(x, max_elements=max_elements)]
