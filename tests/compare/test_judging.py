"""Judging in one pass (compare/judging/elements.py) gives what the full evaluation gives, bit for bit: the
same
Classification (counts, first instance of each outcome, max_ratio, worst, max_ulps, the text) and the same
divergent elements as ``outcome_masks`` + ``classify`` on the bound evaluated everywhere; and a deferred bound
(Softmax, BatchNormalization: tolerance.DeferredBound) gives the whole-tensor values wherever it is read, and
its floor is below them. Checked on hard data: runtime values at exactly expected +- allowed and their
neighbours, subnormals, signed zeros, infinities, NaN, exact elements, rows of -inf, extreme parameters,
float16 and float32."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from onnx import helper as h

from sonnx_check.compare import localise
from sonnx_check.compare.judging import bounds as accuracy
from sonnx_check.compare.judging import elements as judging
from sonnx_check.compare.judging.diff import compare_arrays
from sonnx_check.compare.judging.elements import judge
from sonnx_check.compare.judging.output_record import OutputRecord
from sonnx_check.compare.judging.tolerance import DeferredBound
from sonnx_check.reference import batchnormalization as bn_kernel
from sonnx_check.reference import fast_bounds
from sonnx_check.reference import softmax as softmax_kernel

SOFTMAX = h.make_node("Softmax", ["X"], ["Y"], axis=1)
BN = h.make_node("BatchNormalization", ["X", "S", "B", "M", "V"], ["Y"])


def _whole(bound: accuracy.Bound, node, inputs, expected) -> accuracy.Tolerance:
    """The bound evaluated on every element by the rule's whole-tensor formula (no fast or deferred path)."""
    whole = dataclasses.replace(bound, rule=dataclasses.replace(bound.rule, deferred=None))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fast_bounds, "softmax", lambda data: None)
        patch.setattr(fast_bounds, "batch_normalization", lambda data: None)
        return whole.evaluate(node, inputs, expected)


def _same_judgement(expected: np.ndarray, actual: np.ndarray, fast: accuracy.Tolerance, full) -> None:
    """judge on ``fast`` against outcome_masks + classify on ``full``, everything a user sees; with blocks of
    the default size and tiny ones too, so that first instances, ties and the margin cross blocks."""
    for block in (judging._BLOCK, 3, 16):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(judging, "_BLOCK", block)
            _same_judgement_once(expected, actual, fast, full)


def _same_judgement_once(expected: np.ndarray, actual: np.ndarray, fast: accuracy.Tolerance, full) -> None:
    judged = judge(expected, actual, fast, expected.dtype)
    reference = accuracy.classify(expected, actual, full, expected.dtype)
    masks, _, _ = accuracy.outcome_masks(expected, actual, full, expected.dtype)
    got = judged.classification
    assert got.as_dict() == reference.as_dict()
    for name in ("max_ratio", "max_ulps"):  # bit for bit, not only as JSON prints them
        assert np.float64(getattr(got, name)).tobytes() == np.float64(getattr(reference, name)).tobytes()
    if reference.worst is not None:
        assert got.worst is not None and got.worst.ratio == reference.worst.ratio
    divergent = masks[accuracy.BEYOND] | masks[accuracy.SPECIAL]
    assert np.array_equal(judged.divergent, divergent)
    accepted = masks[accuracy.MATCH] | masks[accuracy.WITHIN] | masks[accuracy.FLUSHED]
    assert np.array_equal(~judged.divergent, accepted)


