"""ArgMax's comparison facts (rules/ArgMax.toml names them): the predicate of its known onnxruntime
departure and its edge pattern (NaN among ties)."""

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
