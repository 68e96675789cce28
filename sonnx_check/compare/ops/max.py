"""Max's comparison facts (rules/Max.toml names them): the predicates of its known runtime departures (Max
is exact and has no bound; SIGNED-ZERO-UNORDERED, declared by MaxPool, concerns it too: the zero a
runtime gives by operand order, first or last, is that entry's)."""

from __future__ import annotations

import numpy as np

from sonnx_check.compare.judging.known_departures import DivergenceCase, as_output, none
from sonnx_check.compare.ops.div import same_floats


def _operands(case: DivergenceCase) -> np.ndarray | None:
    """Max's operands broadcast to the output, stacked on a last axis in input order (None if one is
    unknown or of another type)."""
    stacked = []
    for value in case.inputs:
        if value is None or value.dtype != case.actual.dtype:
            return None
        shaped = as_output(np.asarray(value), case)
        if shaped is None:
            return None
        stacked.append(shaped)
    return np.stack(stacked, axis=-1) if stacked else None


def nan_dropped(case: DivergenceCase) -> np.ndarray:
    """A number where SONNX's Max is NaN (NaN absorbs): the maximum of the operands that are not NaN, the
    NaN skipped (one runtime keeps or drops it depending on the operands' order)."""
    operands = _operands(case)
    if case.actual.dtype.kind != "f" or operands is None:
        return none(case)
    nan = np.isnan(operands)
    with np.errstate(invalid="ignore"):
        top = np.max(np.where(nan, -np.inf, operands), axis=-1)
    actual = case.actual
    some_number = ~nan.all(axis=-1)
    return np.isnan(case.expected) & some_number & ~np.isnan(actual) & (actual == top)


def double_as_float(case: DivergenceCase) -> np.ndarray:
    """float64 Max computed in float32: the element equals the maximum of the operands converted to float32
    (out-of-range values to the largest finite float32), widened back, where SONNX keeps binary64."""
    operands = _operands(case)
    if case.actual.dtype != np.float64 or operands is None:
        return none(case)
    largest = float(np.finfo(np.float32).max)
    with np.errstate(over="ignore", invalid="ignore"):
        # a saturating conversion (OpenVINO measured: 1e300 -> 3.4028235e38, not inf); NaN and inf kept
        finite = np.isfinite(operands)
        narrowed = np.where(finite, np.clip(operands, -largest, largest), operands).astype(np.float32)
    from sonnx_check import reference

    try:
        computed = reference.run_node(case.node, [narrowed[..., k] for k in range(narrowed.shape[-1])])[0]
    except reference.ReferenceError:
        return none(case)
    return same_floats(case.actual, np.asarray(computed).astype(np.float64))