def _near_bound(data, expected: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """A runtime output whose elements are each, as drawn: the reference, expected +- allowed rounded to the
    type and its neighbours on both sides, the other sign, a signed zero, a subnormal, +-inf, NaN."""
    dtype = expected.dtype.type
    with np.errstate(all="ignore"):
        e = expected.astype(np.float64)
        up, down = (e + allowed).astype(dtype), (e - allowed).astype(dtype)
        tiny = np.finfo(dtype).smallest_subnormal
        choices = [
            expected, up, np.nextafter(up, dtype(np.inf)), np.nextafter(up, dtype(-np.inf)), down,
            np.nextafter(down, dtype(-np.inf)), np.nextafter(down, dtype(np.inf)),
            np.nextafter(expected, dtype(np.inf)), np.nextafter(expected, dtype(-np.inf)), -expected,
            np.zeros_like(expected), -np.zeros_like(expected), np.full_like(expected, tiny),
            np.full_like(expected, np.inf), np.full_like(expected, -np.inf), np.full_like(expected, np.nan),
        ]  # fmt: skip
    common = data.draw(st.integers(1, 9))  # mostly one edge, so that the fast path runs on hard values
    elements = st.one_of(st.just(0), st.just(common), st.integers(0, 15))
    picks = data.draw(hnp.arrays(np.int8, expected.shape, elements=elements))
    if data.draw(st.integers(0, 3)):  # mostly finite only: the fast path
        picks = np.where(picks >= 13, common, picks)
    return np.choose(picks, choices).astype(expected.dtype)


_HALVES = st.one_of(
    st.floats(-30, 30, width=16),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
    st.sampled_from([0.0, -0.0, 6.0e-8, -6.0e-8, 65504.0]),
)
_SINGLES = st.one_of(
    st.floats(-100, 100, width=32),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.floats(-1.1754943508222875e-38, 1.1754943508222875e-38, width=32),
    st.sampled_from([0.0, -0.0, 1.4e-45, 88.7, -103.9, 3.4028235e38]),
)


def _draw(data, shape, dtype) -> np.ndarray:
    elements = _HALVES if dtype == np.float16 else _SINGLES
    return data.draw(hnp.arrays(dtype, shape, elements=elements))


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float16]), shape=st.sampled_from([(7,), (3, 5)]))
def test_judge_is_outcome_masks_and_classify_for_any_bound(data, dtype, shape) -> None:
    """Given bounds (the sums of products, the other transcendental operators): allowed values of every
    kind (zero, subnormal, exactly the difference, +inf), exact elements or none, hard references."""
    expected = _draw(data, shape, dtype)
    allowed_values = st.one_of(
        st.sampled_from([0.0, 2.0**-149, 2.0**-24, 1e-3, 1.0, np.inf]), st.floats(0, 1e6, allow_nan=False)
    )
    allowed = data.draw(hnp.arrays(np.float64, shape, elements=allowed_values))
    if data.draw(st.booleans()):
        allowed = np.maximum(allowed, 2.0**-160)  # positive everywhere: the fast path's ratios
    exact = data.draw(st.one_of(st.just(False), hnp.arrays(bool, shape)))
    if not isinstance(exact, bool):
        allowed = np.where(exact, 0.0, allowed)
    actual = _near_bound(data, expected, allowed)
    tolerance = accuracy.Tolerance(allowed, exact, "test bound")
    _same_judgement(expected, actual, tolerance, tolerance)


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float16]), rows=st.integers(1, 4),
       n=st.integers(1, 40), neg_inf=st.booleans())  # fmt: skip
def test_softmax_deferred_judgement_is_the_full_one(data, dtype, rows, n, neg_inf) -> None:
    x = _draw(data, (rows, n), dtype)
    if neg_inf:  # -inf: exact elements, the formula on the whole tensor (no deferral)
        x[data.draw(st.integers(0, rows - 1)), data.draw(st.integers(0, n - 1))] = -np.inf
    with np.errstate(all="ignore"):
        (expected,) = softmax_kernel.run(SOFTMAX, [x], None)
    bound = accuracy.bound_for("Softmax", expected.dtype)
    fast = bound.evaluate(SOFTMAX, [x], expected)
    full = _whole(bound, SOFTMAX, [x], expected)
    allowed = np.broadcast_to(np.asarray(full.allowed, dtype=np.float64), expected.shape)
    actual = _near_bound(data, expected, allowed)
    _same_judgement(expected, actual, fast, full)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float16]),
       shape=st.sampled_from([(3,), (2, 3), (2, 3, 5), (1, 2, 4, 4)]),
       extreme=st.booleans())  # fmt: skip
def test_batch_normalization_deferred_judgement_is_the_full_one(data, dtype, shape, extreme) -> None:
    channels = shape[1] if len(shape) > 1 else 1
    x = _draw(data, shape, dtype)
    params = [_draw(data, (channels,), dtype) for _ in "sbm"]
    var = np.abs(_draw(data, (channels,), dtype))
    if extreme:  # the edge pattern's parameters: infinities, NaN, the largest and smallest values
        info = np.finfo(dtype)
        pool = [np.inf, -np.inf, np.nan, 0.0, -0.0, info.max, info.tiny, info.smallest_subnormal, 1.0]
        params = [np.array([data.draw(st.sampled_from(pool)) for _ in range(channels)], dtype) for _ in "sbm"]
        variances = st.sampled_from([np.inf, 0.0, info.max, info.tiny])
        var = np.array([data.draw(variances) for _ in range(channels)], dtype)
    inputs = [x, *params, var]
    with np.errstate(all="ignore"):
        (expected,) = bn_kernel.run(BN, inputs, None)
    bound = accuracy.bound_for("BatchNormalization", expected.dtype)
    fast = bound.evaluate(BN, inputs, expected)
    full = _whole(bound, BN, inputs, expected)
    allowed = np.broadcast_to(np.asarray(full.allowed, dtype=np.float64), expected.shape)
    actual = _near_bound(data, expected, allowed)
    _same_judgement(expected, actual, fast, full)


