"""MaxPool with Indices, bit for bit: the kernel (Y folded first, then each window's first element equal to
it) against two oracles, under both NaN readings and every dtype of the profile:

- the kernel's former algorithm, kept here verbatim in substance: a strict Max_F comparison offset by offset
  in row-major order, recording the winning offset as it goes (``_former_maxpool``);
- a per-window loop written from the specification's Max_F order (``_window_maxpool``), which decides NaN by
  the reading and returns a NaN of Y as the very element Indices designates.

Values come from small pools (many ties), with +-0, +-inf, NaNs of several signs and payloads, the extremes
and subnormals of the type; pads go beyond the kernel's extent minus one (trailing windows as ceil_mode
makes them, since ceil_mode = 1 is extra end padding) and the planes are split into groups of every size
the kernel's chunking can take. The comparison is of bit patterns, NaN payloads included."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from helpers import assert_identical
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sonnx_check.reference import ReferenceError
from sonnx_check.reference import maxpool as maxpool_module
from sonnx_check.reference.maxpool import PoolParams, _plan_axis, maxpool
from sonnx_check.reference.nan_policy import NAN_ABSORBING, NAN_AS_NEGATIVE_INFINITY, READINGS

PROFILE = (np.float16, np.float32, np.float64, np.int8, np.uint8)


def _raw(a: np.ndarray) -> np.ndarray:
    """Bit patterns, NaN payloads and signs kept (helpers.bits folds NaNs together)."""
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else a


def _assert_same(actual: tuple, expected: tuple) -> None:
    for got, want in zip(actual, expected, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(_raw(got), _raw(want))


# -- oracle 1: the former algorithm ------------------------------------------------------------------------
def _keep_maximum(best: np.ndarray, candidate: np.ndarray, policy: str) -> np.ndarray:
    """The former nan_policy.keep_maximum: a candidate wins when strictly greater in Max_F (+0 > -0); as
    -inf a NaN never wins; absorbing, the first NaN wins and stays. Only winners replace ``best``."""
    wins = np.greater(candidate, best)
    if candidate.dtype.kind == "f":
        wins |= np.equal(candidate, best) & np.greater(np.signbit(best), np.signbit(candidate))
        if policy == NAN_ABSORBING:
            wins |= np.isnan(candidate) & ~np.isnan(best)
    np.copyto(best, candidate, where=wins)
    return wins


def _former_maxpool(x: np.ndarray, params: PoolParams, reading: str) -> tuple[np.ndarray, np.ndarray]:
    """maxpool.py's with-Indices path before the speed-up (commit 7f087e2), minus its budget and checks."""
    n, c, h, w = x.shape
    y_shape = (n, c, params.output_size(0, h), params.output_size(1, w))
    rows = _plan_axis(h, y_shape[2], params.kernel[0], params.strides[0], params.dilations[0], params.pads[0])
    cols = _plan_axis(w, y_shape[3], params.kernel[1], params.strides[1], params.dilations[1], params.pads[1])
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    best = np.full(y_shape, lowest, dtype=x.dtype)
    best_tap = np.empty(y_shape, dtype=np.int64)
    best_tap[...] = rows.first_real_tap[:, None] * params.kernel[1] + cols.first_real_tap[None, :]
    for i, row_tap in enumerate(rows.taps):
        for j, col_tap in enumerate(cols.taps):
            if row_tap is None or col_tap is None:
                continue
            (out_rows, x_rows), (out_cols, x_cols) = row_tap, col_tap
            target = best[:, :, out_rows, out_cols]
            wins = _keep_maximum(target, np.ascontiguousarray(x[:, :, x_rows, x_cols]), reading)
            taps_here = best_tap[:, :, out_rows, out_cols]
            np.maximum(taps_here, wins * best_tap.dtype.type(i * params.kernel[1] + j), out=taps_here)
    b, ch = np.arange(n).reshape(n, 1, 1, 1), np.arange(c).reshape(1, c, 1, 1)
    row = rows.origin[:, None] + (best_tap // params.kernel[1]) * params.dilations[0]
    col = cols.origin[None, :] + (best_tap % params.kernel[1]) * params.dilations[1]
    indices = ((b * c + ch) * h + row) * w + col
    if x.dtype.kind == "f":  # _settle_zeros: a zero of Y is the element Indices designates
        zeros = np.flatnonzero(best.reshape(-1) == 0)
        best.reshape(-1)[zeros] = x.reshape(-1)[indices.reshape(-1)[zeros]]
    return best, indices


# -- oracle 2: one window at a time, from the specification ------------------------------------------------
def _greater(a: float, b: float) -> bool:
    """Max_F's strict order on non-NaN values: the numeric order, and +0 above -0."""
    return a > b or (a == b == 0 and math.copysign(1, a) > math.copysign(1, b))


def _window_maxpool(x: np.ndarray, params: PoolParams, reading: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Y and Indices window by window (None when a window holds only padding). Every window starts at the
    type's lowest value with its first real element as the index; an element replaces the best one when
    strictly greater in Max_F, and a NaN is -inf (never greater) or, absorbing, replaces any non-NaN."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw), pads = params.kernel, params.strides, params.dilations, params.pads
    out_h = (h + pads[0] + pads[2] - (dh * (kh - 1) + 1)) // sh + 1
    out_w = (w + pads[1] + pads[3] - (dw * (kw - 1) + 1)) // sw + 1
    y = np.zeros((n, c, out_h, out_w), x.dtype)
    indices = np.zeros(y.shape, np.int64)
    floating = x.dtype.kind == "f"
    lowest = x.dtype.type(-np.inf) if floating else np.iinfo(x.dtype).min
    for b, ch, m, q in itertools.product(range(n), range(c), range(out_h), range(out_w)):
        best, best_index = None, None
        for i, j in itertools.product(range(kh), range(kw)):
            row, col = m * sh + i * dh - pads[0], q * sw + j * dw - pads[1]
            if not (0 <= row < h and 0 <= col < w):
                continue
            element, flat = x[b, ch, row, col], ((b * c + ch) * h + row) * w + col
            if best is None:
                best, best_index = x.dtype.type(lowest), flat
            value = float(element) if floating else int(element)
            held = float(best) if floating else int(best)
            if floating and math.isnan(value):
                wins = reading == NAN_ABSORBING and not math.isnan(held)
            else:
                wins = not (floating and math.isnan(held)) and _greater(value, held)
            if wins:
                best, best_index = element, flat
        if best is None:
            return None
        y[b, ch, m, q], indices[b, ch, m, q] = best, best_index
    return y, indices


# -- cases -------------------------------------------------------------------------------------------------
def _nans(dtype: np.dtype) -> list:
    """NaNs of both signs, quiet with and without a payload, and a signalling one."""
    width = dtype.itemsize * 8
    exponent = {16: 5, 32: 8, 64: 11}[width]
    fraction = width - 1 - exponent
    ones = ((1 << exponent) - 1) << fraction
    patterns = [ones | (1 << (fraction - 1)), ones | (1 << (fraction - 1)) | 5, ones | 3]
    patterns += [p | (1 << (width - 1)) for p in patterns]
    return list(np.array(patterns, dtype=f"u{dtype.itemsize}").view(dtype))


def _pool_for(dtype: np.dtype) -> list:
    if dtype.kind == "f":
        info = np.finfo(dtype)
        plain = [0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 2.5, info.max, info.min, info.smallest_subnormal]
        return [dtype.type(v) for v in plain] + [-info.smallest_subnormal] + _nans(dtype)
    info = np.iinfo(dtype)
    return [dtype.type(v) for v in (info.min, info.min + 1, 0, 1, 2, info.max)]


@st.composite
def cases(draw) -> tuple[np.ndarray, PoolParams, str, int]:
    dtype = np.dtype(draw(st.sampled_from(PROFILE)))
    kernel = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilations = (draw(st.integers(1, 3)), draw(st.integers(1, 2)))
    extent = [d * (k - 1) + 1 for k, d in zip(kernel, dilations, strict=True)]
    # begin pads below the extent; end pads up to stride - 1 beyond it, ceil_mode's trailing windows
    pads = tuple(
        draw(st.integers(0, extent[axis % 2] - 1 + (strides[axis % 2] - 1 if axis >= 2 else 0)))
        for axis in range(4)
    )
    shape = (
        draw(st.integers(1, 2)),
        draw(st.integers(1, 3)),
        draw(st.integers(max(1, extent[0] - pads[0] - pads[2]), 10)),
        draw(st.integers(max(1, extent[1] - pads[1] - pads[3]), 8)),
    )
    pool = _pool_for(dtype)
    # a narrow pool sometimes (windows of one repeated value, of zeros only, of NaNs only)
    values = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=len(pool), unique_by=_raw_key))
    x = draw(hnp.arrays(dtype, shape, elements=st.sampled_from(values)))
    plane_bytes = shape[2] * shape[3] * dtype.itemsize
    chunk = draw(st.sampled_from([1, plane_bytes, 2 * plane_bytes, 1 << 19]))  # groups of 1, 1, 2, all planes
    return x, PoolParams(kernel, strides, dilations, pads), draw(st.sampled_from(sorted(READINGS))), chunk


