"""Sub reference kernel (SONNX, based on Sub-14), written from ops/sub/sub.md.

Float section: IEEE 754 subtraction, correctly rounded; its own error is at most half an ulp (binary64 for
double, binary64 rounded once for float16 and float: see ``elementwise_common.correctly_rounded``). Int
section: wrap-around modulo 2**n (E_SUB_INT_FUNC_0010). A and B have one type and one shape
(Sub.A.C2, Sub.A.C1: no broadcasting); other shapes and types are refused.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.elementwise_common import correctly_rounded, operands


def sub(a: np.ndarray, b: np.ndarray, *, max_elements: int | None = None) -> np.ndarray:
    return correctly_rounded("Sub", a, b, np.subtract, max_elements)


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    a, b = operands("Sub", inputs, ["A", "B"])
    return [sub(a, b, max_elements=max_elements)]
