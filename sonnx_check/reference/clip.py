"""Clip reference kernel (SONNX, based on Clip-13), written from ops/clip/clip.md. Exact.

With L' and M' the bounds (float section: L' = -inf when L is NaN, M' = +inf when M is NaN; integer types:
L' = L, M' = M):

* L' <= M': Y[i] = L' where X[i] < L', M' where X[i] > M', X[i] otherwise. Comparisons are IEEE 754: a NaN
  element of X is neither, so it stays (payload kept); with L' = +0 and M' = -0 (L' <= M' holds), -1 gives
  +0 and -0 stays -0, as the text's note requires (it is not min(M', max(X, L'))).
* L' > M': every Y[i] is M', NaN elements included.

The bound returned is the bound tensor's value bit for bit. L and M are scalars of X's type (Clip.L.C1,
Clip.M.C1, Clip.X.C2); both must be given (Clip.bounds: an absent bound would be a default value, which the
profile forbids), so a node without one is refused rather than completed with ONNX's type limits.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.elementwise_common import (
    FLOATS,
    INTEGERS,
    new_output,
    operands,
    require_same_type,
    require_types,
)
from sonnx_check.reference.errors import OutsideProfileError


def clip(x: np.ndarray, low: np.ndarray, high: np.ndarray, *, max_elements: int | None = None) -> np.ndarray:
    x, low, high = np.asarray(x), np.asarray(low), np.asarray(high)
    require_same_type("Clip", {"X": x, "L": low, "M": high}, "Clip.X.C2")
    dtype = require_types("Clip", {"X": x}, FLOATS + INTEGERS, "Clip.types")
    for name, bound, rule in (("L", low, "Clip.L.C1"), ("M", high, "Clip.M.C1")):
        if bound.ndim != 0:
            raise OutsideProfileError(
                f"Clip with {name} of shape {list(bound.shape)}: {name} is a scalar, shape [] ({rule})"
            )
    lo, hi = low[()], high[()]
    if dtype in FLOATS:
        if np.isnan(lo):
            lo = dtype.type(-np.inf)
        if np.isnan(hi):
            hi = dtype.type(np.inf)
    y = new_output("Clip", "Y", x.shape, dtype, max_elements)
    if lo > hi:
        y[...] = hi
        return y
    np.copyto(y, x)
    with np.errstate(invalid="ignore"):
        y[x < lo] = lo
        y[x > hi] = hi
    return y


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    x, low, high = operands("Clip", inputs, ["X", "L", "M"], optional=["L", "M"])
    missing = [name for name, v in (("L (min)", low), ("M (max)", high)) if v is None]
    if missing:
        raise OutsideProfileError(
            f"Clip without its bound {' and '.join(missing)}: SONNX requires both bounds, "
            "no default value (Clip.bounds)"
        )
    assert x is not None and low is not None and high is not None  # X is required, the bounds refused above
    return [clip(x, low, high, max_elements=max_elements)]
