"""Departures named by behaviour (issue 29): each behaviour of OpenVINO's and tract's table, emulated in numpy
(behaviours.py), run through the real judging path (a stand-in runtime returns the emulated values): the
divergence is explained under the behaviour's ID and an element the behaviour does not produce stays
unexplained. Aliases: the old onnxruntime IDs keep waiving what they waived. Observations: "seen in this
version" is read for the runtime the run names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from behaviours import BEHAVIOURS, first_wins_max, relu_runtime
from fake_runtime import FakeOrt, set_at
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from models import maxpool, save
from test_known_operators import crafted, node_model

from sonnx_check import reference
from sonnx_check.compare import CompareOptions, compare_model
from sonnx_check.compare.judging.known_departures import RunningRuntime, by_id, explain, explained_mask
from sonnx_check.config.table import parse_table
from sonnx_check.findings import ModelResult
from sonnx_check.results.models import RuntimeRecord
from sonnx_check.waivers import apply_waivers

SPECIALS = [0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan]
# the behaviours of one node (those spanning two have their own two-node pipelines below)
ONE_NODE = sorted(set(BEHAVIOURS) - {"FLOAT16-WIDENED-CHAIN", "BATCHNORM-FOLDED-INTO-CONV"})


def _compare(tmp_path: Path, model: onnx.ModelProto, inputs: dict[str, np.ndarray], tamper, monkeypatch):
    FakeOrt(tamper=tamper).install(monkeypatch)
    path = save(model, tmp_path)
    np.savez(tmp_path / "data.npz", **inputs)
    options = CompareOptions(datasets=(str(tmp_path / "data.npz"),), node_edges=False)
    return compare_model(path, options)


def _run_behaviour(tmp_path: Path, monkeypatch, divergence_id: str, plant: bool = False):
    """The behaviour's case through compare_model: the stand-in runtime gives the emulated output (with one
    unrelated wrong value where ``plant``). Returns the output's divergence finding."""
    case = BEHAVIOURS[divergence_id]()
    actual = case.actual.copy()
    if plant:  # one element (one the behaviour leaves alone where there is one) gets an ordinary wrong value
        flat, expected = actual.reshape(-1), case.expected.reshape(-1)
        same = np.flatnonzero(~case.mismatch.reshape(-1))
        k = same[-1] if same.size else flat.size - 1
        if flat.dtype == np.bool_:
            flat[k] = ~expected[k]
        elif flat.dtype.kind == "f":
            flat[k] = expected[k] + 3 if np.isfinite(expected[k]) else 3
        else:
            flat[k] = expected[k] - 3
    model = onnx.ModelProto()
    model.CopyFrom(_model_of(case))
    feeds = {name: value for name, value in zip(case.node.input, case.inputs, strict=False) if name}
    name = case.node.output[case.output_position]
    result = _compare(tmp_path, model, feeds, {name: lambda _: actual.copy()}, monkeypatch)
    found = [f for f in result.findings if f.rule == "RUNTIME.divergence" and f"'{name}'" in f.message]
    assert len(found) == 1, [f.message for f in result.findings]
    return found[0]


def _model_of(case) -> onnx.ModelProto:
    if case.node.op_type == "MaxPool":
        return maxpool((1, 1, 4, 4), kernel=(2, 2), strides=(2, 2))
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in case.node.attribute}
    return node_model(case.node.op_type, list(case.inputs), attrs)


@pytest.mark.parametrize("divergence_id", ONE_NODE)
def test_the_emulated_behaviour_is_explained_under_its_id(tmp_path: Path, monkeypatch, divergence_id: str):
    finding = _run_behaviour(tmp_path, monkeypatch, divergence_id)
    known = {k["id"]: k for k in finding.data["known_divergence"]}
    assert divergence_id in known, finding.message
    assert known[divergence_id]["explained"] > 0
    assert finding.data["unexplained"] == 0, finding.message
    assert f"known onnxruntime divergence {divergence_id}" in finding.message


@pytest.mark.parametrize("divergence_id", ONE_NODE)
def test_an_element_the_behaviour_does_not_produce_stays_unexplained(
    tmp_path: Path, monkeypatch, divergence_id: str
):
    finding = _run_behaviour(tmp_path, monkeypatch, divergence_id, plant=True)
    assert finding.data["unexplained"] == 1, finding.message
    assert "1 differing element(s) match no known divergence" in finding.message
    assert divergence_id in {k["id"] for k in finding.data["known_divergence"]}


