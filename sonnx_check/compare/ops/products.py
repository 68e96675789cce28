"""The comparison facts Conv, Gemm and MatMul share (their declarations name them): the sum-of-products
bound, the one count of its terms, and the predicates of their shared known onnxruntime departures."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.compare.judging.floats import gamma
from sonnx_check.compare.judging.known_departures import DivergenceCase, attribute, input_value, none
from sonnx_check.compare.judging.tolerance import (
    AccuracyError,
    NodeData,
    OppositeRoom,
    OverflowRoom,
    Rule,
    RuleResult,
)
from sonnx_check.compare.ops import gemm_evaluations, kernel_module_function
from sonnx_check.compare.ops import kernel_function as _kernel_function
from sonnx_check.reference.errors import ReferenceError


def _sum_of_products(data: NodeData) -> RuleResult:
    """gamma_n (sum |a_k b_k| + |c|) + n u min-normalized, n the number of terms of one output element.

    Higham's bound for a dot product holds for any summation order, with or without FMA, which a blocked
    BLAS needs (docs/profile-decisions.md#accuracy-classes); matmul_acc.md's own formula, ((1+u)^2 ((1+u)^n -
    1)/u - n)|A||B| with the matrix maxima |A| and |B|, assumes the naive order. The last term covers the
    underflow of the products (at most u min-normalized each; the bound above assumes none). sum |a b| (+ |c|)
    is the kernel module's ``run_abs`` (``_abs_sum``), a rigorous upper bound. Also records the intermediate
    overflows of reading (c) (``OverflowRoom``), evaluated only where a runtime returns an infinity or a
    NaN."""
    n = term_count(data.node, data.inputs)
    total = _abs_sum(data)
    terms = _kernel_function(data, "bound_terms")  # an operator whose terms are scaled (Gemm's alpha, beta)
    if terms is None:
        g = float(gamma(n, data.fmt.u))
        introduced = total * g
        introduced += n * data.fmt.u * data.fmt.min_normal
    else:
        stated = terms(data.node, data.inputs)
        g = float(gamma(stated.roundings, data.fmt.u))
        introduced = total * (g + stated.reference_relative)
        introduced += stated.underflow_units * data.fmt.u * data.fmt.min_normal * (1 + g)
        introduced += stated.reference_absolute
        n = stated.roundings
    data.overflow = OverflowRoom(total, data.expected, g, data.fmt)
    if data.node.op_type == "Gemm":  # its alpha and beta placed where the reference does not place them
        data.alternatives = gemm_evaluations.evaluations(data, _sum_of_products)
    signed = _kernel_function(data, "run_signed_sums")
    if signed is not None:
        node, inputs = data.node, list(data.inputs)
        data.opposite = OppositeRoom(lambda: signed(node, inputs), data.expected.shape, g, data.fmt)
    return introduced, False, f" with n = {n}"


def term_count(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> int:
    """The number of terms summed for one output element, the n of gamma_n: the products (Conv: C/group *
    kH * kW; MatMul and Gemm: the inner dimension) plus the bias (Conv's B, Gemm's C) when it is given. The
    one count for the bound and for the overflow predicates: every partial sum adds from these terms."""
    op = node.op_type
    has_bias = op in ("Conv", "Gemm") and len(inputs) > 2 and inputs[2] is not None
    has_bias = has_bias and np.asarray(inputs[2]).size > 0
    if op == "Conv":
        return int(np.prod(np.asarray(inputs[1]).shape[1:])) + int(has_bias)  # C/group * kH * kW (+ B)
    a = np.asarray(inputs[0])
    if a.ndim == 0:
        return 1
    inner = a.shape[0] if op == "Gemm" and attribute(node, "transA", 0) else a.shape[-1]
    return int(inner) + int(has_bias)


def _abs_sum(data: NodeData) -> np.ndarray:
    """An upper bound of sum |a_k b_k| (+ |c|) per output element (float64): ``run_abs`` of the module that
    holds the operator's declared kernel (reference/conv.py, matmul.py, gemm.py). For float16/float32 data
    one float32 product of the magnitudes where it is fast and in range (no subnormal, no product below the
    normal range, no partial sum near overflow), rounded up by 2 gamma_(K+2) of float32; elsewhere (the
    subnormal and extreme edge data, data with NaN or inf) a float64 product of the float32 magnitudes, where
    every product is exact and only the sums round, rounded up by 2 gamma_(K+2) of float64; float64 data in
    float64 (+ (K+1) of its smallest subnormals for the products that underflow). products_common.abs_sum
    says why each is an upper bound in any summation order; +inf where a term involves a non-finite operand.
    About ten times cheaper than the reference kernel on |A|, |B|, |C|, which certifies every rounding; an
    upper bound only loosens the bound, by at most that factor. Which product is taken depends on the data,
    so the bound's last bits do too (a hair, never below the exact sum)."""
    if data.abs_sum is not None:
        return np.asarray(data.abs_sum, dtype=np.float64)
    run_abs = _kernel_function(data, "run_abs")
    if run_abs is None:
        raise AccuracyError(f"{data.node.op_type}: its kernel has no run_abs for the sum-of-products bound")
    return np.asarray(run_abs(data.node, data.inputs, None), dtype=np.float64)


BOUND = Rule(
    "γ_n·Σ|a·b| (+|c|)",
    "matmul_acc.md, Error Introduction (IEEE-754), for any summation order"
    " (docs/profile-decisions.md#accuracy-classes)",
    _sum_of_products,
)


