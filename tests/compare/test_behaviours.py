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


@pytest.mark.parametrize("divergence_id", sorted(BEHAVIOURS))
def test_the_emulated_behaviour_is_explained_under_its_id(tmp_path: Path, monkeypatch, divergence_id: str):
    finding = _run_behaviour(tmp_path, monkeypatch, divergence_id)
    known = {k["id"]: k for k in finding.data["known_divergence"]}
    assert divergence_id in known, finding.message
    assert known[divergence_id]["explained"] > 0
    assert finding.data["unexplained"] == 0, finding.message
    assert f"known onnxruntime divergence {divergence_id}" in finding.message


@pytest.mark.parametrize("divergence_id", sorted(BEHAVIOURS))
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
    old = [a for entry in _all() for a in entry.aliases]
    assert len(old) == len(set(old)) == 20 and all(a.startswith("ORT-") for a in old)
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
    allowed = {"SIGNED-ZERO-FIRST-WINS", "SIGNED-ZERO-UNORDERED", "MAX-NAN-DROPPED"}
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
