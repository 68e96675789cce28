"""Sums of products a runtime computes on operands it has changed first (rules/MatMul.toml declares the
departures, for Conv, Gemm and MatMul): bfloat16 inference (operands rounded to bfloat16, the float32 sum,
the result possibly kept in bfloat16) and subnormal operands read as zero. Each predicate recomputes the node
with the SONNX kernel on the operands as the runtime reads them and accepts the element within the bound of
that computation, so an element is explained only when the changed operands account for it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from sonnx_check.compare.judging.floats import gamma
from sonnx_check.compare.judging.known_departures import DivergenceCase, attribute, none
from sonnx_check.compare.ops import kernel_module_function
from sonnx_check.compare.ops.div import same_floats
from sonnx_check.compare.ops.folding import folded_conv
from sonnx_check.compare.ops.products import term_count

FLOAT32_U = 2.0**-24
BFLOAT16_U = 2.0**-8  # bfloat16 keeps 8 significant bits
_OPERANDS = {"Conv": (0, 1), "MatMul": (0, 1), "Gemm": (0, 1)}  # the factors (a bias is added in float32)


def round_to_bfloat16(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), kept as float32; NaN stays NaN."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(values), values, rounded)


def flush_subnormals(values: np.ndarray) -> np.ndarray:
    """Subnormal values replaced by a zero of the same sign."""
    tiny = np.finfo(values.dtype).tiny
    with np.errstate(invalid="ignore"):
        subnormal = (values != 0) & (np.abs(values) < tiny)
    return np.where(subnormal, np.copysign(np.zeros((), values.dtype), values), values)


def recomputed(
    case: DivergenceCase, convert: Callable[[np.ndarray], np.ndarray], positions: Sequence[int]
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray | None]] | None:
    """The SONNX result on the operands at ``positions`` converted, its sum |terms| (float64), the
    operands; None where the kernel refuses them."""
    from sonnx_check import reference

    operands = [None if v is None else np.asarray(v) for v in case.inputs]
    if len(operands) < 2 or operands[0] is None or operands[1] is None:
        return None
    changed = [convert(v) if k in positions and v is not None else v for k, v in enumerate(operands)]
    magnitude_of = kernel_module_function(case.node.op_type, "run_abs")
    try:
        result = reference.run_node(case.node, changed)[0]
        magnitude = None if magnitude_of is None else magnitude_of(case.node, changed, None)
    except reference.ReferenceError:
        return None
    if magnitude is None or np.shape(result) != case.actual.shape:
        return None
    return np.asarray(result), np.broadcast_to(np.asarray(magnitude, np.float64), case.actual.shape), changed


def special_or_within(actual: np.ndarray, result: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """The same special value (NaN, the same infinity), or both finite within ``allowed``."""
    a, r = actual.astype(np.float64), result.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.isfinite(a) & np.isfinite(r)
        return (~finite & same_floats(actual, result)) | (finite & (np.abs(a - r) <= allowed))


def bfloat16_inference(case: DivergenceCase) -> np.ndarray:
    """float32: the factors rounded to bfloat16, then the sum in float32 and the sum of products perhaps
    rounded to bfloat16 again (before the bias is added: OpenVINO's Gemm): within
    S + 2^-8 (|R'| + |bias| + S), S = gamma_n(2^-24) M' + n 2^-24 min-normalized, of R', the SONNX result
    on the rounded factors (M': its sum |terms|). A BatchNormalization after a Conv: that bound for the
    convolution with the normalisation folded in (folding.folded_conv; OpenVINO folds it, then runs the
    folded Conv in bfloat16, its bias and result rounded to bfloat16 too: only bfloat16 values)."""
    if case.node.op_type == "BatchNormalization":
        folded = folded_conv(case) if case.actual.dtype == np.float32 else None
        if folded is None:
            return none(case)
        # the folded Conv's result is rounded to bfloat16: a float32 value between two bfloat16 ones is
        # another behaviour's (BATCHNORM-FOLDED-INTO-CONV in float32)
        in_bfloat16 = (round_to_bfloat16(case.actual) == case.actual) | ~np.isfinite(case.actual)
        return in_bfloat16 & bfloat16_inference(replace(case, node=folded[0], inputs=folded[1]))
    positions = _OPERANDS.get(case.node.op_type)
    if case.actual.dtype != np.float32 or positions is None:
        return none(case)
    found = recomputed(case, round_to_bfloat16, positions)
    if found is None:
        return none(case)
    result, magnitude, operands = found
    n = term_count(case.node, operands)
    g = float(gamma(n, FLOAT32_U))
    with np.errstate(invalid="ignore", over="ignore"):
        summed = g * magnitude + n * FLOAT32_U * float(np.finfo(np.float32).tiny)
        # the products' sum may be kept in bfloat16 before the bias is added: |R' - bias| <= |R'| + |bias|
        kept = np.abs(result.astype(np.float64)) + _bias_magnitude(case) + summed
        allowed = summed + BFLOAT16_U * kept
    return special_or_within(case.actual, result, allowed)


def _bias_magnitude(case: DivergenceCase) -> np.ndarray | float:
    """|bias| per output element (Conv's B, Gemm's beta C), 0 without one."""
    bias = case.inputs[2] if len(case.inputs) > 2 else None
    if bias is None:
        return 0.0
    magnitude = np.abs(np.asarray(bias, np.float64))
    if case.node.op_type == "Conv":
        magnitude = magnitude.reshape(1, -1, *([1] * (case.actual.ndim - 2)))
    else:
        magnitude = magnitude * abs(float(attribute(case.node, "beta", 1.0)))
    try:
        return np.broadcast_to(magnitude, case.actual.shape)
    except ValueError:
        return 0.0


def subnormal_operands_as_zero(case: DivergenceCase) -> np.ndarray:
    """Every float operand's subnormals read as zero: the element is the SONNX result on the flushed
    operands (the same NaN or infinity: -inf * subnormal = -inf * 0 = NaN), or within that result's
    sum-of-products bound. Only where some operand holds a subnormal."""
    if case.actual.dtype.kind != "f" or case.node.op_type not in _OPERANDS:
        return none(case)
    floats = [k for k, v in enumerate(case.inputs) if v is not None and np.asarray(v).dtype.kind == "f"]
    tiny = float(np.finfo(case.actual.dtype).tiny)
    with np.errstate(invalid="ignore"):
        values = [np.asarray(case.inputs[k]) for k in floats]
        held = any(((v != 0) & (np.abs(v) < tiny)).any() for v in values)
    if not held:
        return none(case)
    found = recomputed(case, flush_subnormals, floats)
    if found is None:
        return none(case)
    result, magnitude, operands = found
    n = term_count(case.node, operands)
    u = float(np.finfo(case.actual.dtype).eps) / 2
    with np.errstate(invalid="ignore", over="ignore"):
        allowed = float(gamma(n, u)) * magnitude + n * u * tiny
    return special_or_within(case.actual, result, allowed)
