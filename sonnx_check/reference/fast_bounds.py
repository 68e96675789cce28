"""The Softmax and BatchNormalization bounds (compare/ops/softmax.py, batchnormalization.py), evaluated
block by block (used only by the comparison; here beside the kernels so that the operators' own modules can
reach it without the comparison package).

Those rules evaluate their formula with whole-tensor numpy passes: some thirty float64 temporaries
of the tensor's size, each written to and read back from memory. The functions here evaluate the SAME
formula, with the same IEEE 754 operations in the same order on every element, over blocks of rows that stay
in the processor's cache, with the per-row and per-channel factors computed once: so every bound value is
bit for bit the one the rule computes (the tests compare them on hard cases: near-tolerance values,
huge and tiny magnitudes, subnormals), and a verdict can never differ. Where the fast evaluation does not
apply (non-finite inputs, a reduction over another axis than the last, a non-contiguous tensor, float64
outputs), they return None and the rule evaluates its formula on the whole tensor, as before.

Their deferred forms (``softmax_deferred``, ``batch_normalization_deferred``: ``DeferredRule``) give the same
values at chosen elements only, with a proven floor, so that the judging (compare/judging/elements.py)
evaluates the
bound only where the floor does not decide.

``data`` is compare/judging/tolerance.NodeData, read through the ``NodeFacts`` protocol below (this module
does not import the comparison).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

_BLOCK = 1 << 15  # elements per block: a few float64 temporaries of 256 KiB stay in a 2 MiB cache


class FloatFormat(Protocol):
    """What the bounds read of compare/judging/floats.Format."""

    @property
    def dtype(self) -> np.dtype: ...
    @property
    def precision(self) -> int: ...
    @property
    def emin(self) -> int: ...
    @property
    def u(self) -> float: ...
    @property
    def min_normal(self) -> float: ...


class NodeFacts(Protocol):
    """What the bounds read of compare/judging/tolerance.NodeData."""

    @property
    def inputs(self) -> Sequence[np.ndarray | None]: ...
    @property
    def expected(self) -> np.ndarray: ...
    @property
    def fmt(self) -> FloatFormat: ...
    @property
    def attrs(self) -> Mapping[str, Any]: ...  # onnx attribute values


_Layout = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class DeferredRule:
    """A rule's deferred form on one node's data (tolerance.Rule.deferred returns it, or None where it does
    not apply): ``floor(where, out)``, a proven lower bound of the introduced error (as computed) at a slice
    of whole rows of ``unit`` elements or at flat indices, positive, valid where the reference is finite;
    ``at(flat)``, the introduced error at flat indices or everywhere (None), bit for bit the whole-tensor
    values; the detail of the rule's text. compare/judging/bounds.py adds the reference's rounding."""

    floor: Callable[[slice | np.ndarray, np.ndarray | None], np.ndarray]
    at: Callable[[np.ndarray | None], np.ndarray]
    detail: str
    unit: int = 1


def _magnitude_floor_times(
    e: np.ndarray, coefficient: float, min_normal: float, out: np.ndarray | None
) -> np.ndarray:
    """coefficient * max(|e|, min_normal) in float64, into ``out`` when given."""
    floor: np.ndarray = np.abs(e, dtype=np.float64, out=out)
    np.maximum(floor, min_normal, out=floor)
    floor *= coefficient
    return floor


def _gamma(n: int, u: float) -> float:
    """accuracy.gamma for one n, as numpy evaluates it there (IEEE double arithmetic, the same roundings)."""
    nu = float(n) * u
    return nu / (1 - nu) if nu < 1 else float("inf")


def _half_ulp(a: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """ulp(a)/2 as accuracy.ulp(a) * 0.5 gives it, for a >= 0 a float64 array of float16/float32 values:
    2^floor(log2 a) (a's exponent field alone) times 2^-p, at least half the subnormal spacing (a = 0 and
    subnormals); +inf for +inf and NaN (the callers' readings of those follow). Every step is exact."""
    half = (a.view(np.int64) & np.int64(0x7FF << 52)).view(np.float64)
    half *= 2.0**-fmt.precision
    np.maximum(half, 2.0 ** (fmt.emin - fmt.precision), out=half)
    return half


def _magnitude_floor(e: np.ndarray, fmt: FloatFormat, out: np.ndarray) -> np.ndarray:
    """max(NodeData.magnitude, min-normalized) of a finite float16/float32 block ``e`` (float64), into
    ``out``: |e| + ulp(|e|)/2, in NodeData.magnitude's order."""
    a = np.abs(e)
    np.add(_half_ulp(a, fmt), a, out=out)
    np.maximum(out, fmt.min_normal, out=out)
    return out


def _fits(data: NodeFacts, x: np.ndarray) -> bool:
    return (
        data.fmt.dtype in (np.float16, np.float32)
        and data.expected.dtype == data.fmt.dtype
        and x.dtype in (np.float16, np.float32)
        and x.flags.c_contiguous
        and data.expected.flags.c_contiguous
        and x.size > 0
    )


# -- Softmax -------------------------------------------------------------------------------------------------
def _one_plus_exp_error(u: float) -> np.ndarray:
    """1 + exp_relative_error(-d) for d >= 0, indexed by the exponent field of max(d, 1) rounded up (the
    field plus one when the significand is not exactly 1): (2 + n/2) 2u with n = ceil(log2 d), n = 0 for
    d <= 1, computed as accuracy.exp_relative_error computes it (every term exact, one rounding in 1 + E)."""
    n = np.maximum(np.arange(2048, dtype=np.float64) - 1023, 0.0)
    n *= 0.5
    n += 2.0
    n *= 2.0 * u
    return 1 + n


def _softmax_layout(data: NodeFacts) -> tuple[np.ndarray, np.ndarray] | None:
    """X and Y as rows along the reduced axis, when the fast evaluation applies (finite float16/float32
    data reduced over its last axis, both C-contiguous), else None."""
    x = np.asarray(data.inputs[0]) if data.inputs and data.inputs[0] is not None else None
    if x is None or not _fits(data, x) or x.ndim == 0:
        return None
    axis = int(data.attrs.get("axis", -1)) % max(x.ndim, 1)
    if axis != x.ndim - 1:
        return None
    n = x.shape[-1]
    return x.reshape(-1, n), data.expected.reshape(-1, n)


def _softmax_rows(xs: np.ndarray, e: np.ndarray, fmt: FloatFormat, out: np.ndarray) -> bool:
    """The introduced error of a block of rows, into ``out`` (``xs``, float64, is overwritten); False when
    the block holds a NaN or an infinity. Every row's values depend on that row alone, so a block of any
    rows gives them bit for bit (numpy reduces each contiguous row on its own)."""
    u, n = fmt.u, xs.shape[1]
    top = xs.max(axis=1, keepdims=True)
    if not (np.isfinite(top).all() and np.isfinite(xs.min())):
        return False  # NaN or an infinity: the rule's special values
    g = _gamma(n - 1, u)
    d = np.subtract(top, xs, out=xs)  # == |x - M| (M >= x; RN is symmetric)
    bits = np.maximum(d, 1.0).view(np.int64)
    bits += (1 << 52) - 1  # a nonzero significand carries into the exponent field: ceil(log2)
    bits >>= 52
    term = np.take(_one_plus_exp_error(u), bits, mode="clip")  # 1 + E
    z = np.multiply(d, u, out=d)
    np.exp(z, out=z)
    term *= z
    term -= 1
    weights = np.abs(e, dtype=np.float64)
    weights *= term
    eta = np.sum(weights, axis=1, keepdims=True)
    eta *= 1 + 2 * u
    np.add(term, 1, out=out)
    out *= (1 + u) ** 2
    out /= (1 - eta) * (1 - g)
    out -= 1
    if not (g < 1 and bool((eta < 1).all())):
        np.copyto(out, np.inf, where=~((eta < 1) & (g < 1)))
    out *= _magnitude_floor(e.astype(np.float64), fmt, weights)
    return True


def softmax(data: NodeFacts) -> tuple[np.ndarray, bool, str] | None:
    """_softmax's (compare/ops/softmax.py) (introduced, exact, detail) for finite float16/float32 data reduced
    over its last axis, or None (the rule's whole-tensor evaluation then applies)."""
    layout = _softmax_layout(data)
    if layout is None:
        return None
    rows_x, rows_e = layout
    introduced = np.empty(rows_x.shape)
    step = max(1, _BLOCK // rows_x.shape[1])
    for first in range(0, rows_x.shape[0], step):
        block = slice(first, first + step)
        if not _softmax_rows(rows_x[block].astype(np.float64), rows_e[block], data.fmt, introduced[block]):
            return None
    return introduced.reshape(data.expected.shape), False, f" with n = {rows_x.shape[1]}"


def softmax_deferred(data: NodeFacts) -> DeferredRule | None:
    """_softmax's deferred form (DeferredRule) for the data ``softmax`` applies to: its values at
    given elements come from their rows alone.

    The floor: with t_i >= 0 and eta >= 0 (sums of non-negative terms), the growth factor
    (1 + t_i)(1+u)^2 / ((1 - eta)(1 - g)) - 1 is at least (1+u)^2 / (1 - g) - 1 >= 2u + g, g = gamma_(n-1)
    as computed (or +inf where eta or g reaches 1). Its float64 evaluation loses at most a few roundings of
    a quotient in [1, 2) (the final - 1 is exact): 5 2^-53 absolute, below 2^-27 of 2u + g for u >= 2^-24;
    the product with max(magnitude, min-normalized) >= max(|Y|, min-normalized) one more rounding."""
    layout = _softmax_layout(data)
    if layout is None:
        return None
    rows_x, rows_e = layout
    if not (np.isfinite(rows_x.max()) and np.isfinite(rows_x.min())):
        return None
    n, fmt = rows_x.shape[1], data.fmt
    step = max(1, _BLOCK // n)

    def introduced_at(flat: np.ndarray | None) -> np.ndarray:
        if flat is None:
            found = softmax(data)
            assert found is not None  # finite data, checked above
            return found[0]
        rows, where = np.unique(flat // n, return_inverse=True)
        values = np.empty((rows.size, n))
        for first in range(0, rows.size, step):
            chosen = rows[first : first + step]
            block = values[first : first + step]
            _softmax_rows(rows_x[chosen].astype(np.float64), rows_e[chosen], fmt, block)
        return values[where.reshape(-1), flat % n]

    coefficient = (2 * fmt.u + _gamma(n - 1, fmt.u)) * (1 - 2.0**-26)
    flat_e = rows_e.reshape(-1)

    def floor(where: slice | np.ndarray, out: np.ndarray | None) -> np.ndarray:
        return _magnitude_floor_times(flat_e[where], coefficient, fmt.min_normal, out)

    return DeferredRule(floor, introduced_at, f" with n = {n}", n)


# -- BatchNormalization --------------------------------------------------------------------------------------
def _batch_normalization_layout(data: NodeFacts) -> _Layout | None:
    """(X as rows of one channel of one batch item each, Y likewise, the channel of each row, and per
    channel k, |k mean|, |B|) when the fast evaluation applies, else None."""
    if len(data.inputs) < 5 or any(a is None for a in data.inputs[:5]):
        return None
    x = np.asarray(data.inputs[0])
    if not _fits(data, x):
        return None
    scale, bias, mean, var = (np.asarray(data.inputs[k]).astype(np.float64) for k in range(1, 5))
    channels = x.shape[1] if x.ndim > 1 else 1
    if any(p.shape != (channels,) for p in (scale, bias, mean, var)):
        return None
    eps = float(np.float32(data.attrs.get("epsilon", 1e-5)))
    with np.errstate(all="ignore"):
        k = scale / np.sqrt(var + eps)
        fixed = np.abs(k * mean)  # |k mean| and |B| per channel, added in the rule's order per element
        absolute_bias = np.abs(bias)
    # rows: one channel of one batch item each (N*C rows of the spatial size), as the tensor lies in memory
    inner = int(np.prod(x.shape[2:])) if x.ndim > 2 else 1
    rows_x = x.reshape(-1, inner)
    rows_e = data.expected.reshape(-1, inner)
    channel_of_row = np.arange(rows_x.shape[0]) % channels
    return rows_x, rows_e, channel_of_row, k, fixed, absolute_bias


def _batch_normalization_values(
    x: np.ndarray,
    e: np.ndarray,
    c: np.ndarray,
    k: np.ndarray,
    fixed: np.ndarray,
    absolute_bias: np.ndarray,
    fmt: FloatFormat,
    out: np.ndarray,
) -> None:
    """The introduced error of elements ``x`` (float16/float32), ``e`` (their references) of channels ``c``
    (an index array broadcastable to them), into ``out``: the same operations on every element however the
    elements are grouped."""
    u = fmt.u
    np.multiply(k[c], x, out=out)
    np.abs(out, out=out)
    out += fixed[c]
    out += absolute_bias[c]
    out *= _gamma(7, u)
    magnitude = _magnitude(e.astype(np.float64), fmt)
    magnitude *= u
    out += magnitude
    out += 7 * u * fmt.min_normal


def batch_normalization(data: NodeFacts) -> tuple[np.ndarray, bool, str] | None:
    """_batch_normalization's (compare/ops/batchnormalization.py) (introduced, exact, detail) for
    float16/float32 data, or None."""
    layout = _batch_normalization_layout(data)
    if layout is None:
        return None
    rows_x, rows_e, channel_of_row, k, fixed, absolute_bias = layout
    introduced = np.empty(rows_x.shape)
    step = max(1, _BLOCK // rows_x.shape[1])
    with np.errstate(all="ignore"):
        for first in range(0, rows_x.shape[0], step):
            block = slice(first, first + step)
            c = channel_of_row[block, None]
            _batch_normalization_values(
                rows_x[block], rows_e[block], c, k, fixed, absolute_bias, data.fmt, introduced[block]
            )
    return introduced.reshape(data.expected.shape), False, ""


def batch_normalization_deferred(data: NodeFacts) -> DeferredRule | None:
    """_batch_normalization's deferred form (DeferredRule): its values at given elements, element by
    element (the same operations as ``batch_normalization``'s blocks).

    The floors, where Y is finite. (1) With k' = k (1 + d), |d| <= 3 2^-53 (k's three roundings), |k' X| +
    |k' mean| + |B| >= (1 - 3 2^-53)(|k (X - mean)| + |B|) >= (1 - 3 2^-53)|y|, y the exact result, and
    |y| >= |Y| - ulp(Y)/2 (Y is y correctly rounded): at least |Y| (1 - u) for a normal Y, at least
    |Y| - u min-normalized below it. With gamma_7 >= 7u, u magnitude >= u|Y| and the 7u min-normalized
    term, the introduced error is at least 7u (1 - 2u) max(|Y|, min-normalized) once its float64 additions
    of non-negative terms (a few roundings of 2^-53) are counted. (2) Per channel, the computed value is at
    least gamma_7 (|k mean| + |B|) as computed: each step adds a non-negative term or multiplies by
    gamma_7, and rounding is monotonic. An infinite or NaN value is at least both (a NaN bound is +inf,
    accuracy.Bound)."""
    layout = _batch_normalization_layout(data)
    if layout is None:
        return None
    rows_x, rows_e, channel_of_row, k, fixed, absolute_bias = layout
    inner, fmt = rows_x.shape[1], data.fmt
    flat_x, flat_e = rows_x.reshape(-1), rows_e.reshape(-1)
    channels = k.size

    def introduced_at(flat: np.ndarray | None) -> np.ndarray:
        if flat is None:
            found = batch_normalization(data)
            assert found is not None  # the same layout
            return found[0]
        out = np.empty(flat.shape)
        with np.errstate(all="ignore"):
            c = (flat // inner) % channels
            _batch_normalization_values(flat_x[flat], flat_e[flat], c, k, fixed, absolute_bias, fmt, out)
        return out

    g7, smallest = _gamma(7, fmt.u), 7 * fmt.u * fmt.min_normal

    def floor(where: slice | np.ndarray, out: np.ndarray | None) -> np.ndarray:
        """The first steps of ``_batch_normalization_values``, gamma_7 (|k X| + |k mean| + |B|), plus its
        last term, 7u min-normalized: the same roundings, and the steps left out add non-negative terms
        (rounding is monotonic), so the value is at most the introduced error; at least 7u min-normalized."""
        with np.errstate(all="ignore"):
            if isinstance(where, slice):  # whole rows
                first, stop = where.start // inner, -(-where.stop // inner)
                c = channel_of_row[first:stop, None]
                x = rows_x[first:stop]
                result = np.multiply(k[c], x, out=None if out is None else out.reshape(x.shape))
            else:
                c = (where // inner) % channels
                result = np.multiply(k[c], flat_x[where], out=out)
            np.abs(result, out=result)
            result += fixed[c]
            result += absolute_bias[c]
            result *= g7
            result += smallest
            result = result.reshape(-1)
        return np.where(np.isnan(result), np.inf, result) if np.isnan(result.max()) else result

    return DeferredRule(floor, introduced_at, "", inner)


def _magnitude(e: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """NodeData.magnitude of a float16/float32 block (float64 values): |e| + ulp(|e|)/2, the largest finite
    value of the format where e is infinite (NaN stays NaN)."""
    a = np.abs(e)
    out = _half_ulp(a, fmt)
    out += a
    if not np.isfinite(out.max()):  # NaN or +inf somewhere (max propagates NaN)
        out[np.isinf(out) & np.isinf(a)] = float(np.finfo(fmt.dtype).max)
    return out
