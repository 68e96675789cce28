"""Gemm with alpha or beta other than 1 (issue 29 item 7; docs/readings.md#gemm-attributes-in-the-draft):
every IEEE evaluation of alpha (A' x B') + beta C, alpha applied to an operand, to each product or to the
sum, beta to C or, when 0, C not read, is judged as agreeing, element by element; a value none of them gives
stays a divergence. The runtime under test is ``gemm_ieee.evaluate``: each evaluation written out in numpy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest
from fake_runtime import FakeOrt
from gemm_ieee import Evaluation, evaluate, evaluations
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from onnx import helper, numpy_helper

from sonnx_check.compare import CompareOptions, compare_loaded, compare_model
from sonnx_check.compare.judging import bounds as acc
from sonnx_check.compare.ops import gemm_evaluations
from sonnx_check.reference import execute

F16, F32, F64 = np.float16, np.float32, np.float64
TOP32 = float(np.finfo(F32).max)
SUBNORMAL32 = float(np.float32(2.0**-148))


def gemm(alpha: float = 1.0, beta: float = 1.0, trans_a: int = 0, trans_b: int = 0) -> onnx.NodeProto:
    attrs = {"alpha": alpha, "beta": beta, "transA": trans_a, "transB": trans_b}
    return helper.make_node("Gemm", ["a", "b", "c"], ["y"], name="gemm", **attrs)


def attrs_of(node: onnx.NodeProto) -> tuple[float, float, bool, bool]:
    values = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return values["alpha"], values["beta"], bool(values["transA"]), bool(values["transB"])


def judged(node: onnx.NodeProto, inputs: list[np.ndarray], actual: np.ndarray, override: str | None = None):
    expected = execute.run_node(node, inputs)[0]
    return acc.compare_node(node, inputs, expected, np.asarray(actual, expected.dtype), override)


def runtime(node: onnx.NodeProto, inputs: list[np.ndarray], how: Evaluation) -> np.ndarray:
    alpha, beta, trans_a, trans_b = attrs_of(node)
    return evaluate(*inputs, alpha, beta, how, trans_a, trans_b)


# -- the three evaluations of the issue -------------------------------------------------------------------
def test_alpha_folded_into_an_operand_gives_nan_where_a_subnormal_meets_an_infinity():
    """OpenVINO folds alpha = 0.25 into A: 0.25 x 2^-148 rounds to 0 in float32, and 0 x inf is NaN where
    SONNX's exact product is +inf."""
    node = gemm(alpha=0.25)
    inputs = [np.array([[SUBNORMAL32, 1.0]], F32), np.array([[np.inf], [1.0]], F32), np.zeros((1, 1), F32)]
    actual = runtime(node, inputs, Evaluation(place="operand-a"))
    assert np.isnan(actual).all() and np.isposinf(execute.run_node(node, inputs)[0]).all()
    result = judged(node, inputs, actual)
    assert result.divergent == 0 and result.counts[acc.ALTERNATIVE] == 1
    assert result.first[acc.ALTERNATIVE].index == (0, 0)
    # alpha folded into B (0.25 x inf = inf) or applied later: the reference's +inf
    assert np.isposinf(runtime(node, inputs, Evaluation(place="operand-b"))).all()


def test_alpha_applied_after_a_float32_product_that_overflows_gives_an_infinity():
    """onnxruntime and onnx.reference: alpha x (A x B) with A x B summed in float32: 2 FLT_MAX overflows to
    +inf before alpha = 0.25 would bring it back to 0.5 FLT_MAX."""
    node = gemm(alpha=0.25)
    inputs = [np.array([[TOP32, TOP32]], F32), np.ones((2, 1), F32), np.zeros((1, 1), F32)]
    actual = runtime(node, inputs, Evaluation(place="sum"))
    assert np.isposinf(actual).all()
    assert execute.run_node(node, inputs)[0][0, 0] == np.float32(TOP32 / 2)
    result = judged(node, inputs, actual)
    assert result.divergent == 0 and result.counts[acc.ALTERNATIVE] == 1
    # the other infinity, or NaN, is no evaluation's: the products are positive
    for value in (-np.inf, np.nan):
        assert judged(node, inputs, [[value]]).counts[acc.SPECIAL] == 1


