"""The IEEE 754 formats the accuracy bounds are written in: u, the spacing of a format (ulp), Higham's
gamma_n, and tanh_acc.md's hypothesis on exp that the derived bounds share (accuracy.py says how they are
used)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Format:
    """The parameters of one IEEE 754 binary format that the bounds use."""

    dtype: np.dtype
    precision: int  # p, significand bits including the implicit one
    emin: int  # exponent of the smallest normal number
    emax: int

    @property
    def u(self) -> float:
        """Unit roundoff 2^-p (eps / 2)."""
        return 2.0**-self.precision

    @property
    def min_normal(self) -> float:
        return 2.0**self.emin

    @property
    def min_subnormal(self) -> float:
        return 2.0 ** (self.emin - self.precision + 1)


def float_format(dtype: np.dtype | type) -> Format:
    info = np.finfo(dtype)
    return Format(np.dtype(dtype), int(info.nmant) + 1, int(info.minexp), int(info.maxexp) - 1)


def ulp(values: np.ndarray, fmt: Format) -> np.ndarray:
    """The spacing of ``fmt`` at each |value| (float64): 2^(e - p + 1) with 2^e <= |value| < 2^(e+1), the
    subnormal spacing 2^(emin - p + 1) at zero and below the normal range, the spacing at the largest finite
    value for +-inf and NaN. From the float64 exponent field: no frexp/ldexp pass over the data."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    field = np.bitwise_and(bits, np.uint64(0x7FF << 52))  # the exponent field alone (no sign): a new array
    np.clip(field, np.uint64((fmt.emin + 1023) << 52), np.uint64((fmt.emax + 1023) << 52), out=field)
    shift = np.uint64((fmt.precision - 1) << 52)
    if fmt.emin + 1023 > fmt.precision - 1:  # every spacing is a normal float64 (float16, float32)
        field -= shift
        return field.view(np.float64)
    low = field <= shift  # a float64 subnormal spacing (float64 values below 2^-970)
    exponent = (field[low] >> np.uint64(52)).astype(np.int64) - 1023 - (fmt.precision - 1)
    field[low] = shift + np.uint64(1 << 52)  # placeholder, overwritten below
    out = (field - shift).view(np.float64)
    out[low] = np.ldexp(1.0, exponent)
    return out


def gamma(n: int | np.ndarray, u: float) -> float | np.ndarray:
    """gamma_n = n u / (1 - n u) (Higham, Lemma 3.1), +inf where n u >= 1 (no bound exists)."""
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(n * u < 1, n * u / (1 - n * u), np.inf)
    return g if g.ndim else float(g)


def exp_relative_error(x: np.ndarray, fmt: Format) -> np.ndarray:
    """tanh_acc.md's hypothesis on exp, the relative error err_rel(exp(x)): 2 eps on [-1, 0], (2 + n/2) eps on
    [-2^n, -1], 2.5 eps on [0, 1], (2 + (n+1)/2) eps on [1, 2^n], n the smallest integer >= 0 that holds |x|
    (the interval of the text that is the tightest for x; larger n bound it too, more loosely)."""
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    n = ceil_log2(a)
    n *= 0.5
    n += 2.0  # 2 + n/2: every term is a multiple of 1/2 below 2**10, so the sums below are exact
    value = np.where(a <= 1, 2.0, n)
    value += np.where(x <= 0, 0.0, 0.5)  # positive x (and NaN): 2.5, or 2 + (n + 1)/2
    value *= 2.0 * fmt.u
    return value


def ceil_log2(a: np.ndarray) -> np.ndarray:
    """The smallest integer n >= 0 with a <= 2^n (0 for a <= 1, 1023 for inf and NaN). From the float64
    fields of max(a, 1): the exponent, plus one unless the significand is exactly 1 (frexp is slow)."""
    a = np.asarray(a, dtype=np.float64)
    bits = np.maximum(a, 1.0).view(np.int64)
    n = (bits >> 52) - 1023
    n += (bits & ((1 << 52) - 1)) != 0
    return np.where(np.isfinite(a), n, 1023).astype(np.float64)


# The hypothesis on exp the derived bounds of Exp, Sigmoid, Log, Pow and Softmax take (their ``source``).
EXP_HYPOTHESIS = (
    'tanh_acc.md: "let us suppose that the exp function has a 2ε accuracy in the interval [−1, 0]" …'
)
