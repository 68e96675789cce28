"""Clip's comparison facts (rules/Clip.toml names them): the predicate of its known onnxruntime departure and
its edge patterns (NaN, crossed and equal bounds)."""

from __future__ import annotations

import numpy as np
import onnx

from sonnx_check.compare.edges.values import Builder, Fed, random_rest
from sonnx_check.compare.judging.known_departures import DivergenceCase, input_value, none


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
