"""Pow's comparison facts (rules/Pow.toml names them): its bound, the predicate of its known onnxruntime
departure and its edge pattern (pow.md's special-value table). Its other edge pattern is the shared sweep."""

from __future__ import annotations

import numpy as np
import onnx

from sonnx_check.compare.edges.values import Fed, random_rest
from sonnx_check.compare.judging.floats import EXP_HYPOTHESIS, exp_relative_error
from sonnx_check.compare.judging.known_departures import DivergenceCase, as_output, input_value, none
from sonnx_check.compare.judging.tolerance import NodeData, Rule, RuleResult
from sonnx_check.compare.ops.log import log_introduced


def _pow(data: NodeData) -> RuleResult:
    """Derived (pow_acc.md gives only the propagated error, from d(A^B)/dB = A^B ln A) for the naive reference
    algorithm exp(B ln|A|) in the output type, the most permissive usual one: ln|A| within Log's bound L
    (above), z = B ln|A| rounded once, so |zhat - z| <= Dz = |B| L + u|B|(|ln A| + L); exp(zhat) of relative
    error E = err_rel(exp) at |z| + Dz (tanh_acc.md; its positive branch, the larger):

        (e^Dz (1 + E) - 1) * max(|C|, min-normalized)

    Integer powers by repeated multiplication (B = 2, 3) and sqrt for B = 0.5 are within it. Exact: the
    float section's special-value table (B = +-0, A = 1, NaN, A or B infinite, A = +-0, A = -1, negative A
    with a non-integer B)."""
    a, b = data.x(0), data.x(1)
    u, fmt = data.fmt.u, data.fmt
    with np.errstate(all="ignore"):
        magnitude_a = np.abs(a)
        ln_a = np.abs(np.log(magnitude_a))
        log_bound = log_introduced(magnitude_a, ln_a, fmt)
        dz = np.abs(b) * log_bound + u * np.abs(b) * (ln_a + log_bound)
        z = np.abs(b) * ln_a
        growth = np.exp(dz) * (1 + exp_relative_error(z + dz, fmt)) - 1
        special = (b == 0) | (a == 1) | np.isnan(a) | np.isnan(b) | np.isinf(a) | np.isinf(b)
        special |= (a == 0) | (a == -1) | ((a < 0) & (b != np.round(b)))
    return growth * np.maximum(data.magnitude, fmt.min_normal), special, ""


BOUND = Rule(
    "(e^Δz·(1+err_rel(exp))−1)·max(|C|, min-normalized), z = B·ln|A|",
    "derived: exp(B·ln|A|) in the type, with Log's bound and " + EXP_HYPOTHESIS,
    _pow,
)


def integer_pow_through_double(case: DivergenceCase) -> np.ndarray:
    """int32/int64: the result of pow(double(a), double(b)) converted back to the type, truncated toward
    zero, or the type's minimum where that double is out of range (x86-64's "integer indefinite")."""
    actual = case.actual
    base, exponent = input_value(case, 0), input_value(case, 1)
    if actual.dtype not in (np.int32, np.int64) or base is None or exponent is None:
        return none(case)
    if base.dtype.kind not in "iu" or exponent.dtype.kind not in "iu":
        return none(case)
    base, exponent = as_output(base, case), as_output(exponent, case)
    if base is None or exponent is None:
        return none(case)
    info = np.iinfo(actual.dtype)
    with np.errstate(all="ignore"):
        power = np.power(base.astype(np.float64), exponent.astype(np.float64))
        in_range = np.isfinite(power) & (power >= float(info.min)) & (power < -float(info.min))
        converted = np.trunc(np.where(in_range, power, 0.0)).astype(actual.dtype)
    return actual == np.where(in_range, converted, info.min)


_POW_BASES = (-np.inf, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, np.inf, np.nan)


_POW_EXPONENTS = (-np.inf, -3.0, -2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, np.inf, np.nan)


def pow_table(node: onnx.NodeProto, fed: Fed, rng: np.random.Generator) -> dict[int, np.ndarray] | None:
    """Every pair of pow.md's special-value table when A and B have room for them (flat index i holds base
    i mod 11 and exponent i div 11)."""
    positions = {position: (dtype, shape) for position, dtype, shape in fed}
    if 0 not in positions or 1 not in positions or positions[0][0].kind != "f" or positions[1][0].kind != "f":
        return None
    out = random_rest(fed, rng)
    for position, table, step in ((0, _POW_BASES, 1), (1, _POW_EXPONENTS, len(_POW_BASES))):
        dtype, shape = positions[position]
        index = np.arange(int(np.prod(shape)))
        out[position] = np.asarray(table, dtype=dtype)[(index // step) % len(table)].reshape(shape)
    return out
