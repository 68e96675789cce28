"""Judging one output in one pass: the elements a comparison accepts and the counted ``Classification``
(outcomes.py), together, as ``outcome_masks`` and ``classify`` give them, bit for bit.

The common case takes a fast path: float16/float32 outputs where the reference and the runtime are finite
and no element is compared bit for bit by a special-value rule. There the outcomes reduce to three tests per
element (same bits, |a - e| <= allowed, a flushed subnormal), evaluated block by block over cache-sized
pieces with a few float64 temporaries, and the margin (``max_ratio``, ``worst``) and ``max_ulps`` are kept as
running maxima (the first element wins a tie, as numpy's argmax does over the whole tensor).

A deferred bound (tolerance.DeferredBound: Softmax, BatchNormalization) is not evaluated everywhere: its
proven floor c max(|e|, min-normalized) decides the elements within it, and its exact values are computed only
where the floor does not decide (an element beyond the floor, maybe still within the bound) and where an
element's ratio against the floor, an upper bound of its true ratio, could still reach the largest true
ratio found (ties included): the margin and the worst element are those of the full evaluation.

Everything else (NaN, infinities, exact elements, float64 outputs, the readings of the sums of products on a
runtime's infinity) takes the general path, ``outcome_masks`` then the classification on the same masks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sonnx_check.compare.floats import Format, float_format
from sonnx_check.compare.outcomes import (
    BEYOND,
    FLUSHED,
    MATCH,
    OUTCOMES,
    SPECIAL,
    WITHIN,
    Classification,
    Instance,
    outcome_masks,
    summarise,
)
from sonnx_check.compare.tolerance import DeferredBound, Tolerance

_BLOCK = 1 << 15  # elements per block: its float64 temporaries (256 KiB each) stay in the cache
_UNSIGNED = {2: np.uint16, 4: np.uint32}
_EXPONENT_FIELD = {2: 0x7C00, 4: 0x7F800000}
_LEADERS = 8  # blocks whose largest d / floor is evaluated exactly first (the threshold of the margin)


@dataclass(frozen=True)
class Judged:
    """One output judged: its classification and where it diverges (beyond the bound or a special-value
    mismatch: what a comparison does not accept, the complement of MATCH | WITHIN | FLUSHED)."""

    classification: Classification
    divergent: np.ndarray


def judge(
    expected: np.ndarray, actual: np.ndarray, bound: Tolerance, dtype: np.dtype | type | str
) -> Judged:
    """``classify`` and the divergent elements of ``outcome_masks`` of one float output, in one pass."""
    expected, actual = np.asarray(expected), np.asarray(actual)
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ValueError(f"judge compares float outputs, not {dtype}")
    fast = _fast(expected, actual, bound, dtype)
    if fast is not None:
        return fast
    masks, diff, allowed = outcome_masks(expected, actual, bound, dtype)
    classification = summarise(masks, diff, allowed, expected, actual, bound.text, dtype)
    return Judged(classification, masks[BEYOND] | masks[SPECIAL])


@dataclass
class _Tally:
    """Running counts, first instances and maxima over the blocks, in flat indices."""

    counts: dict[str, int]
    first: dict[str, int]
    best: float = 0.0  # the largest true ratio found so far (deferred: at the elements evaluated)
    best_at: int = -1
    max_ulps: float = 0.0
    beyond: np.ndarray | list[int] = field(default_factory=list)

    def first_of(self, outcome: str, flat: int) -> None:
        if outcome not in self.first:
            self.first[outcome] = flat


def _fast(expected: np.ndarray, actual: np.ndarray, bound: Tolerance, dtype: np.dtype) -> Judged | None:
    """The fast path, or None where it does not apply (then nothing is lost but the blocks already read)."""
    if (
        dtype.type not in (np.float16, np.float32)
        or expected.dtype != dtype
        or actual.dtype != dtype
        or expected.shape != actual.shape
        or expected.size == 0
        or np.any(bound.exact)
    ):
        return None
    fmt = float_format(dtype)
    deferred = bound.deferred
    allowed_flat: np.ndarray | None = None
    if deferred is None:
        values = np.asarray(bound.allowed, dtype=np.float64)
        if values.shape != expected.shape:
            values = np.broadcast_to(values, expected.shape)
        allowed_flat = values.reshape(-1)
    unit = 1 if deferred is None else deferred.unit
    block = unit * max(1, _BLOCK // unit)  # whole rows of a deferred bound evaluated block by block
    pair = _Pair(expected.reshape(-1), actual.reshape(-1), fmt, dtype)
    tally = _Tally(dict.fromkeys(OUTCOMES, 0), {})
    open_: list[np.ndarray] = []  # beyond the floor (or the bound): decided at the end
    tops: list[tuple[float, int, int]] = []  # floor only: per block, the largest d / floor and where
    for lo in range(0, expected.size, block):
        part = slice(lo, lo + block)
        d = pair.distance(part)
        if d is None:
            return None  # a NaN or an infinity on either side: the general path
        same = pair.same(part)
        n, n_same = d.size, int(np.count_nonzero(same))
        if n_same:
            tally.counts[MATCH] += n_same
            tally.first_of(MATCH, lo + int(np.argmax(same)))
        if n_same == n:
            continue
        if deferred is None or deferred.coefficient is None:
            # the bound itself: given, or evaluated on this block (its exact values, in the cache)
            floor = allowed_flat[part] if deferred is None else deferred.at(part)  # type: ignore[index]
            if not floor.min() > 0:
                return None  # nothing allowed somewhere: the general path's +inf ratios
            exact = True
        else:
            floor = pair.floor(part, deferred.coefficient)
            exact = False
        decided = d <= floor  # within the bound (or the same value: d = 0 <= floor)
        n_decided = int(np.count_nonzero(decided))
        if n_decided > n_same:
            tally.counts[WITHIN] += n_decided - n_same
            if WITHIN not in tally.first:
                tally.first_of(WITHIN, lo + int(np.argmax(decided ^ same)))  # same implies decided
        if n_decided < n:
            open_.append(np.flatnonzero(~decided) + lo)
        ratio = np.divide(d, floor, out=None if deferred is None else floor)  # true, or an upper bound
        top = int(np.argmax(ratio))
        if exact and ratio[top] > tally.best:
            tally.best, tally.best_at = float(ratio[top]), lo + top
        elif not exact and ratio[top] > 0:
            tops.append((float(ratio[top]), lo + top, lo))
        tally.max_ulps = max(tally.max_ulps, pair.max_ulps(part, d))
    if open_:
        _open(pair, np.concatenate(open_), deferred, allowed_flat, tally)
    if tops:
        assert deferred is not None and deferred.coefficient is not None
        _margin(pair, tops, block, deferred, tally)
    divergent = np.zeros(expected.size, dtype=bool)
    divergent[tally.beyond] = True
    classification = _classification(expected, actual, bound, tally, allowed_flat)
    return Judged(classification, divergent.reshape(expected.shape))


class _Pair:
    """The reference and the runtime's output, flat, read block by block."""

    def __init__(self, e: np.ndarray, a: np.ndarray, fmt: Format, dtype: np.dtype) -> None:
        self.e, self.a, self.fmt, self.dtype = e, a, fmt, dtype
        self.unsigned = _UNSIGNED[dtype.itemsize]
        self.field = self.unsigned(_EXPONENT_FIELD[dtype.itemsize])
        self.smallest_normal = dtype.type(fmt.min_normal)

    def distance(self, part: slice | np.ndarray) -> np.ndarray | None:
        """|a - e| in float64 (exact or one rounding, as outcome_masks computes it); None unless finite."""
        d = self.a[part].astype(np.float64)
        with np.errstate(invalid="ignore"):  # inf - inf: NaN, the general path's
            d -= self.e[part]
        np.abs(d, out=d)
        return d if np.isfinite(d.max()) else None

    def same(self, part: slice | np.ndarray) -> np.ndarray:
        """Bit for bit equal: for finite values, equal with the same sign of zero (outcome_masks' MATCH)."""
        return self.e[part].view(self.unsigned) == self.a[part].view(self.unsigned)

    def floor(self, part: slice, coefficient: float) -> np.ndarray:
        """A deferred bound's floor, coefficient * max(|e|, min-normalized) (a new array)."""
        floor = np.abs(self.e[part], dtype=np.float64)
        np.maximum(floor, self.fmt.min_normal, out=floor)
        floor *= coefficient
        return floor

    def max_ulps(self, part: slice, d: np.ndarray) -> float:
        """The largest d / ulp(e): ulp(e) = 2^(exponent of max(|e|, min-normalized) - p + 1), read from e's
        exponent field; both divisions by powers of two are exact, as floats.ulp's is."""
        power = (self.e[part].view(self.unsigned) & self.field).view(self.dtype)
        np.maximum(power, self.smallest_normal, out=power)
        return float(np.max(np.divide(d, power))) * 2.0 ** (self.fmt.precision - 1)


