"""Accuracy-aware comparison (sonnx_check/compare/judging/bounds.py): each class's bound on constructed cases
(a
result exactly at the bound is within, the next float beyond), special values, flushed subnormals,
overrides, and the default bounds against numpy implementations of every operator on random data, the
stand-in for a correct runtime."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper

from sonnx_check.compare.judging import bounds as acc
from sonnx_check.reference import batchnormalization, conv, execute, gemm, matmul

F16, F32, F64 = np.float16, np.float32, np.float64
FEW = settings(max_examples=40, deadline=None)


@pytest.fixture(autouse=True)
def _product_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """The MatMul, Gemm, Conv and BatchNormalization kernels exist but rules/*.toml does not declare them
    yet; reference.run_node finds kernels through the declarations, so they are registered for the test."""
    table = execute.kernels()
    for op, module in (
        ("MatMul", matmul),
        ("Gemm", gemm),
        ("Conv", conv),
        ("BatchNormalization", batchnormalization),
    ):
        if op not in table:
            monkeypatch.setitem(table, op, module.run)


# -- helpers ----------------------------------------------------------------------------------------------
def node(op: str, arity: int = 1, **attrs: object) -> onnx.NodeProto:
    return helper.make_node(op, [f"x{k}" for k in range(arity)], ["y"], **attrs)


def reference(n: onnx.NodeProto, inputs: list[np.ndarray]) -> np.ndarray:
    return execute.run_node(n, inputs)[0]


def compare(n: onnx.NodeProto, inputs: list[np.ndarray], actual: np.ndarray, override: str | None = None):
    return acc.compare_node(n, inputs, reference(n, inputs), actual, override)


def tolerance(n: onnx.NodeProto, inputs: list[np.ndarray], override: str | None = None):
    expected = reference(n, inputs)
    return expected, acc.bound_for(n.op_type, expected.dtype, override).evaluate(n, inputs, expected)


def edge(expected: float, allowed: float, dtype: type) -> tuple[np.generic, np.generic]:
    """The largest value of ``dtype`` above ``expected`` within ``allowed`` of it, and the next one."""
    e = float(expected)
    v = dtype(e + allowed)
    while float(v) - e > allowed:
        v = np.nextafter(v, dtype(-np.inf))
    while float(np.nextafter(v, dtype(np.inf))) - e <= allowed:
        v = np.nextafter(v, dtype(np.inf))
    return v, np.nextafter(v, dtype(np.inf))


def outcome(expected: np.ndarray, actual: np.ndarray, tol: acc.Tolerance, dtype: type) -> str:
    counts = acc.classify(np.asarray(expected), np.asarray(actual), tol, dtype).counts
    (name,) = [k for k, v in counts.items() if v]
    return name


def assert_at_the_bound(expected: np.ndarray, tol: acc.Tolerance, dtype: type, flat: int) -> None:
    """At element ``flat``: the float at the bound is within it, the next float beyond it."""
    allowed = np.broadcast_to(tol.allowed, expected.shape).reshape(-1)[flat]
    e = expected.reshape(-1)[flat]
    inside, outside = edge(e, allowed, dtype)
    single = acc.Tolerance(np.array([allowed]), False, tol.text)
    assert outcome([e], [inside], single, dtype) in (acc.WITHIN, acc.MATCH)
    assert outcome([e], [outside], single, dtype) == acc.BEYOND


def diverging(result: acc.Classification) -> str:
    return f"{result.counts} first {result.first} margin {result.max_ratio} ({result.bound})"


# -- the classes on constructed cases ---------------------------------------------------------------------
def test_exact_class_compares_bit_for_bit():
    n = node("Relu")
    x = np.array([1.0, -0.0, np.nan, 1e-40, np.inf, 2.0], F32)
    bad_nan = np.array([0x7FC00001], np.uint32).view(F32)[0]
    actual = np.array([1.0, 0.0, bad_nan, 0.0, -np.inf, np.nextafter(F32(2), F32(3))], F32)
    result = compare(n, [x], actual)
    assert dict(result.counts) == {
        acc.MATCH: 2, acc.WITHIN: 0, acc.OVERFLOW: 0, acc.PRODUCT_OVERFLOW: 0, acc.ALTERNATIVE: 0,
        acc.BEYOND: 1, acc.SPECIAL: 2, acc.FLUSHED: 1,
    }  # fmt: skip
    assert result.first[acc.SPECIAL].index == (1,)  # -0 against +0
    assert result.first[acc.FLUSHED].index == (3,)
    assert result.first[acc.BEYOND].index == (5,)
    assert result.max_ratio == math.inf
    assert result.max_ulps == pytest.approx(float(F32(1e-40)) / 2.0**-149)  # the flushed one
    assert "exact" in result.bound and result.divergent == 3


def test_correctly_rounded_class_requires_the_ieee_result():
    n = node("Add", 2)
    a, b = np.array([1.0, 0.1, 1.0, 1e-30], F32), np.array([2.0, 0.2, -1.0, -1e-30], F32)
    expected = reference(n, [a, b])
    assert expected[2] == 0 and not np.signbit(expected[2])  # x + (-x) = +0 in round to nearest
    actual = expected.copy()
    actual[1] = np.nextafter(actual[1], F32(1))
    actual[2] = -0.0
    result = compare(n, [a, b], actual)
    assert (
        result.counts[acc.MATCH] == 2 and result.counts[acc.BEYOND] == 1 and result.counts[acc.SPECIAL] == 1
    )
    assert result.max_ulps == 1.0 and "correctly rounded" in result.bound


def test_correctly_rounded_subnormal_result_flushed():
    n = node("Mul", 2)
    a, b = np.array([1e-20], F32), np.array([1e-20], F32)
    expected = reference(n, [a, b])
    assert 0 < expected[0] < np.finfo(F32).tiny
    assert compare(n, [a, b], np.zeros(1, F32)).counts[acc.FLUSHED] == 1


def test_integer_outputs_are_exact_and_ignore_an_override():
    bound = acc.bound_for("MatMul", np.int32, "2 ulp")
    assert bound.accuracy == acc.EXACT
    n = node("MatMul", 2)
    a, b = np.array([[2, 3]], np.int32), np.array([[4], [5]], np.int32)
    tol = bound.evaluate(n, [a, b], reference(n, [a, b]))
    assert outcome(np.array([[23]]), np.array([[23]]), tol, np.int32) == acc.MATCH
    result = acc.classify(np.array([[23]], np.int32), np.array([[25]], np.int32), tol, np.int32)
    assert result.counts[acc.BEYOND] == 1 and result.max_ratio == math.inf and result.max_ulps == 2.0


def test_sum_of_products_bound_for_matmul():
    n = node("MatMul", 2)
    a, b = np.ones((1, 4), F32), np.ones((4, 1), F32)
    expected, tol = tolerance(n, [a, b])
    u = 2.0**-24
    assert tol.allowed[0, 0] == pytest.approx(4 * u / (1 - 4 * u) * 4 + 0.5 * 2.0**-21, rel=1e-6)
    assert "n = 4" in tol.text and "matmul_acc.md" in tol.text
    assert_at_the_bound(expected, tol, F32, 0)


@pytest.mark.parametrize(
    ("w_shape", "group", "bias", "terms"),
    [
        ((2, 3, 3, 3), 1, True, 28),
        ((2, 3, 3, 3), 1, False, 27),
        ((3, 1, 3, 3), 3, True, 10),
        ((4, 3, 1, 1), 1, False, 3),
    ],
)
def test_sum_of_products_counts_conv_terms(w_shape, group, bias, terms):
    rng = np.random.default_rng(1)
    n = node("Conv", 3 if bias else 2, kernel_shape=list(w_shape[2:]), pads=[1, 1, 1, 1], group=group)
    inputs = [rng.normal(size=(1, 3, 5, 5)).astype(F32), rng.normal(size=w_shape).astype(F32)]
    if bias:
        inputs.append(rng.normal(size=w_shape[0]).astype(F32))
    expected, tol = tolerance(n, inputs)
    assert f"n = {terms}" in tol.text
    assert_at_the_bound(expected, tol, F32, 7)


def test_sum_of_products_gemm_counts_the_bias_and_sums_magnitudes():
    n = node("Gemm", 3)
    a, b, c = np.array([[1.0, -1.0]], F32), np.array([[1.0], [1.0]], F32), np.array([[-3.0]], F32)
    expected, tol = tolerance(n, [a, b, c])
    u = 2.0**-24
    assert expected[0, 0] == -3.0
    assert tol.allowed[0, 0] == pytest.approx(
        3 * u / (1 - 3 * u) * 5 + 0.5 * 2.0**-22, rel=1e-6
    )  # |1|+|1|+|3|
    assert "n = 3" in tol.text


def test_sum_of_products_cancellation_to_a_subnormal_is_within_not_flushed():
    n = node("MatMul", 2)
    lone = [np.array([[3e-39, -1.0]], F32), np.array([[1.0], [0.0]], F32)]  # one subnormal term, nothing else
    expected = reference(n, lone)
    assert 0 < expected[0, 0] < np.finfo(F32).tiny
    assert compare(n, lone, np.zeros((1, 1), F32)).counts[acc.FLUSHED] == 1
    cancelling = [np.full((1, 2), 2.0**-103, F32), np.array([[1.0], [-(1.0 - 2.0**-24)]], F32)]
    expected = reference(n, cancelling)
    assert expected[0, 0] == 2.0**-127  # subnormal, from two terms of 2^-103
    assert compare(n, cancelling, np.zeros((1, 1), F32)).counts[acc.WITHIN] == 1  # gamma_2 * 2^-102 allows it


def test_sum_of_products_bound_is_the_kernels_rounded_up_abs_sum(monkeypatch):
    """The bound's sum |a b| (+ |c|) is the kernel module's run_abs, an upper bound of the exact sum (in
    Fractions) even where the terms cancel or sit at the ends of the range."""
    calls = []
    original = conv.run_abs
    monkeypatch.setattr(conv, "run_abs", lambda *args: calls.append(args[0].op_type) or original(*args))
    n = node("Conv", 2, kernel_shape=[1, 2])
    top, low = float(np.finfo(F32).max), float(np.finfo(F32).smallest_subnormal)
    x = np.array([[[[1.0, -1.0, top / 4, low, 3.0]]]], F32)
    w = np.array([[[[1.0, 1.0]]]], F32)
    expected, tol = tolerance(n, [x, w])
    assert calls == ["Conv"]
    u = 2.0**-24
    for q in range(4):
        exact = sum(
            abs(Fraction(float(x[0, 0, 0, q + k])) * Fraction(float(w[0, 0, 0, k]))) for k in range(2)
        )
        bound = Fraction(2) * Fraction(u) / (1 - 2 * Fraction(u)) * exact  # gamma_2, in exact arithmetic
        assert Fraction(float(tol.allowed[0, 0, 0, q])) >= bound + Fraction(0.5) * Fraction(
            float(acc.ulp(expected[0, 0, 0, q : q + 1], acc.float_format(F32))[0])
        )


@pytest.mark.parametrize(
    ("op", "arity", "attrs"), [("MatMul", 2, {}), ("Gemm", 3, {}), ("Conv", 2, {"kernel_shape": [1, 2]})]
)
def test_sign_of_a_zero_sum_of_products_is_within(op, arity, attrs):
    """Reading (b): the annex bounds an error on the real result, a real zero has no sign; the kernel keeps
    IEEE's -0 for a sum of -0 terms, a runtime that starts at +0 is within. Correctly rounded: compared."""
    n = node(op, arity, **attrs)
    if op == "Conv":
        inputs = [np.zeros((1, 1, 1, 3), F32), -np.ones((1, 1, 1, 2), F32)]
    else:
        inputs = [np.zeros((1, 2), F32), -np.ones((2, 1), F32)] + (
            [-np.zeros((1, 1), F32)] if arity == 3 else []
        )
    expected = reference(n, inputs)
    assert np.signbit(expected).all() and (expected == 0).all()
    result = compare(n, inputs, np.zeros_like(expected))
    assert result.counts[acc.WITHIN] == expected.size and result.divergent == 0
    add = node("Add", 2)
    zeros = [-np.zeros(1, F32), -np.zeros(1, F32)]
    assert compare(add, zeros, np.zeros(1, F32)).counts[acc.SPECIAL] == 1


def test_intermediate_overflow_is_within_only_where_a_partial_sum_can_overflow():
    """Reading (c): [max, max] . [2, -2] is exactly 0, but an implementation in float32 may form +inf,
    -inf or +inf + -inf = NaN: all three are within, counted apart, and leave the margin alone."""
    n = node("MatMul", 2)
    top = np.finfo(F32).max
    inputs = [np.array([[top, top]], F32), np.array([[2.0, 1.0, 0.5], [-2.0, -0.75, -0.25]], F32)]
    expected = reference(n, inputs)
    assert expected[0, 0] == 0 and np.isfinite(expected).all()
    for value in (np.nan, np.inf, -np.inf):
        actual = expected.copy()
        actual[0, 0] = value
        result = compare(n, inputs, actual)
        assert result.counts[acc.OVERFLOW] == 1 and result.divergent == 0, diverging(result)
        assert result.first[acc.OVERFLOW].index == (0, 0) and result.max_ratio <= 1.0
    # [max, max] . [1, -0.75]: the positive term reaches max, the negative one 0.75 max: only +inf
    actual = expected.copy()
    actual[0, 1] = np.inf
    assert compare(n, inputs, actual).counts[acc.OVERFLOW] == 1
    for value in (-np.inf, np.nan):
        actual[0, 1] = value
        assert compare(n, inputs, actual).counts[acc.SPECIAL] == 1
    # [max, max] . [0.5, -0.25]: terms of 0.5 and 0.25 max, finite in any order: an infinity is a mismatch
    actual = expected.copy()
    actual[0, 2] = np.inf
    assert compare(n, inputs, actual).counts[acc.SPECIAL] == 1
    # an override bounds |runtime - exact| everywhere: no room for an overflow
    actual = expected.copy()
    actual[0, 0] = np.inf
    assert compare(n, inputs, actual, "1e-3 rel").counts[acc.SPECIAL] == 1


@pytest.mark.parametrize("dtype", [F16, F32, F64])
def test_an_infinite_term_meeting_an_overflowed_product_may_give_nan(dtype):
    """Reading (d): max * 1.3631 + max * (-inf) is -inf with exact products, NaN when the first product is
    rounded to the type (+inf): both are IEEE outcomes, NaN is within and counted as product-overflow.
    Where no finite term of the other sign can overflow, NaN stays a special-value mismatch; a finite
    runtime value or the other infinity is never an IEEE outcome."""
    top = np.finfo(dtype).max
    for op, extra in (("MatMul", {}), ("Gemm", {"transB": 1}), ("Conv", {"kernel_shape": [1, 2]})):
        n = node(op, 2, **extra)
        left, right = np.array([[top, top]], dtype), np.array([[1.3631, -np.inf]], dtype)
        inputs = {
            "MatMul": [left, right.T],
            "Gemm": [left, right],
            "Conv": [left.reshape(1, 1, 1, 2), right.reshape(1, 1, 1, 2)],
        }[op]
        expected = reference(n, inputs)
        assert np.isneginf(expected).all()
        result = compare(n, inputs, np.full_like(expected, np.nan))
        assert result.counts[acc.PRODUCT_OVERFLOW] == 1 and result.divergent == 0, (op, diverging(result))
        assert result.counts[acc.WITHIN] == 0
        assert compare(n, inputs, np.full_like(expected, np.nan), "1 ulp").divergent == 0
        for value in (np.inf, top, 0.0):
            assert compare(n, inputs, np.full_like(expected, value)).counts[acc.SPECIAL] == 1
    # 0.5 max: no rounding overflows it, in any order: NaN against -inf is a mismatch
    n = node("MatMul", 2)
    inputs = [np.array([[top, top]], dtype), np.array([[0.5], [-np.inf]], dtype)]
    assert compare(n, inputs, np.array([[np.nan]], dtype)).counts[acc.SPECIAL] == 1
    # two finite terms of 0.75 max overflow as a partial sum: NaN against -inf is within
    inputs = [np.array([[top, top, top]], dtype), np.array([[0.75], [0.75], [-np.inf]], dtype)]
    assert compare(n, inputs, np.array([[np.nan]], dtype)).counts[acc.PRODUCT_OVERFLOW] == 1
    # a positive infinite bias meeting negative products that overflow
    g = node("Gemm", 3)
    inputs = [np.array([[top]], dtype), np.array([[-1.5]], dtype), np.array([[np.inf]], dtype)]
    assert np.isposinf(reference(g, inputs)).all()
    assert compare(g, inputs, np.array([[np.nan]], dtype)).counts[acc.PRODUCT_OVERFLOW] == 1


@pytest.mark.parametrize("dtype", [F16, F32, F64])
def test_scaled_and_transposed_gemm_in_the_type_is_within_the_bound(dtype):
    """Gemm with alpha, beta, transA, transB (ONNX's, beyond the draft): an implementation in the output
    type that folds alpha into A before the products (the order with the most roundings, and the one where
    an underflowing alpha * a is multiplied by a large b) is within the stated bound, on random data and on
    subnormal A times large B; a result a quarter off is beyond it."""
    rng = np.random.default_rng(11)
    n = node("Gemm", 3, alpha=0.37, beta=-1.3, transA=1, transB=1)
    alpha, beta = dtype(np.float32(0.37)), dtype(np.float32(-1.3))
    tiny = np.finfo(dtype).smallest_subnormal
    cases = [
        (rng.standard_normal((6, 3)), rng.standard_normal((4, 6)), rng.standard_normal((1, 4))),
        (np.full((6, 3), 3 * tiny), np.full((4, 6), 2.0 ** (np.finfo(dtype).maxexp - 8)), np.zeros((1, 4))),
    ]
    for a, b, c in cases:
        a, b, c = a.astype(dtype), b.astype(dtype), c.astype(dtype)
        with np.errstate(all="ignore"):
            scaled = (alpha * a.T).astype(dtype)
            actual = np.zeros((3, 4), dtype)
            for k in range(6):  # the products and the sum in the type, one term at a time
                actual = (actual + (scaled[:, k : k + 1] * b.T[k : k + 1, :]).astype(dtype)).astype(dtype)
            actual = (actual + (beta * c).astype(dtype)).astype(dtype)
        result = compare(n, [a, b, c], actual)
        assert result.divergent == 0, diverging(result)
    a, b, c = (x.astype(dtype) for x in cases[0])
    expected = reference(n, [a, b, c])
    assert compare(n, [a, b, c], (expected * 1.25).astype(dtype)).counts[acc.BEYOND] > 0


def test_intermediate_overflow_masks_are_accepted_by_the_callers():
    """localise.merge accepts MATCH | WITHIN | FLUSHED: the overflows are inside WITHIN's mask."""
    n = node("MatMul", 2)
    top = np.finfo(F16).max
    inputs = [np.array([[top, top]], F16), np.array([[2.0], [-2.0]], F16)]
    expected, tol = tolerance(n, inputs)
    actual = np.array([[np.nan]], F16)
    masks, _, _ = acc.outcome_masks(expected, actual, tol, F16)
    assert masks[acc.OVERFLOW][0, 0] and masks[acc.WITHIN][0, 0] and not masks[acc.SPECIAL][0, 0]
    counts = acc.classify(expected, actual, tol, F16).counts
    assert counts[acc.OVERFLOW] == 1 and counts[acc.WITHIN] == 0


def test_a_float32_conv_that_overflows_on_extreme_inputs_is_not_divergent():
    """The edge dataset 'lowest' (X = -max everywhere): a float32 runtime overflows where the exact sums
    are finite; the same runtime on ordinary data is within the bound."""
    rng = np.random.default_rng(4)
    n = node("Conv", 2, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    x = np.full((1, 3, 6, 6), np.finfo(F32).min, F32)
    w = rng.normal(size=(4, 3, 3, 3)).astype(F32)
    with np.errstate(all="ignore"):
        actual = _conv_float32(x, w, np.zeros(4, F32))
    result = compare(n, [x, w], actual)
    assert result.divergent == 0, diverging(result)
    assert result.counts[acc.OVERFLOW] > 0


def test_a_callers_abs_sum_gives_the_same_bound():
    """run_with_abs gives the reference and sum |a b| together; passed to evaluate, the bound is the same."""
    rng = np.random.default_rng(8)
    n = node("Conv", 3, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    inputs = [rng.normal(size=s).astype(F32) for s in ((1, 3, 6, 6), (4, 3, 3, 3), (4,))]
    (expected,), magnitude = conv.run_with_abs(n, inputs, None)
    bound = acc.bound_for("Conv", F32)
    alone, given = bound.evaluate(n, inputs, expected), bound.evaluate(n, inputs, expected, magnitude)
    np.testing.assert_array_equal(alone.allowed, given.allowed)
    assert alone.text == given.text


def test_tanh_bound_is_the_annex_formula():
    n = node("Tanh")
    x = np.array([0.0, 0.5, 3.0, 50.0], F64)
    expected, tol = tolerance(n, [x])
    u = 2.0**-53
    at_zero = u / 3 * (17 * (1 + u) / (2 * (1 - u) - 8.5 * u * (1 + u)) * (1 + u))
    assert tol.exact is not True and not np.any(tol.exact)
    assert tol.allowed[0] == pytest.approx(at_zero + 0.5 * 2.0**-1074, rel=1e-12)
    w = math.exp(-6.0)  # x = 3: n = 2
    at_three = (
        u
        / (1 + 2 * w)
        * ((2 + 19 * (1 + u) * w - 2 * w * w) / ((1 + w) * (1 - u) - 9.5 * u * (1 + u) * w) * (1 + u) + 1 - w)
    )
    assert tol.allowed[2] == pytest.approx(at_three + 0.5 * 2.0**-53, rel=1e-12)  # tanh(3) = 0.995...
    assert tol.allowed[3] == pytest.approx(u * (2 * (1 + u) / (1 - u) + 1) + 0.5 * 2.0**-52, rel=1e-12)  # 1.0
    assert "tanh_acc.md" in tol.text


@pytest.mark.parametrize("dtype", [F16, F32, F64])
def test_ulp_is_the_spacing_of_the_type(dtype):
    info = np.finfo(dtype)
    tiny = info.smallest_subnormal
    values = np.array(
        [0.0, -0.0, tiny, 3 * tiny, info.tiny, 1.0, 1.5, 2.0, -3.0, 1e-3, float(info.max) / 3], dtype
    )
    expected = np.abs(np.spacing(np.abs(values))).astype(np.float64)
    assert np.array_equal(acc.ulp(values, acc.float_format(dtype)), expected)
    top = acc.ulp(np.array([info.max]), acc.float_format(dtype))[0]
    assert list(acc.ulp(np.array([np.inf, -np.inf, np.nan]), acc.float_format(dtype))) == [top] * 3


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([F16, F32, F64]), st.floats(allow_nan=False, allow_infinity=False, width=64))
def test_ulp_matches_numpy_spacing(dtype, value):
    top = float(np.finfo(dtype).max)
    with np.errstate(over="ignore"):
        v = np.array([value]).astype(dtype)
    if not abs(float(v[0])) < top:  # numpy's spacing at the maximum is inf
        v = np.array([top / 2], dtype)
    expected = np.abs(np.spacing(np.abs(v))).astype(np.float64)
    assert acc.ulp(v, acc.float_format(dtype))[0] == expected[0]


@pytest.mark.parametrize(
    ("value", "expected_eps"),
    [
        (-0.5, 2.0),
        (-1.0, 2.0),
        (-3.0, 3.0),
        (-4.0, 3.0),
        (-4.5, 3.5),
        (0.5, 2.5),
        (1.0, 2.5),
        (3.0, 3.5),
        (88.0, 6.0),
    ],
)
def test_exp_relative_error_follows_the_tanh_annex_table(value, expected_eps):
    fmt = acc.float_format(F32)
    assert acc.exp_relative_error(np.array([value]), fmt)[0] == expected_eps * 2.0**-23


# -- a result at the bound is within, the next float beyond, for every class -------------------------------
def _cases(dtype: type, rng: np.random.Generator) -> list[tuple[onnx.NodeProto, list[np.ndarray]]]:
    def r(*shape: int, lo: float = -5, hi: float = 5) -> np.ndarray:
        return rng.uniform(lo, hi, shape).astype(dtype)

    return [
        (node("Exp"), [r(8)]),
        (node("Log"), [r(8, lo=1e-3, hi=50)]),
        (node("Tanh"), [r(8)]),
        (node("Sigmoid"), [r(8, lo=-20, hi=20)]),
        (node("Pow", 2), [r(8, lo=0.1, hi=4), r(8, lo=-3, hi=3)]),
        (node("Softmax", axis=1), [r(2, 6)]),
        (node("LeakyRelu", alpha=0.1), [r(8, lo=-5, hi=-0.1)]),
        (node("BatchNormalization", 5), [r(2, 3, 2), r(3), r(3), r(3), r(3, lo=0.5, hi=2)]),
        (node("MatMul", 2), [r(3, 5), r(5, 2)]),
        (node("Range", 3), [np.array(0.5, dtype), np.array(3.0, dtype), np.array(0.3, dtype)]),
    ]


@FEW
@given(seed=st.integers(0, 2**32 - 1), dtype=st.sampled_from([F16, F32, F64]), which=st.integers(0, 9))
def test_a_result_at_the_bound_is_within_and_the_next_float_beyond(seed, dtype, which):
    rng = np.random.default_rng(seed)
    n, inputs = _cases(dtype, rng)[which]
    if n.op_type == "Range" and dtype == F16:
        return  # Range has no float16 section
    expected, tol = tolerance(n, inputs)
    exact = np.broadcast_to(tol.exact, expected.shape).reshape(-1)
    candidates = np.flatnonzero(~exact & np.isfinite(expected.reshape(-1)))
    assert candidates.size, "every case has elements with a bound"
    assert_at_the_bound(expected, tol, dtype, int(candidates[rng.integers(candidates.size)]))


def test_classify_at_a_hand_made_bound():
    tol = acc.Tolerance(np.array([0.5]), False, "0.5 abs")
    assert outcome([1.0], [1.5], tol, F32) == acc.WITHIN
    assert outcome([1.0], [np.nextafter(F32(1.5), F32(2))], tol, F32) == acc.BEYOND
    assert outcome([1.0], [0.5], tol, F32) == acc.WITHIN
    result = acc.classify(
        np.array([1.0, 1.0], F32), np.array([1.25, 1.5], F32), acc.Tolerance(0.5, False, "t"), F32
    )
    assert result.max_ratio == 1.0 and result.worst.index == (1,)


# -- special values ---------------------------------------------------------------------------------------
def test_nan_against_a_number_is_a_special_value_mismatch_both_ways():
    tol = acc.Tolerance(np.inf, False, "anything")
    assert outcome([np.nan], [1.0], tol, F32) == acc.SPECIAL
    assert outcome([1.0], [np.nan], tol, F32) == acc.SPECIAL
    assert outcome([np.nan], [-np.nan], tol, F32) == acc.MATCH


def test_infinities():
    top = np.finfo(F32).max
    wide = acc.Tolerance(np.array([1e32]), False, "wide")
    assert outcome([np.inf], [-np.inf], wide, F32) == acc.SPECIAL
    assert outcome([np.inf], [top], wide, F32) == acc.WITHIN  # at the overflow threshold
    assert outcome([top], [np.inf], wide, F32) == acc.WITHIN
    assert outcome([np.inf], [3e38], acc.Tolerance(np.array([np.inf]), False, "any"), F32) == acc.SPECIAL
    assert outcome([np.inf], [top], acc.Tolerance(np.array([1e30]), False, "narrow"), F32) == acc.SPECIAL
    assert outcome([np.inf], [top], acc.Tolerance(np.array([1e32]), True, "exact"), F32) == acc.SPECIAL
    assert outcome([np.inf], [np.inf], acc.Tolerance(0.0, True, "exact"), F32) == acc.MATCH


def test_float64_infinities_do_not_overflow_the_distance():
    top = np.finfo(F64).max
    assert outcome([np.inf], [top], acc.Tolerance(np.array([1e300]), False, "wide"), F64) == acc.WITHIN
    assert outcome([-np.inf], [top], acc.Tolerance(np.array([1e300]), False, "wide"), F64) == acc.SPECIAL


def test_exp_overflow_rule_of_the_text_is_exact():
    n = node("Exp")
    x = np.array([89.0, 88.0, -np.inf, np.nan], F32)
    expected = reference(n, [x])
    assert expected[0] == np.inf
    actual = expected.copy()
    actual[0] = np.finfo(F32).max  # a clamp instead of the text's +inf
    actual[2] = np.finfo(F32).smallest_subnormal
    result = compare(n, [x], actual)
    assert result.first[acc.SPECIAL].index == (0,) and result.first[acc.BEYOND].index == (2,)
    assert result.counts[acc.MATCH] == 2


def test_sign_of_zero_only_where_the_text_fixes_it():
    x = np.array([-0.0], F32)
    assert compare(node("Tanh"), [x], np.array([0.0], F32)).counts[acc.WITHIN] == 1  # tanh.md leaves it open
    assert compare(node("LeakyRelu", alpha=0.1), [x], np.array([0.0], F32)).counts[acc.SPECIAL] == 1
    assert compare(node("Sqrt"), [x], np.array([0.0], F32)).counts[acc.SPECIAL] == 1


def test_softmax_special_rows_and_minus_infinity_are_exact():
    n = node("Softmax", axis=1)
    x = np.array([[1.0, np.inf, 0.0], [-np.inf, 0.0, 1.0]], F32)
    expected = reference(n, [x])
    assert np.isnan(expected[0]).all() and expected[1, 0] == 0
    actual = expected.copy()
    actual[0, 2] = 0.0
    actual[1, 0] = -0.0
    result = compare(n, [x], actual)
    assert result.counts[acc.SPECIAL] == 2 and result.counts[acc.MATCH] == 4


def test_pow_special_table_is_exact():
    n = node("Pow", 2)
    a, b = np.array([2.0, 1.0, 0.0, 3.0], F32), np.array([0.0, 7.5, -1.0, 2.0], F32)
    expected = reference(n, [a, b])
    assert list(expected) == [1.0, 1.0, np.inf, 9.0]
    actual = expected.copy()
    actual[0] = np.nextafter(F32(1), F32(2))
    actual[3] = np.nextafter(F32(9), F32(10))
    result = compare(n, [a, b], actual)
    assert result.first[acc.BEYOND].index == (0,) and result.counts[acc.WITHIN] == 1


def test_flushed_subnormal_is_its_own_class():
    n = node("Exp")
    x = np.array([-100.0, -1.0], F32)
    expected = reference(n, [x])
    assert 0 < expected[0] < np.finfo(F32).tiny
    result = compare(n, [x], np.array([0.0, expected[1]], F32))
    assert result.counts[acc.FLUSHED] == 1 and result.divergent == 0
    assert result.first[acc.FLUSHED].index == (0,)


def test_as_dict_is_json():
    n = node("Relu")
    result = compare(n, [np.array([1.0, np.nan], F32)], np.array([2.0, 1.0], F32))
    text = json.dumps(result.as_dict(), allow_nan=False)
    assert '"max_ratio": "inf"' in text and '"expected": "nan"' in text


# -- overrides --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [("2 ulp", 2.0, "ulp"), ("2ulp", 2.0, "ulp"), (" 0.5 ULPS ", 0.5, "ulp"), ("1e-6 rel", 1e-6, "rel"),
     ("1E-7abs", 1e-7, "abs"), ("0 ulp", 0.0, "ulp"), (".25 rel", 0.25, "rel")],
)  # fmt: skip
def test_override_syntax(text, value, unit):
    assert acc.parse_override(text) == acc.Override(value, unit)


@pytest.mark.parametrize(
    ("text", "problem"),
    [("", "empty"), ("   ", "empty"), ("ulp", "not a number"), ("2", "no unit"),
     ("2 ulpz", "unknown unit 'ulpz'"), ("-1 ulp", "not negative"), ("two ulp", "not a number"),
     ("1e999 ulp", "finite"), ("2 ulp 3", "not a number"), ("nan ulp", "not a number")],
)  # fmt: skip
def test_override_errors_are_one_line_and_name_the_problem(text, problem):
    with pytest.raises(acc.AccuracyError) as info:
        acc.parse_override(text)
    message = str(info.value)
    assert problem in message and "\n" not in message


@pytest.mark.parametrize(
    ("op", "word"), [("Relu", "exact"), ("Add", "correctly rounded"), ("Sqrt", "correctly")]
)
def test_override_refused_where_nothing_is_tighter(op, word):
    with pytest.raises(acc.AccuracyError, match=word):
        acc.bound_for(op, F32, "1 ulp")


def test_override_accepted_for_inexact_operators():
    for op in (
        "Exp",
        "Tanh",
        "MatMul",
        "Conv",
        "Gemm",
        "Softmax",
        "BatchNormalization",
        "Range",
        "LeakyRelu",
    ):
        assert acc.bound_for(op, F32, "2 ulp").override == acc.Override(2.0, "ulp")


def test_override_tightens():
    n = node("Exp")
    x = np.array([0.3], F32)
    expected, tight = tolerance(n, [x], "0 ulp")
    assert (
        tight.allowed[0] == 0.5 * acc.ulp(expected, acc.float_format(F32))[0]
    )  # the reference's own half ulp
    assert "override" in tight.text and "tanh_acc.md" in tight.text
    assert outcome(expected, [np.nextafter(expected[0], F32(2))], tight, F32) == acc.BEYOND
    _, default = tolerance(n, [x])
    assert outcome(expected, [np.nextafter(expected[0], F32(2))], default, F32) == acc.WITHIN


@FEW
@given(seed=st.integers(0, 2**32 - 1), value=st.floats(0, 1e6), unit=st.sampled_from(["ulp", "rel", "abs"]))
def test_an_override_never_loosens(seed, value, unit):
    rng = np.random.default_rng(seed)
    for n, inputs in (
        (node("Tanh"), [rng.normal(0, 4, 16).astype(F32)]),
        (node("MatMul", 2), [rng.normal(size=(4, 6)).astype(F32), rng.normal(size=(6, 3)).astype(F32)]),
    ):
        _, annex = tolerance(n, inputs)
        _, override = tolerance(n, inputs, f"{value!r} {unit}")
        assert np.all(override.allowed <= annex.allowed)


# -- the defaults do not flag correct implementations ------------------------------------------------------
def _f32(v: np.ndarray) -> np.ndarray:
    return np.asarray(v, F32)


def _sigmoid_split(x: np.ndarray) -> np.ndarray:
    t = np.exp(-np.abs(x))  # float32 throughout
    return np.where(x >= 0, F32(1) / (F32(1) + t), t / (F32(1) + t)).astype(x.dtype)


def _softmax(x: np.ndarray) -> np.ndarray:
    t = np.exp(x - x.max(axis=1, keepdims=True))
    return t / t.sum(axis=1, keepdims=True)


def _conv_float32(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, w.shape[2:], axis=(2, 3))
    return (np.einsum("bchwij,ocij->bohw", windows, w) + b[None, :, None, None]).astype(F32)


def _bn_folded(x, scale, bias, mean, var):
    k = scale / np.sqrt(var + F32(1e-5))
    shape = (1, -1, 1, 1)
    return x * k.reshape(shape) + (bias - mean * k).reshape(shape)


def _bn_text(x, scale, bias, mean, var):
    shape = (1, -1, 1, 1)
    return scale.reshape(shape) * (
        (x - mean.reshape(shape)) / np.sqrt(var + F32(1e-5)).reshape(shape)
    ) + bias.reshape(shape)


def _correct_implementations(rng: np.random.Generator):
    """(name, node, inputs, a numpy float32 implementation of the operator's text): ordinary algorithms,
    none correctly rounded except the IEEE 754 operations, each of which a correct runtime may use."""
    x = rng.normal(0, 4, 4000).astype(F32)
    wide = rng.uniform(-85, 85, 4000).astype(F32)
    positive = (10.0 ** rng.uniform(-30, 30, 4000)).astype(F32)
    a, b = rng.uniform(0.05, 20, 4000).astype(F32), rng.uniform(-6, 6, 4000).astype(F32)
    rows10, rows1000 = rng.normal(0, 3, (200, 10)).astype(F32), rng.normal(0, 3, (4, 1000)).astype(F32)
    bn = [rng.normal(0, 1, (2, 8, 5, 5)), rng.normal(1, 0.5, 8), rng.normal(0, 1, 8), rng.normal(0, 1, 8),
          rng.uniform(0.01, 4, 8)]  # fmt: skip
    bn = [v.astype(F32) for v in bn]
    ma, mb, mc = (
        rng.normal(size=(32, 96)).astype(F32),
        rng.normal(size=(96, 16)).astype(F32),
        rng.normal(size=(32, 16)),
    )
    cx, cw, cb = (
        rng.normal(size=(1, 6, 7, 7)).astype(F32),
        rng.normal(size=(4, 6, 3, 3)).astype(F32),
        rng.normal(size=4),
    )
    conv_node = node("Conv", 3, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    tiny_tanh = rng.uniform(-20, 20, 4000).astype(F32)
    return [
        ("Exp", node("Exp"), [wide], np.exp(wide)),
        ("Log", node("Log"), [positive], np.log(positive)),
        ("Tanh", node("Tanh"), [x], np.tanh(x)),
        ("Tanh, the annex's algorithm", node("Tanh"), [tiny_tanh],
         (np.exp(tiny_tanh) - np.exp(-tiny_tanh)) / (np.exp(tiny_tanh) + np.exp(-tiny_tanh))),
        ("Sigmoid, the annex's split", node("Sigmoid"), [wide], _sigmoid_split(wide)),
        ("Sqrt", node("Sqrt"), [positive], np.sqrt(positive)),
        ("Pow", node("Pow", 2), [a, b], np.power(a, b)),
        ("Pow as exp(b log a)", node("Pow", 2), [a, b], np.exp(b * np.log(a))),
        ("Softmax rows of 10", node("Softmax", axis=1), [rows10], _softmax(rows10)),
        ("Softmax rows of 1000", node("Softmax", axis=1), [rows1000], _softmax(rows1000)),
        ("BatchNormalization folded", node("BatchNormalization", 5), bn, _bn_folded(*bn)),
        ("BatchNormalization text order", node("BatchNormalization", 5), bn, _bn_text(*bn)),
        ("LeakyRelu", node("LeakyRelu", alpha=0.01), [x], np.where(x < 0, F32(0.01) * x, x)),
        ("MatMul", node("MatMul", 2), [ma, mb], ma @ mb),
        ("Gemm", node("Gemm", 3), [ma, mb, _f32(mc)], ma @ mb + _f32(mc)),
        ("Conv", conv_node, [cx, cw, _f32(cb)], _conv_float32(cx, cw, _f32(cb))),
        ("Range", node("Range", 3), [_f32(0.1), _f32(60.0), _f32(0.013)],
         F32(0.1) + np.arange(4608, dtype=F32) * F32(0.013)),  # K = ceil((60 - 0.1) / 0.013) = 4608
        ("Add", node("Add", 2), [a, b], a + b),
        ("Div", node("Div", 2), [a, b], a / b),
    ]  # fmt: skip


with np.errstate(all="ignore"):
    CORRECT = _correct_implementations(np.random.default_rng(7))


@pytest.mark.parametrize(("name", "n", "inputs", "actual"), CORRECT, ids=[c[0] for c in CORRECT])
def test_defaults_do_not_flag_a_correct_float32_implementation(name, n, inputs, actual):
    result = compare(n, inputs, np.asarray(actual, F32))
    assert result.divergent == 0 and result.counts[acc.FLUSHED] == 0, f"{name}: {diverging(result)}"
    assert result.max_ratio <= 1.0


@pytest.mark.parametrize("dtype", [F16, F64])
def test_defaults_do_not_flag_numpy_in_other_types(dtype):
    rng = np.random.default_rng(3)
    x = rng.normal(0, 3, 2000).astype(dtype)
    positive = np.abs(x) + dtype(0.01)
    with np.errstate(over="ignore"):  # float16 exp overflows beyond 11.09, as the reference does
        cases = [
            (node("Exp"), [x], np.exp(x)),
            (node("Log"), [positive], np.log(positive)),
            (node("Tanh"), [x], np.tanh(x)),
            (node("Sigmoid"), [x], _sigmoid_split(x)),
            (node("Softmax", axis=1), [x.reshape(200, 10)], _softmax(x.reshape(200, 10))),
        ]
    for n, inputs, actual in cases:
        result = compare(n, inputs, actual.astype(dtype))
        assert result.divergent == 0, f"{n.op_type} {dtype.__name__}: {diverging(result)}"


# -- and they do flag the departures measured in onnxruntime ------------------------------------------------
def test_accumulating_range_drifts_beyond_the_bound():
    n = node("Range", 3)
    start, limit, delta = _f32(-3.3), _f32(7.0), _f32(0.001)
    count = reference(n, [start, limit, delta]).size
    accumulated = np.empty(count, F32)
    value = start
    for i in range(count):  # onnxruntime's Range: value += delta at every step
        accumulated[i] = value
        value = F32(value + delta)
    result = compare(n, [start, limit, delta], accumulated)
    assert result.counts[acc.BEYOND] > count // 2 and result.max_ratio > 100


def test_sigmoid_by_cancellation_is_beyond_the_bound_for_negative_inputs():
    n = node("Sigmoid")
    x = np.linspace(-40, -3, 500)
    cancelled = 1 - 1 / (1 + np.exp(-np.abs(x)))  # onnxruntime's double Sigmoid for x < 0
    result = compare(n, [x], cancelled)
    assert result.counts[acc.BEYOND] > 400 and result.max_ratio > 1e6


def test_an_output_of_rank_above_32_is_classified():
    """numpy's flat iterator refuses arrays of rank above 32; numpy itself allows 64: a diverging output of
    rank 34 is counted, and its first instance carries its full index."""
    n = node("Sigmoid")
    x = np.linspace(-3, 3, 16, dtype=F32).reshape((1,) * 33 + (16,))
    expected = reference(n, [x])
    actual = expected.copy()
    actual[(0,) * 33 + (5,)] = 2.0
    result = compare(n, [x], actual)
    assert result.counts[acc.BEYOND] == 1 and result.first[acc.BEYOND].index == (0,) * 33 + (5,)
    assert result.worst is not None and result.worst.actual == 2.0


def test_a_constant_of_rank_above_32_is_reported_by_its_rule(tmp_path):
    """A static constant_values rule (integer Div's B != 0) names the first bad element of a rank-34
    constant instead of failing on numpy's flat iterator."""
    from onnx import numpy_helper

    from sonnx_check.engine import check_file

    shape = (1,) * 33 + (2,)
    b = numpy_helper.from_array(np.array([3, 0], np.int32).reshape(shape), "b")
    graph = helper.make_graph(
        [helper.make_node("Div", ["a", "b"], ["y"], name="d")],
        "g",
        [helper.make_tensor_value_info("a", onnx.TensorProto.INT32, list(shape))],
        [helper.make_tensor_value_info("y", onnx.TensorProto.INT32, list(shape))],
        [b],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    path = tmp_path / "rank34.onnx"
    onnx.save(model, path)
    messages = [f.message for f in check_file(str(path)).findings]
    assert any("1 of 2 element(s)" in m and ": 0)" in m for m in messages), messages