def test_a_divergence_of_two_behaviours_lists_each_with_its_count(tmp_path: Path, monkeypatch):
    x = np.array([np.nan, -0.0, 3.0, np.nan, -0.0, -0.0, -5.0], np.float32)
    model = node_model("Relu", [x])
    finding = _compare(tmp_path, model, {"i0": x}, {"y": relu_runtime}, monkeypatch).findings[0]
    counts = {k["id"]: k["explained"] for k in finding.data["known_divergence"]}
    assert counts == {"RELU-NAN-TO-ZERO": 2, "RELU-NEGATIVE-ZERO-TO-POSITIVE": 3}
    assert "RELU-NAN-TO-ZERO (2 of the differing elements)" in finding.message
    assert "RELU-NEGATIVE-ZERO-TO-POSITIVE (3 of the differing elements)" in finding.message
    assert finding.data["unexplained"] == 0


def test_the_record_names_the_runtimes_and_versions_each_behaviour_was_observed_in(tmp_path, monkeypatch):
    x = np.array([np.nan, 1.0], np.float32)
    finding = _compare(
        tmp_path, node_model("Relu", [x]), {"i0": x}, {"y": relu_runtime}, monkeypatch
    ).findings[0]
    [known] = finding.data["known_divergence"]
    assert {o["runtime"] for o in known["observed"]} == {"openvino", "tract"}
    assert ["2026.4.1", "2026.4.1"] in [v for o in known["observed"] for v in o["versions"]]
    assert known["aliases"] == []
    # the stand-in is onnxruntime 1.31.1, in which this behaviour was never observed
    assert known["seen_in_this_version"] is False
    assert known["summary"].startswith("a runtime's Relu")


# -- aliases ------------------------------------------------------------------------------------------------


def _lowest_divergence(tmp_path: Path, monkeypatch):
    FakeOrt(tamper={"Y": set_at((0, 0, 0, 0), np.finfo(np.float32).min)}).install(monkeypatch)
    path = save(maxpool((1, 1, 4, 4), np.float32, pads=(1, 1, 1, 1), indices=False), tmp_path)
    np.savez(tmp_path / "x.npz", X=np.full((1, 1, 4, 4), -np.inf, np.float32))
    result = compare_model(path, CompareOptions(datasets=(str(tmp_path / "x.npz"),)))
    return ModelResult(str(path), result.findings)


@pytest.mark.parametrize("known", ["ORT-LOWEST-FOR-NEG-INF", "ort-lowest-for-neg-inf", "MAXPOOL-LOWEST-INIT"])
def test_a_waiver_written_with_the_old_id_waives_the_same_elements(tmp_path: Path, monkeypatch, known: str):
    result = _lowest_divergence(tmp_path, monkeypatch)
    [finding] = result.findings
    assert finding.data["known_divergence"][0]["id"] == "MAXPOOL-LOWEST-INIT"
    table = {"waivers": [{"rule": "RUNTIME.divergence", "known": known, "models": "**", "reason": "ok"}]}
    config = parse_table(table, "pyproject.toml")
    assert config.waivers[0].known == ("MAXPOOL-LOWEST-INIT",)
    assert apply_waivers(result, config.waivers).findings[0].waived == "ok"


def test_an_alias_of_another_behaviour_does_not_waive(tmp_path: Path, monkeypatch):
    result = _lowest_divergence(tmp_path, monkeypatch)
    table = {
        "waivers": [{"rule": "RUNTIME.divergence", "known": "ORT-MAXPOOL-NAN", "models": "**", "reason": "x"}]
    }
    assert apply_waivers(result, parse_table(table, "pyproject.toml").waivers).findings[0].waived is None


def test_every_old_onnxruntime_id_is_an_alias_of_one_behaviour():
    aliases = [a for entry in _all() for a in entry.aliases]
    old = [a for a in aliases if a.startswith("ORT-")]
    assert len(aliases) == len(set(aliases)) and len(old) == 20
    # the behaviours one runtime's ID named twice (issue 29): kept as aliases of the one behaviour
    assert set(aliases) - set(old) == {"FLOAT64-MAX-AS-FLOAT32", "UINT32-AS-INT32"}
    assert all(by_id(a).id == by_id(a.lower()).id != a for a in old)
    assert not {e.id for e in _all()} & set(old)


