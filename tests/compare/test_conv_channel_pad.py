"""BFLOAT16-CHANNEL-PAD-READS-NEXT-PIXEL: OpenVINO's bfloat16 Conv with an odd input-channel count reads the
next pixel's first channel with a zero weight, NaN where that value is infinite in bfloat16. The emulated
NaN are explained under that ID (the other elements under BFLOAT16-INFERENCE), and a NaN the read cannot
produce is not."""

from __future__ import annotations

import numpy as np
import pytest
from behaviours_conv_channel_pad import channel_pad_case, conv_case
from hypothesis import given, settings
from hypothesis import strategies as st
from test_known import with_actual

from sonnx_check.compare.judging.known_departures import by_id, explained_mask, match_known

ID = "BFLOAT16-CHANNEL-PAD-READS-NEXT-PIXEL"


def _explains(case) -> np.ndarray:
    return by_id(ID).explains(case)


def test_the_next_pixel_nan_is_explained_and_the_rest_is_bfloat16_inference() -> None:
    case = channel_pad_case()
    nan = np.isnan(case.actual) & ~np.isnan(case.expected)
    # inf at column 3 of channel 0: the outputs one column left of its window (columns 1, 2, 3), rows 1-3
    assert sorted({(int(i), int(j)) for _, _, i, j in np.argwhere(nan)}) == [
        (i, j) for i in (1, 2, 3) for j in (1, 2, 3)
    ]
    assert np.array_equal(_explains(case) & case.mismatch, nan)
    assert not (case.mismatch & ~explained_mask(case)).any()
    counts = {m.entry.id: m.explained for m in match_known(case)}
    assert counts[ID] == 18  # 9 positions x 2 output channels


def test_a_nan_away_from_any_infinite_first_channel_value_stays_unexplained() -> None:
    case = channel_pad_case()
    actual = case.actual.copy()
    actual[0, 1, 5, 0] = np.nan  # row 5 never sees row 2's infinity
    assert not _explains(with_actual(case, actual))[0, 1, 5, 0]


def test_the_last_output_column_does_not_read_past_its_window() -> None:
    rng = np.random.default_rng(4)
    x = rng.uniform(-1, 1, (1, 3, 5, 6)).astype(np.float32)
    x[0, 0, 2, 5] = -np.inf  # the last column: read from pixel 4, in the windows of outputs 3, 4, 5
    case = conv_case(x, rng.uniform(-1, 1, (1, 3, 3, 3)).astype(np.float32))
    actual = case.actual.copy()
    actual[0, 0, 2, 5] = np.nan  # output 5 is the last column: its value is -inf or +inf, not NaN
    explained = _explains(with_actual(case, actual))
    assert explained[0, 0, 2, 3] and explained[0, 0, 2, 4] and not explained[0, 0, 2, 5]


@pytest.mark.parametrize("channels", [1, 2, 4])
def test_an_even_or_single_channel_count_explains_nothing(channels: int) -> None:
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (1, channels, 5, 5)).astype(np.float32)
    x[0, 0, 2, 2] = np.inf
    case = conv_case(x, rng.uniform(-1, 1, (1, channels, 3, 3)).astype(np.float32))
    actual = case.actual.copy()
    actual[0, 0, 1, 1] = np.nan
    assert not _explains(with_actual(case, actual)).any()


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 5), st.integers(0, 6)), min_size=1, max_size=4),
    st.sampled_from([np.inf, -np.inf, np.nan, float(np.finfo(np.float32).max)]),
    st.sampled_from([(0, 1), (1, 1), (2, 1), (1, 2)]),
    st.sampled_from([3, 5]),
)
def test_every_nan_the_read_adds_is_explained_and_only_nan_is(places, value, geometry, channels) -> None:
    pad, stride = geometry
    rng = np.random.default_rng(6)
    x = rng.uniform(-1, 1, (1, channels, 6, 7)).astype(np.float32)
    for c, r, q in places:
        x[0, min(c, channels - 1), r, q] = value
    w = rng.uniform(-1, 1, (2, channels, 3, 3)).astype(np.float32)
    case = conv_case(x, w, pad, stride)
    # the read's NaN: NaN in the runtime where bfloat16 operands alone give none
    added = np.isnan(case.actual) & ~np.isnan(_bfloat16_only(x, w, pad, stride))
    assert np.array_equal(_explains(case) & added, added)
    assert not (_explains(case) & ~np.isnan(case.actual)).any()


def _bfloat16_only(x: np.ndarray, w: np.ndarray, pad: int, stride: int) -> np.ndarray:
    """The convolution on bfloat16 operands without the read (an even count of channels: the read off)."""
    from behaviours_conv_channel_pad import openvino_bfloat16_conv

    padded_channels = np.concatenate([x, np.zeros_like(x[:, :1])], axis=1)
    padded_weights = np.concatenate([w, np.zeros_like(w[:, :1])], axis=1)
    return openvino_bfloat16_conv(padded_channels, padded_weights, pad, stride)


def test_a_nan_the_bfloat16_convolution_gives_by_itself_is_not_the_reads() -> None:
    # +inf and -inf meet in the windows of outputs (0..2, 0..2) with positive weights: NaN without any read
    # (tract gives such NaN too: a float32 overflow against an infinity); the read reaches (1..3, 1..3)
    rng = np.random.default_rng(8)
    x = rng.uniform(-1, 1, (1, 3, 6, 8)).astype(np.float32)
    x[0, 0, 2, 3] = np.inf
    x[0, 1, 1, 1], x[0, 2, 1, 1] = np.inf, -np.inf
    case = conv_case(x, rng.uniform(0.1, 1, (1, 3, 3, 3)).astype(np.float32))
    explained = _explains(case)[0, 0]
    assert np.isnan(case.actual[0, 0, 1:3, 1:3]).all() and not explained[1:3, 1:3].any()
    assert explained[3, 3] and explained[1, 3]


def test_a_float16_model_and_a_nan_read_are_explained_too() -> None:
    # a float16 model runs in bfloat16 as well; a NaN read (0 * NaN) is NaN as an infinity's is
    rng = np.random.default_rng(9)
    x = rng.uniform(-2, 2, (1, 3, 6, 8)).astype(np.float16)
    x[0, 0, 2, 3] = np.nan  # the outputs whose window holds it are NaN for SONNX too; (1..3, 1) is the read's
    case = conv_case(x, rng.uniform(-1, 1, (2, 3, 3, 3)).astype(np.float16))
    read = np.isnan(case.actual) & ~np.isnan(case.expected)
    assert sorted({(int(i), int(j)) for _, _, i, j in np.argwhere(read)}) == [(1, 1), (2, 1), (3, 1)]
    assert np.array_equal(_explains(case) & read, read)