def test_beta_zero_with_a_non_finite_c_not_read():
    """BLAS does not read C when beta = 0: alpha A x B where the formula's 0 x inf (0 x NaN) is NaN."""
    node = gemm(alpha=0.5, beta=0.0)
    a, b = np.array([[1.0, 2.0], [3.0, 4.0]], F32), np.array([[1.0, -1.0], [0.5, 2.0]], F32)
    c = np.array([[np.inf, -np.inf], [np.nan, 1.0]], F32)
    inputs = [a, b, c]
    expected = execute.run_node(node, inputs)[0]
    assert np.isnan(expected.reshape(-1)[:3]).all()
    actual = runtime(node, inputs, Evaluation(read_c=False))
    assert np.isfinite(actual).all()
    result = judged(node, inputs, actual)
    assert result.divergent == 0 and result.counts[acc.ALTERNATIVE] == 3, result.counts
    assert judged(node, inputs, runtime(node, inputs, Evaluation(read_c=True))).divergent == 0
    # alpha A x B off by far more than its bound, or with C's sign, is no evaluation's value
    wrong = actual.copy()
    wrong[0, 0] *= 1.25
    assert judged(node, inputs, wrong).counts[acc.SPECIAL] == 1
    wrong = actual.copy()
    wrong[0, 1] = -np.inf
    assert judged(node, inputs, wrong).counts[acc.SPECIAL] == 1


def test_c_not_read_is_only_for_beta_zero():
    """With beta = 0.5 every evaluation reads C: a NaN C makes NaN, a finite runtime value is a mismatch."""
    node = gemm(alpha=0.5, beta=0.5)
    inputs = [np.ones((1, 2), F32), np.ones((2, 1), F32), np.array([[np.nan]], F32)]
    assert judged(node, inputs, [[1.0]]).counts[acc.SPECIAL] == 1
    assert judged(node, inputs, [[np.nan]]).counts[acc.MATCH] == 1


def test_values_no_evaluation_gives_stay_divergent():
    """Small finite data: every evaluation is finite, so NaN or an infinity is a mismatch; a sign flip of an
    infinity from an infinite operand is one too."""
    node = gemm(alpha=0.25, beta=0.5)
    inputs = [np.array([[1.0, -2.0]], F32), np.array([[3.0], [0.5]], F32), np.array([[4.0]], F32)]
    for value in (np.nan, np.inf, -np.inf):
        result = judged(node, inputs, [[value]])
        assert result.counts[acc.SPECIAL] == 1 and result.counts[acc.ALTERNATIVE] == 0
    inputs[1] = np.array([[np.inf], [0.5]], F32)  # +inf x 1 x 0.25: +inf in every evaluation
    assert judged(node, inputs, [[np.inf]]).counts[acc.MATCH] == 1
    for value in (-np.inf, np.nan, 0.0):
        assert judged(node, inputs, [[value]]).counts[acc.SPECIAL] == 1


def test_neutral_gemm_has_no_alternative():
    """alpha = beta = 1 (the draft's Gemm): every placement is the reference's evaluation."""
    node = gemm()
    inputs = [np.array([[SUBNORMAL32, 1.0]], F32), np.array([[np.inf], [1.0]], F32), np.zeros((1, 1), F32)]
    assert judged(node, inputs, [[np.nan]]).counts[acc.SPECIAL] == 1
    expected = execute.run_node(node, inputs)[0]
    tolerance = acc.bound_for("Gemm", F32).evaluate(node, inputs, expected)
    assert tolerance.alternatives is None


def test_under_a_configured_bound_the_evaluations_hold_and_c_not_read_is_judged_by_it():
    node = gemm(alpha=0.25)
    inputs = [np.array([[TOP32, TOP32]], F32), np.ones((2, 1), F32), np.zeros((1, 1), F32)]
    assert judged(node, inputs, [[np.inf]], "1 ulp").divergent == 0
    node = gemm(alpha=1.0, beta=0.0)
    inputs = [np.full((1, 64), 0.1, F32), np.full((64, 1), 0.3, F32), np.array([[np.inf]], F32)]
    exact = float(np.float32(64 * np.float64(np.float32(0.1)) * np.float64(np.float32(0.3))))
    near = np.nextafter(np.float32(exact), np.float32(np.inf), dtype=F32)
    far = np.float32(exact * (1 + 2.0**-19))  # within gamma_66 x sum |a b|, beyond 1 ulp
    assert judged(node, inputs, [[near]], "2 ulp").divergent == 0
    assert judged(node, inputs, [[far]]).divergent == 0
    assert judged(node, inputs, [[far]], "2 ulp").counts[acc.SPECIAL] == 1


