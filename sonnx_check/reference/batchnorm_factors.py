"""BatchNormalization's exact per-channel factors k = scale / sqrt(input_var + epsilon), as a float64 pair
hi + lo (relative error below 2^-104), for the kernel in batchnormalization.py.

The arithmetic is on Python integers: k^2 = scale^2 / q with q = input_var + epsilon exact (floats are
integer ratios over powers of two), reduced by its gcd, and an integer square root of k^2 scaled to ~120
bits; hi is k correctly rounded and lo the exact remainder k - hi correctly rounded (int / int true division
rounds correctly). These are the very rationals the kernel computed with ``fractions.Fraction`` before
(issue 31), reduced the same way, so the factors are the same bits; Fraction's object per operation cost
~15 us a channel, the integers ~3 us. Channels that share their (scale, input_var) pair, as the edge
battery's parameter patterns and untrained networks do, are computed once per call, and whole parameter
vectors met before are remembered.
"""

from __future__ import annotations

import functools
import math

import numpy as np

BITS = 120  # of the scaled integer square root


def channel_factors(scale: np.ndarray, var: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """``exact_channel_factors``, remembered for the last parameters met: a model's BatchNormalization
    meets the same scale and variance on every dataset (and the edge battery on every edge pattern)."""
    if scale.size > 4096:  # at most 256 entries of 128 KiB are remembered
        return exact_channel_factors(scale, var, eps)
    s, v = (np.ascontiguousarray(a, dtype=np.float64).reshape(-1) for a in (scale, var))
    hi, lo = _remembered_factors(s.tobytes(), v.tobytes(), eps)
    return np.frombuffer(hi).reshape(scale.shape).copy(), np.frombuffer(lo).reshape(scale.shape).copy()


@functools.lru_cache(maxsize=256)
def _remembered_factors(scale: bytes, var: bytes, eps: float) -> tuple[bytes, bytes]:
    hi, lo = exact_channel_factors(np.frombuffer(scale), np.frombuffer(var), eps)
    return hi.tobytes(), lo.tobytes()


def exact_channel_factors(scale: np.ndarray, var: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """k = scale / sqrt(var + eps) per channel as hi + lo (relative error below 2^-104); var >= 0 or NaN,
    eps > 0 finite. NaN or 0 where k is not a finite nonzero real (NaN or infinite operands, scale = 0):
    those elements take other paths."""
    hi = np.zeros(scale.shape)
    lo = np.zeros(scale.shape)
    eps_ratio = float(eps).as_integer_ratio()
    met: dict[tuple[float, float], tuple[float, float]] = {}  # -0.0 and 0.0 are one key: one value
    for c, (s, v) in enumerate(
        zip(scale.astype(np.float64).tolist(), var.astype(np.float64).tolist(), strict=True)
    ):
        if not (math.isfinite(s) and math.isfinite(v)) or s == 0:
            hi[c] = math.nan if not (math.isfinite(s) and math.isfinite(v)) else 0.0
            continue
        pair = met.get((s, v))
        if pair is None:
            pair = met[(s, v)] = _factor(s, v, eps_ratio)
        hi[c], lo[c] = pair
    return hi, lo


def _factor(s: float, v: float, eps_ratio: tuple[int, int]) -> tuple[float, float]:
    """(hi, lo) of k = s / sqrt(v + eps) for finite s != 0, finite v >= 0."""
    s_num, s_den = s.as_integer_ratio()
    v_num, v_den = v.as_integer_ratio()
    e_num, e_den = eps_ratio
    if v_den >= e_den:  # q = v + eps = q_num / q_den; both denominators are powers of two
        q_num, q_den = v_num + e_num * (v_den // e_den), v_den
    else:
        q_num, q_den = v_num * (e_den // v_den) + e_num, e_den
    num, den = s_num * s_num * q_den, s_den * s_den * q_num  # k^2 = num / den, reduced below
    common = math.gcd(num, den)
    num, den = num // common, den // common
    shift = BITS - (num.bit_length() - den.bit_length()) // 2
    if shift >= 0:  # k = root / 2^shift
        root, below = math.isqrt((num << (2 * shift)) // den), 1 << shift
    else:
        root, below = math.isqrt(num // (den << (-2 * shift))) << -shift, 1
    try:
        k_hi = root / below  # correctly rounded
    except OverflowError:
        k_hi = math.inf
    k_lo = 0.0
    if math.isfinite(k_hi):
        hi_num, hi_den = k_hi.as_integer_ratio()
        k_lo = (root * hi_den - hi_num * below) / (below * hi_den)  # k - hi, correctly rounded
    return (-k_hi, -k_lo) if s < 0 else (k_hi, k_lo)
