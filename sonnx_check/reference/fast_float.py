"""The fast path of the transcendental kernels for float16 and float32: float64 arithmetic with a proven error
bound, a per-element certificate, and the double-double path only for the elements the certificate cannot
decide.

A float16 or float32 result needs far fewer bits than a double carries. Each function here computes its value
in plain float64 operations (every one correctly rounded, IEEE 754) and comes with a bound on the relative
error of the result, derived at the function. ``narrow_certified`` rounds the float64 value ``p`` to the
narrow type and flags the elements for which some value within ``p * (1 +- E)`` (E: the bound times a safety
factor) could round differently: a rounding boundary (a midpoint between two neighbouring results, or the
overflow threshold) lies in the error interval. Only those go to the double-double kernel (which certifies
them again, and falls back to 100-digit decimal arithmetic). So the result is the correctly rounded one for
every element, as before; only the cost changed: a float32 result has 29 bits below its last place in a
double, and an error bound of 2**-48 leaves about one element in a million undecided.

The arguments are the float64 values of float16 or float32 inputs (24 significant bits at most), which some
derivations use: products with constants of 28 or fewer bits are exact.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from sonnx_check.reference import fast_float_tables

# -- certifying the rounding to float16 / float32 ----------------------------------------------------------

_SAFETY = 4.0  # the certificate uses four times each derived bound


def narrow_certified(p: np.ndarray, dtype: np.dtype, error: float) -> tuple[np.ndarray, np.ndarray]:
    """``p`` (float64, any sign, may be 0 or infinite) rounded to ``dtype`` (float16 or float32), and the mask
    of the elements whose correct rounding the relative error bound ``error`` of ``p`` cannot decide.

    For |p| in the normal range of ``dtype``, the rounding boundaries are the midpoints between neighbouring
    results, where the bits of the double below ``dtype``'s last place read 100...0; the exact value lies
    within |p| * E = at most E * 2**53 units in the last place of ``p`` (for E = 2**-46, 512 units), so the
    element is undecided when those bits are that close to the midpoint pattern. The overflow threshold
    (the largest finite value plus half a unit) is such a midpoint. Above 2**(emax+1) every value of the
    interval overflows; below a quarter of the smallest subnormal every value rounds to zero. In the
    subnormal range of ``dtype`` both ends of the interval are rounded and compared. Converting a double to
    a narrower type is itself correctly rounded (round to nearest even, subnormals and overflow included).
    """
    info = np.finfo(dtype)
    e = error * _SAFETY
    with np.errstate(over="ignore"):
        y = p.astype(dtype)
    drop = 52 - info.nmant  # bits of a double below the narrow type's last place
    tolerance = int(math.ceil(e * 2.0**53)) + 2
    magnitude = np.abs(p)
    low = magnitude.view(np.uint64) & np.uint64((1 << drop) - 1)
    low -= np.uint64((1 << (drop - 1)) - tolerance)  # wraps around below: then far above 2 * tolerance
    undecided = low <= np.uint64(2 * tolerance)
    if not magnitude.size:
        return y, undecided
    smallest_normal = float(info.smallest_normal)
    beyond = 2.0 ** (info.maxexp)  # at or above it, every value of the error interval overflows
    if float(magnitude.min()) < smallest_normal:
        sub = magnitude < smallest_normal
        m = p[sub]
        with np.errstate(all="ignore"):
            undecided[sub] = (m * (1 + 2 * e)).astype(dtype) != (m * (1 - 2 * e)).astype(dtype)
    if float(magnitude.max()) >= beyond:
        undecided[magnitude >= beyond] = False
    return y, undecided


# -- exp -----------------------------------------------------------------------------------------------------

_EXP_BITS = 10  # the table: 2**(j/1024)
with decimal.localcontext() as _ctx:
    _ctx.prec = 60
    _LN2 = Fraction(decimal.Decimal(2).ln())
# the double nearest 2**(j/1024), j < 1024: fast_float_tables.py holds them (deriving them here took a tenth
# of a second of every comparison's start-up); a test derives them again from 60-digit arithmetic
_TABLE = fast_float_tables.floats(fast_float_tables.EXP_TABLE)


def _split(value: Fraction, lead_bits: int) -> tuple[float, float]:
    exponent = math.floor(math.log2(abs(float(value))))
    scale = Fraction(2) ** (lead_bits - 1 - exponent)
    lead = Fraction(round(value * scale)) / scale
    return float(lead), float(value - lead)


_INV_L = float((1 << _EXP_BITS) / _LN2)  # only chooses the reduction multiple k
_L1, _L2 = _split(_LN2 / (1 << _EXP_BITS), 32)  # k * _L1 exact for |k| < 2**21
_MAGIC = 1.5 * 2.0**52  # adding it rounds to an integer, which the low bits of the double then hold
_MAGIC_BITS = int(np.float64(_MAGIC).view(np.int64))
EXP_LIMIT = 200.0  # beyond, exp overflows (or is below a quarter of the smallest subnormal) in both types

# exp_fast's relative error: the table value 2**-53, the reduction about 2**-64, the degree-3 polynomial's
# truncation |r|**4/24 <= 2**-50.6 for |r| <= ln2/2048 (2**-11.56), its evaluation about 2**-62, the product
# T*q and the sum T + T*q 2**-64 and 2**-53; adding K to the exponent field is exact in the normal range.
# Total below 2**-50.1.
EXP_ERROR = 2.0**-49.5


def exp_fast(v: np.ndarray) -> np.ndarray:
    """e**v for float64 v (clipped to +-EXP_LIMIT), relative error below EXP_ERROR.

    v = k ln2/1024 + r with |r| <= ln2/2048: k = rint(v 1024/ln2) (read from the double's low bits after
    adding 1.5*2**52), r = (v - k L1) - k L2 where k L1 is exact (L1 has 32 bits, |k| < 2**19) and so is
    the subtraction (Sterbenz: v and k L1 are within a factor 2 when k != 0); k L2 and the last subtraction
    err by at most 2**-53 |r| + 2**-75. Then e**v = 2**(k div 1024) T[k mod 1024] (1 + q) with
    q = r + r**2/2 + r**3/6 and T[j] the double nearest 2**(j/1024); the power of two is added to the
    exponent field (the results stay between 2**-290 and 2**290: normal doubles)."""
    v = np.clip(v, -EXP_LIMIT, EXP_LIMIT)
    t = v * _INV_L
    t += _MAGIC
    k = t.view(np.int64) - _MAGIC_BITS
    t -= _MAGIC  # k as a double, exactly
    r = t * _L1
    np.subtract(v, r, out=r)
    t *= _L2
    r -= t
    q = r * (1 / 6)
    q += 0.5
    q *= r
    q += 1.0
    q *= r
    table = _TABLE[k & ((1 << _EXP_BITS) - 1)]
    q *= table
    q += table
    k >>= _EXP_BITS
    k <<= 52
    q.view(np.int64)[...] += k
    return q


# -- log -----------------------------------------------------------------------------------------------------

_LOG_BITS = 7  # table index: the leading 7 bits of the significand's fraction
_UPPER = 53  # j >= 53: m >= 1 + 53/128 > sqrt(2), read as (m/2) * 2**(e+1)
_C = np.empty(1 << _LOG_BITS)  # about 1/m_j at the middle of each interval, to 20 bits (m * C is exact)
_LOG_C = np.empty(1 << _LOG_BITS)  # -ln(C_j), or -ln(2 C_j) for j >= _UPPER, rounded to double
with decimal.localcontext() as _ctx:
    _ctx.prec = 60
    for _j in range(1 << _LOG_BITS):
        _middle = 1 + (Fraction(_j) + Fraction(1, 2)) / (1 << _LOG_BITS)
        _c = Fraction(round((1 / _middle) * 2**20), 2**20)
        if _j == 0:
            _c = Fraction(1)  # m in [1, 1 + 2**-7): r = m - 1, and ln x = ln(1 + r) for x near 1 from above
        if _j == (1 << _LOG_BITS) - 1:
            _c = Fraction(1, 2)  # m/2 in [1 - 2**-8, 1): r = m/2 - 1, and ln x = ln(1 + r) near 1 from below
        _C[_j] = float(_c)
_LOG_C[:] = fast_float_tables.floats(fast_float_tables.LOG_C)  # -ln(C_j) (-ln(2 C_j)), derived as _TABLE
_LN2_HI, _LN2_LO = _split(_LN2, 40)  # e * _LN2_HI exact for |e| < 2**13
_LOG_POLY = [(-1) ** (n + 1) / n for n in range(1, 8)]  # ln(1 + r) = r - r**2/2 + ... + r**7/7

# log_fast's relative error. Where e' = 0 and j is 0 or 127 (x in [1 - 2**-8, 1 + 2**-7)), the result is
# the polynomial of the exact r: truncation |r|**7/8 <= 2**-52 relative, evaluation about 2**-52. Elsewhere
# with e' = 0 (x in [0.70, 1.42)), |ln x| >= 2**-8 and -ln C_j (2**-53 relative) and the polynomial
# (|r| <= 2**-7.9) are within a factor 1.5 of the result. With e' != 0, |ln x| >= 0.34 and the terms are at
# most 3 times larger; e' ln2 errs by 2**-93. With the three additions: below 2**-50.5 in every case.
LOG_ERROR = 2.0**-50


def log_fast(v: np.ndarray) -> np.ndarray:
    """ln(v) for v > 0, the float64 value of a positive finite float16 or float32 (a normal double with at
    most 24 significant bits), relative error below LOG_ERROR.

    v = 2**e m with m in [1, 2), j = the leading 7 bits of m's fraction; where m > sqrt(2) (j >= 53),
    v = 2**(e+1) (m/2) instead, so that e' = 0 exactly for v in [0.70, 1.42) and e' ln2 never cancels
    against ln m. r = m C_j - 1 is exact (m has 24 bits, C_j 21, and m C_j is within 2**-7.9 of 1:
    Sterbenz); ln v = e' ln2 + L_j + ln(1 + r) with L_j = -ln C_j (-ln 2 C_j where j >= 53)."""
    bits = v.view(np.int64)
    j = (bits >> (52 - _LOG_BITS)) & ((1 << _LOG_BITS) - 1)
    e = (bits >> 52) - 1023
    e += j >= _UPPER
    m = ((bits & ((1 << 52) - 1)) | (1023 << 52)).view(np.float64)
    r = m * _C[j]
    r -= 1.0
    q = r * _LOG_POLY[6]
    for c in (_LOG_POLY[5], _LOG_POLY[4], _LOG_POLY[3], _LOG_POLY[2], _LOG_POLY[1]):
        q += c
        q *= r
    q += 1.0
    q *= r  # ln(1 + r)
    ef = e.astype(np.float64)
    head = ef * _LN2_HI
    tail = ef * _LN2_LO
    tail += _LOG_C[j]
    tail += q
    head += tail
    return head


