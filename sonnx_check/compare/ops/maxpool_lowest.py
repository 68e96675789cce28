"""MAXPOOL-INDEX-ZERO-FOR-LOWEST-WINDOW (declared at the end of rules/MaxPool.toml): a runtime that starts
each window's maximum at the type's lowest finite value and replaces it only on a strictly greater element
keeps its initial index, the first element of the window's own (batch, channel) plane (0 in the first
channel), when the window's largest real element IS that lowest value (float -FLT_MAX, int8
-128, uint8 0); SONNX's Indices designate the first real element equal to the maximum. The all -inf or NaN
windows are MAXPOOL-INDEX-ZERO-FOR-EMPTY-WINDOW's; this entry takes the windows that hold the lowest value."""

from __future__ import annotations

import numpy as np

from sonnx_check.compare.judging.known_departures import DivergenceCase, attribute, none
from sonnx_check.compare.ops.maxpool import plane_starts, window_values


def _lowest(dtype: np.dtype) -> float | int | None:
    if dtype.kind == "f":
        return float(np.finfo(dtype).min)
    if dtype.kind in "iu":
        return int(np.iinfo(dtype).min)
    return None


def index_zero_for_lowest_window(case: DivergenceCase) -> np.ndarray:
    """Indices: the first element of the output's own plane (0 in the first channel) for a window whose
    real elements hold the type's lowest finite value and none above it, where SONNX gives the index of the
    first of them."""
    x = case.inputs[0] if case.inputs else None
    if x is None or x.ndim != 4 or case.actual.ndim != 4 or case.actual.shape[:2] != x.shape[:2]:
        return none(case)
    if attribute(case.node, "auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        return none(case)
    lowest = _lowest(x.dtype)
    if lowest is None or case.actual.dtype.kind not in "iu":
        return none(case)
    values, valid = window_values(x, case.node, case.actual.shape)
    with np.errstate(invalid="ignore"):
        at_lowest = (valid & (values == lowest)).any(axis=-1)
        above = (valid & (values > lowest)).any(axis=-1)
    return at_lowest & ~above & (case.actual == plane_starts(x))
