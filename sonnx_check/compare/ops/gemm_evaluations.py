"""Gemm's IEEE evaluations (issue 29 item 7; docs/readings.md#gemm-attributes-in-the-draft): the values an
IEEE 754 evaluation of alpha (A' x B') + beta C gives, element by element, when alpha and beta are applied
where the reference does not apply them.

The reference computes alpha * S + beta * c from S = sum_k a'_ik b'_kj (reference/gemm.py). ONNX names no
order, and every IEEE evaluation of the formula is the text's:

- alpha applied to an operand (each element of A', or of B', rounded to the type: a weight alpha is folded
  into), to each product (alpha x round(a b)) or to the sum (alpha x S, S summed in the type);
- beta applied to C, its one operand, or, with beta = 0, C not read at all (the BLAS convention);
- alpha and beta converted to the type first or not (they differ for float16 data only);
- the products rounded to the type or fused into the sum, the sums in any order (readings (c) and (d) of
  every sum of products).

For finite values every such evaluation is within the bound (``bound_terms`` in reference/gemm.py counts the
roundings and the underflows of each placement). They part from the reference in their special values: 0.25
x a subnormal weight is 0, and 0 x inf is NaN where the reference has inf; a float32 A x B overflows to inf
before alpha = 0.25 brings it back into range; 0 x inf = NaN in the reference is alpha A x B when C is not
read. ``GemmEvaluations`` says, for the elements where the reference or the runtime is not finite, which
values these evaluations give, and nothing else is accepted.

How, per element and per evaluation, from the element's own operands in the type: a term (a product, the
scaled C) is NaN, +inf or -inf by IEEE 754 from its factors (0 x inf = NaN), or finite; alpha's operand or
product placement is computed as the type computes it (``round(alpha a)``, ``alpha x round(a b)``). A sum of
those terms, in any order, gives NaN where a term is NaN or both infinities occur; an infinity where one
occurs, or NaN where finite terms of the other sign overflow; and where no term is infinite, a finite value,
+inf where the positive finite terms P can overflow (P (1 + gamma_(n+2)) reaches the largest finite value:
Higham's model, as reading (c)), -inf where the negative ones N can, NaN where both can. alpha applied to the
sum maps S's outcomes (alpha x inf = inf of the product's sign, 0 x inf = NaN) before beta x c is added. The
union over the placements is what an element admits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import onnx

from sonnx_check.compare.judging.floats import Format, gamma, ulp
from sonnx_check.compare.judging.tolerance import NodeData, RuleResult
from sonnx_check.reference import gemm as gemm_kernel
from sonnx_check.reference.errors import ReferenceError

POSITIVE, NEGATIVE, NAN, FINITE = 1, 2, 4, 8  # outcome bits; the first three are the exported suite's codes
_BLOCK_TERMS = 1 << 18  # terms of the elements judged at once (a few float64 arrays of this size)


@dataclass(frozen=True)
class _Terms:
    """What a sum of some terms can give, per element: whether a term is NaN, +inf or -inf, and the sums of
    the positive and of |the negative| finite terms (scaled like the threshold, rounded up)."""

    nan: np.ndarray
    positive_infinity: np.ndarray
    negative_infinity: np.ndarray
    positive: np.ndarray
    negative: np.ndarray

    def __add__(self, other: _Terms) -> _Terms:
        return _Terms(
            self.nan | other.nan,
            self.positive_infinity | other.positive_infinity,
            self.negative_infinity | other.negative_infinity,
            self.positive + other.positive,
            self.negative + other.negative,
        )


def _terms(x: np.ndarray, y: np.ndarray, scale: float) -> _Terms:
    """The terms x[:, k] * y[:, k] (float64 values of the type, broadcast to (elements, terms)), each the IEEE
    product of its factors where one is not finite, else a finite real, its magnitude summed scaled by
    ``scale`` per factor (float64 data: so that no finite product overflows here)."""
    with np.errstate(all="ignore"):
        special = ~(np.isfinite(x) & np.isfinite(y))
        value = x * y
        finite = np.where(special, 0.0, (x * scale) * (y * scale))
        count = finite.shape[-1]
        up = 1.0 + (count + 1) * 2.0**-52  # the float64 sums below, rounded up
        return _Terms(
            (special & np.isnan(value)).any(axis=-1),
            (special & (value == np.inf)).any(axis=-1),
            (special & (value == -np.inf)).any(axis=-1),
            np.maximum(finite, 0.0).sum(axis=-1) * up,
            np.maximum(-finite, 0.0).sum(axis=-1) * up,
        )


def _none(size: int) -> _Terms:
    no, zero = np.zeros(size, dtype=bool), np.zeros(size)
    return _Terms(no, no, no, zero, zero)


def _sum_outcomes(terms: _Terms, threshold: float) -> np.ndarray:
    """The outcome bits of a sum of ``terms`` in any order, in the type."""
    over_p, over_n = terms.positive >= threshold, terms.negative >= threshold
    nan_only = terms.nan | (terms.positive_infinity & terms.negative_infinity)
    finite = FINITE | _bit(over_p, POSITIVE) | _bit(over_n, NEGATIVE) | _bit(over_p & over_n, NAN)
    bits = np.where(terms.negative_infinity, NEGATIVE | _bit(over_p, NAN), finite)
    bits = np.where(terms.positive_infinity, POSITIVE | _bit(over_n, NAN), bits)
    return np.where(nan_only, NAN, bits).astype(np.int8)


def _bit(mask: np.ndarray, bit: int) -> np.ndarray:
    return np.where(mask, bit, 0)


def _scaled_sum(s: _Terms, alpha: float, threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """alpha x S for a sum S of the terms ``s``: its outcome bits and, for its finite values, the positive
    and negative parts (scaled), before beta x c is added."""
    bits = _sum_outcomes(s, threshold)
    has = {bit: (bits & bit) > 0 for bit in (POSITIVE, NEGATIVE, NAN, FINITE)}
    nan = has[NAN].copy()
    if np.isnan(alpha):
        return np.where(bits > 0, NAN, 0).astype(np.int8), s.positive * 0, s.negative * 0
    if alpha == 0:  # 0 x inf = NaN; 0 x finite = 0
        nan |= has[POSITIVE] | has[NEGATIVE]
        out = _bit(nan, NAN) | _bit(has[FINITE], FINITE)
        return out.astype(np.int8), s.positive * 0, s.negative * 0
    up, down = (POSITIVE, NEGATIVE) if alpha > 0 else (NEGATIVE, POSITIVE)
    out = _bit(nan, NAN) | _bit(has[POSITIVE], up) | _bit(has[NEGATIVE], down)
    if np.isinf(alpha):  # inf x a finite S: an infinity of its sign, NaN where S may be 0
        finite = has[FINITE]
        out |= _bit(finite & (s.positive > 0), up) | _bit(finite & (s.negative > 0), down)
        out |= _bit(finite, NAN)
        return out.astype(np.int8), s.positive * 0, s.negative * 0
    size = abs(alpha)
    positive, negative = (s.positive, s.negative) if alpha > 0 else (s.negative, s.positive)
    with np.errstate(over="ignore"):
        positive, negative = positive * size, negative * size
    out |= _bit(has[FINITE], FINITE)
    out |= _bit(has[FINITE] & (positive >= threshold), POSITIVE)
    out |= _bit(has[FINITE] & (negative >= threshold), NEGATIVE)
    return out.astype(np.int8), positive, negative


def _plus_term(
    bits: np.ndarray, positive: np.ndarray, negative: np.ndarray, term: _Terms, threshold: float
) -> np.ndarray:
    """The outcome bits of x + t, x of outcome ``bits`` (finite values of parts ``positive``, ``negative``)
    and t one term (beta x c)."""
    has = {bit: (bits & bit) > 0 for bit in (POSITIVE, NEGATIVE, NAN, FINITE)}
    t_nan, t_pos, t_neg = term.nan, term.positive_infinity, term.negative_infinity
    t_finite = ~(t_nan | t_pos | t_neg)
    out = _bit(has[NAN] | (has[POSITIVE] & (t_nan | t_neg)) | (has[NEGATIVE] & (t_nan | t_pos)), NAN)
    out |= _bit(has[POSITIVE] & ~(t_nan | t_neg), POSITIVE) | _bit(has[NEGATIVE] & ~(t_nan | t_pos), NEGATIVE)
    finite = has[FINITE]
    out |= _bit(finite & t_nan, NAN) | _bit(finite & t_pos, POSITIVE) | _bit(finite & t_neg, NEGATIVE)
    finite &= t_finite
    out |= _bit(finite, FINITE)
    out |= _bit(finite & (positive + term.positive >= threshold), POSITIVE)
    out |= _bit(finite & (negative + term.negative >= threshold), NEGATIVE)
    return out.astype(np.int8)


@dataclass(frozen=True)
class _Operands:
    """A', B' and C broadcast to (m x p) in the output type, alpha and beta (float32 values, as ONNX stores
    them), and the type's facts."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray | None
    alpha: float
    beta: float
    dtype: np.dtype

    @property
    def scale(self) -> float:
        """float64 factors scaled by 2^-540 each so that a finite product stays finite in float64."""
        return 2.0**-540 if self.dtype == np.float64 else 1.0

    def threshold(self) -> float:
        """The least positive (or negative) part of a sum whose partial sums can overflow in the type: its
        largest finite value over 1 + gamma_(n+2) (n terms, C one of them; alpha and beta one rounding
        each), scaled like the parts."""
        n = self.a.shape[1] + (self.c is not None) + 2
        u = float(np.finfo(self.dtype).eps) / 2
        # scaled twice, not by scale**2 (2^-1080 is below float64's range)
        return float(np.finfo(self.dtype).max) * self.scale * self.scale / (1 + float(gamma(n, u)))

    def variants(self, value: float) -> list[float]:
        """alpha or beta as the type holds it (float16: rounded, maybe to 0 or inf) and as given."""
        with np.errstate(over="ignore"):
            converted = float(self.dtype.type(value))
        return [converted] if converted == value or np.isnan(value) else [converted, value]

    def rounded(self, values: np.ndarray) -> np.ndarray:
        """float64 values (exact products of two values of the type) rounded once to the type, as float64."""
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            return values.astype(self.dtype).astype(np.float64)


