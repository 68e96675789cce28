"""The outcome of every element of one output against an evaluated bound (``Tolerance``): the masks a
comparison marks divergent elements with, and the counted ``Classification`` a report prints
(compare/judging/bounds.py describes the outcomes and the readings behind them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from sonnx_check.compare.judging.floats import Format, float_format, ulp
from sonnx_check.compare.judging.tolerance import OVERFLOW_NEG, OVERFLOW_POS, Tolerance

# Outcomes of one element, in the order a report lists them.
MATCH = "exact-match"  # bit for bit (NaN = NaN)
WITHIN = "within-bound"
# within by reading (c) (sum of products): an infinity, or a NaN, where an implementation in the output type
# may overflow in some summation order; its elements are in the WITHIN mask of ``outcome_masks`` (the callers
# accept that mask) and are counted apart so that a report shows them
OVERFLOW = "intermediate-overflow"
# within by reading (d) (sum of products): a NaN where the reference is +-inf from an infinite term, because
# an IEEE 754 evaluation rounding each product (or a partial sum) to the output type may overflow finite
# terms of the other sign to the other infinity (inf - inf); also a part of the WITHIN mask, counted apart
PRODUCT_OVERFLOW = "product-overflow"
# within by an alternative evaluation of the text (Gemm's alpha and beta applied to an operand, the product or
# the sum; C not read when beta = 0): a value where the reference or the runtime is not finite that one of
# them gives (``Tolerance.alternatives``); also a part of the WITHIN mask, counted apart
ALTERNATIVE = "alternative-evaluation"
BEYOND = "beyond-bound"
SPECIAL = "special-value"  # NaN vs number, +-inf mismatch, sign of zero where the text fixes it
FLUSHED = "flushed-subnormal"  # reference subnormal, runtime +-0, and that is beyond the bound
OUTCOMES = (MATCH, WITHIN, OVERFLOW, PRODUCT_OVERFLOW, ALTERNATIVE, BEYOND, SPECIAL, FLUSHED)
DIVERGENT = (BEYOND, SPECIAL)  # what RUNTIME.divergence reports


@dataclass(frozen=True)
class Instance:
    """One element: its index in the output, both values, the allowed difference and |diff| / allowed."""

    index: tuple[int, ...]
    expected: float | int | bool
    actual: float | int | bool
    allowed: float
    ratio: float

    def as_dict(self) -> dict[str, object]:
        return {
            "index": list(self.index),
            "expected": _json_number(self.expected),
            "actual": _json_number(self.actual),
            "allowed": _json_number(self.allowed),
            "ratio": _json_number(self.ratio),
        }


@dataclass(frozen=True)
class Classification:
    """The outcome of every element of one output. ``max_ratio`` is the margin: the largest |actual -
    expected| / allowed over the elements that are not special-value mismatches (0.0 when they all match; at
    most 1.0 when all are within; +inf for a difference where nothing is allowed). ``max_ulps``: the largest
    difference in ulps of the output type at the reference value."""

    counts: Mapping[str, int]
    first: Mapping[str, Instance]
    max_ratio: float
    worst: Instance | None
    max_ulps: float
    bound: str
    size: int = field(default=0)

    @property
    def divergent(self) -> int:
        """Elements RUNTIME.divergence reports: beyond the bound or special-value mismatches."""
        return sum(self.counts[o] for o in DIVERGENT)

    def as_dict(self) -> dict[str, object]:
        """JSON-safe (non-finite numbers as the strings "nan", "inf", "-inf")."""
        return {
            "bound": self.bound,
            "elements": self.size,
            "counts": dict(self.counts),
            "first": {k: v.as_dict() for k, v in self.first.items()},
            "max_ratio": _json_number(self.max_ratio),
            "worst": None if self.worst is None else self.worst.as_dict(),
            "max_ulps": _json_number(self.max_ulps),
        }


def _json_number(v: float | int | bool) -> float | int | bool | str:
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def classify(
    expected: np.ndarray, actual: np.ndarray, bound: Tolerance, dtype: np.dtype | type | str
) -> Classification:
    """Class every element of one output (same shape), count them, keep the first of each class and the
    margin. Order of precedence: exact match, special-value mismatch, within the bound, flushed subnormal,
    beyond. A +-inf against a finite value is a special-value mismatch, except against the largest finite
    value of the same sign where the bound allows it (+-inf standing for +-2^(emax+1), ``_distance``): an
    exact value at the overflow threshold, which a rounding error may put on either side."""
    expected, actual = np.asarray(expected), np.asarray(actual)
    if np.dtype(dtype).kind != "f":
        if expected.shape != actual.shape:
            raise ValueError(f"shapes differ: expected {list(expected.shape)}, actual {list(actual.shape)}")
        return _classify_exact(expected, actual, bound.text)
    masks, diff, allowed = outcome_masks(expected, actual, bound, dtype)
    return summarise(masks, diff, allowed, expected, actual, bound.text, dtype)


def summarise(
    masks: dict[str, np.ndarray],
    diff: np.ndarray,
    allowed: np.ndarray,
    expected: np.ndarray,
    actual: np.ndarray,
    text: str,
    dtype: np.dtype | type | str,
) -> Classification:
    """The Classification of a float output from ``outcome_masks``'s masks, |a - e| and allowed."""
    fmt = float_format(np.dtype(dtype))
    # no finite error against the reference
    skip = masks[MATCH] | masks[SPECIAL] | masks[OVERFLOW] | masks[PRODUCT_OVERFLOW] | masks[ALTERNATIVE]
    ratio = _ratio(diff, allowed, skip)
    max_ulps = _max_ulps(diff, expected.astype(np.float64), fmt, skip)
    return _summary(masks, expected, actual, allowed, ratio, max_ulps, text)


