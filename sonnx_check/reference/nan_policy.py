"""The NaN policy of the MaxPool reference kernel, in one place.

Seed 003 states: "any NaN value in X_p is considered as -inf" (docs/readings.md#maxpool-nan). A later
working-group revision dropped that sentence and its formal model makes NaN absorbing instead. Which one a
comparison uses is the reading ``MaxPool.nan``, declared in rules/MaxPool.toml (its values, their meaning, the
default: seed 003's) and chosen with ``--reading MaxPool.nan=VALUE`` (or ``--maxpool-nan``), recorded in
every report. It reaches the kernel as an argument (``Readings``, the run's readings passed by ``run_node`` to
the kernels that take one), never through a module global, and nothing else in the kernel decides what a NaN
does.

Max needs no policy switch: seed 002 makes NaN absorbing and ``numpy.maximum`` propagates NaN.
"""

from __future__ import annotations

from sonnx_check.operator_readings import DEFAULT, Readings

__all__ = ["DEFAULT", "NAN_ABSORBING", "NAN_AS_NEGATIVE_INFINITY", "READING", "READINGS", "Readings"]

READING = "MaxPool.nan"  # the reading's name in the run's Readings
NAN_AS_NEGATIVE_INFINITY = "nan-as-negative-infinity"  # seed 003, the profile this tool checks
NAN_ABSORBING = "nan-absorbing"  # later working-group revision, not yet the profile
# the values the kernel implements: rules/MaxPool.toml's [[reading]] declares the same (tested)
READINGS = (NAN_AS_NEGATIVE_INFINITY, NAN_ABSORBING)
