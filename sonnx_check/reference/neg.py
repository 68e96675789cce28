"""Neg reference kernel (SONNX draft text ops/neg/neg.md, Neg-13), exact.

B[i] = -A[i] for every type the draft lists:

* float16, float, double and bfloat16: the sign bit is flipped (IEEE 754 negate): -(+0) = -0, -(-0) = +0,
  -(+-inf) = -+inf, and a NaN stays a NaN (its sign bit flips, as IEEE 754's negate does).
* int8 to int64 and uint8 to uint64: the draft gives no integer section. The kernel reads -A as 0 - A under
  the wrap-around integer arithmetic of the profile's Sub int section: -(minimum) is the minimum itself, and
  an unsigned -a is 2**n - a (0 for 0). No ONNX version of Neg accepts the unsigned types (MODEL.onnx).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.elementwise_common import (
    BFLOAT16,
    FLOATS,
    INTEGERS,
    float_bits,
    new_output,
    operands,
    require_types,
)


def negative(a: np.ndarray, *, max_elements: int | None = None) -> np.ndarray:
    a = np.asarray(a)
    dtype = require_types("Neg", {"A": a}, FLOATS + (BFLOAT16,) + INTEGERS, "Neg.types")
    b = new_output("Neg", "B", a.shape, dtype, max_elements)
    if dtype in INTEGERS:
        with np.errstate(over="ignore"):
            np.subtract(dtype.type(0), a, out=b)  # wraps around, as Sub's int section
    else:
        sign = np.array(1 << (8 * dtype.itemsize - 1), dtype=f"u{dtype.itemsize}")
        np.bitwise_xor(float_bits(np.asarray(a, order="C")), sign, out=float_bits(b))
    return b


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    (a,) = operands("Neg", inputs, ["A"])
    return [negative(a, max_elements=max_elements)]
