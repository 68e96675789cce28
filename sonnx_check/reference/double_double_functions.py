"""exp, exp - 1 and ln of float64 arrays in double-double (about 106 bits), the one evaluation of each for the
kernels that compute an ideal result: Exp, Sigmoid, Pow and Softmax (``exp_scaled``), Tanh (``expm1_dd``),
Log and Pow (``log_dd``). Each result carries a derived relative error bound (in the docstrings), which the
kernels' certified rounding relies on.

exp reduces x = k*ln2/256 + r (|r| <= ln2/512), reads 2**(j/256) from a 256-entry dd table and sums the Taylor
series of exp(r) - 1; the constants come from the decimal module at 60 digits.
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

import numpy as np

from sonnx_check.reference.double_double import dd_add, dd_mul, dd_mul_d, fast_two_sum, two_prod, two_sum


def _dd_of(value: Fraction) -> tuple[float, float]:
    hi = float(value)
    return hi, float(value - Fraction(hi))


def _split3(value: Fraction, lead_bits: int) -> tuple[float, float, float]:
    """value = c1 + c2 + c3 with c1 of ``lead_bits`` significant bits (so k * c1 is exact for small k)."""
    e = math.floor(math.log2(abs(float(value))))
    scale = Fraction(2) ** (lead_bits - 1 - e)
    c1 = Fraction(round(value * scale)) / scale
    c2 = float(value - c1)
    c3 = float(value - c1 - Fraction(c2))
    return float(c1), c2, c3


with decimal.localcontext() as _ctx:
    _ctx.prec = 60
    _LN2 = Fraction(decimal.Decimal(2).ln())
    # 2**(j/256) for j = 0..255, as dd.
    _TABLE = [
        _dd_of(Fraction((decimal.Decimal(j) / 256 * decimal.Decimal(2).ln()).exp())) for j in range(256)
    ]

_T_HI = np.array([t[0] for t in _TABLE])
_T_LO = np.array([t[1] for t in _TABLE])
_INV_L = float(256 / _LN2)  # 256 / ln 2, rounded: only chooses the reduction multiple
_L1, _L2, _L3 = _split3(_LN2 / 256, 32)  # k * _L1 exact for |k| < 2**21 (|x| < 5600)
_LN2_1, _LN2_2, _LN2_3 = _split3(_LN2, 40)  # e * _LN2_1 exact for |e| < 2**13
_INV_FACT = [_dd_of(Fraction(1, math.factorial(n))) for n in range(10)]
EXP_ARG_LIMIT = 1100.0  # exp(+-1100) overflows / underflows to zero in every profile float type


def _expm1_poly(rh: np.ndarray, rl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """exp(r) - 1 for |r| <= ln2/512 (about 2**-9.5), as dd with relative error below 2**-102.

    Taylor terms r**n/n! up to n = 9 (the first dropped term is below 2**-107 relative to r). The terms of
    degree 6 to 9 contribute less than 2**-56 relative to r and are summed in float64 (error below 2**-109);
    the lower ones in dd (Horner, each step below 2**-104)."""
    t = ((_INV_FACT[9][0] * rh + _INV_FACT[8][0]) * rh + _INV_FACT[7][0]) * rh + _INV_FACT[6][0]
    sh, sl = t, np.zeros_like(t)
    for n in (5, 4, 3, 2, 1):
        sh, sl = dd_mul(sh, sl, rh, rl)
        sh, sl = dd_add(sh, sl, np.asarray(_INV_FACT[n][0]), np.asarray(_INV_FACT[n][1]))  # 0-d: same sums
    return dd_mul(sh, sl, rh, rl)


def _exp_reduce(xh: np.ndarray, xl: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x = k*ln2/256 + r with |r| <= ln2/512 (plus 2**-60): returns (k as float, r as dd).

    x - k*c1 is exact (Sterbenz), k*c2 is split exactly by TwoProduct, and the remaining terms (each below
    2**-70 for |x| <= 1100, or the input's own low part) are summed in float64: absolute error below 2**-115
    plus 2**-53 |xl|."""
    k = np.rint(xh * _INV_L)
    rh = xh - k * _L1
    p2, e2 = two_prod(k, np.asarray(_L2))  # a 0-d array: the same float64 products, typed as arrays
    s, e = two_sum(rh, -p2)
    e = e - e2 + xl - k * _L3
    r_h, r_l = fast_two_sum(s, e)
    return k, r_h, r_l