def _all():
    from sonnx_check.compare.judging.known_departures import known_departures

    return known_departures()


# -- observations: seen in this runtime at this version -----------------------------------------------


def test_seen_in_this_version_is_read_for_the_runtime_the_run_names():
    relu, lowest = by_id("RELU-NAN-TO-ZERO"), by_id("MAXPOOL-LOWEST-INIT")
    assert relu.seen_in_version(RunningRuntime("openvino", "2026.4.1-22982-e213a147257-releases/2026/4"))
    assert relu.seen_in_version(RunningRuntime("OpenVINO", "2026.4.1")) is True
    assert relu.seen_in_version(RunningRuntime("openvino", "2025.1.0")) is False
    assert relu.seen_in_version(RunningRuntime("onnxruntime", "1.31.1")) is False
    assert relu.seen_in_version(RunningRuntime("tract", "0.23.9")) is True
    assert lowest.seen_in_version(RunningRuntime("onnxruntime", "1.31.1")) is True
    assert lowest.seen_in_version("1.31.1") is True  # a bare version is onnxruntime's (older callers)
    assert lowest.seen_in_version(RunningRuntime(None, "1.31.1")) is None  # the run names no runtime
    assert lowest.seen_in_version(RunningRuntime("tract", "dev")) is None


def test_a_runtime_command_is_named_by_its_runtime_json():
    declared = RuntimeRecord("command", "0.23.9", options={"runtime_name": "tract", "command": "run-tract"})
    assert RunningRuntime.of(declared) == RunningRuntime("tract", "0.23.9")
    silent = RuntimeRecord("command", None, options={"command": "run-tract"})
    assert RunningRuntime.of(silent) == RunningRuntime(None, None)
    assert RunningRuntime.of(RuntimeRecord("onnxruntime", "1.31.1")) == RunningRuntime(
        "onnxruntime", "1.31.1"
    )
    assert RunningRuntime.of(RuntimeRecord("saved-outputs")).name is None


# -- properties ---------------------------------------------------------------------------------------------


def _case(model: onnx.ModelProto, inputs: list[np.ndarray], actual: np.ndarray):
    expected = np.asarray(reference.run_node(model.graph.node[0], inputs)[0])
    return crafted(model, inputs, expected, actual.astype(expected.dtype))


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float32, st.integers(1, 12), elements=st.sampled_from(SPECIALS + [-3.5, 7.0])))
def test_relu_as_max_with_zero_is_explained_exactly(x: np.ndarray) -> None:
    model = node_model("Relu", [x])
    case = _case(model, [x], relu_runtime(x))
    explanation = explain(case)
    assert explanation.explained == int(case.mismatch.sum())
    assert set(explanation.by_set) <= {("RELU-NAN-TO-ZERO",), ("RELU-NEGATIVE-ZERO-TO-POSITIVE",)}
    wrong = relu_runtime(x)
    wrong[-1] = 0.5  # neither behaviour gives 0.5 (no input is 0.5)
    assert not explained_mask(_case(model, [x], wrong))[-1]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 3).flatmap(
        lambda k: st.lists(
            hnp.arrays(np.float32, 6, elements=st.sampled_from(SPECIALS)), min_size=k, max_size=k
        )
    )
)
def test_max_keeping_the_first_zero_and_dropping_nan_is_explained_exactly(operands) -> None:
    model = node_model("Max", operands)
    case = _case(model, operands, first_wins_max(*operands))
    explanation = explain(case)
    assert explanation.explained == int(case.mismatch.sum())
    allowed = {"SIGNED-ZERO-UNORDERED", "MAX-NAN-DROPPED"}
    assert {i for ids in explanation.by_set for i in ids} <= allowed
    # a number no operand holds is not explained
    wrong = first_wins_max(*operands)
    wrong[0] = 9.0
    assert not explained_mask(_case(model, operands, wrong))[0]


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(np.float32, 16, elements=st.floats(-1e6, 1e6, width=32, allow_subnormal=True)),
    hnp.arrays(np.float32, 16, elements=st.floats(float(np.float32(1e-30)), 1e6, width=32)),
)
def test_division_by_the_reciprocal_is_explained_and_nothing_else(a: np.ndarray, b: np.ndarray) -> None:
    model = node_model("Div", [a, b])
    with np.errstate(all="ignore"):
        runtime = a * (np.float32(1) / b)
    case = _case(model, [a, b], runtime)
    assert explain(case).explained == int(case.mismatch.sum())
    other = case.expected.copy()
    other[0] = np.nextafter(other[0], np.float32(np.inf) if runtime[0] <= other[0] else np.float32(-np.inf))
    odd = _case(model, [a, b], other)
    assert explain(odd).explained == 0  # one ulp the other way: not a * (1 / b)


