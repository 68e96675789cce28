"""The diff engine on crafted runtime results: the classes and messages a user reads, on any CPU."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sonnx_check.compare.judging.diff import (
    EXACT,
    MismatchClass,
    Outcome,
    Tolerance,
    bit_pattern,
    compare_arrays,
    tolerance_for,
)

F32_MIN = np.finfo(np.float32).min


def f32(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def test_identical_tensors_match():
    diff = compare_arrays(f32(1, 2, 3), f32(1, 2, 3))
    assert diff.outcome is Outcome.MATCH
    assert (diff.mismatches, diff.total) == (0, 3)
    assert diff.first is None


def test_nan_equals_nan_at_the_same_place_whatever_its_payload():
    quiet = f32(np.nan)
    other = np.array([0x7FC00001], dtype=np.uint32).view(np.float32)  # another NaN payload
    negative = -quiet
    assert compare_arrays(quiet, quiet.copy()).matches
    assert compare_arrays(quiet, other).matches
    assert compare_arrays(quiet, negative).matches


@pytest.mark.parametrize(("expected", "actual"), [(np.nan, -np.inf), (-np.inf, np.nan)])
def test_nan_against_a_number_is_a_nan_position_mismatch(expected, actual):
    diff = compare_arrays(f32(1, expected), f32(1, actual))
    assert diff.outcome is Outcome.DIFFERS
    assert diff.classes[MismatchClass.NAN_POSITION] == 1
    assert diff.classes[MismatchClass.VALUE] == 0
    assert diff.first.index == (1,)
    assert diff.first.kind is MismatchClass.NAN_POSITION


def test_infinities_of_the_same_sign_are_equal_of_opposite_sign_differ():
    assert compare_arrays(f32(np.inf, -np.inf), f32(np.inf, -np.inf)).matches
    diff = compare_arrays(f32(np.inf), f32(-np.inf))
    assert diff.classes[MismatchClass.VALUE] == 1
    assert diff.max_abs_diff is None  # no finite pair


def test_sign_of_zero_is_its_own_class_with_the_bits_in_the_message():
    diff = compare_arrays(f32(0.0, 1.0), f32(-0.0, 1.0))
    assert diff.outcome is Outcome.DIFFERS
    assert diff.classes == {
        MismatchClass.VALUE: 0,
        MismatchClass.NAN_POSITION: 0,
        MismatchClass.SIGNED_ZERO: 1,
    }
    assert diff.summary() == (
        "1 of 2 elements differ (1 signed-zero); first at [0]: "
        "onnxruntime -0.0 (0x80000000), SONNX 0.0 (0x00000000)"
    )
    assert diff.max_abs_diff == 0.0


def test_lowest_instead_of_minus_infinity_message_names_both_bit_patterns():
    expected = np.full((1, 1, 2, 2), -np.inf, dtype=np.float32)
    expected[0, 0, 1, 1] = 2.0
    actual = expected.copy()
    actual[0, 0, 0, 0] = F32_MIN
    diff = compare_arrays(expected, actual)
    assert diff.summary() == (
        "1 of 4 elements differ (1 value); first at [0,0,0,0]: onnxruntime -3.4028235e+38 (0xff7fffff), "
        "SONNX -inf (0xff800000)"
    )


def test_indices_are_exact_integers_with_twos_complement_bits():
    expected = np.array([[0, 2], [7, 8]], dtype=np.int64)
    actual = np.array([[-4, 2], [7, 9]], dtype=np.int64)
    diff = compare_arrays(expected, actual)
    assert (diff.mismatches, diff.total) == (2, 4)
    assert diff.first.index == (0, 0)
    assert diff.first.actual == "-4"
    assert diff.first.actual_bits == "0xfffffffffffffffc"
    assert diff.first.expected_bits == "0x0000000000000000"
    assert diff.max_abs_diff == 4.0
    assert diff.classes[MismatchClass.VALUE] == 2


def test_integer_difference_is_exact_beyond_float_precision():
    big = np.iinfo(np.int64).max
    diff = compare_arrays(np.array([big], dtype=np.int64), np.array([big - 1], dtype=np.int64))
    assert diff.mismatches == 1
    assert diff.max_abs_diff == 1.0


def test_first_mismatch_is_the_first_in_row_major_order():
    expected = np.zeros((3, 3), dtype=np.float64)
    actual = expected.copy()
    actual[2, 0] = 1.0
    actual[1, 2] = 5.0
    diff = compare_arrays(expected, actual)
    assert diff.first.index == (1, 2)
    assert diff.max_abs_diff == 5.0
    assert "2 of 9 elements differ" in diff.summary()


def test_shape_mismatch_is_its_own_result_class():
    diff = compare_arrays(np.zeros((1, 1, 2, 2), np.float32), np.zeros((1, 1, 3, 3), np.float32))
    assert diff.outcome is Outcome.SHAPE_MISMATCH
    assert diff.summary() == "shape differs: onnxruntime (1,1,3,3), SONNX (1,1,2,2)"


def test_type_mismatch_is_its_own_result_class_checked_before_shape():
    diff = compare_arrays(np.zeros((2,), np.float32), np.zeros((3,), np.float64))
    assert diff.outcome is Outcome.TYPE_MISMATCH
    assert diff.summary() == "type differs: onnxruntime float64, SONNX float32"


def test_non_numeric_tensors_are_not_supported():
    diff = compare_arrays(np.array(["a"]), np.array(["a"]))
    assert diff.outcome is Outcome.NOT_SUPPORTED


def test_booleans_compare_exactly():
    diff = compare_arrays(np.array([True, False]), np.array([True, True]))
    assert diff.mismatches == 1
    assert diff.first.actual == "true"
    assert diff.max_abs_diff is None


def test_float16_bits_have_four_hex_digits():
    diff = compare_arrays(np.array([-np.inf], np.float16), np.array([np.finfo(np.float16).min], np.float16))
    assert diff.first.actual_bits == "0xfbff"
    assert diff.first.expected_bits == "0xfc00"


def test_float64_difference_beyond_dbl_max_is_infinite_not_an_error():
    dmax = np.finfo(np.float64).max
    diff = compare_arrays(np.array([dmax]), np.array([-dmax]))
    assert diff.max_abs_diff == float("inf")


def test_bit_pattern_of_one_element_array():
    assert bit_pattern(np.array([-0.0], np.float64)) == "0x8000000000000000"
    assert bit_pattern(np.array([-1], np.int8)) == "0xff"


def test_tolerance_defaults_to_exact_and_integers_are_always_exact():
    assert EXACT.exact
    loose = Tolerance(atol=1e-3)
    assert tolerance_for(np.dtype(np.int64), loose) is EXACT
    assert tolerance_for(np.dtype(np.float32), loose) is loose
    assert tolerance_for(np.dtype(np.float32), {"float64": loose}) is EXACT
    assert tolerance_for(np.dtype(np.float64), {"float64": loose}) is loose


def test_inexact_tolerance_is_not_silently_applied():
    with pytest.raises(NotImplementedError):
        compare_arrays(f32(1.0), f32(1.0001), Tolerance(atol=1e-3))
    # integers ignore the tolerance: no inexact path is reached
    assert compare_arrays(np.array([1]), np.array([2]), Tolerance(atol=5)).mismatches == 1


FLOATS = hnp.arrays(
    dtype=st.sampled_from([np.float16, np.float32, np.float64]),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
    elements={"allow_nan": True, "allow_infinity": True, "allow_subnormal": True},
)


@given(FLOATS)
def test_a_tensor_always_matches_its_own_copy(values):
    assert compare_arrays(values, values.copy()).matches


@given(FLOATS, st.data())
def test_mismatch_count_is_the_bitwise_difference_up_to_nan(values, data):
    other = data.draw(hnp.arrays(dtype=values.dtype, shape=values.shape, elements={"allow_subnormal": True}))
    diff = compare_arrays(values, other)
    size = values.dtype.itemsize
    bits_differ = values.view(f"u{size}") != other.view(f"u{size}")
    both_nan = np.isnan(values) & np.isnan(other)
    assert diff.mismatches == int(np.count_nonzero(bits_differ & ~both_nan))
    assert sum(diff.classes.values()) == diff.mismatches
