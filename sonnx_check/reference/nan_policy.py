"""The NaN policy of the MaxPool reference kernel, in one place.

Seed 003 states: "any NaN value in X_p is considered as -inf" (docs/readings.md#maxpool-nan). A later
working-group revision dropped that sentence and its formal model makes NaN absorbing instead. Which one a
comparison uses is a configuration choice (``--maxpool-nan``, ``compare.maxpool-nan``; seed 003's by default),
recorded in every report. It reaches the kernel as an argument (``Readings``, passed by ``run_node`` to the
kernels that take it), never through a module global, and nothing else in the kernel decides what a NaN
does.

Max needs no policy switch: seed 002 makes NaN absorbing and ``numpy.maximum`` propagates NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NAN_AS_NEGATIVE_INFINITY = "nan-as-negative-infinity"  # seed 003, the profile this tool checks
NAN_ABSORBING = "nan-absorbing"  # later working-group revision, not yet the profile

READINGS = {
    NAN_AS_NEGATIVE_INFINITY: "seed 003: 'any NaN value in X_p is considered as -inf' (a window of NaN and "
    "-inf gives -inf)",
    NAN_ABSORBING: "the working group's later MaxPool text: a NaN in a window makes its maximum NaN",
}


@dataclass(frozen=True)
class Readings:
    """The readings of the specification a run chose where the texts differ, handed to the kernels that
    depend on one (``execute.run_node(..., readings=...)``)."""

    maxpool_nan: str = NAN_AS_NEGATIVE_INFINITY

    def __post_init__(self) -> None:
        if self.maxpool_nan not in READINGS:
            choices = ", ".join(READINGS)
            raise ValueError(f"unknown MaxPool NaN reading {self.maxpool_nan!r} (expected one of {choices})")


DEFAULT = Readings()


def keep_maximum(best: np.ndarray, candidate: np.ndarray, policy: str) -> np.ndarray:
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
        if policy == NAN_ABSORBING:
            wins |= np.isnan(candidate) & ~np.isnan(best)
    # only the winners replace ``best``: an equal candidate (the other zero) must not, or the next
    # comparison would be made against the wrong zero
    np.copyto(best, candidate, where=wins)
    return wins
