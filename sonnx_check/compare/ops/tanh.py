"""Tanh's comparison facts (rules/Tanh.toml names them): its bound and the predicates of its known
runtime departures. Its edge pattern is the shared sweep."""

from __future__ import annotations

import numpy as np

from sonnx_check.compare.judging.floats import ceil_log2
from sonnx_check.compare.judging.known_departures import DivergenceCase, Predicate, doubles, none
from sonnx_check.compare.judging.tolerance import NodeData, Rule, RuleResult
from sonnx_check.compare.ops.clamped_rational import APPROXIMATED, in_output_type, rounding_slack
from sonnx_check.compare.ops.float16_rational import Float16Rational, explained_by


def _tanh(data: NodeData) -> RuleResult:
    """tanh_acc.md's bound for its last reference algorithm, (exp(X) - exp(-X)) / (exp(X) + exp(-X)), the
    most permissive of the four it derives (its constants 17 and 8.5 exceed the 8 / 9 and 4 / 4.5 of the
    others, and the bound grows with them), so a finding is beyond every bound the annex derives; it also
    exceeds the correctly rounded u * max(tanh|x|, min-normalized). With w = e^(-2|x|) and n = 0 for |x| <= 1,
    else the smallest integer with |x| <= 2^n:

        u/(1 + 2w) * ((2 + (17+n)(1+u)w - 2w^2) / ((1+w)(1-u) - (8.5+n/2)u(1+u)w) * (1+u) + 1 - w)

    (the text's formula; its Unit Verification code writes (1+2w)(1-u) in the denominator and n as the
    exponent of x, both tighter). The annex restricts that algorithm to |x| <= 1e7; beyond, w = 0 and the
    bound is ~3u, which every algorithm shares. Exact: NaN, +-inf -> +-1."""
    x = data.x()
    u = data.fmt.u
    n = ceil_log2(np.abs(x))
    w = np.exp(-2.0 * np.abs(x))
    numerator = 2 + (17 + n) * (1 + u) * w - 2 * w * w
    denominator = (1 + w) * (1 - u) - (8.5 + n / 2) * u * (1 + u) * w
    introduced = u / (1 + 2 * w) * (numerator / denominator * (1 + u) + 1 - w)
    return introduced, ~np.isfinite(x), ""


BOUND = Rule(
    "u/(1+2w)·((2+(17+n)(1+u)w−2w²)/((1+w)(1−u)−(8.5+n/2)u(1+u)w)·(1+u)+1−w), w = e^(−2|x|)",
    "tanh_acc.md, bound of its most permissive reference algorithm, (exp(X)−exp(−X))/(exp(X)+exp(−X))",
    _tanh,
)


def _tanh_close_to_one(limit: float, dtype: type) -> Predicate:
    """``dtype`` only, |SONNX| > 0.9 (|x| > 1.47): a result of the same sign within ``limit`` of SONNX's."""

    def predicate(case: DivergenceCase) -> np.ndarray:
        if case.actual.dtype != dtype:
            return none(case)
        e, a = doubles(case)
        with np.errstate(invalid="ignore"):
            return (np.abs(e) > 0.9) & (np.sign(a) == np.sign(e)) & (np.abs(a - e) <= limit)

    return predicate


# TANH-FLOAT-RATIONAL-MLAS (was ORT-TANH-FLOAT-RATIONAL), TANH-DOUBLE-SATURATION-ERROR (ORT-TANH-DOUBLE-EIGEN)
float_rational = _tanh_close_to_one(2.0**-21, np.float32)
double_eigen = _tanh_close_to_one(2.0**-49, np.float64)


# A clamped rational approximation (tract 0.23.9, float32): an absolute error within 2^-20, saturating at
# +-0.9999994 (scalar path) or +-0.99999952 (vector path), never reaching 1, and a NaN clamped to the lower
# end: Tanh(NaN) = -0.9999994. Measured: the largest error 5.96e-7 on 400 001 points in [-20, 20].
RATIONAL_ABSOLUTE = 2.0**-20
RATIONAL_TOP = float(np.array([0x3F7FFFF8], np.uint32).view(np.float32)[0])


def tanh_clamped_rational(case: DivergenceCase) -> np.ndarray:
    """float32, and float16 as the float32 result rounded (clamped_rational.py, where the plateau rounds to
    1): a value within [-0.99999952, 0.99999952] and 2^-20 of SONNX's in absolute terms, or, for a NaN of X,
    the lower plateau (-0.99999952 up to -1 + 2^-20). The elements ``float_rational`` explains (near
    saturation within 2^-21) are left to it: the same kind of approximation, one ID for them."""
    if case.actual.dtype not in APPROXIMATED:
        return none(case)
    e, a = doubles(case)
    top = in_output_type(RATIONAL_TOP, case)
    with np.errstate(invalid="ignore"):
        inside = np.abs(a) <= top
        close = inside & (np.abs(a - e) <= RATIONAL_ABSOLUTE + rounding_slack(case))
        nan_at_plateau = np.isnan(e) & (a >= -top) & (a <= -1 + RATIONAL_ABSOLUTE)
    return (close & ~float_rational(case)) | nan_at_plateau


# tract 0.23.9's float16 Tanh kernel, on the CPUs where it runs one (float16_rational.py): x clamped to
# [-3.84, 3.84], x (0.99963124 + 0.082654955 x^2) / (1 + x^2 (0.41401828 + 0.0065383179 x^2)), every
# operation rounded to float16; it reaches +-1 within the clamp, NaN kept.
FLOAT16_KERNEL = Float16Rational(3.84, (0.082654955, 0.99963124), (0.0065383179, 0.41401828, 1.0))


def tanh_float16_rational(case: DivergenceCase) -> np.ndarray:
    """float16: the elements that are the float16 kernel's result on X, bit for bit."""
    return explained_by(FLOAT16_KERNEL, case)
