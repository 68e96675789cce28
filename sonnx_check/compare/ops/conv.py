"""Conv's own comparison facts (rules/Conv.toml names them): the predicate of its known onnxruntime departure
over dilation holes. Its bound and its other departures are the products' (compare/ops/products.py)."""

from __future__ import annotations

import numpy as np

from sonnx_check.compare.judging.known_departures import DivergenceCase, attribute, input_value, none


def dilation_holes_skipped(case: DivergenceCase) -> np.ndarray:
    """NaN in SONNX's result only because a hole of the dilated kernel (an operand 0) meets an infinite or
    NaN X: the same convolution with the holes skipped is not NaN there, and neither is onnxruntime's."""
    from sonnx_check.reference import ReferenceError as KernelRefusal
    from sonnx_check.reference.conv import conv

    x, w, b = input_value(case, 0), input_value(case, 1), input_value(case, 2)
    dilations = list(attribute(case.node, "dilations", [1, 1]))
    if case.actual.dtype.kind != "f" or x is None or w is None or max(dilations, default=1) <= 1:
        return none(case)
    try:
        skipped = conv(
            x, w, b, strides=list(attribute(case.node, "strides", [1, 1])),
            pads=list(attribute(case.node, "pads", [0, 0, 0, 0])), dilations=dilations,
            group=int(attribute(case.node, "group", 1)), holes_are_operands=False,
        )  # fmt: skip
    except KernelRefusal:
        return none(case)
    if skipped.shape != case.expected.shape:
        return none(case)
    return np.isnan(case.expected) & ~np.isnan(skipped) & ~np.isnan(case.actual)
