"""Less reference kernel (SONNX, based on Less-13), written from ops/less/less.md. Exact.

C[i] = A[i] < B[i] as a bool. Float section: IEEE 754 comparison, so any NaN operand gives False and
-0 < +0 and +0 < -0 are both False (the text lists these cases). A, B of one type of the float or int section
(Less.A.C2, Less.types) and of one shape: SONNX Less does not broadcast (Less.A.C1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.elementwise_common import (
    BOOL,
    FLOATS,
    INTEGERS,
    new_output,
    operands,
    require_same_shape,
    require_same_type,
    require_types,
)


def less(a: np.ndarray, b: np.ndarray, *, max_elements: int | None = None) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    require_same_type("Less", {"A": a, "B": b}, "Less.A.C2")
    require_types("Less", {"A": a, "B": b}, FLOATS + INTEGERS, "Less.types")
    shape = require_same_shape("Less", {"A": a, "B": b}, "Less.A.C1")
    c = new_output("Less", "C", shape, BOOL, max_elements)
    with np.errstate(invalid="ignore"):
        np.less(a, b, out=c)
    return c


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    a, b = operands("Less", inputs, ["A", "B"])
    return [less(a, b, max_elements=max_elements)]
