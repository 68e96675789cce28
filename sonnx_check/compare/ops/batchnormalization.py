"""BatchNormalization's comparison facts (rules/BatchNormalization.toml names them): its bound, the
predicate of its known onnxruntime departure and its edge pattern (parameters at their extremes)."""

from __future__ import annotations

import numpy as np
import onnx

from sonnx_check.compare.edges.values import Fed, random_rest
from sonnx_check.compare.judging.floats import gamma
from sonnx_check.compare.judging.known_departures import DivergenceCase, attribute, input_value, none
from sonnx_check.compare.judging.tolerance import NodeData, Rule, RuleResult
from sonnx_check.reference import fast_bounds


def _batch_normalization(data: NodeData) -> RuleResult:
    """Derived (batch_normalization.md links a batchnorm_acc.md that is not published) for the two usual
    algorithms: the text's order, scale * (X - mean) / sqrt(var + eps) + B, six roundings (sqrt halves the
    one under it), within gamma_6 |k (X - mean)| + u|Y| with k = scale / sqrt(var + eps); and the folded one
    of the runtimes, X * k + (B - mean * k), within gamma_5 (|k X| + |k mean| + |B|) + u|Y|. One more rounding
    for parameters of another type than Y (the T/T1/T2 of the float section), and one u min-normalized per
    rounding for results below the normal range:

        gamma_7 (|k X| + |k mean| + |B|) + u |Y| + 7u min-normalized"""
    if (fast := fast_bounds.batch_normalization(data)) is not None:  # the same values, block by block
        return fast
    x = data.x(0)
    scale, bias, mean, var = (data.x(k) for k in range(1, 5))
    shape = [1] * x.ndim
    if x.ndim > 1:
        shape[1] = x.shape[1]
    eps = float(np.float32(data.attrs.get("epsilon", 1e-5)))
    with np.errstate(all="ignore"):
        k = (scale / np.sqrt(var + eps)).reshape(shape)
        terms = np.abs(k * x) + np.abs(k * mean.reshape(shape)) + np.abs(bias.reshape(shape))
    u, fmt = data.fmt.u, data.fmt
    introduced = gamma(7, u) * terms + u * data.magnitude + 7 * u * fmt.min_normal
    return introduced, False, ""


BOUND = Rule(
    "γ_7·(|k·X| + |k·mean| + |B|) + u·|Y|, k = scale/√(var+ε)",
    "derived: batch_normalization.md's formula, text order or folded, accuracy.md's u per rounding",
    _batch_normalization,
    deferred=fast_bounds.batch_normalization_deferred,  # evaluated where the judging needs it
)


def batchnorm_folded_overflow(case: DivergenceCase) -> np.ndarray:
    """NaN or infinite results where an intermediate of the folded form X*s + (B - mean*s), s = scale /
    sqrt(var + epsilon), is beyond the largest finite value of the type onnxruntime computes in (float32
    for float16 data): s itself (scale = +-inf included), X*s, mean*s or B - mean*s."""
    actual = case.actual
    values = [input_value(case, k) for k in range(5)]
    if actual.dtype.kind != "f" or any(v is None for v in values):
        return none(case)
    x, scale, bias, mean, var = (np.asarray(v, dtype=np.float64) for v in values)
    if x.shape != actual.shape or x.ndim == 0:
        return none(case)
    channels = x.shape[1] if x.ndim > 1 else 1
    if any(p.size != channels for p in (scale, bias, mean, var)):
        return none(case)
    per_channel = (1, channels) + (1,) * (x.ndim - 2) if x.ndim > 1 else (channels,)
    largest = float(np.finfo(np.float32 if actual.dtype == np.float16 else actual.dtype).max)
    epsilon = float(np.float32(attribute(case.node, "epsilon", 1e-5)))
    with np.errstate(all="ignore"):
        s = scale / np.sqrt(var + epsilon)
        shift = mean * s
        folded = (np.abs(s) > largest) | (np.abs(shift) > largest) | (np.abs(bias - shift) > largest)
        product = np.abs(x * s.reshape(per_channel)) > largest
    return (folded.reshape(per_channel) | product) & ~np.isfinite(actual)


def extreme_parameters(
    node: onnx.NodeProto, fed: Fed, rng: np.random.Generator
) -> dict[int, np.ndarray] | None:
    """BatchNormalization's per-channel parameters at their extremes, the variance kept non-negative (a
    negative one is outside the profile: BatchNormalization.input_var.C2)."""
    out = random_rest(fed, rng)
    for position, dtype, shape in fed:
        if position == 0 or dtype.kind != "f":
            continue
        info = np.finfo(dtype)
        specials = [np.inf, -np.inf, np.nan, 0.0, -0.0, info.max, info.tiny, info.smallest_subnormal, 1.0]
        if position == 4:  # the variance
            specials = [np.inf, 0.0, -0.0, info.max, info.tiny, info.smallest_subnormal, 1.0]
        index = np.arange(int(np.prod(shape)))
        out[position] = np.asarray(specials, dtype=dtype)[index % len(specials)].reshape(shape)
    return out