def _raw_key(value: np.generic) -> object:
    return _raw(np.asarray(value)).item()


def _run(x: np.ndarray, params: PoolParams, reading: str) -> tuple | None:
    try:
        return maxpool(x, params, nan_reading=reading)
    except ReferenceError as exc:
        assert "only of padding" in str(exc)
        return None


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(cases())
def test_indices_and_y_bit_for_bit_as_the_former_algorithm_and_the_window_oracle(case) -> None:
    x, params, reading, chunk = case
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(maxpool_module, "_CHUNK_BYTES", chunk)
        got = _run(x, params, reading)
        y_only = maxpool(x, params, with_indices=False, nan_reading=reading)[0] if got else None
    expected = _window_maxpool(x, params, reading)
    assert (got is None) == (expected is None)
    if got is None:
        return
    _assert_same(got, expected)
    _assert_same(got, _former_maxpool(x, params, reading))
    assert_identical(y_only, got[0])  # Y alone: the same, up to which NaN the absorbing fold returns


@pytest.mark.parametrize("reading", sorted(READINGS))
def test_a_kernel_of_more_than_256_offsets_numbers_them_past_a_byte(reading) -> None:
    """17 x 17 offsets: the winning offset no longer fits a uint8, and the last ones win."""
    rng = np.random.default_rng(3)
    x = rng.choice(np.array([0.0, -0.0, 1.0, np.nan, -np.inf], np.float32), size=(1, 2, 20, 20))
    x[0, 0, 19, 19] = x[0, 1, 18, 17] = 7.0
    params = PoolParams((17, 17), (2, 3), (1, 1), (0, 1, 2, 0))
    got = maxpool(x, params, nan_reading=reading)
    _assert_same(got, _former_maxpool(x, params, reading))
    _assert_same(got, _window_maxpool(x, params, reading))


