"""Gemm's IEEE evaluations written out in numpy, one rounding at a time in the output type: what a runtime
that places alpha and beta elsewhere than SONNX's reference computes
(docs/readings.md#gemm-attributes-in-the-draft).

``evaluate`` is the runtime under test of the Gemm tests: alpha folded into A or B (OpenVINO folds it into a
weight), applied to each rounded product, or to the sum (onnxruntime's MLAS: alpha x the float32 A x B); beta
multiplying C, or C not read at all when beta = 0 (BLAS); alpha and beta converted to the type first or not;
the products rounded to the type and summed in a chosen order.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

PLACES = ("operand-a", "operand-b", "product", "sum")
ORDERS = ("c-first", "c-last-backward")


@dataclass(frozen=True)
class Evaluation:
    place: str = "sum"  # where alpha is applied
    read_c: bool = True  # False: C not read (beta = 0 only)
    alpha_in_type: bool = True  # alpha converted to the type before it multiplies
    beta_in_type: bool = True
    order: str = "c-first"  # "c-first": beta C, then k = 0..n-1; "c-last-backward": k = n-1..0, then beta C


def evaluations(beta: float) -> Iterator[Evaluation]:
    """Every evaluation of the family (with both orders) for a node of this beta."""
    reads = (True, False) if beta == 0 else (True,)
    for place, read_c, alpha_t, beta_t, order in itertools.product(
        PLACES, reads, (True, False), (True, False), ORDERS
    ):
        yield Evaluation(place, read_c, alpha_t, beta_t, order)


def _scale(factor: float, values: np.ndarray, in_type: bool) -> np.ndarray:
    """factor x values rounded once to the values' type (factor first rounded to the type when ``in_type``):
    the float64 product of a float32 factor and a value of a type up to float32 is exact."""
    dtype = values.dtype
    with np.errstate(all="ignore"):
        f = float(dtype.type(factor)) if in_type else factor
        return (np.float64(f) * values.astype(np.float64)).astype(dtype)


def evaluate(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray | None,
    alpha: float,
    beta: float,
    how: Evaluation,
    trans_a: bool = False,
    trans_b: bool = False,
) -> np.ndarray:
    """Y = alpha (A' x B') + beta C evaluated as ``how`` says, every operation rounded to A's type."""
    dtype = a.dtype
    alpha, beta = float(np.float32(alpha)), float(np.float32(beta))  # ONNX's FLOAT attributes
    a = a.T if trans_a else a
    b = b.T if trans_b else b
    if how.place == "operand-a":
        a = _scale(alpha, a, how.alpha_in_type)
    elif how.place == "operand-b":
        b = _scale(alpha, b, how.alpha_in_type)
    m, n, p = a.shape[0], a.shape[1], b.shape[1]
    with np.errstate(all="ignore"):
        c_term = None
        if c is not None and how.read_c:
            c_term = _scale(beta, np.broadcast_to(c, (m, p)).astype(dtype), how.beta_in_type)

        def product(k: int) -> np.ndarray:
            value = (a[:, k : k + 1] * b[k : k + 1, :]).astype(dtype)
            return _scale(alpha, value, how.alpha_in_type) if how.place == "product" else value

        ks = range(n) if how.order == "c-first" else range(n - 1, -1, -1)
        acc = np.zeros((m, p), dtype)
        if c_term is not None and how.order == "c-first" and how.place != "sum":
            acc = c_term.copy()
        for k in ks:
            acc = (acc + product(k)).astype(dtype)
        if how.place == "sum":
            acc = _scale(alpha, acc, how.alpha_in_type)
            if c_term is not None:
                acc = (acc + c_term).astype(dtype)
        elif c_term is not None and how.order != "c-first":
            acc = (acc + c_term).astype(dtype)
    return acc
