"""Add reference kernel (SONNX, based on Add-14), written from ops/add/add.md.

Float section: IEEE 754 addition, correctly rounded; its own error is at most half an ulp (binary64 for
double, binary64 rounded once for float16 and float: see ``elementwise_common.correctly_rounded``). Int
section: wrap-around modulo 2**n (E_ADD_INT_FUNC_0010). A and B have one type and one shape
(Add.A.C2, Add.A.C1: no broadcasting); other shapes and types are refused.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.elementwise_common import correctly_rounded, operands


def add(a: np.ndarray, b: np.ndarray, *, max_elements: int | None = None) -> np.ndarray:
    return correctly_rounded("Add", a, b, np.add, max_elements)


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    a, b = operands("Add", inputs, ["A", "B"])
    return [add(a, b, max_elements=max_elements)]
