"""ArgMax's comparison facts (rules/ArgMax.toml names them): the predicates of its known runtime departures
and its edge pattern (NaN among ties)."""

from __future__ import annotations

import numpy as np
import onnx

from sonnx_check.compare.edges.values import Fed, first_float, random_rest
from sonnx_check.compare.inputs.datasets import random_array
from sonnx_check.compare.judging.known_departures import DivergenceCase, attribute, input_value, none


def argmax_slice_holds_nan(case: DivergenceCase) -> np.ndarray:
    """Every output element whose reduced slice of X holds a NaN."""
    x = input_value(case, 0)
    if x is None or x.dtype.kind != "f" or x.ndim == 0:
        return none(case)
    axis = int(attribute(case.node, "axis", 0))
    axis = axis + x.ndim if axis < 0 else axis
    if not 0 <= axis < x.ndim:
        return none(case)
    holds = np.isnan(x).any(axis=axis, keepdims=bool(attribute(case.node, "keepdims", 1)))
    return holds if holds.shape == case.actual.shape else none(case)


def nan_among_ties(node: onnx.NodeProto, fed: Fed, rng: np.random.Generator) -> dict[int, np.ndarray] | None:
    first = first_float(fed)
    if first is None:
        return None
    position, dtype, shape = first
    values = np.round(random_array(dtype, shape, rng) / 4).astype(dtype)  # few distinct values: ties
    flat = values.reshape(-1)
    flat[rng.random(size=flat.size) < 0.05] = np.nan
    return {**random_rest(fed, rng), position: values}


def _slices(case: DivergenceCase) -> tuple[np.ndarray, int, bool] | None:
    """X with the reduced axis last, the axis, keepdims; None where the output is not ArgMax's of X."""
    x = input_value(case, 0)
    if x is None or x.dtype.kind != "f" or x.ndim == 0 or case.actual.dtype.kind not in "iu":
        return None
    axis = int(attribute(case.node, "axis", 0))
    axis = axis + x.ndim if axis < 0 else axis
    if not 0 <= axis < x.ndim or x.shape[axis] == 0:
        return None
    keepdims = bool(attribute(case.node, "keepdims", 1))
    expected_shape = np.sum(np.zeros(x.shape, np.int8), axis=axis, keepdims=keepdims).shape
    if expected_shape != case.actual.shape:
        return None
    return np.moveaxis(x, axis, -1), axis, keepdims


def _as_output(values: np.ndarray, keepdims: bool, axis: int) -> np.ndarray:
    """A mask over the slices, shaped as ArgMax's output."""
    return np.expand_dims(values, axis) if keepdims else values


def nan_ignored(case: DivergenceCase) -> np.ndarray:
    """A slice holding NaN and a number gives the index the slice would give without its NaN (the first
    maximum, or the last with select_last_index = 1), where SONNX gives NaN priority."""
    found = _slices(case)
    if found is None:
        return none(case)
    rows, axis, keepdims = found
    nan = np.isnan(rows)
    with np.errstate(invalid="ignore"):
        top = np.max(np.where(nan, -np.inf, rows), axis=-1, keepdims=True)
        candidates = ~nan & (rows == top)
    length = rows.shape[-1]
    if attribute(case.node, "select_last_index", 0):
        index = length - 1 - np.argmax(candidates[..., ::-1], axis=-1)
    else:
        index = np.argmax(candidates, axis=-1)
    concerned = nan.any(axis=-1) & ~nan.all(axis=-1)
    return _as_output(concerned & (index == _squeezed(case.actual, axis, keepdims)), keepdims, axis)


def _squeezed(values: np.ndarray, axis: int, keepdims: bool) -> np.ndarray:
    return np.squeeze(values, axis) if keepdims else values


def all_neg_inf_first_index(case: DivergenceCase) -> np.ndarray:
    """Index 0 for a slice whose elements are all -inf with select_last_index = 1, where SONNX gives the
    last index (every element ties)."""
    found = _slices(case)
    if found is None or not attribute(case.node, "select_last_index", 0):
        return none(case)
    rows, axis, keepdims = found
    all_neg_inf = np.isneginf(rows).all(axis=-1)
    return _as_output(all_neg_inf & (_squeezed(case.actual, axis, keepdims) == 0), keepdims, axis)
