"""Deliberately naive, per-element readings of the SONNX element-wise operators, written separately from the
kernels (no shared code): Python ints for the integer sections, ``fractions.Fraction`` for the exact real
results of +, -, *, / and LeakyRelu's product, ``decimal`` at 60 digits (with a Taylor series near 0 for tanh)
for the transcendental ones, and a rounding to the output type that picks, among the float nearest in
binary64 and its neighbours in the output type, the one closest to the exact value (ties to the even one).

Every function takes and returns Python scalars of one element; ``elementwise`` applies one to arrays.
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

import numpy as np

DIGITS = decimal.Context(prec=60, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


def elementwise(fn, dtype, *arrays):
    """fn applied to each element (as Python scalars) of same-shape arrays; results cast to ``dtype``."""
    out = np.empty(arrays[0].shape, dtype=dtype)
    for index in np.ndindex(*arrays[0].shape):
        out[index] = fn(*(a[index].item() for a in arrays))
    return out


# -- rounding a real number to a float type --------------------------------------------------------------


def _value(f) -> Fraction | None:
    """The exact value of a float (inf stands for 2**emax, the value just past the largest float)."""
    if math.isinf(float(f)):
        info = np.finfo(type(f))
        return Fraction(2) ** info.maxexp * (1 if f > 0 else -1)
    return Fraction(float(f))


def round_to(q: Fraction, dtype) -> float:
    """The float of ``dtype`` nearest to q, ties to the one with an even last bit; beyond the largest
    float by half an ulp or more, infinity."""
    with np.errstate(all="ignore"):
        return _round_to(q, dtype)


def _round_to(q: Fraction, dtype) -> float:
    t = np.dtype(dtype).type
    try:
        guess = t(float(q))
    except OverflowError:
        guess = t(math.inf if q > 0 else -math.inf)
    candidates = [guess, np.nextafter(guess, t(math.inf)), np.nextafter(guess, t(-math.inf))]
    candidates += [np.nextafter(c, t(s * math.inf)) for c in candidates[1:] for s in (1, -1)]
    best = None
    for c in candidates:
        if math.isnan(float(c)):
            continue
        distance = abs(_value(c) - q)
        bits = int(np.array(c).view(f"u{np.dtype(dtype).itemsize}"))
        key = (distance, bits & 1)  # nearest, then even
        if best is None or key < best[0]:
            best = (key, c)
    result = float(best[1])
    if result == 0:
        return math.copysign(0.0, float(q) if q != 0 else 1.0)
    return result


def ulps_apart(result: float, exact: Fraction, dtype) -> Fraction:
    """|result - exact| in units of the spacing of ``dtype`` floats at result (toward exact)."""
    t = np.dtype(dtype).type
    r = t(result)
    with np.errstate(all="ignore"):
        toward = np.nextafter(r, t(math.inf) if exact > _value(r) else t(-math.inf))
    spacing = abs(_value(toward) - _value(r))
    return abs(_value(r) - exact) / spacing


def _dec(x: float) -> decimal.Decimal:
    return decimal.Decimal(x)


# -- exact operators -------------------------------------------------------------------------------------


def abs_(x):
    if isinstance(x, float):
        return math.fabs(x)  # NaN -> NaN, -inf -> inf, -0 -> +0
    return -x if x < 0 else x


def neg_float(x: float) -> float:
    return -x


def wrap(value: int, dtype) -> int:
    bits = 8 * np.dtype(dtype).itemsize
    value %= 1 << bits
    if np.dtype(dtype).kind == "i" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def relu(x):
    if isinstance(x, float) and math.isnan(x):
        return x
    return 0 if x < 0 else x  # -0 is not < 0: it stays -0


def less(a, b) -> bool:
    if isinstance(a, float) and (math.isnan(a) or math.isnan(b)):
        return False
    return a < b


def where(c, x, y):
    return x if c else y


def clip(x, low, high, is_float: bool):
    if is_float:
        low = -math.inf if math.isnan(low) else low
        high = math.inf if math.isnan(high) else high
    if low > high:
        return high
    if x < low:
        return low
    if x > high:
        return high
    return x


# -- correctly rounded operators ---------------------------------------------------------------------------


def _special_binary(op: str, a: float, b: float) -> float | None:
    """IEEE 754 results for NaN and infinite operands, and the sign of exact zeros."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if op == "add" or op == "sub":
        b = -b if op == "sub" else b
        if math.isinf(a) and math.isinf(b):
            return a if a == b else math.nan
        if math.isinf(a) or math.isinf(b):
            return a if math.isinf(a) else b
        if a == 0 and b == 0:
            return -0.0 if math.copysign(1, a) < 0 and math.copysign(1, b) < 0 else 0.0
        return None
    sign = math.copysign(1, a) * math.copysign(1, b)
    if op == "mul":
        if (math.isinf(a) and b == 0) or (math.isinf(b) and a == 0):
            return math.nan
        if math.isinf(a) or math.isinf(b):
            return sign * math.inf
        if a == 0 or b == 0:
            return sign * 0.0
        return None
    # div
    if (math.isinf(a) and math.isinf(b)) or (a == 0 and b == 0):
        return math.nan
    if math.isinf(a) or b == 0:
        return sign * math.inf
    if math.isinf(b) or a == 0:
        return sign * 0.0
    return None


