"""Gemm takes a large B' by blocks of columns (issue 31 item 2: VGG's 392 MiB classifier weight was
converted whole to float64 on every call): the result is bit for bit the one product's, on any data,
special values, signed zeros, subnormals and near-ties included, and whatever alpha and beta."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sonnx_check.reference import gemm as gemm_module
from sonnx_check.reference.gemm import GemmAttributes, gemm, gemm_with_abs

SPECIAL = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3.4e38, -3.4e38, 1.0, -1.0, 0.5, 2.0**-126],
    np.float32,
)


def _operand(rng: np.random.Generator, shape: tuple[int, ...], special: float, dtype: type) -> np.ndarray:
    values = rng.standard_normal(shape).astype(dtype)
    pick = rng.random(shape) < special
    with np.errstate(over="ignore"):  # float16: the float32 extremes are its infinities
        values[pick] = rng.choice(SPECIAL, size=int(pick.sum())).astype(dtype)
    return values


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(1, 4),
    k=st.integers(1, 12),
    p=st.integers(2, 24),
    special=st.sampled_from([0.0, 0.05, 0.4]),
    dtype=st.sampled_from([np.float32, np.float64, np.float16]),
    alpha=st.sampled_from([1.0, 0.5, -3.0]),
    beta=st.sampled_from([1.0, 2.0]),
    with_c=st.booleans(),
)
def test_blocks_of_columns_give_the_same_bits(
    seed: int, m: int, k: int, p: int, special: float, dtype: type, alpha: float, beta: float, with_c: bool
) -> None:
    rng = np.random.default_rng(seed)
    a, b = _operand(rng, (m, k), special, dtype), _operand(rng, (k, p), special, dtype)
    c = _operand(rng, (p,), special, dtype) if with_c else None
    attrs = GemmAttributes(alpha=alpha, beta=beta)
    whole = gemm(a, b, c, attrs=attrs)
    whole_y, whole_abs = gemm_with_abs(a, b, c, attrs=attrs)
    previous = gemm_module._BLOCK_BYTES
    gemm_module._BLOCK_BYTES = 8 * max(k, m) * int(rng.integers(1, p))  # blocks of 1 to p - 1 columns
    try:
        blocked = gemm(a, b, c, attrs=attrs)
        blocked_y, blocked_abs = gemm_with_abs(a, b, c, attrs=attrs)
    finally:
        gemm_module._BLOCK_BYTES = previous
    assert whole.dtype == blocked.dtype and whole.shape == blocked.shape
    assert whole.tobytes() == blocked.tobytes()
    assert whole_y.tobytes() == blocked_y.tobytes() == whole.tobytes()
    assert whole_abs.tobytes() == blocked_abs.tobytes()


def test_a_large_weight_is_never_converted_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """A [1, 4096] x [4096, 2048] float32 Gemm (32 MiB of B) converts at most _BLOCK_BYTES of it at a time."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1, 4096)).astype(np.float32)
    b = rng.standard_normal((4096, 2048)).astype(np.float32)
    largest = [0]
    real = gemm_module.Products

    def watching(left: np.ndarray, right: np.ndarray, *args: object, **kwargs: object) -> object:
        largest[0] = max(largest[0], right.nbytes)
        return real(left, right, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(gemm_module, "Products", watching)
    y = gemm(a, b, None)
    assert largest[0] <= gemm_module._BLOCK_BYTES
    monkeypatch.setattr(gemm_module, "Products", real)
    monkeypatch.setattr(gemm_module, "_BLOCK_BYTES", 2**40)
    assert gemm(a, b, None).tobytes() == y.tobytes()


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=st.sampled_from([(1, 7, 5), (3, 4), (2, 1, 9), (1,), (6, 6)]),
    zeros=st.floats(0.0, 1.0),
    transposed=st.booleans(),
)
def test_magnitude_range_by_blocks_is_the_bit_patterns_minimum(
    seed: int, shape: tuple[int, ...], zeros: float, transposed: bool
) -> None:
    """The least positive magnitude, found a block at a time, is the one the bit patterns order gives
    (the former whole-array computation): subnormals, +inf and all-zero arrays included."""
    from sonnx_check.reference import products_common

    rng = np.random.default_rng(seed)
    values = np.abs(_operand(rng, shape, 0.3, np.float32))
    values[np.isnan(values)] = np.inf
    values[rng.random(shape) < zeros] = 0.0
    if transposed:
        values = values.T
    bits = np.ascontiguousarray(values).view(np.uint32)
    expected = float(
        np.array((int(np.min(bits - np.uint32(1))) + 1) & 0xFFFFFFFF, np.uint32).view(np.float32)
    )
    previous = products_common._RANGE_BLOCK
    products_common._RANGE_BLOCK = int(rng.integers(1, 8))
    try:
        low, high = products_common.magnitude_range(values)
    finally:
        products_common._RANGE_BLOCK = previous
    if float(values.min()) == 0:
        assert low == expected or (np.isnan(low) and np.isnan(expected))
    assert high == float(values.max())
