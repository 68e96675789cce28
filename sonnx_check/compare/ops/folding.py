"""A BatchNormalization folded into the Conv before it, as runtimes compute it (one convolution with the
normalisation in its weights and bias): shared by the departures that fold (compare/ops/spanning.py in
float32, compare/ops/reduced_precision.py in bfloat16)."""

from __future__ import annotations

import numpy as np
import onnx

from sonnx_check.compare.judging.known_departures import DivergenceCase, attribute


def folded_conv(case: DivergenceCase) -> tuple[onnx.NodeProto, list[np.ndarray | None]] | None:
    """A BatchNormalization whose X is a Conv's output as one convolution: the Conv node and its inputs X,
    W' = W s and B' = B s + (bias - mean s), s = scale / sqrt(var + epsilon), W' and B' computed in float64
    and rounded to the output type. None where X is not a Conv's output or a value is unknown."""
    if case.actual.dtype.kind != "f" or case.upstream is None or len(case.inputs) < 5:
        return None
    conv = case.upstream(0)
    if conv is None or conv.node.op_type != "Conv" or conv.position != 0 or len(conv.inputs) < 2:
        return None
    x, w = conv.inputs[0], conv.inputs[1]
    b = conv.inputs[2] if len(conv.inputs) > 2 else None
    scale, bias, mean, var = case.inputs[1:5]
    if x is None or w is None or scale is None or bias is None or mean is None or var is None:
        return None
    dtype = case.actual.dtype
    epsilon = float(attribute(case.node, "epsilon", 1e-5))
    with np.errstate(all="ignore"):
        s = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + epsilon)
        folded_w = (w.astype(np.float64) * s.reshape(-1, *([1] * (w.ndim - 1)))).astype(dtype)
        shift = bias.astype(np.float64) - mean.astype(np.float64) * s
        base = np.zeros(w.shape[0]) if b is None else b.astype(np.float64)
        folded_b = (base * s + shift).astype(dtype)
    return conv.node, [x, folded_w, folded_b]
