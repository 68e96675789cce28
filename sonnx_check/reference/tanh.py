"""Tanh reference kernel (SONNX, based on Tanh-13), written from ops/tanh/tanh.md.

Float section (float16, float, double): -inf gives -1, +inf gives 1, NaN gives NaN (the input NaN), and
otherwise (1 - e**-2X) / (1 + e**-2X) rounded to the type. tanh is odd and the kernel keeps the sign of zero:
Tanh(-0) = -0 (IEEE 754's tanh; the section's formula, read in real arithmetic, does not settle the sign).

Own error: the correctly rounded result for every input. For |X| < 2**-28, tanh(X) rounds to X itself in
every profile type (the relative deficit X**2/3 is below 2**-57), so X is returned. Otherwise, with
E = e**(-2|X|) - 1 in double-double (|X| capped at 40, where tanh rounds to 1 in every type), tanh|X| =
-E / (2 + E) (relative error below 2**-92), rounded at both ends of a 2**-80 error interval; an element whose
two roundings differ is recomputed from Python's decimal at 100 digits. The sign is applied last (rounding to
nearest is symmetric).

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
    dd_add,
    dd_div,
    expm1_dd,
    high_precision,
    operands,
    resolve_undecided,
    round_certified,
)

_TINY = 2.0**-28
_SATURATED = 40.0


def tanh(x: np.ndarray, *, max_elements: int | None = None) -> np.ndarray:
    return chunked_unary("Tanh", x, _chunk, max_elements)


def _chunk(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype == np.float64:
        return _exact_chunk(x, dtype)
    return fast_float.certified_chunk(x, dtype, fast_float.tanh_fast, fast_float.TANH_ERROR, _exact_chunk)


def _exact_chunk(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    v = x.astype(np.float64)
    y = x.copy()  # NaN and |X| < 2**-28 stay the input
    computed = np.isfinite(v) & (np.abs(v) >= _TINY)
    t = np.minimum(np.abs(v[computed]), _SATURATED)
    zero = np.zeros_like(t)
    eh, el = expm1_dd(-2.0 * t, zero)
    dh, dl = dd_add(2.0 + zero, zero, eh, el)
    qh, ql = dd_div(-eh, -el, dh, dl)
    r, undecided = round_certified(qh, ql, 0, dtype)
    resolve_undecided(r, undecided, exact_tanh, t)
    y[computed] = np.where(v[computed] < 0, -r, r)
    y[v == np.inf] = 1.0
    y[v == -np.inf] = -1.0
    return y


def exact_tanh(x: float) -> Fraction:
    """tanh(x) for x > 0 from 100-digit decimal arithmetic."""
    ctx = high_precision()
    e = ctx.exp(decimal.Decimal(-2 * x))
    return Fraction(ctx.divide(ctx.subtract(1, e), ctx.add(1, e)))


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    (x,) = operands("Tanh", inputs, ["X"])
    return [tanh(x, max_elements=max_elements)]