def test_the_first_of_equal_elements_wins_not_the_last() -> None:
    """A window of four equal maxima (and one of -0, +0, +0): Indices designates the first in row-major
    order, the first +0 after a -0, and under the -inf reading a window of NaN then -inf its NaN."""
    x = np.array([[[[5, 5], [5, 5]], [[-0.0, 0.0], [0.0, 1.0]]]], np.float32)
    x[0, 1, 1, 1] = -0.0
    _, indices = maxpool(x, PoolParams((2, 2), (1, 1), (1, 1), (0, 0, 0, 0)))
    assert indices.reshape(-1).tolist() == [0, 5]
    x = np.array([[[[np.nan, -np.inf]]]], np.float32)
    for reading in (NAN_AS_NEGATIVE_INFINITY, NAN_ABSORBING):
        y, indices = maxpool(x, PoolParams((1, 2), (1, 1), (1, 1), (0, 0, 0, 0)), nan_reading=reading)
        assert indices.item() == 0
        assert np.isnan(y.item()) == (reading == NAN_ABSORBING)


def test_an_absorbing_window_designates_its_first_nan_and_y_is_that_nan() -> None:
    """Kernel 3, stride 2, pad 1, as in ResNet: the centre offset, read by every window, starts the fold, so
    the NaN the fold returns is the centre's; Y and Indices must be the window's first NaN (row-major)."""
    nans = _nans(np.dtype(np.float32))
    x = np.zeros((1, 1, 5, 5), np.float32)
    x[0, 0, 0, 1], x[0, 0, 1, 1], x[0, 0, 2, 2] = nans[1], nans[5], nans[2]
    params = PoolParams((3, 3), (2, 2), (1, 1), (1, 1, 1, 1))
    y, indices = maxpool(x, params, nan_reading=NAN_ABSORBING)
    assert indices[0, 0, 0, 0] == 1 and indices[0, 0, 1, 1] == 6
    _assert_same((y, indices), _window_maxpool(x, params, NAN_ABSORBING))
    _assert_same((y, indices), _former_maxpool(x, params, NAN_ABSORBING))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_a_signalling_nan_is_minus_infinity_for_y_alone_too(dtype) -> None:
    """numpy's fmax returns a signalling NaN (quieted) from its scalar loop: Y without Indices once gave NaN
    for a window of 5 and a signalling NaN, where the -inf reading gives 5, and NaN for a window of that NaN
    alone, where it gives -inf."""
    signalling = _nans(np.dtype(dtype))[2]
    x = np.array([[[[5, signalling, signalling]]]], dtype)
    params = PoolParams((1, 2), (1, 1), (1, 1), (0, 0, 0, 1))
    y, _ = maxpool(x, params, with_indices=False)
    assert _raw(y).tolist() == _raw(np.array([[[[5, -np.inf, -np.inf]]]], dtype)).tolist()
    _assert_same(maxpool(x, params), _window_maxpool(x, params, NAN_AS_NEGATIVE_INFINITY))
