"""What SIGMOID-CLAMPED-RATIONAL and TANH-CLAMPED-RATIONAL share: tract 0.23.9 evaluates its float32
rational approximation for float16 too and rounds the result to float16 (all 65 536 float16 inputs give the
float32 result rounded, benchmarks/probe_tract_activations.py). A float16 element is the approximation's when
it is within the float32 absolute error plus the two float16 roundings (the runtime's and SONNX's) of
SONNX's, and a plateau is the float32 plateau rounded to float16."""

from __future__ import annotations

import numpy as np

from sonnx_check.compare.judging.known_departures import DivergenceCase

APPROXIMATED = (np.dtype(np.float32), np.dtype(np.float16))  # float16 through float32


def in_output_type(value: float, case: DivergenceCase) -> float:
    """A float32 plateau of the approximation as the runtime returns it in the output's type."""
    return float(case.actual.dtype.type(np.float32(value)))


def rounding_slack(case: DivergenceCase) -> np.ndarray | float:
    """Half a unit in the last place of the runtime's result and of SONNX's, in float16 (the float32
    result rounded, against SONNX's correctly rounded one); nothing for float32, the measured type."""
    if case.actual.dtype != np.float16:
        return 0.0
    with np.errstate(invalid="ignore"):
        ulps = np.spacing(np.abs(case.actual)).astype(np.float64) + np.spacing(np.abs(case.expected))
    return np.where(np.isfinite(ulps), ulps / 2, 0.0)
