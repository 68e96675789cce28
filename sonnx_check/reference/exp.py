"""Exp reference kernel (SONNX, based on Exp-13), written from ops/exp/exp.md.

Float section (float16, float, double): NaN gives NaN (the input NaN), -inf gives +0, +inf gives +inf, and
otherwise e**X rounded to the type, which overflows to +inf exactly when X > X_max (the section's threshold
is where the correctly rounded value overflows) and underflows gradually to the subnormals and +0.

Own error: the correctly rounded result (round to nearest even) for every input. e**X is evaluated in
double-double (relative error below 2**-98, ``double_double_functions.exp_scaled``) and rounded at both
ends of an error interval of relative half-width 2**-80; an element whose two roundings differ is
recomputed from Python's decimal exp at 100 digits (no float input is known to come within 10**-100 of a
rounding boundary; the hardest known double cases need about 2**-160). In practice no element takes that
path.

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
from sonnx_check.reference.double_double_functions import EXP_ARG_LIMIT, exp_scaled
from sonnx_check.reference.elementwise_common import (
    chunked_unary,
    high_precision,
    operands,
    resolve_undecided,
    round_certified,
)


def exp(x: np.ndarray, *, max_elements: int | None = None) -> np.ndarray:
    return chunked_unary("Exp", x, _chunk, max_elements)


def _chunk(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype == np.float64:
        return _exact_chunk(x, dtype)
    return fast_float.certified_chunk(x, dtype, fast_float.exp_fast, fast_float.EXP_ERROR, _exact_chunk)


def _exact_chunk(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    v = x.astype(np.float64)
    y = x.copy()  # NaN stays the input NaN
    finite = np.isfinite(v)
    t = np.clip(v[finite], -EXP_ARG_LIMIT, EXP_ARG_LIMIT)  # beyond: overflow / zero in every type
    mh, ml, k = exp_scaled(t, np.zeros_like(t))
    r, undecided = round_certified(mh, ml, k, dtype)
    resolve_undecided(r, undecided, exact_exp, t)
    y[finite] = r
    y[v == np.inf] = np.inf
    y[v == -np.inf] = 0.0
    return y


def exact_exp(x: float) -> Fraction:
    """e**x from 100-digit decimal arithmetic (x is converted exactly)."""
    return Fraction(high_precision().exp(decimal.Decimal(x)))


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    (x,) = operands("Exp", inputs, ["X"])
    return [exp(x, max_elements=max_elements)]
