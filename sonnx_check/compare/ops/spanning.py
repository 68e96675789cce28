"""Known runtime departures that span two nodes (their declarations name these predicates): a float16
intermediate kept in float32 (the next node computes on the producer's unrounded result, rounded once),
and a BatchNormalization folded into the Conv before it. Both read the producer of an input through
``DivergenceCase.upstream`` (judging/upstream.py): in context the runtime's values, end to end SONNX's; the
float16 chain follows its producers up to eight levels (a runtime that casts a whole float16 CNN to
float32 keeps no float16 rounding between Conv, Relu, MaxPool and the next Conv)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.compare.judging.floats import gamma
from sonnx_check.compare.judging.known_departures import DivergenceCase, attribute, none
from sonnx_check.compare.ops import kernel_module_function
from sonnx_check.compare.ops.folding import folded_conv
from sonnx_check.compare.ops.products import term_count


def _run(node: object, inputs: Sequence[np.ndarray | None], position: int) -> np.ndarray | None:
    from sonnx_check import reference

    try:
        outputs = reference.run_node(node, list(inputs))  # type: ignore[arg-type]
    except reference.ReferenceError:
        return None
    return np.asarray(outputs[position]) if position < len(outputs) else None


_SUMS = ("Conv", "MatMul", "Gemm")  # sums of products: their float32 result depends on the summation order
_MONOTONE = ("Relu", "MaxPool", "Max", "Clip")  # the radius of the result is at most the inputs' largest
_F32_U = 2.0**-24
_F16_U = 2.0**-11
_F16_SUBNORMAL_HALF_ULP = 2.0**-25
_DEPTH = 8  # producers followed up the chain at most
Widened = tuple[np.ndarray, np.ndarray]  # a float32 chain's value in float64 and the radius it lies within


def _radius(node: onnx.NodeProto, centers: list[np.ndarray | None], radii: list[np.ndarray | None],
            center: np.ndarray) -> np.ndarray | None:  # fmt: skip
    """How far the float32 evaluation of ``node`` may be from ``center`` (its value on the inputs' centres,
    in float64) when each input k is anywhere within radii[k] of centres[k]: the inputs' radii carried
    through the operator, plus the node's own float32 roundings."""
    op = node.op_type
    r = [np.zeros(()) if v is None else v for v in radii]
    rounding = np.abs(center) * _F32_U
    first = centers[0] if centers else None
    second = centers[1] if len(centers) > 1 else None
    if first is None:
        return None
    if op in ("Add", "Sub"):
        return r[0] + r[1] + rounding
    if op == "Mul":
        if second is None:
            return None
        return np.abs(first) * r[1] + np.abs(second) * r[0] + r[0] * r[1] + rounding
    if op in _MONOTONE:
        if op == "MaxPool":  # the largest radius of the window: MaxPool of the (non-negative) radii
            pooled = _run(node, [np.broadcast_to(r[0], first.shape).copy()], 0)
            return None if pooled is None else pooled
        return np.maximum.reduce([np.broadcast_to(x, center.shape) for x in r[: len(centers)]])
    if op == "Flatten":  # a reshape: the radius moves with its element
        return np.broadcast_to(r[0], first.shape).reshape(center.shape)
    if op == "BatchNormalization":
        return _batchnorm_radius(node, centers, r[0], center)
    if op in _SUMS:
        magnitude_of = kernel_module_function(op, "run_abs")
        if magnitude_of is None:
            return None
        inputs = list(centers)
        total = np.asarray(magnitude_of(node, inputs, None), np.float64)
        n = term_count(node, inputs)
        own = float(gamma(n, _F32_U)) * total + n * _F32_U * float(np.finfo(np.float32).tiny)
        if not np.asarray(r[0]).any():
            return own
        # the data's radius through the weights: sum |w| r_x, the magnitude of (r_x, w) without the bias
        spread = [np.broadcast_to(r[0], first.shape).copy(), *inputs[1:2]]
        return own + np.asarray(magnitude_of(node, spread, None), np.float64)
    if op == "BatchNormalization" and len(centers) == 5 and all(c is not None for c in centers):
        # Y = k (X - mean) + B, k = scale / sqrt(var + eps) per channel: X's radius scaled by |k|, plus
        # float32's roundings of the few operations (gamma_6 of the terms' magnitudes, in any order)
        shape = (1, -1) + (1,) * (first.ndim - 2)
        scale, bias, mean, var = (np.asarray(c, np.float64).reshape(shape) for c in centers[1:])
        k = np.abs(scale / np.sqrt(var + float(attribute(node, "epsilon", 1e-5))))
        magnitude = k * (np.abs(first) + np.abs(mean)) + np.abs(bias)
        return k * r[0] + float(gamma(6, _F32_U)) * magnitude
    if op == "Softmax":
        # e^(x_i - M) / sum e^(x_j - M): inputs within r of their centres move each y_i by a factor within
        # e^(±2 max r) of the slice; float32's own roundings (exp, the n-term sum, the quotient) add
        # gamma_(n+3) relative, and a float32 subnormal's absolute error
        axis = int(attribute(node, "axis", -1)) % first.ndim
        spread = np.max(np.broadcast_to(r[0], first.shape), axis=axis, keepdims=True)
        n = first.shape[axis]
        relative = np.expm1(2 * spread) + float(gamma(n + 3, _F32_U))
        return np.abs(center) * relative + float(np.finfo(np.float32).smallest_subnormal)
    return None


