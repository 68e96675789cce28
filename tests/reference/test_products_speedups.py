"""The sum-of-products shortcuts of issue 21, each against exact arithmetic or the naive readings: the bound's
sum |a*b| taken in float64 on subnormal and extreme float32 data (a rigorous upper bound, now within float64
rounding of the exact sum), a constant W's derived forms kept across datasets (never given to another array,
never stale), the infinite terms counted with one product, and the tier-1 certificate in blocks."""

from __future__ import annotations

import gc
from fractions import Fraction

import numpy as np
import onnx.helper as h
import pytest
from helpers import assert_identical
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from naive_products import naive_abs_sum, naive_conv, naive_matmul

from sonnx_check.reference import constant_cache, conv, exact_sums
from sonnx_check.reference.matmul import matmul, matmul_abs, matmul_with_abs

SUBNORMAL = float(np.finfo(np.float32).smallest_subnormal)


def _frozen(a: np.ndarray) -> np.ndarray:
    """An immutable copy, as onnx.numpy_helper.to_array gives a model's raw tensor data."""
    return np.frombuffer(a.tobytes(), dtype=a.dtype).reshape(a.shape)


@st.composite
def subnormal_matrices(draw):
    """float32 operands of subnormals, the smallest normals and ordinary values: products far below the
    float32 range, where a float32 product of magnitudes underflows and runs on microcode assists."""
    m, k, p = draw(st.integers(1, 3)), draw(st.integers(1, 30)), draw(st.integers(1, 3))
    steps = st.integers(-(2**23) + 1, 2**23 - 1).map(lambda n: np.float32(n * SUBNORMAL))
    values = st.one_of(steps, st.sampled_from([np.float32(v) for v in (2.0**-126, -(2.0**-100), 0.5, -3.0)]))
    a = draw(hnp.arrays(np.float32, (m, k), elements=values))
    b = draw(hnp.arrays(np.float32, (k, p), elements=values))
    a[0, 0] = np.float32(draw(st.integers(1, 7)) * SUBNORMAL)  # at least one subnormal operand
    return a, b


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(subnormal_matrices())
def test_abs_sum_on_subnormal_data_is_an_upper_bound_within_float64_rounding(case) -> None:
    """Rigorous (at least the exact sum |a*b|) and, taken in float64 where every product of two float32
    values is exact, above it by float64 roundings only: no float32 rounding and no allowance for products
    that underflow (the float32 product of magnitudes needed up to (K + 1) subnormals more)."""
    a, b = case
    bound = matmul_abs(a, b)
    fused = matmul_with_abs(a, b)[1]
    np.testing.assert_array_equal(bound, fused)
    k = a.shape[1]
    for (i, j), got in np.ndenumerate(bound):
        want = naive_abs_sum([(float(a[i, n]), float(b[n, j])) for n in range(k)], None)
        assert Fraction(got) >= want
        assert Fraction(got) <= want * (1 + Fraction(4 * (k + 2)) * Fraction(2.0**-53))


def test_conv_abs_on_the_subnormal_edge_dataset_is_an_upper_bound_within_float64_rounding() -> None:
    rng = np.random.default_rng(3)
    steps = rng.integers(1, 8, size=(1, 2, 5, 5)).astype(np.uint32) | (rng.random((1, 2, 5, 5)) < 0.5) << 31
    x = steps.astype(np.uint32).view(np.float32)  # the edge battery's subnormals: k * smallest subnormal
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    attrs = {"strides": [1, 1], "pads": [1, 1, 1, 1], "dilations": [1, 1], "group": 1}
    bound = conv.conv_abs(x, w, **attrs)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    for (_, c, r, q), got in np.ndenumerate(bound):
        pairs = [(float(xp[0, i, r + a, q + z]), float(w[c, i, a, z])) for i in range(2) for a in range(3)
                 for z in range(3)]  # fmt: skip
        want = naive_abs_sum(pairs, None)
        assert want > 0 and Fraction(got) >= want
        assert Fraction(got) <= want * (1 + Fraction(4 * 20) * Fraction(2.0**-53))


# -- the constant cache ---------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _empty_cache():
    constant_cache.clear()
    yield
    constant_cache.clear()


def test_derived_values_are_kept_only_for_immutable_arrays_and_only_for_that_array() -> None:
    calls = []

    def compute(a):
        return lambda: calls.append(1) or a.astype(np.float64)

    frozen = _frozen(np.arange(6, dtype=np.float32))
    first = constant_cache.derived(frozen, "f64", compute(frozen))
    again = constant_cache.derived(frozen, "f64", compute(frozen))
    assert again is first and len(calls) == 1 and not first.flags.writeable
    twin = _frozen(np.arange(6, dtype=np.float32))  # equal values, another array: its own entry
    assert constant_cache.derived(twin, "f64", compute(twin)) is not first and len(calls) == 2
    writable = np.arange(6, dtype=np.float32)
    constant_cache.derived(writable, "f64", compute(writable))
    constant_cache.derived(writable, "f64", compute(writable))
    assert len(calls) == 4  # never kept: it could change


