"""Div reference kernel (SONNX, based on Div-14), written from ops/div/div.md.

* float section: IEEE 754 division, correctly rounded (binary64 division, rounded once for float16 and float:
  see ``elementwise_common.correctly_rounded``). The section's cases are IEEE 754's: a zero numerator over a
  non-zero gives a zero signed by the operands, a non-zero over +-0 gives +-inf, 0/0 gives NaN. A zero divisor
  is not a violation in this section.
* int section: "the algebraic quotient with any fractional part discarded", i.e. truncation toward zero
  (-35 / 3 = -11). B = 0 is outside the section's domain (E_DIV_INT_CONSTR_B_0030, rule Div.B.C3): raised as
  ``DataConstraintError`` before anything is computed. The one quotient that does not fit its type, the
  minimum integer divided by -1, wraps around to the minimum (two's complement, the profile's reading of
  integer overflow; the text does not single it out).

A and B have one type and one shape (Div.A.C2, Div.A.C1: no broadcasting).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.elementwise_common import (
    FLOATS,
    INTEGERS,
    SIGNED,
    binary_operands,
    correctly_rounded,
    new_output,
    operands,
    raise_if_any,
)


def div(a: np.ndarray, b: np.ndarray, *, max_elements: int | None = None) -> np.ndarray:
    a, b, dtype, shape = binary_operands("Div", a, b, FLOATS + INTEGERS)
    if dtype in FLOATS:
        return correctly_rounded("Div", a, b, np.divide, max_elements)
    c = new_output("Div", "C", shape, dtype, max_elements)
    raise_if_any(
        b == 0, op="Div", rule="Div.B.C3", role="B", what="are 0 (integer division by zero)", shape=shape
    )
    if dtype not in SIGNED:
        np.floor_divide(a, b, out=c)  # unsigned: floor is truncation
        return c
    minus_one = b == -1
    divisor = np.where(minus_one, dtype.type(1), b)  # x / -1 is -x, wrapping for the minimum
    with np.errstate(all="ignore"):
        remainder = np.fmod(a, divisor)  # sign of the dividend (C semantics)
        np.floor_divide(a - remainder, divisor, out=c)  # an exact division: floor is truncation
        np.subtract(dtype.type(0), a, out=c, where=minus_one)
    return c


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    a, b = operands("Div", inputs, ["A", "B"])
    return [div(a, b, max_elements=max_elements)]
