"""Relu's comparison facts (rules/Relu.toml names them): the predicates of its known runtime departures. Relu
is exact and has no bound or edge pattern of its own."""

from __future__ import annotations

import numpy as np

from sonnx_check.compare.judging.known_departures import DivergenceCase, none


def nan_to_zero(case: DivergenceCase) -> np.ndarray:
    """+0 where SONNX's Relu is NaN (a NaN of X): max(x, 0) evaluated with a comparison NaN fails."""
    if case.actual.dtype.kind != "f":
        return none(case)
    return np.isnan(case.expected) & (case.actual == 0) & ~np.signbit(case.actual)


def negative_zero_to_positive(case: DivergenceCase) -> np.ndarray:
    """+0 where SONNX's Relu is -0 (X = -0: relu.md keeps X where X >= 0, and -0 >= 0)."""
    if case.actual.dtype.kind != "f":
        return none(case)
    expected, actual = case.expected, case.actual
    return (expected == 0) & np.signbit(expected) & (actual == 0) & ~np.signbit(actual)
