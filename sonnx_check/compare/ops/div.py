"""Div's comparison facts (rules/Div.toml names them): the predicate of its known runtime departure. Div is
correctly rounded and has no bound of its own."""

from __future__ import annotations

import numpy as np

from sonnx_check.compare.judging.known_departures import DivergenceCase, as_output, input_value, none


def same_floats(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bit-level equality of two float arrays of one type: NaN equals NaN, +0 and -0 differ."""
    with np.errstate(invalid="ignore"):
        same = (a == b) & (np.signbit(a) == np.signbit(b))
    return same | (np.isnan(a) & np.isnan(b))


def reciprocal_product(case: DivergenceCase) -> np.ndarray:
    """The quotient computed as a * (1 / b), each step rounded to the output type: the element equals
    fl(a * fl(1 / b)) where SONNX's is the correctly rounded a / b (up to 1 ulp apart, and 0 * inf = NaN or
    an overflowed reciprocal where the quotient is finite)."""
    a, b = input_value(case, 0), input_value(case, 1)
    dtype = case.actual.dtype
    if dtype.kind != "f" or a is None or b is None or a.dtype != dtype or b.dtype != dtype:
        return none(case)
    with np.errstate(all="ignore"):
        reciprocal = (dtype.type(1) / b).astype(dtype)
        product = as_output((a * reciprocal).astype(dtype), case)
    if product is None:
        return none(case)
    return same_floats(case.actual, product)
