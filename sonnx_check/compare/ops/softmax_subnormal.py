"""SOFTMAX-SUBNORMAL-RANGE-LOST (declared at the end of rules/Softmax.toml): tract 0.23.9's Softmax gives
values between 9.7e-39 and 1.7e-38 (near FLT_MIN) where e^(x - M) / sum is a float32 subnormal or 0 (x - M
below about -87.3): its exponential does not reach the subnormal range."""

from __future__ import annotations

import numpy as np

from sonnx_check.compare.judging.known_departures import DivergenceCase, none


def subnormal_range_lost(case: DivergenceCase) -> np.ndarray:
    """float32: a non-negative value below 2·FLT_MIN where SONNX's Softmax is a subnormal or zero."""
    if case.actual.dtype != np.float32:
        return none(case)
    tiny = float(np.finfo(np.float32).tiny)
    with np.errstate(invalid="ignore"):
        below_normal = np.abs(case.expected.astype(np.float64)) < tiny
        near_tiny = (case.actual >= 0) & (case.actual < 2 * tiny)
    return below_normal & near_tiny