# -- properties: every evaluation agrees; in the range where nothing overflows, exactly their values -------
def _values(dtype: type, large: bool) -> list[float]:
    info = np.finfo(dtype)
    tiny = float(info.smallest_subnormal)
    values = [0.0, -0.0, tiny, -3 * tiny, float(info.tiny), 1.0, -1.0, 1.5, -0.75, np.inf, -np.inf, np.nan]
    if large:
        values += [float(info.max), -float(info.max), float(info.max) / 2, -float(info.max) / 3]
    return values


@st.composite
def cases(draw: st.DrawFn, large: bool):
    dtype = draw(st.sampled_from([F16, F32, F64]))
    m, n, p = (draw(st.integers(1, 3)) for _ in range(3))
    trans_a, trans_b = draw(st.booleans()), draw(st.booleans())
    value = st.sampled_from(_values(dtype, large))

    def matrix(rows: int, cols: int) -> np.ndarray:
        return np.array([[draw(value) for _ in range(cols)] for _ in range(rows)], dtype)

    a = matrix(m, n)
    b = matrix(n, p)
    a, b = (a.T.copy() if trans_a else a), (b.T.copy() if trans_b else b)
    c = matrix(m, p)
    scales = [0.25, -0.5, 2.0, 4.0, 0.0, 1.0, 3e-5, 1e5, 2.0**-140]
    alpha, beta = draw(st.sampled_from(scales)), draw(st.sampled_from([0.0, 1.0, 0.5, -2.0, 1e5]))
    return gemm(alpha, beta, int(trans_a), int(trans_b)), [a, b, c]


def _every_evaluation_agrees(case) -> None:
    node, inputs = case
    for how in evaluations(attrs_of(node)[1]):
        actual = runtime(node, inputs, how)
        result = judged(node, inputs, actual)
        assert result.divergent == 0, (how, actual, result.counts, result.first)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(large=True))
def test_every_ieee_evaluation_is_judged_agreeing(case):
    """Each evaluation of the family, in two summation orders, on subnormal, infinite, NaN and extreme
    operands: no element diverges."""
    _every_evaluation_agrees(case)


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(large=True))
def test_every_ieee_evaluation_is_judged_agreeing_on_many_cases(case):
    _every_evaluation_agrees(case)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(large=False))
def test_where_nothing_overflows_exactly_the_evaluations_values_are_admitted(case):
    """Operands of magnitude at most 1.5 (and 0, subnormals, infinities, NaN): no sum can overflow, so the
    non-finite values an element admits are exactly those the evaluations give, no more."""
    node, inputs = case
    alpha, beta, _, _ = attrs_of(node)
    if abs(alpha) > 4 or abs(beta) > 4:  # 1e5 overflows float16 by itself: the large cases' test
        return
    reached = np.zeros(inputs[2].shape, dtype=np.int8)
    for how in evaluations(beta):
        y = runtime(node, inputs, how)
        reached |= np.where(np.isnan(y), 4, 0).astype(np.int8)
        reached |= np.where(y == np.inf, 1, 0).astype(np.int8) | np.where(y == -np.inf, 2, 0).astype(np.int8)
    flat = np.arange(reached.size)
    admitted = gemm_evaluations.outcomes(node, inputs, flat) & 7
    assert admitted.tolist() == reached.reshape(-1).tolist()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(large=False))
