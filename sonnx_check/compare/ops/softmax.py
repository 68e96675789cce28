"""Softmax's comparison facts (rules/Softmax.toml names them): its bound, the predicates of its known
runtime departures and its edge patterns (rows holding +inf, rows of -inf, rows spread wide)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx

from sonnx_check.compare.edges.values import Fed, first_float, random_rest
from sonnx_check.compare.inputs.datasets import random_array
from sonnx_check.compare.judging.floats import EXP_HYPOTHESIS, exp_relative_error, gamma
from sonnx_check.compare.judging.known_departures import DivergenceCase, attribute, input_value, none
from sonnx_check.compare.judging.tolerance import NodeData, Rule, RuleResult
from sonnx_check.reference import fast_bounds


def _softmax(data: NodeData) -> RuleResult:
    """Derived (softmax.md links a softmax_acc.md that is not published) for the text's formula, Y[i] =
    e^(X[i] - M) / sum_j e^(X[j] - M): with d_j = X[j] - M rounded (u|d_j|), t_j = exp(d_j) of relative error
    E_j = err_rel(exp(d_j)) (tanh_acc.md), each term is within e_j = (1 + E_j) e^(u|d_j|) - 1 of e^(d_j); the
    sum of the n terms, in any order, within gamma_(n-1) of the sum of the computed terms, itself within
    eta = sum_j Y[j] e_j of the exact sum (the weights are the outputs); the division, even as a reciprocal
    and a product, two roundings:

        ((1 + e_i)(1+u)^2 / ((1 - eta)(1 - gamma_(n-1))) - 1) * max(|Y[i]|, min-normalized)

    Exact: the float section's rules, a slice holding NaN or +inf (all NaN) and X[i] = -inf (+0)."""
    if (fast := fast_bounds.softmax(data)) is not None:  # the same values, block by block (issue 21)
        return fast
    x = data.x()
    axis = int(data.attrs.get("axis", -1)) % max(x.ndim, 1)
    fmt, u = data.fmt, data.fmt.u
    with np.errstate(all="ignore"):
        finite = np.isfinite(x)
        poisoned = (np.isnan(x) | (x == np.inf)).any(axis=axis, keepdims=True)
        top = np.max(np.where(finite, x, -np.inf), axis=axis, keepdims=True)
        d = np.where(finite, np.abs(x - top), 0.0)
        term = (1 + exp_relative_error(-d, fmt)) * np.exp(u * d) - 1
        weights = np.where(finite, np.abs(data.expected.astype(np.float64)), 0.0)
        eta = (1 + 2 * u) * np.sum(weights * term, axis=axis, keepdims=True)
        g = gamma(x.shape[axis] - 1, u)
        growth = (1 + term) * (1 + u) ** 2 / ((1 - eta) * (1 - g)) - 1
        growth = np.where((eta < 1) & (g < 1), growth, np.inf)
    exact = np.broadcast_to(poisoned, x.shape) | (x == -np.inf)
    return growth * np.maximum(data.magnitude, fmt.min_normal), exact, f" with n = {x.shape[axis]}"


# The reference kernel's own error is within 0.5 ulp + 2^-21 ulp (reference/softmax.py): 1 ulp.
BOUND = Rule(
    "((1+e_i)(1+u)²/((1−η)(1−γ_(n−1)))−1)·max(|Y|, min-normalized)",
    "derived: softmax.md's e^(X−M)/Σe^(X−M) with " + EXP_HYPOTHESIS,
    _softmax,
    reference_ulps=1.0,
    # evaluated where the judging needs it (compare/judging/elements.py)
    deferred=fast_bounds.softmax_deferred,
)


def softmax_row_all_neg_inf(case: DivergenceCase) -> np.ndarray:
    """NaN results in a slice (along the axis) whose elements are all -inf."""
    sliced = _float_input_and_axis(case)
    if sliced is None:
        return none(case)
    x, axis = sliced
    all_neg_inf = np.broadcast_to(np.isneginf(x).all(axis=axis, keepdims=True), x.shape)
    return all_neg_inf & np.isnan(case.actual)


