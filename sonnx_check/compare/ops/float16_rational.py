"""A rational approximation evaluated in float16 arithmetic, each operation rounded to float16: what a float16
kernel computes where it keeps no wider intermediate. x is clamped first (a NaN stays NaN), the numerator
x·P(x²) and the denominator Q(x²) are evaluated by Horner's rule, the quotient (plus an offset) rounded once
more.

SIGMOID-FLOAT16-RATIONAL and TANH-FLOAT16-RATIONAL are tract 0.23.9's float16 kernels (its generic float16
Sigmoid and Tanh), which it runs on some CPUs instead of rounding its float32 result (SIGMOID- and
TANH-CLAMPED-RATIONAL): on an AMD EPYC with AVX2, FMA and F16C and no AVX-512, all 65 536 float16 inputs gave
exactly this evaluation (benchmarks/probe_tract_activations.py). An element is explained where it is this
evaluation, bit for bit: the kernel's error (up to 2^-9 absolute, and a plateau of 2^-10 for Sigmoid) is far
beyond Sigmoid's and Tanh's float16 bounds, and a bound that wide would explain other errors too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sonnx_check.compare.judging.known_departures import DivergenceCase, input_value, none


def _half(value: float) -> np.float16:
    """A constant as the kernel holds it: written in float32, converted to float16."""
    return np.float16(np.float32(value))


@dataclass(frozen=True)
class Float16Rational:
    """``clamp``: x is clamped to [-clamp, clamp]; ``numerator``: P's coefficients from the highest power of
    x² down (the numerator is x·P(x²)); ``denominator``: Q's, down to its constant; ``offset`` added last."""

    clamp: float
    numerator: tuple[float, ...]
    denominator: tuple[float, ...]
    offset: float = 0.0

    def __call__(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float16)
        with np.errstate(all="ignore"):
            bound = _half(self.clamp)
            x = np.where(np.isnan(x), x, np.clip(x, -bound, bound)).astype(np.float16)
            x2 = x * x
            p = np.full_like(x, _half(self.numerator[0]))
            for coefficient in self.numerator[1:]:
                p = x2 * p + _half(coefficient)
            p = p * x
            q = np.full_like(x, _half(self.denominator[0]))
            for coefficient in self.denominator[1:]:
                q = x2 * q + _half(coefficient)
            result = p / q
            if self.offset:
                result = result + _half(self.offset)
        return np.asarray(result, dtype=np.float16)


def explained_by(kernel: Float16Rational, case: DivergenceCase) -> np.ndarray:
    """float16: the elements that are ``kernel``'s evaluation on X, bit for bit (NaN for NaN)."""
    x = input_value(case, 0)
    if case.actual.dtype != np.float16 or x is None or x.dtype != np.float16 or x.shape != case.actual.shape:
        return none(case)
    value = kernel(x)
    same_bits = value.view(np.uint16) == case.actual.view(np.uint16)
    return same_bits | (np.isnan(value) & np.isnan(case.actual))
