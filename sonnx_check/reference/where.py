"""Where reference kernel (SONNX, based on Where-16), written from ops/where/where.md. Exact.

Z[i] = X[i] where condition[i] is True, Y[i] otherwise: the selected element is copied bit for bit (NaN
payloads, the sign of zero, infinities). condition is bool; X, Y and Z have one type of the float or int
section (Where.condition.C2, Where.types) and condition, X, Y and Z one shape: SONNX Where does not broadcast
(Where.condition.C1); other shapes are refused.
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


def where(
    condition: np.ndarray, x: np.ndarray, y: np.ndarray, *, max_elements: int | None = None
) -> np.ndarray:
    condition, x, y = np.asarray(condition), np.asarray(x), np.asarray(y)
    require_types("Where", {"condition": condition}, (BOOL,), "Where.types")
    require_same_type("Where", {"X": x, "Y": y}, "Where.condition.C2")
    dtype = require_types("Where", {"X": x, "Y": y}, FLOATS + INTEGERS, "Where.types")
    shape = require_same_shape("Where", {"condition": condition, "X": x, "Y": y}, "Where.condition.C1")
    z = new_output("Where", "Z", shape, dtype, max_elements)
    np.copyto(z, y)
    np.copyto(z, x, where=condition)
    return z


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    condition, x, y = operands("Where", inputs, ["condition", "X", "Y"])
    return [where(condition, x, y, max_elements=max_elements)]
