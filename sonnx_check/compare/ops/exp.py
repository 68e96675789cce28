"""Exp's comparison facts (rules/Exp.toml names them): its bound and the predicate of its known runtime
departure. Its edge pattern is the shared sweep."""

from __future__ import annotations

import math

import numpy as np

from sonnx_check.compare.judging.floats import EXP_HYPOTHESIS, exp_relative_error
from sonnx_check.compare.judging.known_departures import DivergenceCase, none
from sonnx_check.compare.judging.tolerance import NodeData, Rule, RuleResult


def _exp(data: NodeData) -> RuleResult:
    """err_rel(exp(x)) * max(|Y|, min-normalized): tanh_acc.md's hypothesis on exp, taken as Exp's bound
    (exp_acc.md gives only the propagated error). min-normalized below the normal range, where a relative
    claim means nothing, as div_acc.md and tanh_acc.md bound it. Exact: the float section's rules, NaN,
    -inf -> +0, +inf -> +inf, and X > X_max = ln(largest finite value) -> +inf."""
    x = data.x()
    introduced = exp_relative_error(x, data.fmt) * np.maximum(data.magnitude, data.fmt.min_normal)
    with np.errstate(invalid="ignore"):
        overflow = x > math.log(float(np.finfo(data.fmt.dtype).max))
    return introduced, ~np.isfinite(x) | overflow, ""


BOUND = Rule("err_rel(exp(x))·max(|Y|, min-normalized)", EXP_HYPOTHESIS, _exp)


def nan_to_infinity(case: DivergenceCase) -> np.ndarray:
    """+inf where SONNX's Exp is NaN (a NaN of X)."""
    if case.actual.dtype.kind != "f":
        return none(case)
    return np.isnan(case.expected) & np.isposinf(case.actual)
