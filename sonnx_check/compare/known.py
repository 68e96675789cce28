"""onnxruntime behaviours that are already understood, so a divergence can be explained where it is reported.

An explanation is attached to the RUNTIME.divergence finding (message and ``data["known_divergence"]``); it
never turns the divergence into a pass: a known departure from SONNX is still a departure, and whether it
matters is the user's decision (a waiver), not the tool's.

Each entry says which mismatching elements it explains (a mask), so a finding can tell "all 12 differing
elements are the known -FLT_MAX padding" apart from "3 of them are, 9 are something new". Matching is by the
shape of the data, not by onnxruntime version: ``seen_in`` records where the behaviour was observed, and the
report says when the running version is not among them (a regression or a new code path worth a look).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx


@dataclass(frozen=True)
class DivergenceCase:
    """Everything a known-divergence predicate may look at for one node output on one dataset.

    ``inputs`` are the node's input values as onnxruntime computed them (None when absent or unknown);
    ``mismatch`` is True where ``actual`` (onnxruntime) and ``expected`` (SONNX) differ."""

    node: onnx.NodeProto
    output_position: int
    expected: np.ndarray
    actual: np.ndarray
    mismatch: np.ndarray
    inputs: Sequence[np.ndarray | None] = ()


Predicate = Callable[[DivergenceCase], np.ndarray]


@dataclass(frozen=True)
class KnownDivergence:
    id: str
    operators: tuple[str, ...]
    outputs: tuple[int, ...] | None  # output positions the behaviour affects; None = every output
    summary: str  # one line, for messages
    explanation: str  # the mechanism, for the report and --explain style reading
    seen_in: tuple[str, ...]  # "versions: where", one per observation
    versions: tuple[tuple[str, str], ...]  # inclusive onnxruntime version ranges it was observed in
    predicate: Predicate

    def explains(self, case: DivergenceCase) -> np.ndarray:
        """The mismatching elements this behaviour accounts for (a subset of ``case.mismatch``)."""
        if case.node.op_type not in self.operators:
            return np.zeros(case.mismatch.shape, dtype=bool)
        if self.outputs is not None and case.output_position not in self.outputs:
            return np.zeros(case.mismatch.shape, dtype=bool)
        if case.actual.shape != case.expected.shape or case.actual.dtype != case.expected.dtype:
            return np.zeros(case.mismatch.shape, dtype=bool)
        return self.predicate(case) & case.mismatch

    def seen_in_version(self, version: str | None) -> bool | None:
        """Whether ``version`` lies in a range where this behaviour was observed (None: not a release)."""
        parsed = parse_version(version)
        if parsed is None:
            return None
        return any(_release(lo) <= parsed <= _release(hi) for lo, hi in self.versions)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "operators": list(self.operators),
            "summary": self.summary,
            "explanation": self.explanation,
            "seen_in": list(self.seen_in),
        }


@dataclass(frozen=True)
class KnownMatch:
    entry: KnownDivergence
    explained: int  # differing elements this entry accounts for


def parse_version(version: str | None) -> tuple[int, int, int] | None:
    """'1.23.2' -> (1, 23, 2); None for anything that is not a plain release number."""
    if not version:
        return None
    match = re.match(r"^(\d+)\.(\d+)\.(\d+)", version)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def _release(version: str) -> tuple[int, int, int]:
    parsed = parse_version(version)
    if parsed is None:
        raise ValueError(f"not a release number: {version!r}")
    return parsed


# -- predicates -------------------------------------------------------------------------------------------


def _lowest_instead_of_neg_inf(case: DivergenceCase) -> np.ndarray:
    if case.actual.dtype.kind != "f":
        return np.zeros(case.mismatch.shape, dtype=bool)
    lowest = np.finfo(case.actual.dtype).min
    return np.isneginf(case.expected) & (case.actual == lowest)


def _index_outside_plane(case: DivergenceCase) -> np.ndarray:
    """An index that is negative, or that does not address the (batch, channel) plane of its own output
    element; without X's shape only the negative ones can be recognised."""
    actual = case.actual
    if actual.dtype.kind not in "iu":
        return np.zeros(case.mismatch.shape, dtype=bool)
    negative = actual < 0
    x = case.inputs[0] if case.inputs else None
    if x is None or x.ndim < 3 or actual.ndim != x.ndim or actual.shape[:2] != x.shape[:2]:
        return negative
    plane_size = int(np.prod(x.shape[2:]))
    batch, channels = x.shape[:2]
    planes = np.arange(batch * channels, dtype=np.int64).reshape(batch, channels)
    own_plane = planes.reshape(planes.shape + (1,) * (actual.ndim - 2))
    with np.errstate(all="ignore"):
        plane_of_index = np.floor_divide(actual.astype(np.int64), max(plane_size, 1))
    return negative | (plane_of_index != own_plane) | (actual >= x.size)


def _window_holds_nan(case: DivergenceCase) -> np.ndarray:
    x = case.inputs[0] if case.inputs else None
    if x is None or x.dtype.kind != "f" or x.ndim != 4 or case.actual.ndim != 4:
        return np.zeros(case.mismatch.shape, dtype=bool)
    return windows_any(np.isnan(x), case.node, case.actual.shape)


def _signed_zero(case: DivergenceCase) -> np.ndarray:
    if case.actual.dtype.kind != "f":
        return np.zeros(case.mismatch.shape, dtype=bool)
    zeros = (case.expected == 0) & (case.actual == 0)
    return zeros & (np.signbit(case.expected) != np.signbit(case.actual))


def _index_at_negative_zero(case: DivergenceCase) -> np.ndarray:
    """Indices: onnxruntime's index designates a -0 of X where SONNX's designates a +0 (Max_F, +0 > -0): the
    first zero of the window rather than its first +0."""
    x = case.inputs[0] if case.inputs else None
    actual, expected = case.actual, case.expected
    if x is None or x.dtype.kind != "f" or actual.dtype.kind not in "iu" or expected.shape != actual.shape:
        return _none(case)
    flat = x.reshape(-1)
    valid = (actual >= 0) & (actual < flat.size) & (expected >= 0) & (expected < flat.size)
    at_actual = flat[np.where(valid, actual, 0)]
    at_expected = flat[np.where(valid, expected, 0)]
    negative_zero = (at_actual == 0) & np.signbit(at_actual)
    # the first zero comes before the first +0 in the window's row-major order, so at a lower flat index
    return valid & negative_zero & (at_expected == 0) & ~np.signbit(at_expected) & (actual < expected)