def test_an_array_that_reuses_a_dead_arrays_id_never_gets_its_values() -> None:
    """CPython reuses the memory (and so the id) of a collected array at once: the entry dies with its array
    and is checked against a weak reference, so the newcomer computes its own."""
    seen = {}
    for value in range(200):
        a = _frozen(np.full(4, value, dtype=np.float32))
        got = constant_cache.derived(a, "f64", lambda a=a: a.astype(np.float64))
        assert got[0] == value
        seen.setdefault(id(a), 0)
        seen[id(a)] += 1
        del a, got
        gc.collect(0)  # the young generation holds the dead array's cycles, if any: a full pass takes seconds
    assert max(seen.values()) > 1  # ids were reused, and no value leaked from one array to the next
    assert constant_cache._entries == {}


def test_the_cache_keeps_at_most_its_limit(monkeypatch) -> None:
    monkeypatch.setattr(constant_cache, "LIMIT_BYTES", 1000)
    arrays = [_frozen(np.full(100, n, dtype=np.float32)) for n in range(5)]  # 800 bytes each in float64
    for a in arrays:
        assert constant_cache.derived(a, "f64", lambda a=a: a.astype(np.float64))[0] == a[0]
    assert constant_cache._kept_bytes == 800


def test_conv_with_a_kept_constant_w_matches_the_naive_reading_on_every_dataset() -> None:
    """One W for many datasets (the battery's way): the results with its kept forms are the naive ones, on
    finite, subnormal and infinite X, and the same W mutated (a writable array) is never served stale."""
    rng = np.random.default_rng(11)
    w = _frozen(rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    node = h.make_node("Conv", ["X", "W"], ["Y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    attrs = {"strides": [1, 1], "pads": [1, 1, 1, 1], "dilations": [1, 1], "group": 1}
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    subnormal = (x.view(np.uint32) & np.uint32(0x80000007)).view(np.float32)
    infinite = np.where(rng.random(x.shape) < 0.3, -np.inf, x).astype(np.float32)
    for data in (x, subnormal, infinite, x):
        with np.errstate(all="ignore"):
            assert_identical(conv.run(node, [data, w], None)[0], naive_conv(data, w, None, **attrs))
    writable = np.array(w)
    conv.run(node, [x, writable], None)
    writable[0, 0, 1, 1] = np.inf
    with np.errstate(all="ignore"):
        assert_identical(conv.run(node, [x, writable], None)[0], naive_conv(x, writable, None, **attrs))


# -- infinite terms and the certificate -------------------------------------------------------------------
@pytest.mark.parametrize("zeros", [False, True])
def test_infinite_terms_counted_with_one_product_where_l_has_no_zero(zeros) -> None:
    rng = np.random.default_rng(5)
    a = rng.standard_normal((7, 9)).astype(np.float32)
    if zeros:
        a[rng.random(a.shape) < 0.2] = 0.0
    b = rng.standard_normal((9, 6)).astype(np.float32)
    b[rng.random(b.shape) < 0.3] = -np.inf
    b[rng.random(b.shape) < 0.1] = np.inf
    with np.errstate(all="ignore"):
        assert_identical(matmul(a, b), naive_matmul(a, b))


def test_the_certificate_in_blocks_covers_every_row_of_every_batch(monkeypatch) -> None:
    """Blocks of a few rows (the chunk made small): every element certified or settled exactly, as the
    naive reading, over several batches (a depthwise convolution) and a bias."""
    monkeypatch.setattr(exact_sums, "_CERTIFY_CHUNK", 7)
    rng = np.random.default_rng(9)
    a = rng.standard_normal((13, 20)).astype(np.float32)
    b = rng.standard_normal((20, 5)).astype(np.float32)
    assert_identical(matmul(a, b), naive_matmul(a, b))
    assert_identical(matmul_with_abs(a, b)[0], naive_matmul(a, b))
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    w = rng.standard_normal((3, 1, 3, 3)).astype(np.float32)
    bias = rng.standard_normal(3).astype(np.float32)
    attrs = {"strides": [1, 1], "pads": [1, 1, 1, 1], "dilations": [1, 1], "group": 3}
    assert_identical(conv.conv(x, w, bias, **attrs), naive_conv(x, w, bias, **attrs))
    assert_identical(conv.conv_with_abs(x, w, bias, **attrs)[0], naive_conv(x, w, bias, **attrs))


@pytest.mark.parametrize("zero", ["x", "w"])
@pytest.mark.parametrize("with_bias", [False, True])
def test_conv_of_all_zero_operands_skips_its_products_and_keeps_the_signs(zero, with_bias) -> None:
    """X or W all +-0: no product is taken, and each result is the bias or the signed zero of its terms."""
    rng = np.random.default_rng(2)
    signs = rng.random((1, 3, 4, 4)) < 0.5
    x = np.where(signs, -0.0, 0.0).astype(np.float32) if zero == "x" else rng.standard_normal((1, 3, 4, 4))
    w = rng.standard_normal((2, 3, 3, 3))
    if zero == "w":
        w = np.where(rng.random(w.shape) < 0.5, -0.0, 0.0)
    x, w = x.astype(np.float32), w.astype(np.float32)
    bias = np.array([0.0, -0.0], dtype=np.float32) if with_bias else None
    attrs = {"strides": [1, 1], "pads": [0, 1, 1, 0], "dilations": [1, 1], "group": 1}
    expected = naive_conv(x, w, bias, **attrs)
    assert_identical(conv.conv(x, w, bias, **attrs), expected)
    y, bound = conv.conv_with_abs(x, w, bias, **attrs)
    assert_identical(y, expected)
    assert not bound.any()
