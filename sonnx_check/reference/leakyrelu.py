"""LeakyRelu reference kernel (SONNX, based on LeakyRelu-16), written from ops/leakyrelu/leakyrelu.md.

Float section: Y[i] = alpha * X[i] where X[i] is in [-inf, -0[ (strictly negative), X[i] otherwise. So a NaN
and -0 are returned as they are, and a NaN alpha gives NaN for negative X, as the text lists. The product is
the IEEE 754 one: alpha = -inf and X = -inf give +inf (the text's Example 4), and alpha = 0 with X = -inf
gives NaN (0 * inf), which the formula implies although the text's "Error conditions" sentence omits it.

alpha is the attribute's value exactly as the model stores it (a float32; absent, LeakyRelu-16's default
0.01 - LeakyRelu.R1 reports the omission). The product alpha * X is computed exactly (TwoProduct) and rounded
once to X's type: correctly rounded, its own error at most half an ulp.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.elementwise_common import (
    FLOATS,
    chunked,
    new_output,
    operands,
    require_types,
    round_scaled,
    two_prod,
)

DEFAULT_ALPHA = 0.01  # LeakyRelu-16 (as a float32 attribute: 0.009999999776482582)


def leaky_relu(x: np.ndarray, *, alpha: float, max_elements: int | None = None) -> np.ndarray:
    x = np.asarray(x)
    dtype = require_types("LeakyRelu", {"X": x}, FLOATS, "LeakyRelu.types")
    y = new_output("LeakyRelu", "Y", x.shape, dtype, max_elements)
    return chunked(y, lambda v: _chunk(v, float(alpha), dtype), x)


def _chunk(x: np.ndarray, alpha: float, dtype: np.dtype) -> np.ndarray:
    y = x.copy()
    negative = x < 0
    if not negative.any():
        return y
    v = x[negative].astype(np.float64)
    if dtype == np.float64:
        y[negative] = alpha * v
        return y
    p, e = two_prod(np.full_like(v, alpha), v)
    exact = np.isfinite(p) & (np.abs(p) > 2.0**-900)  # TwoProduct's error term is exact there
    y[negative] = np.where(exact, round_scaled(p, np.where(exact, e, 0.0), 0, dtype), p.astype(dtype))
    return y


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    (x,) = operands("LeakyRelu", inputs, ["X"])
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    return [
        leaky_relu(x, alpha=float(attrs.get("alpha", np.float32(DEFAULT_ALPHA))), max_elements=max_elements)
    ]