def _operands(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> _Operands:
    attrs = gemm_kernel.attributes(node)
    a, b = np.asarray(inputs[0]), np.asarray(inputs[1])
    a = a.T if attrs.trans_a else a
    b = b.T if attrs.trans_b else b
    c = inputs[2] if len(inputs) > 2 else None
    if c is not None and np.asarray(c).size == 0:
        c = None
    wide_c = None if c is None else np.broadcast_to(np.asarray(c), (a.shape[0], b.shape[1]))
    return _Operands(a, b, wide_c, attrs.alpha, attrs.beta, a.dtype)


def outcomes(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], flat: np.ndarray) -> np.ndarray:
    """The outcome bits (POSITIVE | NEGATIVE | NAN | FINITE) that the evaluations reach at the elements
    ``flat`` (indices into the (m x p) output) of a Gemm on ``inputs``."""
    ops = _operands(node, inputs)
    flat = np.asarray(flat, dtype=np.int64)
    bits = np.full(flat.size, FINITE, dtype=np.int8)
    needed, overflows = _open(ops, flat)
    where = np.flatnonzero(needed)
    n = max(1, ops.a.shape[1])
    scales = [*ops.variants(ops.alpha), *ops.variants(ops.beta)]
    if not overflows and all(np.isfinite(scales)) and where.size * n >= _BLOCK_TERMS:
        bits[where] = _whole(ops).reshape(-1)[flat[where]]  # many elements: products of indicators
        return bits
    step = max(1, _BLOCK_TERMS // n)
    for lo in range(0, where.size, step):
        part = where[lo : lo + step]
        bits[part] = _block(ops, flat[part])
    return bits


def _open(ops: _Operands, flat: np.ndarray) -> tuple[np.ndarray, bool]:
    """The elements that may have a non-finite outcome, and whether some placement may overflow: an operand
    of the element is not finite, or an overflow is possible anywhere (alpha x an operand, a product, a sum:
    n max|a| max|b| max(1, |alpha|) + max(1, |beta|) max|c| against the threshold, every variant of alpha
    and beta); elsewhere every evaluation is finite, and the terms need not be gathered."""
    p = ops.b.shape[1]
    i, j = flat // p, flat % p
    finite_a, finite_b = np.isfinite(ops.a), np.isfinite(ops.b)
    needed = ~finite_a.all(axis=1)[i] | ~finite_b.all(axis=0)[j]
    if ops.c is not None:
        needed |= ~np.isfinite(ops.c[i, j])

    def largest(values: np.ndarray, finite: np.ndarray) -> float:
        return float(np.max(np.abs(values.astype(np.float64)), initial=0.0, where=finite))

    scale, top = ops.scale, float(np.finfo(ops.dtype).max)
    alpha = max([1.0, *(abs(v) for v in ops.variants(ops.alpha))])
    beta = max([1.0, *(abs(v) for v in ops.variants(ops.beta))])
    ma, mb = largest(ops.a, finite_a), largest(ops.b, finite_b)
    mc = 0.0 if ops.c is None else largest(ops.c, np.isfinite(ops.c))
    with np.errstate(over="ignore", invalid="ignore"):
        ceiling = ops.a.shape[1] * (ma * scale) * (mb * scale) * alpha + (mc * scale) * scale * beta
        folded = max(ma, mb) * alpha
    if not (ceiling < ops.threshold() and folded < top):  # NaN alpha or beta: every element
        return np.ones(flat.size, dtype=bool), True
    return needed, False


def _whole(ops: _Operands) -> np.ndarray:
    """``outcomes`` of every element where nothing can overflow and alpha and beta are finite: then a term
    is special only by IEEE 754's rules on its factors (no product or sum reaches the threshold), and
    whether an element has a NaN, +inf or -inf term is a product of indicator matrices, as fast as a
    float32 matrix product. The same bits as ``_block``'s, element by element."""
    a, b = ops.a.astype(np.float64), ops.b.astype(np.float64)
    m, p = a.shape[0], b.shape[1]
    threshold = ops.threshold()
    c_terms = [_none(m * p)]
    if ops.c is not None:
        c = ops.c.astype(np.float64).reshape(-1, 1)
        c_terms = [_terms(np.full_like(c, beta), c, ops.scale) for beta in ops.variants(ops.beta)]
        if ops.beta == 0:
            c_terms.append(_none(m * p))
    bits = np.zeros(m * p, dtype=np.int8)
    s = _special_terms(a, b)
    for alpha in ops.variants(ops.alpha):
        if alpha != 1.0:
            with np.errstate(all="ignore"):
                folded_a, folded_b = ops.rounded(alpha * a), ops.rounded(alpha * b)
            product = _Terms(  # alpha x round(a b): round(a b) special as a b is (nothing overflows)
                s.nan | (alpha == 0) & (s.positive_infinity | s.negative_infinity),
                s.positive_infinity if alpha > 0 else s.negative_infinity & (alpha < 0),
                s.negative_infinity if alpha > 0 else s.positive_infinity & (alpha < 0),
                s.positive,
                s.negative,
            )
            for terms in (_special_terms(folded_a, b), _special_terms(a, folded_b), product):
                for c_term in c_terms:
                    bits |= _sum_outcomes(terms + c_term, threshold)
        scaled, positive, negative = _scaled_sum(s, alpha, threshold)
        for c_term in c_terms:
            bits |= _plus_term(scaled, positive, negative, c_term, threshold)
    return bits.reshape(m, p)


def _special_terms(a: np.ndarray, b: np.ndarray) -> _Terms:
    """Per element of A' x B' (flat), whether some a_ik b_kj is NaN, +inf or -inf by IEEE 754, from
    products of 0/1 matrices (a count above 0: exact in float32 as far as it matters); finite parts 0."""

    def some(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return (x.astype(np.float32) @ y.astype(np.float32)).reshape(-1) > 0

    with np.errstate(invalid="ignore"):
        nan = (np.isnan(a).any(axis=1)[:, None] | np.isnan(b).any(axis=0)[None, :]).reshape(-1)
        nan |= some(np.isinf(a), b == 0) | some(a == 0, np.isinf(b))
        up_a, down_a, up_b, down_b = a > 0, a < 0, b > 0, b < 0
        inf_a, minus_a, inf_b, minus_b = a == np.inf, a == -np.inf, b == np.inf, b == -np.inf
        positive = some(inf_a, up_b) | some(minus_a, down_b) | some(up_a, inf_b) | some(down_a, minus_b)
        negative = some(inf_a, down_b) | some(minus_a, up_b) | some(up_a, minus_b) | some(down_a, inf_b)
    zero = np.zeros(nan.size)
    return _Terms(nan, positive, negative, zero, zero)


def _block(ops: _Operands, flat: np.ndarray) -> np.ndarray:
    """``outcomes`` at some elements: their rows of A' and columns of B' gathered."""
    p = ops.b.shape[1]
    i, j = flat // p, flat % p
    a = ops.a[i].astype(np.float64)  # (elements, n)
    b = ops.b[:, j].T.astype(np.float64)
    scale, threshold = ops.scale, ops.threshold()
    c_terms = [_none(flat.size)]  # C not read (beta = 0), or no C
    if ops.c is not None:
        c = ops.c[i, j].astype(np.float64)[:, None]
        c_terms = [_terms(np.full_like(c, beta), c, scale) for beta in ops.variants(ops.beta)]
        if ops.beta == 0:
            c_terms.append(_none(flat.size))
    bits = np.zeros(flat.size, dtype=np.int8)
    with np.errstate(all="ignore"):  # 0 x inf and overflows are the evaluations' own values
        products = ops.rounded(a * b)  # each product rounded to the type (alpha applied to it after)
    for alpha in ops.variants(ops.alpha) if ops.alpha != 1.0 else ():  # 1 x anything is itself
        with np.errstate(all="ignore"):
            folded_a, folded_b = ops.rounded(alpha * a), ops.rounded(alpha * b)
        placed = (  # alpha folded into A', into B', applied to each rounded product
            _terms(folded_a, b, scale),
            _terms(a, folded_b, scale),
            _terms(np.full_like(products, alpha), products, scale),
        )
        for terms in placed:
            for c_term in c_terms:
                bits |= _sum_outcomes(terms + c_term, threshold)
    s = _terms(a, b, scale)  # alpha applied to the sum
    for alpha in ops.variants(ops.alpha):
        scaled, positive, negative = _scaled_sum(s, alpha, threshold)
        for c_term in c_terms:
            bits |= _plus_term(scaled, positive, negative, c_term, threshold)
    return bits


class GemmEvaluations:
    """``Tolerance.alternatives`` of one Gemm node's output (tolerance.AlternativeRoom): the evaluations'
    non-finite values, and, where beta = 0 and C is not read, the finite value alpha A' x B' judged against
    the reference of the node without C and its bound (``bound``: the sum-of-products rule)."""

    def __init__(
        self,
        data: NodeData,
        bound: Callable[[NodeData], RuleResult],
        tighter: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> None:
        self.data, self.bound, self.tighter = data, bound, tighter
        self.node, self.inputs, self.fmt = data.node, list(data.inputs), data.fmt
        self._without_c: tuple[np.ndarray, np.ndarray] | None = None

    def nonfinite(self, flat: np.ndarray) -> np.ndarray:
        bits = outcomes(self.node, self.inputs, flat)
        return (bits & (POSITIVE | NEGATIVE | NAN)).astype(np.int8)

    def admits(self, flat: np.ndarray, actual: np.ndarray) -> np.ndarray:
        actual = np.asarray(actual, dtype=np.float64)
        bits = outcomes(self.node, self.inputs, flat)
        with np.errstate(invalid="ignore"):
            hit = (np.isnan(actual) & ((bits & NAN) > 0)) | (
                (actual == np.inf) & ((bits & POSITIVE) > 0) | (actual == -np.inf) & ((bits & NEGATIVE) > 0)
            )
        finite = np.isfinite(actual)
        if finite.any() and self._skips_c():
            hit[finite] = self._near_without_c(flat[finite], actual[finite])
        return hit

    def tightened(self, introduced: Callable[[np.ndarray], np.ndarray]) -> GemmEvaluations:
        return GemmEvaluations(self.data, self.bound, introduced)

    def _skips_c(self) -> bool:
        c = self.inputs[2] if len(self.inputs) > 2 else None
        return c is not None and np.asarray(c).size > 0 and gemm_kernel.attributes(self.node).beta == 0

    def _near_without_c(self, flat: np.ndarray, actual: np.ndarray) -> np.ndarray:
        """Within the bound of alpha A' x B' (the node without C): a runtime that does not read C."""
        try:
            reference, allowed = self._reference_without_c()
        except ReferenceError:
            return np.zeros(flat.size, dtype=bool)
        e = reference.reshape(-1)[flat].astype(np.float64)
        return _distance(e, actual, self.fmt) <= np.broadcast_to(allowed, reference.shape).reshape(-1)[flat]

    def _reference_without_c(self) -> tuple[np.ndarray, np.ndarray]:
        if self._without_c is None:
            inputs = self.inputs[:2]
            [reference] = gemm_kernel.run(self.node, inputs, None)
            data = NodeData(self.node, list(inputs), reference, self.fmt, self.data.attrs)
            with np.errstate(all="ignore"):
                introduced, _, _ = self.bound(data)
                introduced = np.asarray(introduced, dtype=np.float64)
                if self.tighter is not None:
                    introduced = np.minimum(introduced, self.tighter(data.magnitude))
                introduced = np.where(np.isnan(introduced), np.inf, introduced)
            allowed = ulp(reference, self.fmt) * 0.5 + introduced
            self._without_c = (reference, allowed)
        return self._without_c


def _distance(e: np.ndarray, a: np.ndarray, fmt: Format) -> np.ndarray:
    """|a - e| for a finite ``a``, an infinite ``e`` standing for +-2^(emax+1) (as the judging's distance)."""
    half = 2.0**fmt.emax
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.abs(a - e)
        return np.where(np.isinf(e), (half - np.copysign(1.0, e) * a) + half, d)


def evaluations(data: NodeData, bound: Callable[[NodeData], RuleResult]) -> GemmEvaluations | None:
    """The room of a Gemm node whose alpha or beta is not 1 (with alpha = beta = 1 every placement is the
    reference's own evaluation); None otherwise."""
    attrs = gemm_kernel.attributes(data.node)
    c = data.inputs[2] if len(data.inputs) > 2 else None
    if attrs.alpha == 1.0 and (attrs.beta == 1.0 or c is None):
        return None
    return GemmEvaluations(data, bound)
