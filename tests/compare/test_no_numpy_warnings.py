"""Ratios and roundings at the ends of the float range are meant to overflow to +inf: a user's terminal or CI
log never gets numpy's RuntimeWarning for them (a command-line run shows Python's warnings on stderr)."""

import math
import warnings

import numpy as np

from sonnx_check.compare.judging import bounds as accuracy
from sonnx_check.compare.judging.tolerance import Tolerance
from sonnx_check.reference.exact_sums import _fsum_rounded


def test_a_ratio_beyond_float64_is_inf_without_a_warning():
    expected = np.array([np.finfo(np.float32).max, 1.0], dtype=np.float32)
    actual = np.array([-np.finfo(np.float32).max, 1.0], dtype=np.float32)
    bound = Tolerance(np.array([2.0**-1074, 0.5]), False, "tiny")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = accuracy.classify(expected, actual, bound, np.float32)
    assert result.max_ratio == math.inf
    assert result.counts[accuracy.BEYOND] == 1


def test_rounding_just_above_the_largest_float32_warns_nothing():
    largest = float(np.finfo(np.float32).max)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rounded = _fsum_rounded([largest, largest * 2.0**-30], np.dtype(np.float32))
    assert rounded == largest


def test_a_difference_in_ulps_beyond_float64_is_inf_without_a_warning():
    """A float64 output computed in float32 (OpenVINO): a huge value where SONNX has a subnormal is more
    ulps away than float64 can count."""
    expected = np.array([5e-324, 1.0])
    actual = np.array([1e300, 1.0])
    bound = Tolerance(np.array([0.0, 0.5]), False, "exact")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = accuracy.classify(expected, actual, bound, np.float64)
    assert result.max_ulps == math.inf
    assert result.counts[accuracy.BEYOND] == 1