def _open(
    pair: _Pair, flat: np.ndarray, deferred: DeferredBound | None, allowed: np.ndarray | None, tally: _Tally
) -> None:
    """The elements beyond the floor: within the bound (deferred: its exact values there), a subnormal
    reference flushed to zero, or beyond."""
    if deferred is not None and deferred.coefficient is not None:
        inside = pair.distance(flat) <= deferred.at(flat)  # type: ignore[operator]
        within = flat[inside]
        if within.size:
            tally.counts[WITHIN] += within.size
            tally.first[WITHIN] = min(tally.first.get(WITHIN, pair.e.size), int(within[0]))
        flat = flat[~inside]
    e, a = pair.e[flat], pair.a[flat]
    flushed = (e != 0) & (np.abs(e) < pair.fmt.min_normal) & (a == 0)
    for outcome, where in ((FLUSHED, flat[flushed]), (BEYOND, flat[~flushed])):
        if where.size:
            tally.counts[outcome] += where.size
            tally.first_of(outcome, int(where[0]))
    tally.beyond = flat[~flushed]


def _margin(
    pair: _Pair, tops: list[tuple[float, int, int]], block: int, deferred: DeferredBound, tally: _Tally
) -> None:
    """max_ratio and worst of a deferred bound: d / floor bounds each true ratio from above, so only the
    elements where it reaches the largest true ratio among the blocks' leaders can hold the largest (or tie
    with it): their true ratios are computed, every other element's is below."""
    leaders = sorted(tops, reverse=True)[:_LEADERS]
    at = np.array(sorted(flat for _, flat, _ in leaders))
    threshold = float(np.max(_true_ratios(pair.distance(at), deferred.at(at))))  # type: ignore[arg-type]
    candidates = []
    for high, _, lo in tops:
        if high >= threshold:
            part = slice(lo, lo + block)
            floor = pair.floor(part, deferred.coefficient)  # type: ignore[arg-type]
            ratio = pair.distance(part) / floor  # type: ignore[operator]
            chosen = np.flatnonzero(ratio >= threshold) if threshold > 0 else np.flatnonzero(ratio > 0)
            candidates.append(chosen + lo)
    flat = np.concatenate(candidates)  # increasing: the first of the largest is the first index
    ratios = _true_ratios(pair.distance(flat), deferred.at(flat))  # type: ignore[arg-type]
    top = int(np.argmax(ratios))
    if ratios[top] > 0:
        tally.best, tally.best_at = float(ratios[top]), int(flat[top])


