"""Where's comparison facts (rules/Where.toml names them): the predicate of its known onnxruntime
departure."""

from __future__ import annotations

import numpy as np

from sonnx_check.compare.judging.known_departures import DivergenceCase, as_output, input_value, none


def where_loses_negative_zero_of_x(case: DivergenceCase) -> np.ndarray:
    """+0 where the condition is true and X is -0."""
    condition, x = input_value(case, 0), input_value(case, 1)
    if case.actual.dtype.kind != "f" or condition is None or x is None:
        return none(case)
    condition, x = as_output(condition.astype(bool), case), as_output(x, case)
    if condition is None or x is None:
        return none(case)
    a = case.actual
    return condition & (x == 0) & np.signbit(x) & (a == 0) & ~np.signbit(a)
