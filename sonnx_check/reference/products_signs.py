"""The positive and the negative parts of a sum of products's finite terms, per output element (Conv, MatMul,
Gemm): upper bounds of P = sum of the positive finite terms and N = sum of |the negative ones| (a bias counted
with its sign), the terms that involve a non-finite operand left out.

They decide which IEEE 754 evaluations can meet an infinite term with an infinity of the other sign
(docs/readings.md#sums-of-products-in-floating-point): an implementation that rounds each product to the
output type, or a partial sum, overflows to -inf only where N can reach the largest finite value, to +inf only
where P can, and -inf + +inf is NaN. Each bound is the kernel module's own ``run_abs`` (a rigorous upper bound
of sum |a b| + |c|) on the inputs with the other sign, and every non-finite value, set to zero: four of its
products, computed only when a comparison meets a NaN against an infinite reference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import onnx

RunAbs = Callable[[onnx.NodeProto, Sequence[np.ndarray | None], int | None], np.ndarray]
RunSignedSums = Callable[[onnx.NodeProto, Sequence[np.ndarray | None]], tuple[np.ndarray, np.ndarray]]


def _part(a: np.ndarray | None, positive: bool) -> np.ndarray | None:
    """The finite values of one sign (the others zero), in the input's own type."""
    if a is None:
        return None
    a = np.asarray(a)
    with np.errstate(invalid="ignore"):
        keep = np.isfinite(a) & ((a > 0) if positive else (a < 0))
    return np.where(keep, a, np.zeros((), dtype=a.dtype))


def signed_sums(
    run_abs: RunAbs,
    node: onnx.NodeProto,
    inputs: Sequence[np.ndarray | None],
    *,
    product_sign: float = 1.0,
    bias_sign: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """(P, N) upper bounds, float64, of the output's shape. ``inputs`` are (X or A, W or B, bias or C or
    absent); ``product_sign`` / ``bias_sign``: the sign of a factor the kernel applies to every product / to
    the bias (Gemm's alpha and beta; ``run_abs`` already scales by their magnitudes)."""
    first, second = np.asarray(inputs[0]), np.asarray(inputs[1])
    bias = inputs[2] if len(inputs) > 2 and inputs[2] is not None else None
    zero_bias = None if bias is None else np.zeros_like(np.asarray(bias))

    def run(a: np.ndarray | None, b: np.ndarray | None, c: np.ndarray | None) -> np.ndarray:
        operands = [a, b] if bias is None else [a, b, c]
        return np.asarray(run_abs(node, operands, None), dtype=np.float64)

    pos_a, neg_a = _part(first, True), _part(first, False)
    pos_b, neg_b = _part(second, True), _part(second, False)
    positive = run(pos_a, pos_b, zero_bias) + run(neg_a, neg_b, zero_bias)  # (+)(+) and (-)(-)
    negative = run(pos_a, neg_b, zero_bias) + run(neg_a, pos_b, zero_bias)
    if product_sign < 0:
        positive, negative = negative, positive
    if bias is not None:
        zero_a, zero_b = np.zeros_like(first), np.zeros_like(second)
        bias_pos, bias_neg = run(zero_a, zero_b, _part(bias, True)), run(zero_a, zero_b, _part(bias, False))
        if bias_sign < 0:
            bias_pos, bias_neg = bias_neg, bias_pos
        positive, negative = positive + bias_pos, negative + bias_neg
    # the float64 additions of upper bounds, rounded up
    return positive * (1.0 + 2.0**-51), negative * (1.0 + 2.0**-51)


def unsigned_products_signed_sums(run_abs: RunAbs) -> RunSignedSums:
    """The ``run_signed_sums`` of a kernel module whose products and bias keep their operands' signs (Conv,
    MatMul; Gemm's alpha and beta may flip them, its module passes them to ``signed_sums``): (P, N) of a node
    and its inputs, from the module's own ``run_abs``, for the comparison's reading of an infinite term
    meeting an overflowed one."""

    def run_signed_sums(
        node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]
    ) -> tuple[np.ndarray, np.ndarray]:
        return signed_sums(run_abs, node, inputs)

    return run_signed_sums
