"""LeakyRelu's comparison facts (rules/LeakyRelu.toml names them): its bound and the predicate of its
known runtime departure (LEAKYRELU-ZERO-TIMES-ALPHA)."""

from __future__ import annotations

import numpy as np

from sonnx_check.compare.judging.floats import gamma
from sonnx_check.compare.judging.known_departures import DivergenceCase, attribute, none
from sonnx_check.compare.judging.tolerance import NodeData, Rule, RuleResult


def _leaky_relu(data: NodeData) -> RuleResult:
    """Y = X where X is not negative (leakyrelu.md's float section, -0 and NaN included): exact there. Where
    X < 0, Y = alpha X: alpha (a float attribute) rounded to the output type, or the product formed in a wider
    type and rounded, then one IEEE 754 multiplication (accuracy.md, Example 4: |x||y|u): at most two
    roundings, gamma_2 * max(|alpha X|, min-normalized). leakyrelu_acc.md gives only the propagated error."""
    x = data.x()
    alpha = float(np.float32(data.attrs.get("alpha", 0.01)))
    negative = x < 0
    with np.errstate(all="ignore"):
        product = np.maximum(np.abs(alpha * x), data.fmt.min_normal)
    return np.where(negative, gamma(2, data.fmt.u) * product, 0.0), ~negative, ""


BOUND = Rule(
    "γ_2·max(|α·X|, min-normalized) for X < 0, exact otherwise",
    'derived: accuracy.md Example 4, "|IE(f)| ≤ |x|×|y|×u", α rounded to the type',
    _leaky_relu,
)


def zero_times_alpha(case: DivergenceCase) -> np.ndarray:
    """A zero of X given alpha * X (IEEE 754, in X's type), where SONNX keeps the zero: NaN for a NaN or
    infinite alpha, the zero of the other sign for a negative alpha. What a runtime computing
    ``x > 0 ? x : alpha * x`` gives; any other value at a zero of X is not that."""
    x = case.inputs[0] if case.inputs else None
    if x is None or x.dtype.kind != "f" or x.shape != case.actual.shape or case.actual.dtype != x.dtype:
        return none(case)
    alpha = x.dtype.type(np.float32(attribute(case.node, "alpha", 0.01)))
    with np.errstate(all="ignore"):
        product = alpha * x
    same_nan = np.isnan(product) & np.isnan(case.actual)
    same_value = (product == case.actual) & (np.signbit(product) == np.signbit(case.actual))
    return (x == 0) & (same_nan | same_value)
