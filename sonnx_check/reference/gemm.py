"""Gemm reference kernel (SONNX draft, based on Gemm-13), written from ops/gemm/gemm.md and the ONNX operator
it restricts:

    Y = alpha * (A' x B') + beta * C,   A' = A or A^T (transA), B' = B or B^T (transB),
    y_ij = alpha * sum_{k=1}^{n} a'_ik b'_kj + beta * c_ij,   A' (m x n), B' (n x p), C broadcast to (m x p)

The draft computes (A x B) + C and lists as restrictions (R2 to R4, marked TBC) what ONNX allows beyond it:
alpha, beta, transA, transB of other than their neutral values, a C broadcast unidirectionally to (m x p), an
absent C. Those restrictions are the static findings (warnings of rules/Gemm.toml); the kernel computes every
Gemm ONNX allows so that such a node is still compared. Refused: A or B of a rank other than 2 (Gemm.R1, ONNX
too), inner dimensions that differ, a C that does not broadcast, a type outside float16, float, double
(Gemm.types), mixed types.

Accuracy:
- alpha = beta = 1 (the draft's Gemm; transpositions change nothing, they only choose the operands): the exact
  value of the n products plus c_ij, rounded once to the type (correctly rounded; the kernel's own error is at
  most half an ulp; see products_common). IEEE 754 special values on the terms as for MatMul, C included
  (C = NaN gives NaN, +inf + -inf gives NaN); an exact zero is -0 only when every product and c_ij are -0.
- other alpha or beta: S = sum_k a'_ik b'_kj correctly rounded to float64 (products_common's float64 tier,
  exact products in any float64 values), then alpha * S + beta * c_ij in float64 IEEE arithmetic (special
  values as the formula gives them: alpha = 0 times an infinite S is NaN), rounded to the type. The reference
  is then within half an ulp of the type plus gamma_3 (float64) * (|alpha| sum |a b| + |beta c|) + (|alpha|
  + 2) u min-normalized (float64) of the exact value: ``bound_terms`` states it, the comparison adds it. Where
  that float64 evaluation is not finite while every operand of the element is (float64 data: alpha * S or
  the sum beyond the float64 range, S beyond it while alpha brings it back), the element is computed exactly
  in integers instead (``_exact_element``).

``run_abs`` gives |alpha| sum |a'_ik b'_kj| + |beta c_ij| (float64, rounded up), the quantity of the
sum-of-products bound.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import onnx

from sonnx_check.reference import constant_cache
from sonnx_check.reference.errors import OutsideProfileError, ReferenceError
from sonnx_check.reference.exact_sums import F64, FLOAT_DTYPES, mantissa_exponent, round_dyadic
from sonnx_check.reference.matmul import _checked as _checked_matrices
from sonnx_check.reference.products_common import Products, abs_sum
from sonnx_check.reference.products_signs import signed_sums
from sonnx_check.reference.products_special import special_values

NEUTRAL = {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0}
_U64, _MIN_NORMAL64 = 2.0**-53, 2.0**-1022


@dataclass(frozen=True)
class GemmAttributes:
    alpha: float = 1.0
    beta: float = 1.0
    trans_a: bool = False
    trans_b: bool = False

    @property
    def scaled(self) -> bool:
        return self.alpha != 1.0 or self.beta != 1.0


def attributes(node: onnx.NodeProto) -> GemmAttributes:
    """The node's attributes, ONNX's defaults for the absent ones; alpha and beta are float32 (ONNX FLOAT)."""
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    return GemmAttributes(
        float(np.float32(attrs.get("alpha", 1.0))),
        float(np.float32(attrs.get("beta", 1.0))),
        bool(attrs.get("transA", 0)),
        bool(attrs.get("transB", 0)),
    )


def _checked(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray | None,
    max_elements: int | None,
    attrs: GemmAttributes = GemmAttributes(),
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """A', B' and C broadcast to (m x p) (a read-only view), or None."""
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim == 2 and attrs.trans_a:
        a = a.T
    if b.ndim == 2 and attrs.trans_b:
        b = b.T
    a, b = _checked_matrices(a, b, max_elements, op="Gemm")
    if a.dtype not in FLOAT_DTYPES:
        raise OutsideProfileError(f"Gemm on {a.dtype}: not a type of the profile (Gemm.types)")
    if c is None:
        return a, b, None
    c = np.asarray(c)
    if c.dtype != a.dtype:
        raise OutsideProfileError(f"Gemm of {a.dtype} with C of {c.dtype}: one type for all (Gemm.types)")
    shape = (a.shape[0], b.shape[1])
    try:
        if c.ndim > 2:
            raise ValueError
        c = np.broadcast_to(c, shape)
    except ValueError:
        raise ReferenceError(
            f"Gemm with C of shape {list(c.shape)}: it does not broadcast to (m x p) = {list(shape)}"
        ) from None
    return a, b, c


def gemm(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray | None,
    *,
    max_elements: int | None = None,
    attrs: GemmAttributes = GemmAttributes(),
) -> np.ndarray:
    """alpha (A' x B') + beta C: correctly rounded when alpha = beta = 1 (module docstring otherwise)."""
    a, b, c = _checked(a, b, c, max_elements, attrs)
    if attrs.alpha == 1.0 and (c is None or attrs.beta == 1.0):
        return _rounded(a, b, c, None)
    return _scaled_by_columns(a, b, c, attrs)


def _scaled_by_columns(
    a: np.ndarray, b: np.ndarray, c: np.ndarray | None, attrs: GemmAttributes
) -> np.ndarray:
    return _by_columns(a, b, c, lambda cols: _scaled(a, b[:, cols], None if c is None else c[:, cols], attrs))


# The most of B' converted to float64 at once (bytes): a large weight (VGG's 25088 x 4096 classifier, 392 MiB
# in float32, 784 MiB in float64) is taken by blocks of columns. Every element of Y is decided from its own
# row of A', column of B' and c_ij alone (correctly rounded, or alpha S + beta c of its correctly rounded S),
# so the blocks give the same bits as one product; each block's float64 copy and the tiers' temporaries are
# freed before the next, instead of the whole weight's several times over.
_BLOCK_BYTES = 32 * 2**20


def _by_columns(
    a: np.ndarray, b: np.ndarray, c: np.ndarray | None, compute: Callable[[slice], np.ndarray]
) -> np.ndarray:
    """``compute(cols)`` (the result's columns ``cols``) over blocks of B's columns, put together."""
    rows, inner, columns = a.shape[0], b.shape[0], b.shape[1]
    width = max(1, _BLOCK_BYTES // (8 * max(inner, rows, 1)))
    if width >= columns:
        return compute(slice(None))
    out = np.empty((rows, columns), dtype=a.dtype)
    for start in range(0, columns, width):
        cols = slice(start, min(start + width, columns))
        out[:, cols] = compute(cols)
    return out


def _rounded(a: np.ndarray, b: np.ndarray, c: np.ndarray | None, magnitude: np.ndarray | None) -> np.ndarray:
    """A' x B' + C correctly rounded to the type, by blocks of columns (``_by_columns``); ``magnitude``:
    sum |a b| + |c| when the caller has it (tier 1's certificate). B' with contiguous columns (a transposed
    weight: transB, as exporters write a Linear layer) is taken as the rows of B'^T (``_rounded_by_rows``)."""
    settled = _settled_by_a(a, b, c)
    if settled is not None:
        return settled
    if b.ndim == 2 and b.shape[1] > 1 and b.strides[0] < b.strides[1]:
        return _rounded_by_rows(a, b, c, magnitude)
    return _rounded_by_columns(a, b, c, magnitude)


def _weight_finite(b: np.ndarray) -> bool:
    """Whether every value of B' is finite, looked at once for a model's weight (constant_cache), by blocks
    of columns (no mask of the whole weight: 100 MB for VGG's classifier)."""

    def every_finite() -> bool:
        width = max(1, _BLOCK_BYTES // (8 * max(b.shape[0], 1)))
        return all(bool(np.isfinite(b[:, s : s + width]).all()) for s in range(0, b.shape[1], width))

    return bool(constant_cache.derived_from_view(b, "every value finite", every_finite))


def _settled_by_a(a: np.ndarray, b: np.ndarray, c: np.ndarray | None) -> np.ndarray | None:
    """Y where A' alone decides it and every b'_kj is finite (an edge dataset on a weight's input), else None:
    - each row of A' holds a NaN or an infinity: each element then has a NaN or infinite term, so it is the
      special value (products_special) its non-finite terms and c_ij give: counted on those k only, on the
      operands in their own type (the counts are exact integers, whatever the type: no float64 copy);
    - A' all +-0 and C finite with no -0: every term is +-0, so y_ij = c_ij exactly (x + +-0 = x for x != 0;
      +0 plus +-0 terms is +0).
    The same bits as the whole product (tests/reference/test_gemm_rows.py), without its passes over B'."""
    if a.size == 0 or b.shape[1] == 0 or not _weight_finite(b):
        return None
    finite_a = np.isfinite(a)
    if not finite_a.all(axis=1).any():
        return _special_by_a(a, b, c, np.flatnonzero(~finite_a.all(axis=0)))
    if c is not None and not a.any() and np.isfinite(c).all() and not (np.signbit(c) & (c == 0)).any():
        return np.array(c, dtype=a.dtype)
    return None


def _special_by_a(a: np.ndarray, b: np.ndarray, c: np.ndarray | None, ks: np.ndarray) -> np.ndarray | None:
    """``_settled_by_a``'s special values, by blocks of B's columns, from the terms of the k in ``ks`` (where
    A' is not finite); None should an element not be special (then the whole product decides it)."""
    every = ks.size == a.shape[1]
    left = a[None] if every else a[None][:, :, ks]
    undecided = False

    def block(cols: slice) -> np.ndarray:
        nonlocal undecided
        right = b[:, cols] if every else b[:, cols][ks]
        shape = (1, a.shape[0], right.shape[1])
        bias = None if c is None else np.broadcast_to(np.asarray(c[:, cols], dtype=np.float64), shape)
        where, values = special_values(left, right[None], bias, shape)
        undecided = undecided or not where.all()
        return values[0].astype(a.dtype)

    y = _by_columns(a, b, c, block)
    return None if undecided else y


def _rounded_by_columns(
    a: np.ndarray, b: np.ndarray, c: np.ndarray | None, magnitude: np.ndarray | None
) -> np.ndarray:
    """``_rounded`` as A' x (blocks of B's columns)."""
    a64 = a[None].astype(np.float64)

    def block(cols: slice) -> np.ndarray:
        return Products(
            a64,
            b[None, :, cols].astype(np.float64),
            None if c is None else c[None, :, cols].astype(np.float64),
            a.dtype,
            magnitude=None if magnitude is None else magnitude[None, :, cols],
        ).rounded()[0]

    return _by_columns(a, b, c, block)


def _rounded_by_rows(
    a: np.ndarray, b: np.ndarray, c: np.ndarray | None, magnitude: np.ndarray | None
) -> np.ndarray:
    """``_rounded`` as Y'^T = B'^T x A'^T, a block of Y's columns from a block of B'^T's rows. Each element
    is the same sum of the same products (and c_ij), correctly rounded, so the same bits (IEEE special
    values and the sign of a zero are symmetric in the factors; tests/reference/test_gemm_rows.py). Why:
    a block of B'^T's rows is one contiguous float64 copy, and the elements left to tier 3 (about 1% of a
    25088-long sum on random data) gather their row of it, where a block of B's columns was copied whole
    (32 MiB) by each tier 3 gather. A weight's finiteness is looked at once, not on every block of every
    dataset (constant_cache); A's on each call."""
    right = a.T[None].astype(np.float64)  # (1, K, M)
    if not np.isfinite(a).all():
        every_finite: bool | None = False  # a non-finite A' is in every block
    else:  # a non-finite weight: None, each block looked at by Products
        every_finite = True if _weight_finite(b) else None
    right_norms = _norms(right, 1)

    def block(cols: slice) -> np.ndarray:
        left = b.T[None, cols].astype(np.float64)  # (1, w, K), C-contiguous
        bias = None if c is None else c[:, cols].T[None].astype(np.float64)
        finite = every_finite
        if finite and bias is not None and not np.isfinite(bias).all():
            finite = False
        norms = None
        if finite and magnitude is None:  # tier 1's Cauchy-Schwarz bound: the weight's part kept
            key = ("row norms", cols.start, cols.stop)
            norms = (constant_cache.derived_from_view(b, key, lambda: _norms(left, 2)), right_norms)
        return (
            Products(
                left,
                right,
                bias,
                a.dtype,
                finite=finite,
                magnitude=None if magnitude is None else magnitude[:, cols].T[None],
                norms=norms,
            )
            .rounded()[0]
            .T
        )

    return _by_columns(a, b, c, block)


def _norms(x: np.ndarray, axis: int) -> np.ndarray:
    """sqrt(sum x^2) along ``axis`` of a stacked matrix in float64, as Products takes its rows' and columns'
    norms (exact_sums._norms)."""
    return np.sqrt(np.einsum("bmk,bmk->bm" if axis == 2 else "bkp,bkp->bp", x, x))


def _scaled(a: np.ndarray, b: np.ndarray, c: np.ndarray | None, attrs: GemmAttributes) -> np.ndarray:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    s = Products(a64[None], b64[None], None, F64).rounded()[0]  # sum a'b' correctly rounded to float64
    with np.errstate(all="ignore"):
        y: np.ndarray = attrs.alpha * s
        if c is not None:
            y = y + attrs.beta * c.astype(np.float64)
    # float64 evaluation beyond its range where the element's operands are all finite: exactly, in integers
    finite = np.isfinite(a64).all(axis=1, keepdims=True) & np.isfinite(b64).all(axis=0, keepdims=True)
    if c is not None:
        finite &= np.isfinite(c)
    redo = np.argwhere(finite & ~np.isfinite(y))
    for i, j in redo:
        y[i, j] = _exact_element(a64[i], b64[:, j], None if c is None else float(c[i, j]), attrs, a.dtype)
    with np.errstate(over="ignore"):
        return y.astype(a.dtype)


def _exact_element(
    row: np.ndarray, col: np.ndarray, c: float | None, attrs: GemmAttributes, dtype: np.dtype
) -> float:
    """alpha * sum_k row[k] col[k] + beta * c for finite operands, exactly in integers, rounded to ``dtype``
    (+0 for an exact zero: the sign of a zero sum of products is not compared)."""
    ml, el = mantissa_exponent(row)
    mr, er = mantissa_exponent(col)
    (ma,), (ea,) = mantissa_exponent(np.array([attrs.alpha]))
    factors = zip(ml.tolist(), mr.tolist(), el.tolist(), er.tolist(), strict=True)
    parts = [(int(ma) * x * y, int(ea) + e + f) for x, y, e, f in factors if x and y]
    if c is not None and c != 0 and attrs.beta != 0:
        (mb,), (eb,) = mantissa_exponent(np.array([attrs.beta]))
        (mc,), (ec,) = mantissa_exponent(np.array([c]))
        parts.append((int(mb) * int(mc), int(eb) + int(ec)))
    if not parts:
        return 0.0
    base = min(e for _, e in parts)
    numerator = sum(m << (e - base) for m, e in parts)
    return 0.0 if numerator == 0 else round_dyadic(numerator, base, dtype)


def gemm_abs(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray | None,
    *,
    max_elements: int | None = None,
    attrs: GemmAttributes = GemmAttributes(),
) -> np.ndarray:
    """An upper bound (float64) of |alpha| sum_k |a'_ik b'_kj| + |beta c_ij|."""
    a, b, c = _checked(a, b, c, max_elements, attrs)
    return _abs(a, b, c, attrs)


def _abs(a: np.ndarray, b: np.ndarray, c: np.ndarray | None, attrs: GemmAttributes) -> np.ndarray:
    if not attrs.scaled:
        return abs_sum(a[None], b[None], None if c is None else c[None], a.dtype)[0]
    total = abs_sum(a[None], b[None], None, a.dtype)[0]
    with np.errstate(over="ignore", invalid="ignore"):
        total = total * abs(attrs.alpha) * (1.0 + 2.0**-52)
        if c is not None:
            total = total + np.abs(c.astype(np.float64)) * abs(attrs.beta) * (1.0 + 2.0**-51)
        total *= 1.0 + 2.0**-52
    return np.where(np.isnan(total), np.inf, total)


def _column_sums(b: np.ndarray) -> np.ndarray:
    """sum_k |b'_kj| per column in float64, by blocks of 64-column multiples (each column's sum as the whole
    array's, without the whole weight in float64)."""
    width = _BLOCK_BYTES // (8 * max(1, b.shape[0]))
    width = max(64, width - width % 64)
    out = np.empty(b.shape[1])
    starts = list(range(0, b.shape[1], width))
    if len(starts) > 1 and b.shape[1] - starts[-1] == 1:
        # a lone last column would be summed as a 1-D array (numpy's pairwise order), the others row by row
        starts.pop()
    for start, end in zip(starts, [*starts[1:], b.shape[1]], strict=True):
        out[start:end] = np.abs(b[:, start:end].astype(np.float64)).sum(axis=0)
    return out


def check_attributes(node: onnx.NodeProto) -> GemmAttributes:
    """The attributes the kernel reads (every value ONNX allows is computed: nothing is refused here)."""
    return attributes(node)


def _operands(inputs: Sequence[np.ndarray | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    if len(inputs) < 2 or inputs[0] is None or inputs[1] is None:
        raise ReferenceError("Gemm without A or B")
    c = inputs[2] if len(inputs) > 2 else None
    return inputs[0], inputs[1], c


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    a, b, c = _operands(inputs)
    return [gemm(a, b, c, max_elements=max_elements, attrs=attributes(node))]


def run_abs(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> np.ndarray:
    """``gemm_abs`` of a node (float64, rounded up), for the sum-of-products bound."""
    a, b, c = _operands(inputs)
    return gemm_abs(a, b, c, max_elements=max_elements, attrs=attributes(node))


def gemm_with_abs(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray | None,
    *,
    max_elements: int | None = None,
    attrs: GemmAttributes = GemmAttributes(),
) -> tuple[np.ndarray, np.ndarray]:
    """``gemm`` and ``gemm_abs`` together (the bound's magnitude also serves tier 1's certificate)."""
    a, b, c = _checked(a, b, c, max_elements, attrs)
    magnitude = _abs(a, b, c, attrs)
    if attrs.scaled:
        return _scaled_by_columns(a, b, c, attrs), magnitude
    return _rounded(a, b, c, magnitude), magnitude


def run_with_abs(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> tuple[list[np.ndarray], np.ndarray]:
    a, b, c = _operands(inputs)
    y, bound = gemm_with_abs(a, b, c, max_elements=max_elements, attrs=attributes(node))
    return [y], bound


def run_signed_sums(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]
) -> tuple[np.ndarray, np.ndarray]:
    """Upper bounds of the sums of the positive and of |the negative| finite terms alpha a'b' and beta c
    (products_signs), for the comparison's reading of an infinite term meeting an overflowed one."""
    attrs = attributes(node)
    return signed_sums(run_abs, node, inputs, product_sign=attrs.alpha, bias_sign=attrs.beta)


@dataclass(frozen=True)
class BoundTerms:
    """What the sum-of-products bound of one Gemm node needs beyond sum |terms| (``run_abs``): the number of
    roundings a term goes through (gamma's n), in the output type; the reference's own error beyond its half
    ulp, as a coefficient of sum |terms| (float64 roundings) and an absolute part; and the absolute error the
    runtime's underflowing multiplications may add, per element (broadcastable to the output)."""

    roundings: int
    reference_relative: float
    reference_absolute: float
    underflow_units: np.ndarray | float  # times u * min-normalized of the output type


def bound_terms(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> BoundTerms:
    """For alpha = beta = 1: n = n products + C, each term one product rounding and at most n - 1 additions
    (gamma_n), n underflowing products; the reference correctly rounded.

    Otherwise a term alpha a b goes through at most two multiplications (alpha applied to a factor, to the
    product or to the sum), beta c through one, and alpha and beta may be rounded to the type first (float16
    data): gamma_(n+2). An underflowing multiplication adds at most u min-normalized (half the subnormal
    spacing), scaled by what multiplies it afterwards: |alpha| per product when alpha comes after, |b'_kj| or
    |a'_ik| when alpha was folded into the other factor first: u min-normalized * (n max(1, |alpha|) + 2 +
    sum_k |a'_ik| + sum_k |b'_kj|) covers every order, times (1 + gamma) for the roundings after it."""
    a, b, c = _operands(inputs)
    attrs = attributes(node)
    a2, b2, c2 = _checked(a, b, c, None, attrs)
    n = a2.shape[1] + (c2 is not None)
    if not attrs.scaled:
        return BoundTerms(n, 0.0, 0.0, float(n))
    with np.errstate(over="ignore", invalid="ignore"):
        rows = np.abs(a2.astype(np.float64)).sum(axis=1)[:, None]
        cols = _column_sums(b2)[None, :]
        units = (n * max(1.0, abs(attrs.alpha)) + 2 + rows + cols) * (1 + 2.0**-40)
    units = np.where(np.isnan(units), np.inf, units)
    reference_relative = 3 * _U64 / (1 - 3 * _U64) * (1 + 2.0**-40)
    reference_absolute = (abs(attrs.alpha) + 2) * _U64 * _MIN_NORMAL64 * (1 + 2.0**-40)
    return BoundTerms(n + 2, reference_relative, reference_absolute, units)