def _with_slices(
    node: onnx.NodeProto, fed: Fed, rng: np.random.Generator, fill: Callable[[np.ndarray], None]
) -> dict[int, np.ndarray] | None:
    """Random data whose slices along the Softmax axis ``fill`` rewrites (an array [slices, length])."""
    first = first_float(fed)
    if first is None:
        return None
    position, dtype, shape = first
    axis = next((a.i for a in node.attribute if a.name == "axis"), -1)
    axis = axis + len(shape) if axis < 0 else axis
    if not 0 <= axis < len(shape) or 0 in shape:
        return None  # a scalar, an axis outside the shape, or an empty tensor: no slice to fill
    values = np.moveaxis(random_array(dtype, shape, rng), axis, -1).copy()
    rows = values.reshape(-1, shape[axis])
    with np.errstate(over="ignore"):
        fill(rows)
    return {**random_rest(fed, rng), position: np.moveaxis(rows.reshape(values.shape), -1, axis).copy()}


def inf_in_rows(node: onnx.NodeProto, fed: Fed, rng: np.random.Generator) -> dict[int, np.ndarray] | None:
    def fill(rows: np.ndarray) -> None:
        picks = rng.integers(0, rows.shape[1], size=rows.shape[0])
        rows[np.arange(rows.shape[0]), picks] = np.inf
        rows[::3, 0] = np.inf  # some rows hold two

    return _with_slices(node, fed, rng, fill)


def neg_inf_rows(node: onnx.NodeProto, fed: Fed, rng: np.random.Generator) -> dict[int, np.ndarray] | None:
    def fill(rows: np.ndarray) -> None:
        rows[::2] = -np.inf
        rows[1::2, ::2] = -np.inf

    return _with_slices(node, fed, rng, fill)


def wide_rows(node: onnx.NodeProto, fed: Fed, rng: np.random.Generator) -> dict[int, np.ndarray] | None:
    """Large values (exp overflows unless the maximum is subtracted) and rows spread so far apart that
    their smallest results are subnormal or zero."""

    def fill(rows: np.ndarray) -> None:
        info = np.finfo(rows.dtype)
        reach = 1.2 * float(np.log(info.max) - np.log(info.smallest_subnormal))
        rows[::2] += np.asarray(0.9 * np.log(info.max), dtype=rows.dtype)
        rows[1::2] = -np.linspace(0.0, reach, rows.shape[1], dtype=np.float64).astype(rows.dtype)

    return _with_slices(node, fed, rng, fill)


def inf_slice_one_hot(case: DivergenceCase) -> np.ndarray:
    """+0 at the finite and -inf elements of a slice holding +inf or NaN, where SONNX's slice is NaN
    everywhere (the runtime gives NaN only at the +inf and NaN elements: exp(x - max) with max = +inf)."""
    sliced = _float_input_and_axis(case)
    if sliced is None:
        return none(case)
    x, axis = sliced
    poisoned = (np.isnan(x) | np.isposinf(x)).any(axis=axis, keepdims=True)
    ordinary = ~np.isnan(x) & ~np.isposinf(x)
    actual = case.actual
    return np.broadcast_to(poisoned, x.shape) & ordinary & (actual == 0) & ~np.signbit(actual)


def _float_input_and_axis(case: DivergenceCase) -> tuple[np.ndarray, int] | None:
    """X (a float input of the output's shape) and Softmax's axis made non-negative; None where either is
    missing or out of range."""
    x = input_value(case, 0)
    if x is None or x.dtype.kind != "f" or x.shape != case.actual.shape or x.ndim == 0:
        return None
    axis = int(attribute(case.node, "axis", -1))
    axis = axis + x.ndim if axis < 0 else axis
    return (x, axis) if 0 <= axis < x.ndim else None
