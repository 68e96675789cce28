"""Judging one output in one pass: the elements a comparison accepts and the counted ``Classification``
(outcomes.py), together, as ``outcome_masks`` and ``classify`` give them, bit for bit.

The common case takes a fast path: float16/float32 outputs where the reference and the runtime are finite
and no element is compared bit for bit by a special-value rule. There the outcomes reduce to three tests per
element (same bits, |a - e| <= allowed, a flushed subnormal), evaluated block by block over cache-sized
pieces with a few float64 temporaries, and the margin (``max_ratio``, ``worst``) and ``max_ulps`` are kept as
running maxima (the first element wins a tie, as numpy's argmax does over the whole tensor).

A deferred bound (tolerance.DeferredBound: Softmax, BatchNormalization) is not evaluated everywhere: its
proven floor (the operator's, cheaper than the bound and at most it) decides the elements within it, and its
exact values are computed only where the floor does not decide (an element beyond the floor, maybe still
within the bound) and where an element's ratio against the floor, an upper bound of its true ratio, could
still reach the largest true ratio found (ties included): the margin and the worst element are those of the
full evaluation.

Everything else (NaN, infinities, exact elements, float64 outputs, the readings of the sums of products on a
runtime's infinity) takes the general path, ``outcome_masks`` then the classification on the same masks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sonnx_check.compare.judging.element_outcomes import (
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
from sonnx_check.compare.judging.floats import float_format
from sonnx_check.compare.judging.tolerance import DeferredBound, Tolerance

_BLOCK = 1 << 15  # elements per block: its float64 temporaries (256 KiB each) stay in the cache
_LEADERS = 8  # blocks whose largest d / floor is evaluated exactly first (the threshold of the margin)


@dataclass(frozen=True)
class Judged:
    """One output judged: its classification and where it diverges (beyond the bound or a special-value
    mismatch: what a comparison does not accept, the complement of MATCH | WITHIN | FLUSHED)."""

    classification: Classification
    divergent: np.ndarray


def judge(expected: np.ndarray, actual: np.ndarray, bound: Tolerance, dtype: np.dtype | type | str) -> Judged:
    """``classify`` and the divergent elements of ``outcome_masks`` of one float output, in one pass."""
    expected, actual = np.asarray(expected), np.asarray(actual)
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ValueError(f"judge compares float outputs, not {dtype}")
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # +inf ratios are meant
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
    deferred = bound.deferred
    allowed: np.ndarray | None = None
    if deferred is None:
        values = np.asarray(bound.allowed, dtype=np.float64)
        if values.shape != expected.shape:
            values = np.broadcast_to(values, expected.shape)
        allowed = values.reshape(-1)
    pair = _Pair(expected.reshape(-1), actual.reshape(-1), dtype)
    tally = _Tally(dict.fromkeys(OUTCOMES, 0), {})
    open_: list[np.ndarray] = []  # beyond the floor (or the bound): decided at the end
    tops: list[tuple[float, int]] = []  # deferred: per block, the largest d / floor and where
    bounds = np.empty(expected.size if deferred is not None else 0, dtype=np.float32)  # deferred: d / floor
    block = _BLOCK if deferred is None else deferred.unit * max(1, _BLOCK // deferred.unit)  # whole rows
    for lo in range(0, expected.size, block):
        part = slice(lo, lo + block)
        d, t = pair.distance(part)
        top = int(np.argmax(t))  # the first NaN if there is one
        if not np.isfinite(t[top]):
            return None  # a NaN or an infinity on either side: the general path
        tally.max_ulps = max(tally.max_ulps, float(t[top]) * pair.ulps)
        same = pair.same(part)
        n, n_same = d.size, int(np.count_nonzero(same))
        if n_same:
            tally.counts[MATCH] += n_same
            tally.first_of(MATCH, lo + int(np.argmax(same)))
        if n_same == n:
            continue
        if allowed is not None:
            floor = allowed[part]
            if not floor.min() > 0:
                return None  # nothing allowed somewhere: the general path's +inf ratios
        else:
            assert deferred is not None
            floor = _floor(pair, part, deferred, out=t)  # at most allowed: d <= floor is within
        decided = d <= floor
        ratio = np.divide(d, floor, out=t)  # the true ratio, or an upper bound of it (deferred)
        best = int(np.argmax(ratio))
        if allowed is not None and ratio[best] > tally.best:
            tally.best, tally.best_at = float(ratio[best]), lo + best
        elif allowed is None:
            np.copyto(bounds[part], ratio, casting="same_kind")  # for the margin, within 2^-24 (normal)
            if ratio[best] > 0:
                tops.append((float(ratio[best]), lo + best))
        n_decided = int(np.count_nonzero(decided))  # the same elements too (d = 0)
        if n_decided > n_same:
            tally.counts[WITHIN] += n_decided - n_same
            if WITHIN not in tally.first:
                tally.first_of(WITHIN, lo + int(np.argmax(decided ^ same)))  # same implies decided
        if n_decided < n:
            open_.append(np.flatnonzero(~decided) + lo)
    known = _open(pair, np.concatenate(open_), deferred, tally) if open_ else None
    if tops:
        assert deferred is not None
        _margin(pair, tops, bounds, block, deferred, known, tally)
    divergent = np.zeros(expected.size, dtype=bool)
    divergent[tally.beyond] = True
    classification = _classification(expected, actual, bound, tally, allowed)
    return Judged(classification, divergent.reshape(expected.shape))


class _Pair:
    """The reference and the runtime's output, flat, read block by block."""

    def __init__(self, e: np.ndarray, a: np.ndarray, dtype: np.dtype) -> None:
        self.e, self.a, self.dtype = e, a, dtype
        self.fmt = fmt = float_format(dtype)
        self.unsigned = np.dtype(f"u{dtype.itemsize}").type
        shift, bias = fmt.precision - 1, fmt.emax
        self.field = self.unsigned((2 * bias + 1) << shift)  # the exponent field, all ones
        self.lowest = self.unsigned((fmt.emin + bias) << shift)  # max(|e|, min-normalized)
        self.highest = self.unsigned((2 * bias) << shift)  # +-inf and NaN: as the largest finite values
        self.flip = self.field  # the same bits subtracted: field F -> 2bias + 1 - F, so 2^E -> 2^(1-E)
        self.ulps = 2.0 ** (fmt.precision - 2)  # d / ulp(e) = t 2^(p-2)
        self._buffers: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def distance(self, part: slice | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """d = |a - e| in float64 (as outcome_masks computes it) and t = d 2^(1-E), 2^E the power of two at
        or below max(|e|, min-normalized), from e's exponent field: an exact scaling by a power of two (a
        normal number of the format), so d / ulp(e) is t 2^(p-2) and d <= c 2^E is t <= 2c; NaN or +inf
        where either value is not finite. A block (a slice) is computed into the same buffers each time:
        the previous block's d and t are overwritten."""
        a, e = self.a[part], self.e[part]
        n = a.size
        if isinstance(part, slice):
            if self._buffers is None or self._buffers[0].size < n:
                self._buffers = (np.empty(n), np.empty(n), np.empty(n, dtype=self.unsigned))
            d, t, field = (b[:n] for b in self._buffers)
        else:
            d, t, field = np.empty(n), np.empty(n), np.empty(n, dtype=self.unsigned)
        np.copyto(d, a)
        with np.errstate(invalid="ignore"):  # inf - inf: NaN, the general path's
            np.subtract(d, e, out=d)
        np.abs(d, out=d)
        np.bitwise_and(e.view(self.unsigned), self.field, out=field)
        np.clip(field, self.lowest, self.highest, out=field)
        scale = np.subtract(self.flip, field, out=field).view(self.dtype)
        with np.errstate(invalid="ignore", over="ignore"):
            np.multiply(d, scale, out=t)
        return d, t

    def same(self, part: slice | np.ndarray) -> np.ndarray:
        """Bit for bit equal: for finite values, equal with the same sign of zero (outcome_masks' MATCH)."""
        return self.e[part].view(self.unsigned) == self.a[part].view(self.unsigned)


def _open(pair: _Pair, flat: np.ndarray, deferred: DeferredBound | None, tally: _Tally) -> float | None:
    """The elements beyond the floor: within the bound (deferred: its exact values there), a subnormal
    reference flushed to zero, or beyond. Returns a deferred bound's largest true ratio there."""
    known = None
    if deferred is not None:
        d, _ = pair.distance(flat)
        values = deferred.at(flat)
        inside = d <= values
        known = float(np.max(_true_ratios(d, values)))
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
    return known


def _margin(
    pair: _Pair,
    tops: list[tuple[float, int]],
    bounds: np.ndarray,
    block: int,
    deferred: DeferredBound,
    known: float | None,
    tally: _Tally,
) -> None:
    """max_ratio and worst of a deferred bound. Each true ratio is at most d / floor: so with T the largest
    true ratio known (the elements beyond the floor, the largest d / floor of a few blocks), only elements
    where d / floor reaches T can hold the largest ratio or tie with it; their true ratios are computed, every
    other element's is below T. ``bounds``: d / floor rounded to float32; ``tops``: each block's largest."""
    leaders = np.array(sorted(flat for _, flat in sorted(tops, reverse=True)[:_LEADERS]))
    d, _ = pair.distance(leaders)
    threshold = float(np.max(_true_ratios(d, deferred.at(leaders))))
    if known is not None:
        threshold = max(threshold, known)
    # d / floor >= T (both rounded) implies at least T (1 - 2^-22) in float32 where that is a normal number
    cut = threshold * (1 - 2.0**-22) if threshold > 2.0**-100 else 0.0
    chosen = []
    for high, flat in tops:
        if high >= threshold:
            lo = flat - flat % block
            if cut > 0:
                chosen.append(np.flatnonzero(bounds[lo : lo + block] >= cut) + lo)
            else:  # ratios that small may be below float32's range: again in float64
                part = slice(lo, lo + block)
                d, _ = pair.distance(part)
                chosen.append(np.flatnonzero(d / _floor(pair, part, deferred) > 0) + lo)
    candidates = np.concatenate(chosen)  # increasing: the first of the largest is the first index
    d, _ = pair.distance(candidates)
    ratios = _true_ratios(d, deferred.at(candidates))
    top = int(np.argmax(ratios))
    if ratios[top] > 0:
        tally.best, tally.best_at = float(ratios[top]), int(candidates[top])


def _floor(
    pair: _Pair, where: slice | np.ndarray, deferred: DeferredBound, out: np.ndarray | None = None
) -> np.ndarray:
    """A deferred bound's floor at some elements: at most allowed, so d / floor is at least d / allowed
    (both rounded: division rounds monotonically)."""
    return deferred.floor(where, out)


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
    unsigned = np.dtype(f"u{e.itemsize}")
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
