"""Gemm reference kernel (SONNX draft, based on Gemm-13), written from ops/gemm/gemm.md as the draft states
it:

    Y = (A x B) + C,   y_ij = sum_{k=1}^{n} a_ik b_kj + c_ij,   A (m x n), B (n x p), C (m x p)

The draft's restrictions are encoded as the catalogue reads them: two-dimensional A and B (Gemm.R1); alpha,
beta, transA and transB "not supported", i.e. only their neutral values 1.0, 1.0, 0, 0 (Gemm.R2; absent
attributes take these ONNX defaults); C of exactly (m x p), no broadcasting (Gemm.R3); C present (Gemm.R4).
Types: float16, float, double, one for all (Gemm.types, the catalogue's reading of a draft without a type
section).

Accuracy: the exact value of the n products plus c_ij, rounded once to the type (correctly rounded; the
kernel's own error is at most half an ulp; see products_common). IEEE 754 special values on the terms as for
MatMul, C included (C = NaN gives NaN, +inf + -inf gives NaN); an exact zero is -0 only when every product
and c_ij are -0. ``gemm_abs`` gives sum |a_ik b_kj| + |c_ij| (float64, rounded up), the quantity of the
sum-of-products bound with n + 1 terms.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.errors import OutsideProfileError, ReferenceError
from sonnx_check.reference.matmul import _checked as _checked_matrices
from sonnx_check.reference.products_common import FLOAT_DTYPES, Products, abs_sum

NEUTRAL = {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0}


def _checked(
    a: np.ndarray, b: np.ndarray, c: np.ndarray | None, max_elements: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a, b = _checked_matrices(a, b, max_elements, op="Gemm")
    if c is None:
        raise OutsideProfileError("Gemm without C: the draft makes C mandatory, use MatMul (Gemm.R4)")
    c = np.asarray(c)
    if c.dtype != a.dtype:
        raise OutsideProfileError(f"Gemm of {a.dtype} with C of {c.dtype}: one type for all (Gemm.types)")
    if a.dtype not in FLOAT_DTYPES:
        raise OutsideProfileError(f"Gemm on {a.dtype}: not a type of the profile (Gemm.types)")
    if c.shape != (a.shape[0], b.shape[1]):
        raise OutsideProfileError(
            f"Gemm with C of shape {list(c.shape)}: the draft gives C the shape (m x p) = "
            f"{[a.shape[0], b.shape[1]]}, without broadcasting (Gemm.R3)"
        )
    return a, b, c


def gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray, *, max_elements: int | None = None) -> np.ndarray:
    """(A x B) + C, correctly rounded."""
    a, b, c = _checked(a, b, c, max_elements)
    wide = [m[None].astype(np.float64) for m in (a, b, c)]
    return Products(*wide, a.dtype).rounded()[0]


def gemm_abs(a: np.ndarray, b: np.ndarray, c: np.ndarray, *, max_elements: int | None = None) -> np.ndarray:
    """An upper bound (float64) of sum_k |a_ik b_kj| + |c_ij|."""
    a, b, c = _checked(a, b, c, max_elements)
    return abs_sum(a[None], b[None], c[None], a.dtype)[0]


def check_attributes(node: onnx.NodeProto) -> None:
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    for name, neutral in NEUTRAL.items():
        if name in attrs and attrs[name] != neutral:
            raise OutsideProfileError(
                f"Gemm with {name}={attrs[name]!r}: the draft supports no scaling or transposition, only "
                f"{name}={neutral!r} (Gemm.R2)"
            )


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    check_attributes(node)
    if len(inputs) < 2 or inputs[0] is None or inputs[1] is None:
        raise ReferenceError("Gemm without A or B")
    c = inputs[2] if len(inputs) > 2 else None
    return [gemm(inputs[0], inputs[1], c, max_elements=max_elements)]


def run_abs(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> np.ndarray:
    """``gemm_abs`` of a node (float64, rounded up), for the sum-of-products bound."""
    check_attributes(node)
    if len(inputs) < 2 or inputs[0] is None or inputs[1] is None:
        raise ReferenceError("Gemm without A or B")
    c = inputs[2] if len(inputs) > 2 else None
    return gemm_abs(inputs[0], inputs[1], c, max_elements=max_elements)


def gemm_with_abs(
    a: np.ndarray, b: np.ndarray, c: np.ndarray, *, max_elements: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``gemm`` and ``gemm_abs`` together (the bound's magnitude also serves tier 1's certificate)."""
    a, b, c = _checked(a, b, c, max_elements)
    magnitude = abs_sum(a[None], b[None], c[None], a.dtype)
    wide = [m[None].astype(np.float64) for m in (a, b, c)]
    return Products(*wide, a.dtype, magnitude=magnitude).rounded()[0], magnitude[0]


def run_with_abs(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> tuple[list[np.ndarray], np.ndarray]:
    check_attributes(node)
    if len(inputs) < 2 or inputs[0] is None or inputs[1] is None:
        raise ReferenceError("Gemm without A or B")
    c = inputs[2] if len(inputs) > 2 else None
    y, bound = gemm_with_abs(inputs[0], inputs[1], c, max_elements=max_elements)
    return [y], bound