# -- behaviours spanning two nodes ---------------------------------------------------------------------


def _mul_add(dtype=np.float16) -> onnx.ModelProto:
    h = onnx.helper
    elem = h.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = h.make_graph(
        [
            h.make_node("Mul", ["a", "b"], ["m"], name="mul"),
            h.make_node("Add", ["m", "c"], ["y"], name="add"),
        ],
        "g",
        [h.make_tensor_value_info(n, elem, [64]) for n in ("a", "b", "c")],
        [h.make_tensor_value_info("y", elem, [64])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 22)])
    model.ir_version = 10
    return model


def _chain_data() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    return {k: rng.uniform(-4, 4, 64).astype(np.float16) for k in ("a", "b", "c")}


def _widened(data: dict[str, np.ndarray]):
    """The runtime's Add output: a * b kept in float32, plus c, rounded to float16 once."""
    wide = data["a"].astype(np.float32) * data["b"].astype(np.float32) + data["c"].astype(np.float32)
    return lambda _: wide.astype(np.float16)


@pytest.mark.parametrize("fused", [False, True], ids=["in-context", "end-to-end"])
def test_a_float16_chain_rounded_once_is_the_widened_chain(tmp_path: Path, monkeypatch, fused: bool):
    """In context (the Add's actual from the run exposing the Mul) and end to end (the fusion undone when
    the Mul is exposed: only the model's output shows it)."""
    data = _chain_data()
    FakeOrt(version="1.32.0", tamper={"y": _widened(data)}, plain_only=fused).install(monkeypatch)
    path = save(_mul_add(), tmp_path)
    np.savez(tmp_path / "d.npz", **data)
    result = compare_model(path, CompareOptions(datasets=(str(tmp_path / "d.npz"),), node_edges=False))
    if fused:  # end to end, correctly rounded operators: the output's record (information, no finding)
        assert not result.findings
        [record] = result.comparison["outputs"]
    else:
        [finding] = [f for f in result.findings if f.rule == "RUNTIME.divergence"]
        record = finding.data
    [known] = record["known_divergence"]
    assert known["id"] == "FLOAT16-WIDENED-CHAIN" and record["unexplained"] == 0
    assert known["explained"] > 0
    assert (
        known["seen_in_this_version"] is True
    )  # the stand-in says onnxruntime 1.32.0, where it was measured


def test_a_float16_value_the_chain_does_not_give_stays_unexplained(tmp_path: Path, monkeypatch):
    data = _chain_data()
    wide = _widened(data)(None)
    wrong = wide.copy()
    wrong[3] = wrong[3] + np.float16(1)
    FakeOrt(tamper={"y": lambda _: wrong.copy()}).install(monkeypatch)
    path = save(_mul_add(), tmp_path)
    np.savez(tmp_path / "d.npz", **data)
    result = compare_model(path, CompareOptions(datasets=(str(tmp_path / "d.npz"),), node_edges=False))
    [finding] = [f for f in result.findings if f.rule == "RUNTIME.divergence"]
    assert finding.data["unexplained"] == 1


def test_a_chain_with_no_producer_explains_nothing():
    """Run alone (no upstream), the Add's float32-on-float16 result is not the chain's."""
    data = _chain_data()
    model = node_model("Add", [data["a"], data["c"]])
    case = _case(model, [data["a"], data["c"]], (data["a"].astype(np.float32) + 1e-3).astype(np.float16))
    assert "FLOAT16-WIDENED-CHAIN" not in {i for ids in explain(case).by_set for i in ids}


