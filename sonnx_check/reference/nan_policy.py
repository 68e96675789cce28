"""The NaN policy of the MaxPool reference kernel, in one place.

Seed 003 states: "any NaN value in X_p is considered as -inf" (semantics.md, MaxPool decision 3). A later
working-group revision dropped that sentence and its formal model makes NaN absorbing instead. Which one a
comparison uses is a configuration choice (``--maxpool-nan``, ``compare.maxpool-nan``; seed 003's by default),
recorded in every report; ``MAXPOOL_NAN`` below holds it, and nothing else in the kernel decides what a NaN
does.

Max needs no policy switch: seed 002 makes NaN absorbing and ``numpy.maximum`` propagates NaN.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

NAN_AS_NEGATIVE_INFINITY = "nan-as-negative-infinity"  # seed 003, the profile this tool checks
NAN_ABSORBING = "nan-absorbing"  # later working-group revision, not yet the profile

MAXPOOL_NAN = NAN_AS_NEGATIVE_INFINITY
READINGS = {
    NAN_AS_NEGATIVE_INFINITY: "seed 003: 'any NaN value in X_p is considered as -inf' (a window of NaN and "
    "-inf gives -inf)",
    NAN_ABSORBING: "the working group's later MaxPool text: a NaN in a window makes its maximum NaN",
}


@contextmanager
def maxpool_reading(policy: str) -> Iterator[None]:
    """Run the block with ``policy`` as the MaxPool NaN reading (``--maxpool-nan``), then restore it. A
    comparison runs in one thread, so a module-level switch is enough and the kernel's signature stays
    the one every operator has."""
    global MAXPOOL_NAN
    if policy not in READINGS:
        raise ValueError(f"unknown MaxPool NaN reading {policy!r} (expected one of {', '.join(READINGS)})")
    saved, MAXPOOL_NAN = MAXPOOL_NAN, policy
    try:
        yield
    finally:
        MAXPOOL_NAN = saved


def keep_maximum(best: np.ndarray, candidate: np.ndarray, policy: str | None = None) -> np.ndarray:
    """Fold the window elements met at one kernel offset into the best ones met so far (row-major order):
    update ``best`` in place and return where the candidate won.

    A candidate wins when strictly greater in the float order Max_F, where +0 is greater than -0
    (maxpool.md's float section: "The Max operator becomes Max_F"; max.md), so the first of equal elements
    stays (the tie rule) and a +0 after a -0 wins. As -inf: a NaN never wins (``NaN > x`` is false) and
    never enters ``best`` (``fmax`` ignores it), so a window whose real elements are all NaN or -inf keeps
    its starting -inf. Absorbing: the first NaN wins and stays. Only a winner replaces ``best``, so ``best``
    is always the element the winning index designates, bit for bit.
    """
    wins = np.greater(candidate, best)
    if candidate.dtype.kind == "f":  # equal with different sign bits: only -0 (best) against +0 (candidate)
        wins |= np.equal(candidate, best) & np.greater(np.signbit(best), np.signbit(candidate))
        if (policy or MAXPOOL_NAN) == NAN_ABSORBING:
            wins |= np.isnan(candidate) & ~np.isnan(best)
    # only the winners replace ``best``: an equal candidate (the other zero) must not, or the next
    # comparison would be made against the wrong zero
    np.copyto(best, candidate, where=wins)
    return wins