def _same_bits(a, b) -> bool:
    return np.array_equal(np.asarray(a).view(np.uint64), np.asarray(b).view(np.uint64))


def _floor_holds(tolerance: accuracy.Tolerance, expected: np.ndarray) -> None:
    deferred = tolerance.deferred
    assert deferred is not None
    allowed = np.asarray(tolerance.allowed)
    e = expected.reshape(-1)
    finite = np.isfinite(e)
    everywhere = np.arange(e.size)
    for floor in (deferred.floor(everywhere, None), deferred.floor(slice(0, e.size), None)):
        assert np.all(floor > 0)
        assert np.all(floor[finite] <= allowed.reshape(-1)[finite])
    flat = np.arange(expected.size)[::3]
    same = deferred.at(flat).view(np.uint64) == allowed.reshape(-1)[flat].view(np.uint64)
    assert same.all()


@settings(max_examples=60, deadline=None)
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float16]), n=st.integers(1, 1200))
def test_softmax_floor_is_below_the_bound_and_its_values_are_the_whole_ones(data, dtype, n) -> None:
    """The floor (2u + gamma_(n-1) + u) max(|Y|, min-normalized) is at most the bound on every element, n
    from 1 (gamma_0 = 0) to long rows; its values at any elements are the whole tensor's."""
    x = _draw(data, (2, n), dtype)
    with np.errstate(all="ignore"):
        (expected,) = softmax_kernel.run(SOFTMAX, [x], None)
    bound = accuracy.bound_for("Softmax", expected.dtype)
    tolerance = bound.evaluate(SOFTMAX, [x], expected)
    full = _whole(bound, SOFTMAX, [x], expected)
    if tolerance.deferred is None:
        assert not np.isfinite(x).all()
        return
    assert _same_bits(tolerance.allowed, full.allowed)
    _floor_holds(tolerance, expected)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float16]),
       shape=st.sampled_from([(5,), (2, 3), (2, 3, 5), (1, 2, 4, 4)]), extreme=st.booleans())  # fmt: skip
def test_batch_normalization_floors_are_below_the_bound(data, dtype, shape, extreme) -> None:
    """Both floors, 7u (1 - 2u) max(|Y|, min-normalized) + the reference's half ulp and gamma_7 (|k mean| +
    |B|) per channel, at most the bound on every element with a finite reference: cancellations, huge and
    tiny parameters, subnormal results."""
    channels = shape[1] if len(shape) > 1 else 1
    x = _draw(data, shape, dtype)
    params = [_draw(data, (channels,), dtype) for _ in "sbm"]
    var = np.abs(_draw(data, (channels,), dtype))
    if extreme:
        info = np.finfo(dtype)
        pool = [np.inf, np.nan, -0.0, info.max, info.tiny, info.smallest_subnormal, 1.0]
        params[data.draw(st.integers(0, 2))] = np.array([data.draw(st.sampled_from(pool))] * channels, dtype)
    inputs = [x, *params, var]
    with np.errstate(all="ignore"):
        (expected,) = bn_kernel.run(BN, inputs, None)
    tolerance = accuracy.bound_for("BatchNormalization", expected.dtype).evaluate(BN, inputs, expected)
    full = _whole(accuracy.bound_for("BatchNormalization", expected.dtype), BN, inputs, expected)
    assert _same_bits(tolerance.allowed, full.allowed)
    _floor_holds(tolerance, expected)


