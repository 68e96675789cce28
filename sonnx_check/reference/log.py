"""Log reference kernel (SONNX, based on Log-13), written from ops/log/log.md.

Float section (float16, float, double): NaN gives NaN (the input NaN); a negative X, -inf included, gives NaN;
+0 and -0 give -inf; +inf gives +inf; otherwise ln(X) rounded to the type (ln(1) = +0). The real section's
domain X > 0 (C2) is not a constraint of the float section, which defines every input: nothing is refused.

Own error: the correctly rounded result for every input. ln(X) is evaluated in double-double (relative
error below 2**-100, ``elementwise_common.log_dd``, machine-independent: numpy's float64 log only seeds it),
rounded at both ends of a 2**-80 error interval, and an element whose two roundings differ is recomputed from
Python's decimal ln at 100 digits.

float16 and float32 take the fast path first (``fast_float``): float64 arithmetic with a proven error bound
and a per-element certificate; only the elements it cannot decide, and the special values, come here.
"""

from __future__ import annotations

import decimal
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import onnx

from sonnx_check.reference import fast_float
from sonnx_check.reference.elementwise_common import (
    chunked_unary,
    high_precision,
    log_dd,
    operands,
    resolve_undecided,
    round_certified,
)


def log(x: np.ndarray, *, max_elements: int | None = None) -> np.ndarray:
    return chunked_unary("Log", x, _chunk, max_elements)


def _chunk(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype == np.float64:
        return _exact_chunk(x, dtype)
    return fast_float.certified_chunk(
        x, dtype, fast_float.log_fast, fast_float.LOG_ERROR, _exact_chunk, _positive
    )


def _exact_chunk(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    v = x.astype(np.float64)
    y = x.copy()  # NaN stays the input NaN
    regular = np.isfinite(v) & (v > 0)
    t = v[regular]
    lh, ll = log_dd(t)
    r, undecided = round_certified(lh, ll, 0, dtype)
    resolve_undecided(r, undecided, exact_log, t)
    y[regular] = r
    y[v == 1.0] = 0.0
    y[v == 0] = -np.inf
    y[v < 0] = np.nan
    y[v == np.inf] = np.inf
    return y


def _positive(x: np.ndarray) -> np.ndarray:
    return np.isfinite(x) & (x > 0)


def exact_log(x: float) -> Fraction:
    """ln(x) for x > 0 from 100-digit decimal arithmetic."""
    return Fraction(high_precision().ln(decimal.Decimal(x)))


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    (x,) = operands("Log", inputs, ["X"])
    return [log(x, max_elements=max_elements)]