@example(  # 0.25 x the smallest subnormal is 0 in A only, and 0 x inf is NaN
    (gemm(0.25), [np.array([[2.0**-149, 1.0]], F32), np.array([[np.inf], [1.0]], F32), np.zeros((1, 1), F32)])
)
@example(  # -0.5 x -inf and beta = 0 with a NaN C
    (
        gemm(-0.5, 0.0),
        [np.array([[-np.inf, 0.0]], F64), np.array([[1.0], [np.inf]], F64), np.full((1, 1), np.nan)],
    )
)
def test_the_whole_output_by_indicator_products_is_the_element_by_element_answer(case):
    """Many candidates where nothing can overflow are decided by products of 0/1 matrices (``_whole``):
    bit for bit what gathering each element's terms gives (``_block``)."""
    node, inputs = case
    ops = gemm_evaluations._operands(node, inputs)
    flat = np.arange(inputs[2].size)
    _, overflows = gemm_evaluations._open(ops, flat)
    scales = [*ops.variants(ops.alpha), *ops.variants(ops.beta)]
    if overflows or not all(np.isfinite(scales)):
        return
    whole = gemm_evaluations._whole(ops).reshape(-1)
    assert whole.tolist() == gemm_evaluations._block(ops, flat).tolist()


# -- through the comparison: a runtime whose Gemm is one evaluation ---------------------------------------
@dataclass
class EvaluatingRuntime(FakeOrt):
    """A fake runtime whose Gemm is ``how`` (every other node the reference), for every run: the model's own
    datasets and the edge battery's."""

    how: Evaluation = Evaluation()
    flip: bool = False  # a sign flip on top: no evaluation's value

    def evaluate(
        self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray], tamper: bool = True
    ) -> dict[str, np.ndarray]:
        values = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        values.update(feeds)
        for node in model.graph.node:
            inputs = [values[name] if name else None for name in node.input]
            if node.op_type == "Gemm":
                [output] = [runtime(node, inputs, self.how)]
                values[node.output[0]] = -output if self.flip else output
            else:
                values.update(zip(node.output, execute.run_node(node, inputs), strict=False))
        return values


