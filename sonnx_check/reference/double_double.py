"""Error-free transformations and double-double arithmetic on float64 arrays, shared by the kernels that
compute an ideal result (the element-wise transcendental group, Softmax, Range).

A double-double value is a pair (hi, lo) of float64 arrays with hi = RN(hi + lo). TwoSum, FastTwoSum and
TwoProduct are exact in binary64 round-to-nearest as long as nothing overflows or underflows; the callers
keep magnitudes far from both ends.
"""

from __future__ import annotations

import numpy as np

_SPLITTER = 134217729.0  # 2**27 + 1: Veltkamp's split of a 53-bit significand into two 26-bit halves


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knuth's TwoSum: s = RN(a + b) and the exact error a + b - s (no condition on |a|, |b|)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def fast_two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's FastTwoSum, exact when |a| >= |b| (or a = 0)."""
    s = a + b
    return s, b - (s - a)


def split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = _SPLITTER * a
    hi = t - (t - a)
    return hi, a - hi


def two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's TwoProduct: p = RN(a * b) and the exact error a * b - p."""
    p = a * b
    ah, al = split(a)
    bh, bl = split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def dd_add(ah: np.ndarray, al: np.ndarray, bh: np.ndarray, bl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Accurate double-double addition (QD's ieee_add; relative error below 2**-104 for any signs)."""
    s, e = two_sum(ah, bh)
    t, f = two_sum(al, bl)
    e = e + t
    s, e = fast_two_sum(s, e)
    e = e + f
    return fast_two_sum(s, e)


def dd_mul(ah: np.ndarray, al: np.ndarray, bh: np.ndarray, bl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Double-double product (relative error below 2**-104)."""
    p, e = two_prod(ah, bh)
    e = e + (ah * bl + al * bh)
    return fast_two_sum(p, e)


def dd_mul_d(ah: np.ndarray, al: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """dd times a float64."""
    p, e = two_prod(ah, b)
    e = e + al * b
    return fast_two_sum(p, e)


def dd_div(ah: np.ndarray, al: np.ndarray, bh: np.ndarray, bl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Double-double quotient (QD's accurate_div, relative error below 2**-102): three quotient digits, each
    remainder computed in double-double."""
    q1 = ah / bh
    ph, pl = dd_mul_d(bh, bl, q1)
    rh, rl = dd_add(ah, al, -ph, -pl)
    q2 = rh / bh
    ph, pl = dd_mul_d(bh, bl, q2)
    rh, rl = dd_add(rh, rl, -ph, -pl)
    q3 = rh / bh
    q1, q2 = fast_two_sum(q1, q2)
    return dd_add(q1, q2, q3, np.zeros_like(q3))
