"""Range's comparison facts (rules/Range.toml names them): the bound of its float section and the predicate
of its known onnxruntime departure."""

from __future__ import annotations

import numpy as np

from sonnx_check.compare.judging.floats import gamma
from sonnx_check.compare.judging.known_departures import DivergenceCase, input_value, none
from sonnx_check.compare.judging.tolerance import NodeData, Rule, RuleResult


def _range(data: NodeData) -> RuleResult:
    """The text's formula Y[i] = S + i * D (range.md, "Numerical Accuracy (-- IGNORE --)") evaluated in the
    type: i * D rounded, then + S rounded (or one fused rounding): |Y[i] - exact| <= gamma_2 (|S| + i|D|),
    plus 2u min-normalized below the normal range. Exact: Y[0] = S. An implementation that accumulates
    Y[i] = Y[i-1] + D drifts beyond it (about i u (|S| + i|D|))."""
    start, delta = float(data.x(0)), float(data.x(2))
    i = np.arange(data.expected.size, dtype=np.float64).reshape(data.expected.shape)
    u = data.fmt.u
    introduced = gamma(2, u) * (abs(start) + i * abs(delta)) + 2 * u * data.fmt.min_normal
    return introduced, i == 0, ""


BOUND = Rule(
    "γ_2·(|S| + i·|D|)",
    "derived: range.md's Y[i] = S + i·D evaluated in the type, accuracy.md's u per rounding",
    _range,
)


def range_accumulated(case: DivergenceCase) -> np.ndarray:
    """Float Range: Y[i] equal, bit for bit, to S + D + ... + D (i additions, each rounded to the type)."""
    actual = case.actual
    start, delta = input_value(case, 0), input_value(case, 2)
    if actual.dtype.kind != "f" or actual.ndim != 1 or start is None or delta is None:
        return none(case)
    if start.size != 1 or delta.size != 1 or start.dtype != actual.dtype or delta.dtype != actual.dtype:
        return none(case)
    terms = np.full(actual.shape, delta.reshape(()), dtype=actual.dtype)
    if terms.size:
        terms[0] = start.reshape(())
    with np.errstate(over="ignore", invalid="ignore"):
        accumulated = np.add.accumulate(terms, dtype=actual.dtype)  # sequential, rounded at every step
    return (accumulated == actual) | (np.isnan(accumulated) & np.isnan(actual))