def gemm_model(alpha: float, beta: float, weight: np.ndarray, bias: np.ndarray) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [1, weight.shape[0]])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, weight.shape[1]])
    node = gemm(alpha, beta)
    weights = [numpy_helper.from_array(weight, "b"), numpy_helper.from_array(bias, "c")]
    graph = helper.make_graph([node], "g", [x], [y], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def _divergences(result) -> list[str]:
    return [f.message for f in result.findings if f.rule == "RUNTIME.divergence"]


@pytest.mark.parametrize(
    "alpha, beta, how",
    [
        (0.25, 1.0, Evaluation(place="operand-b")),  # alpha folded into the weight (OpenVINO)
        (0.25, 1.0, Evaluation(place="sum")),  # alpha after the float32 product (onnxruntime)
        (0.5, 0.0, Evaluation(place="sum", read_c=False)),  # C not read (BLAS)
        (-3.0, 0.0, Evaluation(place="product", read_c=True, order="c-last-backward")),
    ],
)
def test_a_runtime_evaluating_gemm_so_agrees_on_its_data_and_edge_battery(
    monkeypatch, tmp_path, alpha, beta, how
):
    """The model's dataset and weights hold the three cases of the issue (a subnormal weight that 0.25 x
    flushes to 0, met by the edge battery's infinite data; a product beyond the float32 range; an infinite
    bias); the edge battery adds subnormal, infinite and NaN data. Nothing diverges; the same runtime with
    the signs flipped does."""
    weight = np.array([[np.inf, 1.0, 2.0], [1.0, TOP32, -1.0], [SUBNORMAL32, TOP32, 0.5]], F32)
    bias = np.array([[0.0, 1.0, np.inf]], F32)
    model = gemm_model(alpha, beta, weight, bias)
    path = tmp_path / "gemm.onnx"
    onnx.save(model, str(path))
    dataset = tmp_path / "x.npz"
    np.savez(dataset, a=np.array([[SUBNORMAL32, 1.0, 1.0]], F32))
    EvaluatingRuntime(how=how).install(monkeypatch)
    result = compare_model(path, CompareOptions(datasets=(str(dataset), "random")))
    assert _divergences(result) == []
    assert result.comparison["status"] == "match"
    EvaluatingRuntime(how=how, flip=True).install(monkeypatch)
    flipped = compare_loaded(model, CompareOptions(datasets=(str(dataset),), node_edges=False))
    assert len(_divergences(flipped)) == 1


def test_the_report_counts_the_alternative_evaluations(monkeypatch, tmp_path: Path):
    weight = np.array([[TOP32], [TOP32]], F32)
    model = gemm_model(0.25, 1.0, weight, np.zeros((1, 1), F32))
    dataset = tmp_path / "x.npz"
    np.savez(dataset, a=np.ones((1, 2), F32))
    EvaluatingRuntime(how=Evaluation(place="sum")).install(monkeypatch)
    result = compare_loaded(model, CompareOptions(datasets=(str(dataset),), node_edges=False))
    text = repr(result.comparison)
    assert "'alternative-evaluation': 1" in text, text


# -- the partial-sum overflow departure in float64 ---------------------------------------------------------
@pytest.mark.parametrize("op", ["MatMul", "Gemm"])
def test_float64_partial_sum_overflow_explains_only_sums_that_can_overflow(op):
    """Its float64 threshold was DBL_MAX x 2^-1080, which is 0 in float64: any infinity of small float64
    terms was explained as an overflowed partial sum."""
    from test_known_operators import crafted, explained, node_model

    top = float(np.finfo(F64).max)
    extra = [np.zeros((1, 1))] if op == "Gemm" else []
    for a, exact, explains in (([[1.0, 2.0]], 0.0, False), ([[top, top]], top / 2, True)):
        inputs = [np.array(a), np.array([[1.0], [-0.5]]), *extra]
        case = crafted(node_model(op, inputs), inputs, np.array([[exact]]), np.array([[np.inf]]))
        assert explained("ORT-SUM-OVERFLOW", case).all() == explains


def test_the_exported_suite_carries_the_evaluations_nonfinite_values():
    """The suite's nonfinite bits (1 +inf, 2 -inf, 4 NaN) hold the evaluations' values, as --compare."""
    from sonnx_check.compare.suite.judgement import judge_output
    from sonnx_check.operator_readings import Readings

    node = gemm(alpha=0.25)
    inputs = [
        np.array([[SUBNORMAL32, 1.0], [TOP32, TOP32], [1.0, 1.0]], F32),
        np.array([[np.inf, 1.0], [1.0, 1.0]], F32),
        np.zeros((3, 1), F32),
    ]
    expected = execute.run_node(node, inputs)[0]
    judgement = judge_output(node, inputs, expected, None, Readings())
    assert judgement.nonfinite is not None
    # [0, 0]: the reference's +inf or NaN (0.25 x 2^-148 = 0 meets inf); [1, 1]: 2 FLT_MAX x 0.25 may be +inf
    assert judgement.nonfinite[0, 0] == 1 | 4 and judgement.nonfinite[1, 1] == 1
    assert judgement.nonfinite[2, 1] == 0
    assert any("C not read" in words for words in judgement.readings)


@pytest.mark.live_ort
@pytest.mark.parametrize(
    "alpha, beta, a, bias",
    [
        (0.25, 1.0, [[TOP32, TOP32, 1.0]], [[0.0, 1.0, 2.0]]),  # alpha after a float32 product beyond range
        (0.5, 0.0, [[1.0, 2.0, 3.0]], [[np.inf, np.nan, -np.inf]]),  # C not read
    ],
)
def test_onnxruntimes_evaluations_agree(tmp_path: Path, alpha, beta, a, bias):
    """onnxruntime (MLAS: alpha x the float32 A x B, C not read when beta = 0) on the issue's cases and the
    node's edge battery: no divergence (before, 1 and 2 of its elements were NaN or inf mismatches)."""
    pytest.importorskip("onnxruntime")
    weight = np.array([[1.0, 2.0, -1.0], [1.0, 0.5, 1.0], [0.0, 1.0, 1.0]], F32)
    path = tmp_path / "gemm.onnx"
    onnx.save(gemm_model(alpha, beta, weight, np.array(bias, F32)), str(path))
    np.savez(tmp_path / "x.npz", a=np.array(a, F32))
    result = compare_model(path, CompareOptions(datasets=(str(tmp_path / "x.npz"),)))
    assert _divergences(result) == []
    assert result.comparison["status"] == "match"
