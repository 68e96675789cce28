"""Softmax reference kernel (SONNX, based on Softmax-13), written from ops/softmax/softmax.md.

Float section, for every index i of X and its slice along the axis:
- NaN when the slice holds a NaN or a +inf (every element of such a slice);
- +0 when X[i] = -inf and the slice holds no NaN and no +inf (so a slice of -inf only is all zeros: the
  second case applies to each of its elements before the formula is reached);
- otherwise e^(X[i] - M) / sum_j e^(X[j] - M), M the maximum of the slice (finite here).

The kernel computes that value and rounds it once to X's type (never above 1, never overflowing; an
underflow gives a subnormal or +0, rounded once):
- float16 and float32: in float64. X[i] - M is exact for float16 and relatively within 2^-53 for float32,
  numpy's float64 exp is within 1 ulp of float64, the pairwise sum within log2(n) 2^-53 and the division
  within 2^-53: for |X[i] - M| <= 104 (beyond it the result is below half the smallest float32 subnormal)
  the relative error before the last rounding is below (104 + 3 + log2(n)) 2^-53 < 2^-45 for any
  n < 2^40, against the 2^-24 (float32) or 2^-11 (float16) half-ulp of the output: the result is within
  0.5 ulp + 2^-21 ulp of the exact value, the correctly rounded one unless the exact value lies that close
  to a midpoint between two outputs.
- double: in double-double (about 104 bits). TwoSum gives X[i] - M exactly; exp in double-double
  (double_double_functions.exp_scaled, the Exp kernel's, relative error below 2^-98); a pairwise
  double-double sum and a double-double division; then one rounding to float64, subnormals included
  (dd_scaled_to_float64). The result is within 0.5 ulp + 2^-40 ulp of the exact value.
So the kernel's own error is below 1 ulp of the output type everywhere, and it is the correctly rounded
value except within a hair of a midpoint.

Refused: axis < 0 (Softmax.R1; ONNX's default -1 included: the profile has no negative axis), axis >= rank
(Softmax.axis.C2), and types other than float16, float and double (Softmax.types).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.reference.double_double import dd_div, two_sum
from sonnx_check.reference.double_double_functions import exp_scaled
from sonnx_check.reference.errors import OutsideProfileError
from sonnx_check.reference.movement_common import (
    attributes,
    dd_pairwise_sum,
    dd_scaled_to_float64,
    int_attribute,
    require_declared_type,
    required_input,
)

ONNX_DEFAULT_AXIS = -1  # Softmax-13; outside the profile (Softmax.R1)
# Below this X[i] - M, e^(X[i] - M) / sum < e^-746 < 2^-1076: Y[i] rounds to +0 in every type, and the term
# is below 2^-1076 of the sum (which is at least 1): it changes no digit a double-double keeps.
_NEGLIGIBLE = -746.0
_BLOCK_ELEMENTS = 1 << 15  # rows are processed in blocks of about this many elements (kept in the cache)


def softmax(x: np.ndarray, *, axis: int, max_elements: int | None = None) -> np.ndarray:
    x = np.asarray(x)
    require_declared_type("Softmax", "X", x)
    if axis < 0:
        raise OutsideProfileError(f"Softmax with axis={axis}: the profile takes axis >= 0 (Softmax.R1)")
    if axis >= x.ndim:
        raise OutsideProfileError(
            f"Softmax with axis={axis} on X of rank {x.ndim}: axis < rank (Softmax.axis.C2)"
        )
    ensure_within_budget("Softmax output Y", x.shape, max_elements)
    if x.size == 0:
        return np.empty(x.shape, dtype=x.dtype)
    rows = np.moveaxis(x, axis, -1)
    flat = rows.reshape(-1, rows.shape[-1])
    out = np.empty(flat.shape, dtype=x.dtype)
    block = max(1, _BLOCK_ELEMENTS // flat.shape[1])  # the loop runs over blocks of rows, for memory
    for first in range(0, flat.shape[0], block):
        out[first : first + block] = _rows(flat[first : first + block])
    return np.ascontiguousarray(np.moveaxis(out.reshape(rows.shape), -1, axis))


def _rows(x: np.ndarray) -> np.ndarray:
    """Softmax along the last axis of a 2-D block, in X's type."""
    rows = x.astype(np.float64)  # every element is exact in float64
    if x.dtype != np.float64:
        top = rows.max(axis=-1, keepdims=True)
        if np.isfinite(top).all() and np.isfinite(rows.min()):
            # finite: the float64 computation below without its special-value masks (a term below
            # e^_NEGLIGIBLE is +0 either way), the same operations on the same values, fewer passes
            rows -= top
            np.exp(rows, out=rows)
            rows /= rows.sum(axis=-1, keepdims=True)  # at least 1: the maximum's own term
            return rows.astype(x.dtype)
    poisoned = (np.isnan(rows) | (rows == np.inf)).any(axis=-1, keepdims=True)
    finite = np.isfinite(rows)
    maximum = np.max(np.where(finite, rows, -np.inf), axis=-1, keepdims=True)  # -inf: a row of -inf only
    with np.errstate(invalid="ignore", over="ignore"):
        live = finite & ~poisoned & (rows - maximum >= _NEGLIGIBLE)
        if x.dtype == np.float64:
            y = _double_double(rows, maximum, live)
        else:
            terms = np.exp(np.where(live, rows - maximum, -np.inf))  # exp(-inf) = +0 outside `live`
            total = terms.sum(axis=-1, keepdims=True)  # >= 1 unless the row has no live term
            y = terms / np.where(total > 0, total, 1.0)
    return np.where(poisoned, np.nan, y).astype(x.dtype)


def _double_double(rows: np.ndarray, maximum: np.ndarray, live: np.ndarray) -> np.ndarray:
    safe_max = np.where(np.isfinite(maximum), maximum, 0.0)
    dh, dl = two_sum(np.where(live, rows, 0.0), -np.broadcast_to(safe_max, rows.shape))  # X[i] - M exactly
    dh, dl = np.where(live, dh, 0.0), np.where(live, dl, 0.0)
    mh, ml, k = exp_scaled(dh, dl)  # e^(X[i] - M) = (mh + ml) 2^k
    mh, ml = np.where(live, mh, 0.0), np.where(live, ml, 0.0)
    total_h, total_l = dd_pairwise_sum(np.ldexp(mh, k.astype(np.int64)), np.ldexp(ml, k.astype(np.int64)))
    empty = total_h == 0  # a row without live term (all -inf): every output is +0
    total_h = np.where(empty, 1.0, total_h)
    qh, ql = dd_div(mh, ml, np.broadcast_to(total_h, mh.shape), np.broadcast_to(total_l, ml.shape))
    return dd_scaled_to_float64(qh, ql, k)


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    x = required_input("Softmax", inputs, 0, "X")
    axis = int_attribute(attributes(node), "axis", ONNX_DEFAULT_AXIS)
    return [softmax(x, axis=axis, max_elements=max_elements)]  # type: ignore[arg-type]