def test_deferred_bounds_apply_to_finite_data_and_not_under_an_override() -> None:
    """What makes the judging fast: Softmax and BatchNormalization on finite float32 data are deferred; a
    user's bound is evaluated everywhere, as before."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 50)).astype(np.float32)
    (expected,) = softmax_kernel.run(SOFTMAX, [x], None)
    assert accuracy.bound_for("Softmax", np.float32).evaluate(SOFTMAX, [x], expected).deferred is not None
    overridden = accuracy.bound_for("Softmax", np.float32, "3 ulp")
    assert overridden.evaluate(SOFTMAX, [x], expected).deferred is None
    inputs = [rng.standard_normal((2, 3, 4)).astype(np.float32)]
    inputs += [rng.random(3).astype(np.float32) for _ in "sbmv"]
    (expected,) = bn_kernel.run(BN, inputs, None)
    tolerance = accuracy.bound_for("BatchNormalization", np.float32).evaluate(BN, inputs, expected)
    assert tolerance.deferred is not None
    _floor_holds(tolerance, expected)


def test_the_margin_over_many_blocks_is_the_first_of_the_largest() -> None:
    """Softmax rows over many blocks, a runtime error planted at two elements with the same ratio: worst is
    the first of them, max_ratio and max_ulps the full evaluation's."""
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((200, 1000)) * 4).astype(np.float32)
    (expected,) = softmax_kernel.run(SOFTMAX, [x], None)
    bound = accuracy.bound_for("Softmax", np.float32)
    fast = bound.evaluate(SOFTMAX, [x], expected)
    full = _whole(bound, SOFTMAX, [x], expected)
    actual = expected.copy()
    noise = rng.integers(-2, 3, size=expected.shape).astype(np.int32)
    actual = (actual.view(np.int32) + noise).view(np.float32)  # a few ulps everywhere
    actual[150, 7] = expected[150, 7] * np.float32(1.5)  # beyond the bound, late
    actual[3, 3] = 0.0 if expected[3, 3] < 1e-38 else actual[3, 3]
    _same_judgement(expected, actual, fast, full)
    actual[40, 2], actual[41, 2] = expected[41, 2], expected[40, 2]  # where the floor does not decide
    _same_judgement(expected, actual, fast, full)


def test_merge_notes_what_the_two_passes_noted() -> None:
    """localise.merge judges once: the record holds the same accuracy counts, margin and comparison as the
    former bound + classify + compare_arrays(accepted=...) passes."""
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal((2, 8, 6, 6)).astype(np.float32)] + [
        rng.standard_normal(8).astype(np.float32) for _ in "sbm"
    ] + [np.abs(rng.standard_normal(8)).astype(np.float32)]  # fmt: skip
    (expected,) = bn_kernel.run(BN, inputs, None)
    steps = rng.integers(-3, 4, size=expected.shape).astype(np.int32)
    actual = (expected.view(np.int32) + steps).view(np.float32)
    actual.reshape(-1)[5] = expected.reshape(-1)[5] + np.float32(0.5)
    record = OutputRecord("Y", 0)
    localise.merge(record, "random", BN, 0, expected, actual, inputs)
    tolerance = _whole(accuracy.bound_for("BatchNormalization", np.float32), BN, inputs, expected)
    classification = accuracy.classify(expected, actual, tolerance, np.float32)
    masks, _, _ = accuracy.outcome_masks(expected, actual, tolerance, np.float32)
    accepted = masks[accuracy.MATCH] | masks[accuracy.WITHIN] | masks[accuracy.FLUSHED]
    diff = compare_arrays(expected, actual, accepted=accepted)
    assert record.outcomes == {k: v for k, v in classification.counts.items()}
    assert record.margin == classification.max_ratio
    assert record.mismatches == diff.mismatches == 1
    assert record.first == diff.first


def test_merge_of_nan_payloads_alone_notes_no_accuracy() -> None:
    """Outputs that differ only in NaN payloads match, as the comparison has always read them: no bound is
    evaluated and no accuracy is noted; a difference beside them is judged."""
    x = np.array([[1.0, np.nan, 2.0], [0.5, 0.25, 3.0]], dtype=np.float32)
    (expected,) = softmax_kernel.run(SOFTMAX, [x], None)
    actual = expected.copy()
    actual.view(np.uint32)[0] |= 0x00400001  # other NaN payloads in the NaN row
    assert np.isnan(actual[0]).all() and not np.array_equal(actual.view(np.uint32), expected.view(np.uint32))
    record = OutputRecord("Y", 0)
    localise.merge(record, "random", SOFTMAX, 0, expected, actual, [x])
    assert record.outcomes == {} and record.mismatches == 0 and not record.diverges
    actual[1, 0] = np.nextafter(expected[1, 0], np.float32(1))
    record = OutputRecord("Y", 0)
    localise.merge(record, "random", SOFTMAX, 0, expected, actual, [x])
    assert record.outcomes[accuracy.WITHIN] == 1 and record.mismatches == 0