def _number_where_nan(case: DivergenceCase) -> np.ndarray:
    if case.actual.dtype.kind != "f":
        return _none(case)
    return np.isnan(case.expected) & ~np.isnan(case.actual)


def _none(case: DivergenceCase) -> np.ndarray:
    return np.zeros(case.mismatch.shape, dtype=bool)


def _input(case: DivergenceCase, position: int) -> np.ndarray | None:
    if position >= len(case.inputs) or case.inputs[position] is None:
        return None
    return np.asarray(case.inputs[position])


def _attribute(node: onnx.NodeProto, name: str, default: Any) -> Any:
    for attribute in node.attribute:
        if attribute.name == name:
            return onnx.helper.get_attribute_value(attribute)
    return default


def _as_output(value: np.ndarray, case: DivergenceCase) -> np.ndarray | None:
    """``value`` broadcast to the output's shape (None where it does not broadcast)."""
    try:
        return np.broadcast_to(value, case.actual.shape)
    except ValueError:
        return None


def _doubles(case: DivergenceCase) -> tuple[np.ndarray, np.ndarray]:
    return case.expected.astype(np.float64), case.actual.astype(np.float64)


def _sigmoid_float_absolute(case: DivergenceCase) -> np.ndarray:
    """float32, x < 0 (SONNX result below 1/2): a result in [0, 1/2] within 2^-22 of SONNX's, in absolute
    terms (the most measured is 3 * 2^-24, at any x)."""
    if case.actual.dtype != np.float32:
        return _none(case)
    e, a = _doubles(case)
    with np.errstate(invalid="ignore"):
        return (e < 0.5) & (a >= 0) & (a <= 0.5) & (np.abs(a - e) <= 2.0**-22)


def _sigmoid_double_cancellation(case: DivergenceCase) -> np.ndarray:
    """float64, x < 0: a result that is a multiple of 2^-53 (what 1 - t leaves for t in [1/2, 1]) within
    2^-51 of SONNX's (the most measured is 1.5 * 2^-53)."""
    if case.actual.dtype != np.float64:
        return _none(case)
    e, a = case.expected, case.actual
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = a * 2.0**53
        on_grid = np.isfinite(scaled) & (scaled == np.floor(scaled))
        return (e < 0.5) & (a >= 0) & (a <= 0.5) & on_grid & (np.abs(a - e) <= 2.0**-51)


def _tanh_close_to_one(limit: float, dtype: type) -> Predicate:
    """``dtype`` only, |SONNX| > 0.9 (|x| > 1.47): a result of the same sign within ``limit`` of SONNX's."""

    def predicate(case: DivergenceCase) -> np.ndarray:
        if case.actual.dtype != dtype:
            return _none(case)
        e, a = _doubles(case)
        with np.errstate(invalid="ignore"):
            return (np.abs(e) > 0.9) & (np.sign(a) == np.sign(e)) & (np.abs(a - e) <= limit)

    return predicate


def _range_accumulated(case: DivergenceCase) -> np.ndarray:
    """Float Range: Y[i] equal, bit for bit, to S + D + ... + D (i additions, each rounded to the type)."""
    actual = case.actual
    start, delta = _input(case, 0), _input(case, 2)
    if actual.dtype.kind != "f" or actual.ndim != 1 or start is None or delta is None:
        return _none(case)
    if start.size != 1 or delta.size != 1 or start.dtype != actual.dtype or delta.dtype != actual.dtype:
        return _none(case)
    terms = np.full(actual.shape, delta.reshape(()), dtype=actual.dtype)
    if terms.size:
        terms[0] = start.reshape(())
    with np.errstate(over="ignore", invalid="ignore"):
        accumulated = np.add.accumulate(terms, dtype=actual.dtype)  # sequential, rounded at every step
    return (accumulated == actual) | (np.isnan(accumulated) & np.isnan(actual))


def _argmax_slice_holds_nan(case: DivergenceCase) -> np.ndarray:
    """Every output element whose reduced slice of X holds a NaN."""
    x = _input(case, 0)
    if x is None or x.dtype.kind != "f" or x.ndim == 0:
        return _none(case)
    axis = int(_attribute(case.node, "axis", 0))
    axis = axis + x.ndim if axis < 0 else axis
    if not 0 <= axis < x.ndim:
        return _none(case)
    holds = np.isnan(x).any(axis=axis, keepdims=bool(_attribute(case.node, "keepdims", 1)))
    return holds if holds.shape == case.actual.shape else _none(case)


def _softmax_row_all_neg_inf(case: DivergenceCase) -> np.ndarray:
    """NaN results in a slice (along the axis) whose elements are all -inf."""
    x = _input(case, 0)
    if x is None or x.dtype.kind != "f" or x.shape != case.actual.shape or x.ndim == 0:
        return _none(case)
    axis = int(_attribute(case.node, "axis", -1))
    axis = axis + x.ndim if axis < 0 else axis
    if not 0 <= axis < x.ndim:
        return _none(case)
    all_neg_inf = np.broadcast_to(np.isneginf(x).all(axis=axis, keepdims=True), x.shape)
    return all_neg_inf & np.isnan(case.actual)


