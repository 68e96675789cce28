"""Pow reference kernel (SONNX, based on Pow-15), written from ops/pow/pow.md.

A, B and C have one type (Pow.A.C2) and one shape (Pow.A.C1: no broadcasting).

Float section (float16, float, double). The special cases are the section's table, which is C99/IEEE 754
``pow``'s; where two of its rows overlap the kernel takes IEEE 754's precedence, applied in this order:

1. B = +-0 gives 1 (even for a NaN A); 2. A = +1 gives 1 (even for a NaN B: the "A = +1" row, not the
"B = NaN" row, as IEEE 754 and C99 state); 3. any other NaN gives NaN; 4. A = -1 and B = +-inf give 1;
5. B = +-inf: +0 or +inf by |A| < 1 or > 1 (the infinity rows, not the "negative A, non-integer B" NaN row:
an infinite B is not a non-integer there); 6. A = +-0: B < 0 gives +-inf (sign of A for an odd integer B,
+inf otherwise), B > 0 gives +-0 likewise; 7. A = +-inf likewise; 8. A < 0 with a non-integer B gives NaN
(also when B is a float next to an integer: the text's Example 5); 9. A = -1 (B an integer) gives -1 for an
odd B and 1 otherwise; 10. otherwise |A|**B, negated for A < 0 and an odd integer B.

Own error (case 10): the correctly rounded result. |A|**B = exp(B * ln|A|) in double-double: ln with relative
error below 2**-100, times B exactly (TwoProduct), so an exponent of magnitude up to 1100 carries an absolute
error below 2**-88, and exp adds 2**-98; beyond +-1100 the result overflows or is 0 in every type. The
value is rounded at both ends of a 2**-80 error interval; an element whose two roundings differ is
recomputed exactly: with Fraction arithmetic when B is an integer (|B| <= 1100) or half an odd integer
with A a perfect square (the only ways |A|**B can be exactly a midpoint between two floats, as 11**7 is in
float), and from Python's decimal at 100 digits otherwise.

Int section (int32, int64): A**B by repeated squaring with wrap-around modulo 2**n (the text calls overflow
implementation dependent; the profile's integer arithmetic wraps); 0**0 = 1. A negative B is outside the
section's domain (constraint C3, rule Pow.B.C3): raised as ``DataConstraintError`` before anything is
computed.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import onnx

from sonnx_check.reference.elementwise_common import (
    EXP_ARG_LIMIT,
    FLOATS,
    binary_operands,
    chunked,
    dd_mul_d,
    exp_scaled,
    high_precision,
    is_integral,
    is_odd_integer,
    log_dd,
    new_output,
    operands,
    raise_if_any,
    resolve_undecided,
    round_certified,
)

INT_TYPES = (np.dtype(np.int32), np.dtype(np.int64))
_EXACT_EXPONENT_LIMIT = 1100


def power(a: np.ndarray, b: np.ndarray, *, max_elements: int | None = None) -> np.ndarray:
    a, b, dtype, shape = binary_operands("Pow", a, b, FLOATS + INT_TYPES)
    c = new_output("Pow", "C", shape, dtype, max_elements)
    if dtype in INT_TYPES:
        raise_if_any(
            b < 0, op="Pow", rule="Pow.B.C3", role="B", what="are negative integer exponents", shape=shape
        )
        return chunked(c, _int_chunk, a, b)
    return chunked(c, lambda x, y: _float_chunk(x, y, dtype), a, b)


def _int_chunk(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    result = np.ones_like(a)
    base = a.copy()
    exponent = b.copy()
    while exponent.any():  # one pass per bit of the largest exponent (at most 63)
        odd = (exponent & 1).astype(bool)
        result[odd] *= base[odd]
        base *= base
        exponent >>= 1
    return result


def _float_chunk(a: np.ndarray, b: np.ndarray, dtype: np.dtype) -> np.ndarray:
    x, y = a.astype(np.float64), b.astype(np.float64)
    c = np.empty(a.shape, dtype)
    odd = is_odd_integer(y)
    rules: list[tuple[np.ndarray, np.ndarray | float]] = [
        (y == 0, 1.0),
        (x == 1, 1.0),
        (np.isnan(x) | np.isnan(y), np.nan),
        ((x == -1) & np.isinf(y), 1.0),
        (np.isinf(y), np.where((np.abs(x) < 1) == (y > 0), 0.0, np.inf)),
        (x == 0, np.where(y < 0, np.where(odd, np.copysign(np.inf, x), np.inf), np.where(odd, x, 0.0))),
        (x == np.inf, np.where(y > 0, np.inf, 0.0)),
        (x == -np.inf, np.where(y > 0, np.where(odd, -np.inf, np.inf), np.where(odd, -0.0, 0.0))),
        ((x < 0) & ~is_integral(y), np.nan),
        (x == -1, np.where(odd, -1.0, 1.0)),  # an integer B here; |A| = 1 is exact (and ln|A| = 0)
    ]
    decided = np.zeros(a.shape, bool)
    for mask, value in rules:
        todo = mask & ~decided
        c[todo] = np.broadcast_to(value, a.shape)[todo]
        decided |= todo
    general = ~decided
    magnitude = np.abs(x[general])
    exponent = y[general]
    lh, ll = log_dd(magnitude)
    approx = exponent * lh
    overflow, underflow = approx > EXP_ARG_LIMIT, approx < -EXP_ARG_LIMIT
    exponent_in_range = np.where(overflow | underflow, 0.0, exponent)
    th, tl = dd_mul_d(lh, ll, exponent_in_range)
    mh, ml, k = exp_scaled(th, tl)
    r, undecided = round_certified(mh, ml, k, dtype)
    resolve_undecided(r, undecided & ~overflow & ~underflow, exact_magnitude, magnitude, exponent)
    r[overflow] = np.inf
    r[underflow] = 0.0
    negative = (x[general] < 0) & odd[general]
    c[general] = np.where(negative, -r, r)
    return c


def exact_magnitude(a: float, b: float) -> Fraction:
    """|a|**b exactly when it is rational in a way that can fall on a midpoint, else at 100 digits."""
    base = Fraction(abs(a))
    if b == int(b) and abs(b) <= _EXACT_EXPONENT_LIMIT:
        return base ** int(b)
    twice = 2 * b
    if twice == int(twice) and abs(b) <= _EXACT_EXPONENT_LIMIT:
        num, den = math.isqrt(base.numerator), math.isqrt(base.denominator)
        if num * num == base.numerator and den * den == base.denominator:
            return Fraction(num, den) ** int(twice)
    ctx = high_precision()
    return Fraction(ctx.exp(ctx.multiply(decimal.Decimal(b), ctx.ln(decimal.Decimal(abs(a))))))


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    a, b = operands("Pow", inputs, ["A", "B"])
    return [power(a, b, max_elements=max_elements)]