def test_a_comparison_evaluates_deferred_bounds_only_where_needed(monkeypatch) -> None:
    """What makes judging fast: on finite Softmax and BatchNormalization outputs a few ulps off, merge never
    evaluates the bound on the whole tensor, and reports what the full evaluation gives."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((64, 100)).astype(np.float32)
    (softmax_y,) = softmax_kernel.run(SOFTMAX, [x], None)
    bn_inputs = [rng.standard_normal((2, 4, 8, 8)).astype(np.float32)]
    bn_inputs += [rng.standard_normal(4).astype(np.float32) for _ in "sbm"]
    bn_inputs.append(rng.random(4).astype(np.float32))
    (bn_y,) = bn_kernel.run(BN, bn_inputs, None)
    cases = [(SOFTMAX, [x], softmax_y), (BN, bn_inputs, bn_y)]
    fulls = [_whole(accuracy.bound_for(n.op_type, np.float32), n, inputs, y) for n, inputs, y in cases]

    def refuse(data):
        raise AssertionError("the bound was evaluated on the whole tensor")

    monkeypatch.setattr(fast_bounds, "softmax", refuse)
    monkeypatch.setattr(fast_bounds, "batch_normalization", refuse)
    for (node, inputs, expected), full in zip(cases, fulls, strict=True):
        steps = rng.integers(-2, 3, size=expected.shape).astype(np.int32)
        actual = (expected.view(np.int32) + steps).view(np.float32)
        record = OutputRecord("Y", 0)
        localise.merge(record, "random", node, 0, expected, actual, inputs)
        reference = accuracy.classify(expected, actual, full, np.float32)
        assert record.outcomes == dict(reference.counts) and record.margin == reference.max_ratio


def test_flushed_subnormals_in_the_fast_path() -> None:
    """A subnormal reference the runtime flushed to zero, beyond the bound: flushed-subnormal, accepted;
    with a given bound and with Softmax's deferred one (rows spread so far that results are subnormal)."""
    expected = np.array([1e-40, -3e-39, 1.0, 2.0, 1e-45], dtype=np.float32)
    actual = np.array([0.0, -0.0, 1.0, np.nextafter(np.float32(2), np.float32(3)), 0.0], dtype=np.float32)
    given = accuracy.Tolerance(np.full(5, 1e-44), False, "tiny")
    _same_judgement(expected, actual, given, given)
    counts = judge(expected, actual, given, np.float32).classification.counts
    assert counts[accuracy.FLUSHED] == 2 and counts[accuracy.BEYOND] == 1
    x = np.array([[0.0, -95.0, -100.0, -103.0, -1.0]], dtype=np.float32)
    (expected,) = softmax_kernel.run(SOFTMAX, [x], None)
    assert 0 < expected[0, 2] < np.finfo(np.float32).tiny
    actual = expected.copy()
    actual[0, 1:4] = 0.0
    bound = accuracy.bound_for("Softmax", np.float32)
    fast = bound.evaluate(SOFTMAX, [x], expected)
    assert fast.deferred is not None
    _same_judgement(expected, actual, fast, _whole(bound, SOFTMAX, [x], expected))
    assert judge(expected, actual, fast, np.float32).classification.counts[accuracy.FLUSHED] >= 1


def test_the_margin_of_ratios_below_float32s_range() -> None:
    """A deferred bound so wide and differences so small that every ratio is below float32's range (where
    the margin keeps its upper bounds): still the full evaluation's margin and worst, first of ties."""
    expected = np.array([1e-40, 2e-40, 1.0, 3e-45, 1e-40, 2.0], dtype=np.float32)
    actual = np.nextafter(expected, np.float32(1))
    actual[2] = expected[2]
    allowed = np.array([1e37, 1e38, 1e30, 1e38, 1e37, 1e300])  # elements 0 and 4 tie: the largest

    def floor(where, out=None):
        values = allowed[where] / 2
        if out is None:
            return values
        out[...] = values
        return out

    deferred = accuracy.Tolerance(None, False, "wide", deferred=DeferredBound(floor, lambda f: allowed[f]))
    given = accuracy.Tolerance(allowed, False, "wide")
    _same_judgement(expected, actual, deferred, given)
    classification = judge(expected, actual, deferred, np.float32).classification
    assert 0 < classification.max_ratio < 2.0**-149 and classification.worst.index == (0,)
