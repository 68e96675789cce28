"""The BatchNormalization kernel as it was before issue 31's speed-ups (4d497c8), kept as the oracle of
test_batchnorm_speedups.py: the exact channel factors in ``fractions.Fraction``, no zero certified in the
float16/float32 blocks (every rounding to zero decided exactly), the whole special-value evaluation, the
gathered operands broadcast to X's shape. The parts it shares with the kernel unchanged are imported."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from sonnx_check.reference.batchnormalization import (
    _check,
    _double_double,
    _exact,
    _sqrt_fraction,
    _to_float,
)
from sonnx_check.reference.exact_sums import F64, TINY, U, _certify_single


def exact_channel_factors(scale: np.ndarray, var: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    hi = np.zeros(scale.shape)
    lo = np.zeros(scale.shape)
    for c, (s, v) in enumerate(
        zip(scale.astype(np.float64).tolist(), var.astype(np.float64).tolist(), strict=True)
    ):
        if not (math.isfinite(s) and math.isfinite(v)) or s == 0:
            hi[c] = math.nan if not (math.isfinite(s) and math.isfinite(v)) else 0.0
            continue
        k = _sqrt_fraction(Fraction(s) ** 2 / (Fraction(v) + Fraction(eps)), 120)
        k_hi = _to_float(k)
        k_lo = float(k - Fraction(k_hi)) if math.isfinite(k_hi) else 0.0
        sign = -1.0 if s < 0 else 1.0
        hi[c], lo[c] = sign * k_hi, sign * k_lo
    return hi, lo


def batch_normalization(
    x: np.ndarray,
    scale: np.ndarray,
    b: np.ndarray,
    input_mean: np.ndarray,
    input_var: np.ndarray,
    epsilon: float,
) -> np.ndarray:
    """Y for valid operands (the refusals are the kernel's own, unchanged)."""
    x = np.asarray(x)
    params = [np.asarray(p) for p in (scale, b, input_mean, input_var)]
    _check(x, params)
    eps = float(np.float32(epsilon))
    shape = (1, -1) + (1,) * (x.ndim - 2) if x.ndim >= 2 else (-1,)
    s, bias, mean, var = (p.astype(np.float64).reshape(shape) for p in params)
    xs = x.astype(np.float64) if x.dtype == F64 else x
    k_hi, k_lo = exact_channel_factors(params[0], params[3], eps)
    k_hi, k_lo = k_hi.reshape(shape), k_lo.reshape(shape)
    finite = all(np.isfinite(a).all() for a in (xs, s, bias, mean, var))
    with np.errstate(all="ignore"):
        if x.dtype == F64:
            y = np.empty(x.shape, dtype=x.dtype)
            value, certified = _double_double(xs, mean, bias, k_hi, k_lo)
            y[...] = value
        else:
            y, certified = _single_blocks(x, mean, bias, k_hi)
        if not finite:
            xs = xs.astype(np.float64)
            special, special_values, _, _ = special_values_of(xs, s, bias, mean, var, finite)
            y[special] = special_values[special].astype(x.dtype)
            certified |= special
        left = np.flatnonzero(~certified)
        if left.size == 0:
            return y
        operands = [
            np.broadcast_to(a, x.shape).reshape(-1)[left].astype(np.float64) for a in (xs, s, bias, mean, var)
        ]
        xs_left, s_left, bias_left, mean_left, var_left = operands
        special, _, product_zero, zero_sign = special_values_of(
            xs_left, s_left, bias_left, mean_left, var_left, finite
        )
        product_zero = product_zero & ~special
        zero_value = np.where(zero_sign & np.signbit(bias_left), -0.0, 0.0)
        exact = np.where(bias_left != 0, bias_left, zero_value)
        flat = y.reshape(-1)
        flat[left[product_zero]] = exact[product_zero].astype(x.dtype)
    for n in np.flatnonzero(~product_zero & ~special):
        flat[left[n]] = _exact(
            float(xs_left[n]),
            float(s_left[n]),
            float(bias_left[n]),
            float(mean_left[n]),
            float(var_left[n]),
            eps,
            x.dtype,
        )
    return y


def _single_blocks(
    x: np.ndarray, mean: np.ndarray, bias: np.ndarray, k_hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    shape = x.shape
    inner = int(np.prod(shape[2:])) if x.ndim > 2 else 1
    channels = mean.size
    rows = np.ascontiguousarray(x).reshape(-1, inner)
    mean_r, bias_r, k_r = (np.broadcast_to(a.reshape(-1), (channels,)) for a in (mean, bias, k_hi))
    channel_of_row = np.arange(rows.shape[0]) % channels
    y = np.empty(rows.shape, dtype=x.dtype)
    certified = np.empty(rows.shape, dtype=bool)
    step = max(1, (1 << 15) // inner)
    for first in range(0, rows.shape[0], step):
        c = channel_of_row[first : first + step, None]
        p = rows[first : first + step].astype(np.float64)
        p -= mean_r[c]
        p *= k_r[c]
        approx = p + bias_r[c]
        bound = np.abs(p, out=p)
        bound *= 3.1 * U
        bound += 2.0**-49 * np.abs(approx)
        bound += 8 * TINY
        value, ok = _certify_single(approx, bound, x.dtype)
        ok &= np.isfinite(approx) & (value != 0)
        y[first : first + step] = value
        certified[first : first + step] = ok
    return y.reshape(shape), certified.reshape(shape)


def special_values_of(
    x: np.ndarray, s: np.ndarray, b: np.ndarray, m: np.ndarray, v: np.ndarray, finite: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(where Y is NaN or +-inf, those values, where scale * quotient is an exact zero, its sign)."""
    shape = np.broadcast_shapes(x.shape, s.shape, b.shape, m.shape, v.shape)
    xm_zero = x == m  # exact: both finite here, or equal infinities (handled as NaN below)
    xm_negative_zero = np.signbit(x) & ~np.signbit(m)  # -0 - (+0) = -0; every other zero difference is +0
    if finite:
        product_zero = np.broadcast_to((s == 0) | xm_zero, shape)
        quotient_negative = np.where(xm_zero, xm_negative_zero, x < m)
        zero_sign = np.broadcast_to(np.signbit(s) ^ quotient_negative, shape)
        nothing = np.zeros(shape, dtype=bool)
        return nothing, np.zeros(shape), product_zero, zero_sign
    nan = np.isnan(x) | np.isnan(s) | np.isnan(b) | np.isnan(m) | np.isnan(v)
    xm_inf = np.isinf(x) | np.isinf(m)
    xm_nan = np.isinf(x) & np.isinf(m) & (x == m)
    xm_neg = np.where(np.isinf(x), x < 0, np.where(np.isinf(m), m > 0, x < m))  # sign of x - m (nonzero)
    den_inf = np.isinf(v)
    q_nan = nan | xm_nan | (xm_inf & den_inf)
    q_inf = xm_inf & ~q_nan
    q_zero = ~q_nan & ~q_inf & (den_inf | xm_zero)
    q_negative = np.where(xm_zero & ~xm_inf, xm_negative_zero, xm_neg)
    sq_nan = q_nan | (np.isinf(s) & q_zero) | (q_inf & (s == 0))
    sq_inf = ~sq_nan & (np.isinf(s) | q_inf)
    sq_negative = np.signbit(s) ^ q_negative
    sq_zero = ~sq_nan & ~sq_inf & ((s == 0) | q_zero)
    y_nan = sq_nan | (sq_inf & np.isinf(b) & (sq_negative != (b < 0)))
    y_inf = ~y_nan & (sq_inf | np.isinf(b))
    y_inf_negative = np.where(sq_inf, sq_negative, b < 0)
    special = np.broadcast_to(y_nan | y_inf, shape)
    values = np.broadcast_to(np.where(y_nan, np.nan, np.where(y_inf_negative, -np.inf, np.inf)), shape)
    product_zero = np.broadcast_to(sq_zero & ~np.isinf(b), shape)
    return special, values, product_zero, np.broadcast_to(sq_negative, shape)
