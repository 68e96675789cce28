"""Sigmoid reference kernel (SONNX, based on Sigmoid-13), written from ops/sigmoid/sigmoid.md.

Float section (float16, float, double): -inf gives +0, +inf gives 1, NaN gives NaN (the input NaN), and
otherwise 1 / (1 + e**-X) rounded to the type (underflowing gradually for very negative X).

Own error: the correctly rounded result for every input. With e = e**-|X| = m * 2**K (double-double, K <= 0,
so nothing overflows; the annex's split of the domain), the value is 1/(1 + e) for X >= 0 and m/(1 + e) *
2**K for X < 0, each a dd division (relative error below 2**-97 in all), rounded at both ends of a 2**-80
error interval; an element whose two roundings differ is recomputed from Python's decimal at 100 digits.

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
from sonnx_check.reference.double_double import dd_add, dd_div
from sonnx_check.reference.double_double_functions import EXP_ARG_LIMIT, exp_scaled
from sonnx_check.reference.elementwise_common import (
    chunked_unary,
    high_precision,
    operands,
    resolve_undecided,
    round_certified,
)


def sigmoid(x: np.ndarray, *, max_elements: int | None = None) -> np.ndarray:
    return chunked_unary("Sigmoid", x, _chunk, max_elements)


def _chunk(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype == np.float64:
        return _exact_chunk(x, dtype)
    return fast_float.certified_chunk(
        x, dtype, fast_float.sigmoid_fast, fast_float.SIGMOID_ERROR, _exact_chunk
    )


def _exact_chunk(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    v = x.astype(np.float64)
    y = x.copy()  # NaN stays the input NaN
    finite = np.isfinite(v)
    t = np.clip(v[finite], -EXP_ARG_LIMIT, EXP_ARG_LIMIT)
    positive = t >= 0
    mh, ml, k = exp_scaled(-np.abs(t), np.zeros_like(t))
    one, zero = np.ones_like(t), np.zeros_like(t)
    dh, dl = dd_add(one, zero, np.ldexp(mh, k), np.ldexp(ml, k))
    qh, ql = dd_div(np.where(positive, one, mh), np.where(positive, zero, ml), dh, dl)
    r, undecided = round_certified(qh, ql, np.where(positive, 0, k), dtype)
    resolve_undecided(r, undecided, exact_sigmoid, t)
    y[finite] = r
    y[v == np.inf] = 1.0
    y[v == -np.inf] = 0.0
    return y


def exact_sigmoid(x: float) -> Fraction:
    ctx = high_precision()
    return Fraction(ctx.divide(1, ctx.add(1, ctx.exp(-decimal.Decimal(x)))))


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    (x,) = operands("Sigmoid", inputs, ["X"])
    return [sigmoid(x, max_elements=max_elements)]
