"""Log's comparison facts (rules/Log.toml names them): its bound (Pow's bound reuses its terms). Its edge
pattern is the shared sweep."""

from __future__ import annotations

import math

import numpy as np

from sonnx_check.compare.judging.floats import EXP_HYPOTHESIS, Format, gamma
from sonnx_check.compare.judging.tolerance import NodeData, Rule, RuleResult


def _log_terms(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """|k ln 2| and |ln m| for x = m 2^k, m in [sqrt(1/2), sqrt(2)) (x > 0 finite; anything for others)."""
    with np.errstate(all="ignore"):
        fraction, exponent = np.frexp(x)  # x = f 2^e, f in [0.5, 1)
        low = fraction < math.sqrt(0.5)
        m = np.where(low, 2 * fraction, fraction)
        k = np.where(low, exponent - 1, exponent).astype(np.float64)
        return np.abs(k) * math.log(2.0), np.abs(np.log(m))


def log_introduced(x: np.ndarray, magnitude: np.ndarray, fmt: Format) -> np.ndarray:
    u = fmt.u
    k_ln2, ln_m = _log_terms(x)
    return (1 + u) * (gamma(2, u) * k_ln2 + 4 * u * ln_m) + u * magnitude + u * fmt.min_normal


def _log(data: NodeData) -> RuleResult:
    """Derived (log_acc.md gives only the propagated error) for the usual reference algorithm x = m 2^k,
    m in [sqrt(1/2), sqrt(2)), ln x = k ln 2 + ln m: ln 2 rounded and k ln 2 rounded (gamma_2), ln m with a
    relative error 2 eps = 4u on the reduced interval (tanh_acc.md's hypothesis on exp, "a 2 eps accuracy in
    the interval [-1, 0]", taken for ln on its own), one rounding for the sum (u):

        (1+u)(gamma_2 |k ln 2| + 4u |ln m|) + u |Y| + u min-normalized

    Exact: the float section's rules, NaN, X < 0 -> NaN, +-0 -> -inf, +inf -> +inf."""
    x = data.x()
    introduced = log_introduced(x, data.magnitude, data.fmt)
    return introduced, ~(np.isfinite(x) & (x > 0)), ""


BOUND = Rule(
    "(1+u)(γ_2·|k·ln2| + 4u·|ln m|) + u·|Y|, x = m·2^k",
    "derived: k·ln2 + ln m with ln m at 2ε, the hypothesis of " + EXP_HYPOTHESIS,
    _log,
)