# -- tanh ----------------------------------------------------------------------------------------------------

_TANH_SMALL = 2.0**-4
# tanh(a) = a (1 + z (c1 + z (c2 + ...))) with z = a**2; terms to a**11 (the next is below 2**-56 a)
_TANH_SERIES = [-1 / 3, 2 / 15, -17 / 315, 62 / 2835, -1382 / 155925]
# tanh_fast's relative error: for |a| < 2**-4 the series (truncation 2**-56, evaluation about 2**-52);
# above, (1 - e)/(1 + e) with e = exp_fast(-2a): e's error is magnified by e/(1 - e) <= 7.5 in 1 - e
# (2**-46.6), by at most 1/2 in 1 + e, plus three roundings. Total below 2**-46.3.
TANH_ERROR = 2.0**-46


def tanh_fast(v: np.ndarray) -> np.ndarray:
    """tanh(v) for finite float64 v, relative error below TANH_ERROR (the sign of zero kept)."""
    a = np.abs(v)
    e = exp_fast(-2.0 * a)
    p = 1.0 - e
    e += 1.0
    p /= e
    small = a < _TANH_SMALL
    if small.any():
        s = a[small]
        z = s * s
        q = z * _TANH_SERIES[4]
        for c in reversed(_TANH_SERIES[:4]):
            q += c
            q *= z
        q *= s
        q += s
        p[small] = q
    return np.copysign(p, v)


