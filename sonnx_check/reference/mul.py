"""Mul reference kernel (SONNX, based on Mul-14), written from ops/mul/mul.md.

Float section: IEEE 754 multiplication, correctly rounded; its own error is at most half an ulp (binary64 for
double, binary64 rounded once for float16 and float: see ``elementwise_common.correctly_rounded``). Int
section: wrap-around modulo 2**n (E_MUL_INT_FUNC_0010). A and B have one type and one shape
(Mul.A.C2, Mul.A.C1: no broadcasting); other shapes and types are refused.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.elementwise_common import correctly_rounded, operands


def mul(a: np.ndarray, b: np.ndarray, *, max_elements: int | None = None) -> np.ndarray:
    return correctly_rounded("Mul", a, b, np.multiply, max_elements)


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    a, b = operands("Mul", inputs, ["A", "B"])
    return [mul(a, b, max_elements=max_elements)]
