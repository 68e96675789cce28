"""Clip's comparison facts (rules/Clip.toml names them): the predicates of its known runtime departures and
its edge patterns (NaN, crossed and equal bounds)."""

from __future__ import annotations

import numpy as np
import onnx

from sonnx_check.compare.edges.values import Builder, Fed, random_rest
from sonnx_check.compare.judging.known_departures import DivergenceCase, as_output, input_value, none
from sonnx_check.compare.ops.div import same_floats


def clip_crossed_bounds_keeps_nan(case: DivergenceCase) -> np.ndarray:
    """NaN results for NaN elements of X when both bounds are numbers and min > max."""
    x, low, high = input_value(case, 0), input_value(case, 1), input_value(case, 2)
    if case.actual.dtype.kind != "f" or x is None or low is None or high is None:
        return none(case)
    if low.size != 1 or high.size != 1 or x.shape != case.actual.shape:
        return none(case)
    low_value, high_value = float(low.reshape(())), float(high.reshape(()))
    if not low_value > high_value:  # also False when a bound is NaN
        return none(case)
    return np.isnan(x) & np.isnan(case.actual)


def _clip_bounds(low: float, high: float) -> Builder:
    def build(node: onnx.NodeProto, fed: Fed, rng: np.random.Generator) -> dict[int, np.ndarray] | None:
        positions = {position: (dtype, shape) for position, dtype, shape in fed}
        if 1 not in positions or 2 not in positions:
            return None  # one bound only (or a held one): nothing to cross
        if np.isnan(low) and positions[1][0].kind != "f":
            return None  # an integer bound has no NaN (a cast of NaN would warn and give an arbitrary bound)
        out = random_rest(fed, rng)
        out[1] = np.full(positions[1][1], low, dtype=positions[1][0])
        out[2] = np.full(positions[2][1], high, dtype=positions[2][0])
        return out

    return build


nan_bounds = _clip_bounds(np.nan, np.nan)
crossed_bounds = _clip_bounds(1.0, -1.0)
equal_bounds = _clip_bounds(0.5, 0.5)


def _bound(case: DivergenceCase, position: int) -> np.ndarray | None:
    value = input_value(case, position)
    return None if value is None or value.dtype != case.actual.dtype else as_output(value, case)


def nan_to_lower_bound(case: DivergenceCase) -> np.ndarray:
    """The lower bound where X is NaN and SONNX's Clip is NaN: max(x, min) evaluated with a comparison that a
    NaN fails, so the bound is kept (OpenVINO and tract measured with constant bounds)."""
    x, low = input_value(case, 0), _bound(case, 1)
    if case.actual.dtype.kind != "f" or x is None or x.shape != case.actual.shape:
        return none(case)
    if low is None:  # SONNX's Clip requires both bounds (Clip.bounds): no default to stand in for min
        return none(case)
    return np.isnan(x) & np.isnan(case.expected) & ~np.isnan(low) & same_floats(case.actual, low)


def zero_bound_sign(case: DivergenceCase) -> np.ndarray:
    """The bound's zero where X is the other zero: Clip(-0, min = +0) = +0 (a runtime's max picks the
    bound when the two compare equal) where the text's comparisons keep X."""
    x = input_value(case, 0)
    if case.actual.dtype.kind != "f" or x is None or x.shape != case.actual.shape:
        return none(case)
    actual, expected = case.actual, case.expected
    other_zero = (x == 0) & (actual == 0) & (expected == 0) & (np.signbit(actual) != np.signbit(expected))
    from_bound = np.zeros(actual.shape, dtype=bool)
    for position in (1, 2):
        bound = _bound(case, position)
        if bound is not None:
            from_bound |= (bound == 0) & (np.signbit(bound) == np.signbit(actual))
    return other_zero & from_bound
