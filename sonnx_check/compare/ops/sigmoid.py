"""Sigmoid's comparison facts (rules/Sigmoid.toml names them): its bound and the predicates of its
known runtime departures. Its edge pattern is the shared sweep."""

from __future__ import annotations

import numpy as np

from sonnx_check.compare.judging.floats import EXP_HYPOTHESIS, exp_relative_error
from sonnx_check.compare.judging.known_departures import DivergenceCase, doubles, none
from sonnx_check.compare.judging.tolerance import NodeData, Rule, RuleResult
from sonnx_check.compare.ops.clamped_rational import APPROXIMATED, in_output_type, rounding_slack
from sonnx_check.compare.ops.float16_rational import Float16Rational, explained_by


def _sigmoid(data: NodeData) -> RuleResult:
    """Derived for the algorithm of sigmoid_acc.md's Note ("the minimal precision algorithm shall split the
    X domain so that only negative exponents are computed": 1/(1 + exp(-X)) for X >= 0, exp(X)/(1 + exp(X))
    otherwise; sigmoid_acc.md states no introduced error), with t = exp(-|X|) of relative error E =
    err_rel(exp(-|X|)) (tanh_acc.md's hypothesis) and one rounding u per + and /:
      X >= 0: yhat/y = (1+d2)/((1+theta)(1+d1)) with |theta| = |t dE/(1+t)| <= E/2 (t <= 1);
      X < 0:  yhat/y = (1+dE)(1+d2)/((1+theta)(1+d1)).
    So |Y - exact| <= ((1+E)^[X<0] (1+u) / ((1-E/2)(1-u)) - 1) * max(|Y|, min-normalized).
    Exact: NaN, -inf -> +0, +inf -> 1."""
    x = data.x()
    u = data.fmt.u
    e = exp_relative_error(-np.abs(x), data.fmt)
    growth = np.where(x < 0, 1 + e, 1.0) * (1 + u) / ((1 - e / 2) * (1 - u)) - 1
    return growth * np.maximum(data.magnitude, data.fmt.min_normal), ~np.isfinite(x), ""


BOUND = Rule(
    "((1+E)^[x<0]·(1+u)/((1−E/2)(1−u))−1)·max(|Y|, min-normalized), E = err_rel(exp(−|x|))",
    "derived: sigmoid_acc.md's split algorithm with " + EXP_HYPOTHESIS,
    _sigmoid,
)


def sigmoid_float_absolute(case: DivergenceCase) -> np.ndarray:
    """float32, x < 0 (SONNX result below 1/2): a result in [0, 1/2] within 2^-22 of SONNX's, in absolute
    terms (the most measured is 3 * 2^-24, at any x)."""
    if case.actual.dtype != np.float32:
        return none(case)
    e, a = doubles(case)
    with np.errstate(invalid="ignore"):
        return (e < 0.5) & (a >= 0) & (a <= 0.5) & (np.abs(a - e) <= 2.0**-22)


def sigmoid_double_cancellation(case: DivergenceCase) -> np.ndarray:
    """float64, x < 0: a result that is a multiple of 2^-53 (what 1 - t leaves for t in [1/2, 1]) within
    2^-51 of SONNX's (the most measured is 1.5 * 2^-53)."""
    if case.actual.dtype != np.float64:
        return none(case)
    e, a = case.expected, case.actual
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = a * 2.0**53
        on_grid = np.isfinite(scaled) & (scaled == np.floor(scaled))
        return (e < 0.5) & (a >= 0) & (a <= 0.5) & on_grid & (np.abs(a - e) <= 2.0**-51)


# A clamped rational approximation (tract 0.23.9, float32): an absolute error within 2^-21 over the whole
# range, the input clamped (about [-14.5, 14.33]) so the results stay between two plateaus, 4.4703484e-7 and
# 0.99999952, and a NaN clamped to the lower end (a max(x, low) that a NaN fails). Measured: the largest error
# 4.75e-7 on 400 001 points in [-20, 20]; the plateaus the same on its vector and scalar paths.
RATIONAL_ABSOLUTE = 2.0**-21
RATIONAL_PLATEAUS = tuple(float(v) for v in np.array([0x34F00000, 0x3F7FFFF8], np.uint32).view(np.float32))
# the lower plateau as each CPU's kernel gives it (the same version): 4.4703484e-7, or 2^-21 (an AMD EPYC with
# AVX2 and no AVX-512); a NaN of X gives one of them, nothing in between
LOWER_PLATEAUS = (RATIONAL_PLATEAUS[0], 2.0**-21)


def sigmoid_clamped_rational(case: DivergenceCase) -> np.ndarray:
    """float32, and float16 as the float32 result rounded (clamped_rational.py): a value between the two
    plateaus within 2^-21 of SONNX's in absolute terms (its finite and
    infinite inputs), or, for a NaN of X, a lower plateau: what the approximation gives, not any value (a
    result below the lower plateau, as onnxruntime's near-zero ones, is not the approximation's). The
    elements ``sigmoid_float_absolute`` explains (below 1/2, within 2^-22) are left to it: the same
    absolute-error behaviour, so a report names one ID for them whichever runtime gave them."""
    if case.actual.dtype not in APPROXIMATED:
        return none(case)
    e, a = doubles(case)
    low, high = (in_output_type(v, case) for v in RATIONAL_PLATEAUS)
    with np.errstate(invalid="ignore"):
        between = (a >= low) & (a <= high)
        close = between & (np.abs(a - e) <= RATIONAL_ABSOLUTE + rounding_slack(case))
        nan_at_plateau = np.isnan(e) & np.isin(a, [in_output_type(v, case) for v in LOWER_PLATEAUS])
    return (close & ~sigmoid_float_absolute(case)) | nan_at_plateau


# tract 0.23.9's float16 Sigmoid kernel, on the CPUs where it runs one (float16_rational.py): x clamped to
# [-6.92, 6.92], x (0.249895 + x^2 (0.00400222 - 0.0000124702 x^2)) / (1 + 0.098734 x^2) + 1/2, every
# operation rounded to float16; plateaus 2^-10 and 1 - 2^-10, NaN kept.
FLOAT16_KERNEL = Float16Rational(6.92, (-0.0000124702, 0.00400222, 0.249895), (0.098734, 1.0), offset=0.5)


def sigmoid_float16_rational(case: DivergenceCase) -> np.ndarray:
    """float16: the elements that are the float16 kernel's result on X, bit for bit."""
    return explained_by(FLOAT16_KERNEL, case)