def _exp_parts(
    xh: np.ndarray, xl: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The steps ``exp_scaled`` and ``expm1_dd`` share: the reduction multiple k (as float), exp(r) - 1 as dd
    (ph, pl), and exp(x) = (mh + ml) * 2**K with K = k div 256 (int64) and mh + ml = T_(k mod 256) (1 + p).

    exp(x) = 2**(k div 256) * 2**((k mod 256)/256) * exp(r): the table value is the dd nearest to
    2**(j/256) (relative error 2**-106), exp(r) = 1 + p with p from ``_expm1_poly``; T*(1+p) costs two dd
    operations. Total: below 2**-100 plus the reduction's absolute error (2**-115 + 2**-53 |xl|)."""
    k, rh, rl = _exp_reduce(xh, xl)
    ph, pl = _expm1_poly(rh, rl)
    j = np.mod(k, 256.0)
    big_k = ((k - j) / 256.0).astype(np.int64)
    j = j.astype(np.intp)
    th, tl = _T_HI[j], _T_LO[j]
    qh, ql = dd_mul(th, tl, ph, pl)
    mh, ml = dd_add(th, tl, qh, ql)
    return k, ph, pl, mh, ml, big_k


def exp_scaled(xh: np.ndarray, xl: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """exp(x) for a finite dd x with |x| <= EXP_ARG_LIMIT, as (mh, ml, K): exp(x) = (mh + ml) * 2**K exactly
    up to a relative error below 2**-98, with mh in [0.99, 2.01] and K an int64 array (derivation at
    ``_exp_parts``). The scaling by 2**K is left to the caller, so nothing underflows inside."""
    _, _, _, mh, ml, big_k = _exp_parts(xh, xl)
    return mh, ml, big_k


def expm1_dd(xh: np.ndarray, xl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """exp(x) - 1 for a finite dd x with |x| <= 100, as dd with relative error below 2**-94.

    Where the reduction multiple k is 0 (|x| <= ln2/512) the polynomial is exp(x) - 1 itself, with full
    relative accuracy however small x is; elsewhere |exp(x) - 1| >= 2**-10 and the subtraction of 1 from the
    dd exp(x) loses at most 10 bits."""
    k, ph, pl, mh, ml, big_k = _exp_parts(xh, xl)
    eh, el = dd_add(np.ldexp(mh, big_k), np.ldexp(ml, big_k), -np.ones_like(mh), np.zeros_like(mh))
    direct = k == 0
    return np.where(direct, ph, eh), np.where(direct, pl, el)


_SQRT_HALF = math.sqrt(0.5)


def log_dd(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ln(x) for finite x > 0 (subnormals included), as dd with relative error below 2**-100.

    x = m * 2**e with m in [sqrt(1/2), sqrt(2)); y0 = numpy's float64 log(m) is only a first guess (any
    relative error up to 2**-35 is tolerated). With d = m*exp(-y0) - 1 = (m - 1) + m*expm1(-y0) (m - 1 is
    exact, expm1 keeps its relative accuracy for small y0), ln(m) = y0 + ln(1 + d) = y0 + d - d**2/2 up to
    |d|**3/3 (below 2**-105 |y0|). Then e*ln2 is added in dd (e*c1 exact)."""
    m, e = np.frexp(x)
    low = m < _SQRT_HALF
    m = np.where(low, m * 2.0, m)
    ef = (e - low).astype(np.float64)
    y0 = np.log(m)
    eh, el = expm1_dd(-y0, np.zeros_like(y0))
    ph, pl = dd_mul_d(eh, el, m)
    dh, dl = dd_add(m - 1.0, np.zeros_like(m), ph, pl)
    dh, dl = dd_add(dh, dl, -0.5 * dh * dh, np.zeros_like(dh))
    lh, ll = dd_add(y0, np.zeros_like(y0), dh, dl)
    p2, e2 = two_prod(ef, np.full_like(ef, _LN2_2))
    ch, cl = fast_two_sum(ef * _LN2_1, p2)
    cl = cl + e2 + ef * _LN2_3
    ch, cl = fast_two_sum(ch, cl)
    return dd_add(ch, cl, lh, ll)