def _magnitude_scale(dtype: np.dtype) -> float:
    """float64 operands are scaled by 2^-540 each (the bias by 2^-1080) so that the sums of products of
    finite data stay finite in float64; float32 data need no scaling (their products fit in float64)."""
    return 2.0**-540 if dtype == np.float64 else 1.0


def _overflow_threshold(dtype: np.dtype, terms: int) -> float:
    """The least one-signed sum of products whose partial sums can overflow in ``dtype``: its largest finite
    value over 1 + gamma_n (the partial sums' own rounding), scaled like the sums."""
    u = float(np.finfo(dtype).eps) / 2
    gamma = terms * u / (1 - terms * u)
    scale = _magnitude_scale(dtype)  # twice, not squared: 2^-1080 is below float64's range
    return float(np.finfo(dtype).max) * scale * scale / (1 + gamma)


def _signed_sums(case: DivergenceCase) -> tuple[np.ndarray, np.ndarray, int] | None:
    """Per output element, P = the sum of the positive products (and of a positive bias) and N = the sum of
    the magnitudes of the negative ones, both scaled (``_magnitude_scale``) and computed by the reference's
    own magnitude helper for the operator (+inf where a term involves a non-finite operand), with the term
    count. Every partial sum, in any order, lies in [-N, P]. None where the inputs are missing, the helper
    refuses them, or no element can reach the threshold."""
    dtype = case.actual.dtype
    inputs = [input_value(case, k) for k in range(len(case.inputs))]
    if len(inputs) < 2 or inputs[0] is None or inputs[1] is None:
        return None
    terms = term_count(case.node, inputs)
    scale = _magnitude_scale(dtype)

    def parts(value: np.ndarray, sign: float, times: int = 1) -> tuple[np.ndarray, np.ndarray]:
        wide = value.astype(np.float64) * math.copysign(1.0, sign)
        for _ in range(times):  # the bias twice (as a product's two factors), one factor at a time
            wide = wide * scale
        with np.errstate(invalid="ignore"):
            return np.maximum(wide, 0.0), np.maximum(-wide, 0.0)  # NaN stays NaN in both

    # Gemm's alpha and beta: the helper scales by their magnitudes; a negative one flips its terms' signs
    alpha = float(attribute(case.node, "alpha", 1.0)) if case.node.op_type == "Gemm" else 1.0
    beta = float(attribute(case.node, "beta", 1.0)) if case.node.op_type == "Gemm" else 1.0
    a_pos, a_neg = parts(inputs[0], alpha)
    b_pos, b_neg = parts(inputs[1], 1.0)
    bias = inputs[2] if len(inputs) > 2 else None
    c_pos, c_neg = parts(bias, beta, 2) if bias is not None else (None, None)

    # A cheap upper bound first: n * max|a| * max|b| + max|c| under the threshold rules every element out.
    def peak(
        *values: np.ndarray | None,
    ) -> float:  # over the finite operands: a non-finite one explains nothing
        largest = [float(np.max(v, initial=0.0, where=np.isfinite(v))) for v in values if v is not None]
        return max(largest, default=0.0)

    with np.errstate(over="ignore"):
        ceiling = terms * peak(a_pos, a_neg) * peak(b_pos, b_neg) + peak(c_pos, c_neg)
    if not ceiling >= _overflow_threshold(dtype, terms):
        return None
    helper = kernel_module_function(case.node.op_type, "run_abs")  # its declared kernel module's
    if helper is None:
        return None

    def run(left: np.ndarray, right: np.ndarray, extra: np.ndarray | None) -> np.ndarray:
        # Back to the data's type: exact for float32 (unscaled); for float64 only values far below the
        # threshold lose bits to the scaling.
        operands: list[np.ndarray | None] = [left.astype(dtype), right.astype(dtype)]
        if len(inputs) > 2:
            operands.append(None if extra is None else extra.astype(dtype))
        with np.errstate(all="ignore"):
            return np.asarray(helper(case.node, operands, None), dtype=np.float64)

    zero_bias = None if c_pos is None else np.zeros_like(c_pos)
    try:
        positive = run(a_pos, b_pos, c_pos) + run(a_neg, b_neg, zero_bias)
        negative = run(a_pos, b_neg, c_neg) + run(a_neg, b_pos, zero_bias)
    except ReferenceError:
        return None
    if positive.shape != case.actual.shape or negative.shape != case.actual.shape:
        return None
    return positive, negative, terms


def partial_sum_overflow(case: DivergenceCase) -> np.ndarray:
    """float32/float64, finite operands: +inf where the positive products can overflow a partial sum (P over
    the threshold), -inf where the negative ones can (N), NaN where both can."""
    actual = case.actual
    if actual.dtype not in (np.float32, np.float64) or case.node.op_type not in ("Conv", "MatMul", "Gemm"):
        return none(case)
    candidates = case.mismatch & ~np.isfinite(actual)
    if not candidates.any():
        return none(case)
    sums = _signed_sums(case)
    if sums is None:
        return none(case)
    positive, negative, terms = sums
    threshold = _overflow_threshold(actual.dtype, terms)
    finite = np.isfinite(positive) & np.isfinite(negative)
    up, down = finite & (positive >= threshold), finite & (negative >= threshold)
    reachable = np.where(np.isnan(actual), up & down, np.where(actual > 0, up, down))
    return candidates & reachable


def all_negative_zero_sum(case: DivergenceCase) -> np.ndarray:
    """+0 where SONNX has -0: a sum whose every term is -0 (the only way to an IEEE -0 sum)."""
    if case.actual.dtype.kind != "f":
        return none(case)
    e, a = case.expected, case.actual
    return (e == 0) & np.signbit(e) & (a == 0) & ~np.signbit(a)
