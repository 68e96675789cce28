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