def arithmetic(op: str, a, b, dtype):
    if np.dtype(dtype).kind in "iu":
        if op == "div":
            q = abs(a) // abs(b)
            return wrap(q if (a < 0) == (b < 0) else -q, dtype)
        return wrap({"add": a + b, "sub": a - b, "mul": a * b}[op], dtype)
    special = _special_binary(op, a, b)
    if special is not None:
        return special
    fa, fb = Fraction(a), Fraction(b)
    exact = {"add": fa + fb, "sub": fa - fb, "mul": fa * fb, "div": fa / fb if fb else None}[op]
    if exact == 0:  # x - x and x + (-x) give +0 in round to nearest
        return 0.0
    return round_to(exact, dtype)


def sqrt(x: float, dtype) -> float:
    if math.isnan(x) or x < 0:
        return math.nan
    if x == 0 or math.isinf(x):
        return x
    return round_to(Fraction(DIGITS.sqrt(_dec(x))), dtype)


def leaky_relu(x: float, alpha: float, dtype) -> float:
    if math.isnan(x) or not x < 0:
        return x
    if math.isnan(alpha):
        return math.nan
    if math.isinf(x) or math.isinf(alpha):
        if alpha == 0:
            return math.nan
        return math.copysign(math.inf, alpha * (-1.0))
    if alpha == 0:
        return -0.0 if math.copysign(1, alpha) > 0 else 0.0
    return round_to(Fraction(alpha) * Fraction(x), dtype)


# -- transcendental operators: exact real values -----------------------------------------------------------


def exact_exp(x: float) -> Fraction:
    return Fraction(DIGITS.exp(_dec(x)))


def exact_log(x: float) -> Fraction:
    return Fraction(DIGITS.ln(_dec(x)))


def exact_sigmoid(x: float) -> Fraction:
    return Fraction(DIGITS.divide(1, DIGITS.add(1, DIGITS.exp(-_dec(x)))))


def exact_tanh(x: float) -> Fraction:
    if abs(x) < 1e-5:  # the series: the next term, 62 x**9 / 2835, is below 1e-40 relative
        f = Fraction(x)
        return f - f**3 / 3 + 2 * f**5 / 15 - 17 * f**7 / 315
    e = DIGITS.exp(-2 * abs(_dec(x)))  # may underflow to 0 for huge |x|: tanh is then +-1 to 60 digits
    return math.copysign(1, x) * Fraction(DIGITS.divide(DIGITS.subtract(1, e), DIGITS.add(1, e)))


def exp(x: float, dtype) -> float:
    if math.isnan(x):
        return x
    if math.isinf(x):
        return math.inf if x > 0 else 0.0
    if x > 1200:
        return math.inf
    if x < -1200:
        return 0.0
    return round_to(exact_exp(x), dtype)


def log(x: float, dtype) -> float:
    if math.isnan(x):
        return x
    if x < 0:
        return math.nan
    if x == 0:
        return -math.inf
    if math.isinf(x):
        return math.inf
    if x == 1:
        return 0.0
    return round_to(exact_log(x), dtype)


def sigmoid(x: float, dtype) -> float:
    if math.isnan(x):
        return x
    if math.isinf(x):
        return 1.0 if x > 0 else 0.0
    if x < -1200:
        return 0.0
    return round_to(exact_sigmoid(x), dtype)


def tanh(x: float, dtype) -> float:
    if math.isnan(x):
        return x
    if math.isinf(x):
        return math.copysign(1.0, x)
    if x == 0:
        return x  # the sign of zero is kept
    return round_to(exact_tanh(x), dtype)


def _is_int(b: float) -> bool:
    return math.isfinite(b) and b == math.floor(b)


def _is_odd(b: float) -> bool:
    return _is_int(b) and abs(b) < 2**53 and int(b) % 2 == 1


def exact_pow(a: float, b: float) -> Fraction:
    """|a|**b: exact for an integer b, else decimal's power correctly rounded to 60 digits (so exact when
    the result has fewer digits, as 25**11.5 = 5**23 does, a midpoint between two doubles)."""
    if _is_int(b) and abs(b) <= 4000:
        return Fraction(abs(a)) ** int(b)
    return Fraction(DIGITS.power(_dec(abs(a)), _dec(b)))


def pow_(a: float, b: float, dtype) -> float:
    """The float section's table, case by case."""
    if b == 0 or a == 1:
        return 1.0
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if math.isinf(b):
        if abs(a) == 1:
            return 1.0
        return 0.0 if (abs(a) < 1) == (b > 0) else math.inf
    if a == 0:
        negative_zero = math.copysign(1, a) < 0
        if b < 0:
            return -math.inf if negative_zero and _is_odd(b) else math.inf
        return -0.0 if negative_zero and _is_odd(b) else 0.0
    if math.isinf(a):
        if a > 0:
            return math.inf if b > 0 else 0.0
        if b > 0:
            return -math.inf if _is_odd(b) else math.inf
        return -0.0 if _is_odd(b) else 0.0
    if a < 0 and not _is_int(b):
        return math.nan
    estimate = b * math.log(abs(a))
    if estimate > 1200:
        magnitude = math.inf
    elif estimate < -1200:
        magnitude = 0.0
    else:
        magnitude = round_to(exact_pow(a, b), dtype)
    return -magnitude if a < 0 and _is_odd(b) else magnitude


def int_pow(a: int, b: int, dtype) -> int:
    return wrap(a**b, dtype)
