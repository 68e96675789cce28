"""MatMul reference kernel (SONNX, based on MatMul-13), written from ops/matmul/matmul.md and its accuracy
annex matmul_acc.md.

    Y[i, j] = sum_{k=0}^{dA1-1} A[i, k] * B[k, j]        (A and B matrices, dA1 = dB0)

- float16, float, double (float section, IEEE 754): the exact value of the sum, rounded once to the type:
  correctly rounded, so the kernel's own error is at most half an ulp (products_common says how: float64
  accumulation with a certified bound for float16/float32, error-free splitting for float64, exact integer
  arithmetic for the elements those cannot decide). Special values follow IEEE 754 on the terms: NaN from a
  NaN operand, 0 * inf or +inf + -inf; +-inf from an infinite term; overflow only when the exact sum rounds
  beyond the largest finite value (the text's examples 2 and 3). An exact zero is -0 only when every term is
  -0 (an empty sum, dA1 = 0, is +0).
- int32, int64, uint32, uint64 (int section, x+y = Add int, x*y = Mul int): exact modulo 2^bits, i.e. two's
  complement wrap-around of every product and sum, bit for bit (computed in uint64, whose wrap-around is
  defined, then reduced to the type).

``matmul_abs`` gives sum_k |A[i,k] * B[k,j]| per element (float64, rounded up), the quantity the annex's
sum-of-products bound multiplies. Refused: rank other than 2 (MatMul.R1), dA1 != dB0 (MatMul.A.C2), a type
outside the sections or mixed types (MatMul.types).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.reference.errors import OutsideProfileError, ReferenceError
from sonnx_check.reference.exact_sums import FLOAT_DTYPES
from sonnx_check.reference.products_common import Products, abs_sum, narrow_magnitudes
from sonnx_check.reference.products_signs import unsigned_products_signed_sums

INT_DTYPES = (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.uint32), np.dtype(np.uint64))


def _checked(
    a: np.ndarray, b: np.ndarray, max_elements: int | None, op: str = "MatMul"
) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != 2 or b.ndim != 2:
        raise OutsideProfileError(
            f"{op} of tensors of rank {a.ndim} and {b.ndim}: SONNX specifies matrices ({op}.R1)"
        )
    if a.dtype != b.dtype:
        raise OutsideProfileError(f"{op} of {a.dtype} and {b.dtype}: A and B have one type ({op}.types)")
    if a.shape[1] != b.shape[0]:
        rule = "MatMul.A.C2" if op == "MatMul" else "Gemm.B.C1"
        raise ReferenceError(
            f"{op} of {list(a.shape)} by {list(b.shape)}: the inner dimensions differ ({rule})"
        )
    ensure_within_budget(f"{op} output Y", (a.shape[0], b.shape[1]), max_elements)
    return a, b


def matmul(a: np.ndarray, b: np.ndarray, *, max_elements: int | None = None) -> np.ndarray:
    a, b = _checked(a, b, max_elements)
    if a.dtype in INT_DTYPES:
        with np.errstate(over="ignore"):
            return np.matmul(a.astype(np.uint64), b.astype(np.uint64)).astype(a.dtype)
    if a.dtype not in FLOAT_DTYPES:
        raise OutsideProfileError(f"MatMul on {a.dtype}: not a type of the profile (MatMul.types)")
    finite = bool(np.isfinite(a).all() and np.isfinite(b).all())  # on the narrow type: half the bytes
    wide = Products(a[None].astype(np.float64), b[None].astype(np.float64), None, a.dtype, finite=finite)
    return wide.rounded()[0]


def matmul_abs(a: np.ndarray, b: np.ndarray, *, max_elements: int | None = None) -> np.ndarray:
    """An upper bound (float64, tight to a relative 2(n+2)u of its type) of sum_k |A[i,k] * B[k,j]|."""
    a, b = _checked(a, b, max_elements)
    if a.dtype not in FLOAT_DTYPES:
        raise OutsideProfileError(f"MatMul bound on {a.dtype}: integer products are exact (MatMul.types)")
    return abs_sum(a[None], b[None], None, a.dtype)[0]


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    if len(inputs) != 2 or inputs[0] is None or inputs[1] is None:
        raise ReferenceError("MatMul needs inputs A and B")
    return [matmul(inputs[0], inputs[1], max_elements=max_elements)]


def run_abs(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> np.ndarray:
    """``matmul_abs`` of a node (float64, rounded up), for the sum-of-products bound."""
    if len(inputs) != 2 or inputs[0] is None or inputs[1] is None:
        raise ReferenceError("MatMul needs inputs A and B")
    return matmul_abs(inputs[0], inputs[1], max_elements=max_elements)


def matmul_with_abs(
    a: np.ndarray, b: np.ndarray, *, max_elements: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``matmul`` and ``matmul_abs`` together: the bound's sum of |products| also bounds the error of tier 1,
    which then needs no Cauchy-Schwarz norms."""
    a, b = _checked(a, b, max_elements)
    if a.dtype not in FLOAT_DTYPES:
        raise OutsideProfileError(f"MatMul bound on {a.dtype}: integer products are exact (MatMul.types)")
    if a.dtype == np.float64:
        finite = bool(np.isfinite(a).all() and np.isfinite(b).all())
        magnitude = abs_sum(a[None], b[None], None, a.dtype, finite=finite)
    else:  # the magnitudes' ranges say whether all is finite and which product the bound needs
        left, right, finite, wide = narrow_magnitudes(a[None], b[None])
        magnitude = abs_sum(left, right, None, a.dtype, finite=finite, absolute=True, wide=wide)
    products = Products(
        a[None].astype(np.float64), b[None].astype(np.float64), None, a.dtype, finite=finite,
        magnitude=magnitude,
    )  # fmt: skip
    return products.rounded()[0], magnitude[0]


def run_with_abs(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> tuple[list[np.ndarray], np.ndarray]:
    if len(inputs) != 2 or inputs[0] is None or inputs[1] is None:
        raise ReferenceError("MatMul needs inputs A and B")
    y, bound = matmul_with_abs(inputs[0], inputs[1], max_elements=max_elements)
    return [y], bound


run_signed_sums = unsigned_products_signed_sums(run_abs)