def _term_count(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> int:
    if node.op_type == "Conv":
        return int(np.prod(np.asarray(inputs[1]).shape[1:]))
    a = np.asarray(inputs[0])
    if a.ndim == 0:
        return 1
    return int(a.shape[0] if node.op_type == "Gemm" and _attribute(node, "transA", 0) else a.shape[-1])


def _magnitude_scale(dtype: np.dtype) -> float:
    """float64 operands are scaled by 2^-540 each (the bias by 2^-1080) so that the sums of products of
    finite data stay finite in float64; float32 data need no scaling (their products fit in float64)."""
    return 2.0**-540 if dtype == np.float64 else 1.0


def _overflow_threshold(dtype: np.dtype, terms: int) -> float:
    """The least one-signed sum of products whose partial sums can overflow in ``dtype``: its largest finite
    value over 1 + gamma_n (the partial sums' own rounding), scaled like the sums."""
    u = float(np.finfo(dtype).eps) / 2
    gamma = terms * u / (1 - terms * u)
    return float(np.finfo(dtype).max) * _magnitude_scale(dtype) ** 2 / (1 + gamma)


def _signed_sums(case: DivergenceCase) -> tuple[np.ndarray, np.ndarray, int] | None:
    """Per output element, P = the sum of the positive products (and of a positive bias) and N = the sum of
    the magnitudes of the negative ones, both scaled (``_magnitude_scale``) and computed by the reference's
    own magnitude helper for the operator (+inf where a term involves a non-finite operand), with the term
    count. Every partial sum, in any order, lies in [-N, P]. None where the inputs are missing, the helper
    refuses them, or no element can reach the threshold."""
    dtype = case.actual.dtype
    inputs = [_input(case, k) for k in range(len(case.inputs))]
    if len(inputs) < 2 or inputs[0] is None or inputs[1] is None:
        return None
    terms = _term_count(case.node, inputs)
    scale = _magnitude_scale(dtype)

    def parts(value: np.ndarray, factor: float) -> tuple[np.ndarray, np.ndarray]:
        wide = value.astype(np.float64) * factor
        with np.errstate(invalid="ignore"):
            return np.maximum(wide, 0.0), np.maximum(-wide, 0.0)  # NaN stays NaN in both

    # Gemm's alpha and beta: the helper scales by their magnitudes; a negative one flips its terms' signs
    alpha = float(_attribute(case.node, "alpha", 1.0)) if case.node.op_type == "Gemm" else 1.0
    beta = float(_attribute(case.node, "beta", 1.0)) if case.node.op_type == "Gemm" else 1.0
    a_pos, a_neg = parts(inputs[0], math.copysign(scale, alpha))
    b_pos, b_neg = parts(inputs[1], scale)
    bias = inputs[2] if len(inputs) > 2 else None
    c_pos, c_neg = parts(bias, math.copysign(scale * scale, beta)) if bias is not None else (None, None)

    # A cheap upper bound first: n * max|a| * max|b| + max|c| under the threshold rules every element out.
    def peak(*values: np.ndarray) -> float:  # over the finite operands: a non-finite one explains nothing
        largest = [float(np.max(v, initial=0.0, where=np.isfinite(v))) for v in values if v is not None]
        return max(largest, default=0.0)

    with np.errstate(over="ignore"):
        ceiling = terms * peak(a_pos, a_neg) * peak(b_pos, b_neg) + peak(c_pos, c_neg)
    if not ceiling >= _overflow_threshold(dtype, terms):
        return None
    # The kernels' magnitude helpers, imported only for the rare output this can explain.
    from sonnx_check.reference import ReferenceError, conv, gemm, matmul

    helper = {"Conv": conv.run_abs, "MatMul": matmul.run_abs, "Gemm": gemm.run_abs}[case.node.op_type]

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


def _partial_sum_overflow(case: DivergenceCase) -> np.ndarray:
    """float32/float64, finite operands: +inf where the positive products can overflow a partial sum (P over
    the threshold), -inf where the negative ones can (N), NaN where both can."""
    actual = case.actual
    if actual.dtype not in (np.float32, np.float64) or case.node.op_type not in ("Conv", "MatMul", "Gemm"):
        return _none(case)
    candidates = case.mismatch & ~np.isfinite(actual)
    if not candidates.any():
        return _none(case)
    sums = _signed_sums(case)
    if sums is None:
        return _none(case)
    positive, negative, terms = sums
    threshold = _overflow_threshold(actual.dtype, terms)
    finite = np.isfinite(positive) & np.isfinite(negative)
    up, down = finite & (positive >= threshold), finite & (negative >= threshold)
    reachable = np.where(np.isnan(actual), up & down, np.where(actual > 0, up, down))
    return candidates & reachable


def _all_negative_zero_sum(case: DivergenceCase) -> np.ndarray:
    """+0 where SONNX has -0: a sum whose every term is -0 (the only way to an IEEE -0 sum)."""
    if case.actual.dtype.kind != "f":
        return _none(case)
    e, a = case.expected, case.actual
    return (e == 0) & np.signbit(e) & (a == 0) & ~np.signbit(a)


def _dilation_holes_skipped(case: DivergenceCase) -> np.ndarray:
    """NaN in SONNX's result only because a hole of the dilated kernel (an operand 0) meets an infinite or
    NaN X: the same convolution with the holes skipped is not NaN there, and neither is onnxruntime's."""
    from sonnx_check.reference import ReferenceError as KernelRefusal
    from sonnx_check.reference.conv import conv

    x, w, b = _input(case, 0), _input(case, 1), _input(case, 2)
    dilations = list(_attribute(case.node, "dilations", [1, 1]))
    if case.actual.dtype.kind != "f" or x is None or w is None or max(dilations, default=1) <= 1:
        return _none(case)
    try:
        skipped = conv(
            x, w, b, strides=list(_attribute(case.node, "strides", [1, 1])),
            pads=list(_attribute(case.node, "pads", [0, 0, 0, 0])), dilations=dilations,
            group=int(_attribute(case.node, "group", 1)), holes_are_operands=False,
        )  # fmt: skip
    except KernelRefusal:
        return _none(case)
    if skipped.shape != case.expected.shape:
        return _none(case)
    return np.isnan(case.expected) & ~np.isnan(skipped) & ~np.isnan(case.actual)


def _batchnorm_folded_overflow(case: DivergenceCase) -> np.ndarray:
    """NaN or infinite results where an intermediate of the folded form X*s + (B - mean*s), s = scale /
    sqrt(var + epsilon), is beyond the largest finite value of the type onnxruntime computes in (float32
    for float16 data): s itself (scale = +-inf included), X*s, mean*s or B - mean*s."""
    actual = case.actual
    values = [_input(case, k) for k in range(5)]
    if actual.dtype.kind != "f" or any(v is None for v in values):
        return _none(case)
    x, scale, bias, mean, var = (np.asarray(v, dtype=np.float64) for v in values)  # type: ignore[arg-type]
    if x.shape != actual.shape or x.ndim == 0:
        return _none(case)
    channels = x.shape[1] if x.ndim > 1 else 1
    if any(p.size != channels for p in (scale, bias, mean, var)):
        return _none(case)
    per_channel = (1, channels) + (1,) * (x.ndim - 2) if x.ndim > 1 else (channels,)
    largest = float(np.finfo(np.float32 if actual.dtype == np.float16 else actual.dtype).max)
    epsilon = float(np.float32(_attribute(case.node, "epsilon", 1e-5)))
    with np.errstate(all="ignore"):
        s = scale / np.sqrt(var + epsilon)
        shift = mean * s
        folded = (np.abs(s) > largest) | (np.abs(shift) > largest) | (np.abs(bias - shift) > largest)
        product = np.abs(x * s.reshape(per_channel)) > largest
    return (folded.reshape(per_channel) | product) & ~np.isfinite(actual)


def _where_loses_negative_zero_of_x(case: DivergenceCase) -> np.ndarray:
    """+0 where the condition is true and X is -0."""
    condition, x = _input(case, 0), _input(case, 1)
    if case.actual.dtype.kind != "f" or condition is None or x is None:
        return _none(case)
    condition, x = _as_output(condition.astype(bool), case), _as_output(x, case)
    if condition is None or x is None:
        return _none(case)
    a = case.actual
    return condition & (x == 0) & np.signbit(x) & (a == 0) & ~np.signbit(a)


def _clip_crossed_bounds_keeps_nan(case: DivergenceCase) -> np.ndarray:
    """NaN results for NaN elements of X when both bounds are numbers and min > max."""
    x, low, high = _input(case, 0), _input(case, 1), _input(case, 2)
    if case.actual.dtype.kind != "f" or x is None or low is None or high is None:
        return _none(case)
    if low.size != 1 or high.size != 1 or x.shape != case.actual.shape:
        return _none(case)
    low_value, high_value = float(low.reshape(())), float(high.reshape(()))
    if not low_value > high_value:  # also False when a bound is NaN
        return _none(case)
    return np.isnan(x) & np.isnan(case.actual)


def _integer_pow_through_double(case: DivergenceCase) -> np.ndarray:
    """int32/int64: the result of pow(double(a), double(b)) converted back to the type, truncated toward
    zero, or the type's minimum where that double is out of range (x86-64's "integer indefinite")."""
    actual = case.actual
    base, exponent = _input(case, 0), _input(case, 1)
    if actual.dtype not in (np.int32, np.int64) or base is None or exponent is None:
        return _none(case)
    if base.dtype.kind not in "iu" or exponent.dtype.kind not in "iu":
        return _none(case)
    base, exponent = _as_output(base, case), _as_output(exponent, case)
    if base is None or exponent is None:
        return _none(case)
    info = np.iinfo(actual.dtype)
    with np.errstate(all="ignore"):
        power = np.power(base.astype(np.float64), exponent.astype(np.float64))
        in_range = np.isfinite(power) & (power >= float(info.min)) & (power < -float(info.min))
        converted = np.trunc(np.where(in_range, power, 0.0)).astype(actual.dtype)
    return actual == np.where(in_range, converted, info.min)


def windows_any(mask: np.ndarray, node: onnx.NodeProto, out_shape: Sequence[int]) -> np.ndarray:
    """For every output position of a 2-D pooling node, whether any element of its window is set in ``mask``
    (an N x C x H x W boolean array). Windows follow the node's explicit attributes (auto_pad NOTSET)."""
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    kernel = list(attrs.get("kernel_shape", [1, 1]))
    strides = list(attrs.get("strides", [1, 1]))
    dilations = list(attrs.get("dilations", [1, 1]))
    pads = list(attrs.get("pads", [0, 0, 0, 0]))
    if len(kernel) != 2 or len(strides) != 2 or len(dilations) != 2 or len(pads) != 4:
        return np.zeros(tuple(out_shape), dtype=bool)
    out_h, out_w = int(out_shape[2]), int(out_shape[3])
    height, width = mask.shape[2], mask.shape[3]
    need_h = (out_h - 1) * strides[0] + (kernel[0] - 1) * dilations[0] + 1
    need_w = (out_w - 1) * strides[1] + (kernel[1] - 1) * dilations[1] + 1
    end_h = max(0, need_h - pads[0] - height)
    end_w = max(0, need_w - pads[1] - width)
    padded = np.pad(mask, ((0, 0), (0, 0), (pads[0], end_h), (pads[1], end_w)), constant_values=False)
    result = np.zeros((mask.shape[0], mask.shape[1], out_h, out_w), dtype=bool)
    for kh in range(kernel[0]):
        for kw in range(kernel[1]):
            h0 = kh * dilations[0]
            w0 = kw * dilations[1]
            result |= padded[
                :,
                :,
                h0 : h0 + (out_h - 1) * strides[0] + 1 : strides[0],
                w0 : w0 + (out_w - 1) * strides[1] + 1 : strides[1],
            ]
    return result


# -- the table ------------------------------------------------------------------------------------------

KNOWN: tuple[KnownDivergence, ...] = (
    KnownDivergence(
        id="ORT-LOWEST-FOR-NEG-INF",
        operators=("MaxPool",),
        outputs=(0,),
        summary="onnxruntime gives the lowest finite value (-FLT_MAX / -DBL_MAX) where SONNX gives -inf",
        explanation=(
            "onnxruntime's MaxPool kernels start each window at std::numeric_limits<T>::lowest() and keep it "
            "when no element is greater, so a window whose real elements are all -inf (or NaN) yields "
            "-3.4028235e+38 (float) or -1.7976931348623157e+308 (double); the MLAS kernel also lets that "
            "start value act as padding. SONNX pads with -inf and never selects padding: Y is -inf."
        ),
        seen_in=(
            "1.21.0-1.28.0: any window whose elements are all -inf, on the kernel that also serves Indices "
            "and float64 (seed 003 float Example 3: Y[0,0] = -1.79769313e+308); fixed in 1.29.0",
            "1.21.0-1.31.1: float32 MaxPool with only Y (MLAS kernel), windows overlapping the padding whose "
            "real elements are all -inf, at every optimisation level",
            "1.28.0-1.31.1: float32 MaxPool with only Y rewritten to the NCHWc kernel (default optimisation, "
            "channels a multiple of the CPU block size, 8 or 16): every window whose elements are all -inf",
            "1.26.0, 1.32.0: both float32 Y-only paths above again (padding windows of an all -inf X; all "
            "windows once rewritten to NCHWc at default optimisation with 8 or 16 channels)",
        ),
        versions=(("1.21.0", "1.32.0"),),
        predicate=_lowest_instead_of_neg_inf,
    ),
    KnownDivergence(
        id="ORT-INDICES-OUT-OF-RANGE",
        operators=("MaxPool",),
        outputs=(1,),
        summary="onnxruntime gives an index that is negative or outside the output element's own channel",
        explanation=(
            "When no element of a window beats the kernel's start value (lowest()), onnxruntime keeps the "
            "initial position h = w = -1 and builds the index from it: c*H*W - W - 1, i.e. -4 for a 3x3 "
            "plane of channel 0, or an index into the previous channel. SONNX: the flat index of the first "
            "real element of the window that equals the maximum."
        ),
        seen_in=(
            "1.21.0-1.28.0: windows whose elements are all -inf or all the type's minimum (seed 003 float "
            "Example 3: Indices[0,0] = -4; int8 Example 4: -4 at three places); fixed in 1.29.0",
            "1.31.1: windows lying entirely in the padding (possible with dilation > 1)",
        ),
        versions=(("1.21.0", "1.28.0"), ("1.31.1", "1.31.1")),
        predicate=_index_outside_plane,
    ),
    KnownDivergence(
        id="ORT-MAXPOOL-NAN",
        operators=("MaxPool",),
        outputs=None,
        summary="onnxruntime drops or keeps a NaN in a MaxPool window depending on its position",
        explanation=(
            "onnxruntime follows no single NaN rule in MaxPool: the result depends on the version, on "
            "whether Indices is requested, on the NaN's position in the window and on the kernel (MLAS SIMD "
            "max returns its second operand when either is NaN; the scalar kernel keeps a NaN only when it "
            "comes first). SONNX (seed 003) treats NaN as -inf, so a NaN is never the result."
        ),
        seen_in=("1.23.2, 1.31.1: windows holding NaN, Y and Indices, all kernels",),
        versions=(("1.23.2", "1.23.2"), ("1.31.1", "1.31.1")),
        predicate=_window_holds_nan,
    ),
    KnownDivergence(
        id="ORT-SIGNED-ZERO",
        operators=("Max", "MaxPool"),
        outputs=(0,),
        summary="onnxruntime returns the other zero (+0 vs -0)",
        explanation=(
            "onnxruntime returns whichever of +0 and -0 its kernel meets first or whichever SIMD lane wins, "
            "so the sign of a zero result depends on operand order and position. SONNX orders -0 < +0 (Max_F)"
            " for Max (Max(+0, -0) = +0) and for MaxPool (maxpool.md's float section: a window holding +0 "
            "and -0 gives +0)."
        ),
        seen_in=(
            "1.23.2, 1.31.1: Max (depends on SIMD position) and MaxPool",
            "1.32.0: MaxPool float16, float, double: with Indices the first zero of the window (-0 before "
            "+0 gives -0); float32 and float16 Y alone the last one",
            "1.21.0, 1.26.0, 1.32.0: Max float16, float and double, Max(+0, -0) and Max(-0, +0) alternating "
            "over 16 elements: -0 at half of them",
        ),
        versions=(("1.21.0", "1.32.0"),),
        predicate=_signed_zero,
    ),
    KnownDivergence(
        id="ORT-MAXPOOL-ZERO-INDEX",
        operators=("MaxPool",),
        outputs=(1,),
        summary="onnxruntime's MaxPool Indices designate the window's first zero, a -0, not its first +0",
        explanation=(
            "onnxruntime's MaxPool with Indices keeps the first element that no later one exceeds with a "
            "plain comparison (onnxruntime/core/providers/cpu/nn/pool_functors.h, MaxPool2DTask: x > Yh), "
            "for which -0 and +0 are equal, so a window whose maximum is zero gets the index of its first "
            "zero. SONNX orders +0 above -0 (Max_F, maxpool.md's float section): the index of the first +0. "
            "Explained: an index designating a -0 of X where SONNX's designates a +0."
        ),
        seen_in=("1.32.0: float16, float and double, windows [-0, +0, ...] and [-0, -1, -0, +0]",),
        versions=(("1.21.0", "1.32.0"),),
        predicate=_index_at_negative_zero,
    ),
    KnownDivergence(
        id="ORT-LSTM-NAN-GATES",
        operators=("LSTM",),
        outputs=None,
        summary=(
            "onnxruntime's LSTM gives numbers where a gate is NaN (a NaN input, or +inf + -inf in a gate sum)"
        ),
        explanation=(
            "SONNX's LSTM (lstm.md, the recurrence of the profile's operators under IEEE 754) is NaN from a "
            "NaN in X, or from a gate sum holding +inf and -inf terms (an infinite X against weights of both "
            "signs), through every later step. onnxruntime's CPU LSTM (onnxruntime/core/providers/cpu/rnn) "
            "returns numbers there when the node has a B input (zeros included): the NaN gate does not reach "
            "its output; without B the NaN propagates. Explained: a number where SONNX's result is NaN."
        ),
        seen_in=(
            "1.21.0, 1.32.0: float LSTM, forward, hidden_size 4, with B, X all NaN, +inf or -inf (from the "
            "second step on); without B: NaN, as SONNX",
        ),
        versions=(("1.21.0", "1.32.0"),),
        predicate=_number_where_nan,
    ),
    KnownDivergence(
        id="ORT-SIGMOID-FLOAT-ABSOLUTE-ERROR",
        operators=("Sigmoid",),
        outputs=(0,),
        summary=(
            "onnxruntime's float32 Sigmoid has an absolute, not relative, error: far beyond the bound for x "
            "< -1.97"
        ),
        explanation=(
            "For float32 onnxruntime calls MLAS (onnxruntime/core/mlas/lib/logistic.cpp, "
            "MlasComputeLogistic): x is clamped to [-18, 18] and the result is p(x)/q(x) + 0.5 clamped to "
            "[0, 1], a rational approximation whose error is a few units of 2^-24 in absolute terms. Where "
            "the result is small (x < 0) that is a large relative error: beyond sigmoid_acc.md's bound for x"
            " below about -1.97, by factors up to millions, and exactly +0 for x <= -18 (and part of [-18, "
            "-15.8]) where SONNX's result is 1.5e-8 down to the subnormals. The element is explained when x "
            "< 0 (SONNX result below 1/2) and onnxruntime's value lies in [0, 1/2] within 2^-22 of SONNX's "
            "(at most 3 * 2^-24 measured)."
        ),
        seen_in=(
            "1.21.0, 1.32.0: float32 Sigmoid, every 97th float32 bit pattern: beyond the bound for "
            "-87.34 <= x <= -1.953, +0 for x <= -15.84; default and disabled optimisation",
            "1.26.0, 1.28.0, 1.29.0: the live cases of tests/compare/test_known_operators.py",
        ),
        versions=(("1.21.0", "1.32.0"),),
        predicate=_sigmoid_float_absolute,
    ),
    KnownDivergence(
        id="ORT-SIGMOID-DOUBLE-CANCELLATION",
        operators=("Sigmoid",),
        outputs=(0,),
        summary=(
            "onnxruntime's float64 Sigmoid computes 1 - 1/(1 + exp(-|x|)) for x < 0: cancellation below x = "
            "-1.7"
        ),
        explanation=(
            "For float64 onnxruntime uses its generic Eigen functor "
            "(onnxruntime/core/providers/cpu/activation/activations.h, Sigmoid): x >= 0 gives 1 / (1 + "
            "exp(-|x|)), x < 0 gives 1 - 1 / (1 + exp(-|x|)). The subtraction from 1 cancels: the result is "
            "a multiple of 2^-53, so its relative error grows as it shrinks (beyond sigmoid_acc.md's bound "
            "for x < -1.68, by up to 5e14) and it is exactly +0 for x <= -36.74 where SONNX's result is "
            "1.1e-16 and less. The element is explained when x < 0 and onnxruntime's value is a multiple of "
            "2^-53 in [0, 1/2] within 2^-51 of SONNX's (1.5 * 2^-53 at most measured)."
        ),
        seen_in=(
            "1.21.0, 1.32.0: float64 Sigmoid on 2.4M values in [-800, 800]: beyond the bound for "
            "-708.4 <= x <= -1.81 in that sample, +0 for x <= -36.737",
            "1.26.0, 1.28.0, 1.29.0: the live cases of tests/compare/test_known_operators.py",
        ),
        versions=(("1.21.0", "1.32.0"),),
        predicate=_sigmoid_double_cancellation,
    ),
    KnownDivergence(
        id="ORT-TANH-FLOAT-RATIONAL",
        operators=("Tanh",),
        outputs=(0,),
        summary=(
            "onnxruntime's float32 Tanh is up to 1.4 times the annex's bound near saturation, and |Y| can "
            "exceed 1"
        ),
        explanation=(
            "For float32 onnxruntime calls MLAS (onnxruntime/core/mlas/lib/tanh.cpp, MlasComputeTanh): x is "
            "clamped to [-9, 9] and the result is a rational approximation p(x)/q(x), with no final clamp. "
            "Near saturation its error reaches 5 * 2^-24, beyond tanh_acc.md's most permissive bound "
            "(scattered inputs with 2.07 < |x| < 9, up to 1.43 times), and for 8.2 < |x| < 9 it returns "
            "+-1.0000001 or +-1.0000002, outside [-1, 1]. The element is explained when |SONNX| > 0.9 (|x| >"
            " 1.47) and onnxruntime's value has the same sign within 2^-21 of SONNX's."
        ),
        seen_in=(
            "1.21.0, 1.32.0: float32 Tanh, every 97th float32 bit pattern: 234 elements beyond the bound "
            "with 2.07 <= |x| <= 8.64, |Y| > 1 from |x| = 8.2046",
            "1.26.0, 1.28.0, 1.29.0: the live cases of tests/compare/test_known_operators.py",
        ),
        versions=(("1.21.0", "1.32.0"),),
        predicate=_tanh_close_to_one(2.0**-21, np.float32),
    ),
    KnownDivergence(
        id="ORT-TANH-DOUBLE-EIGEN",
        operators=("Tanh",),
        outputs=(0,),
        summary="onnxruntime's float64 Tanh is up to 2.6 times the annex's bound near saturation",
        explanation=(
            "For float64 onnxruntime evaluates Eigen's array tanh() "
            "(onnxruntime/core/providers/cpu/activation/activations.h, Tanh), whose error near saturation "
            "reaches 8 * 2^-53: beyond tanh_acc.md's most permissive bound for 2.15 < |x| < 18.09 (about 2 %"
            " of the inputs there, up to 2.57 times), and exactly +-1 from |x| = 17.714 where the exact "
            "result is 1 - 8e-16. The element is explained when |SONNX| > 0.9 and onnxruntime's value has "
            "the same sign within 2^-49 of SONNX's."
        ),
        seen_in=(
            "1.21.0, 1.32.0: float64 Tanh on 2.4M values: beyond the bound for 2.15 <= |x| <= 18.09, "
            "+-1 exactly from |x| = 17.714",
            "1.26.0, 1.28.0, 1.29.0: the live cases of tests/compare/test_known_operators.py",
        ),
        versions=(("1.21.0", "1.32.0"),),
        predicate=_tanh_close_to_one(2.0**-49, np.float64),
    ),
    KnownDivergence(
        id="ORT-RANGE-ACCUMULATES",
        operators=("Range",),
        outputs=(0,),
        summary="onnxruntime's float Range adds D to a running value instead of computing S + i*D",
        explanation=(
            "onnxruntime's Range kernel (onnxruntime/core/providers/cpu/generator/range.cc, ComputeRange) "
            "writes the running value and then adds delta to it, in the output type, so Y[i] carries i "
            "roundings and drifts linearly with i (Range(-3.3, 7, 0.001) float32: Y[3300] = -5.677e-05 for "
            "2.04e-07; Range(1, 2, 1e-5) float32 ends at 2.001358, above L). SONNX defines Y[i] = S + i*D, "
            "rounded once. The element is explained when onnxruntime's value is bit for bit the sequential "
            "float sum S + D + ... + D (i terms). Not covered: 1.21.0 to 1.28.0 also count the elements from "
            "L - S rounded in the type (Range(0.1, 1000, 0.1) float32: 10000 elements, the text's K is 9999; "
            "9999 from 1.29.0 on), a shape difference, which no entry can explain."
        ),
        seen_in=(
            "1.21.0, 1.32.0: float32 and float64, Range(0.1, 1000, 0.1), (-3.3, 7, 0.001), (1, 2, 1e-5), "
            "(1000, 0, -0.37): every differing element is the accumulated value",
            "1.26.0, 1.28.0, 1.29.0: the live cases of tests/compare/test_known_operators.py",
        ),
        versions=(("1.21.0", "1.32.0"),),
        predicate=_range_accumulated,
    ),
    KnownDivergence(
        id="ORT-ARGMAX-NAN",
        operators=("ArgMax",),
        outputs=(0,),
        summary=(
            "onnxruntime's ArgMax does not give NaN priority: its result for a slice holding NaN depends on "
            "where the NaN is"
        ),
        explanation=(
            "onnxruntime's ArgMax (onnxruntime/core/providers/cpu/reduction/reduction_ops.h, "
            "ReduceAggregatorArgMax / ArgMaxLastIndex) keeps the first element as the running maximum and "
            "replaces it only when a later one compares greater (or greater or equal, for select_last_index "
            "= 1). Every comparison with NaN is false, so a NaN is selected only when it comes first, and a "
            "NaN first blocks every later value. SONNX (argmax.md) selects the first NaN (the last with "
            "select_last_index = 1) whenever the slice holds one. Every element whose reduced slice holds a "
            "NaN is explained."
        ),
        seen_in=(
            "1.21.0, 1.32.0: float16, float and double, both select_last_index, both keepdims, axis 0 and 1: "
            "[1, NaN, 3] gives 2, [NaN, 5, NaN] with select_last_index = 1 gives 0",
            "1.26.0, 1.28.0, 1.29.0: the live cases of tests/compare/test_known_operators.py",
        ),
        versions=(("1.21.0", "1.32.0"),),
        predicate=_argmax_slice_holds_nan,
    ),
    KnownDivergence(
        id="ORT-SOFTMAX-ALL-NEG-INF",
        operators=("Softmax",),
        outputs=(0,),
        summary="onnxruntime's Softmax gives NaN for a slice whose elements are all -inf",
        explanation=(
            "onnxruntime subtracts the slice's maximum before exponentiating (float: "
            "onnxruntime/core/mlas/lib/compute.cpp, MlasComputeSoftmaxThreaded; the other types do the "
            "same): when every element is -inf, the maximum is -inf and x - max is -inf + inf = NaN "
            "everywhere. SONNX (softmax.md) gives 0 for a -inf element of a slice holding no NaN or +inf. "
            "NaN results in a slice of only -inf are explained."
        ),
        seen_in=(
            "1.21.0, 1.32.0: float16, float and double, axis 0 and 1",
            "1.26.0, 1.28.0, 1.29.0: the live cases of tests/compare/test_known_operators.py",
        ),
        versions=(("1.21.0", "1.32.0"),),
        predicate=_softmax_row_all_neg_inf,
    ),
    KnownDivergence(
        id="ORT-SUM-OVERFLOW",
        operators=("Conv", "MatMul", "Gemm"),
        outputs=(0,),
        summary="onnxruntime's partial sums overflow: NaN or +-inf where the exact sum of products is finite",
        explanation=(
            "onnxruntime sums the products in the output type, in an order of its own and often with fused "
            "multiply-adds: MLAS's GEMM kernels (onnxruntime/core/mlas/lib/sgemm.cpp, dgemm.cpp) behind "
            "MatMul and Gemm, and the float32 Conv's im2col + GEMM (onnxruntime/core/mlas/lib/convolve.cpp)."
            " When the terms are large a partial sum overflows: [max, max] x [2, -2] gives NaN in float32 "
            "(inf - inf) and +inf in float64, and a float32 Conv of an all-lowest X gives -inf or NaN where "
            "the exact sum, and SONNX's correctly rounded result, is finite. Every partial sum, in any "
            "order, lies between -N and P, the sums of the negative and of the positive products (a bias "
            "counted with its sign), so the element is explained when its operands are finite and "
            "onnxruntime gives +inf with P beyond the type's largest finite value (within the partial sums' "
            "own rounding), -inf with N beyond it, or NaN with both. float16 is not concerned (onnxruntime "
            "accumulates it in float32 on the CPUs measured). accuracy.py's reading of an intermediate "
            "overflow may accept these results as within the bound; the entry explains what a comparison "
            "still reports (a tighter --accuracy bound, another reading)."
        ),
        seen_in=(
            "1.21.0, 1.32.0: MatMul and Gemm float32 [max, max] x [2, -2] = NaN, float64 = +inf; Conv "
            "float32, X all lowest and weights whose partial sums overflow: NaN or -inf",
            "1.26.0, 1.28.0, 1.29.0: the live cases of tests/compare/test_known_operators.py",
        ),
        versions=(("1.21.0", "1.32.0"),),
        predicate=_partial_sum_overflow,
    ),
    KnownDivergence(
        id="ORT-ZERO-SUM-SIGN",
        operators=("Conv", "MatMul", "Gemm"),
        outputs=(0,),
        summary="onnxruntime gives +0 for a sum of products whose every term is -0",
        explanation=(
            "onnxruntime's GEMM kernels start from zeroed accumulators (MLAS's 'zero mode' kernels, "
            "onnxruntime/core/mlas/lib/sgemm.cpp), and its convolutions add +0 bias or padding terms, so a "
            "sum whose every term is -0 comes out +0 (+0 + -0 = +0). IEEE 754, which SONNX's exact result "
            "follows, gives -0 for a sum of -0 terms only. Explained: +0 where SONNX has -0. accuracy.py may"
            " not compare the sign of a zero sum of products at all; the entry explains it wherever a "
            "comparison does."
        ),
        seen_in=(
            "1.21.0, 1.32.0: MatMul and Gemm float16, float, double; Conv float16 and float (no bias and -0 "
            "bias); -0 data times positive weights",
            "1.26.0, 1.28.0, 1.29.0: the live cases of tests/compare/test_known_operators.py",
        ),
        versions=(("1.21.0", "1.32.0"),),
        predicate=_all_negative_zero_sum,
    ),
    KnownDivergence(
        id="ORT-CONV-DILATION-HOLES",
        operators=("Conv",),
        outputs=(0,),
        summary="onnxruntime skips the holes of a dilated kernel: no NaN where an infinite X meets a hole",
        explanation=(
            "conv2.md sums over every element of the dilated kernel W_d, whose inserted elements are 0 "
            "('The value of the elements introduced by the dilation is 0'), so under IEEE 754 an infinite or "
            "NaN X under a hole gives 0 * inf = NaN. onnxruntime's im2col gathers only the kernel's own taps "
            "(onnxruntime/core/util/math_cpu.cc, Im2col with dilations), so the holes never multiply "
            "anything. Explained: NaN in SONNX's result that the same convolution with the holes skipped "
            "does not have, where onnxruntime's value is not NaN. Finite data is unaffected."
        ),
        seen_in=("1.21.0, 1.32.0: float Conv, dilations 2, X with +-inf under the holes",),
        versions=(("1.21.0", "1.32.0"),),
        predicate=_dilation_holes_skipped,
    ),
    KnownDivergence(
        id="ORT-BATCHNORM-FOLDED-OVERFLOW",
        operators=("BatchNormalization",),
        outputs=(0,),
        summary=(
            "onnxruntime's BatchNormalization folds its parameters and overflows: NaN or +-inf, e.g. with "
            "scale +-inf"
        ),
        explanation=(
            "onnxruntime (onnxruntime/core/providers/cpu/nn/batch_norm.h) folds the parameters per channel "
            "into s = scale / sqrt(var + epsilon) and t = B - mean * s, then computes X * s + t. With scale "
            "= +-inf, s is infinite and t is NaN (mean = 0) or infinite, so the channel is NaN (or +-inf of "
            "the wrong sign) where SONNX's (X - mean) * scale / sqrt(var + epsilon) + B is +-inf; with "
            "finite but large parameters X * s or mean * s overflows where the exact result is finite (X = "
            "mean = max, scale 2: NaN for 0). float16 data are folded in float32. The element is explained "
            "when onnxruntime's value is NaN or infinite and one of s, X * s, mean * s, B - mean * s is "
            "beyond the largest finite value of the type onnxruntime computes in."
        ),
        seen_in=(
            "1.21.0, 1.32.0: float16, float and double, scale = +-inf (every element of the channel NaN "
            "but X = 0), scale = max with var = 0, X = mean = max",
            "1.26.0, 1.28.0, 1.29.0: the live cases of tests/compare/test_known_operators.py",
        ),
        versions=(("1.21.0", "1.32.0"),),
        predicate=_batchnorm_folded_overflow,
    ),
    KnownDivergence(
        id="ORT-WHERE-NEGATIVE-ZERO-X",
        operators=("Where",),
        outputs=(0,),
        summary="onnxruntime's Where gives +0 where the condition is true and X is -0",
        explanation=(
            "onnxruntime's Where (onnxruntime/core/providers/cpu/tensor/where_op.cc) first builds X' = cond "
            "? X : 0 and Y' = cond ? 0 : Y, then merges them as X' != 0 ? X' : Y'. A -0 taken from X equals "
            "0, so the merge takes Y', which is +0 there. A -0 taken from Y survives (its X' is +0, and Y' "
            "is -0). SONNX selects X itself. Explained: +0 where the condition is true and X is -0."
        ),
        seen_in=(
            "1.21.0, 1.32.0: float16, float and double; Y's -0 is kept",
            "1.26.0, 1.28.0, 1.29.0: the live cases of tests/compare/test_known_operators.py",
        ),
        versions=(("1.21.0", "1.32.0"),),
        predicate=_where_loses_negative_zero_of_x,
    ),
    KnownDivergence(
        id="ORT-CLIP-CROSSED-BOUNDS-NAN",
        operators=("Clip",),
        outputs=(0,),
        summary="onnxruntime's Clip keeps a NaN of X when min > max, where SONNX gives max",
        explanation=(
            "onnxruntime's Clip (onnxruntime/core/providers/cpu/math/clip.cc) computes "
            "X.cwiseMax(min).cwiseMin(max) with Eigen, whose max and min pass a NaN of X through, so a NaN "
            "element stays NaN whatever the bounds. With min > max SONNX (clip.md) makes every element max, "
            "NaN included. Explained: NaN results for NaN elements of X when both bounds are numbers and min"
            " > max."
        ),
        seen_in=(
            "1.21.0, 1.32.0: float16, float and double, every crossed pair of -inf, +-0, +-1, 3, +inf",
            "1.26.0, 1.28.0, 1.29.0: the live cases of tests/compare/test_known_operators.py",
        ),
        versions=(("1.21.0", "1.32.0"),),
        predicate=_clip_crossed_bounds_keeps_nan,
    ),
    KnownDivergence(
        id="ORT-POW-INTEGER-THROUGH-DOUBLE",
        operators=("Pow",),
        outputs=(0,),
        summary=(
            "onnxruntime computes integer Pow in double and converts back: rounded or out-of-range results"
        ),
        explanation=(
            "onnxruntime's Pow for int32/int64 (onnxruntime/core/providers/cpu/math/element_wise_ops.cc, "
            "PowImpl) returns static_cast<T>(std::pow(x, y)), which promotes both operands to double. Powers"
            " above 2^53 come back rounded (int64 3^39 = 4052555153018976267 gives ...256), odd exponents "
            "above 2^53 round to even ((-1)^(2^63 - 1) gives 1), and a power outside the type's range "
            "converts to the type's minimum on x86-64 (2^(2^31 - 2) int32 gives -2^31). SONNX computes the "
            "power in the integers, wrapping around modulo 2^n. Explained: elements equal to that double "
            "computation converted back (truncated, or the minimum when out of range)."
        ),
        seen_in=(
            "1.21.0, 1.32.0 (x86-64): int32 and int64 with same-shape exponents; a scalar exponent of 2 or 3 "
            "takes an integer x * x (* x) path instead, outside SONNX (no broadcasting)",
            "1.26.0, 1.28.0, 1.29.0: the live cases of tests/compare/test_known_operators.py",
        ),
        versions=(("1.21.0", "1.32.0"),),
        predicate=_integer_pow_through_double,
    ),
)


def match_known(case: DivergenceCase, table: Sequence[KnownDivergence] = KNOWN) -> list[KnownMatch]:
    """Every known behaviour that accounts for at least one mismatching element of ``case``."""
    matches: list[KnownMatch] = []
    for entry in table:
        explained = int(np.count_nonzero(entry.explains(case)))
        if explained:
            matches.append(KnownMatch(entry, explained))
    return matches


@dataclass(frozen=True)
class Explanation:
    """What the known behaviours say about one output on one dataset: the entries that match, how many
    mismatching elements some entry explains, and how many are explained by exactly each set of entries
    (so a waiver naming some IDs can tell whether they cover every element they are asked to)."""

    matches: list[KnownMatch]
    explained: int
    by_set: dict[tuple[str, ...], int]


def explain(case: DivergenceCase, table: Sequence[KnownDivergence] = KNOWN) -> Explanation:
    masks = [(entry, entry.explains(case)) for entry in table]
    masks = [(entry, mask) for entry, mask in masks if mask.any()]
    if not masks:
        return Explanation([], 0, {})
    matches = [KnownMatch(entry, int(np.count_nonzero(mask))) for entry, mask in masks]
    code = np.zeros(case.mismatch.shape, dtype=np.uint64)
    for bit, (_, mask) in enumerate(masks):
        code |= mask.astype(np.uint64) << np.uint64(bit)
    values, counts = np.unique(code[code != 0], return_counts=True)
    by_set = {
        tuple(sorted(e.id for bit, (e, _) in enumerate(masks) if int(value) >> bit & 1)): int(count)
        for value, count in zip(values, counts, strict=True)
    }
    return Explanation(matches, int(counts.sum()), by_set)


def explained_mask(case: DivergenceCase, table: Sequence[KnownDivergence] = KNOWN) -> np.ndarray:
    """The mismatching elements that some known behaviour accounts for."""
    mask = np.zeros(case.mismatch.shape, dtype=bool)
    for entry in table:
        mask |= entry.explains(case)
    return mask


def by_id(divergence_id: str) -> KnownDivergence:
    for entry in KNOWN:
        if entry.id == divergence_id:
            return entry
    raise KeyError(divergence_id)