# -- sigmoid -------------------------------------------------------------------------------------------------

# sigmoid_fast's relative error: e = exp_fast(-v) with EXP_ERROR, 1 + e adds one rounding and at most e's
# own relative error, the division one rounding. Total below 2**-49.2.
SIGMOID_ERROR = 2.0**-49


def sigmoid_fast(v: np.ndarray) -> np.ndarray:
    """1/(1 + e**-v) for finite float64 v, relative error below SIGMOID_ERROR. Beyond |v| = 200 the value
    is 1 or below a quarter of the smallest float32 subnormal, as the exact one."""
    d = exp_fast(-v)
    d += 1.0
    return np.divide(1.0, d, out=d)


# -- the frame the kernels use -------------------------------------------------------------------------------


def certified_chunk(
    x: np.ndarray,
    dtype: np.dtype,
    fast: Callable[[np.ndarray], np.ndarray],
    error: float,
    exact_chunk: Callable[[np.ndarray, np.dtype], np.ndarray],
    domain: Callable[[np.ndarray], np.ndarray] = np.isfinite,
) -> np.ndarray:
    """One chunk of a float16 or float32 kernel: ``fast`` (relative error below ``error``) on the elements in
    its ``domain``, certified; ``exact_chunk`` (the double-double kernel, correctly rounded) on the others
    (special values) and on the undecided elements."""
    inside = domain(x)
    every = bool(inside.all())
    xs = x if every else x[inside]
    y, undecided = narrow_certified(fast(xs.astype(np.float64)), dtype, error)
    if undecided.any():
        where = np.flatnonzero(undecided)
        y[where] = exact_chunk(xs[where], dtype)
    if every:
        return y
    out = np.empty_like(x)
    out[inside] = y
    outside = ~inside
    out[outside] = exact_chunk(x[outside], dtype)
    return out
