"""Gemm's fast routes give the plain route's bits (issue 31: VGG's classifier on the edge battery): a B' with
contiguous columns (transB) taken as the rows of B'^T, and the outputs A' alone decides on a finite weight
(every row of A' holding a NaN or an infinity; A' all +-0 with a finite C free of -0), against the plain
product by blocks of B's columns, on special values, signed zeros and subnormals, in every type."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from onnx import helper as h

from sonnx_check.reference import constant_cache, gemm

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-45, 2.0**-126, 3.0e38, -3.0e38, 1.0, -1.0, 0.5]
DTYPES = (np.float16, np.float32, np.float64)


def _special(dtype: type) -> list[float]:
    with np.errstate(over="ignore", under="ignore"):  # each special value as the type holds it
        return [float(v) for v in np.array(SPECIAL).astype(dtype)]


@st.composite
def operands(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """A' (m x k) of a kind the routes tell apart, B' a read-only weight over bytes (or a writable array),
    often a transposed view, and C (m x p, a row, a scalar) or None."""
    dtype = draw(st.sampled_from(DTYPES))
    m, k, p = draw(st.integers(1, 3)), draw(st.integers(1, 40)), draw(st.integers(1, 70))
    width = 16 if dtype == np.float16 else 32 if dtype == np.float32 else 64
    special = _special(dtype)
    values = st.one_of(st.sampled_from(special), st.floats(width=width, allow_nan=True))
    some = st.floats(width=width, allow_nan=False, allow_infinity=False, min_value=-4, max_value=4)
    kind = draw(st.sampled_from(["mixed", "finite", "non-finite rows", "zeros"]))
    if kind == "zeros":
        a = draw(hnp.arrays(dtype, (m, k), elements=st.sampled_from([0.0, -0.0])))
    else:
        a = draw(hnp.arrays(dtype, (m, k), elements=values if kind == "mixed" else some))
        if kind == "non-finite rows":  # a NaN or an infinity in every row, at a few k
            for row in range(m):
                a[row, draw(st.integers(0, k - 1))] = draw(st.sampled_from([np.inf, -np.inf, np.nan]))
    b_elements = draw(st.sampled_from([some, values, st.sampled_from([0.0, -0.0, 1.0, -1.0])]))
    transposed = draw(st.booleans())
    b_shape = (p, k) if transposed else (k, p)
    b = draw(hnp.arrays(dtype, b_shape, elements=b_elements))
    if draw(st.booleans()):
        b = np.frombuffer(b.tobytes(), dtype=dtype).reshape(b_shape)  # a model's weight
    c_shape = draw(st.sampled_from([(m, p), (p,), (1,)]))
    c_elements = draw(st.sampled_from([some, values, st.sampled_from([0.0, -0.0, 2.0])]))
    c = draw(st.none() | hnp.arrays(dtype, c_shape, elements=c_elements))
    return a, (b.T if transposed else b), c


def _bits(y: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(y).view(f"u{y.itemsize}")


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(operands(), st.sampled_from([1 << 60, 1]), st.booleans())
def test_fast_routes_give_the_plain_products_bits(
    case: tuple[np.ndarray, np.ndarray, np.ndarray | None], block_bytes: int, with_magnitude: bool
) -> None:
    a, b, c = gemm._checked(*case, None)
    with pytest.MonkeyPatch.context() as patch, np.errstate(all="ignore"):
        patch.setattr(gemm, "_BLOCK_BYTES", block_bytes)  # 1: one column per block
        constant_cache.clear()
        magnitude = gemm._abs(a, b, c, gemm.GemmAttributes()) if with_magnitude else None
        plain = gemm._rounded_by_columns(a, b, c, magnitude)
        fast = gemm._rounded(a, b, c, magnitude)
        again = gemm._rounded(a, b, c, magnitude)  # the weight's facts kept from the first call
    assert fast.dtype == plain.dtype and fast.shape == plain.shape
    np.testing.assert_array_equal(_bits(fast), _bits(plain))
    np.testing.assert_array_equal(_bits(again), _bits(plain))


def _weight(rng: np.random.Generator, k: int, p: int) -> np.ndarray:
    """A read-only [p, k] float32 weight over bytes, as a model holds it; B' is its transposed view."""
    values = rng.standard_normal((p, k), dtype=np.float32)
    return np.frombuffer(values.tobytes(), dtype=np.float32).reshape(p, k)


def test_a_transposed_weight_is_taken_by_rows_and_a_plain_one_by_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(5)
    weight = _weight(rng, 300, 70)
    a = rng.standard_normal((2, 300), dtype=np.float32)
    taken = []
    for name in ("_rounded_by_rows", "_rounded_by_columns"):
        real = getattr(gemm, name)
        monkeypatch.setattr(gemm, name, lambda *args, real=real, name=name: taken.append(name) or real(*args))
    node = h.make_node("Gemm", ["A", "B"], ["Y"], transB=1)
    (by_rows,) = gemm.run(node, [a, weight], None)
    (by_columns,) = gemm.run(
        h.make_node("Gemm", ["A", "B"], ["Y"]), [a, np.ascontiguousarray(weight.T)], None
    )
    assert taken == ["_rounded_by_rows", "_rounded_by_columns"]
    np.testing.assert_array_equal(_bits(by_rows), _bits(by_columns))


def test_edge_activations_on_a_finite_weight_are_settled_without_the_product() -> None:
    """Infinite activations (every element +-inf or NaN) and zero activations with a +0 bias (every element
    the bias), as the edge battery feeds VGG's classifier: decided by A' alone, the plain product's bits."""
    rng = np.random.default_rng(6)
    b = _weight(rng, 400, 90).T
    c = np.zeros(90, dtype=np.float32)
    c[::3] = rng.standard_normal(30, dtype=np.float32)
    a_inf = rng.standard_normal((1, 400), dtype=np.float32)
    a_inf[0, [3, 200]] = [np.inf, -np.inf]
    zeros = np.where(rng.random((1, 400)) < 0.5, -0.0, 0.0).astype(np.float32)
    all_inf = np.where(rng.random((2, 400)) < 0.7, np.inf, -np.inf).astype(np.float32)  # every k's terms
    for a in (a_inf, all_inf, zeros):
        a2, b2, c2 = gemm._checked(a, b, c, None)
        settled = gemm._settled_by_a(a2, b2, c2)
        assert settled is not None
        np.testing.assert_array_equal(_bits(settled), _bits(gemm._rounded_by_columns(a2, b2, c2, None)))
    a2, b2, c2 = gemm._checked(zeros, b, -c, None)  # a -0 in C: its sign is the terms', left to the product
    assert gemm._settled_by_a(a2, b2, c2) is None