def _batchnorm_radius(node: onnx.NodeProto, centers: list[np.ndarray | None], r_x: np.ndarray,
                      center: np.ndarray) -> np.ndarray | None:  # fmt: skip
    """BatchNormalization in float32, in the text's order or folded (X k + (B - mean k), k = scale /
    sqrt(var + epsilon)): |k| r_x carried from X, and the node's own roundings, at most seven on each of
    |k X|, |k mean| and |B| (compare/ops/batchnormalization.py's bound, with float32's u)."""
    if len(centers) < 5 or any(v is None for v in centers[:5]):
        return None
    x, scale, bias, mean, var = (np.asarray(v, np.float64) for v in centers[:5])
    if x.ndim < 2:
        return None
    per_channel = (1, -1, *([1] * (x.ndim - 2)))
    epsilon = float(attribute(node, "epsilon", 1e-5))
    with np.errstate(all="ignore"):
        k = (scale / np.sqrt(var + epsilon)).reshape(per_channel)
        terms = np.abs(k * x) + np.abs(k * mean.reshape(per_channel)) + np.abs(bias.reshape(per_channel))
        own = float(gamma(7, _F32_U)) * terms + np.abs(center) * _F32_U
        return np.abs(k) * np.broadcast_to(r_x, x.shape) + own


def _either_rounding(center: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """The radius of an intermediate of the chain that the runtime may also round to float16 (a tensor it
    materialises: one with two consumers, or one it exposes as a graph output): the float16 rounding of a
    value within ``radius`` of ``center`` is at most half a float16 ulp of it away (relative 2^-11, or 2^-25
    among the subnormals). Measured: OpenVINO 2026.4.1 (f32 hint) on a float16 CNN whose Add takes a MaxPool
    and the Conv fed by it (benchmarks/probe_float16_cnns.py's matmul_cnn_float16)."""
    return radius + (np.abs(center) + radius) * _F16_U + _F16_SUBNORMAL_HALF_ULP


def _widened_value(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None],
                   upstream: object, position: int, depth: int) -> Widened | None:  # fmt: skip
    """``node``'s output ``position`` when it and its float16 producers (up to ``depth`` levels) compute in
    float32 and round nothing in between: the value in float64 and the radius the float32 evaluation lies
    within. None where an operator of the chain is not one this model covers."""
    centers: list[np.ndarray | None] = []
    radii: list[np.ndarray | None] = []
    for k, value in enumerate(inputs):
        found = None
        if value is not None and value.dtype == np.float16 and depth > 0 and callable(upstream):
            producer = upstream(k)
            if producer is not None:
                found = _widened_value(
                    producer.node, producer.inputs, producer.upstream, producer.position, depth - 1
                )
        if found is not None:
            centers.append(found[0])
            radii.append(_either_rounding(*found))
        else:
            wide = None if value is None else value.astype(np.float64)
            centers.append(wide)
            radii.append(None if value is None else np.zeros(()))
    center = _run(node, centers, position)
    if center is None:
        return None
    radius = _radius(node, centers, radii, center.astype(np.float64))
    return None if radius is None else (center.astype(np.float64), np.asarray(radius, np.float64))


def float16_widened_chain(case: DivergenceCase) -> np.ndarray:
    """float16: the node and its float16 producers (up to eight levels up) computed in float32, each
    intermediate kept in float32 or rounded to float16 as the runtime chooses, the result rounded to
    float16, where SONNX rounds every node's result to float16. The chain's value is carried in float64 with
    the radius its float32 evaluation may lie within (each node's roundings; a sum of products'
    gamma_n(2^-24) sum |terms|, in any order; an intermediate's float16 rounding); the element
    is explained when it lies between the float16 roundings of value - radius and value + radius. Covered
    operators: Add, Sub, Mul, Relu, Max, Clip, MaxPool, Conv, MatMul, Gemm, BatchNormalization (and Flatten,
    which moves its elements, inside a chain)."""
    if case.actual.dtype != np.float16 or case.upstream is None:
        return none(case)
    found = _widened_value(case.node, case.inputs, case.upstream, case.output_position, _DEPTH)
    if found is None or found[0].shape != case.actual.shape:
        return none(case)
    center, radius = found
    actual = case.actual.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        lo = (center - radius).astype(np.float16).astype(np.float64)
        hi = (center + radius).astype(np.float16).astype(np.float64)
        return np.isfinite(actual) & (actual >= lo) & (actual <= hi)


def batchnorm_folded_into_conv(case: DivergenceCase) -> np.ndarray:
    """A BatchNormalization whose X is a Conv's output, computed as one convolution with the folded weights
    (``folded_conv``): the element is within gamma_(n+1) M' + n u min-normalized of the SONNX convolution on
    W' and B' (M' its sum of |terms|), or the same NaN or infinity."""
    from sonnx_check.compare.ops.reduced_precision import special_or_within

    folded = folded_conv(case)
    if folded is None:
        return none(case)
    node, inputs = folded
    result = _run(node, inputs, 0)
    magnitude_of = kernel_module_function("Conv", "run_abs")
    if result is None or magnitude_of is None or result.shape != case.actual.shape:
        return none(case)
    magnitude = np.asarray(magnitude_of(node, inputs, None), np.float64)
    n = term_count(node, inputs)
    u = float(np.finfo(case.actual.dtype).eps) / 2
    allowed = float(gamma(n + 1, u)) * magnitude + n * u * float(np.finfo(case.actual.dtype).tiny)
    return special_or_within(case.actual, result, allowed)
