"""A wide Gemm weight's bound taken by blocks of columns (issue 31 item 2): ``abs_sum`` (sum |a b| + |c|, the
accuracy bound's quantity) and ``bound_terms``' column sums give the same bits by blocks as on the whole
weight, on any data (subnormals, infinities, NaN, signed zeros), in every working type; the float64
magnitudes' blocks are kept within the battery's allowance; and the Gemm's planned work no longer grows
with the whole weight."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from onnx import helper as h

from sonnx_check.compare.work_sizes import products_work
from sonnx_check.reference import constant_cache, gemm, products_common

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-45, 2.0**-126, 3.0e38, 1.0, -1.0]
DTYPES = (np.float16, np.float32, np.float64)


@st.composite
def operands(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, bool]:
    """A' (m x k), a read-only B (over bytes: a model's weight) or its transposed view, C or None."""
    dtype = draw(st.sampled_from(DTYPES))
    m, k, p = draw(st.integers(1, 4)), draw(st.integers(1, 24)), draw(st.integers(65, 260))
    width = 16 if dtype == np.float16 else 32 if dtype == np.float32 else 64
    with np.errstate(over="ignore", under="ignore"):  # each special value as the type holds it
        special = [float(v) for v in np.array(SPECIAL).astype(dtype)]
    values = st.one_of(st.sampled_from(special), st.floats(width=width, allow_nan=True))
    some = st.floats(width=width, allow_nan=False, allow_infinity=False, min_value=-4, max_value=4)
    mixed = draw(st.booleans())
    elements = values if mixed else some
    a = draw(hnp.arrays(dtype, (m, k), elements=elements))
    transposed = draw(st.booleans())
    b_shape = (p, k) if transposed else (k, p)
    b_values = draw(hnp.arrays(dtype, b_shape, elements=values if draw(st.booleans()) else some))
    b = np.frombuffer(b_values.tobytes(), dtype=dtype).reshape(b_shape)
    c = draw(st.none() | hnp.arrays(dtype, (p,), elements=elements))
    return a, (b.T if transposed else b), c, transposed


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64).view(np.int64)


def _same_bound(blocked: np.ndarray, whole: np.ndarray, k: int) -> None:
    """The same +inf (a non-finite term) and the same finite elements up to the BLAS's order of additions:
    each is s^ (1 + 2 gamma_(K+2)) of a BLAS sum s^ within gamma_K of the exact sum (both rigorous upper
    bounds), so they differ by at most 2 gamma_K relative (OpenBLAS adds a column's products in an order
    that depends on the product's column count: bit for bit only for whole 64-column groups)."""
    np.testing.assert_array_equal(np.isinf(blocked), np.isinf(whole))
    np.testing.assert_array_equal(np.isnan(blocked), np.isnan(whole))  # a NaN bias C, as the whole gives it
    finite = np.isfinite(whole)
    u = 2.0**-24
    np.testing.assert_allclose(blocked[finite], whole[finite], rtol=4 * (k + 2) * u, atol=1e-300)


def _abs_sums(block_bytes: int, *args: object, **kwargs: object) -> np.ndarray:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(products_common, "_ABS_BLOCK_BYTES", block_bytes)
        constant_cache.clear()
        return products_common.abs_sum(*args, **kwargs)  # type: ignore[arg-type]


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(operands(), st.sampled_from([None, True, False]))
def test_blocked_abs_sum_has_the_whole_weights_bits(
    case: tuple[np.ndarray, np.ndarray, np.ndarray | None, bool], wide: object
) -> None:
    a, b, c, _ = case
    dtype = np.dtype(a.dtype)
    if wide is False:  # the caller's verdict must hold: float32 only where float32_suffices says so
        wide = None
    args = (a[None], b[None], None if c is None else c[None], dtype)
    whole = _abs_sums(1 << 60, *args, wide=wide)
    blocked = _abs_sums(1, *args, wide=wide)  # 64-column blocks
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(products_common, "_ABS_BLOCK_BYTES", 1)
        assert products_common._column_width(a[None], b[None]) == 64
    _same_bound(blocked, whole, a.shape[1])
    magnitudes = (np.abs(a.astype(np.float64))[None], np.abs(b.astype(np.float64))[None])
    whole = _abs_sums(1 << 60, *magnitudes, None, dtype, absolute=True)
    blocked = _abs_sums(1, *magnitudes, None, dtype, absolute=True)
    _same_bound(blocked, whole, a.shape[1])


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(operands(), st.sampled_from([0.5, -2.0, 1.0]), st.sampled_from([1.0, 0.0, -0.25]))
def test_gemm_and_its_bound_by_blocks_are_the_whole_weights(
    case: tuple[np.ndarray, np.ndarray, np.ndarray | None, bool],
    alpha: float,
    beta: float,
) -> None:
    """What the comparison reads of a node (its reference, sum |a b| + |c|, the bound's terms), the same
    whether the weight is taken whole or by blocks."""
    a, b, c, transposed = case
    weight = b.T if transposed else b
    node = h.make_node("Gemm", ["A", "B", "C"], ["Y"], transB=int(transposed), alpha=alpha, beta=beta)
    inputs = [a, weight, c]
    seen = []
    for block_bytes in (1 << 60, 1):
        with pytest.MonkeyPatch.context() as patch, np.errstate(all="ignore"):
            patch.setattr(products_common, "_ABS_BLOCK_BYTES", block_bytes)
            patch.setattr(gemm, "_BLOCK_BYTES", block_bytes)
            constant_cache.clear()
            (y,), bound = gemm.run_with_abs(node, inputs, None)
            terms = gemm.bound_terms(node, inputs)
        seen.append((y, bound, terms))
    (y0, bound0, terms0), (y1, bound1, terms1) = seen
    # NaN at the same places (the comparison's equality); its sign is the CPU's (x86 gives -NaN for 0 * inf,
    # and a SIMD loop and its scalar tail may keep either operand's NaN), every other element bit for bit
    np.testing.assert_array_equal(np.isnan(y1), np.isnan(y0))
    numbers = ~np.isnan(y0)
    np.testing.assert_array_equal(y1[numbers].view(f"i{y1.itemsize}"), y0[numbers].view(f"i{y0.itemsize}"))
    _same_bound(bound1, bound0, a.shape[1] + 1)
    assert (terms1.roundings, terms1.reference_relative) == (terms0.roundings, terms0.reference_relative)
    np.testing.assert_array_equal(
        _bits(np.asarray(terms1.underflow_units)), _bits(np.asarray(terms0.underflow_units))
    )


@pytest.mark.slow
def test_vgg_classifier_by_blocks_has_the_whole_weights_bits() -> None:
    """At the real shape (VGG's 4096 columns of 25088, transB, in 32 MiB blocks: whole 64-column groups),
    the bound bit for bit on normal and subnormal activations, and bound_terms' column sums."""
    rng = np.random.default_rng(3)
    weight = np.frombuffer(rng.standard_normal((4096, 25088), dtype=np.float32).tobytes(), dtype=np.float32)
    b = weight.reshape(4096, 25088).T
    for a in (rng.standard_normal((1, 25088), dtype=np.float32), np.full((1, 25088), 1e-40, np.float32)):
        whole = _abs_sums(1 << 60, a[None], b[None], None, np.dtype(np.float32))
        blocked = _abs_sums(32 * 2**20, a[None], b[None], None, np.dtype(np.float32))
        np.testing.assert_array_equal(_bits(blocked), _bits(whole))
    np.testing.assert_array_equal(gemm._column_sums(b), np.abs(b.astype(np.float64)).sum(axis=0))


def test_float64_magnitudes_blocks_are_kept_within_the_allowance(monkeypatch: pytest.MonkeyPatch) -> None:
    """The battery's allowance still keeps a weight's float64 magnitudes across datasets, block by block:
    the second subnormal dataset converts none of them, and the bound is the same."""
    monkeypatch.setattr(products_common, "_ABS_BLOCK_BYTES", 1)
    rng = np.random.default_rng(4)
    b = np.frombuffer(rng.standard_normal((16, 300), dtype=np.float32).tobytes(), dtype=np.float32)
    b = b.reshape(16, 300)
    a = np.full((1, 16), 1e-40, dtype=np.float32)  # subnormal: the float64 magnitudes
    conversions = []
    real_derived = constant_cache.derived

    def counting(array: np.ndarray, name: object, compute, *, large: bool = False):  # type: ignore[no-untyped-def]
        def counted():  # type: ignore[no-untyped-def]
            conversions.append(name)
            return compute()

        return real_derived(array, name, counted, large=large)

    monkeypatch.setattr(constant_cache, "derived", counting)
    constant_cache.clear()
    with constant_cache.allowance(1 << 20):
        first = products_common.abs_sum(a[None], b[None], None, np.dtype(np.float32))
        kept = [n for n in conversions if "float64 magnitudes" in str(n)]
        conversions.clear()
        second = products_common.abs_sum(a[None], b[None], None, np.dtype(np.float32))
    assert len(kept) == 5  # 300 columns in 64-column blocks
    assert not [n for n in conversions if "float64 magnitudes" in str(n)]
    np.testing.assert_array_equal(first, second)


def test_vgg_classifier_work_is_planned_by_blocks_not_by_the_whole_weight() -> None:
    """VGG's classifier Gemm ([1, 25088] x [25088, 4096]) is planned at what its blocks need (measured by
    benchmarks/bench_gemm_memory.py: 67 MiB, 257 MiB with alpha 0.5), not 3.5x its 392 MiB weight."""
    work = products_work("Gemm", [25088, 25088 * 4096, 4096], 4096, None)
    assert work is not None and 257 * 2**20 <= work <= 400 * 2**20


def test_a_lone_last_column_is_summed_as_the_whole_weights() -> None:
    """65 columns in 64-column blocks: the last column alone would be summed in numpy's pairwise order (a
    1-D array), the others row by row; bound_terms' column sums are the whole weight's bit for bit (found by
    the property above: 8 x 1.98 differed in the last bit)."""
    node = h.make_node("Gemm", ["A", "B", "C"], ["Y"], alpha=0.5)
    inputs = [np.zeros((1, 8)), np.full((8, 65), 1.98), np.ones(65)]
    seen = []
    for block_bytes in (1 << 60, 1):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(gemm, "_BLOCK_BYTES", block_bytes)
            constant_cache.clear()
            seen.append(_bits(np.asarray(gemm.bound_terms(node, inputs).underflow_units)))
    np.testing.assert_array_equal(seen[1], seen[0])