def _conv_bn() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    h = onnx.helper
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 1, 6, 6)).astype(np.float32)
    weights = {
        "w": rng.standard_normal((1, 1, 3, 3)).astype(np.float32),
        "b": np.array([0.25], np.float32),
        "scale": np.array([3.7], np.float32),
        "bias": np.array([-1.5], np.float32),
        "mean": np.array([0.3], np.float32),
        "var": np.array([0.02], np.float32),
    }
    conv = h.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", auto_pad="NOTSET", dilations=[1, 1],
                       group=1, kernel_shape=[3, 3], pads=[0, 0, 0, 0], strides=[1, 1])  # fmt: skip
    bn = h.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["y"], name="bn",
                     epsilon=1e-5, momentum=0.9, training_mode=0)  # fmt: skip
    graph = h.make_graph(
        [conv, bn], "g", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 1, 6, 6])],
        [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 1, 4, 4])],
        [onnx.numpy_helper.from_array(v, k) for k, v in weights.items()],
    )  # fmt: skip
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 22)])
    model.ir_version = 10
    return model, {"x": x, **weights}


def _folded(values: dict[str, np.ndarray]) -> np.ndarray:
    """tract's result: one convolution with the BatchNormalization folded into its weights and bias."""
    s = values["scale"].astype(np.float64) / np.sqrt(values["var"].astype(np.float64) + np.float32(1e-5))
    w = (values["w"] * s[0]).astype(np.float32)
    b = (values["b"] * s + values["bias"] - values["mean"] * s).astype(np.float32)
    x = values["x"][0, 0]
    y = np.zeros((4, 4), np.float32)
    for i in range(4):
        for j in range(4):
            y[i, j] = np.float32(np.sum(x[i : i + 3, j : j + 3] * w[0, 0], dtype=np.float32) + b[0])
    return y.reshape(1, 1, 4, 4)


@pytest.mark.parametrize("planted", [False, True])
def test_a_batchnorm_folded_into_its_conv_is_explained(tmp_path: Path, monkeypatch, planted: bool):
    model, values = _conv_bn()
    runtime = _folded(values)
    if planted:
        runtime[0, 0, 1, 1] += 3
    FakeOrt(tamper={"y": lambda _: runtime.copy()}).install(monkeypatch)
    path = save(model, tmp_path)
    np.savez(tmp_path / "d.npz", x=values["x"])
    # a user bound of 0.5 ulp on the BatchNormalization, so that the folded rounding shows on this small case
    options = CompareOptions(
        datasets=(str(tmp_path / "d.npz"),), node_edges=False, accuracy={"BatchNormalization": "0.5 ulp"}
    )
    result = compare_model(path, options)
    [finding] = [f for f in result.findings if f.rule == "RUNTIME.divergence"]
    assert {k["id"] for k in finding.data["known_divergence"]} == {"BATCHNORM-FOLDED-INTO-CONV"}
    assert finding.data["unexplained"] == int(planted)


def test_a_float16_chain_of_three_nodes_is_followed_up_to_its_start(tmp_path: Path, monkeypatch):
    """Mul -> Relu -> Add with nothing rounded to float16 before the end (a runtime casting the chain to
    float32): the Add's producer is exact but its own input is the unrounded product."""
    h = onnx.helper
    f16 = onnx.TensorProto.FLOAT16
    nodes = [
        h.make_node("Mul", ["a", "b"], ["m"], name="mul"),
        h.make_node("Relu", ["m"], ["r"], name="relu"),
        h.make_node("Add", ["r", "c"], ["y"], name="add"),
    ]
    graph = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info(n, f16, [64]) for n in "abc"],
        [h.make_tensor_value_info("y", f16, [64])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 22)])
    model.ir_version = 10
    data = _chain_data()
    wide = np.maximum(data["a"].astype(np.float32) * data["b"].astype(np.float32), 0) + data["c"].astype(
        np.float32
    )
    FakeOrt(tamper={"y": lambda _: wide.astype(np.float16)}).install(monkeypatch)
    path = save(model, tmp_path)
    np.savez(tmp_path / "d.npz", **data)
    result = compare_model(path, CompareOptions(datasets=(str(tmp_path / "d.npz"),), node_edges=False))
    [finding] = [f for f in result.findings if f.rule == "RUNTIME.divergence"]
    assert [k["id"] for k in finding.data["known_divergence"]] == ["FLOAT16-WIDENED-CHAIN"]
    assert finding.data["unexplained"] == 0