def _true_ratios(d: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """|a - e| / allowed as outcomes._ratio computes it (0 for d = 0, +inf where nothing is allowed)."""
    ratio = np.zeros(d.shape)
    compared = d > 0
    np.divide(d, allowed, out=ratio, where=compared & (allowed > 0))
    ratio[compared & ~(allowed > 0)] = np.inf
    return ratio


def _classification(
    expected: np.ndarray,
    actual: np.ndarray,
    bound: Tolerance,
    tally: _Tally,
    allowed_flat: np.ndarray | None,
) -> Classification:
    """The Classification of the tally, its instances as outcomes._summary makes them."""
    wanted = sorted(set(tally.first.values()) | ({tally.best_at} if tally.best_at >= 0 else set()))
    at = np.array(wanted, dtype=np.int64)
    if bound.deferred is not None:
        allowed = bound.deferred.at(at)
    else:
        assert allowed_flat is not None
        allowed = allowed_flat[at]
    e, a = expected.reshape(-1)[at], actual.reshape(-1)[at]
    d = np.abs(a.astype(np.float64) - e.astype(np.float64))
    unsigned = _UNSIGNED[e.itemsize]
    ratio = _true_ratios(np.where(e.view(unsigned) == a.view(unsigned), 0.0, d), allowed)
    by_flat = {flat: (float(allowed[k]), float(ratio[k])) for k, flat in enumerate(wanted)}

    def instance(flat: int) -> Instance:
        index = tuple(int(i) for i in np.unravel_index(flat, expected.shape))
        return Instance(index, expected[index].item(), actual[index].item(), *by_flat[flat])

    first = {o: instance(tally.first[o]) for o in OUTCOMES if tally.counts[o]}
    worst = instance(tally.best_at) if tally.best > 0 else None
    return Classification(
        dict(tally.counts), first, tally.best, worst, tally.max_ulps, bound.text, int(expected.size)
    )