def outcome_masks(
    expected: np.ndarray, actual: np.ndarray, bound: Tolerance, dtype: np.dtype | type | str
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """The outcome of every element of a float output, as one boolean mask per outcome, with |a - e| and
    the allowed difference (the comparison marks the divergent elements from the masks). The masks are
    disjoint except OVERFLOW, PRODUCT_OVERFLOW and ALTERNATIVE, parts of WITHIN: a caller accepting MATCH |
    WITHIN | FLUSHED accepts what readings (c) and (d) and the alternative evaluations allow; ``classify``
    counts them apart."""
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.shape != actual.shape:
        raise ValueError(f"shapes differ: expected {list(expected.shape)}, actual {list(actual.shape)}")
    fmt = float_format(np.dtype(dtype))
    e, a = expected.astype(np.float64), actual.astype(np.float64)
    allowed = np.broadcast_to(np.asarray(bound.allowed, dtype=np.float64), e.shape)
    exact = np.broadcast_to(np.asarray(bound.exact, dtype=bool), e.shape)
    nan_e, nan_a = np.isnan(e), np.isnan(a)
    same = (nan_e & nan_a) | ((e == a) & (np.signbit(e) == np.signbit(a)))
    infinite = bool(np.isinf(e).any() or np.isinf(a).any())
    diff = _distance(e, a, fmt) if infinite else np.abs(a - e)
    with np.errstate(invalid="ignore"):
        within = (diff <= allowed) & ~same
    special = nan_e ^ nan_a
    if infinite:
        overflow = _edge_of_range(e, a, fmt) & within & ~exact
        special |= _inf_mismatch(e, a) & ~overflow
    special |= exact & (e == 0) & (a == 0) & (np.signbit(e) != np.signbit(a))
    overflowed = _overflowed(e, a, bound, ~same & ~exact & ~nan_e)
    special &= ~overflowed
    opposite = _opposite_overflow(e, bound, special & nan_a & np.isinf(e))
    special &= ~opposite
    within &= ~special
    within |= overflowed | opposite
    unsettled = ~same & ~within & ~exact & ~(np.isfinite(e) & np.isfinite(a))
    alternative = _alternative(a, bound, unsettled)
    special &= ~alternative
    within |= alternative
    flushed = ~same & ~special & ~within & (e != 0) & (np.abs(e) < fmt.min_normal) & (a == 0)
    beyond = ~same & ~special & ~within & ~flushed
    masks = {MATCH: same, WITHIN: within, OVERFLOW: overflowed, PRODUCT_OVERFLOW: opposite}
    masks[ALTERNATIVE] = alternative
    masks.update({BEYOND: beyond, SPECIAL: special, FLUSHED: flushed})
    return masks, diff, allowed


def _overflowed(e: np.ndarray, a: np.ndarray, bound: Tolerance, candidates: np.ndarray) -> np.ndarray:
    """Reading (c): the candidates where the runtime returned an infinity, or a NaN, that an implementation
    in the output type may reach by overflowing a partial sum (``Tolerance.overflow``)."""
    reached = np.zeros(e.shape, dtype=bool)
    if bound.overflow is None:
        return reached
    flat = np.flatnonzero(candidates & ~np.isfinite(a))
    if flat.size:
        signs = bound.overflow.signs(flat)
        value = a.reshape(-1)[flat]
        positive, negative = (signs & OVERFLOW_POS) > 0, (signs & OVERFLOW_NEG) > 0
        with np.errstate(invalid="ignore"):
            hit = (
                ((value > 0) & positive) | ((value < 0) & negative) | (np.isnan(value) & positive & negative)
            )
        reached.reshape(-1)[flat[hit]] = True
    return reached


def _opposite_overflow(e: np.ndarray, bound: Tolerance, candidates: np.ndarray) -> np.ndarray:
    """Reading (d): the candidates (runtime NaN, reference +-inf) where an IEEE evaluation in the output type
    may give NaN (``Tolerance.opposite``)."""
    reached = np.zeros(e.shape, dtype=bool)
    if bound.opposite is None:
        return reached
    flat = np.flatnonzero(candidates)
    if flat.size:
        hit = bound.opposite.reachable(flat, e.reshape(-1)[flat] > 0)
        reached.reshape(-1)[flat[hit]] = True
    return reached


def _alternative(a: np.ndarray, bound: Tolerance, candidates: np.ndarray) -> np.ndarray:
    """The candidates (a value not finite on either side, not accepted otherwise) where an alternative
    evaluation of the text gives the runtime's value (``Tolerance.alternatives``)."""
    reached = np.zeros(a.shape, dtype=bool)
    if bound.alternatives is None:
        return reached
    flat = np.flatnonzero(candidates)
    if flat.size:
        hit = np.asarray(bound.alternatives.admits(flat, a.reshape(-1)[flat]), dtype=bool)
        reached.reshape(-1)[flat[hit]] = True
    return reached


def _distance(e: np.ndarray, a: np.ndarray, fmt: Format) -> np.ndarray:
    """|a - e|, an infinity standing for +-2^(emax+1), the first value beyond the largest finite one (computed
    as (2^emax - |x|) + 2^emax, which does not overflow near the top of float64); NaN where either is NaN."""
    half = 2.0**fmt.emax
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.abs(a - e)
        d = np.where(np.isinf(e) & np.isfinite(a), (half - np.copysign(1.0, e) * a) + half, d)
        d = np.where(np.isinf(a) & np.isfinite(e), (half - np.copysign(1.0, a) * e) + half, d)
        return np.where(np.isinf(a) & (a == e), 0.0, d)


def _inf_mismatch(e: np.ndarray, a: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return (np.isinf(e) | np.isinf(a)) & (e != a) & ~np.isnan(e) & ~np.isnan(a)


def _edge_of_range(e: np.ndarray, a: np.ndarray, fmt: Format) -> np.ndarray:
    """An infinity against the largest finite value of the same sign: the one inf/finite pair a rounding
    error can explain (an exact value near the overflow threshold, on either side of it)."""
    top = float(np.finfo(fmt.dtype).max)
    with np.errstate(invalid="ignore"):
        return ((np.isinf(e) & (np.abs(a) == top)) | (np.isinf(a) & (np.abs(e) == top))) & (
            np.signbit(e) == np.signbit(a)
        )


def _ratio(diff: np.ndarray, allowed: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """|diff| / allowed; 0 where both are 0 or the element is skipped, +inf for a difference where nothing
    is allowed."""
    compared = ~skip & (diff > 0)  # NaN differences are never > 0
    ratio = np.zeros(diff.shape)
    with np.errstate(over="ignore"):  # a difference beyond float64's range times what is allowed: +inf
        np.divide(diff, allowed, out=ratio, where=compared & (allowed > 0))
    ratio[compared & (allowed <= 0)] = np.inf
    return ratio


def _max_ulps(diff: np.ndarray, e: np.ndarray, fmt: Format, skip: np.ndarray) -> float:
    """The largest |diff| in ulps of the output type at the reference value, over the compared elements."""
    where = np.flatnonzero(~skip & (diff > 0))
    if where.size == 0:
        return 0.0
    with np.errstate(over="ignore"):  # a huge difference at a subnormal reference: beyond float64, +inf
        return float(np.max(diff.reshape(-1)[where] / ulp(e.reshape(-1)[where], fmt)))


def _classify_exact(expected: np.ndarray, actual: np.ndarray, text: str) -> Classification:
    """Integer and boolean outputs: equal or beyond (nothing is allowed); max_ulps is the largest |difference|
    (the ulp of an integer is 1), in float64."""
    same = expected == actual
    none = np.zeros_like(same)
    masks = {o: none for o in OUTCOMES}
    masks.update({MATCH: same, BEYOND: ~same})
    ratio = np.where(same, 0.0, np.inf)
    differences = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
    largest = float(differences.max()) if differences.size else 0.0
    return _summary(masks, expected, actual, np.zeros(expected.shape), ratio, largest, text)


def _summary(
    masks: dict[str, np.ndarray],
    expected: np.ndarray,
    actual: np.ndarray,
    allowed: np.ndarray,
    ratio: np.ndarray,
    max_ulps: float,
    text: str,
) -> Classification:
    def instance(flat: int) -> Instance:
        index = tuple(int(i) for i in np.unravel_index(flat, expected.shape))
        return Instance(
            # a tuple index, not .flat: numpy's flat iterator refuses arrays of rank above 32
            index, expected[index].item(), actual[index].item(), float(allowed[index]), float(ratio[index]),
        )  # fmt: skip

    counted_apart = masks[OVERFLOW] | masks[PRODUCT_OVERFLOW] | masks[ALTERNATIVE]
    masks = {**masks, WITHIN: masks[WITHIN] & ~counted_apart}
    counts = {o: int(np.count_nonzero(masks[o])) for o in OUTCOMES}
    first = {o: instance(int(np.argmax(masks[o].reshape(-1)))) for o in OUTCOMES if counts[o]}
    worst = None
    max_ratio = float(ratio.max()) if ratio.size else 0.0
    if max_ratio > 0:
        worst = instance(int(np.argmax(ratio.reshape(-1))))
    return Classification(counts, first, max_ratio, worst, max_ulps, text, int(expected.size))
