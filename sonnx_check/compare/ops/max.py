"""Max's comparison facts (rules/Max.toml names them): the predicates of its known runtime departures (Max
is exact and has no bound; SIGNED-ZERO-UNORDERED, declared by MaxPool, concerns it too: the zero a
runtime gives by operand order, first or last, is that entry's)."""

from __future__ import annotations

import numpy as np

from sonnx_check.compare.judging.known_departures import DivergenceCase, as_output, none


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
