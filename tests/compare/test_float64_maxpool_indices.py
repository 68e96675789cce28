"""FLOAT64-AS-SATURATED-FLOAT32 on MaxPool's Indices (issue 29): OpenVINO computes a float64 MaxPool in
float32 on saturated operands, so a window of -1e300 and -inf holds float32's lowest value only, and its
Indices designate the plane's first element (MAXPOOL-INDEX-ZERO-FOR-LOWEST-WINDOW inside the narrowing;
measured on OpenVINO 2026.4.1: --survey's MaxPool double reproducer, 149 differing Indices of 320, every one
given by this emulation). Emulated in numpy here; a wrong index stays unexplained."""

from __future__ import annotations

import numpy as np
from behaviours_float64 import saturate
from behaviours_maxpool_lowest import indices_case, lowest_start_indices
from test_known import with_actual

from sonnx_check.compare.judging.known_departures import DivergenceCase, by_id

ID = "FLOAT64-AS-SATURATED-FLOAT32"


def _narrowed_case() -> DivergenceCase:
    x = np.arange(32, dtype=np.float64).reshape(1, 2, 4, 4)
    x[:, :, 0:2, 2:4] = [[-1e300, -np.inf], [-np.inf, -1e300]]  # window (0, 1): -3.4028235e38 in float32
    x[:, :, 2:4, 0:2] = [[-1e300, -1e308], [-np.inf, -1e300]]  # window (1, 0): SONNX picks -1e300 first
    found = indices_case(x)
    actual = lowest_start_indices(saturate(x).astype(np.float32))
    return DivergenceCase(found.node, 1, found.expected, actual, found.expected != actual, found.inputs)


def test_indices_of_a_window_narrowed_to_the_lowest_float32_are_explained():
    case = _narrowed_case()
    assert case.mismatch.sum() == 4  # two windows in each of the two planes
    assert set(case.actual[case.mismatch].tolist()) == {0, 16}  # each plane's first element
    assert by_id(ID).explains(case)[case.mismatch].all()


def test_a_wrong_index_stays_unexplained():
    case = _narrowed_case()
    actual = case.actual.copy()
    actual[0, 0, 1, 1] = 3  # window (1, 1) holds 10, 11, 14, 15: index 3 is outside it
    planted = with_actual(case, actual)
    assert planted.mismatch[0, 0, 1, 1] and not by_id(ID).explains(planted)[0, 0, 1, 1]
